//! keel-engine: the embedded store behind keel's API server.
//!
//! A sharded, memory-mapped, log-structured MVCC key-value store with globally ordered
//! revisions. Keys are byte strings (the server uses `/<group>/<resource>/<ns>/<name>`),
//! values opaque bytes served straight out of the segment mappings.
//!
//! Invariants:
//! - Revisions are strictly increasing in commit order across all shards; a reader that sees
//!   revision N sees every change at or below N (`sequencer.rs`).
//! - A write is acknowledged only once durable (per `SyncMode`) and visible.
//! - The data directory cannot lie: every record and header is checksummed, and the manifest
//!   records every shard's segments, their lengths and revisions (`manifest.rs`). On open,
//!   anything acknowledged that is damaged or missing (a cut, erased or overwritten file, a
//!   missing or extra segment, a bad `SHARDS` or `COMPACTED`) fails with `Error::Corrupt`
//!   naming the file, the offset and the revisions, and changes nothing; only a torn last
//!   batch that was never synced is dropped, and logged (`shard/recovery.rs`, `FORMAT.md`).
//!   `Options::repair` keeps the valid prefix and reports what it drops.
//! - No revision is handed out twice, whatever is lost: revisions stay below a ceiling the
//!   manifest records ahead of them (`keeper.rs`).
//! - Private: files are created 0600 and directories 0700 whatever the umask, and looser modes
//!   found on open are reduced (`io/mod.rs`).
//! - Fail-stop: the first failed `pwrite`, `fdatasync` or segment creation stops writes on
//!   every shard (`Error::Failed`, reported by `Engine::health`); reads keep working. The
//!   writes that failed leave nothing visible: no index entry, no event, and (when the disk
//!   still allows) no bytes that a restart would find (`health.rs`, `shard/flush.rs`).
//! - Every queue and buffer is bounded (`limits.rs`).
//! - A list page costs O(limit + log n) once its snapshot's rank marks exist; a full list of a
//!   big store streams shards through a merge in parallel (`list.rs`).
//!
//! Module map:
//! - `engine`: `Engine` (open, close, stats, health, maintenance) and `impl Store`;
//! - `shard/`: one hash bucket of keys: `recovery`, `write` (admission, pending batches),
//!   `flush` (group commit, linger, sync, fail-stop), `read`, `compaction`, `history`;
//! - `sequencer`: global revisions and their visible order; `watch`: the event ring and
//!   watchers; `list`: cross-shard merges and rank marks;
//! - `segment`: one segment file and its mapping; `format`: the bytes (`FORMAT.md`);
//!   `index`: version chains; `value`: zero-copy values;
//! - `manifest`: the `MANIFEST` bytes; `keeper`: the live manifest and the revision ceiling;
//!   `meta`: the store directory's `SHARDS`, `COMPACTED` and `MANIFEST` checked together on
//!   open; `report`: what an open found and did (`RecoveryReport`);
//! - `io/`: the I/O seam. Every file and directory operation goes through `io::Io` (from
//!   `Options::io`): `RealIo` makes the system calls (the default; no extra copy or call),
//!   `io::fault::FaultIo` fails chosen calls and models power loss for tests;
//! - `health`: the fail-stop latch; `error`, `limits`, `options`, `pending`, `revision`;
//! - `store`: the backend-neutral `Store` trait, which `model::MemStore` also implements.
//!
//! Dependencies: no HTTP server, no async runtime. `Pending` (a std `Future` that can also be
//! waited on by a thread) and `Watcher::poll_batch` (std `Waker`) are the only async seams.

pub mod check;
pub mod engine;
pub mod error;
pub mod format;
pub mod health;
pub mod index;
pub mod io;
pub mod keeper;
pub mod limits;
pub mod list;
pub mod manifest;
mod meta;
pub mod model;
pub mod options;
pub mod pending;
pub mod report;
pub mod restore;
mod sched;
pub mod segment;
pub mod sequencer;
pub mod shard;
pub mod snapshot;
pub mod store;
pub mod value;
pub mod watch;

pub use engine::Engine;
pub use error::{Error, WatchError};
pub use health::Failure;
pub use keel_revision::Revision;
pub use limits::Limits;
pub use model::MemStore;
pub use options::{Options, SyncMode};
pub use pending::{Completion, Pending};
pub use report::{RecoveryNote, RecoveryReport};
pub use store::{
    BoxError, Capabilities, Event, EventKind, EventStream, KeyValue, ListRequest, ListResult,
    Precondition, ReadAt, Stats, Store, StoreExt, ValueBuilder, WriteContext, WriteOp, Written,
};
pub use value::Value;
pub use watch::{HistorySource, Hub, Watcher};
