//! Response body framing: a body of a known length, a chunked body (an incremental decoder
//! that hands out chunk payloads in place, without copying), or one that ends when the server
//! closes the connection. Pure: fed bytes, it says how many it consumed and which of them are
//! payload.

use crate::limits;

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

/// Where a chunked decoder is in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the hex chunk size.
    Size,
    /// Skipping chunk extensions up to the end of the size line.
    Ext,
    /// Expecting `\n` after the size line's `\r`.
    SizeLf,
    /// Inside a chunk's payload.
    Data,
    /// Expecting `\r` after a payload.
    DataCr,
    /// Expecting `\n` after a payload.
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    /// Inside a trailer line.
    Trailer,
    /// Expecting the final `\n`.
    EndLf,
    /// The body is complete.
    Done,
}

/// An incremental decoder of `Transfer-Encoding: chunked`. Bytes may be split anywhere.
#[derive(Debug, Clone)]
pub struct Chunked {
    state: State,
    /// Chunk size being read, then payload bytes left in the chunk.
    size: u64,
    /// Hex digits of the size read so far.
    digits: u32,
    /// Bytes of the current size line, or of all trailers.
    line: usize,
}

impl Default for Chunked {
    fn default() -> Chunked {
        Chunked::new()
    }
}

/// Most hex digits of a chunk size (16 fill a u64).
const CHUNK_SIZE_DIGITS_MAX: u32 = 15;

impl Chunked {
    pub fn new() -> Chunked {
        Chunked {
            state: State::Size,
            size: 0,
            digits: 0,
            line: 0,
        }
    }

    /// True once the last chunk and the trailers were read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes from the start of `input`: returns how many bytes were consumed and the payload
    /// found among them (a sub-slice of `input`, possibly empty). Consumes either all of
    /// `input`, or up to the end of one payload span, or up to the end of the body.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<(usize, &'a [u8]), String> {
        let mut i = 0;
        while i < input.len() {
            if self.state == State::Data {
                let take = (self.size.min((input.len() - i) as u64)) as usize;
                self.size -= take as u64;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                return Ok((i + take, &input[i..i + take]));
            }
            if self.state == State::Done {
                break;
            }
            self.framing_byte(input[i])?;
            i += 1;
        }
        Ok((i, &[]))
    }

    /// One byte outside payloads.
    fn framing_byte(&mut self, b: u8) -> Result<(), String> {
        match self.state {
            State::Size | State::Ext => {
                self.line += 1;
                if self.line > limits::CHUNK_LINE_BYTES_MAX {
                    return Err("chunk size line too long".into());
                }
                if self.state == State::Size {
                    self.size_byte(b)
                } else {
                    self.ext_byte(b)
                }
            }
            State::SizeLf => {
                expect(b, b'\n', "chunk size line")?;
                self.line_end()
            }
            State::DataCr => {
                self.state = State::DataLf;
                expect(b, b'\r', "chunk payload")
            }
            State::DataLf => {
                self.state = State::Size;
                (self.size, self.digits, self.line) = (0, 0, 0);
                expect(b, b'\n', "chunk payload")
            }
            State::TrailerStart | State::Trailer => self.trailer_byte(b),
            State::EndLf => {
                self.state = State::Done;
                expect(b, b'\n', "chunked body")
            }
            State::Data | State::Done => Ok(()),
        }
    }

    fn size_byte(&mut self, b: u8) -> Result<(), String> {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            b';' | b' ' | b'\t' if self.digits > 0 => {
                self.state = State::Ext;
                return Ok(());
            }
            b'\r' if self.digits > 0 => {
                self.state = State::SizeLf;
                return Ok(());
            }
            _ => return Err(format!("bad chunk size byte {b:#04x}")),
        };
        self.digits += 1;
        if self.digits > CHUNK_SIZE_DIGITS_MAX {
            return Err("chunk size too large".into());
        }
        self.size = self.size << 4 | u64::from(digit);
        Ok(())
    }

    fn ext_byte(&mut self, b: u8) -> Result<(), String> {
        match b {
            b'\r' => self.state = State::SizeLf,
            b'\n' => return Err("bare LF in a chunk size line".into()),
            _ => {}
        }
        Ok(())
    }

    /// The end of a size line: a payload follows, or the trailers after the last chunk.
    fn line_end(&mut self) -> Result<(), String> {
        if self.size == 0 {
            self.state = State::TrailerStart;
            self.line = 0;
        } else {
            self.state = State::Data;
        }
        Ok(())
    }

    fn trailer_byte(&mut self, b: u8) -> Result<(), String> {
        self.line += 1;
        if self.line > limits::TRAILER_BYTES_MAX {
            return Err("chunked trailers too long".into());
        }
        match (self.state, b) {
            (State::TrailerStart, b'\r') => self.state = State::EndLf,
            (_, b'\n') => self.state = State::TrailerStart,
            _ => self.state = State::Trailer,
        }
        Ok(())
    }
}

fn expect(b: u8, want: u8, what: &str) -> Result<(), String> {
    if b == want {
        Ok(())
    } else {
        Err(format!(
            "malformed {what}: {b:#04x} where {want:#04x} belongs"
        ))
    }
}

/// Decodes one response body of any framing.
#[derive(Debug, Clone)]
pub enum BodyDecoder {
    Length(u64),
    Chunked(Chunked),
    UntilClose,
}

impl BodyDecoder {
    pub fn new(framing: Framing) -> BodyDecoder {
        match framing {
            Framing::Empty => BodyDecoder::Length(0),
            Framing::Length(n) => BodyDecoder::Length(n),
            Framing::Chunked => BodyDecoder::Chunked(Chunked::new()),
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

    /// As `Chunked::decode`, for any framing.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<(usize, &'a [u8]), String> {
        match self {
            BodyDecoder::Length(n) => {
                let take = (*n).min(input.len() as u64) as usize;
                *n -= take as u64;
                Ok((take, &input[..take]))
            }
            BodyDecoder::Chunked(c) => c.decode(input),
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
        let mut d = BodyDecoder::Chunked(Chunked::new());
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
