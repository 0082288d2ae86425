//! Every bound the HTTP layer enforces, in one place.

use std::time::Duration;

/// Hard upper bound on [`Limits::header_count_max`]: the parser keeps its header slots on the
/// stack, so the configurable count can never exceed this.
pub const HEADER_COUNT_HARD_MAX: usize = 256;

/// Most bytes a connection's read buffer grows by at once (and so asks of the socket per read
/// call once it has grown).
pub(crate) const READ_CHUNK_BYTES: usize = 16 * 1024;

/// A connection's read buffer starts this large: a request head usually fits, and it is what
/// a client that sends its head slowly makes the connection hold.
pub(crate) const READ_BUFFER_FIRST_BYTES: usize = 4 * 1024;

/// The read buffer grows when less than this is free for the next read.
pub(crate) const READ_SPARE_MIN_BYTES: usize = 1024;

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

/// Open files kept out of the connection caps: listeners (one per listener per core), each
/// runtime's epoll and event descriptors, the store's segment and log files, the token,
/// certificate and kubeconfig files read or written at start, and connections accepted only
/// to be closed at a cap. The caps are fitted under the process's open-file limit minus this,
/// so `accept` does not fail for want of descriptors in normal operation.
pub const OPEN_FILES_RESERVED: usize = 1024;

/// A request body buffer is first given this much room (or the whole body if smaller), then
/// doubled each time it fills, up to the body's size: memory follows the bytes that arrived,
/// never the length announced.
pub(crate) const BODY_BUFFER_FIRST_BYTES: usize = READ_CHUNK_BYTES;

/// A connection's read buffer above this capacity is released while the connection waits
/// for its next request (a large head once arrived), and so is a write buffer above it.
pub(crate) const IDLE_BUFFER_BYTES_KEPT: usize = 2 * READ_CHUNK_BYTES;

/// Limits applied per connection and per core. Hitting a limit gives a clear error or
/// back-pressure, never unbounded growth.
///
/// **Before a request is admitted** ([`crate::Handler::admit`], where the server
/// authenticates) a connection holds no body byte: its head is parsed and judged first. What
/// an unauthenticated client can hold is bounded by name:
/// - count: [`Limits::unadmitted_connections_per_core_max`] connections per core that have not
///   had a request admitted yet (TLS handshakes, heads arriving, refusals being written);
/// - bytes: one head, at most [`Limits::header_bytes_max`], in a read buffer that starts at
///   [`READ_BUFFER_FIRST_BYTES`] and grows with it; never a body (a refused request's body is not read, and the
///   connection is closed unless the whole body had already arrived with the head);
/// - time: [`Limits::header_read_timeout`] for the handshake and the head, then at most
///   [`Limits::write_timeout`] to write the refusal and [`LINGER_TIMEOUT`] to close.
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
    /// Default 10,000. [`crate::serve`] lowers it to what the process's open-file limit
    /// allows (less [`OPEN_FILES_RESERVED`], shared by the cores), saying so on stderr.
    pub connections_per_core_max: usize,
    /// Connections per core that have not yet had a request admitted (see above). A
    /// connection accepted beyond it is closed at once, so a flood of unauthenticated
    /// connections can take at most this share of [`Limits::connections_per_core_max`]:
    /// connections whose clients have authenticated keep being served. Default 5,000 (half
    /// of the connections): 10,000 connections trickling their heads over TLS held 17.6 KiB
    /// resident each in the server (`loadgen slow-bodies --trickle head -n 10000`, 2 cores),
    /// so the cap bounds them at ~90 MiB per core.
    pub unadmitted_connections_per_core_max: usize,
    /// Bytes of request bodies held per core at once (the capacity of the body buffers of the
    /// requests being read or handled). A body buffer grows as its bytes arrive, so a client
    /// that announces a large body and sends it slowly holds only what it sent. A request
    /// whose body would exceed it gets `429` with `Retry-After: 1` (as the in-flight limit)
    /// and its connection is closed; refusing instead of waiting keeps a stalled client from
    /// holding others up. At least [`Limits::body_bytes_max`] (one body of the largest size
    /// always fits). Default 48 MiB: sixteen 3 MiB bodies.
    pub body_bytes_in_flight_per_core_max: usize,
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
            unadmitted_connections_per_core_max: 5_000,
            body_bytes_in_flight_per_core_max: 48 * 1024 * 1024,
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

    /// Checks the relations between limits that [`crate::serve`] relies on.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.body_bytes_in_flight_per_core_max < self.body_bytes_max {
            return Err(format!(
                "body_bytes_in_flight_per_core_max ({}) is below body_bytes_max ({}): a body \
                 of the largest size could never be read",
                self.body_bytes_in_flight_per_core_max, self.body_bytes_max
            ));
        }
        Ok(())
    }
}

const _: () = assert!(BODY_BUFFER_FIRST_BYTES > 0);
const _: () = assert!(READ_SPARE_MIN_BYTES < READ_BUFFER_FIRST_BYTES);
const _: () = assert!(READ_BUFFER_FIRST_BYTES <= READ_CHUNK_BYTES);
const _: () = assert!(IDLE_BUFFER_BYTES_KEPT >= READ_CHUNK_BYTES);
