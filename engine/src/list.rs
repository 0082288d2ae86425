//! Lists: what a shard scan yields, the cross-shard merge, and the rank marks that make a
//! page's `remaining` count cheap.
//!
//! A list runs in three steps:
//! 1. Each shard walks its index range and records, per live key, only its `Version` and key
//!    length (a `Hit`, 24 bytes) and, when several shards are merged, the key's `sort_prefix`.
//!    It never touches the segment mappings and takes no reference count per item: the
//!    segments the hits point into are held once each (`ShardScan::segs`).
//! 2. `merge` picks the page's hits in key order across shards by comparing sort prefixes
//!    (registers, not memory) and builds a `KeyValue` only for the hits it keeps.
//! 3. If keys remain after the page, each shard counts its live keys after the page's last
//!    key with `RankMarks`: the rank of every `RANK_MARK_EVERY`-th live key of (prefix,
//!    snapshot), computed once per pair and cached, so a later page at that snapshot counts
//!    at most `RANK_MARK_EVERY` keys instead of the rest of the range.
//!
//! Why a snapshot's marks stay exact: a read at S is only served while S >= the compacted
//! revision, and neither compaction at C <= S, nor writes (revisions above every visible
//! one), nor segment rewrites (locations only) change which keys are live at S.

use crate::format::RECORD_HEADER_LEN;
use crate::index::Version;
use crate::segment::kv_at;
use crate::segment::Segment;
use crate::{KeyValue, Revision};
use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;

/// A live version found by a shard scan; becomes a `KeyValue` only if the merge keeps it.
#[derive(Clone, Copy, Debug)]
pub struct Hit {
    pub ver: Version,
    pub key_len: u32,
}

/// One shard's part of a list.
pub struct ShardScan {
    /// Live keys in key order, at most the requested cap.
    pub hits: Vec<Hit>,
    /// `sort_prefix` of each hit's key, when asked for (multi-shard merges).
    pub prefixes: Vec<u128>,
    /// The segments the hits point into, by segment id (ids are never reused while the
    /// engine runs, so one table serves every lock hold of the scan).
    segs: Vec<Option<Arc<Segment>>>,
    /// Whether a live key follows the last hit (only known for capped scans).
    pub more: bool,
}

impl ShardScan {
    pub fn with_capacity(n: usize, prefixes: bool) -> ShardScan {
        ShardScan {
            hits: Vec::with_capacity(n),
            prefixes: Vec::with_capacity(if prefixes { n } else { 0 }),
            segs: Vec::new(),
            more: false,
        }
    }

    /// Records that hits point into `seg` (holds it once for the whole scan).
    pub fn hold_segment(&mut self, seg: &Arc<Segment>) {
        let id = seg.id as usize;
        if self.segs.len() <= id {
            self.segs.resize(id + 1, None);
        }
        if self.segs[id].is_none() {
            self.segs[id] = Some(seg.clone());
        }
    }

    /// Whether `hold_segment` was called for segment `id`.
    pub fn holds_segment(&self, id: u32) -> bool {
        self.segs.get(id as usize).is_some_and(|s| s.is_some())
    }

    fn seg(&self, h: &Hit) -> &Arc<Segment> {
        self.segs[h.ver.loc().seg as usize]
            .as_ref()
            .expect("a hit's segment is held")
    }

    /// The `KeyValue` of hit `i`.
    pub fn kv(&self, i: usize) -> KeyValue {
        let h = &self.hits[i];
        kv_at(self.seg(h), h.key_len as usize, &h.ver)
    }

    /// The key of hit `i`, read from its segment.
    pub fn key(&self, i: usize) -> &[u8] {
        let h = &self.hits[i];
        let start = h.ver.loc().off as usize + RECORD_HEADER_LEN;
        &self.seg(h).bytes()[start..start + h.key_len as usize]
    }
}

/// A run of consecutive live keys of one shard, streamed to the merge (full lists of big
/// stores: see `stream_merge`). Chunks are recycled: their buffers are allocated once per list.
#[derive(Default)]
pub struct Chunk {
    pub kvs: VecDeque<KeyValue>,
    /// `sort_prefix` of each key, when several shards are merged.
    pub prefixes: VecDeque<u128>,
}

/// One shard's stream of chunks, as the merge sees it.
pub struct Stream {
    pub rx: Receiver<Chunk>,
    /// Empty chunks go back to the shard's scanner for reuse.
    pub back: SyncSender<Chunk>,
    cur: Chunk,
    done: bool,
}

impl Stream {
    pub fn new(rx: Receiver<Chunk>, back: SyncSender<Chunk>) -> Stream {
        Stream {
            rx,
            back,
            cur: Chunk::default(),
            done: false,
        }
    }

    /// Whether the stream has a head item, waiting for the next chunk if needed.
    fn ready(&mut self) -> bool {
        while self.cur.kvs.is_empty() && !self.done {
            match self.rx.recv() {
                Ok(next) => {
                    let mut old = std::mem::replace(&mut self.cur, next);
                    old.prefixes.clear();
                    // The scanner may have finished: then the chunk is simply dropped.
                    let _ = self.back.try_send(old);
                }
                Err(_) => self.done = true,
            }
        }
        !self.cur.kvs.is_empty()
    }

    fn pop(&mut self) -> KeyValue {
        self.cur.prefixes.pop_front();
        self.cur.kvs.pop_front().expect("a head item")
    }
}

/// Merges the chunk streams of several shards (or passes one through) into `out`, in key
/// order, comparing sort prefixes taken after `skip` bytes. Runs while the shards are still
/// scanning: the merge and the scans overlap.
pub fn stream_merge(streams: &mut [Stream], skip: usize, out: &mut Vec<KeyValue>) {
    loop {
        let mut best: Option<usize> = None;
        let mut ready = 0;
        for i in 0..streams.len() {
            if !streams[i].ready() {
                continue;
            }
            ready += 1;
            best = match best {
                Some(b) if !stream_less(&streams[i], &streams[b], skip) => Some(b),
                _ => Some(i),
            };
        }
        let Some(b) = best else { return };
        if ready == 1 {
            // The other streams are done: take this one's items as they come.
            let s = &mut streams[b];
            while s.ready() {
                out.extend(s.cur.kvs.drain(..));
                s.cur.prefixes.clear();
            }
            return;
        }
        out.push(streams[b].pop());
    }
}

fn stream_less(a: &Stream, b: &Stream, skip: usize) -> bool {
    let (pa, pb) = (a.cur.prefixes[0], b.cur.prefixes[0]);
    pa < pb || (pa == pb && a.cur.kvs[0].key()[skip..] < b.cur.kvs[0].key()[skip..])
}

/// Keys this far ahead in a batch are prefetched while a sort prefix is computed, so that
/// the cache misses of keys too long to sit inside the index's nodes (`KEY_INLINE_BYTES`)
/// overlap instead of queuing.
pub const PREFETCH_AHEAD: usize = 16;

/// Hints the CPU to fetch the cache line at `p` (no effect on correctness; never faults).
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it does not access memory architecturally and does
    // not fault on any address. SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Appends the sort prefixes of `keys` (see `sort_prefix`) to `out`, prefetching
/// `PREFETCH_AHEAD` keys ahead.
pub fn sort_prefixes<'a, I>(keys: I, skip: usize, out: &mut impl Extend<u128>)
where
    I: Iterator<Item = &'a [u8]> + Clone,
{
    let mut ahead = keys.clone().skip(PREFETCH_AHEAD);
    out.extend(keys.map(|k| {
        if let Some(a) = ahead.next() {
            prefetch(a.as_ptr().wrapping_add(skip.min(a.len())));
        }
        sort_prefix(k, skip)
    }));
}

/// The 16 bytes of `key` after its first `skip` bytes, big-endian, zero-padded: comparing two
/// of these orders keys correctly unless they are equal (then compare the keys).
pub fn sort_prefix(key: &[u8], skip: usize) -> u128 {
    let rest = key.get(skip..).unwrap_or(&[]);
    let n = rest.len();
    // Whole-word loads only (overlapping when shorter than a word): the scan computes this
    // for every key, right after a cache miss on it, and a per-byte loop (or a call to
    // `memcpy`) would mispredict on the length and stall the misses queued behind it.
    if let Some(b) = rest.first_chunk::<16>() {
        u128::from_be_bytes(*b)
    } else if n >= 8 {
        let hi = u64::from_be_bytes(rest[..8].try_into().expect("8 bytes")) as u128;
        let lo = u64::from_be_bytes(rest[n - 8..].try_into().expect("8 bytes")) as u128;
        hi << 64 | lo << (8 * (16 - n))
    } else if n >= 4 {
        let hi = u32::from_be_bytes(rest[..4].try_into().expect("4 bytes")) as u128;
        let lo = u32::from_be_bytes(rest[n - 4..].try_into().expect("4 bytes")) as u128;
        hi << 96 | lo << (8 * (16 - n))
    } else {
        rest.iter()
            .enumerate()
            .fold(0, |acc, (i, &b)| acc | (b as u128) << (8 * (15 - i)))
    }
}

/// Merges per-shard scans (each in key order; with sort prefixes taken after `skip` bytes when
/// there are several) into at most `limit` items (0 = all). Returns the items and whether
/// live keys remain after the last one.
///
/// Keys live in the segment mappings, scattered in write order: comparing them directly costs
/// a cache miss per comparison. Comparing the 16-byte prefixes the shard scans took from the
/// index keys keeps the merge in registers; only equal prefixes fall back to the keys.
pub fn merge(parts: &[ShardScan], limit: usize, skip: usize) -> (Vec<KeyValue>, bool) {
    let total: usize = parts.iter().map(|p| p.hits.len()).sum();
    let want = if limit == 0 { total } else { limit.min(total) };
    let more = total > want || parts.iter().any(|p| p.more);
    let mut out = Vec::with_capacity(want);
    if let [only] = parts {
        out.extend((0..want).map(|i| only.kv(i)));
        return (out, more);
    }
    let mut pos = vec![0usize; parts.len()];
    let less = |a: usize, ia: usize, b: usize, ib: usize| {
        let (pa, pb) = (parts[a].prefixes[ia], parts[b].prefixes[ib]);
        pa < pb || (pa == pb && parts[a].key(ia)[skip..] < parts[b].key(ib)[skip..])
    };
    while out.len() < want {
        let mut best = usize::MAX;
        let mut live = 0;
        for p in 0..parts.len() {
            if pos[p] == parts[p].hits.len() {
                continue;
            }
            live += 1;
            if best == usize::MAX || less(p, pos[p], best, pos[best]) {
                best = p;
            }
        }
        if live == 1 {
            // Only one shard has hits left: take the rest of the page from it.
            let n = (want - out.len()).min(parts[best].hits.len() - pos[best]);
            let p = &parts[best];
            out.extend((pos[best]..pos[best] + n).map(|i| p.kv(i)));
            break;
        }
        out.push(parts[best].kv(pos[best]));
        pos[best] += 1;
    }
    (out, more)
}

/// The rank (number of live keys at or before it) of every `RANK_MARK_EVERY`-th live key of
/// one prefix at one snapshot in one shard, and the total.
pub struct RankMarks {
    pub prefix: Box<[u8]>,
    pub at: Revision,
    pub total: u64,
    /// (key, rank of that key), ascending.
    pub marks: Vec<(Box<[u8]>, u64)>,
}

impl RankMarks {
    /// The nearest mark at or before `key`: (its key, its rank); `None` if `key` precedes
    /// every mark.
    pub fn floor(&self, key: &[u8]) -> Option<(&[u8], u64)> {
        let i = self.marks.partition_point(|(k, _)| **k <= *key);
        i.checked_sub(1)
            .map(|i| (&*self.marks[i].0, self.marks[i].1))
    }
}

/// A small most-recently-used cache of `RankMarks`, at most `RANK_CACHE_SNAPSHOTS_MAX`.
#[derive(Default)]
pub struct RankCache {
    entries: VecDeque<Arc<RankMarks>>,
}

impl RankCache {
    pub fn get(&mut self, prefix: &[u8], at: Revision) -> Option<Arc<RankMarks>> {
        let i = self
            .entries
            .iter()
            .position(|e| e.at == at && *e.prefix == *prefix)?;
        let e = self.entries.remove(i).expect("present");
        self.entries.push_front(e.clone());
        Some(e)
    }

    /// Adds `marks`, dropping entries below `compacted` (never asked for again) and the least
    /// recently used beyond the bound.
    pub fn insert(&mut self, marks: Arc<RankMarks>, compacted: Revision) {
        self.entries
            .retain(|e| e.at >= compacted && !(e.at == marks.at && *e.prefix == *marks.prefix));
        self.entries.push_front(marks);
        self.entries
            .truncate(crate::limits::RANK_CACHE_SNAPSHOTS_MAX);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The obvious byte-by-byte version.
    fn sort_prefix_reference(key: &[u8], skip: usize) -> u128 {
        let mut b = [0u8; 16];
        for (d, s) in b.iter_mut().zip(key.iter().skip(skip)) {
            *d = *s;
        }
        u128::from_be_bytes(b)
    }

    #[test]
    fn sort_prefix_matches_the_reference_at_every_length() {
        let key: Vec<u8> = (1..=40u8).map(|i| i.wrapping_mul(37)).collect();
        for len in 0..=key.len() {
            for skip in [0, 1, 3, 8, 17, 45] {
                let k = &key[..len];
                assert_eq!(
                    sort_prefix(k, skip),
                    sort_prefix_reference(k, skip),
                    "len {len} skip {skip}"
                );
            }
        }
    }

    #[test]
    fn sort_prefixes_with_prefetch_match_one_at_a_time() {
        let keys: Vec<Vec<u8>> = (0..3 * PREFETCH_AHEAD as u32)
            .map(|i| format!("/k/{:x}", i * 7919).into_bytes())
            .collect();
        for skip in [0, 3, 40] {
            let mut got = std::collections::VecDeque::new();
            sort_prefixes(keys.iter().map(|k| k.as_slice()), skip, &mut got);
            let want: Vec<u128> = keys.iter().map(|k| sort_prefix(k, skip)).collect();
            assert_eq!(got.into_iter().collect::<Vec<_>>(), want, "skip {skip}");
        }
    }

    #[test]
    fn sort_prefix_orders_like_the_keys() {
        let keys: [&[u8]; 7] = [
            b"/a/",
            b"/a/\x00",
            b"/a/b",
            b"/a/ba",
            b"/a/bb0123456789abcdef",
            b"/a/bb0123456789abcdeg",
            b"/a/c",
        ];
        for w in keys.windows(2) {
            assert!(sort_prefix(w[0], 3) <= sort_prefix(w[1], 3), "{w:?}");
        }
        // Equal only when the 16 bytes after the skip agree (then the keys decide).
        assert_eq!(sort_prefix(keys[4], 3), sort_prefix(keys[5], 3));
        assert!(sort_prefix(keys[0], 3) < sort_prefix(keys[2], 3));
        assert_eq!(sort_prefix(b"ab", 5), 0);
    }

    fn marks(at: u64, prefix: &[u8]) -> Arc<RankMarks> {
        Arc::new(RankMarks {
            prefix: prefix.into(),
            at: Revision(at),
            total: 3,
            marks: vec![(b"b".as_slice().into(), 1), (b"d".as_slice().into(), 2)],
        })
    }

    #[test]
    fn rank_floor_finds_the_mark_at_or_before() {
        let m = marks(1, b"");
        assert_eq!(m.floor(b"a"), None);
        assert_eq!(m.floor(b"b"), Some((b"b".as_slice(), 1)));
        assert_eq!(m.floor(b"c"), Some((b"b".as_slice(), 1)));
        assert_eq!(m.floor(b"z"), Some((b"d".as_slice(), 2)));
    }

    #[test]
    fn rank_cache_is_bounded_and_forgets_compacted_snapshots() {
        let mut c = RankCache::default();
        for at in 1..=(crate::limits::RANK_CACHE_SNAPSHOTS_MAX as u64 + 3) {
            c.insert(marks(at, b"p"), Revision::ZERO);
        }
        assert_eq!(c.len(), crate::limits::RANK_CACHE_SNAPSHOTS_MAX);
        assert!(c.get(b"p", Revision(1)).is_none(), "oldest evicted");
        let newest = crate::limits::RANK_CACHE_SNAPSHOTS_MAX as u64 + 3;
        assert!(c.get(b"p", Revision(newest)).is_some());
        assert!(
            c.get(b"q", Revision(newest)).is_none(),
            "keyed by prefix too"
        );
        c.insert(marks(newest + 1, b"p"), Revision(newest + 1));
        assert_eq!(c.len(), 1, "entries below the compacted revision dropped");
    }
}
