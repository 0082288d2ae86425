//! Responses as handlers build them, and the `metav1.Status` errors this layer produces.

use std::pin::Pin;
use std::sync::Arc;

/// A piece of a [`Chunk`]: bytes of its own, or bytes it shares or borrows (one encoded watch
/// event sent to many watchers, a stored value in a memory-mapped store, a constant), which are
/// written without being copied.
#[derive(Clone)]
pub enum Piece {
    /// Bytes owned by this chunk.
    Owned(Vec<u8>),
    /// Bytes shared with other chunks.
    Shared(Arc<[u8]>),
    /// Constant bytes (separators, brackets).
    Static(&'static [u8]),
    /// Bytes that something else owns and keeps alive for as long as the piece lives (e.g. a
    /// value read out of a store's memory-mapped segment).
    Held(Arc<dyn AsRef<[u8]> + Send + Sync>),
}

impl std::ops::Deref for Piece {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Piece::Owned(v) => v,
            Piece::Shared(a) => a,
            Piece::Static(s) => s,
            Piece::Held(h) => (**h).as_ref(),
        }
    }
}

impl std::fmt::Debug for Piece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            Piece::Owned(_) => "Owned",
            Piece::Shared(_) => "Shared",
            Piece::Static(_) => "Static",
            Piece::Held(_) => "Held",
        };
        write!(f, "Piece::{kind}({} bytes)", self.len())
    }
}

/// One item of a [`Body::Chunks`] stream: pieces written back to back as one chunk of the
/// chunked body, with one write call where the transport allows (vectored I/O).
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    pieces: Vec<Piece>,
    len: usize,
}

impl Chunk {
    /// An empty chunk.
    pub fn new() -> Chunk {
        Chunk::default()
    }

    /// Appends a piece (empty pieces are dropped).
    pub fn push(&mut self, piece: Piece) {
        if !piece.is_empty() {
            self.len += piece.len();
            self.pieces.push(piece);
        }
    }

    /// Total bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the chunk holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pieces, in order.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// All bytes, copied into one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        for p in &self.pieces {
            out.extend_from_slice(p);
        }
        out
    }
}

impl From<Vec<u8>> for Chunk {
    fn from(v: Vec<u8>) -> Chunk {
        let mut c = Chunk::new();
        c.push(Piece::Owned(v));
        c
    }
}

/// A response body.
pub enum Body {
    /// The whole body, sent with `Content-Length`.
    Full(Vec<u8>),
    /// A body produced piece by piece, sent with `Transfer-Encoding: chunked`; every item is
    /// written and flushed as one chunk as soon as it is produced (watch streams). Empty items
    /// are skipped. Not `Send`: it runs on the core whose handler created it.
    Stream(Pin<Box<dyn futures_core::Stream<Item = Vec<u8>>>>),
    /// Like [`Body::Stream`], with items made of (possibly shared) pieces: each item is one
    /// chunk, written without copying shared pieces when the transport takes vectored writes.
    Chunks(Pin<Box<dyn futures_core::Stream<Item = Chunk>>>),
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Full(b) => write!(f, "Body::Full({} bytes)", b.len()),
            Body::Stream(_) => f.write_str("Body::Stream"),
            Body::Chunks(_) => f.write_str("Body::Chunks"),
        }
    }
}

/// A response: status, header fields and body. `Content-Length`, `Transfer-Encoding`,
/// `Connection` and `Date` are set by the server; handler-supplied values of those are
/// dropped.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Header fields, written in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
}

impl Response {
    /// Whether the handler set `Connection: close`: the connection closes after this
    /// response (the header itself is the server's to write).
    pub fn asks_close(&self) -> bool {
        self.headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("connection")
                && v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"))
        })
    }

    /// A response with a full body and one `Content-Type` header.
    pub fn full(status: u16, content_type: &str, body: Vec<u8>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".to_string(), content_type.to_string())],
            body: Body::Full(body),
        }
    }

    /// A response that streams `stream` as chunks.
    pub fn stream(
        status: u16,
        content_type: &str,
        stream: Pin<Box<dyn futures_core::Stream<Item = Vec<u8>>>>,
    ) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".to_string(), content_type.to_string())],
            body: Body::Stream(stream),
        }
    }
}

/// A `metav1.Status` failure response (`kind: Status`, `apiVersion: v1`,
/// `status: Failure`), the shape every Kubernetes client decodes for errors. `reason` may be
/// empty (omitted, as upstream omits `StatusReasonUnknown`).
pub fn status_response(code: u16, reason: &str, message: &str) -> Response {
    Response::full(
        code,
        "application/json",
        status_body(code, reason, message, None),
    )
}

/// The JSON bytes of a `metav1.Status` failure; `retry_after_seconds` fills
/// `details.retryAfterSeconds`.
pub fn status_body(
    code: u16,
    reason: &str,
    message: &str,
    retry_after_seconds: Option<u32>,
) -> Vec<u8> {
    let mut status = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "code": code,
    });
    if !reason.is_empty() {
        status["reason"] = reason.into();
    }
    if let Some(secs) = retry_after_seconds {
        status["details"] = serde_json::json!({ "retryAfterSeconds": secs });
    }
    let mut body = serde_json::to_vec(&status).unwrap_or_default();
    body.push(b'\n');
    body
}

/// The `429` answered when a core's in-flight limit is reached (as kube-apiserver's
/// max-in-flight filter: `Retry-After: 1`).
pub(crate) fn too_many_requests() -> Response {
    let body = status_body(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        Some(1),
    );
    let mut resp = Response::full(429, "application/json", body);
    resp.headers
        .push(("Retry-After".to_string(), "1".to_string()));
    resp
}

/// The standard reason phrase for `code` (empty for unknown codes).
pub(crate) fn reason_phrase(code: u16) -> &'static str {
    match code {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_keep_pieces_in_order_and_skip_empty_ones() {
        let mut c = Chunk::from(b"ab".to_vec());
        c.push(Piece::Owned(Vec::new()));
        c.push(Piece::Shared(Arc::from(&b"cde"[..])));
        c.push(Piece::Shared(Arc::from(&b""[..])));
        assert_eq!(c.pieces().len(), 2);
        assert_eq!(c.len(), 5);
        assert!(!c.is_empty());
        assert_eq!(c.to_vec(), b"abcde");
        assert!(Chunk::new().is_empty());
    }

    #[test]
    fn status_body_has_the_metav1_status_shape() {
        let v: serde_json::Value =
            serde_json::from_slice(&status_body(413, "RequestEntityTooLarge", "too big", None))
                .unwrap();
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["status"], "Failure");
        assert_eq!(v["reason"], "RequestEntityTooLarge");
        assert_eq!(v["message"], "too big");
        assert_eq!(v["code"], 413);
        let v: serde_json::Value =
            serde_json::from_slice(&status_body(431, "", "m", Some(1))).unwrap();
        assert!(v.get("reason").is_none());
        assert_eq!(v["details"]["retryAfterSeconds"], 1);
    }
}
