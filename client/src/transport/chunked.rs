//! Incremental decoder for the chunked transfer coding (RFC 9112 §7.1) of response bodies.
//! Pure: fed byte slices, it hands out the payload in place (`decode_span`), without copying;
//! never performs I/O.
//!
//! This is keel-http's request-body decoder (`keel_http::ChunkedDecoder`, whose state machine
//! the load generator used until the client became its own crate), less the body-size bound:
//! keel-client may not depend on the server's HTTP stack, and a response body is bounded by the
//! caller (`Conn::read_body`), not by the decoder. Its tests are `body.rs`'s (tables, random
//! split points, byte by byte, malformed input, every limit, random garbage).
//!
//! Chunk extensions are skipped (at most `line_bytes_max` bytes per size line); trailer fields
//! are skipped (at most `trailer_bytes_max` bytes).

/// Where the decoder is within the chunked body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading hex digits of a chunk size.
    Size { size: u64, digits: usize },
    /// After the size: skipping whitespace / `;ext` up to CR LF.
    Extension { size: u64 },
    /// Saw CR after the size line; expecting LF.
    SizeLf { size: u64 },
    /// Handing out this many more data bytes.
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

/// Why a chunked body was refused: a syntax error or a bound exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkedError(&'static str);

impl std::fmt::Display for ChunkedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed chunked body: {}", self.0)
    }
}

/// Decoder state plus the bounds it enforces.
#[derive(Clone, Debug)]
pub struct ChunkedDecoder {
    state: State,
    line_bytes: usize,
    trailer_bytes: usize,
    trailer_bytes_max: usize,
    line_bytes_max: usize,
}

impl ChunkedDecoder {
    /// A decoder allowing at most `line_bytes_max` bytes of chunk extensions on a size line
    /// and `trailer_bytes_max` bytes of trailer fields.
    pub fn new(line_bytes_max: usize, trailer_bytes_max: usize) -> ChunkedDecoder {
        ChunkedDecoder {
            state: State::Size { size: 0, digits: 0 },
            line_bytes: 0,
            trailer_bytes: 0,
            trailer_bytes_max,
            line_bytes_max,
        }
    }

    /// Whether the terminating chunk and trailers have been consumed.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
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
                return Ok((i + n, &input[i..i + n]));
            }
            self.step(input[i])?;
            i += 1;
        }
        Ok((i, &[]))
    }

    /// Advances over one byte outside chunk data.
    fn step(&mut self, b: u8) -> Result<(), ChunkedError> {
        self.state = match self.state {
            State::Size { size, digits } => match hex(b) {
                Some(d) => {
                    if digits >= 16 {
                        return Err(ChunkedError("chunk size too long"));
                    }
                    State::Size {
                        size: size << 4 | u64::from(d),
                        digits: digits + 1,
                    }
                }
                None if digits == 0 => return Err(ChunkedError("invalid chunk size")),
                None => {
                    self.line_bytes = 0;
                    self.after_size(b, size)?
                }
            },
            State::Extension { size } => {
                self.line_bytes += 1;
                if self.line_bytes > self.line_bytes_max {
                    return Err(ChunkedError("chunk extension too long"));
                }
                self.after_size(b, size)?
            }
            State::SizeLf { size } => match (b, size) {
                (b'\n', 0) => State::TrailerStart,
                (b'\n', size) => State::Data { remaining: size },
                _ => return Err(ChunkedError("invalid chunk size line")),
            },
            State::Data { .. } => unreachable!("data bytes are handed out by decode_span"),
            State::DataCr if b == b'\r' => State::DataLf,
            State::DataLf if b == b'\n' => State::Size { size: 0, digits: 0 },
            State::DataCr | State::DataLf => {
                return Err(ChunkedError("missing CRLF after chunk data"))
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
            State::EndLf => return Err(ChunkedError("invalid end of chunked body")),
            State::Done => State::Done,
        };
        Ok(())
    }

    /// The state after a byte following the chunk size (extension, whitespace or CR).
    fn after_size(&mut self, b: u8, size: u64) -> Result<State, ChunkedError> {
        match b {
            b'\r' => Ok(State::SizeLf { size }),
            b'\n' => Err(ChunkedError("bare LF in chunk size line")),
            b';' | b' ' | b'\t' => Ok(State::Extension { size }),
            _ if matches!(self.state, State::Extension { .. }) => Ok(State::Extension { size }),
            _ => Err(ChunkedError("invalid chunk size")),
        }
    }

    fn trailer_byte(&mut self) -> Result<State, ChunkedError> {
        self.trailer_bytes += 1;
        if self.trailer_bytes > self.trailer_bytes_max {
            return Err(ChunkedError("chunked trailer too large"));
        }
        Ok(State::TrailerLine)
    }
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}
