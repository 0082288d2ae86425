//! Response body framing: a body of a known length, a chunked body (keel-chunked's incremental
//! decoder, which hands out chunk payloads in place, without copying), or one that ends when
//! the server closes the connection. Pure: fed bytes, it says how many it consumed and which of them are
//! payload.

use crate::limits;
use keel_chunked::ChunkedDecoder;

/// How a response body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body (204, 304, 1xx).
    Empty,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the server closes the connection (neither of the above).
    UntilClose,
}

/// The chunked decoder with the client's limits: `CHUNK_LINE_BYTES_MAX` of extensions on a
/// size line, `TRAILER_BYTES_MAX` of trailers (the body is bounded by its reader, so not here).
fn chunked() -> ChunkedDecoder {
    ChunkedDecoder::new(usize::MAX, limits::TRAILER_BYTES_MAX)
        .with_line_bytes_max(limits::CHUNK_LINE_BYTES_MAX)
}

/// Decodes one response body of any framing.
#[derive(Debug, Clone)]
pub enum BodyDecoder {
    Length(u64),
    Chunked(ChunkedDecoder),
    UntilClose,
}

impl BodyDecoder {
    pub fn new(framing: Framing) -> BodyDecoder {
        match framing {
            Framing::Empty => BodyDecoder::Length(0),
            Framing::Length(n) => BodyDecoder::Length(n),
            Framing::Chunked => BodyDecoder::Chunked(chunked()),
            Framing::UntilClose => BodyDecoder::UntilClose,
        }
    }

    /// True once the whole body was decoded (never for a body that ends at close).
    pub fn is_done(&self) -> bool {
        match self {
            BodyDecoder::Length(n) => *n == 0,
            BodyDecoder::Chunked(c) => c.is_done(),
            BodyDecoder::UntilClose => false,
        }
    }

    /// As `ChunkedDecoder::decode_span`, for any framing: how many bytes of `input` were
    /// consumed and the payload among them (a sub-slice of `input`, possibly empty).
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<(usize, &'a [u8]), String> {
        match self {
            BodyDecoder::Length(n) => {
                let take = (*n).min(input.len() as u64) as usize;
                *n -= take as u64;
                Ok((take, &input[..take]))
            }
            BodyDecoder::Chunked(c) => c.decode_span(input).map_err(|e| e.to_string()),
            BodyDecoder::UntilClose => Ok((input.len(), input)),
        }
    }

    /// The connection ended: fine only for a body that ends at close (or one already done).
    pub fn at_eof(&self) -> Result<(), String> {
        match self {
            BodyDecoder::UntilClose => Ok(()),
            d if d.is_done() => Ok(()),
            _ => Err("connection closed before the end of the response body".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Feeds `input` in pieces cut at `cuts`; returns the payload, whether the body ended and
    /// the bytes left after its end.
    fn run(
        dec: &mut BodyDecoder,
        input: &[u8],
        cuts: &[usize],
    ) -> Result<(Vec<u8>, usize), String> {
        let mut out = Vec::new();
        let mut at = 0;
        let mut bounds: Vec<usize> = cuts.iter().copied().filter(|&c| c < input.len()).collect();
        bounds.sort_unstable();
        bounds.push(input.len());
        for end in bounds {
            while at < end && !dec.is_done() {
                let (used, payload) = dec.decode(&input[at..end])?;
                out.extend_from_slice(payload);
                at += used;
                if used == 0 {
                    break;
                }
            }
        }
        Ok((out, input.len() - at))
    }

    fn chunked(input: &[u8]) -> Result<(Vec<u8>, bool, usize), String> {
        let mut d = BodyDecoder::Chunked(super::chunked());
        let (out, left) = run(&mut d, input, &[])?;
        Ok((out, d.is_done(), left))
    }

    #[test]
    fn chunked_bodies_decode() {
        type Want = (&'static [u8], bool, usize);
        let cases: &[(&[u8], Want)] = &[
            (b"5\r\nhello\r\n0\r\n\r\n", (b"hello", true, 0)),
            (
                b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                (b"hello world", true, 0),
            ),
            (
                b"A\r\n0123456789\r\n0\r\n\r\nNEXT",
                (b"0123456789", true, 4),
            ),
            (
                b"a;ext=1\r\n0123456789\r\n0\r\n\r\n",
                (b"0123456789", true, 0),
            ),
            (
                b"3 \r\nabc\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n",
                (b"abc", true, 0),
            ),
            (b"3\r\nabc\r\n", (b"abc", false, 0)),
            (b"0\r\n\r\n", (b"", true, 0)),
            (b"3\r\nab", (b"ab", false, 0)),
        ];
        for (input, want) in cases {
            let got = chunked(input).unwrap();
            assert_eq!(
                (got.0.as_slice(), got.1, got.2),
                *want,
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn malformed_chunked_bodies_are_errors() {
        let long_ext = format!(
            "1;{}\r\na\r\n0\r\n\r\n",
            "x".repeat(limits::CHUNK_LINE_BYTES_MAX)
        );
        let long_trailer = format!("0\r\nX: {}\r\n\r\n", "y".repeat(limits::TRAILER_BYTES_MAX));
        let bad: Vec<&[u8]> = vec![
            b"\r\n",
            b"g\r\n",
            b"-1\r\n",
            b";x\r\n",
            b"5\nhello\r\n",
            b"5\r\nhelloX\r\n",
            b"5\r\nhello\rX",
            b"1234567890abcdef0\r\n",
            b"0\r\n\rX",
            b"3;ext\n",
            long_ext.as_bytes(),
            long_trailer.as_bytes(),
        ];
        for input in bad {
            assert!(
                chunked(input).is_err(),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }

    /// A chunked encoding of `payload` in chunks of random sizes, with random extensions and
    /// trailers.
    fn encode(payload: &[u8], rng: &mut impl Rng) -> Vec<u8> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < payload.len() {
            let n = rng.random_range(1..=300).min(payload.len() - at);
            let size = if rng.random_bool(0.5) {
                format!("{n:x}")
            } else {
                format!("{n:X}")
            };
            out.extend_from_slice(size.as_bytes());
            if rng.random_bool(0.2) {
                out.extend_from_slice(b";name=\"v\"");
            }
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(&payload[at..at + n]);
            out.extend_from_slice(b"\r\n");
            at += n;
        }
        out.extend_from_slice(b"0\r\n");
        if rng.random_bool(0.5) {
            out.extend_from_slice(b"Trailer-A: x\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    #[test]
    fn chunked_decoding_is_the_same_at_any_split_points() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for round in 0..300 {
            let len = rng.random_range(0..3000);
            let payload: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            let wire = encode(&payload, &mut rng);
            let cuts: Vec<usize> = (0..rng.random_range(0..40))
                .map(|_| rng.random_range(0..wire.len()))
                .collect();
            let mut d = BodyDecoder::new(Framing::Chunked);
            let (got, left) = run(&mut d, &wire, &cuts).unwrap();
            assert_eq!(
                (got, d.is_done(), left),
                (payload, true, 0),
                "round {round}"
            );
        }
    }

    #[test]
    fn chunked_decoding_byte_by_byte() {
        let wire = b"4\r\nWiki\r\n7;a=b\r\npedia i\r\nB\r\nn \r\nchunks.\r\n0\r\nT: v\r\n\r\n";
        let cuts: Vec<usize> = (1..wire.len()).collect();
        let mut d = BodyDecoder::new(Framing::Chunked);
        let (got, left) = run(&mut d, wire, &cuts).unwrap();
        assert_eq!(
            (got.as_slice(), d.is_done(), left),
            (&b"Wikipedia in \r\nchunks."[..], true, 0)
        );
    }

    #[test]
    fn random_garbage_never_panics() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for _ in 0..2000 {
            let len = rng.random_range(0..64);
            let alphabet = b"0123456789abcdefxyz;\r\n \t";
            let input: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            let _ = chunked(&input);
        }
    }

    #[test]
    fn length_and_close_framing() {
        let mut d = BodyDecoder::new(Framing::Length(5));
        assert_eq!(
            run(&mut d, b"helloNEXT", &[2]).unwrap(),
            (b"hello".to_vec(), 4)
        );
        assert!(d.is_done() && d.at_eof().is_ok());
        let mut d = BodyDecoder::new(Framing::Length(5));
        run(&mut d, b"hel", &[]).unwrap();
        assert!(
            !d.is_done() && d.at_eof().is_err(),
            "a short body is an error at EOF"
        );
        let mut d = BodyDecoder::new(Framing::UntilClose);
        assert_eq!(
            run(&mut d, b"all of it", &[3]).unwrap(),
            (b"all of it".to_vec(), 0)
        );
        assert!(!d.is_done() && d.at_eof().is_ok());
        assert!(BodyDecoder::new(Framing::Empty).is_done());
        assert!(BodyDecoder::new(Framing::Chunked).at_eof().is_err());
    }
}
