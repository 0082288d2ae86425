//! The offline check of a store directory (`keel-admin check`): the verification
//! `Engine::open` runs (`meta.rs`, `shard/recovery.rs`), in its repair mode's planning step,
//! which goes on past damage, but only planning: it runs over `ReadOnlyIo`, which opens
//! every file read-only and refuses every call that would change the directory, so a check
//! cannot modify what it checks, by construction.
//!
//! It reports every problem it finds, each with its file and offset (and the revisions when
//! known): damage to each metadata file, the first damage of each shard's log, and, because
//! an open's repair stops judging a shard's log at its first damage, each later segment of
//! that log checked again on its own (against the manifest's entries from that segment on),
//! so that two damaged segments in one shard are both named. Within one segment nothing past
//! the first damage can be trusted (the batches have no resynchronisation marks), so a
//! segment yields at most one finding.
//!
//! Notes are not damage: what the next open does by itself (drops a torn, never acknowledged
//! last batch, deletes leftovers, tightens modes, upgrades a version-1 store).

use crate::io::{DirLock, FileIo, Io, Mapping};
use crate::manifest::Entry;
use crate::meta::{self, Layout, Shards};
use crate::report::{show_revisions, Revisions};
use crate::shard::{self, Listing, Problem};
use crate::{segment, Error};
use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Acknowledged data damaged or missing: `Engine::open` refuses the store.
    Damage,
    /// Something the next open handles by itself.
    Note,
}

/// One thing the check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub file: PathBuf,
    pub offset: u64,
    pub revisions: Revisions,
    pub reason: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.severity {
            Severity::Damage => "DAMAGE",
            Severity::Note => "note",
        };
        write!(
            f,
            "{what}: {} at offset {}{}: {}",
            self.file.display(),
            self.offset,
            show_revisions(&self.revisions),
            self.reason
        )
    }
}

/// Everything a check found.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub findings: Vec<Finding>,
    pub shards: usize,
    /// Segment files looked at.
    pub segments: usize,
}

impl CheckReport {
    /// No damage (notes allowed).
    pub fn is_clean(&self) -> bool {
        self.damage().next().is_none()
    }

    pub fn damage(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Damage)
    }

    fn add(&mut self, severity: Severity, p: Problem) {
        let f = Finding {
            severity,
            file: p.file,
            offset: p.offset,
            revisions: p.revisions,
            reason: p.reason,
        };
        if !self.findings.contains(&f) {
            self.findings.push(f);
        }
    }

    fn add_error(&mut self, e: Error) -> Result<(), Error> {
        match e {
            Error::Corrupt {
                file,
                offset,
                revisions,
                reason,
            } => {
                // One finding per metadata file: the open's own checks may name it again.
                if !self.findings.iter().any(|f| f.file == file) {
                    self.add(
                        Severity::Damage,
                        Problem {
                            file,
                            offset,
                            revisions,
                            reason,
                        },
                    );
                }
                Ok(())
            }
            other => Err(other),
        }
    }
}

/// Checks the store in `dir` without changing it. `Err` only when it cannot be checked (not
/// a directory, an I/O error, or an engine has it open).
pub fn check(dir: &Path) -> Result<CheckReport, Error> {
    if !dir.is_dir() {
        return Err(Error::Io(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{}: not a directory", dir.display()),
        )));
    }
    let _lock = lock_shared(dir)?;
    let io = ReadOnlyIo;
    let mut report = CheckReport::default();

    // The store's own files, each on its own, then together (as the open checks them).
    let shards_file = meta::read_shards(&io, dir);
    let compacted = meta::read_compacted(&io, dir);
    let manifest = meta::read_manifest(&io, dir);
    for e in [
        shards_file.as_ref().err(),
        compacted.as_ref().err(),
        manifest.as_ref().err(),
    ]
    .into_iter()
    .flatten()
    {
        report.add_error(clone_corrupt(e))?;
    }
    if let Ok(Shards::V1(_)) = shards_file {
        report.add(
            Severity::Note,
            problem(
                dir.join(meta::SHARDS_FILE),
                "a format version 1 store: the next open upgrades it",
            ),
        );
    }
    if let Err(e) = meta::load(&io, dir, 1, false) {
        report.add_error(e)?;
    }
    let loaded = meta::load(&io, dir, 1, true)?;
    report.shards = loaded.shards;

    for i in 0..loaded.shards {
        let sdir = dir.join(shard::shard_dir_name(i));
        let entries: &[Entry] = match &loaded.layout {
            Layout::Listed(m) => &m.shards[i],
            _ => &[],
        };
        let listing = match &loaded.layout {
            Layout::Listed(m) => Listing::Manifest {
                entries,
                clean: m.clean,
            },
            Layout::Fresh => Listing::Manifest {
                entries: &[],
                clean: false,
            },
            Layout::Upgrade | Layout::Rebuild => Listing::Scan,
        };
        check_shard(&io, i, &sdir, listing, entries, &mut report)?;
    }
    check_modes(dir, loaded.shards, &mut report)?;
    Ok(report)
}

fn check_shard(
    io: &ReadOnlyIo,
    id: usize,
    dir: &Path,
    listing: Listing<'_>,
    entries: &[Entry],
    report: &mut CheckReport,
) -> Result<(), Error> {
    report.segments += io
        .list_dir(dir)
        .map(|names| {
            names
                .iter()
                .filter(|n| segment::parse_segment_file_name(n).is_some())
                .count()
        })
        .unwrap_or(0);
    let plan = shard::verify(io, id, dir, listing, true)?;
    let mut f = plan.findings();
    for p in f.leftovers.drain(..) {
        report.add(
            Severity::Note,
            problem(
                p,
                "a leftover the next open deletes (never held acknowledged data)",
            ),
        );
    }
    let mut after = std::mem::take(&mut f.after_damage);
    let mut judged = f;
    // Each later segment of a damaged log, judged on its own from its manifest entry on.
    loop {
        for p in judged.damage.drain(..) {
            report.add(Severity::Damage, p);
        }
        if let Some(t) = judged.torn.take() {
            report.add(Severity::Note, t);
        }
        let Listing::Manifest { clean, .. } = listing else {
            for (file, revisions) in after {
                report.add(
                    Severity::Damage,
                    Problem {
                        file,
                        offset: 0,
                        revisions,
                        reason: "follows damaged data in the shard's log (not checked \
                                 further: no manifest to check it against)"
                            .into(),
                    },
                );
            }
            return Ok(());
        };
        let Some(seq) = after
            .first()
            .and_then(|(p, _)| p.file_name())
            .and_then(|n| segment::parse_segment_file_name(&n.to_string_lossy()))
        else {
            return Ok(());
        };
        let from = entries
            .iter()
            .position(|e| e.seq == seq)
            .unwrap_or(entries.len());
        let rest = &entries[from..];
        let ours: HashSet<PathBuf> = rest
            .iter()
            .map(|e| dir.join(segment::segment_file_name(e.seq)))
            .collect();
        let plan = shard::verify(
            io,
            id,
            dir,
            Listing::Manifest {
                entries: rest,
                clean,
            },
            true,
        )?;
        let mut f = plan.findings();
        // The earlier segments are not in this partial listing: not damage.
        f.damage.retain(|p| ours.contains(&p.file));
        after = std::mem::take(&mut f.after_damage);
        judged = f;
    }
}

/// Modes looser than the engine's: the next open reduces them.
fn check_modes(dir: &Path, shards: usize, report: &mut CheckReport) -> Result<(), Error> {
    let mut paths = vec![(dir.to_path_buf(), crate::io::DIR_MODE)];
    for name in ReadOnlyIo.list_dir(dir)? {
        let p = dir.join(&name);
        if p.is_file() {
            paths.push((p, crate::io::FILE_MODE));
        }
    }
    for i in 0..shards {
        let sdir = dir.join(shard::shard_dir_name(i));
        let Ok(names) = ReadOnlyIo.list_dir(&sdir) else {
            continue;
        };
        paths.push((sdir.clone(), crate::io::DIR_MODE));
        paths.extend(
            names
                .into_iter()
                .map(|n| (sdir.join(n), crate::io::FILE_MODE)),
        );
    }
    for (p, max) in paths {
        let mode = std::fs::metadata(&p)?.permissions().mode() & 0o7777;
        if mode & !max != 0 {
            report.add(
                Severity::Note,
                problem(
                    p,
                    format!(
                        "mode {mode:04o} grants others access; the next open sets {:04o}",
                        mode & max
                    ),
                ),
            );
        }
    }
    Ok(())
}

fn problem(file: PathBuf, reason: impl Into<String>) -> Problem {
    Problem {
        file,
        offset: 0,
        revisions: None,
        reason: reason.into(),
    }
}

/// A copy of a `Corrupt` error (the I/O ones are returned as they are).
fn clone_corrupt(e: &Error) -> Error {
    match e {
        Error::Corrupt {
            file,
            offset,
            revisions,
            reason,
        } => Error::Corrupt {
            file: file.clone(),
            offset: *offset,
            revisions: revisions.clone(),
            reason: reason.clone(),
        },
        other => Error::Io(io::Error::other(other.to_string())),
    }
}

/// A shared lock on `<dir>/LOCK` if there is one, so that a check never runs beside an
/// engine that has the store open (and holds it exclusively); none is created.
fn lock_shared(dir: &Path) -> Result<Option<File>, Error> {
    let f = match File::open(dir.join("LOCK")) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    // SAFETY: flock on a file descriptor we own; no memory is involved.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    if rc != 0 {
        return Err(Error::Io(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!(
                "{} is open by a running engine: stop the server first (or take a snapshot)",
                dir.display()
            ),
        )));
    }
    Ok(Some(f))
}

/// The file system, read only: files are opened for reading, and every call that would
/// create, change, rename, remove or sync anything fails.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOnlyIo;

fn refused(what: &str, path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("read-only check: refusing to {what} {}", path.display()),
    )
}

struct ReadOnlyFile(File);

impl FileIo for ReadOnlyFile {
    fn write_all_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Err(refused("write", Path::new("a file")))
    }
    fn sync_data(&self) -> io::Result<()> {
        Err(refused("sync", Path::new("a file")))
    }
    fn sync_all(&self) -> io::Result<()> {
        Err(refused("sync", Path::new("a file")))
    }
    fn set_len(&self, _: u64) -> io::Result<()> {
        Err(refused("resize", Path::new("a file")))
    }
    fn map(&self) -> io::Result<Mapping> {
        Mapping::of_file(&self.0)
    }
}

impl Io for ReadOnlyIo {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        Err(refused("create", dir))
    }
    fn restrict_mode(&self, path: &Path, _: u32) -> io::Result<Option<u32>> {
        Err(refused("change the mode of", path))
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn create(&self, path: &Path, _: bool) -> io::Result<Box<dyn FileIo>> {
        Err(refused("create", path))
    }
    fn open(&self, path: &Path) -> io::Result<Box<dyn FileIo>> {
        Ok(Box::new(ReadOnlyFile(File::open(path)?)))
    }
    fn rename(&self, from: &Path, _: &Path) -> io::Result<()> {
        Err(refused("rename", from))
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        Err(refused("remove", path))
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        Err(refused("sync", dir))
    }
    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn DirLock>> {
        Err(refused("lock", dir))
    }
}
