//! Recovery: opens every segment of a shard directory, verifies it, truncates a torn tail of
//! the newest segment, and rebuilds the index (see `FORMAT.md`, "Recovery").

use super::ShardIndex;
use crate::format::{self, Op, Record, BATCH_HEADER_LEN, SEGMENT_HEADER_LEN};
use crate::index::{compact_chain, Chain, IndexKey, KeyMap, Loc, Version};
use crate::io::Io;
use crate::segment::{self, Segment};
use crate::{Error, Limits, Revision};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The state recovered from a shard directory.
pub struct Recovered {
    pub index: ShardIndex,
    pub active: Arc<Segment>,
    pub max_rev: Revision,
    pub(super) next_seq: u64,
    pub(super) next_id: u32,
}

pub(super) fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> Error {
    Error::Corrupt {
        segment: path.to_path_buf(),
        offset,
        reason: reason.into(),
    }
}

/// Opens every segment of a shard directory (which must exist), verifies it, truncates a
/// torn tail of the newest segment, and rebuilds the index (compacted at `compacted`).
pub fn recover(
    io: &dyn Io,
    id: usize,
    dir: &Path,
    limits: &Limits,
    compacted: Revision,
) -> Result<Recovered, Error> {
    let mut files: Vec<(u64, PathBuf)> = Vec::new();
    for name in io.list_dir(dir)? {
        if name.ends_with(".tmp") {
            // An unfinished segment rewrite: the original is still in place.
            io.remove_file(&dir.join(&name))?;
        } else if let Some(seq) = segment::parse_segment_file_name(&name) {
            files.push((seq, dir.join(&name)));
        }
    }
    files.sort();
    let mut segs: Vec<Arc<Segment>> = Vec::new();
    let mut next_id = 0u32;
    let n_files = files.len();
    for (i, (seq, path)) in files.into_iter().enumerate() {
        let seg = match Segment::open(io, next_id, &path) {
            Ok(s) => s,
            Err(Error::Corrupt { .. }) if i + 1 == n_files && file_is_zero(io, &path)? => {
                // Crashed while creating the segment, before its header was synced.
                io.remove_file(&path)?;
                io.sync_dir(dir)?;
                continue;
            }
            Err(e) => return Err(e),
        };
        if seg.header.seq != seq || seg.header.shard as usize != id {
            return Err(corrupt(
                &path,
                0,
                format!(
                    "header says shard {} segment {}, file is shard {id} segment {seq}",
                    seg.header.shard, seg.header.seq
                ),
            ));
        }
        next_id += 1;
        segs.push(Arc::new(seg));
    }
    let mut entries: Vec<(&[u8], Version)> = Vec::new();
    let mut max_rev = Revision::ZERO;
    for (i, seg) in segs.iter().enumerate() {
        let bytes = seg.bytes();
        let mut bad: Option<Error> = None;
        let end = format::scan_segment(
            bytes,
            |off, h| {
                seg.note_batch(
                    off,
                    h.first,
                    h.last,
                    off + BATCH_HEADER_LEN as u64 + h.len as u64,
                )
            },
            |r: &Record<'_>| {
                if bad.is_some() {
                    return;
                }
                if r.revision <= max_rev {
                    bad = Some(corrupt(
                        &seg.path,
                        r.offset,
                        format!(
                            "revision {} not above the shard's previous {max_rev}",
                            r.revision
                        ),
                    ));
                    return;
                }
                max_rev = r.revision;
                if r.op == Op::Nop {
                    return;
                }
                let loc = Loc {
                    seg: seg.id,
                    off: r.offset as u32,
                    value_len: r.value.len() as u32,
                    tombstone: r.op == Op::Delete,
                };
                seg.live_bytes.fetch_add(
                    format::record_span(r.key.len(), r.value.len()) as u64,
                    Ordering::Relaxed,
                );
                entries.push((r.key, Version::new(r.revision, loc)));
            },
        );
        if let Some(e) = bad {
            return Err(e);
        }
        match end {
            format::ScanEnd::Clean { end } => seg.data_end.store(end, Ordering::Release),
            // The newest segment holding data may end torn. Segments after it can exist
            // only empty: a writer rolled over (creating the next segment) while the flusher
            // was still writing this one's last batch when the process died.
            format::ScanEnd::TornTail { valid_end }
                if segs[i + 1..].iter().all(|s| segment_is_empty(s)) =>
            {
                seg.zero_tail(valid_end)?;
                seg.data_end.store(valid_end, Ordering::Release);
            }
            format::ScanEnd::TornTail { valid_end } => {
                return Err(corrupt(
                    &seg.path,
                    valid_end,
                    "bad batch in a sealed segment",
                ))
            }
            format::ScanEnd::Corrupt { offset, reason } => {
                return Err(corrupt(&seg.path, offset, reason))
            }
        }
    }
    // Stable sort by key keeps each key's versions in revision order; building the map from
    // sorted input packs its nodes.
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut keys = KeyMap::new();
    let mut versions = 0u64;
    let mut live_keys = 0u64;
    let mut dropped = Vec::new();
    let seg_by_id = |id: u32| &segs[id as usize];
    let mut i = 0;
    let mut built: Vec<(IndexKey, Chain)> = Vec::new();
    while i < entries.len() {
        let key = entries[i].0;
        let mut chain = Chain::new();
        while i < entries.len() && entries[i].0 == key {
            chain.push(entries[i].1);
            i += 1;
        }
        dropped.clear();
        let empty = compact_chain(&mut chain, compacted, &mut dropped);
        for v in &dropped {
            let loc = v.loc();
            let span = format::record_span(key.len(), loc.value_len as usize) as u64;
            seg_by_id(loc.seg)
                .live_bytes
                .fetch_sub(span, Ordering::Relaxed);
        }
        if empty {
            continue;
        }
        versions += chain.len() as u64;
        if !chain.last().expect("non-empty").is_tombstone() {
            live_keys += 1;
        }
        built.push((IndexKey::from_slice(key), chain));
    }
    drop(entries);
    keys.extend(built);
    let last_seq = segs.last().map(|s| s.header.seq).unwrap_or(0);
    let mut index = ShardIndex {
        keys,
        segs: Vec::new(),
        order: BTreeMap::new(),
        live_keys,
        versions,
    };
    for s in &segs {
        index.add_segment(s.clone());
    }
    let reusable = segs.last().filter(|s| {
        !s.is_rewritten() && s.data_end.load(Ordering::Acquire) + 64 * 1024 < s.capacity()
    });
    let (active, next_seq) = match reusable {
        Some(s) => (s.clone(), last_seq + 1),
        None => {
            let seg = Arc::new(new_segment(
                io,
                id,
                dir,
                next_id,
                last_seq + 1,
                limits.segment_bytes,
            )?);
            next_id += 1;
            index.add_segment(seg.clone());
            (seg, last_seq + 2)
        }
    };
    Ok(Recovered {
        index,
        active,
        max_rev,
        next_seq,
        next_id,
    })
}

/// Whether a segment holds no batch at all (header, then zeros).
fn segment_is_empty(seg: &Segment) -> bool {
    let b = seg.bytes();
    b[SEGMENT_HEADER_LEN..].iter().all(|&x| x == 0)
}

fn file_is_zero(io: &dyn Io, path: &Path) -> std::io::Result<bool> {
    let b = io.read(path)?;
    Ok(b.iter().all(|&x| x == 0))
}

pub(super) fn new_segment(
    io: &dyn Io,
    shard: usize,
    dir: &Path,
    id: u32,
    seq: u64,
    size: u64,
) -> Result<Segment, Error> {
    if id >= crate::index::SEGMENT_IDS_MAX {
        return Err(Error::Failed(format!(
            "shard {shard} ran out of segment ids"
        )));
    }
    let header = format::SegmentHeader {
        shard: shard as u32,
        seq,
        flags: 0,
        compacted: Revision::ZERO,
    };
    Ok(Segment::create(io, id, dir, header, size, None)?)
}
