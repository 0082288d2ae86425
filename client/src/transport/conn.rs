//! One HTTP/1.1 connection: a TCP stream (TCP_NODELAY) or rustls over it, a fixed read
//! buffer that responses are parsed from in place, and a reused write buffer that holds each
//! whole request so that it goes out in one write.

use super::body::BodyDecoder;
use super::head::{self, Head};
use super::target::{Tls, Url};
use super::tls::TlsIo;
use crate::limits;
use std::io;
use std::ops::Range;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

enum Io {
    Plain(TcpStream),
    Tls(Box<TlsIo>),
}

/// A failed exchange. `stale` when it failed before any byte of the response arrived on a
/// connection that had served a response before: most likely a keep-alive connection the
/// server closed, so the request can be sent again on a new one (if it is idempotent).
#[derive(Debug)]
pub struct Failure {
    pub msg: String,
    pub stale: bool,
}

impl From<String> for Failure {
    fn from(msg: String) -> Failure {
        Failure { msg, stale: false }
    }
}

/// One connection to the server.
pub struct Conn {
    io: Io,
    buf: Box<[u8]>,
    /// Unconsumed received bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// The next request, rendered whole.
    pub wbuf: Vec<u8>,
    /// When the connection was last given back to the idle list.
    pub idle_since: Instant,
    /// It has served a response before.
    pub used: bool,
}

/// Decodes `data` as the body `dec` decodes until it ends, handing `each` every payload
/// span; returns how many bytes of `data` belong to the body (the rest follow it).
fn decode_spans(
    dec: &mut BodyDecoder,
    mut data: &[u8],
    each: &mut impl FnMut(&[u8]) -> Result<(), String>,
) -> Result<usize, String> {
    let len = data.len();
    while !data.is_empty() && !dec.is_done() {
        let (used, payload) = dec.decode(data)?;
        if used == 0 {
            return Err("response body decoder made no progress".into());
        }
        data = &data[used..];
        if !payload.is_empty() {
            each(payload)?;
        }
    }
    Ok(len - data.len())
}

impl Conn {
    /// Connects (and, for `https://`, completes the TLS handshake).
    pub async fn connect(url: &Url, tls: Option<&Tls>) -> Result<Conn, String> {
        let tcp = TcpStream::connect((url.host.as_str(), url.port))
            .await
            .map_err(|e| format!("connect {}:{}: {e}", url.host, url.port))?;
        tcp.set_nodelay(true)
            .map_err(|e| format!("TCP_NODELAY: {e}"))?;
        let io = match tls {
            None => Io::Plain(tcp),
            Some(t) => Io::Tls(Box::new(
                TlsIo::connect(tcp, t.config.clone(), t.server_name.clone())
                    .await
                    .map_err(|e| format!("TLS handshake with {}: {e}", url.authority))?,
            )),
        };
        Ok(Conn {
            io,
            buf: vec![0; limits::READ_BUFFER_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            wbuf: Vec::new(),
            idle_since: Instant::now(),
            used: false,
        })
    }

    /// True unless the server closed this idle connection (or sent something unasked): a
    /// non-blocking read of the socket must find nothing to read.
    pub fn is_alive(&self) -> bool {
        let tcp = match &self.io {
            Io::Plain(t) => t,
            Io::Tls(t) if t.has_buffered() => return false,
            Io::Tls(t) => t.tcp(),
        };
        let mut probe = [0u8; 1];
        matches!(tcp.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// Writes the request in `wbuf`.
    pub async fn send(&mut self) -> Result<(), Failure> {
        let sent = match &mut self.io {
            Io::Plain(t) => t.write_all(&self.wbuf).await,
            Io::Tls(t) => t.write_all(&self.wbuf).await,
        };
        sent.map_err(|e| Failure {
            msg: format!("sending request: {e}"),
            stale: self.used,
        })
    }

    async fn read_more(&mut self) -> io::Result<usize> {
        let into = &mut self.buf[self.end..];
        let n = match &mut self.io {
            Io::Plain(t) => t.read(into).await?,
            Io::Tls(t) => t.read(into).await?,
        };
        self.end += n;
        Ok(n)
    }

    /// Reads and parses the response head.
    pub async fn read_head(&mut self) -> Result<Head, Failure> {
        self.read_head_into(None).await
    }

    /// Reads and parses the response head, its header fields into `fields`.
    pub async fn read_head_fields(
        &mut self,
        fields: &mut Vec<(String, String)>,
    ) -> Result<Head, Failure> {
        self.read_head_into(Some(fields)).await
    }

    async fn read_head_into(
        &mut self,
        mut fields: Option<&mut Vec<(String, String)>>,
    ) -> Result<Head, Failure> {
        let mut got_any = self.end > self.start;
        loop {
            if let Some((head, len)) = head::parse(&self.buf[self.start..self.end])? {
                if let Some(f) = fields.as_mut() {
                    **f = head::fields(&self.buf[self.start..self.start + len]);
                }
                self.start += len;
                return Ok(head);
            }
            self.compact();
            if self.end == self.buf.len() {
                return Err("response head does not fit the read buffer"
                    .to_string()
                    .into());
            }
            let stale = self.used && !got_any;
            match self.read_more().await {
                Ok(0) => {
                    return Err(Failure {
                        msg: "connection closed before a response".into(),
                        stale,
                    })
                }
                Ok(_) => got_any = true,
                Err(e) => {
                    return Err(Failure {
                        msg: format!("reading response: {e}"),
                        stale,
                    })
                }
            }
        }
    }

    /// Moves unconsumed bytes to the start of the buffer.
    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
    }

    /// The next payload bytes of the body `dec` decodes, as a range of the read buffer (see
    /// `bytes`), or `None` at the end of the body. Reads the socket only when the buffer holds
    /// no more of the body.
    pub async fn next_span(
        &mut self,
        dec: &mut BodyDecoder,
    ) -> Result<Option<Range<usize>>, String> {
        loop {
            if !self.fill_buf(dec).await? {
                return Ok(None);
            }
            let (used, payload) = dec.decode(&self.buf[self.start..self.end])?;
            // The payload is always the last of the bytes consumed.
            let (len, at) = (payload.len(), self.start + used);
            self.start = at;
            if len > 0 {
                return Ok(Some(at - len..at));
            }
            if used == 0 {
                return Err("response body decoder made no progress".into());
            }
        }
    }

    /// Waits until received bytes are in the read buffer (reading the socket only if none
    /// are); false at the end of the body. Cancel-safe.
    async fn fill_buf(&mut self, dec: &BodyDecoder) -> Result<bool, String> {
        if dec.is_done() {
            return Ok(false);
        }
        if self.start < self.end {
            return Ok(true);
        }
        (self.start, self.end) = (0, 0);
        let n = self
            .read_more()
            .await
            .map_err(|e| format!("reading response body: {e}"))?;
        if n == 0 {
            dec.at_eof()?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Waits until body bytes are received (reading the socket only if none are); false at
    /// the end of the body. Cancel-safe. Follow with `drain`: over TLS the bytes may still be
    /// encrypted records, which `drain` decrypts in place.
    pub async fn fill(&mut self, dec: &BodyDecoder) -> Result<bool, String> {
        if dec.is_done() {
            return Ok(false);
        }
        if self.start < self.end {
            return Ok(true);
        }
        match &mut self.io {
            Io::Plain(_) => self.fill_buf(dec).await,
            Io::Tls(t) => {
                let more = t
                    .fill()
                    .await
                    .map_err(|e| format!("reading response body: {e}"))?;
                if !more {
                    dec.at_eof()?;
                }
                Ok(more)
            }
        }
    }

    /// Hands `each` every payload span of the body already received, in order, without
    /// waiting for more: what is in the read buffer, then (over TLS) every whole record
    /// received, decrypted in place and decoded where it lies.
    pub async fn drain(
        &mut self,
        dec: &mut BodyDecoder,
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        self.start += decode_spans(dec, &self.buf[self.start..self.end], &mut each)?;
        let Conn {
            io,
            buf,
            start,
            end,
            ..
        } = self;
        let Io::Tls(t) = io else { return Ok(()) };
        if *start < *end {
            return Ok(()); // the body ended with bytes after it in the buffer
        }
        (*start, *end) = (0, 0);
        t.drain_with(|data| {
            // Bytes after the body's end stay for the next response.
            let rest = &data[decode_spans(dec, data, &mut each)?..];
            let at = *end;
            let room = buf
                .get_mut(at..at + rest.len())
                .ok_or("more bytes after the response body than the read buffer holds")?;
            room.copy_from_slice(rest);
            *end += rest.len();
            Ok(())
        })
        .await
    }

    /// Received bytes (a range from `next_span`).
    pub fn bytes(&self, r: Range<usize>) -> &[u8] {
        &self.buf[r]
    }

    /// Reads the whole body, at most `max` bytes.
    pub async fn read_body(
        &mut self,
        dec: &mut BodyDecoder,
        max: usize,
    ) -> Result<Vec<u8>, String> {
        let mut body = match dec {
            BodyDecoder::Length(n) if *n > max as u64 => {
                return Err(format!(
                    "response body of {n} bytes is over the {max} byte limit"
                ))
            }
            BodyDecoder::Length(n) => Vec::with_capacity(*n as usize),
            _ => Vec::new(),
        };
        while let Some(r) = self.next_span(dec).await? {
            if body.len() + r.len() > max {
                return Err(format!("response body over the {max} byte limit"));
            }
            body.extend_from_slice(&self.buf[r]);
        }
        Ok(body)
    }

    /// The connection can carry another request after this response: the server keeps it
    /// open, the body was read to its end and nothing else arrived.
    pub fn reusable(&self, head: &Head, dec: &BodyDecoder) -> bool {
        !head.close && dec.is_done() && self.start == self.end
    }
}
