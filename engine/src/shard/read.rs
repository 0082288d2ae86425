//! Reads over a shard's index: get, scans and streams of live keys at a snapshot, counts
//! after a key (with the rank marks of `list.rs`), key bounds. Reads never take the writer
//! lock; they see only versions at or below the snapshot, which the sequencer made visible.

use super::{Shard, ShardIndex};
use crate::index::{version_at, IndexKey, Version};
use crate::list::{self, Hit, RankMarks, ShardScan};
use crate::segment::kv_at;
use crate::{Error, KeyValue, Revision};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The smallest and largest key of a range.
pub type KeyBounds = (Box<[u8]>, Box<[u8]>);

impl Shard {
    pub fn get(
        &self,
        key: &[u8],
        at: Revision,
        compacted: &AtomicU64,
    ) -> Result<Option<KeyValue>, Error> {
        let idx = self.index.read();
        check_compacted(at, compacted)?;
        let Some(v) = idx.keys.get(key).and_then(|c| version_at(c, at)) else {
            return Ok(None);
        };
        if v.is_tombstone() {
            return Ok(None);
        }
        Ok(Some(kv_at(idx.seg(v.loc().seg), key.len(), v)))
    }

    /// Scans the live keys under `prefix` after `start_after` at snapshot `at`: at most `cap`
    /// (0 = all), with their sort prefixes after `sort_skip` bytes if asked. Touches neither the
    /// segment mappings nor a reference count per key (see `list.rs`).
    pub fn scan(
        &self,
        prefix: &[u8],
        start_after: Option<&[u8]>,
        cap: usize,
        at: Revision,
        compacted: &AtomicU64,
        sort_skip: Option<usize>,
    ) -> Result<ShardScan, Error> {
        let hint = if cap == 0 {
            self.index.read().live_keys as usize
        } else {
            cap
        };
        let hint = hint.min(crate::limits::LIST_PREALLOC_ITEMS_MAX);
        let mut scan = ShardScan::with_capacity(hint, sort_skip.is_some());
        let end = prefix_successor(prefix);
        let (lower, upper) = prefix_bounds(prefix, start_after, end.as_deref());
        let more = self.walk_live(lower, upper, at, compacted, cap, |idx, batch| {
            if let Some(skip) = sort_skip {
                // A pass of its own: its key loads are independent, so their misses overlap.
                list::sort_prefixes(batch.iter().map(|(k, _)| *k), skip, &mut scan.prefixes);
            }
            for (k, v) in batch {
                let seg = v.loc().seg;
                if !scan.holds_segment(seg) {
                    scan.hold_segment(idx.seg(seg));
                }
                scan.hits.push(Hit {
                    ver: *v,
                    key_len: k.len() as u32,
                });
            }
            true
        })?;
        scan.more = more;
        Ok(scan)
    }

    /// Streams every live key under `prefix` after `start_after` at `at` to `send` as chunks
    /// of `KeyValue`s (with sort prefixes after `sort_skip` bytes if asked), one chunk per
    /// index lock hold, filling the chunks `spare` hands out. Stops early if `send` returns
    /// false (the receiver is gone).
    pub fn stream(
        &self,
        range: (&[u8], Option<&[u8]>),
        at: Revision,
        compacted: &AtomicU64,
        sort_skip: Option<usize>,
        mut spare: impl FnMut() -> list::Chunk,
        mut send: impl FnMut(list::Chunk) -> bool,
    ) -> Result<(), Error> {
        let (prefix, start_after) = range;
        let end = prefix_successor(prefix);
        let (lower, upper) = prefix_bounds(prefix, start_after, end.as_deref());
        self.walk_live(lower, upper, at, compacted, 0, |idx, batch| {
            if batch.is_empty() {
                return true;
            }
            let mut chunk = spare();
            if let Some(skip) = sort_skip {
                // A pass of its own: its key loads are independent, so their misses overlap.
                list::sort_prefixes(batch.iter().map(|(k, _)| *k), skip, &mut chunk.prefixes);
            }
            chunk.kvs.extend(
                batch
                    .iter()
                    .map(|(k, v)| kv_at(idx.seg(v.loc().seg), k.len(), v)),
            );
            send(chunk)
        })?;
        Ok(())
    }

    /// Live keys at `at` under `prefix` that sort after `key`: O(`RANK_MARK_EVERY` + log n)
    /// once the rank marks of (`prefix`, `at`) exist, O(n) to build them.
    pub fn count_after(
        &self,
        prefix: &[u8],
        key: &[u8],
        at: Revision,
        compacted: &AtomicU64,
    ) -> Result<u64, Error> {
        let marks = self.rank_marks(prefix, at, compacted)?;
        let end = prefix_successor(prefix);
        let (lower, base) = match marks.floor(key) {
            Some((k, rank)) => (Bound::Excluded(k), rank),
            None => (Bound::Included(prefix), 0),
        };
        let upper = match end.as_deref() {
            Some(e) if key >= e => Bound::Excluded(e),
            _ => Bound::Included(key),
        };
        let mut upto = 0u64;
        self.walk_live(lower, upper, at, compacted, 0, |_, batch| {
            upto += batch.len() as u64;
            true
        })?;
        Ok(marks.total.saturating_sub(base + upto))
    }

    /// Keys under `prefix` in the index (history included), counting at most `cap`: a cheap
    /// estimate of a range's size.
    pub fn keys_under_capped(&self, prefix: &[u8], cap: usize) -> usize {
        let end = prefix_successor(prefix);
        let (lower, upper) = prefix_bounds(prefix, None, end.as_deref());
        if range_is_empty(lower, upper) {
            return 0;
        }
        self.index
            .read()
            .keys
            .range::<[u8], _>((lower, upper))
            .take(cap)
            .count()
    }

    /// Whether the rank marks of (`prefix`, `at`) are cached (counting is then cheap).
    pub fn has_rank_marks(&self, prefix: &[u8], at: Revision) -> bool {
        self.ranks.lock().get(prefix, at).is_some()
    }

    /// The rank marks of (`prefix`, `at`), from the cache or built by one counting walk.
    fn rank_marks(
        &self,
        prefix: &[u8],
        at: Revision,
        compacted: &AtomicU64,
    ) -> Result<Arc<RankMarks>, Error> {
        if let Some(m) = self.ranks.lock().get(prefix, at) {
            check_compacted(at, compacted)?;
            return Ok(m);
        }
        let end = prefix_successor(prefix);
        let (lower, upper) = prefix_bounds(prefix, None, end.as_deref());
        let mut total = 0u64;
        let mut marks = Vec::new();
        self.walk_live(lower, upper, at, compacted, 0, |_, batch| {
            for (k, _) in batch {
                total += 1;
                if total.is_multiple_of(crate::limits::RANK_MARK_EVERY) {
                    marks.push((Box::<[u8]>::from(*k), total));
                }
            }
            true
        })?;
        let m = Arc::new(RankMarks {
            prefix: prefix.into(),
            at,
            total,
            marks,
        });
        let c = Revision(compacted.load(Ordering::Acquire));
        self.ranks.lock().insert(m.clone(), c);
        Ok(m)
    }

    /// Walks the keys in `(lower, upper)` live at `at`, in key order, holding the index read
    /// lock for at most `INDEX_STEP_KEYS` visited keys at a time, and hands each hold's live
    /// keys to `step` with the index they were read from; `step` returns false to stop the walk.
    /// Stops after `max` live keys (0 = no bound) and returns whether another live key follows
    /// them.
    fn walk_live<F>(
        &self,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        at: Revision,
        compacted: &AtomicU64,
        max: usize,
        mut step: F,
    ) -> Result<bool, Error>
    where
        F: FnMut(&ShardIndex, &[(&[u8], Version)]) -> bool,
    {
        const STEP: usize = crate::limits::INDEX_STEP_KEYS;
        if range_is_empty(lower, upper) {
            check_compacted(at, compacted)?;
            return Ok(false);
        }
        let mut cursor: Option<IndexKey> = None;
        let mut seen = 0usize;
        loop {
            let idx = self.index.read();
            check_compacted(at, compacted)?;
            let lo = match &cursor {
                Some(k) => Bound::Excluded(&**k),
                None => lower,
            };
            let room = if max == 0 { usize::MAX } else { max - seen };
            let mut batch: Vec<(&[u8], Version)> = Vec::with_capacity(room.min(STEP));
            let (mut visited, mut more, mut stopped_at) = (0, false, None);
            // The range bounds do the prefix test: key bytes are never touched here.
            for (k, chain) in idx.keys.range::<[u8], _>((lo, upper)) {
                if let Some(v) = version_at(chain, at).filter(|v| !v.is_tombstone()) {
                    if batch.len() == room {
                        more = true;
                        break;
                    }
                    batch.push((k, *v));
                }
                visited += 1;
                if visited == STEP {
                    stopped_at = Some(k.clone());
                    break;
                }
            }
            seen += batch.len();
            let go_on = step(&idx, &batch);
            drop(batch);
            drop(idx);
            match stopped_at {
                _ if !go_on => return Ok(false),
                Some(k) if !more => cursor = Some(k),
                _ => return Ok(more),
            }
        }
    }

    /// The smallest and largest keys in the index under `prefix` after `start_after` (deleted
    /// and future versions included: they bound every key a list can return).
    pub fn key_bounds(&self, prefix: &[u8], start_after: Option<&[u8]>) -> Option<KeyBounds> {
        let lower = match start_after.filter(|s| *s >= prefix) {
            Some(k) => Bound::Excluded(k),
            None => Bound::Included(prefix),
        };
        let end = prefix_successor(prefix);
        let upper = match &end {
            Some(e) => Bound::Excluded(&e[..]),
            None => Bound::Unbounded,
        };
        if let (Bound::Excluded(k), Bound::Excluded(e)) = (lower, upper) {
            if k >= e {
                return None;
            }
        }
        let idx = self.index.read();
        let mut r = idx.keys.range::<[u8], _>((lower, upper));
        let first: Box<[u8]> = r.next()?.0[..].into();
        let last = r
            .next_back()
            .map(|(k, _)| k[..].into())
            .unwrap_or_else(|| first.clone());
        Some((first, last))
    }
}

fn check_compacted(at: Revision, compacted: &AtomicU64) -> Result<(), Error> {
    let c = Revision(compacted.load(Ordering::Acquire));
    if at < c {
        return Err(Error::Compacted {
            requested: at,
            compacted: c,
        });
    }
    Ok(())
}

/// The index bounds of the keys under `prefix` after `start_after` (`end` is the prefix's
/// successor).
fn prefix_bounds<'a>(
    prefix: &'a [u8],
    start_after: Option<&'a [u8]>,
    end: Option<&'a [u8]>,
) -> (Bound<&'a [u8]>, Bound<&'a [u8]>) {
    let lower = match start_after.filter(|s| *s >= prefix) {
        Some(s) => Bound::Excluded(s),
        None => Bound::Included(prefix),
    };
    let upper = match end {
        Some(e) => Bound::Excluded(e),
        None => Bound::Unbounded,
    };
    (lower, upper)
}

/// Whether no key lies between the bounds (`BTreeMap::range` panics on some of these).
fn range_is_empty(lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> bool {
    use Bound::{Excluded, Included};
    match (lower, upper) {
        (Included(a) | Excluded(a), Included(b) | Excluded(b)) if a > b => true,
        (Excluded(a), Excluded(b) | Included(b)) if a == b => true,
        (Included(a), Excluded(b)) if a == b => true,
        _ => false,
    }
}

/// The smallest key greater than every key starting with `prefix` (`None`: no such key).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_successor_bounds_the_prefix() {
        assert_eq!(prefix_successor(b"/a/"), Some(b"/a0".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }
}
