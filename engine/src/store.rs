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

use crate::{Error, Pending, Revision, Value, Watcher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
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
    pub revision: Revision,
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

/// The contract every backend implements.
pub trait Store: Send + Sync {
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
    /// The result is available once the write is durable and visible.
    fn write<F>(&self, key: &[u8], op: WriteOp, build: F) -> Pending<Result<Written, Error>>
    where
        F: FnOnce(&WriteContext<'_>, &mut Vec<u8>) -> Result<(), BoxError>;

    /// Watches every change after `after` to keys under `prefix`.
    fn watch(&self, prefix: &[u8], after: Revision) -> Result<Watcher, Error>;

    /// Forgets history older than `revision`. Compacting to an older revision is a no-op;
    /// compacting beyond the current revision fails with `FutureRevision`.
    fn compact(&self, revision: Revision) -> Result<(), Error>;

    // Conveniences over `write`.

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
