//! The engine's fail-stop latch. The first I/O error on a write path (a failed `pwrite`,
//! `fdatasync` or segment creation) stops writes on every shard: after a failed sync the
//! kernel may already have dropped the unsaved pages and will report success for the next
//! sync of the same file, so nothing written afterwards could be trusted to be durable (the
//! lesson PostgreSQL and etcd took: stop, and recover from the disk on restart). Reads keep
//! working. The failure stays readable for the server's `/readyz` and `/livez`
//! (`Engine::health`).

use parking_lot::Mutex;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why the engine stopped accepting writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The shard whose write path failed; `None` for the store's own files (`MANIFEST`).
    pub shard: Option<usize>,
    /// What failed: "pwrite", "fdatasync", "creating a segment" or "writing MANIFEST".
    pub operation: &'static str,
    /// The file (or shard directory) it failed on, for the operator's log. Not in `Display`,
    /// whose text reaches API clients in `Error::Failed`.
    pub path: Option<PathBuf>,
    /// The OS error number (`EIO`, `ENOSPC`, ...) when the failure was an OS error.
    pub errno: Option<i32>,
    pub message: String,
}

impl Failure {
    pub fn io(
        shard: impl Into<Option<usize>>,
        operation: &'static str,
        path: Option<PathBuf>,
        e: &std::io::Error,
    ) -> Failure {
        Failure {
            shard: shard.into(),
            operation,
            path,
            errno: e.raw_os_error(),
            message: e.to_string(),
        }
    }

    pub fn other(shard: usize, operation: &'static str, message: String) -> Failure {
        Failure {
            shard: Some(shard),
            operation,
            path: None,
            errno: None,
            message,
        }
    }

    /// The disk (or the user's quota) is full: freeing space and restarting recovers, unlike
    /// `EIO`, which calls for checking the disk.
    pub fn is_no_space(&self) -> bool {
        matches!(self.errno, Some(libc::ENOSPC) | Some(libc::EDQUOT))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.shard {
            Some(s) => write!(f, "shard {s}: ")?,
            None => write!(f, "store: ")?,
        }
        write!(f, "{} failed: {}", self.operation, self.message)
    }
}

/// The latch: unset while healthy, then the first failure forever.
#[derive(Default)]
pub struct Health {
    /// Whether `first` is set: the write path reads this flag, not the mutex.
    failed: AtomicBool,
    first: Mutex<Option<Failure>>,
}

impl Health {
    /// `Err` with the first failure once any shard failed.
    pub fn check(&self) -> Result<(), Failure> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(self
            .first
            .lock()
            .clone()
            .expect("failed is set after first"))
    }

    /// Records `f` unless a failure is recorded already; returns the failure in force.
    pub fn fail(&self, f: Failure) -> Failure {
        let mut first = self.first.lock();
        let kept = first.get_or_insert(f).clone();
        self.failed.store(true, Ordering::Release);
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_is_kept() {
        let h = Health::default();
        assert_eq!(h.check(), Ok(()));
        let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let eio = std::io::Error::from_raw_os_error(libc::EIO);
        let first = h.fail(Failure::io(1, "fdatasync", Some("/x".into()), &enospc));
        assert!(first.is_no_space());
        let kept = h.fail(Failure::io(0, "pwrite", None, &eio));
        assert_eq!(kept, first);
        assert_eq!(h.check(), Err(first.clone()));
        let text = first.to_string();
        assert!(text.starts_with("shard 1: fdatasync failed: "), "{text}");
        assert!(!text.contains("/x"), "no path in the client's text: {text}");
    }
}
