//! Every bound the HTTP layer enforces, in one place.

use std::time::Duration;

/// Hard upper bound on [`Limits::header_count_max`]: the parser keeps its header slots on the
/// stack, so the configurable count can never exceed this.
pub const HEADER_COUNT_HARD_MAX: usize = 256;

/// Bytes asked of the socket per read call.
pub(crate) const READ_CHUNK_BYTES: usize = 16 * 1024;

/// Pending response bytes that force a flush even when more pipelined requests are buffered.
pub(crate) const WRITE_BUFFER_BYTES_MAX: usize = 64 * 1024;

/// Buffers passed to one vectored write call (Linux's `IOV_MAX` is 1024).
pub(crate) const IOV_PER_WRITE_MAX: usize = 512;

/// Bytes read and discarded after an error response that closes the connection, so the
/// client sees the response instead of a reset caused by its unread request bytes.
pub(crate) const LINGER_BYTES_MAX: usize = 256 * 1024;

/// Time spent discarding those bytes at most.
pub(crate) const LINGER_TIMEOUT: Duration = Duration::from_secs(1);

/// Pause after a failed `accept` (e.g. out of file descriptors) before trying again.
pub(crate) const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(10);

/// Pending connections the kernel queues per listener socket (`listen(2)` backlog).
pub(crate) const LISTEN_BACKLOG: i32 = 1024;

/// Limits applied per connection and per core. Hitting a limit gives a clear error or
/// back-pressure, never unbounded growth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest request head (request line plus headers, including the blank line).
    /// Beyond it: `431 Request Header Fields Too Large`, connection closed. Default 64 KiB.
    pub header_bytes_max: usize,
    /// Most header fields in one request head (at most [`HEADER_COUNT_HARD_MAX`]).
    /// Beyond it: `431`, connection closed. Default 100.
    pub header_count_max: usize,
    /// Largest request body, by `Content-Length` or decoded chunked size. Beyond it: `413`
    /// without reading the rest; the connection is closed. Default 3 MiB (kube-apiserver's
    /// request body limit).
    pub body_bytes_max: usize,
    /// Open connections per core. A connection accepted beyond it is closed at once.
    /// Default 10,000.
    pub connections_per_core_max: usize,
    /// Time allowed for a whole request head to arrive once its first byte has (and for a new
    /// connection's TLS handshake and first request head). Beyond it: `408`, connection
    /// closed. Guards against slow-loris clients. Default 10 s.
    pub header_read_timeout: Duration,
    /// Time allowed for a whole request body to arrive. Beyond it: `408`, connection closed.
    /// Default 60 s.
    pub body_read_timeout: Duration,
    /// Time a keep-alive connection may sit between requests before it is closed silently.
    /// Default 90 s.
    pub idle_timeout: Duration,
    /// Time allowed for one write of response bytes to complete (a client that stops
    /// reading). Beyond it the connection is closed. Default 60 s.
    pub write_timeout: Duration,
    /// Requests per core whose handler is running at once. A request beyond it gets `429`
    /// with `Retry-After: 1`. A response that streams its body (a watch) stops counting once
    /// its handler has returned. Default 1,000.
    pub in_flight_per_core_max: usize,
    /// Responses to pipelined requests held in the write buffer before it is flushed:
    /// requests already buffered are answered back to back and their responses written in
    /// one go, in request order. Default 16.
    pub pipelined_requests_max: usize,
    /// Time [`crate::ServerHandle::shutdown`] waits for in-flight requests before dropping
    /// them. Default 30 s.
    pub shutdown_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_bytes_max: 64 * 1024,
            header_count_max: 100,
            body_bytes_max: 3 * 1024 * 1024,
            connections_per_core_max: 10_000,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(90),
            write_timeout: Duration::from_secs(60),
            in_flight_per_core_max: 1_000,
            pipelined_requests_max: 16,
            shutdown_timeout: Duration::from_secs(30),
        }
    }
}

impl Limits {
    /// The header count actually enforced: the configured one, capped by the hard maximum.
    pub(crate) fn header_count(&self) -> usize {
        self.header_count_max.clamp(1, HEADER_COUNT_HARD_MAX)
    }
}
