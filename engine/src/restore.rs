//! Restore: a new store directory from a snapshot file (`snapshot.rs`), in which every key has
//! the mod revision it had in the snapshot, the current revision is the snapshot's revision R,
//! and the first write gets a revision above R (never one a client may have seen).
//!
//! How (nothing is written before the whole snapshot verified):
//! 1. Read the snapshot once, checking its SHA-256, framing and count; keep only each record's
//!    (revision, offset, shard): 24 bytes a key.
//! 2. In a staging directory beside the target (`.<name>.restoring`), write each shard's log:
//!    its records in revision order (the engine's invariant 1), in batches, in pre-sized
//!    segment files, each `fdatasync`ed; values are copied from a read-only mapping of the
//!    snapshot, so memory stays at one batch.
//! 3. Write `SHARDS`, `COMPACTED` = R (the snapshot holds no history before R: reads and
//!    watches from older revisions answer 410, as after a compaction), and last a clean
//!    `MANIFEST` whose ceiling is R, each atomically.
//! 4. Rename the staging directory to the target (atomic: a crash leaves either nothing or the
//!    whole store) and sync the parent.
//! 5. Open the new store with `Engine::open` (which verifies every byte against the manifest)
//!    and check its revision and key count, then close it.
//!
//! Files are 0600 and directories 0700, as the engine creates them (`io`).

use crate::format::{self, Op, BATCH_HEADER_LEN, SEGMENT_HEADER_LEN};
use crate::io::{FileIo, Io, Mapping};
use crate::keeper::{write_atomically, MANIFEST_FILE};
use crate::manifest::{Entry, Manifest, ENTRY_ACTIVE};
use crate::meta::{compacted_bytes, shards_bytes, COMPACTED_FILE, SHARDS_FILE};
use crate::segment::segment_file_name;
use crate::shard::{shard_dir_name, shard_for_key};
use crate::snapshot::{read_snapshot, ReadError, SnapshotSummary};
use crate::{Engine, Error, Limits, Options, Revision, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to restore, and into which directory.
#[derive(Clone, Debug)]
pub struct RestoreOptions {
    pub snapshot: PathBuf,
    /// The new store directory: must not exist, or be empty.
    pub dir: PathBuf,
    /// Shards of the new store (a store's shard count is fixed at creation).
    pub shards: usize,
    pub limits: Limits,
    pub io: Arc<dyn Io>,
}

impl RestoreOptions {
    /// Defaults as `Options::new`: one shard per core, the default limits, the real file
    /// system.
    pub fn new(snapshot: impl Into<PathBuf>, dir: impl Into<PathBuf>) -> RestoreOptions {
        let o = Options::new("");
        RestoreOptions {
            snapshot: snapshot.into(),
            dir: dir.into(),
            shards: o.shards,
            limits: o.limits,
            io: o.io,
        }
    }
}

/// What a restore wrote.
#[derive(Clone, Debug)]
pub struct Restored {
    pub summary: SnapshotSummary,
    pub shards: usize,
    pub segments: usize,
    /// The revision the restored store's first write gets.
    pub next_revision: Revision,
}

/// Why a restore refused or failed. Nothing is left at the target unless the restore
/// succeeded (a staging directory may be left beside it after a crash or an I/O error).
#[derive(Debug)]
pub enum RestoreError {
    /// The target exists and is not an empty directory.
    TargetNotEmpty(PathBuf),
    /// The snapshot is damaged or incomplete.
    Snapshot(ReadError),
    /// The snapshot holds something the store cannot (a key too long for the limits).
    Unfit(String),
    Io(std::io::Error),
    /// The restored store did not open as written (a bug, or the disk lost the writes).
    Verify(Error),
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RestoreError::TargetNotEmpty(p) => write!(
                f,
                "{} exists and is not an empty directory: restore writes a new data directory",
                p.display()
            ),
            RestoreError::Snapshot(e) => write!(f, "{e}; nothing was written"),
            RestoreError::Unfit(why) => write!(f, "{why}; nothing was written"),
            RestoreError::Io(e) => write!(f, "I/O error: {e}"),
            RestoreError::Verify(e) => write!(f, "the restored store does not verify: {e}"),
        }
    }
}

impl std::error::Error for RestoreError {}

impl From<std::io::Error> for RestoreError {
    fn from(e: std::io::Error) -> Self {
        RestoreError::Io(e)
    }
}

/// One record to place: its revision, where it is in the snapshot, its shard.
#[derive(Clone, Copy)]
struct Place {
    rev: Revision,
    offset: u64,
    shard: u32,
}

pub fn restore(opts: &RestoreOptions) -> Result<Restored, RestoreError> {
    let io = &*opts.io;
    check_target(&opts.dir)?;
    if opts.shards == 0 || opts.shards > crate::limits::SHARDS_MAX {
        return Err(RestoreError::Unfit(format!(
            "shards must be between 1 and {}",
            crate::limits::SHARDS_MAX
        )));
    }
    // 1. Verify the whole snapshot and learn where each record goes.
    let mut places: Vec<Place> = Vec::new();
    let mut file = std::fs::File::open(&opts.snapshot)?;
    let (key_max, value_max) = (opts.limits.key_bytes_max, opts.limits.value_bytes_max);
    let summary = read_snapshot(&mut file, &mut |r| {
        if r.key.len() > key_max || r.value.len() > value_max {
            return Err(format!(
                "record {:?}: key of {} bytes or value of {} bytes above the store's limits \
                 ({key_max}, {value_max})",
                String::from_utf8_lossy(r.key),
                r.key.len(),
                r.value.len()
            ));
        }
        places.push(Place {
            rev: r.mod_revision,
            offset: r.offset,
            shard: shard_for_key(r.key, opts.shards) as u32,
        });
        Ok(())
    })
    .map_err(RestoreError::Snapshot)?;
    // Revisions are global: two keys never share one (a store with a repeat is damaged).
    places.sort_unstable_by_key(|p| p.rev);
    if let Some(w) = places.windows(2).find(|w| w[0].rev == w[1].rev) {
        return Err(RestoreError::Unfit(format!(
            "two records carry revision {} (at offsets {} and {})",
            w[0].rev, w[0].offset, w[1].offset
        )));
    }
    let map = Mapping::of_file(&file)?;
    let snap = map.bytes();
    if snap.len() as u64 != summary.bytes {
        return Err(RestoreError::Unfit(
            "the snapshot file changed while it was read".into(),
        ));
    }

    // 2. The shards' logs, in a staging directory.
    let staging = staging_dir(&opts.dir)?;
    io.create_dir_all(&staging)?;
    let mut manifest = Manifest {
        generation: 1,
        ceiling: summary.header.revision,
        compacted: summary.header.revision,
        clean: true,
        shards: Vec::with_capacity(opts.shards),
    };
    let mut segments = 0;
    for shard in 0..opts.shards {
        let dir = staging.join(shard_dir_name(shard));
        io.create_dir_all(&dir)?;
        let recs = places.iter().filter(|p| p.shard as usize == shard);
        let entries = write_shard(io, shard, &dir, &opts.limits, snap, recs)?;
        segments += entries.len();
        io.sync_dir(&dir)?;
        manifest.shards.push(entries);
    }
    drop(places);
    // 3. The store's own files; the manifest last.
    write_atomically(io, &staging, SHARDS_FILE, &shards_bytes(opts.shards))?;
    write_atomically(
        io,
        &staging,
        COMPACTED_FILE,
        &compacted_bytes(summary.header.revision),
    )?;
    write_atomically(io, &staging, MANIFEST_FILE, &manifest.encode())?;
    io.sync_dir(&staging)?;
    // 4. Into place.
    io.rename(&staging, &opts.dir)?;
    io.sync_dir(parent_of(&opts.dir))?;
    // 5. Open it as the server will, and check what it says.
    let mut o = Options::new(&opts.dir);
    o.shards = opts.shards;
    o.limits = opts.limits.clone();
    o.io = opts.io.clone();
    o.maintenance_interval = None;
    let engine = Engine::open(o).map_err(RestoreError::Verify)?;
    let (rev, keys, next) = (
        engine.current_revision(),
        engine.stats().keys,
        engine.next_revision(),
    );
    engine.close().map_err(RestoreError::Verify)?;
    if rev != summary.header.revision || keys != summary.records {
        return Err(RestoreError::Verify(Error::Failed(format!(
            "opened at revision {rev} with {keys} keys; the snapshot is revision {} with {} keys",
            summary.header.revision, summary.records
        ))));
    }
    Ok(Restored {
        summary,
        shards: opts.shards,
        segments,
        next_revision: next,
    })
}

fn parent_of(dir: &Path) -> &Path {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn check_target(dir: &Path) -> Result<(), RestoreError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => Err(RestoreError::TargetNotEmpty(dir.to_path_buf())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !parent_of(dir).is_dir() {
                return Err(RestoreError::Io(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{}: no such directory", parent_of(dir).display()),
                )));
            }
            Ok(())
        }
        Err(_) if dir.exists() => Err(RestoreError::TargetNotEmpty(dir.to_path_buf())),
        Err(e) => Err(e.into()),
    }
}

/// `.<name>.restoring` beside `dir`; refuses a leftover one (an earlier restore that failed:
/// the operator removes it).
fn staging_dir(dir: &Path) -> Result<PathBuf, RestoreError> {
    let name = dir
        .file_name()
        .ok_or_else(|| RestoreError::Unfit(format!("{}: not a directory name", dir.display())))?;
    let staging = parent_of(dir).join(format!(".{}.restoring", name.to_string_lossy()));
    if staging.exists() {
        return Err(RestoreError::TargetNotEmpty(staging));
    }
    Ok(staging)
}

/// The segment being filled.
struct Open {
    file: Box<dyn FileIo>,
    seq: u64,
    size: u64,
    /// End of the data written so far.
    end: u64,
    first: Revision,
    last: Revision,
}

/// Writes one shard's records (in revision order) into segments; returns their manifest
/// entries, the last one active.
fn write_shard<'a>(
    io: &dyn Io,
    shard: usize,
    dir: &Path,
    limits: &Limits,
    snap: &[u8],
    recs: impl Iterator<Item = &'a Place>,
) -> Result<Vec<Entry>, RestoreError> {
    let mut entries = Vec::new();
    let mut seg: Option<Open> = None;
    let mut batch: Vec<u8> = vec![0u8; BATCH_HEADER_LEN];
    let (mut count, mut first, mut last) = (0u32, Revision::ZERO, Revision::ZERO);
    let mut next_seq = 1u64;
    for p in recs {
        let (key, value) = record_at(snap, p.offset);
        let span = format::record_span(key.len(), value.len());
        // The batch is full, or would not fit the segment's room: write it out first.
        let room = seg
            .as_ref()
            .map_or(limits.segment_bytes - SEGMENT_HEADER_LEN as u64, |s| {
                s.size - s.end
            }) as usize;
        let cap = crate::limits::RESTORE_BATCH_BYTES.min(room);
        if count > 0 && batch.len() + span > cap {
            put_batch(
                io,
                shard,
                dir,
                limits,
                &mut seg,
                &mut entries,
                &mut next_seq,
                &mut batch,
                count,
                first,
                last,
            )?;
            count = 0;
        }
        format::encode_record::<std::convert::Infallible>(
            &mut batch,
            p.rev,
            Revision::ZERO,
            Op::Put,
            key,
            |b| {
                b.extend_from_slice(value);
                Ok(())
            },
        )
        .expect("infallible");
        if count == 0 {
            first = p.rev;
        }
        last = p.rev;
        count += 1;
    }
    if count > 0 {
        put_batch(
            io,
            shard,
            dir,
            limits,
            &mut seg,
            &mut entries,
            &mut next_seq,
            &mut batch,
            count,
            first,
            last,
        )?;
    }
    let open = match seg {
        Some(s) => s,
        None => new_segment(io, shard, dir, next_seq, limits.segment_bytes)?,
    };
    entries.push(seal(open, ENTRY_ACTIVE)?);
    Ok(entries)
}

#[allow(clippy::too_many_arguments)]
fn put_batch(
    io: &dyn Io,
    shard: usize,
    dir: &Path,
    limits: &Limits,
    seg: &mut Option<Open>,
    entries: &mut Vec<Entry>,
    next_seq: &mut u64,
    batch: &mut Vec<u8>,
    count: u32,
    first: Revision,
    last: Revision,
) -> Result<(), RestoreError> {
    format::seal_batch(batch, count, first, last);
    let len = batch.len() as u64;
    if seg.as_ref().is_some_and(|s| s.end + len > s.size) {
        let full = seg.take().expect("checked");
        entries.push(seal(full, 0)?);
    }
    if seg.is_none() {
        let size = limits
            .segment_bytes
            .max((SEGMENT_HEADER_LEN as u64 + len).next_multiple_of(4096));
        *seg = Some(new_segment(io, shard, dir, *next_seq, size)?);
        *next_seq += 1;
    }
    let s = seg.as_mut().expect("just opened");
    s.file.write_all_at(batch, s.end)?;
    s.end += len;
    if s.first == Revision::ZERO {
        s.first = first;
    }
    s.last = last;
    batch.clear();
    batch.resize(BATCH_HEADER_LEN, 0);
    Ok(())
}

fn new_segment(
    io: &dyn Io,
    shard: usize,
    dir: &Path,
    seq: u64,
    size: u64,
) -> Result<Open, RestoreError> {
    let header = format::SegmentHeader {
        shard: shard as u32,
        seq,
        flags: 0,
        compacted: Revision::ZERO,
        size,
    };
    let file = io.create(&dir.join(segment_file_name(seq)), true)?;
    file.set_len(size)?;
    file.write_all_at(&header.encode(), 0)?;
    Ok(Open {
        file,
        seq,
        size,
        end: SEGMENT_HEADER_LEN as u64,
        first: Revision::ZERO,
        last: Revision::ZERO,
    })
}

/// Syncs a finished segment; its manifest entry.
fn seal(s: Open, flags: u32) -> Result<Entry, RestoreError> {
    s.file.sync_all()?;
    Ok(Entry {
        flags,
        seq: s.seq,
        end: s.end,
        size: s.size,
        first: s.first,
        last: s.last,
    })
}

/// The key and value of the (verified) snapshot record at `offset`.
fn record_at(snap: &[u8], offset: u64) -> (&[u8], &[u8]) {
    let at = offset as usize;
    let key_len = format::get_u32(snap, at + 1) as usize;
    let value_len = format::get_u32(snap, at + 5) as usize;
    let start = at + crate::snapshot::SNAP_RECORD_HEAD_LEN;
    (
        &snap[start..start + key_len],
        &snap[start + key_len..start + key_len + value_len],
    )
}
