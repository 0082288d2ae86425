//! The HTTP/1.1 transport: a lean client for one API server, built to cost the load generator
//! as little CPU as possible: plain TCP (TCP_NODELAY) or rustls over it, bearer token or x509
//! client certificate, each request rendered into a reused buffer and written at once (the
//! fixed headers are rendered once per client), responses parsed in place with `httparse`,
//! bodies framed by Content-Length or an incremental chunked decoder. Connections are kept
//! alive in a small locked free list: a request takes one (or connects), uses it alone and
//! gives it back, so there are never more connections than requests in flight. Every response
//! body is bounded and every request has a timeout; an idempotent request that finds its
//! kept-alive connection closed by the server is sent once more on a new one.
//!
//! This layer knows HTTP, not Kubernetes: statuses and bodies are handed up as they are
//! (`api` turns them into objects and `Status` errors).

mod body;
mod conn;
mod head;
mod request;
mod target;
#[cfg(test)]
mod tests;
mod tls;

use body::BodyDecoder;
use head::Head;
pub use request::Method;

use crate::kubeconfig::Endpoint;
use crate::limits;
use bytes::Bytes;
use conn::{Conn, Failure};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use target::{Tls, Url};

/// Content types of request bodies.
pub const JSON: &str = "application/json";
pub const MERGE_PATCH: &str = "application/merge-patch+json";
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
pub const JSON_PATCH: &str = "application/json-patch+json";

/// User-Agent of a client made with `KubeClient::new`.
pub const USER_AGENT_DEFAULT: &str = "keel-client";

/// An idle connection older than this is checked for a close by the server before reuse.
const IDLE_CHECK_AFTER: Duration = Duration::from_millis(500);

/// A client for one API server; cheap to clone (the idle connections are shared).
#[derive(Clone)]
pub struct KubeClient {
    inner: Arc<Inner>,
}

struct Inner {
    url: Url,
    tls: Option<Tls>,
    /// Host, Authorization and User-Agent header lines.
    fixed: Vec<u8>,
    idle: Mutex<Vec<Conn>>,
    idle_max: usize,
}

/// A whole response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub body: Bytes,
}

impl Response {
    /// The body parsed as JSON.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|e| format!("response is not JSON: {e}"))
    }

    /// Ok for 2xx, else an error naming the status and the start of the body.
    pub fn ok(self) -> Result<Response, String> {
        if (200..300).contains(&self.status) {
            Ok(self)
        } else {
            Err(status_error(self.status, &self.body))
        }
    }
}

/// `HTTP 409: <first 200 bytes of the body>`.
pub fn status_error(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
    let reason = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("reason").and_then(|r| r.as_str()).map(str::to_string));
    match reason {
        Some(r) => format!("HTTP {status} {r}"),
        None => format!("HTTP {status}: {text}"),
    }
}

/// A forwarded request (a proxy's): any method the client sends, the caller's header fields
/// (besides `Host`, `Authorization` and `User-Agent`, which are the client's own) and body.
pub struct Forward<'a> {
    pub method: Method,
    /// Path and query, starting with `/`.
    pub path: &'a str,
    pub accept: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    /// Content type and bytes.
    pub body: Option<(&'a str, &'a [u8])>,
}

/// The answer to a forwarded request: status, header fields and the body as it arrives.
pub struct Forwarded {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: BodyStream,
}

/// A response body being received (a watch): payload bytes as they arrive.
pub struct BodyStream {
    conn: Conn,
    dec: BodyDecoder,
}

impl BodyStream {
    /// The next payload bytes, or `None` at the end of the body. Cancel-safe: bytes already
    /// received stay in the buffer.
    pub async fn next_chunk(&mut self) -> Result<Option<&[u8]>, String> {
        match self.conn.next_span(&mut self.dec).await? {
            Some(r) => Ok(Some(self.conn.bytes(r))),
            None => Ok(None),
        }
    }

    /// Waits for body bytes; false at the end of the body. Cancel-safe. Follow with `drain`.
    pub async fn fill(&mut self) -> Result<bool, String> {
        self.conn.fill(&self.dec).await
    }

    /// Hands `each` every payload piece already received, in order, without waiting for the
    /// socket: after one `fill`, all that one socket read brought (a watch: many events) in
    /// one go. Over TLS the pieces are records' plaintext where it was decrypted.
    pub async fn drain(
        &mut self,
        each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        self.conn.drain(&mut self.dec, each).await
    }
}

fn request_timeout() -> Duration {
    Duration::from_secs(limits::REQUEST_TIMEOUT_S)
}

async fn timed<T>(f: impl Future<Output = Result<T, String>>) -> Result<T, String> {
    let limit = request_timeout();
    tokio::time::timeout(limit, f)
        .await
        .map_err(|_| format!("no response within {limit:?}"))?
}

impl KubeClient {
    /// A client keeping up to `pool` idle keep-alive connections, sending
    /// `USER_AGENT_DEFAULT`.
    pub fn new(ep: &Endpoint, pool: usize) -> Result<KubeClient, String> {
        KubeClient::with_user_agent(ep, pool, USER_AGENT_DEFAULT)
    }

    /// As `new`, naming the program in every request's User-Agent (the API server derives a
    /// default field manager from it, as upstream does).
    pub fn with_user_agent(
        ep: &Endpoint,
        pool: usize,
        user_agent: &str,
    ) -> Result<KubeClient, String> {
        let url = Url::parse(&ep.server)?;
        let tls = if url.https {
            Some(target::tls(ep, &url)?)
        } else {
            None
        };
        let fixed = request::fixed_headers(&url.authority, ep.token.as_deref(), user_agent)?;
        Ok(KubeClient {
            inner: Arc::new(Inner {
                url,
                tls,
                fixed,
                idle: Mutex::new(Vec::new()),
                idle_max: pool.max(1),
            }),
        })
    }

    /// Sends one request and reads the whole response (up to `RESPONSE_BYTES_MAX`).
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<Response, String> {
        self.request_accept(method, path, body, JSON).await
    }

    /// As `request`, with an explicit Accept header.
    pub async fn request_accept(
        &self,
        method: Method,
        path: &str,
        body: Option<(&'static str, Bytes)>,
        accept: &'static str,
    ) -> Result<Response, String> {
        let req = request::Request {
            method,
            path,
            accept,
            body: body.as_ref().map(|(ct, b)| (*ct, &b[..])),
            headers: &[],
        };
        timed(async {
            let (mut conn, head) = self.open(&req).await?;
            let mut dec = BodyDecoder::new(head.framing);
            let body = conn.read_body(&mut dec, limits::RESPONSE_BYTES_MAX).await?;
            self.give_back_if(conn, &head, &dec);
            Ok(Response {
                status: head.status,
                body: Bytes::from(body),
            })
        })
        .await
    }

    /// GETs `path` and hands the body to `each` piece by piece as it arrives (nothing is
    /// buffered); returns the body's length. A status other than 200 is an error.
    pub async fn get_streamed(
        &self,
        path: &str,
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, String> {
        timed(async {
            let (mut conn, mut dec, head) = self
                .open_stream(path)
                .await?
                .map_err(|refused| status_error(refused.status, &refused.body))?;
            let mut len = 0u64;
            while let Some(r) = conn.next_span(&mut dec).await? {
                len += r.len() as u64;
                each(conn.bytes(r))?;
            }
            self.give_back_if(conn, &head, &dec);
            Ok(len)
        })
        .await
    }

    /// Opens a streaming GET (a watch); the caller reads the body as it arrives. The timeout
    /// covers the response head only.
    pub async fn stream(&self, path: &str) -> Result<BodyStream, String> {
        match self.stream_or_refusal(path).await? {
            Ok(body) => Ok(body),
            Err(refused) => Err(status_error(refused.status, &refused.body)),
        }
    }

    /// As `stream`, with a status other than 200 handed back whole (its body up to
    /// `ERROR_BODY_BYTES_MAX`) for the caller to read its `Status`.
    pub(crate) async fn stream_or_refusal(
        &self,
        path: &str,
    ) -> Result<Result<BodyStream, Response>, String> {
        Ok(timed(self.open_stream(path))
            .await?
            .map(|(conn, dec, _)| BodyStream { conn, dec }))
    }

    /// Sends a GET and reads its head; a status other than 200 comes back as the response,
    /// its body read.
    async fn open_stream(
        &self,
        path: &str,
    ) -> Result<Result<(Conn, BodyDecoder, Head), Response>, String> {
        let req = request::Request {
            method: Method::GET,
            path,
            accept: JSON,
            body: None,
            headers: &[],
        };
        let (mut conn, head) = self.open(&req).await?;
        let mut dec = BodyDecoder::new(head.framing);
        if head.status != 200 {
            let body = conn
                .read_body(&mut dec, limits::ERROR_BODY_BYTES_MAX)
                .await
                .unwrap_or_default();
            return Ok(Err(Response {
                status: head.status,
                body: Bytes::from(body),
            }));
        }
        Ok(Ok((conn, dec, head)))
    }

    /// Sends a forwarded request (a proxy's) on a new connection and reads the response head;
    /// the body is the caller's to read as it arrives. The timeout covers the response head.
    pub async fn forward(&self, f: Forward<'_>) -> Result<Forwarded, String> {
        let req = request::Request {
            method: f.method,
            path: f.path,
            accept: f.accept,
            body: f.body,
            headers: f.headers,
        };
        timed(async {
            let mut conn = self.connect().await?;
            let mut wbuf = std::mem::take(&mut conn.wbuf);
            request::render(&mut wbuf, &self.inner.url.prefix, &self.inner.fixed, &req)?;
            conn.wbuf = wbuf;
            conn.send().await.map_err(|f| f.msg)?;
            let mut headers = Vec::new();
            let head = conn
                .read_head_fields(&mut headers)
                .await
                .map_err(|f| f.msg)?;
            Ok(Forwarded {
                status: head.status,
                headers,
                body: BodyStream {
                    conn,
                    dec: BodyDecoder::new(head.framing),
                },
            })
        })
        .await
    }

    /// Sends `req` on a connection and reads the response head; sends it once more on a new
    /// connection if it is idempotent and its kept-alive connection was closed by the server.
    async fn open(&self, req: &request::Request<'_>) -> Result<(Conn, Head), String> {
        let conn = match self.take_idle() {
            Some(c) => c,
            None => self.connect().await?,
        };
        match self.exchange(conn, req).await {
            Err(f) if f.stale && req.method.idempotent() => {
                let conn = self.connect().await?;
                self.exchange(conn, req).await.map_err(|f| f.msg)
            }
            r => r.map_err(|f| f.msg),
        }
    }

    async fn exchange(
        &self,
        mut conn: Conn,
        req: &request::Request<'_>,
    ) -> Result<(Conn, Head), Failure> {
        let mut wbuf = std::mem::take(&mut conn.wbuf);
        request::render(&mut wbuf, &self.inner.url.prefix, &self.inner.fixed, req)?;
        conn.wbuf = wbuf;
        conn.send().await?;
        let head = conn.read_head().await?;
        Ok((conn, head))
    }

    async fn connect(&self) -> Result<Conn, String> {
        Conn::connect(&self.inner.url, self.inner.tls.as_ref()).await
    }

    /// An idle connection, if one is left that the server has not closed.
    fn take_idle(&self) -> Option<Conn> {
        loop {
            let conn = self.lock_idle().pop()?;
            if conn.idle_since.elapsed() < IDLE_CHECK_AFTER || conn.is_alive() {
                return Some(conn);
            }
        }
    }

    /// Keeps `conn` for the next request if it can carry one and the idle list has room.
    fn give_back_if(&self, mut conn: Conn, head: &Head, dec: &BodyDecoder) {
        if !conn.reusable(head, dec) {
            return;
        }
        conn.used = true;
        conn.idle_since = std::time::Instant::now();
        let mut idle = self.lock_idle();
        if idle.len() < self.inner.idle_max {
            idle.push(conn);
        }
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<Conn>> {
        self.inner.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Idle keep-alive connections held now.
    pub fn idle_connections(&self) -> usize {
        self.lock_idle().len()
    }
}
