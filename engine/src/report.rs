//! What `Engine::open` found and did about it, beyond the plain case: torn tails dropped,
//! damaged data dropped by a repair, leftovers removed, permissions tightened, an upgrade.
//! Each note is logged (a `keel-engine:` line on standard error) when it is made, and the
//! whole report stays readable from `Engine::recovery_report`.

use crate::Revision;
use std::fmt;
use std::ops::RangeInclusive;
use std::path::PathBuf;

/// Revisions a note is about. Ranges come from batch headers and the manifest: the lost
/// records had revisions in them (not necessarily every revision of the range).
pub type Revisions = Option<RangeInclusive<Revision>>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecoveryNote {
    /// The last batch of a shard's log failed verification and lies past everything the
    /// manifest records as synced: a write interrupted by the crash, never acknowledged.
    /// Its bytes were zeroed.
    TornTail {
        segment: PathBuf,
        offset: u64,
        revisions: Revisions,
    },
    /// `Options::repair` dropped acknowledged data: `file` from `offset` on (0: the whole
    /// file). A copy of what was dropped is kept at `kept_as` when there was anything to keep.
    Dropped {
        file: PathBuf,
        offset: u64,
        revisions: Revisions,
        reason: String,
        kept_as: Option<PathBuf>,
    },
    /// A segment file created for a rollover that a crash interrupted before it held any data
    /// (or a segment whose deletion a crash interrupted): removed.
    RemovedUnused { segment: PathBuf },
    /// `Options::repair` rewrote a damaged metadata file from what the store still holds.
    Rebuilt { file: PathBuf, reason: String },
    /// A file or directory granted more than its owner access: its mode was reduced.
    Tightened { path: PathBuf, was: u32, now: u32 },
    /// The store was written by an older format version; its metadata now is version `to`.
    Upgraded { from: u32, to: u32 },
    /// The last run did not close cleanly, or data (or the manifest) was lost: revisions it
    /// may have handed out stay unused; the next write gets `next`.
    RevisionsSkipped {
        last_on_disk: Revision,
        next: Revision,
    },
}

impl fmt::Display for RecoveryNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecoveryNote::TornTail {
                segment,
                offset,
                revisions,
            } => write!(
                f,
                "dropped a torn, unacknowledged last batch at offset {offset} of {}{}",
                segment.display(),
                Revs(revisions)
            ),
            RecoveryNote::Dropped {
                file,
                offset,
                revisions,
                reason,
                kept_as,
            } => {
                write!(
                    f,
                    "repair: dropped {} from offset {offset}{} ({reason})",
                    file.display(),
                    Revs(revisions)
                )?;
                match kept_as {
                    Some(k) => write!(f, "; the original is kept as {}", k.display()),
                    None => Ok(()),
                }
            }
            RecoveryNote::RemovedUnused { segment } => write!(
                f,
                "removed {}, a segment that never received data (interrupted rollover or removal)",
                segment.display()
            ),
            RecoveryNote::Rebuilt { file, reason } => {
                write!(f, "repair: rewrote {} ({reason})", file.display())
            }
            RecoveryNote::Tightened { path, was, now } => write!(
                f,
                "{} had mode {was:04o}; set to {now:04o} (the store holds secrets)",
                path.display()
            ),
            RecoveryNote::Upgraded { from, to } => {
                write!(f, "upgraded the store from format version {from} to {to}")
            }
            RecoveryNote::RevisionsSkipped { last_on_disk, next } => write!(
                f,
                "the newest revision on disk is {last_on_disk}, but the last run (not closed \
                 cleanly, or its data damaged) may have handed out revisions up to {}: they \
                 stay unused, the next write gets {next}",
                Revision(next.0 - 1)
            ),
        }
    }
}

/// ", revisions a..=b" or nothing.
struct Revs<'a>(&'a Revisions);

impl fmt::Display for Revs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(r) if r.start() == r.end() => write!(f, ", revision {}", r.start()),
            Some(r) => write!(f, ", revisions {}..={}", r.start(), r.end()),
            None => Ok(()),
        }
    }
}

/// Everything `Engine::open` noted, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub notes: Vec<RecoveryNote>,
}

impl RecoveryReport {
    /// Records and logs a note.
    pub fn note(&mut self, n: RecoveryNote) {
        eprintln!("keel-engine: {n}");
        self.notes.push(n);
    }

    /// Whether anything acknowledged was dropped (only a repair does that).
    pub fn dropped_data(&self) -> bool {
        self.notes
            .iter()
            .any(|n| matches!(n, RecoveryNote::Dropped { .. }))
    }
}

/// Formats a revision range the way error messages and notes show it.
pub fn show_revisions(r: &Revisions) -> String {
    Revs(r).to_string()
}
