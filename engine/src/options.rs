//! Engine options.

use crate::Limits;
use std::path::PathBuf;
use std::time::Duration;

/// When a write counts as durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// `fdatasync` before acknowledging (group commit: concurrent writes share one sync).
    Always,
    /// Acknowledge once written to the OS (page cache). Survives a process crash, not a power
    /// loss. For caches and benchmarks.
    None,
}

impl std::str::FromStr for SyncMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "always" => Ok(SyncMode::Always),
            "none" => Ok(SyncMode::None),
            _ => Err(format!(
                "unknown sync mode {s:?} (expected \"always\" or \"none\")"
            )),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    pub dir: PathBuf,
    /// Number of shards; fixed when the store is created (stored in `<dir>/shards`).
    pub shards: usize,
    pub sync: SyncMode,
    /// How long every version is kept for exact-revision reads and watch resumption.
    pub history: Duration,
    /// How often the background task compacts history older than `history` and rewrites
    /// sparse segments. `None` disables background maintenance (tests drive it by hand).
    pub maintenance_interval: Option<Duration>,
    /// Segments whose live bytes fall below this fraction of their size are rewritten.
    pub rewrite_live_ratio: f64,
    pub limits: Limits,
}

impl Options {
    /// Defaults: one shard per core, `SyncMode::Always`, 5 minutes of history.
    pub fn new(dir: impl Into<PathBuf>) -> Options {
        Options {
            dir: dir.into(),
            shards: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            sync: SyncMode::Always,
            history: crate::limits::HISTORY_DEFAULT,
            maintenance_interval: Some(Duration::from_secs(10)),
            rewrite_live_ratio: crate::limits::REWRITE_LIVE_RATIO_DEFAULT,
            limits: Limits::default(),
        }
    }
}
