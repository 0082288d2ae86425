//! Engine errors. Operating errors are values; programmer errors are assertions.
//!
//! The API server maps these to `metav1.Status` in one place: `AlreadyExists` → 409
//! AlreadyExists, `Conflict` → 409 Conflict, `NotFound` → 404, `Compacted` → 410 Gone,
//! `FutureRevision` → 504 "Too large resource version", `Busy` → 429, limits → 413/422,
//! `Failed` (the engine stopped after an I/O error) and anything else → 500.

use crate::Revision;
use std::fmt;
use std::path::PathBuf;

/// What an operation on the store can fail with.
#[derive(Debug)]
pub enum Error {
    /// `create` on a key that exists (at the latest revision).
    AlreadyExists {
        revision: Revision,
    },
    /// Update or delete of a key that does not exist, or a precondition on a missing key.
    NotFound,
    /// A revision precondition did not hold: the key's current mod revision is `actual`.
    Conflict {
        expected: Revision,
        actual: Revision,
    },
    /// The requested revision is older than the compacted revision: its history is gone.
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    /// The requested revision has not been committed yet.
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    KeyTooLarge {
        len: usize,
        max: usize,
    },
    ValueTooLarge {
        len: usize,
        max: usize,
    },
    EmptyKey,
    TooManyWatchers {
        max: usize,
    },
    /// A shard's unflushed bytes are at their bound: retry later (HTTP 429).
    Busy,
    /// The value builder refused to produce a value; nothing was written.
    Aborted(Box<dyn std::error::Error + Send + Sync>),
    /// `Engine::open` found acknowledged data damaged or missing (anything but a torn,
    /// unacknowledged last batch): `file` (a segment, `MANIFEST`, `SHARDS`, `COMPACTED`, or a
    /// shard directory) from `offset` on; the revisions whose records are lost, when known.
    /// Nothing was changed; `Options::repair` keeps the valid prefix and reports the rest.
    Corrupt {
        file: PathBuf,
        offset: u64,
        revisions: crate::report::Revisions,
        reason: String,
    },
    Io(std::io::Error),
    /// A write failed, or was refused, because an I/O error on a write path stopped the engine
    /// (fail-stop: no write after a failed write or sync, on any shard). The text is the
    /// `health::Failure`; `Engine::health` returns it typed.
    Failed(String),
    /// The engine is shut down.
    Closed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::AlreadyExists { revision } => {
                write!(f, "key already exists (revision {revision})")
            }
            Error::NotFound => write!(f, "key not found"),
            Error::Conflict { expected, actual } => write!(
                f,
                "revision precondition failed: expected {expected}, current {actual}"
            ),
            Error::Compacted {
                requested,
                compacted,
            } => write!(
                f,
                "revision {requested} has been compacted (oldest available is {compacted})"
            ),
            Error::FutureRevision { requested, current } => write!(
                f,
                "revision {requested} is newer than the current revision {current}"
            ),
            Error::KeyTooLarge { len, max } => write!(f, "key of {len} bytes exceeds {max}"),
            Error::ValueTooLarge { len, max } => write!(f, "value of {len} bytes exceeds {max}"),
            Error::EmptyKey => write!(f, "empty key"),
            Error::TooManyWatchers { max } => write!(f, "too many watchers (max {max})"),
            Error::Busy => write!(f, "store is busy flushing; retry"),
            Error::Aborted(e) => write!(f, "write aborted: {e}"),
            Error::Corrupt {
                file,
                offset,
                revisions,
                reason,
            } => write!(
                f,
                "damaged store: {} at offset {offset}{}: {reason} (nothing was changed; a \
                 repair keeps everything before it and reports what it drops)",
                file.display(),
                crate::report::show_revisions(revisions)
            ),
            Error::Io(e) => write!(f, "I/O error: {e}"),
            Error::Failed(why) => write!(f, "engine stopped after an I/O failure: {why}"),
            Error::Closed => write!(f, "engine closed"),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

/// Why a watch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchError {
    /// The watcher fell more than its backlog bound behind the newest event (or the events it
    /// still needed left the ring). The server answers with a watch `ERROR` event / 410.
    Lagged {
        behind_events: u64,
        max: u64,
    },
    /// The start revision is older than the compacted revision.
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    /// Reading history from disk failed.
    Io(String),
    Closed,
}

impl fmt::Display for WatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchError::Lagged { behind_events, max } => write!(
                f,
                "watcher fell {behind_events} events behind (bound {max}); restart the watch"
            ),
            WatchError::Compacted {
                requested,
                compacted,
            } => write!(
                f,
                "revision {requested} has been compacted (oldest available is {compacted})"
            ),
            WatchError::Io(e) => write!(f, "reading watch history failed: {e}"),
            WatchError::Closed => write!(f, "engine closed"),
        }
    }
}

impl std::error::Error for WatchError {}
