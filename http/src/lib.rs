//! keel's HTTP/1.1 front end: a thread-per-core server library.
//!
//! Purpose: accept HTTP/1.1 (plain or TLS) connections, parse requests, enforce limits, let a
//! [`Handler`] admit (authenticate) each request on its head, read the bodies of admitted
//! requests and hand complete requests to the handler; write its [`Response`]s back (full
//! bodies with `Content-Length`, streams chunked and flushed per chunk for watches).
//!
//! Design: one single-threaded runtime per core ([`rt`]), each pinned to its CPU and
//! accepting on its own `SO_REUSEPORT` socket, so a connection lives on one core for its
//! whole life and handlers' futures need not be `Send`. Requests are parsed with `httparse`
//! ([`parse`](crate::parse) and the chunked decoder are pure and unit-tested); TLS is
//! rustls with a self-managed CA ([`tls`]).
//!
//! Invariants: responses on a connection are written in request order; every buffer is
//! bounded by a [`Limits`] field or a named constant; no body byte is read (and no
//! `100 Continue` sent) before [`Handler::admit`] has accepted the head; a body's buffer
//! grows with the bytes that arrive, charged to a per-core budget, never to the length
//! announced; bad input gets a `metav1.Status` error (400, 408, 413, 429, 431, 501), never a
//! panic (two `Host` fields get Go's plain-text 400, as kube-apiserver's server answers).
//!
//! Dependencies: the runtime (tokio, only through [`rt`]), httparse, socket2, rustls,
//! rcgen, x509-parser, serde_json, libc (the open-file limit). keel-chunked; no other keel
//! crate.

mod budget;
mod conn;
mod fdlimit;
mod limits;
pub mod load;
mod parse;
mod request;
mod response;
pub mod rt;
mod server;
mod subject;
pub mod tls;
mod write;

pub use fdlimit::raise_open_files_limit;
pub use keel_chunked::{ChunkedDecoder, ChunkedError};
pub use limits::{Limits, HEADER_COUNT_HARD_MAX, OPEN_FILES_RESERVED};
pub use request::{parse_query, Admitted, ClientIdentity, Headers, Method, Request, RequestHead};
pub use response::{status_body, status_response, Body, Chunk, Piece, Response};
pub use server::{serve, Listener, ServeConfig, ServerHandle};

use std::future::Future;
use std::pin::Pin;

/// Answers requests. Shared by all cores; each call's future runs on the core that
/// accepted the connection, so it need not be `Send`.
pub trait Handler: Send + Sync + 'static {
    /// Judges a request on its head, before any byte of its body is read and before
    /// `100 Continue` is sent: where the server authenticates, so that a client without
    /// credentials makes it hold no body. `Ok` lets the request in, with what was learnt (the
    /// user) for [`Handler::handle`] in [`Request::admitted`]; `Err` is answered as it is,
    /// the body unread (the connection is then closed, unless the whole body had already
    /// arrived with the head). Runs on the core's thread, between reads: keep it short.
    /// The default admits every request.
    fn admit(&self, head: &RequestHead<'_>) -> Result<Admitted, Response> {
        let _ = head;
        Ok(Admitted::default())
    }

    /// Produces the response to `req`.
    fn handle(&self, req: Request) -> Pin<Box<dyn Future<Output = Response>>>;
}

/// A [`Handler`] made from a function (see [`handler_fn`]).
pub struct HandlerFn<F>(F);

impl<F, Fut> Handler for HandlerFn<F>
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + 'static,
{
    fn handle(&self, req: Request) -> Pin<Box<dyn Future<Output = Response>>> {
        Box::pin((self.0)(req))
    }
}

/// Wraps `f` as a [`Handler`].
pub fn handler_fn<F, Fut>(f: F) -> HandlerFn<F>
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + 'static,
{
    HandlerFn(f)
}

/// Parses one request head from `bytes` with `limits`, as the server does; for fuzzing
/// and tests. `Ok(None)`: incomplete; `Ok(Some(n))`: a head of `n` bytes; `Err(code)`: the
/// status the server would answer with.
pub fn parse_request_head(bytes: &[u8], limits: &Limits) -> Result<Option<usize>, u16> {
    match parse::parse_head(bytes, limits) {
        Ok(Some((_, n))) => Ok(Some(n)),
        Ok(None) => Ok(None),
        Err(e) => Err(e.status()),
    }
}

/// Decodes a complete chunked body from `bytes` with body limit `body_bytes_max`; for
/// fuzzing and tests. Returns the decoded data and bytes consumed, `Ok(None)` if
/// incomplete, or the status the server would answer with (400 or 413).
pub fn decode_chunked(
    bytes: &[u8],
    body_bytes_max: usize,
) -> Result<Option<(Vec<u8>, usize)>, u16> {
    let mut decoder = ChunkedDecoder::new(body_bytes_max, Limits::default().header_bytes_max);
    let mut out = Vec::new();
    match decoder.decode(bytes, &mut out) {
        Ok(n) if decoder.is_done() => Ok(Some((out, n))),
        Ok(_) => Ok(None),
        Err(ChunkedError::TooLarge) => Err(413),
        Err(ChunkedError::Malformed(_)) => Err(400),
    }
}
