//! A segment file: pre-sized, written with `pwrite`, read through a read-only shared mapping.
//!
//! Appends go through the file (`io::FileIo`) into the page cache, which the `MAP_SHARED`
//! mapping observes; readers only look at byte ranges that were written (and, under
//! `SyncMode::Always`, synced) before the index pointed at them.

use crate::format::{self, SegmentHeader, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use crate::index::Version;
use crate::io::{FileIo, Io, Mapping};
use crate::value::{Backing, Value};
use crate::{KeyValue, Revision};
use parking_lot::Mutex;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Keep a checkpoint (first revision of a batch → offset) at least this far apart, so a
/// watch resuming from an old revision seeks instead of scanning a whole segment.
pub const CHECKPOINT_EVERY_BYTES: u64 = 256 * 1024;

pub struct Segment {
    /// Process-local id, referenced by index locations. Never reused while the engine runs.
    pub id: u32,
    pub header: SegmentHeader,
    pub path: PathBuf,
    file: Box<dyn FileIo>,
    map: Mapping,
    /// End of the written (and verified or synced) data.
    pub data_end: AtomicU64,
    /// Bytes of records still referenced by the index.
    pub live_bytes: AtomicU64,
    pub min_rev: AtomicU64,
    pub max_rev: AtomicU64,
    /// (first revision of a batch, batch offset), ascending, sparse.
    pub checkpoints: Mutex<Vec<(Revision, u64)>>,
    /// How far the data is known to be on disk (synced, or read back at open), and the
    /// revisions up to there: what the manifest may record. One lock so that the three agree.
    durable: Mutex<Extent>,
}

/// A prefix of a segment's data and the revisions in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extent {
    /// End of the prefix (at least the header's end).
    pub end: u64,
    /// Lowest and highest revision in it; 0 when it holds none.
    pub first: Revision,
    pub last: Revision,
}

impl Backing for Segment {
    fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }
}

/// A key-value view of the version `v` (whose key is `key_len` bytes long) in `seg`: points
/// into the mapping, copies nothing.
pub fn kv_at(seg: &Arc<Segment>, key_len: usize, v: &Version) -> KeyValue {
    let loc = v.loc();
    let start = loc.off as usize + RECORD_HEADER_LEN;
    let view = &seg.bytes()[start..start + key_len + loc.value_len as usize];
    let backing: Arc<dyn Backing> = seg.clone();
    KeyValue::new_trusted(Value::of_view(backing, view), key_len, v.rev)
}

pub fn segment_file_name(seq: u64) -> String {
    format!("{seq:016x}.seg")
}

/// Parses `<16 hex>.seg`.
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    let hex = name.strip_suffix(".seg")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

impl Segment {
    /// Creates `<dir>/<seq>.seg` (or `path` if given), sized `size`, with its header written.
    /// The file and directory are synced so the segment survives a crash once used.
    pub fn create(
        io: &dyn Io,
        id: u32,
        dir: &Path,
        header: SegmentHeader,
        size: u64,
        path: Option<PathBuf>,
    ) -> io::Result<Segment> {
        let path = path.unwrap_or_else(|| dir.join(segment_file_name(header.seq)));
        let header = SegmentHeader { size, ..header };
        let file = io.create(&path, true)?;
        file.set_len(size)?;
        file.write_all_at(&header.encode(), 0)?;
        file.sync_all()?;
        io.sync_dir(dir)?;
        let map = file.map()?;
        let seg = Segment::from_parts(id, header, path, file, map, SEGMENT_HEADER_LEN as u64);
        seg.durable.lock().end = SEGMENT_HEADER_LEN as u64;
        Ok(seg)
    }

    /// Opens an existing segment; the caller scans and verifies it.
    pub fn open(io: &dyn Io, id: u32, path: &Path) -> Result<Segment, crate::Error> {
        let file = io.open(path)?;
        let map = file.map()?;
        let header =
            SegmentHeader::decode(map.bytes()).map_err(|reason| crate::Error::Corrupt {
                file: path.to_path_buf(),
                offset: 0,
                revisions: None,
                reason,
            })?;
        Ok(Segment::from_parts(
            id,
            header,
            path.to_path_buf(),
            file,
            map,
            0,
        ))
    }

    fn from_parts(
        id: u32,
        header: SegmentHeader,
        path: PathBuf,
        file: Box<dyn FileIo>,
        map: Mapping,
        data_end: u64,
    ) -> Segment {
        Segment {
            id,
            header,
            path,
            file,
            map,
            data_end: AtomicU64::new(data_end),
            live_bytes: AtomicU64::new(0),
            min_rev: AtomicU64::new(u64::MAX),
            max_rev: AtomicU64::new(0),
            checkpoints: Mutex::new(Vec::new()),
            durable: Mutex::new(Extent {
                end: SEGMENT_HEADER_LEN as u64,
                ..Extent::default()
            }),
        }
    }

    pub fn capacity(&self) -> u64 {
        self.map.bytes().len() as u64
    }

    pub fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }

    pub fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        assert!(
            offset + buf.len() as u64 <= self.capacity(),
            "write of {} bytes at {offset} past segment capacity {}",
            buf.len(),
            self.capacity()
        );
        self.file.write_all_at(buf, offset)
    }

    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    pub fn is_rewritten(&self) -> bool {
        self.header.flags & format::SEG_FLAG_REWRITTEN != 0
    }

    /// Notes a batch written at `offset` with revisions `first..=last` and ending at `end`.
    pub fn note_batch(&self, offset: u64, first: Revision, last: Revision, end: u64) {
        self.min_rev.fetch_min(first.0, Ordering::Relaxed);
        self.max_rev.fetch_max(last.0, Ordering::Relaxed);
        let mut cps = self.checkpoints.lock();
        let far = cps
            .last()
            .is_none_or(|&(_, at)| offset >= at + CHECKPOINT_EVERY_BYTES);
        if far {
            cps.push((first, offset));
        }
        drop(cps);
        self.data_end.fetch_max(end, Ordering::Release);
    }

    /// Records that the batches up to `end`, the last holding revisions up to `last`, are on
    /// disk (synced). `first` is the first revision of the batch that ends at `end`.
    pub fn mark_durable(&self, end: u64, first: Revision, last: Revision) {
        let mut d = self.durable.lock();
        assert!(
            end >= d.end,
            "durable end of {} moved back",
            self.path.display()
        );
        if d.first == Revision::ZERO {
            d.first = first;
        }
        d.end = end;
        d.last = d.last.max(last);
    }

    /// Syncs the segment (if `sync`) and records all its data as durable: a rollover or a
    /// clean close, nothing is being written to it. (Without `sync`, `SyncMode::None`, durable
    /// means against a process crash.)
    pub fn seal(&self, sync: bool) -> io::Result<()> {
        if sync {
            self.file.sync_data()?;
        }
        let end = self.data_end.load(Ordering::Acquire);
        let (min, max) = (
            self.min_rev.load(Ordering::Relaxed),
            self.max_rev.load(Ordering::Relaxed),
        );
        if max > 0 {
            self.mark_durable(end, Revision(min), Revision(max));
        } else {
            self.durable.lock().end = end;
        }
        Ok(())
    }

    /// Records all its data as durable without syncing (recovery: read back from disk, and
    /// synced before the run that wrote it went on to a later segment).
    pub fn assume_durable(&self) {
        let end = self.data_end.load(Ordering::Acquire);
        let max = self.max_rev.load(Ordering::Relaxed);
        let mut d = self.durable.lock();
        d.end = end;
        if max > 0 {
            d.first = Revision(self.min_rev.load(Ordering::Relaxed));
            d.last = Revision(max);
        }
    }

    /// What `mark_durable` recorded.
    pub fn durable(&self) -> Extent {
        *self.durable.lock()
    }

    /// Offset of a batch at or before the first batch that can hold a revision > `after`.
    pub fn seek(&self, after: Revision) -> u64 {
        let cps = self.checkpoints.lock();
        let i = cps.partition_point(|&(first, _)| first <= after);
        if i == 0 {
            SEGMENT_HEADER_LEN as u64
        } else {
            cps[i - 1].1
        }
    }

    /// Zeroes `[from, end of non-zero data)` and syncs: removes a torn tail.
    pub fn zero_tail(&self, from: u64) -> io::Result<()> {
        let b = self.bytes();
        let last_nonzero = b
            .iter()
            .rposition(|&x| x != 0)
            .map(|p| p as u64 + 1)
            .unwrap_or(0);
        if last_nonzero > from {
            let zeros = vec![0u8; 1 << 20];
            let mut at = from;
            while at < last_nonzero {
                let n = (last_nonzero - at).min(zeros.len() as u64) as usize;
                self.file.write_all_at(&zeros[..n], at)?;
                at += n as u64;
            }
            self.file.sync_data()?;
        }
        Ok(())
    }
}
