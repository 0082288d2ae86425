//! Every bound the engine enforces, in one place.
//!
//! Hitting a bound gives a clear error (`Error::KeyTooLarge`, `Error::ValueTooLarge`,
//! `Error::TooManyWatchers`, `Error::Busy`) or ends a watcher with `WatchError::Lagged`; it
//! never grows memory without bound.

use std::time::Duration;

/// Default bound on a key's length. Server keys look like `/<group>/<resource>/<ns>/<name>`:
/// names are at most 253 bytes, so 4 KiB leaves room without inviting abuse.
pub const KEY_BYTES_MAX_DEFAULT: usize = 4096;
/// Default bound on a value: 3 MiB, the API server's request body limit.
pub const VALUE_BYTES_MAX_DEFAULT: usize = 3 * 1024 * 1024;
/// Segment file size. Every record and its batch header must fit in one segment.
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;
/// Bytes a shard may hold written-but-not-yet-flushed before writers get `Error::Busy`.
pub const SHARD_PENDING_BYTES_MAX_DEFAULT: usize = 64 * 1024 * 1024;
/// Open watchers across the engine.
pub const WATCHERS_MAX_DEFAULT: usize = 100_000;
/// Events kept in the in-memory broadcast ring that live watchers read from.
pub const WATCH_RING_EVENTS_MAX_DEFAULT: usize = 1 << 17;
/// Events a single watcher may be behind the newest event before it is ended as lagged.
pub const WATCHER_BACKLOG_EVENTS_MAX_DEFAULT: usize = 1 << 17;
/// Events one `Watcher::poll_batch` call returns at most.
pub const WATCH_BATCH_EVENTS_MAX: usize = 1024;
/// Ring events one watcher examines per ring lock acquisition.
pub const WATCH_SCAN_EVENTS_MAX: usize = 8192;
/// Keys visited per index lock acquisition by compaction and long scans, so writers on the
/// same shard wait at most this many key visits.
pub const INDEX_STEP_KEYS: usize = 4096;
/// Items a list preallocates room for before it has seen them (it grows beyond if needed).
pub const LIST_PREALLOC_ITEMS_MAX: usize = 1 << 20;
/// Chunks (of at most `INDEX_STEP_KEYS` keys) a shard's scanner may have queued ahead of the
/// merge in a streamed full list, and spare chunks kept for reuse.
pub const LIST_STREAM_CHUNKS_IN_FLIGHT: usize = 4;
/// A paginated list's rank marks (see `list.rs`) keep the rank of every this-many-th live
/// key: counting what remains after a page visits at most this many keys.
pub const RANK_MARK_EVERY: u64 = 256;
/// (prefix, snapshot) pairs whose rank marks each shard keeps (most recently used first).
/// One pair over n keys holds n / `RANK_MARK_EVERY` marks (the key and a count).
pub const RANK_CACHE_SNAPSHOTS_MAX: usize = 16;
/// Time slice the commit-path threads (the shard flushers) ask the kernel for, so that they
/// run promptly when woken on a busy machine (see `sched.rs`); 0.1 ms is the kernel's minimum.
pub const COMMIT_THREAD_SLICE: Duration = Duration::from_micros(100);
/// How long a busy shard's flusher waits for more writes before a sync (see
/// `Shard::flusher_loop`). A sync costs ~0.1-0.2 ms of CPU on a VM whatever it commits, so on
/// a CPU-bound server larger batches are more throughput; writers wait at most this much
/// longer. Measured on 2 cores, 64 HTTPS clients creating 1 KiB ConfigMaps: no linger 16-20k
/// creates/s (1.4 records per sync), 300 µs 19-23k, 600 µs 21-27k, 1 ms 22-25k.
pub const COMMIT_LINGER_DEFAULT: Duration = Duration::from_micros(500);
/// Pending bytes that end a linger early: the batch is big enough to amortise its sync.
pub const COMMIT_LINGER_BYTES_MAX: usize = 256 * 1024;
/// Records a linger must gain on average for a shard to keep lingering: fewer means its
/// writers are all waiting on the batch already, and a linger only delays them.
pub const COMMIT_LINGER_GAIN_MIN: f64 = 2.0;
/// A shard with nothing to write for this long is no longer busy: its next write is
/// synced at once. Shorter idle gaps are the writers' own work between their writes.
pub const COMMIT_LINGER_IDLE_RESET: Duration = Duration::from_millis(10);
/// A shard whose lingers stopped gaining records still lingers once every this many
/// batches, to notice when more writers arrive.
pub const COMMIT_LINGER_PROBE_EVERY: u64 = 16;
/// Shards a store may have: shard directories are named with three digits (`shard-NNN`).
pub const SHARDS_MAX: usize = 1000;
/// Revisions the manifest's ceiling is raised by at a time (`keeper.rs`): one manifest write
/// (two `fsync`s, off the write path) per this many revisions, raised when half of the reserve
/// is used. After an unclean shutdown the next revision is at most about this far above the
/// last one handed out. At 150,000 writes/s that is a raise every ~3.5 s.
pub const REVISION_RESERVE_DEFAULT: u64 = 1 << 20;
/// How often the manifest records how far each active segment was synced, if it moved
/// (`keeper.rs`): after an unclean shutdown, batches synced before the last such write cannot
/// vanish unnoticed. One atomic file replacement (two `fsync`s) per interval at most.
pub const MANIFEST_REFRESH_INTERVAL: Duration = Duration::from_secs(1);
/// History kept for exact-revision reads, paginated lists and watch resumption.
pub const HISTORY_DEFAULT: Duration = Duration::from_secs(5 * 60);
/// Bytes read from a snapshot file at a time (`snapshot::read_snapshot`): large enough that
/// a read costs little per record, small next to the records a decoder may hold.
pub const SNAPSHOT_READ_BYTES: usize = 1 << 20;
/// A restore writes each shard's records in batches of at most this many bytes (one larger
/// record makes a batch of its own): the memory a restore holds besides 24 bytes a key.
pub const RESTORE_BATCH_BYTES: usize = 1 << 20;
/// A segment whose live bytes fall below this fraction of its size is rewritten.
pub const REWRITE_LIVE_RATIO_DEFAULT: f64 = 0.5;

// The largest record (header + key + value) plus a batch header must fit a segment.
const _: () = assert!(
    (KEY_BYTES_MAX_DEFAULT + VALUE_BYTES_MAX_DEFAULT + 4096) as u64 <= SEGMENT_BYTES_DEFAULT
);
const _: () = assert!(WATCHER_BACKLOG_EVENTS_MAX_DEFAULT <= WATCH_RING_EVENTS_MAX_DEFAULT);
// Segment offsets are stored as u32.
const _: () = assert!(SEGMENT_BYTES_DEFAULT <= u32::MAX as u64);

/// Configurable bounds. `Limits::default()` gives the documented defaults.
#[derive(Clone, Debug)]
pub struct Limits {
    pub key_bytes_max: usize,
    pub value_bytes_max: usize,
    pub segment_bytes: u64,
    pub shard_pending_bytes_max: usize,
    pub watchers_max: usize,
    pub watch_ring_events_max: usize,
    pub watcher_backlog_events_max: usize,
    /// Revisions reserved per manifest write (`REVISION_RESERVE_DEFAULT`); tests make it
    /// small to exercise the reservation often.
    pub revision_reserve: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            key_bytes_max: KEY_BYTES_MAX_DEFAULT,
            value_bytes_max: VALUE_BYTES_MAX_DEFAULT,
            segment_bytes: SEGMENT_BYTES_DEFAULT,
            shard_pending_bytes_max: SHARD_PENDING_BYTES_MAX_DEFAULT,
            watchers_max: WATCHERS_MAX_DEFAULT,
            watch_ring_events_max: WATCH_RING_EVENTS_MAX_DEFAULT,
            watcher_backlog_events_max: WATCHER_BACKLOG_EVENTS_MAX_DEFAULT,
            revision_reserve: REVISION_RESERVE_DEFAULT,
        }
    }
}
