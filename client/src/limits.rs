//! Every bound the client keeps, in one place. A bound that is hit is an error naming it (or,
//! for the reflector's change queue, back-pressure), never unbounded growth.

use std::time::Duration;

// ---- HTTP transport ----

/// Largest response body read into memory (a full list of 100,000 ~2 KiB pods is ~250 MiB).
pub const RESPONSE_BYTES_MAX: usize = 2 << 30;
/// Longest a single request may take (for a watch: its response head) before it fails.
pub const REQUEST_TIMEOUT_S: u64 = 120;
/// Largest HTTP response head (status line and headers) the client accepts.
pub const RESPONSE_HEAD_BYTES_MAX: usize = 64 << 10;
/// Most header fields in one HTTP response head.
pub const RESPONSE_HEADERS_MAX: usize = 64;
/// Bytes each connection reads from its socket at once (its read buffer; at least
/// `RESPONSE_HEAD_BYTES_MAX`, so that any accepted head fits).
pub const READ_BUFFER_BYTES: usize = 64 << 10;
/// Received TLS bytes each https connection buffers (one socket read fills what is free; at
/// least two of the largest TLS records, checked in `transport/tls.rs`).
pub const TLS_READ_BUFFER_BYTES: usize = 64 << 10;
/// Longest chunk-size line (hex digits and chunk extensions) of a chunked body.
pub const CHUNK_LINE_BYTES_MAX: usize = 1 << 10;
/// Most trailer bytes after the last chunk of a chunked body.
pub const TRAILER_BYTES_MAX: usize = 16 << 10;
/// Largest error body read from a streaming request that failed (for its `Status`).
pub const ERROR_BODY_BYTES_MAX: usize = 64 << 10;

const _: () = assert!(READ_BUFFER_BYTES >= RESPONSE_HEAD_BYTES_MAX);

// ---- Watches ----

/// Largest single watch event line: an object is at most ~1.5 MiB in etcd and 3 MiB in keel
/// (its request-body limit); 16 MiB leaves room for JSON escaping and a Table rendering.
pub const WATCH_LINE_BYTES_MAX: usize = 16 << 20;
/// Slack beyond a watch's `timeoutSeconds` before a silent watch connection counts as dead:
/// the server ends the watch at its timeout, so a connection that says nothing for longer
/// lost its server (a peer that vanished without a FIN or RST).
pub const WATCH_IDLE_GRACE: Duration = Duration::from_secs(30);

// ---- Reflector ----

/// Items asked for per page when the reflector lists (client-go's reflector pages by 500).
pub const REFLECTOR_PAGE_SIZE: u64 = 500;
/// `timeoutSeconds` of each reflector watch: the server ends it then and the reflector
/// resumes from its last resourceVersion (client-go picks 5-10 minutes).
pub const REFLECTOR_WATCH_TIMEOUT_S: u32 = 300;
/// Changes queued for the reflector's consumer. When it is full the reflector stops reading
/// its watch until the consumer catches up (back-pressure, not memory): 1,024 changes cover a
/// burst of writes while a controller handles one item.
pub const REFLECTOR_CHANGES_QUEUED_MAX: usize = 1024;
/// First delay before retrying after a failed list or watch.
pub const REFLECTOR_BACKOFF_INITIAL: Duration = Duration::from_millis(100);
/// Longest delay between retries (client-go's reflector backs off to 30 s).
pub const REFLECTOR_BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A watch that delivered an event or lasted this long was healthy: the backoff starts
/// afresh after it, and when the server ends it the reflector watches again at once. One that
/// ended sooner with nothing is retried after a backoff delay, so a server that closes every
/// watch at once is not asked again and again without pause.
pub const REFLECTOR_WATCH_HEALTHY_AFTER: Duration = Duration::from_secs(1);

const _: () = assert!(REFLECTOR_BACKOFF_INITIAL.as_nanos() <= REFLECTOR_BACKOFF_MAX.as_nanos());

// ---- Lists ----

/// Most items `list_all` collects (and so the reflector caches): keel's benchmark lists
/// 100,000 pods; a million ~2 KiB objects is ~2 GiB of parsed JSON.
pub const LIST_ITEMS_MAX: usize = 1_000_000;
