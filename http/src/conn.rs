//! One HTTP/1.1 connection, served request by request.
//!
//! States (each a method below; any I/O error or timeout closes the connection):
//! 1. **Head**: parse a head from buffered bytes, reading more if needed. Before the first
//!    byte the idle deadline applies (silent close, also on server stop); after it the header
//!    deadline (408). Pending responses are flushed before blocking on a read.
//! 2. **Admit**: the handler judges the head ([`Handler::admit`]: authentication). Refused:
//!    its answer is written without reading the body or sending `100 Continue`, and the
//!    connection closes unless the whole body had already arrived (step 5).
//! 3. **Body**: read it by `Content-Length` or chunked coding under the body deadline
//!    (408), after `100 Continue` if the client expects one, into a buffer that grows as
//!    bytes arrive, charged to the core's body budget. Oversize: 413 without reading the
//!    rest; budget exhausted: 429, the rest unread.
//! 4. **Handle**: run the handler, or answer 429 if the core's in-flight limit is reached.
//!    The body's budget charge is held until the handler is done.
//! 5. **Respond**: a full body is buffered (pipelined responses are coalesced, in request
//!    order, up to `pipelined_requests_max`); a stream is written and flushed chunk by chunk
//!    while the connection watches for the peer hanging up and for server stop.
//! 6. Back to 1 if the connection is keep-alive, else close: flush, shut the write side
//!    down, and after an answer that left request bytes unread, discard what the client
//!    still sends for a moment so that it reads the answer instead of a reset.
//!
//! Requests are handled one at a time, so responses are always in request order.

use crate::budget::{BodyBuf, ByteBudget, GrowError};
use crate::limits::{
    Limits, IDLE_BUFFER_BYTES_KEPT, IOV_PER_WRITE_MAX, LINGER_BYTES_MAX, LINGER_TIMEOUT,
    READ_BUFFER_FIRST_BYTES, READ_CHUNK_BYTES, READ_SPARE_MIN_BYTES, WRITE_BUFFER_BYTES_MAX,
};
use crate::parse::{parse_head, Framing, Head, HeadError};
use crate::request::{Admitted, Method, Request, RequestHead};
use crate::response::{status_body, too_many_requests, Body, Chunk, Response};
use crate::rt::{self, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, Either, Instant};
use crate::tls::PeerCert;
use crate::write::{write_chunk_head, write_head, BodyFraming, LAST_CHUNK};
use crate::Handler;
use keel_chunked::{ChunkedDecoder, ChunkedError};
use std::cell::Cell;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A streamed body as the connection writes it: one chunk per item.
type ChunkStream = Pin<Box<dyn futures_core::Stream<Item = Chunk>>>;

/// Adapts a stream of byte vectors to a stream of chunks.
struct VecChunks(Pin<Box<dyn futures_core::Stream<Item = Vec<u8>>>>);

impl futures_core::Stream for VecChunks {
    type Item = Chunk;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Chunk>> {
        self.0.as_mut().poll_next(cx).map(|v| v.map(Chunk::from))
    }
}

/// State shared by all connections of one core.
pub(crate) struct CoreState {
    pub limits: Limits,
    pub handler: Arc<dyn Handler>,
    /// Requests whose handler is running on this core.
    pub in_flight: Cell<usize>,
    /// Open connections on this core.
    pub connections: Cell<usize>,
    /// Open connections on this core that have not had a request admitted yet.
    pub unadmitted: Rc<Cell<usize>>,
    /// Bytes of request bodies held on this core.
    pub body_budget: Rc<ByteBudget>,
    /// Signalled when `connections` drops to zero.
    pub drained: rt::Notify,
    pub stop: rt::LocalStop,
}

/// Facts about a connection fixed when it was accepted.
pub(crate) struct ConnInfo {
    pub peer: SocketAddr,
    pub tls: bool,
    pub client_cert: PeerCert,
}

/// An error answered before any handler runs, on a connection then closed.
enum Refusal {
    /// With a `metav1.Status` body.
    Status {
        code: u16,
        reason: &'static str,
        message: String,
        retry_after_seconds: Option<u32>,
    },
    /// As Go's server answers a request it cannot parse: a plain-text `400 Bad Request:
    /// <detail>`, also in the status line.
    GoBadRequest(&'static str),
}

impl Refusal {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Refusal {
        Refusal::Status {
            code,
            reason,
            message: message.into(),
            retry_after_seconds: None,
        }
    }

    fn timeout() -> Refusal {
        Refusal::new(408, "Timeout", "timed out reading the request")
    }

    /// The core's body budget is spent: as the in-flight limit's `429`, with
    /// `Retry-After: 1`.
    fn bodies_over_budget() -> Refusal {
        Refusal::Status {
            code: 429,
            reason: "TooManyRequests",
            message: "Too many request bodies being read, please try again later.".to_string(),
            retry_after_seconds: Some(1),
        }
    }

    fn of_growth(e: GrowError, limits: &Limits) -> Refusal {
        match e {
            GrowError::TooLarge => too_large(limits),
            GrowError::OverBudget => Refusal::bodies_over_budget(),
        }
    }
}

impl From<HeadError> for Refusal {
    fn from(e: HeadError) -> Refusal {
        match e {
            HeadError::TooManyHosts => Refusal::GoBadRequest(e.message()),
            _ => {
                let reason = if e.status() == 400 { "BadRequest" } else { "" };
                Refusal::new(e.status(), reason, e.message())
            }
        }
    }
}

/// Why reading stopped without a request to answer.
enum ReadStop {
    /// Answer with this error, then close.
    Refuse(Refusal),
    /// Close silently (peer closed, idle timeout, server stop, I/O error).
    Close,
}

impl From<Refusal> for ReadStop {
    fn from(r: Refusal) -> ReadStop {
        ReadStop::Refuse(r)
    }
}

/// What the peer did while a stream response was waiting for its next chunk.
enum PeerEvent {
    Gone,
    Stop,
}

/// Decrements the core's in-flight count when the handler is done (or dropped).
struct InFlightGuard(Rc<CoreState>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.in_flight.set(self.0.in_flight.get() - 1);
    }
}

/// A connection: the transport, its read buffer and pending output.
pub(crate) struct Conn<S> {
    io: S,
    info: ConnInfo,
    core: Rc<CoreState>,
    buf: Vec<u8>,
    out: Vec<u8>,
    /// Responses in `out` not yet flushed.
    unflushed: usize,
    /// Counts the connection among its core's unadmitted ones until a request is admitted.
    unadmitted: UnadmittedGuard,
    /// Request bytes were left unread: discard what still comes for a moment before closing.
    linger: bool,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    pub fn new(io: S, info: ConnInfo, core: Rc<CoreState>, unadmitted: UnadmittedGuard) -> Conn<S> {
        Conn {
            io,
            info,
            core,
            buf: Vec::new(),
            out: Vec::new(),
            unflushed: 0,
            unadmitted,
            linger: false,
        }
    }

    /// Serves requests until the connection closes. `first_deadline` bounds the wait for
    /// the first request's head.
    pub async fn run(mut self, first_deadline: Instant) {
        let mut idle_deadline = first_deadline;
        loop {
            let keep_alive = match self.serve_one(idle_deadline).await {
                Ok(keep_alive) => keep_alive,
                Err(ReadStop::Close) => false,
                Err(ReadStop::Refuse(r)) => {
                    self.refuse(r);
                    false
                }
            };
            if !keep_alive {
                self.close().await;
                return;
            }
            idle_deadline = Instant::now() + self.core.limits.idle_timeout;
        }
    }

    /// Reads, handles and answers one request; returns whether to keep the connection.
    async fn serve_one(&mut self, idle_deadline: Instant) -> Result<bool, ReadStop> {
        let head = self.read_head(idle_deadline).await?;
        let admitted = match self.admit(&head) {
            Ok(admitted) => admitted,
            Err(response) => return self.answer_unadmitted(&head, response).await,
        };
        let (body, charge) = self.read_body(&head).await?.into_parts();
        let mut request_info = RequestInfo::of(&head);
        let response = self.handle(head, body, admitted).await;
        drop(charge); // the handler is done with the body

        // A server stop during the handler still answers, but closes the connection.
        request_info.keep_alive &= !self.core.stop.is_stopped();
        self.respond(request_info, response)
            .await
            .map_err(|_| ReadStop::Close)
    }

    /// Asks the handler to admit the request on its head; an admitted request's connection
    /// no longer counts as unadmitted.
    fn admit(&mut self, head: &Head) -> Result<Admitted, Response> {
        let (client_cert, client_cert_error) = match &self.info.client_cert {
            PeerCert::None => (None, None),
            PeerCert::Verified(identity) => (Some(identity), None),
            PeerCert::Rejected(why) => (None, Some(why.as_str())),
        };
        let view = RequestHead {
            method: &head.method,
            target: &head.target,
            path: &head.path,
            query: &head.query,
            headers: &head.headers,
            peer: self.info.peer,
            tls: self.info.tls,
            client_cert,
            client_cert_error,
        };
        let admitted = self.core.handler.admit(&view)?;
        self.unadmitted.admitted();
        Ok(admitted)
    }

    /// Writes the answer to a request the handler did not admit, without reading its body.
    /// The connection stays open only if no body was announced or all of it arrived with the
    /// head (it is then dropped); otherwise the body's bytes would be read as the next
    /// request, so the connection closes (Go's server too closes a connection whose request
    /// body was left unread, rather than read a large one).
    async fn answer_unadmitted(
        &mut self,
        head: &Head,
        response: Response,
    ) -> Result<bool, ReadStop> {
        let body_here = match head.framing {
            Framing::Empty => true,
            Framing::Length(n) => n <= self.buf.len() as u64,
            Framing::Chunked => false,
        };
        if let (true, Framing::Length(n)) = (body_here, head.framing) {
            self.buf.drain(..n as usize);
        }
        let mut request_info = RequestInfo::of(head);
        request_info.keep_alive &= body_here && !self.core.stop.is_stopped();
        self.linger |= !body_here;
        self.respond(request_info, response)
            .await
            .map_err(|_| ReadStop::Close)
    }

    async fn read_head(&mut self, idle_deadline: Instant) -> Result<Head, ReadStop> {
        let core = self.core.clone();
        let limits = &core.limits;
        let mut head_deadline = None;
        loop {
            if let Some((head, len)) = parse_head(&self.buf, limits).map_err(Refusal::from)? {
                self.buf.drain(..len);
                return Ok(head);
            }
            self.flush().await.map_err(|_| ReadStop::Close)?;
            let idle = self.buf.is_empty();
            if idle {
                self.release_idle_buffers();
            }
            let deadline = if idle {
                idle_deadline
            } else {
                *head_deadline.get_or_insert_with(|| Instant::now() + limits.header_read_timeout)
            };
            let read = if idle {
                let stop = core.stop.stopped();
                match rt::race(read_more(&mut self.io, &mut self.buf, deadline), stop).await {
                    Either::Left(r) => r,
                    Either::Right(()) => return Err(ReadStop::Close),
                }
            } else {
                read_more(&mut self.io, &mut self.buf, deadline).await
            };
            match read {
                Ok(0) | Err(ReadError::Io) => return Err(ReadStop::Close),
                Ok(_) => {}
                Err(ReadError::TimedOut) if idle => return Err(ReadStop::Close),
                Err(ReadError::TimedOut) => return Err(Refusal::timeout().into()),
            }
        }
    }

    /// Gives back buffer room a connection waiting for its next request no longer needs (a
    /// large head or response once passed through).
    fn release_idle_buffers(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > IDLE_BUFFER_BYTES_KEPT {
            self.buf = Vec::new();
        }
        if self.out.is_empty() && self.out.capacity() > IDLE_BUFFER_BYTES_KEPT {
            self.out = Vec::new();
        }
    }

    async fn read_body(&mut self, head: &Head) -> Result<BodyBuf, ReadStop> {
        let core = self.core.clone();
        let limits = &core.limits;
        let limit = match head.framing {
            Framing::Empty => return Ok(BodyBuf::new(core.body_budget.clone(), 0)),
            Framing::Length(n) if n > limits.body_bytes_max as u64 => {
                return Err(too_large(limits).into())
            }
            Framing::Length(n) => n as usize,
            Framing::Chunked => limits.body_bytes_max,
        };
        let mut body = BodyBuf::new(core.body_budget.clone(), limit);
        if head.framing != Framing::Chunked {
            // The first room is charged before the client is asked for the body, so that a
            // spent budget is answered before the body is sent.
            let first = self.buf.len().clamp(1, limit);
            body.reserve(first)
                .map_err(|e| Refusal::of_growth(e, limits))?;
        }
        if head.expect_continue && self.buf.is_empty() {
            self.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            self.flush().await.map_err(|_| ReadStop::Close)?;
        }
        let deadline = Instant::now() + limits.body_read_timeout;
        match head.framing {
            Framing::Length(_) => self.read_length(body, limit, deadline).await,
            _ => self.read_chunked(body, deadline).await,
        }
    }

    /// Reads a body of `n` bytes: first what arrived with the head, then straight from the
    /// transport into the body's buffer, which grows only when it is full.
    async fn read_length(
        &mut self,
        mut body: BodyBuf,
        n: usize,
        deadline: Instant,
    ) -> Result<BodyBuf, ReadStop> {
        let core = self.core.clone();
        let grow = |e| ReadStop::from(Refusal::of_growth(e, &core.limits));
        let buffered = self.buf.len().min(n);
        body.append(&self.buf[..buffered]).map_err(grow)?;
        self.buf.drain(..buffered);
        while body.len() < n {
            if body.spare() == 0 {
                body.reserve(READ_CHUNK_BYTES.min(n - body.len()))
                    .map_err(grow)?;
            }
            // The buffer's capacity never passes `n`: no byte of a next request is read here.
            match read_into(&mut self.io, body.vec_mut(), deadline).await {
                Ok(0) | Err(ReadError::Io) => return Err(ReadStop::Close),
                Ok(_) => {}
                Err(ReadError::TimedOut) => return Err(Refusal::timeout().into()),
            }
        }
        Ok(body)
    }

    /// Reads a chunked body: the decoder hands out payload spans of the read buffer, which
    /// are appended to the body's buffer.
    async fn read_chunked(
        &mut self,
        mut body: BodyBuf,
        deadline: Instant,
    ) -> Result<BodyBuf, ReadStop> {
        let core = self.core.clone();
        let limits = &core.limits;
        let mut decoder = ChunkedDecoder::new(limits.body_bytes_max, limits.header_bytes_max);
        loop {
            let mut at = 0;
            while at < self.buf.len() && !decoder.is_done() {
                let (n, payload) = decoder.decode_span(&self.buf[at..]).map_err(|e| match e {
                    ChunkedError::TooLarge => too_large(limits),
                    ChunkedError::Malformed(m) => Refusal::new(400, "BadRequest", m),
                })?;
                body.append(payload)
                    .map_err(|e| Refusal::of_growth(e, limits))?;
                at += n;
            }
            self.buf.drain(..at);
            if decoder.is_done() {
                return Ok(body);
            }
            self.read_body_bytes(deadline).await?;
        }
    }

    /// Reads more body bytes; the peer closing mid-body just closes the connection.
    async fn read_body_bytes(&mut self, deadline: Instant) -> Result<(), ReadStop> {
        match read_more(&mut self.io, &mut self.buf, deadline).await {
            Ok(0) | Err(ReadError::Io) => Err(ReadStop::Close),
            Ok(_) => Ok(()),
            Err(ReadError::TimedOut) => Err(Refusal::timeout().into()),
        }
    }

    async fn handle(&mut self, head: Head, body: Vec<u8>, admitted: Admitted) -> Response {
        let core = &self.core;
        if core.in_flight.get() >= core.limits.in_flight_per_core_max {
            return too_many_requests();
        }
        core.in_flight.set(core.in_flight.get() + 1);
        let _guard = InFlightGuard(core.clone());
        let request = Request {
            method: head.method,
            target: head.target,
            path: head.path,
            query: head.query,
            headers: head.headers,
            body,
            peer: self.info.peer,
            tls: self.info.tls,
            client_cert: match &self.info.client_cert {
                PeerCert::Verified(identity) => Some(identity.clone()),
                _ => None,
            },
            client_cert_error: match &self.info.client_cert {
                PeerCert::Rejected(why) => Some(why.clone()),
                _ => None,
            },
            admitted,
        };
        core.handler.handle(request).await
    }

    /// Writes a response; returns whether the connection stays open.
    async fn respond(&mut self, mut req: RequestInfo, resp: Response) -> io::Result<bool> {
        // A handler that sets `Connection: close` ends the connection after this response.
        req.keep_alive &= !resp.asks_close();
        let bodyless = resp.status < 200 || resp.status == 204 || resp.status == 304;
        match resp.body {
            Body::Full(body) => {
                let framing = if resp.status < 200 || resp.status == 204 {
                    BodyFraming::None
                } else {
                    BodyFraming::Length(body.len())
                };
                let close = !req.keep_alive;
                let ka10 = req.http10 && !close;
                write_head(
                    &mut self.out,
                    resp.status,
                    &resp.headers,
                    framing,
                    close,
                    ka10,
                );
                if !req.head_method && !bodyless {
                    self.buffer_body(&body).await?;
                }
                self.unflushed += 1;
                if self.unflushed >= self.core.limits.pipelined_requests_max
                    || self.out.len() >= WRITE_BUFFER_BYTES_MAX
                {
                    self.flush().await?;
                }
                Ok(req.keep_alive)
            }
            Body::Stream(stream) => {
                let stream: ChunkStream = Box::pin(VecChunks(stream));
                self.respond_chunks(req, resp.status, &resp.headers, stream)
                    .await
            }
            Body::Chunks(stream) => {
                self.respond_chunks(req, resp.status, &resp.headers, stream)
                    .await
            }
        }
    }

    /// Writes a streamed response (or only its head, for HEAD and bodyless statuses).
    async fn respond_chunks(
        &mut self,
        req: RequestInfo,
        status: u16,
        headers: &[(String, String)],
        stream: ChunkStream,
    ) -> io::Result<bool> {
        let bodyless = status < 200 || status == 204 || status == 304;
        if !req.head_method && !bodyless {
            return self.respond_stream(req, status, headers, stream).await;
        }
        drop(stream);
        let close = !req.keep_alive;
        let framing = if bodyless {
            BodyFraming::None
        } else {
            BodyFraming::Chunked
        };
        write_head(&mut self.out, status, headers, framing, close, false);
        self.flush().await?;
        Ok(req.keep_alive)
    }

    /// Appends a full body to the output, writing large bodies straight through.
    async fn buffer_body(&mut self, body: &[u8]) -> io::Result<()> {
        if self.out.len() + body.len() <= WRITE_BUFFER_BYTES_MAX {
            self.out.extend_from_slice(body);
            return Ok(());
        }
        self.flush().await?;
        self.write_timed(body).await
    }

    async fn respond_stream(
        &mut self,
        req: RequestInfo,
        status: u16,
        headers: &[(String, String)],
        mut stream: ChunkStream,
    ) -> io::Result<bool> {
        // HTTP/1.0 has no chunked coding: the body ends when the connection does.
        let chunked = !req.http10;
        let framing = if chunked {
            BodyFraming::Chunked
        } else {
            BodyFraming::UntilClose
        };
        let close = !req.keep_alive || !chunked;
        write_head(&mut self.out, status, headers, framing, close, false);
        self.flush().await?;
        let read_cap = self.core.limits.header_bytes_max;
        // One stop future for the whole stream, not one per chunk.
        let stop = self.core.stop.clone();
        let mut stopped = std::pin::pin!(stop.stopped());
        loop {
            let next = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx));
            let peer = watch_peer(&mut self.io, &mut self.buf, read_cap, stopped.as_mut());
            match rt::race(next, peer).await {
                Either::Left(Some(chunk)) if chunk.is_empty() => continue,
                Either::Left(Some(chunk)) => self.write_stream_chunk(&chunk, chunked).await?,
                Either::Left(None) => break,
                Either::Right(PeerEvent::Gone) => return Ok(false),
                Either::Right(PeerEvent::Stop) => {
                    self.end_stream(chunked).await?;
                    return Ok(false);
                }
            }
        }
        self.end_stream(chunked).await?;
        Ok(!close)
    }

    /// Writes one chunk of a streamed body (framed if `chunked`) and flushes it: with one
    /// vectored write of the pieces in place when the transport supports it, else copied
    /// into the output buffer.
    async fn write_stream_chunk(&mut self, chunk: &Chunk, chunked: bool) -> io::Result<()> {
        if !self.io.is_write_vectored() {
            if chunked {
                write_chunk_head(&mut self.out, chunk.len());
            }
            for piece in chunk.pieces() {
                self.out.extend_from_slice(piece);
            }
            if chunked {
                self.out.extend_from_slice(b"\r\n");
            }
            return self.flush().await;
        }
        let mut head = Vec::with_capacity(20);
        if chunked {
            write_chunk_head(&mut head, chunk.len());
        }
        let out = std::mem::take(&mut self.out);
        let mut slices = Vec::with_capacity(chunk.pieces().len() + 3);
        slices.push(IoSlice::new(&out));
        slices.push(IoSlice::new(&head));
        slices.extend(chunk.pieces().iter().map(|p| IoSlice::new(p)));
        if chunked {
            slices.push(IoSlice::new(b"\r\n"));
        }
        slices.retain(|s| !s.is_empty());
        let res = self.write_vectored_timed(&mut slices).await;
        drop(slices);
        self.out = out;
        self.out.clear();
        self.unflushed = 0;
        res
    }

    /// Writes all of `slices` (at most `IOV_PER_WRITE_MAX` per call) by the write deadline.
    async fn write_vectored_timed(&mut self, slices: &mut [IoSlice<'_>]) -> io::Result<()> {
        let deadline = Instant::now() + self.core.limits.write_timeout;
        let io = &mut self.io;
        rt::timeout_at(deadline, async move {
            let mut rest = slices;
            while !rest.is_empty() {
                let end = rest.len().min(IOV_PER_WRITE_MAX);
                let n = io.write_vectored(&rest[..end]).await?;
                if n == 0 {
                    return Err(io::Error::from(io::ErrorKind::WriteZero));
                }
                IoSlice::advance_slices(&mut rest, n);
            }
            io.flush().await
        })
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "write timed out"))?
    }

    async fn end_stream(&mut self, chunked: bool) -> io::Result<()> {
        if chunked {
            self.out.extend_from_slice(LAST_CHUNK);
        }
        self.flush().await
    }

    /// Puts an error response in the output; the connection then closes, lingering (the
    /// request may not have been read whole).
    fn refuse(&mut self, r: Refusal) {
        self.linger = true;
        match r {
            Refusal::Status {
                code,
                reason,
                message,
                retry_after_seconds,
            } => {
                let body = status_body(code, reason, &message, retry_after_seconds);
                let mut headers =
                    vec![("Content-Type".to_string(), "application/json".to_string())];
                if let Some(secs) = retry_after_seconds {
                    headers.push(("Retry-After".to_string(), secs.to_string()));
                }
                write_head(
                    &mut self.out,
                    code,
                    &headers,
                    BodyFraming::Length(body.len()),
                    true,
                    false,
                );
                self.out.extend_from_slice(&body);
            }
            Refusal::GoBadRequest(detail) => {
                // Byte for byte what Go's server writes (no length: the close ends the body).
                let text = format!("400 Bad Request: {detail}");
                self.out.extend_from_slice(
                    format!(
                        "HTTP/1.1 {text}\r\nContent-Type: text/plain; charset=utf-8\r\n\
                         Connection: close\r\n\r\n{text}"
                    )
                    .as_bytes(),
                );
            }
        }
    }

    /// Closes gracefully: flushes, shuts the write side down (TLS: close_notify) and, if
    /// request bytes were left unread, discards what the client still sends for a moment,
    /// so that it reads the response instead of a connection reset.
    async fn close(&mut self) {
        if self.flush().await.is_err() {
            return;
        }
        let deadline = Instant::now() + self.core.limits.write_timeout;
        let _ = rt::timeout_at(deadline, self.io.shutdown()).await;
        if !self.linger {
            return;
        }
        let deadline = Instant::now() + LINGER_TIMEOUT;
        let mut drained = 0;
        while drained < LINGER_BYTES_MAX {
            self.buf.clear();
            match read_more(&mut self.io, &mut self.buf, deadline).await {
                Ok(n) if n > 0 => drained += n,
                _ => return,
            }
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.unflushed = 0;
        if self.out.is_empty() {
            return Ok(());
        }
        let out = std::mem::take(&mut self.out);
        let res = self.write_timed(&out).await;
        self.out = out;
        self.out.clear();
        res
    }

    async fn write_timed(&mut self, bytes: &[u8]) -> io::Result<()> {
        let deadline = Instant::now() + self.core.limits.write_timeout;
        let io = &mut self.io;
        rt::timeout_at(deadline, async move {
            io.write_all(bytes).await?;
            io.flush().await
        })
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "write timed out"))?
    }
}

/// What the response writer needs to know about the request.
#[derive(Clone, Copy)]
struct RequestInfo {
    head_method: bool,
    http10: bool,
    keep_alive: bool,
}

impl RequestInfo {
    fn of(head: &Head) -> RequestInfo {
        RequestInfo {
            head_method: head.method == Method::Head,
            http10: head.version_minor == 0,
            keep_alive: head.keep_alive,
        }
    }
}

fn too_large(limits: &Limits) -> Refusal {
    let message = format!(
        "Request entity too large: limit is {}",
        limits.body_bytes_max
    );
    Refusal::new(413, "RequestEntityTooLarge", message)
}

enum ReadError {
    TimedOut,
    Io,
}

/// Reads what is available into `buf` by `deadline`, first making room if little is left:
/// the buffer starts at `READ_BUFFER_FIRST_BYTES` and then grows by its size, at most
/// `READ_CHUNK_BYTES` at a time. (Reserving a whole chunk before every read doubled the
/// buffer of a client sending a byte at a time: with mimalloc, ~40 KiB resident per such
/// connection, against 12 KiB now.)
async fn read_more<S: AsyncRead + Unpin>(
    io: &mut S,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Result<usize, ReadError> {
    if buf.capacity() - buf.len() < READ_SPARE_MIN_BYTES {
        buf.reserve(
            buf.capacity()
                .clamp(READ_BUFFER_FIRST_BYTES, READ_CHUNK_BYTES),
        );
    }
    read_into(io, buf, deadline).await
}

/// Reads what is available into the spare capacity of `buf` (which must have some) by
/// `deadline`.
async fn read_into<S: AsyncRead + Unpin>(
    io: &mut S,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Result<usize, ReadError> {
    debug_assert!(buf.capacity() > buf.len(), "no room to read into");
    match rt::timeout_at(deadline, io.read_buf(buf)).await {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(_)) => Err(ReadError::Io),
        Err(rt::TimedOut) => Err(ReadError::TimedOut),
    }
}

/// While a stream waits for its next chunk: reads (and keeps, for the next request) what
/// the peer sends, up to `cap` buffered bytes, to notice it hanging up; or reports stop.
/// `stopped` completes on server stop; it is not polled again once it has.
async fn watch_peer<S: AsyncRead + Unpin>(
    io: &mut S,
    buf: &mut Vec<u8>,
    cap: usize,
    mut stopped: Pin<&mut impl std::future::Future<Output = ()>>,
) -> PeerEvent {
    loop {
        if buf.len() >= cap {
            stopped.as_mut().await;
            return PeerEvent::Stop;
        }
        if buf.capacity() - buf.len() < READ_SPARE_MIN_BYTES {
            buf.reserve(READ_CHUNK_BYTES.min(cap - buf.len()));
        }
        match rt::race(io.read_buf(buf), stopped.as_mut()).await {
            Either::Left(Ok(0)) | Either::Left(Err(_)) => return PeerEvent::Gone,
            Either::Left(Ok(_)) => {}
            Either::Right(()) => return PeerEvent::Stop,
        }
    }
}

/// Counts a connection as not yet admitted until [`UnadmittedGuard::admitted`] or drop.
pub(crate) struct UnadmittedGuard(Option<Rc<Cell<usize>>>);

impl UnadmittedGuard {
    pub(crate) fn new(count: Rc<Cell<usize>>) -> UnadmittedGuard {
        count.set(count.get() + 1);
        UnadmittedGuard(Some(count))
    }

    /// The connection had a request admitted: it no longer counts.
    pub fn admitted(&mut self) {
        if let Some(count) = self.0.take() {
            count.set(count.get() - 1);
        }
    }
}

impl Drop for UnadmittedGuard {
    fn drop(&mut self) {
        self.admitted();
    }
}
