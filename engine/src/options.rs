//! Engine options.

use crate::io::{Io, RealIo};
use crate::Limits;
use std::path::PathBuf;
use std::sync::Arc;
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
    /// With `SyncMode::Always`: how long a busy shard waits for more writes before a sync
    /// (group commit linger; `Duration::ZERO` syncs as soon as the flusher is free). A lone
    /// writer is never delayed; see `Shard::flusher_loop`.
    pub commit_linger: Duration,
    /// When set, a busy shard lingers only while this answers true: the server passes
    /// "the serving cores are saturated", so that syncs are amortised only when their CPU is
    /// needed elsewhere and a lightly loaded server commits at once. `None`: linger whenever
    /// the shard is busy.
    pub commit_linger_gate: Option<fn() -> bool>,
    /// How long every version is kept for exact-revision reads and watch resumption.
    pub history: Duration,
    /// How often the background task compacts history older than `history` and rewrites
    /// sparse segments. `None` disables background maintenance (tests drive it by hand).
    pub maintenance_interval: Option<Duration>,
    /// Segments whose live bytes fall below this fraction of their size are rewritten.
    pub rewrite_live_ratio: f64,
    pub limits: Limits,
    /// Every file and directory operation goes through this (`io.rs`): the operating system
    /// (`RealIo`) unless a test passes a fault-injecting one (`io::fault::FaultIo`).
    pub io: Arc<dyn Io>,
    /// Open a damaged store anyway: keep each shard's valid prefix, set aside what follows
    /// (`<file>.dropped`), and report exactly what was dropped (files, offsets, revisions:
    /// `Engine::recovery_report`, and a log line each). Without it, damage to acknowledged
    /// data fails the open with `Error::Corrupt` and changes nothing.
    pub repair: bool,
}

impl Options {
    /// Defaults: one shard per core, `SyncMode::Always` with a 500 µs commit linger, 5 minutes
    /// of history.
    pub fn new(dir: impl Into<PathBuf>) -> Options {
        Options {
            dir: dir.into(),
            shards: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            sync: SyncMode::Always,
            commit_linger: crate::limits::COMMIT_LINGER_DEFAULT,
            commit_linger_gate: None,
            history: crate::limits::HISTORY_DEFAULT,
            maintenance_interval: Some(Duration::from_secs(10)),
            rewrite_live_ratio: crate::limits::REWRITE_LIVE_RATIO_DEFAULT,
            limits: Limits::default(),
            io: Arc::new(RealIo),
            repair: false,
        }
    }
}
