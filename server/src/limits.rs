//! Every named bound of the API server in one place: retries, batches, waits, chunk sizes,
//! the watch feed's log, metric series and files read at start. The HTTP layer's bounds
//! (headers, bodies, connections, in-flight requests) are in `keel_http::Limits`, the store's
//! in `keel_engine::limits`. Each says why it has the value it has. What an unauthenticated
//! client can make the server hold (connections, bytes, time) is bounded there too
//! (`keel_http::Limits`, "Before a request is admitted"): kube-apiserver has no flags for
//! these, so the server keeps the HTTP layer's defaults.

use std::time::Duration;

// ------------------------------------------------------------------------- registry

/// Attempts of an optimistic read-modify-write (`Registry::guaranteed_update`, deletes)
/// before giving up with 409: each attempt lost to a concurrent writer, so sixteen in a row
/// means the object is hot enough that the client should back off.
pub const UPDATE_RETRIES_MAX: usize = 16;
/// Names tried for one `generateName` create whose generated name was taken (the suffix has
/// 5 random characters out of 27: a clash is rare, eight in a row means the prefix is full).
pub const GENERATE_NAME_ATTEMPTS_MAX: usize = 8;
/// Objects fetched per store call while filtering a list by selectors: a page of a filtered
/// list may have to read past many objects the selectors drop.
pub const LIST_FILTER_BATCH: usize = 1000;
/// Items one deletecollection deletes at most; more is refused (use a selector).
pub const DELETE_COLLECTION_MAX: usize = 100_000;
/// How long a read for a resourceVersion newer than the store's waits before answering 504
/// `Too large resource version` (upstream waits 3 s too).
pub const FUTURE_RV_WAIT: Duration = Duration::from_secs(3);
/// How often that wait looks at the store's revision again.
pub const FUTURE_RV_POLL: Duration = Duration::from_millis(5);

// ------------------------------------------------------------------------- responses

/// Lists whose items exceed this many bytes are sent as a chunked stream of the stored values
/// themselves (no copy into a response buffer); smaller ones are built whole.
pub const LIST_STREAM_THRESHOLD_BYTES: usize = 64 * 1024;
/// Bytes of one streamed list chunk (about; it ends after the item that reaches it).
pub const LIST_CHUNK_BYTES: usize = 256 * 1024;
/// Pieces of one streamed list chunk (two per item: separator and value), so that a chunk is
/// written with one vectored write.
pub const LIST_CHUNK_PIECES_MAX: usize = 500;
/// Bytes of a body quoted in a decoding error.
pub const BODY_SUMMARY_BYTES: usize = 30;

// ------------------------------------------------------------------------- request bodies

/// Values a YAML request body may expand to (aliases included): past it, 400 `yaml: document
/// contains excessive aliasing` (go-yaml's words; it bounds alias expansion by a ratio). An
/// alias names a whole subtree again, so a few hundred bytes can name billions of values;
/// without aliases a body cannot get near the bound: the densest YAML (`[0,0,...]`) spends
/// two bytes a value, so a body of the default `--max-request-bytes` (3 MiB) holds 1.5 Mi.
/// At about 80 bytes a decoded value, the bound holds a body's decoding under 200 MB, as
/// the densest JSON body of that size already may. Nesting is bounded by
/// `keel_api::yaml::DEPTH_MAX`.
pub const YAML_BODY_VALUES_MAX: usize = 2 << 20;

// ------------------------------------------------------------------------- snapshots

/// Bytes gathered into one chunk of a snapshot stream (`GET /keel/v1/snapshot`) before it is
/// handed to the connection: as a watch chunk, large enough that framing costs nothing.
pub const SNAPSHOT_CHUNK_BYTES: usize = 256 * 1024;
/// Keys a snapshot reads per page at its revision: the page's handles (views of stored
/// values, not copies) are what a running snapshot holds besides its chunk.
pub const SNAPSHOT_PAGE_KEYS: usize = 500;

// ------------------------------------------------------------------------- watches

/// Bytes gathered into one chunk of a watch stream before it is handed to the connection.
pub const WATCH_CHUNK_BYTES: usize = 256 * 1024;
/// How often an idle stream with `allowWatchBookmarks` gets a BOOKMARK, unless configured.
pub const WATCH_BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);
/// Shortest accepted `--watch-bookmark-interval`.
pub const BOOKMARK_INTERVAL_MIN: Duration = Duration::from_millis(100);
/// Least time between two reads of the feed by one busy subscriber (see `feed`'s "Pacing").
/// Measured with 1,000 HTTP watchers of one collection and a writer paced at 1,200 writes/s
/// on this 2-core machine (load generator included), when all subscribers read together:
/// 10 ms sustained 480-550 writes/s, 15 ms 580-800, 20 ms ~770, 25 ms 790-1,130 and 50 ms
/// 1,060-1,180; later, with cheaper writes, 15 ms still cost ~10 % more CPU than 25 ms and
/// fell behind once in four runs. Fewer, larger writes per watcher are what lets the cores
/// keep up; a lone event after a quiet period is still read at once.
pub const WATCH_FEED_INTERVAL: Duration = Duration::from_millis(25);
/// Phase points per `WATCH_FEED_INTERVAL` over which busy subscribers are spread.
pub const WATCH_FEED_PHASES: usize = 16;
/// Lines a feed keeps at most; a subscriber further behind is ended as lagged.
pub const WATCH_FEED_EVENTS_MAX: usize = 1 << 15;
/// Bytes of lines a feed keeps at most; a subscriber further behind is ended as lagged.
pub const WATCH_FEED_BYTES_MAX: usize = 64 * 1024 * 1024;
/// Lines kept after every subscriber has passed them, so that watches starting at a recent
/// revision can join the feed.
pub const WATCH_FEED_RETAIN_EVENTS: usize = 1024;
/// Store batches a feed's task pulls per poll before yielding to other tasks.
pub const WATCH_FEED_BATCHES_PER_POLL: usize = 8;
/// Feed subscriptions open in the process at most (each also needs a connection); beyond,
/// a watch is refused with 429 as when the store's watcher limit is reached.
pub const WATCH_FEED_SUBSCRIBERS_MAX: usize = 100_000;
/// Pieces (events) in one chunk at most: each is one iovec of the write.
pub const WATCH_CHUNK_PIECES_MAX: usize = 256;
/// Lines a selective subscriber tests in one poll at most before letting other tasks run.
pub const WATCH_SCAN_LINES_PER_POLL: usize = 4096;
/// Bytes charged against `WATCH_FEED_BYTES_MAX` for a parsed object, per stored byte (a
/// `serde_json::Value` takes a few times the JSON it came from).
pub const WATCH_FEED_PARSED_BYTES_PER_BYTE: usize = 4;

// ------------------------------------------------------------------------- routes

/// Route snapshots a thread keeps cached (one per `LiveRoutes`; a server has one, tests a
/// few): past it the least recently added entry goes.
pub const ROUTES_CACHED_PER_THREAD_MAX: usize = 4;

// ------------------------------------------------------------------------- controllers

/// The namespace defaults controller (default ServiceAccount, `kube-root-ca.crt`): its
/// resync, and the least time between passes (a pass reads two objects per namespace).
pub const NAMESPACE_DEFAULTS_RESYNC: Duration = Duration::from_secs(30);
pub const NAMESPACE_DEFAULTS_PASS_INTERVAL_MIN: Duration = Duration::from_millis(200);

/// How often the namespace controller re-examines terminating namespaces when nothing
/// changes.
pub const NAMESPACE_RESYNC: Duration = Duration::from_millis(500);
/// How often the volume protection controller re-examines claims, volumes and
/// VolumeAttributesClasses being deleted when none changes (a claim's last pod finishing is
/// seen this late at most).
pub const VOLUME_PROTECTION_RESYNC: Duration = Duration::from_secs(2);
/// Least time between two passes of the namespace controller: a pass lists and parses every
/// namespace, so a burst of namespace changes (a simulated cluster creating thousands) is
/// handled a pass per 20 ms, not a pass per change.
pub const NAMESPACE_PASS_INTERVAL_MIN: Duration = Duration::from_millis(20);
/// Least time between two passes of the CRD controller (a pass lists every definition): a
/// new definition is served and established within about one pass of its create.
pub const CRD_PASS_INTERVAL_MIN: Duration = Duration::from_millis(10);
/// Custom resource versions whose schemas server-side apply keeps converted at once.
pub const CUSTOM_TYPE_SCHEMAS_MAX: usize = 1024;
/// How often the CRD controller looks at every definition when none changes (a deleted
/// definition's instances are counted again this often until none is left).
pub const CRD_RESYNC: Duration = Duration::from_secs(1);
/// How often the authentication-trust controller checks `extension-apiserver-authentication`
/// when nothing changes (upstream resyncs it every minute)...
pub const AUTH_TRUST_RESYNC: Duration = Duration::from_secs(60);
/// ...and the least time between two of its passes (a change wakes it at once).
pub const AUTH_TRUST_PASS_INTERVAL_MIN: Duration = Duration::from_millis(200);
/// Least time between two passes of the garbage collector: a pass reads every object of
/// every deletable resource twice (byte checks skip parsing those without owner references
/// or garbage-collection finalizers), so a burst of deletions is handled a pass per 200 ms,
/// not a pass per deletion. Only deletions wake it; creates never do.
pub const GC_PASS_INTERVAL_MIN: Duration = Duration::from_millis(200);
/// How often the garbage collector looks again when nothing is deleted: a dependent created
/// after its owner went (or naming an owner that never existed) is collected this late.
pub const GC_RESYNC: Duration = Duration::from_secs(10);
/// Owners being deleted with `orphan` or `foregroundDeletion` that one pass finishes; the
/// rest wait for the next pass (each costs a few hundred bytes).
pub const GC_DELETING_OWNERS_MAX: usize = 10_000;
/// Distinct owner UIDs a pass remembers as having dependents (about 100 bytes each: 10 MB).
/// Past it the collector assumes every object may have dependents, which costs a dependent
/// of a foreground deletion one more pass (it is deleted in the foreground too), never a
/// wrong deletion.
pub const GC_OWNER_UIDS_MAX: usize = 100_000;
/// Owners a pass has looked up and remembers (present, absent, waiting for dependents);
/// past it the memory is cleared and owners are looked up again.
pub const GC_OWNER_LOOKUPS_CACHED_MAX: usize = 10_000;
/// Revisions the compactor remembers (one per maintenance interval in which the store
/// changed) to tell which was current one history window ago; past it the oldest go, so a
/// window longer than this many intervals is compacted a little late, never early.
pub const COMPACTION_SAMPLES_MAX: usize = 16_384;
/// Shortest accepted `--storage-maintenance-interval`.
pub const MAINTENANCE_INTERVAL_MIN: Duration = Duration::from_millis(50);

/// Edges the Node authorizer's graph holds at most (one per bound pod, PV claim,
/// VolumeAttachment and ResourceSlice, one per object a pod or PV references; about 100
/// bytes each, so 400 MB at the bound). Upstream's scalability envelope is 150,000 pods; at
/// ten references a pod (service account, token and CA projections, config, secrets,
/// claims) that is 1.5 M edges, so the bound leaves room for more than twice that. An object
/// that would pass it is not stored: the nodes are refused what it would have related them
/// to (never granted more), and the controller says so in its log.
pub const NODE_GRAPH_EDGES_MAX: usize = 4_000_000;
/// How often the node graph controller reads every pod, PV, VolumeAttachment and
/// ResourceSlice again even when its watches say nothing (a safety net, as an informer's
/// resync; a pass parses every bound pod, about 10 us each).
pub const NODE_GRAPH_RESYNC: Duration = Duration::from_secs(300);
/// Bytes of watch events the node graph controller takes per step (its changes are then
/// applied under one write lock, so this bounds how long a step holds decisions off: about
/// 1 ms of parsing).
pub const NODE_GRAPH_WATCH_STEP_BYTES: usize = 1 << 20;
/// How long the node graph controller waits after a watch ended before reading everything
/// again.
pub const NODE_GRAPH_REWATCH_WAIT: Duration = Duration::from_millis(100);

// ------------------------------------------------------------------------- requests

/// Request bodies of the largest size (`--max-request-bytes`) that one serving core holds at
/// once: the HTTP layer's per-core body budget is this many times the largest body. Bodies
/// are charged as their bytes arrive, so the budget bounds what authenticated clients can make
/// a core hold (unauthenticated ones hold no body: they are refused on their head); past it a
/// request is answered 429. Sixteen 3 MiB bodies is 48 MiB per core, far above what object
/// writes use (a body buffer is the body's size when it is small: 400 writes in flight of
/// 4 KiB objects hold 1.6 MiB). kube-apiserver has no such bound (and no flag for one), hence
/// a constant.
pub const LARGEST_BODIES_IN_FLIGHT_PER_CORE: usize = 16;

// ------------------------------------------------------------------------- other

/// Largest token file accepted (`--token-auth-file`).
pub const TOKEN_FILE_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// Service account tokens whose authentication is remembered, and for how long (upstream's
/// token cache keeps successes 10 seconds); when full, expired entries go, then all.
pub const TOKEN_CACHE_ENTRIES_MAX: usize = 10_000;
pub const TOKEN_CACHE_TTL: Duration = Duration::from_secs(10);
/// Users whose RBAC grants (by user, groups and namespace) each serving thread remembers at
/// one policy generation; when full, all go. An entry holds shared references to the roles
/// that grant, a few hundred bytes.
pub const RBAC_GRANTS_CACHED_MAX: usize = 4_096;
/// The largest service account key file read.
pub const KEY_FILE_BYTES_MAX: u64 = 1024 * 1024;
/// Largest `--encryption-provider-config` accepted: a rule with a few keys is well under a
/// kilobyte, so a megabyte holds thousands of keys, and anything bigger is not a config.
pub const ENCRYPTION_CONFIG_BYTES_MAX: u64 = 1024 * 1024;
/// Distinct request metric label sets kept; beyond it new series are folded into
/// `resource="other"`.
pub const METRIC_SERIES_MAX: usize = 10_000;
/// Request series are recorded in one of this many slots (one per thread, modulo), so the
/// serving cores never contend for a lock on the hot path; `/metrics` merges them.
pub const METRIC_SLOTS: usize = 8;

const _: () = assert!(WATCH_FEED_RETAIN_EVENTS < WATCH_FEED_EVENTS_MAX);
const _: () = assert!(LIST_STREAM_THRESHOLD_BYTES <= LIST_CHUNK_BYTES);
const _: () = assert!(BOOKMARK_INTERVAL_MIN.as_millis() <= WATCH_BOOKMARK_INTERVAL.as_millis());

/// Graceful shutdown with `--shutdown-send-retry-after`: how often the main thread checks
/// whether the requests in flight have drained, and how long it waits for them at most
/// (upstream's default request timeout) before closing the listener anyway.
pub const SHUTDOWN_DRAIN_POLL: Duration = Duration::from_millis(10);
pub const SHUTDOWN_DRAIN_MAX: Duration = Duration::from_secs(60);

// ------------------------------------------------------------------------- flow control

/// How long a request may wait in a priority level's queue before it is refused with 429
/// (`time-out`): upstream allows a quarter of the request's deadline, capped at a minute;
/// with kube-apiserver's default `--request-timeout` of 60 s that is 15 s.
pub const FLOWCONTROL_QUEUE_WAIT_MAX: Duration = Duration::from_secs(15);
/// Largest `Retry-After` of a request refused by priority and fairness (it starts at 1 s and
/// follows the level's recent refusals: `flowcontrol::retry`; upstream's `maxRetryAfter`).
pub const FLOWCONTROL_RETRY_AFTER_MAX: u32 = 32;
/// Priority levels whose refusals are tracked for `Retry-After` (beyond it the history is
/// forgotten and starts again).
pub const FLOWCONTROL_LEVELS_TRACKED_MAX: usize = 1024;
/// Users whose flow schema rules (those whose subjects match them) each core remembers
/// under its configuration; when full, all go.
pub const FLOWCONTROL_USERS_CACHED_MAX: usize = 4_096;
/// How often the flow-control controller re-reads every FlowSchema and
/// PriorityLevelConfiguration even without a change seen on its watches (restores deleted
/// mandatory objects that a missed event would leave absent).
pub const FLOWCONTROL_RESYNC: Duration = Duration::from_secs(30);
/// Least time between two passes of the flow-control controller, so that a burst of changes
/// to the objects is read in one pass.
pub const FLOWCONTROL_PASS_INTERVAL_MIN: Duration = Duration::from_millis(50);
/// The work estimate of a list (upstream's list work estimator): one seat per
/// `FLOWCONTROL_OBJECTS_PER_SEAT` objects it is expected to go through.
pub const FLOWCONTROL_OBJECTS_PER_SEAT: u64 = 100;
/// The most seats one request takes: upstream's `MaximumListSeatsLimit`...
pub const FLOWCONTROL_MAX_SEATS: u32 = 10;
/// ...and at most this percentage of its priority level's seats (here: on its core),
/// rounded up (upstream's `priorityLevelMaxSeatsPercent`).
pub const FLOWCONTROL_MAX_SEATS_PERCENT: u32 = 15;
/// How long a core reuses a resource's object count for list estimates before counting
/// again (upstream's object count tracker refreshes about once a minute; counting is a walk
/// of the resource's index here, so it is not done on every list).
pub const FLOWCONTROL_OBJECT_COUNT_MAX_AGE: Duration = Duration::from_secs(10);
/// Resources whose counts one core keeps for list estimates (beyond it the cache is
/// cleared and refilled).
pub const FLOWCONTROL_OBJECT_COUNTS_MAX: usize = 4096;

/// How long a conversion webhook may take to answer (upstream's fixed 30 s, also sent to the
/// webhook as `?timeout=30s`).
pub const CONVERSION_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);
/// Idle keep-alive connections kept per conversion webhook.
pub const CONVERSION_WEBHOOK_IDLE_CONNECTIONS: usize = 4;

/// How often the APIService availability controller checks every aggregated API when nothing
/// changes (upstream's controller resyncs its APIServices every 30 s)...
pub const APISERVICE_RESYNC: Duration = Duration::from_secs(30);
/// ...and the least time between two of its passes (an APIService, Service or EndpointSlice
/// change wakes it at once).
pub const APISERVICE_PASS_INTERVAL_MIN: Duration = Duration::from_millis(100);
/// Bound of one discovery check of an aggregated API server (upstream's client timeout).
pub const APISERVICE_CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle connections kept to one aggregated API server.
pub const APISERVICE_IDLE_CONNECTIONS: usize = 4;
/// Bytes of an aggregated API server's discovery document (`/apis/<group>/<version>`) its
/// check reads; a larger one fails the check.
pub const APISERVICE_DISCOVERY_BYTES_MAX: usize = 4 << 20;
/// Bound of one OpenAPI document fetch from an aggregated API server (upstream's spec
/// download timeout). Fetches run apart from requests, which are answered from what was
/// last fetched and never wait for one.
pub const APISERVICE_OPENAPI_FETCH_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes of one OpenAPI document of an aggregated API server (a generic API server's
/// `/openapi/v2` is a few hundred KiB; keel's own, every built-in type, about 4 MiB); a larger
/// one fails the fetch and the last good one is kept.
pub const APISERVICE_OPENAPI_BYTES_MAX: usize = 16 << 20;
/// How long after a successful fetch an aggregated API server's OpenAPI documents are fetched
/// again (upstream's one minute; the controller looks at least every `APISERVICE_RESYNC`)...
pub const APISERVICE_OPENAPI_REFRESH: Duration = Duration::from_secs(60);
/// ...and the longest wait after failed ones (upstream backs off exponentially from the
/// refresh interval up to an hour).
pub const APISERVICE_OPENAPI_BACKOFF_MAX: Duration = Duration::from_secs(3600);
const _: () =
    assert!(APISERVICE_OPENAPI_REFRESH.as_secs() <= APISERVICE_OPENAPI_BACKOFF_MAX.as_secs());
