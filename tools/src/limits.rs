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

// ------------------------------------------------------------------ custom resources (CRDs)

/// Longest a widgets workload waits for its CRD's `Established` condition to turn `True`.
pub const CRD_ESTABLISHED_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// Longest an established CRD's collection may take to answer, and longest `crd-latency`
/// tries to create an object of a fresh CRD before counting that CRD as failed.
pub const CRD_READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// Longest `crd-latency` waits for a deleted CRD to be gone (the server deletes its objects
/// first).
pub const CRD_DELETE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// Pause between two probes of a CRD (its conditions, its collection, a create of one of its
/// objects): the resolution of `crd-latency`'s figure.
pub const CRD_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(5);
/// How long `compare` waits for the Widget CRD to be established before it counts a server
/// as not serving custom resources (a server may store CRDs with no controller to establish
/// them): one that serves them establishes a CRD in milliseconds. `--smoke` waits less, so
/// that CI on a server without them pays little.
pub const COMPARE_CRD_ESTABLISHED_MAX: std::time::Duration = std::time::Duration::from_secs(10);
pub const COMPARE_SMOKE_CRD_ESTABLISHED_MAX: std::time::Duration =
    std::time::Duration::from_secs(2);
/// Most CRDs one `crd-latency` run creates.
pub const CRD_LATENCY_RUNS_MAX: u64 = 10_000;

const _: () = assert!(CRD_POLL_INTERVAL.as_millis() * 100 <= CRD_READY_TIMEOUT.as_millis());
