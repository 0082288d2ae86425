//! The storage contract: the `Store` trait every backend implements (the embedded engine, the
//! in-memory model, later etcd) and the plain types it speaks.
//!
//! Semantics, shared by every backend and checked by `tests/contract.rs`:
//! - Revisions are strictly increasing in commit order across the whole store. A write is
//!   acknowledged only when it is durable and visible: any read started after the ack sees it.
//! - A read at snapshot S sees, for each key, the newest version with revision <= S.
//! - `compact(C)` forgets versions that no snapshot >= C needs; reads below C fail with
//!   `Error::Compacted`, reads at C still work.
//! - Watching `prefix` after R delivers, in revision order, every change with revision > R
//!   whose key starts with `prefix`, each exactly once, with its previous value.
//!
//! Each `Event` also records when it became visible: `Event::visible_at` is the instant the
//! store published it to its watchers (the engine's sequencer, once the revision and every
//! one below it are durable; the model, when the write is applied). It is stamped once per
//! publish, with one clock read for the whole run of events published together, just before
//! they enter the watch ring, so every event a live watcher receives carries it. Events read
//! back from disk for a watch that starts before the ring (`HistorySource`) were published by
//! an earlier process or long ago and carry `None`. Delivery latency as the store is
//! responsible for it is `received - visible_at`; the time before it is the write's commit.

use crate::{Error, Pending, Revision, Value, WatchError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Boxed error a value builder returns to abort a write.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Which snapshot a read is served from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadAt {
    /// The current revision.
    Latest,
    /// Exactly this revision: `Compacted` if it is gone, `FutureRevision` if not yet committed.
    Exact(Revision),
    /// The current revision, provided it is at least this one (`FutureRevision` otherwise).
    NotOlderThan(Revision),
}

/// A condition on a key's current mod revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precondition {
    None,
    ModRevision(Revision),
}

/// The kinds of write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOp {
    /// Fails with `AlreadyExists` if the key exists.
    Create,
    /// Fails with `NotFound` if the key does not exist, `Conflict` if the precondition fails.
    Update(Precondition),
    /// Writes a tombstone. Same failures as `Update`. The value builder is not called.
    Delete(Precondition),
}

/// What a value builder is told: the revision the new version will carry (so the server can
/// write `metadata.resourceVersion` into the bytes it stores) and the current version.
pub struct WriteContext<'a> {
    /// The revision the new version will carry: `Some` exactly when the backend has
    /// `Capabilities::revision_before_seal` (the embedded engine and the model do; a backend
    /// whose revisions are assigned by a remote store after the bytes are sent, such as etcd,
    /// gives `None`, and readers must learn the revision from `KeyValue::mod_revision`).
    pub revision: Option<Revision>,
    pub current: Option<&'a [u8]>,
    pub current_revision: Option<Revision>,
}

/// The outcome of an acknowledged write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    pub revision: Revision,
    /// Mod revision of the version this write replaced, if any.
    pub prev_revision: Option<Revision>,
}

/// One version of one key. The key and value are views of the stored record: no copy.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyValue {
    record: Value,
    key_len: u32,
    pub mod_revision: Revision,
}

impl KeyValue {
    /// `record` holds the key followed immediately by the value.
    pub fn new(record: Value, key_len: usize, mod_revision: Revision) -> KeyValue {
        assert!(
            key_len <= record.len(),
            "key_len {key_len} > record {}",
            record.len()
        );
        KeyValue {
            record,
            key_len: key_len as u32,
            mod_revision,
        }
    }

    pub(crate) fn new_trusted(record: Value, key_len: usize, mod_revision: Revision) -> KeyValue {
        debug_assert!(key_len <= record.len());
        KeyValue {
            record,
            key_len: key_len as u32,
            mod_revision,
        }
    }

    /// Builds a heap-backed key-value (the model, tests).
    pub fn from_parts(key: &[u8], value: &[u8], mod_revision: Revision) -> KeyValue {
        let mut v = Vec::with_capacity(key.len() + value.len());
        v.extend_from_slice(key);
        v.extend_from_slice(value);
        KeyValue::new(Value::from_vec(v), key.len(), mod_revision)
    }

    pub fn key(&self) -> &[u8] {
        &self.record[..self.key_len as usize]
    }

    pub fn value(&self) -> &[u8] {
        &self.record[self.key_len as usize..]
    }
}

impl std::fmt::Debug for KeyValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyValue")
            .field("key", &String::from_utf8_lossy(self.key()))
            .field("mod_revision", &self.mod_revision)
            .field("value_len", &self.value().len())
            .finish()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Put,
    Delete,
}

/// One committed change. For `Delete`, `kv.value()` is empty and `kv.mod_revision` is the
/// deletion's revision. Equality compares the change (kind, key-values), not `visible_at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub kv: KeyValue,
    pub prev: Option<KeyValue>,
    visible_at: VisibleAt,
}

impl Event {
    /// A change not yet published (`visible_at()` is `None`).
    pub fn new(kind: EventKind, kv: KeyValue, prev: Option<KeyValue>) -> Event {
        Event {
            kind,
            kv,
            prev,
            visible_at: VisibleAt::default(),
        }
    }

    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }

    /// When the store published this event to its watchers (see the module docs); `None` if
    /// it was not published by this process (history read back from disk) or not yet.
    pub fn visible_at(&self) -> Option<Instant> {
        match self.visible_at.0.load(Ordering::Acquire) {
            0 => None,
            stamp => Some(clock_epoch() + Duration::from_nanos(stamp - 1)),
        }
    }

    /// The raw publish stamp (0: not published by this process). Events published together
    /// share one stamp, so a consumer can time a run of equal stamps once; `visible_at` turns
    /// it into an `Instant`.
    pub fn visible_stamp(&self) -> u64 {
        self.visible_at.0.load(Ordering::Acquire)
    }

    /// Records the publish instant (a `VisibleStamp::now()` shared by the events published
    /// together).
    pub(crate) fn set_visible_at(&self, at: VisibleStamp) {
        self.visible_at.0.store(at.0, Ordering::Release);
    }
}

/// The process-wide origin of `visible_at` stamps.
fn clock_epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// A publish instant: 1 + nanoseconds since `clock_epoch()`, so never 0 (0 means unpublished).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct VisibleStamp(u64);

impl VisibleStamp {
    /// One clock read.
    pub(crate) fn now() -> VisibleStamp {
        let epoch = clock_epoch();
        let ns = Instant::now().saturating_duration_since(epoch).as_nanos();
        // u64 nanoseconds last 584 years.
        VisibleStamp(u64::try_from(ns).unwrap_or(u64::MAX - 1) + 1)
    }
}

/// `Event::visible_at` storage: a `VisibleStamp` or 0. Set once, by the publisher, before
/// the event is reachable by watchers; clones copy it; it takes no part in equality.
#[derive(Default)]
struct VisibleAt(AtomicU64);

impl Clone for VisibleAt {
    fn clone(&self) -> Self {
        VisibleAt(AtomicU64::new(self.0.load(Ordering::Acquire)))
    }
}

impl PartialEq for VisibleAt {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for VisibleAt {}

impl std::fmt::Debug for VisibleAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.load(Ordering::Relaxed) {
            0 => f.write_str("unpublished"),
            stamp => write!(f, "{} ns after the clock epoch", stamp - 1),
        }
    }
}

/// A prefix list.
#[derive(Clone, Copy, Debug)]
pub struct ListRequest<'a> {
    pub prefix: &'a [u8],
    /// Return only keys strictly greater than this one (a continue token's last key).
    pub start_after: Option<&'a [u8]>,
    /// At most this many items; 0 means no limit.
    pub limit: usize,
    pub at: ReadAt,
}

impl<'a> ListRequest<'a> {
    pub fn prefix(prefix: &'a [u8]) -> ListRequest<'a> {
        ListRequest {
            prefix,
            start_after: None,
            limit: 0,
            at: ReadAt::Latest,
        }
    }
}

#[derive(Clone, Debug)]
pub struct ListResult {
    pub items: Vec<KeyValue>,
    /// The snapshot the list was served at.
    pub revision: Revision,
    /// Whether keys remain after the last item.
    pub more: bool,
    /// How many keys (live at `revision`, under the prefix) remain after the last item: exact,
    /// and 0 for an unlimited list. Cost in the engine: the first limited list with keys
    /// remaining at a given (prefix, snapshot) counts the prefix once (O(n)); later pages at
    /// that snapshot (continue tokens) count in O(`limits::RANK_MARK_EVERY` + log n), so a
    /// page costs O(limit + log n).
    pub remaining: u64,
}

/// The embedded engine's counters, for tests, benchmarks and `/metrics`.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub revision: Revision,
    pub compacted: Revision,
    pub shards: usize,
    /// Live keys (latest version not a tombstone) at the current revision.
    pub keys: u64,
    /// Versions held in the index (history included).
    pub versions: u64,
    pub segments: usize,
    /// Bytes of segment files on disk (their sizes).
    pub segment_bytes: u64,
    /// Batches written and `fdatasync` calls made since open.
    pub batches_written: u64,
    pub syncs: u64,
    /// Bytes written by batches since open.
    pub bytes_written: u64,
    pub watchers: usize,
    pub segments_rewritten: u64,
}

/// What a backend can do beyond the contract; callers that rely on a capability check it and
/// fall back when it is absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// The value builder is told the revision its write will get (`WriteContext::revision`
    /// is `Some`) before the bytes are sealed, so a value can embed its own revision and be
    /// served as stored. Without it a reader learns the revision from `mod_revision`.
    pub revision_before_seal: bool,
    /// The backend forgets history older than its own window by itself (the engine's
    /// maintenance thread). Without it, whoever serves the store calls `compact` (etcd is
    /// compacted by its API servers, as upstream's compactor does).
    pub compacts_itself: bool,
}

/// The value builder of a write: appends the new value to the buffer, or refuses the write.
/// Called at most once, synchronously inside `Store::write`, and never for a delete.
pub type ValueBuilder<'a> = dyn FnMut(&WriteContext<'_>, &mut Vec<u8>) -> Result<(), BoxError> + 'a;

/// A stream of committed events of one prefix, in revision order (what `Store::watch` gives).
/// Dropping it releases its watcher slot.
pub trait EventStream: Send {
    /// Hands each available event (a bounded batch) to `visit`, without cloning it: live
    /// events may be visited in place under a lock, so `visit` must be quick. `Ready(Ok(n))`
    /// once `n > 0` events were visited; `Pending` registers `cx`'s waker.
    fn poll_visit(
        &mut self,
        cx: &mut Context<'_>,
        visit: &mut dyn FnMut(&Arc<Event>),
    ) -> Poll<Result<usize, WatchError>>;

    /// Appends available events (a bounded batch) to `out` without waiting; returns how many.
    fn try_batch(&mut self, out: &mut Vec<Arc<Event>>) -> Result<usize, WatchError>;

    /// Blocks the thread until at least one event is appended to `out` or `timeout` passes.
    /// Returns whether events were appended.
    fn next_batch_timeout(
        &mut self,
        out: &mut Vec<Arc<Event>>,
        timeout: Duration,
    ) -> Result<bool, WatchError>;

    /// Polls for a batch: `Ready(Ok(()))` once at least one event was appended to `out`.
    fn poll_batch(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<Arc<Event>>,
    ) -> Poll<Result<(), WatchError>> {
        self.poll_visit(cx, &mut |e| out.push(e.clone()))
            .map(|r| r.map(|_| ()))
    }
}

impl<T: EventStream + ?Sized> EventStream for Box<T> {
    fn poll_visit(
        &mut self,
        cx: &mut Context<'_>,
        visit: &mut dyn FnMut(&Arc<Event>),
    ) -> Poll<Result<usize, WatchError>> {
        (**self).poll_visit(cx, visit)
    }

    fn try_batch(&mut self, out: &mut Vec<Arc<Event>>) -> Result<usize, WatchError> {
        (**self).try_batch(out)
    }

    fn next_batch_timeout(
        &mut self,
        out: &mut Vec<Arc<Event>>,
        timeout: Duration,
    ) -> Result<bool, WatchError> {
        (**self).next_batch_timeout(out, timeout)
    }

    fn poll_batch(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<Arc<Event>>,
    ) -> Poll<Result<(), WatchError>> {
        (**self).poll_batch(cx, out)
    }
}

/// The contract every backend implements. Object-safe: the server holds an
/// `Arc<dyn Store>` and never names the backend behind it.
pub trait Store: Send + Sync {
    /// What this backend can do beyond the contract.
    fn capabilities(&self) -> Capabilities;

    /// The newest revision whose changes (and all before it) are visible.
    fn current_revision(&self) -> Revision;

    /// The oldest revision reads may ask for.
    fn compacted_revision(&self) -> Revision;

    fn get(&self, key: &[u8], at: ReadAt) -> Result<Option<KeyValue>, Error>;

    fn list(&self, req: &ListRequest<'_>) -> Result<ListResult, Error>;

    /// Performs `op` on `key`. For `Create` and `Update`, `build` appends the new value to the
    /// buffer it is given; returning an error aborts the write with `Error::Aborted`. A write
    /// that reached `build` has consumed its revision even when aborted (or refused as
    /// `ValueTooLarge`): revisions stay increasing, but the next write skips that one.
    /// The result is available once the write is durable and visible. (`StoreExt::write`
    /// takes a plain closure.)
    fn write_with(
        &self,
        key: &[u8],
        op: WriteOp,
        build: &mut ValueBuilder<'_>,
    ) -> Pending<Result<Written, Error>>;

    /// Watches every change after `after` to keys under `prefix`. `after` must not be newer
    /// than the current revision (`FutureRevision`; a caller that has one waits for it
    /// first), nor older than the compacted one (`Compacted`).
    fn watch(&self, prefix: &[u8], after: Revision) -> Result<Box<dyn EventStream>, Error>;

    /// Forgets history older than `revision`. Compacting to an older revision is a no-op;
    /// compacting beyond the current revision fails with `FutureRevision`.
    fn compact(&self, revision: Revision) -> Result<(), Error>;

    /// The embedded engine's counters (segments, bytes, watchers) for `/metrics`; `None` for
    /// backends that keep none.
    fn stats(&self) -> Option<Stats> {
        None
    }

    /// `Err(reason)` once the backend can no longer accept writes (a failed sync: the disk
    /// returned EIO or is full), for the server's readiness and liveness checks.
    fn health(&self) -> Result<(), String> {
        Ok(())
    }

    /// At shutdown: refuses further writes (`Closed`) and has what is pending flushed;
    /// reads and watches go on. A no-op for backends with nothing to flush.
    fn stop_writes(&self) {}
}

/// Conveniences over `Store::write_with`, for every backend (also behind `dyn Store`).
pub trait StoreExt: Store {
    /// `write_with` for a closure called at most once.
    fn write<F>(&self, key: &[u8], op: WriteOp, build: F) -> Pending<Result<Written, Error>>
    where
        F: FnOnce(&WriteContext<'_>, &mut Vec<u8>) -> Result<(), BoxError>,
    {
        let mut build = Some(build);
        self.write_with(key, op, &mut |ctx, out| {
            let build = build
                .take()
                .expect("a value builder is called at most once");
            build(ctx, out)
        })
    }

    fn create(&self, key: &[u8], value: &[u8]) -> Pending<Result<Written, Error>> {
        self.write(key, WriteOp::Create, |_, out| {
            out.extend_from_slice(value);
            Ok(())
        })
    }

    fn update(
        &self,
        key: &[u8],
        pre: Precondition,
        value: &[u8],
    ) -> Pending<Result<Written, Error>> {
        self.write(key, WriteOp::Update(pre), |_, out| {
            out.extend_from_slice(value);
            Ok(())
        })
    }

    fn delete(&self, key: &[u8], pre: Precondition) -> Pending<Result<Written, Error>> {
        self.write(key, WriteOp::Delete(pre), |_, _| Ok(()))
    }
}

impl<S: Store + ?Sized> StoreExt for S {}
