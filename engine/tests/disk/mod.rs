//! Damage done to a one-shard store's files, shared by the damaged-disk matrix (`damage.rs`)
//! and the offline check's tests (`check.rs`): the kinds of damage, where each is applied,
//! and the helpers that find segments and batches.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use keel_engine::format::{self, ScanEnd, BATCH_OFF_LEN, REC_OFF_REV, SEG_OFF_SEQ};
use std::path::{Path, PathBuf};

/// xorshift64*: deterministic damage.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

pub fn shard_dir(store: &Path) -> PathBuf {
    store.join("shard-000")
}

pub fn segment_files(store: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(shard_dir(store)) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    v.sort();
    v
}

/// Batches of a segment: (start, end, offsets of their records).
pub fn batches(path: &Path) -> Vec<(usize, usize, Vec<usize>)> {
    let b = std::fs::read(path).unwrap();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut records: Vec<usize> = Vec::new();
    let end = format::scan_segment(
        &b,
        |off, h| {
            let start = off as usize;
            spans.push((start, start + format::BATCH_HEADER_LEN + h.len as usize))
        },
        |r| records.push(r.offset as usize),
    );
    assert!(matches!(end, ScanEnd::Clean { .. }), "{path:?}: {end:?}");
    spans
        .into_iter()
        .map(|(s, e)| {
            let recs = records
                .iter()
                .copied()
                .filter(|&r| s < r && r < e)
                .collect();
            (s, e, recs)
        })
        .collect()
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    TruncateHalf,
    TruncateFewBytes,
    /// The last batch's bytes zeroed: looks exactly like a batch never written.
    ZeroLastBatch,
    /// A range in the middle of the data.
    ZeroMiddle,
    /// The last batch overwritten with random bytes.
    OverwriteRandom,
    FlipSegmentHeader,
    /// A bit of the last record's revision.
    FlipRecord,
    /// A bit of the last batch header's length.
    FlipBatchHeader,
    FlipCompacted,
    FlipShards,
    FlipManifest,
    DeleteSegment,
    /// A copy of the segment under a sequence number the manifest does not list.
    ExtraSegment,
}

pub const DAMAGES: [Damage; 13] = [
    Damage::TruncateHalf,
    Damage::TruncateFewBytes,
    Damage::ZeroLastBatch,
    Damage::ZeroMiddle,
    Damage::OverwriteRandom,
    Damage::FlipSegmentHeader,
    Damage::FlipRecord,
    Damage::FlipBatchHeader,
    Damage::FlipCompacted,
    Damage::FlipShards,
    Damage::FlipManifest,
    Damage::DeleteSegment,
    Damage::ExtraSegment,
];

pub fn edit(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut b = std::fs::read(path).unwrap();
    f(&mut b);
    std::fs::write(path, &b).unwrap();
}

/// Applies `d` to the segment `seg` (or a store file); returns the file the open must name.
pub fn apply(d: Damage, store: &Path, seg: &Path, rng: &mut Rng) -> PathBuf {
    let bs = batches(seg);
    let last = bs.last().unwrap().clone();
    match d {
        Damage::TruncateHalf | Damage::TruncateFewBytes => {
            let len = std::fs::metadata(seg).unwrap().len();
            let to = if d == Damage::TruncateHalf {
                len / 2
            } else {
                len - 5
            };
            let f = std::fs::OpenOptions::new().write(true).open(seg).unwrap();
            f.set_len(to).unwrap();
        }
        Damage::ZeroLastBatch => edit(seg, |b| b[last.0..last.1].fill(0)),
        Damage::ZeroMiddle => {
            let mid = &bs[bs.len() / 2];
            edit(seg, |b| b[mid.0 + 8..mid.1 - 8].fill(0))
        }
        Damage::OverwriteRandom => edit(seg, |b| {
            for x in &mut b[last.0..last.1] {
                *x = rng.next() as u8;
            }
        }),
        Damage::FlipSegmentHeader => edit(seg, |b| b[SEG_OFF_SEQ + 1] ^= 0x10),
        Damage::FlipRecord => {
            let rec = *last.2.last().unwrap();
            edit(seg, |b| b[rec + REC_OFF_REV] ^= 0x01)
        }
        Damage::FlipBatchHeader => edit(seg, |b| b[last.0 + BATCH_OFF_LEN] ^= 0x08),
        Damage::FlipCompacted => {
            let p = store.join("COMPACTED");
            edit(&p, |b| b[2] ^= 0x04);
            return p;
        }
        Damage::FlipShards => {
            let p = store.join("SHARDS");
            edit(&p, |b| b[0] ^= 0x02);
            return p;
        }
        Damage::FlipManifest => {
            let p = store.join("MANIFEST");
            let n = std::fs::metadata(&p).unwrap().len() as usize;
            let at = (rng.next() as usize) % n;
            edit(&p, |b| b[at] ^= 1 << (rng.next() % 8));
            return p;
        }
        Damage::DeleteSegment => std::fs::remove_file(seg).unwrap(),
        Damage::ExtraSegment => {
            // After the newest one, or (for an older one) before the first.
            let segs = segment_files(store);
            let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_string();
            let seq = |p: &Path| u64::from_str_radix(name(p).trim_end_matches(".seg"), 16).unwrap();
            let newest = seq(segs.last().unwrap());
            let extra_seq = if seq(seg) == newest { newest + 1 } else { 0 };
            let extra = shard_dir(store).join(format!("{extra_seq:016x}.seg"));
            std::fs::copy(seg, &extra).unwrap();
            return extra;
        }
    }
    seg.to_path_buf()
}
