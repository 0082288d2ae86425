//! Every bound the load generator keeps, in one place.

/// Largest response body read into memory (a full list of 100,000 ~2 KiB pods is ~250 MiB).
pub const RESPONSE_BYTES_MAX: usize = 2 << 30;
/// Largest single watch event line.
pub const WATCH_LINE_BYTES_MAX: usize = 16 << 20;
/// Resource versions a watcher remembers for gap/duplicate accounting.
pub const WATCH_EVENTS_PER_WATCHER_MAX: usize = 1 << 20;
/// Most concurrent connections (workers) of one workload.
pub const CONCURRENCY_MAX: usize = 10_000;
/// Most watchers of one `watch` run.
pub const WATCHERS_MAX: usize = 20_000;
/// Most simulated nodes of one `nodes` run.
pub const NODES_MAX: usize = 100_000;
/// Most objects one `create` run writes.
pub const OBJECTS_MAX: u64 = 10_000_000;
/// Largest ConfigMap payload `create` writes (the API server's limit is ~1 MiB).
pub const OBJECT_BYTES_MAX: usize = 1 << 20;
/// Most distinct error messages kept per workload.
pub const ERROR_SAMPLES_MAX: usize = 8;
/// Latency histogram range: 1 us to 10 minutes.
pub const LATENCY_US_MAX: u64 = 600_000_000;
/// Longest a single request may take before it counts as an error.
pub const REQUEST_TIMEOUT_S: u64 = 120;
/// Longest `watch` waits after the last write for every watcher to catch up.
pub const WATCH_DRAIN_TIMEOUT_S: u64 = 30;
/// Largest etcd response the client decodes (a range over 100,000 pods).
pub const ETCD_MESSAGE_BYTES_MAX: usize = 1 << 30;
/// Largest HTTP response head (status line and headers) the client accepts.
pub const RESPONSE_HEAD_BYTES_MAX: usize = 64 << 10;
/// Most header fields in one HTTP response head.
pub const RESPONSE_HEADERS_MAX: usize = 64;
/// Bytes each connection reads from its socket at once (its read buffer; at least
/// `RESPONSE_HEAD_BYTES_MAX`, so that any accepted head fits).
pub const READ_BUFFER_BYTES: usize = 64 << 10;
/// Received TLS bytes each https connection buffers (one socket read fills what is free; at
/// least two of the largest TLS records).
pub const TLS_READ_BUFFER_BYTES: usize = 64 << 10;
/// Longest chunk-size line (hex digits and chunk extensions) of a chunked body.
pub const CHUNK_LINE_BYTES_MAX: usize = 1 << 10;
/// Most trailer bytes after the last chunk of a chunked body.
pub const TRAILER_BYTES_MAX: usize = 16 << 10;
/// Largest error body read from a streaming request that failed (for its message).
pub const ERROR_BODY_BYTES_MAX: usize = 64 << 10;
/// Delivery latencies a watcher collects before adding them to a shared histogram.
pub const WATCH_LATENCY_BATCH: usize = 256;
/// Shared delivery-latency histograms of one `watch` run (watchers spread over them).
pub const WATCH_LATENCY_SHARDS: usize = 8;
