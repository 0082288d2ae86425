//! Every bound the load generator keeps, in one place (the HTTP client's are in
//! `keel_client::limits`).

/// Resource versions a watcher remembers for gap/duplicate accounting.
pub const WATCH_EVENTS_PER_WATCHER_MAX: usize = 1 << 20;
/// Most concurrent connections (workers) of one workload.
pub const CONCURRENCY_MAX: usize = 10_000;
/// Most watchers of one `watch` run.
pub const WATCHERS_MAX: usize = 20_000;
/// Most slow clients of one `slow-bodies` run (each holds a connection: the load generator
/// raises its open-file limit to the hard limit, 20,000 on the benchmark machine).
pub const SLOW_CONNECTIONS_MAX: usize = 20_000;
/// Most TLS handshakes `slow-bodies` has in progress at once.
pub const SLOW_OPEN_CONCURRENCY_MAX: usize = 1_000;
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
/// Longest `watch` waits after the last write for every watcher to catch up.
pub const WATCH_DRAIN_TIMEOUT_S: u64 = 30;
/// Largest etcd response the client decodes (a range over 100,000 pods).
pub const ETCD_MESSAGE_BYTES_MAX: usize = 1 << 30;
/// Delivery latencies a watcher collects before adding them to a shared histogram.
pub const WATCH_LATENCY_BATCH: usize = 256;
/// Shared delivery-latency histograms of one `watch` run (watchers spread over them).
pub const WATCH_LATENCY_SHARDS: usize = 8;

// ------------------------------------------------------------------------- keel-torture

/// Most writers of one torture run (each keeps a connection and one write in flight).
pub const TORTURE_WRITERS_MAX: usize = 1_000;
/// Longest a server start may take (recovery of a large store on a busy machine) before the
/// run stops with an error.
pub const TORTURE_START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);
/// How often a starting server is asked whether it is ready.
pub const TORTURE_START_POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// Pause of a writer answered 429 before it writes again.
pub const TORTURE_RETRY_BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);
/// Largest `--value-bytes` (the API server's object limit is ~1.5 MiB).
pub const TORTURE_VALUE_BYTES_MAX: usize = 1 << 20;
