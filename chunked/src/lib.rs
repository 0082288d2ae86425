//! Incremental decoder for the chunked transfer coding (RFC 9112 §7.1). Pure: fed byte slices,
//! it hands out the payload in place (`decode_span`) or appends it to a buffer (`decode`);
//! never performs I/O. The server reads request bodies with it, the load generator responses.
//!
//! Chunk extensions are skipped (bounded by `CHUNK_LINE_BYTES_MAX`); trailer fields are
//! skipped (bounded by the head size limit).

/// Longest chunk-size line (hex size plus chunk extensions) accepted unless a caller sets
/// another (`ChunkedDecoder::with_line_bytes_max`).
pub const CHUNK_LINE_BYTES_MAX: usize = 4 * 1024;

/// Where the decoder is within the chunked body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading hex digits of a chunk size.
    Size { size: u64, digits: usize },
    /// After the size: skipping whitespace / `;ext` up to CR LF.
    Extension { size: u64 },
    /// Saw CR after the size line; expecting LF.
    SizeLf { size: u64 },
    /// Copying this many more data bytes.
    Data { remaining: u64 },
    /// Expecting the CR after chunk data.
    DataCr,
    /// Expecting the LF after chunk data.
    DataLf,
    /// At the start of a trailer line (or the final empty line).
    TrailerStart,
    /// Inside a trailer field line, skipping to LF.
    TrailerLine,
    /// Saw CR at the start of a trailer line: the final LF ends the body.
    EndLf,
    /// The body is complete.
    Done,
}

/// Why a chunked body was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkedError {
    /// Syntax error: 400.
    Malformed(&'static str),
    /// Decoded body exceeds the limit: 413.
    TooLarge,
}

impl std::fmt::Display for ChunkedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkedError::Malformed(why) => write!(f, "malformed chunked body: {why}"),
            ChunkedError::TooLarge => f.write_str("chunked body exceeds its size limit"),
        }
    }
}

/// Decoder state plus the limits it enforces.
#[derive(Clone, Debug)]
pub struct ChunkedDecoder {
    state: State,
    line_bytes: usize,
    trailer_bytes: usize,
    /// Payload bytes handed out so far.
    decoded: u64,
    body_bytes_max: usize,
    trailer_bytes_max: usize,
    line_bytes_max: usize,
}

impl ChunkedDecoder {
    /// A decoder allowing at most `body_bytes_max` decoded bytes and `trailer_bytes_max`
    /// bytes of trailer fields.
    pub fn new(body_bytes_max: usize, trailer_bytes_max: usize) -> ChunkedDecoder {
        ChunkedDecoder {
            state: State::Size { size: 0, digits: 0 },
            line_bytes: 0,
            trailer_bytes: 0,
            decoded: 0,
            body_bytes_max,
            trailer_bytes_max,
            line_bytes_max: CHUNK_LINE_BYTES_MAX,
        }
    }

    /// Allows at most `n` bytes of chunk extensions on a size line (default
    /// `CHUNK_LINE_BYTES_MAX`).
    pub fn with_line_bytes_max(mut self, n: usize) -> ChunkedDecoder {
        self.line_bytes_max = n;
        self
    }

    /// Whether the terminating chunk and trailers have been consumed.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes bytes from `input`, appending decoded data to `out`. Returns how many input
    /// bytes were consumed; it stops right after the body's end, leaving later bytes (the
    /// next pipelined request) unconsumed.
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, ChunkedError> {
        let mut i = 0;
        loop {
            let (n, payload) = self.decode_span(&input[i..])?;
            out.extend_from_slice(payload);
            i += n;
            if n == 0 || i == input.len() || self.is_done() {
                return Ok(i);
            }
        }
    }

    /// Consumes bytes from the start of `input` up to the end of one payload span, the end of
    /// the body, or the end of `input`: returns how many were consumed and the payload among
    /// them (a sub-slice of `input`, possibly empty), without copying it.
    pub fn decode_span<'a>(&mut self, input: &'a [u8]) -> Result<(usize, &'a [u8]), ChunkedError> {
        let mut i = 0;
        while i < input.len() && self.state != State::Done {
            if let State::Data { remaining } = self.state {
                let n = (input.len() - i).min(usize::try_from(remaining).unwrap_or(usize::MAX));
                let remaining = remaining - n as u64;
                self.state = if remaining == 0 {
                    State::DataCr
                } else {
                    State::Data { remaining }
                };
                self.decoded += n as u64;
                return Ok((i + n, &input[i..i + n]));
            }
            self.step(input[i])?;
            i += 1;
        }
        Ok((i, &[]))
    }

    /// Advances over one byte outside chunk data.
    fn step(&mut self, b: u8) -> Result<(), ChunkedError> {
        use ChunkedError::Malformed;
        self.state = match self.state {
            State::Size { size, digits } => match hex(b) {
                Some(d) => {
                    if digits >= 16 {
                        return Err(Malformed("chunk size too long"));
                    }
                    State::Size {
                        size: size << 4 | u64::from(d),
                        digits: digits + 1,
                    }
                }
                None if digits == 0 => return Err(Malformed("invalid chunk size")),
                None => {
                    self.check_size(size)?;
                    self.line_bytes = 0;
                    self.after_size(b, size)?
                }
            },
            State::Extension { size } => {
                self.line_bytes += 1;
                if self.line_bytes > self.line_bytes_max {
                    return Err(Malformed("chunk extension too long"));
                }
                self.after_size(b, size)?
            }
            State::SizeLf { size } => match (b, size) {
                (b'\n', 0) => State::TrailerStart,
                (b'\n', size) => State::Data { remaining: size },
                _ => return Err(Malformed("invalid chunk size line")),
            },
            State::Data { .. } => unreachable!("data bytes are handed out by decode_span"),
            State::DataCr if b == b'\r' => State::DataLf,
            State::DataLf if b == b'\n' => State::Size { size: 0, digits: 0 },
            State::DataCr | State::DataLf => {
                return Err(Malformed("missing CRLF after chunk data"))
            }
            State::TrailerStart => match b {
                b'\r' => State::EndLf,
                b'\n' => State::Done,
                _ => self.trailer_byte()?,
            },
            State::TrailerLine => match b {
                b'\n' => State::TrailerStart,
                _ => self.trailer_byte()?,
            },
            State::EndLf if b == b'\n' => State::Done,
            State::EndLf => return Err(Malformed("invalid end of chunked body")),
            State::Done => State::Done,
        };
        Ok(())
    }

    /// The state after a byte following the chunk size (extension, whitespace or CR).
    fn after_size(&mut self, b: u8, size: u64) -> Result<State, ChunkedError> {
        match b {
            b'\r' => Ok(State::SizeLf { size }),
            b'\n' => Err(ChunkedError::Malformed("bare LF in chunk size line")),
            b';' | b' ' | b'\t' => Ok(State::Extension { size }),
            _ if matches!(self.state, State::Extension { .. }) => Ok(State::Extension { size }),
            _ => Err(ChunkedError::Malformed("invalid chunk size")),
        }
    }

    fn check_size(&self, size: u64) -> Result<(), ChunkedError> {
        let total = self.decoded.saturating_add(size);
        if total > self.body_bytes_max as u64 {
            return Err(ChunkedError::TooLarge);
        }
        Ok(())
    }

    fn trailer_byte(&mut self) -> Result<State, ChunkedError> {
        self.trailer_bytes += 1;
        if self.trailer_bytes > self.trailer_bytes_max {
            return Err(ChunkedError::Malformed("chunked trailer too large"));
        }
        Ok(State::TrailerLine)
    }
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed in pieces of `step` bytes; returns (data, consumed) or the error.
    fn decode_in_steps(input: &[u8], step: usize) -> Result<(Vec<u8>, usize, bool), ChunkedError> {
        let mut dec = ChunkedDecoder::new(1024, 256);
        let mut out = Vec::new();
        let mut consumed = 0;
        while consumed < input.len() && !dec.is_done() {
            let end = (consumed + step).min(input.len());
            consumed += dec.decode(&input[consumed..end], &mut out)?;
        }
        Ok((out, consumed, dec.is_done()))
    }

    #[test]
    fn decodes_valid_bodies_in_any_split() {
        let cases: &[(&str, &str)] = &[
            ("0\r\n\r\n", ""),
            ("5\r\nhello\r\n0\r\n\r\n", "hello"),
            ("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world"),
            ("A\r\n0123456789\r\n0\r\n\r\n", "0123456789"),
            (
                "a;name=value;x\r\n0123456789\r\n0;last\r\n\r\n",
                "0123456789",
            ),
            ("3 \r\nabc\r\n0\r\n\r\n", "abc"),
            ("3\r\nabc\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n", "abc"),
            ("0000003\r\nabc\r\n0\r\n\r\n", "abc"),
        ];
        for (input, want) in cases {
            for step in [1, 2, 3, 7, input.len()] {
                let with_next = format!("{input}GET / HTTP/1.1\r\n");
                let (out, consumed, done) = decode_in_steps(with_next.as_bytes(), step)
                    .unwrap_or_else(|e| panic!("{input:?} step {step}: {e:?}"));
                assert!(done, "{input:?} step {step}");
                assert_eq!(out, want.as_bytes(), "{input:?} step {step}");
                assert_eq!(consumed, input.len(), "{input:?} step {step}");
            }
        }
    }

    #[test]
    fn rejects_malformed_bodies() {
        let cases: &[&str] = &[
            "x\r\n",
            "\r\n",
            "5\r\nhelloXX",
            "5\nhello\r\n",
            "3\r\nabc\r\n0\r\n\rX",
            "12345678901234567\r\n",
            "3$\r\nabc\r\n0\r\n\r\n",
        ];
        for input in cases {
            let res = decode_in_steps(input.as_bytes(), 1);
            assert!(
                matches!(res, Err(ChunkedError::Malformed(_))),
                "{input:?}: {res:?}"
            );
        }
    }

    #[test]
    fn enforces_body_and_trailer_limits() {
        let big = format!("400\r\n{}\r\n1\r\nx\r\n0\r\n\r\n", "a".repeat(1024));
        assert_eq!(
            decode_in_steps(big.as_bytes(), 100),
            Err(ChunkedError::TooLarge)
        );
        // The size line alone is refused before any data of the oversize chunk is read.
        assert_eq!(
            decode_in_steps(b"ffffffff\r\n", 100),
            Err(ChunkedError::TooLarge)
        );
        let exact = format!("400\r\n{}\r\n0\r\n\r\n", "a".repeat(1024));
        assert_eq!(
            decode_in_steps(exact.as_bytes(), 100).unwrap().0.len(),
            1024
        );
        let trailers = format!("0\r\nX: {}\r\n\r\n", "t".repeat(300));
        assert!(matches!(
            decode_in_steps(trailers.as_bytes(), 50),
            Err(ChunkedError::Malformed(_))
        ));
        let long_ext = format!(
            "1;{}\r\nx\r\n0\r\n\r\n",
            "e".repeat(CHUNK_LINE_BYTES_MAX + 1)
        );
        assert!(matches!(
            decode_in_steps(long_ext.as_bytes(), 512),
            Err(ChunkedError::Malformed(_))
        ));
    }
}
