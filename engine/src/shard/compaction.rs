//! Compaction: dropping history at or below the compacted revision from the index, and
//! rewriting segments whose live bytes fell below a ratio (same sequence number, new file,
//! atomic rename), moving the index entries over a step at a time.

use super::recovery::corrupt;
use super::Shard;
use crate::format::{self, Op, BATCH_HEADER_LEN, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use crate::index::{compact_chain, IndexKey};
use crate::manifest::{Entry, ENTRY_REWRITTEN};
use crate::segment::{self, Segment};
use crate::{Error, Revision};
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Shard {
    /// Compacts the index at `c`, `INDEX_STEP_KEYS` keys per lock hold.
    pub fn compact(&self, c: Revision) {
        let mut cursor: Option<IndexKey> = None;
        loop {
            let mut idx = self.index.write();
            let idx = &mut *idx;
            let lower = match &cursor {
                Some(k) => Bound::Excluded(&**k),
                None => Bound::Unbounded,
            };
            let mut dropped = Vec::new();
            let mut empties: Vec<IndexKey> = Vec::new();
            let mut steps = 0;
            let mut stopped_at = None;
            let mut n_dropped = 0u64;
            for (k, chain) in idx.keys.range_mut::<[u8], _>((lower, Bound::Unbounded)) {
                dropped.clear();
                if compact_chain(chain, c, &mut dropped) {
                    empties.push(k.clone());
                }
                for v in &dropped {
                    let loc = v.loc();
                    let span = format::record_span(k.len(), loc.value_len as usize) as u64;
                    if let Some(Some(s)) = idx.segs.get(loc.seg as usize) {
                        s.live_bytes.fetch_sub(span, Ordering::Relaxed);
                    }
                }
                n_dropped += dropped.len() as u64;
                steps += 1;
                if steps == crate::limits::INDEX_STEP_KEYS {
                    stopped_at = Some(k.clone());
                    break;
                }
            }
            for k in &empties {
                idx.keys.remove(k);
            }
            idx.versions -= n_dropped;
            match stopped_at {
                Some(k) => cursor = Some(k),
                None => return,
            }
        }
    }

    /// Segments that may be rewritten: sealed (not active, nothing pending for them), all
    /// history at or below `compacted`, live bytes below `ratio` of their data.
    pub fn rewrite_candidates(&self, compacted: Revision, ratio: f64) -> Vec<(Arc<Segment>, bool)> {
        let w = self.w.lock();
        let busy: Vec<u32> = [w.active.id, w.listed.id]
            .into_iter()
            .chain(w.pending.iter().map(|c| c.seg.id))
            .chain(w.inflight.iter().map(|c| c.seg.id))
            .collect();
        drop(w);
        let idx = self.index.read();
        let first = idx.order.values().next().copied();
        idx.order
            .values()
            .map(|id| idx.seg(*id).clone())
            .filter(|s| !busy.contains(&s.id))
            .filter(|s| s.max_rev.load(Ordering::Acquire) <= compacted.0)
            .filter(|s| {
                let data = s
                    .data_end
                    .load(Ordering::Acquire)
                    .saturating_sub(SEGMENT_HEADER_LEN as u64);
                let live = s.live_bytes.load(Ordering::Relaxed);
                (live as f64) < ratio * data as f64
            })
            .map(|s| {
                let is_first = Some(s.id) == first;
                (s, is_first)
            })
            .collect()
    }

    /// Rewrites one segment in place (same sequence number, new file, atomic rename), keeping
    /// the records the index still references and, unless it is the shard's first segment,
    /// its tombstones (they hide older versions in earlier segments).
    pub fn rewrite(
        &self,
        old: &Arc<Segment>,
        is_first: bool,
        compacted: Revision,
    ) -> Result<(), Error> {
        let b = old.bytes();
        let end = old.data_end.load(Ordering::Acquire) as usize;
        // 1. Which records stay.
        let mut keep: Vec<(usize, usize, Revision, bool)> = Vec::new(); // (offset, span, rev, is_put)
        let mut pos = SEGMENT_HEADER_LEN;
        while pos < end {
            let h = format::decode_batch_header(&b[pos..end])
                .ok_or_else(|| corrupt(&old.path, pos as u64, "bad batch header"))?;
            let batch_end = pos + BATCH_HEADER_LEN + h.len as usize;
            let mut at = pos + BATCH_HEADER_LEN;
            let idx = self.index.read();
            while at < batch_end {
                let (r, span) = format::decode_record(&b[..batch_end], at)
                    .map_err(|e| corrupt(&old.path, at as u64, e))?;
                let live = match r.op {
                    Op::Put => idx.keys.get(r.key).is_some_and(|c| {
                        c.iter()
                            .any(|v| v.rev == r.revision && v.loc().seg == old.id)
                    }),
                    Op::Delete => !is_first,
                    // A no-op only keeps its revision from being reused; the COMPACTED file
                    // (at or above it) does that once it is compacted.
                    Op::Nop => false,
                };
                if live {
                    keep.push((at, span, r.revision, r.op == Op::Put));
                }
                at += span;
            }
            pos = batch_end;
        }
        let seq = old.header.seq;
        if keep.is_empty() {
            self.keeper.remove_begin(self.id, seq)?;
            self.retire(old, None)?;
            self.io.remove_file(&old.path)?;
            self.io.sync_dir(&self.dir)?;
            self.keeper.remove_end(self.id, seq)?;
            self.counters.rewritten.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        // 2. Write the new file: batches of up to 1 MiB of copied records.
        const BATCH_BYTES: usize = 1 << 20;
        let mut header = format::SegmentHeader {
            shard: self.id as u32,
            seq: old.header.seq,
            flags: format::SEG_FLAG_REWRITTEN,
            compacted,
            size: 0,
        };
        let mut image = header.encode().to_vec();
        let mut new_offsets = Vec::with_capacity(keep.len());
        let mut batches = Vec::new();
        let mut i = 0;
        while i < keep.len() {
            let start = image.len();
            image.resize(start + BATCH_HEADER_LEN, 0);
            let first = keep[i].2;
            let mut count = 0;
            while i < keep.len() && (count == 0 || image.len() - start + keep[i].1 <= BATCH_BYTES) {
                let (off, span, _, _) = keep[i];
                new_offsets.push(image.len());
                image.extend_from_slice(&b[off..off + span]);
                count += 1;
                i += 1;
            }
            let last = keep[i - 1].2;
            format::seal_batch(&mut image[start..], count, first, last);
            batches.push((start as u64, first, last, image.len() as u64));
        }
        // A rewritten segment is exactly as long as its content.
        header.size = image.len() as u64;
        image[..SEGMENT_HEADER_LEN].copy_from_slice(&header.encode());
        let tmp = self.dir.join(format!(
            "{}.tmp",
            segment::segment_file_name(old.header.seq)
        ));
        {
            let f = self.io.create(&tmp, false)?;
            f.write_all_at(&image, 0)?;
            f.sync_all()?;
        }
        // The manifest allows the old file or this one while the rename is in flight.
        let entry = Entry {
            flags: ENTRY_REWRITTEN,
            seq,
            end: image.len() as u64,
            size: image.len() as u64,
            first: keep[0].2,
            last: keep[keep.len() - 1].2,
        };
        self.keeper.rewrite_begin(self.id, seq, entry)?;
        self.io.rename(&tmp, &old.path)?;
        self.io.sync_dir(&self.dir)?;
        self.keeper.rewrite_end(self.id, seq)?;
        // 3. Swap it in and move the index entries over, a step at a time.
        let new_id = {
            let mut w = self.w.lock();
            let id = w.next_id;
            w.next_id += 1;
            id
        };
        let new = Arc::new(Segment::open(&*self.io, new_id, &old.path)?);
        for &(off, first, last, bend) in &batches {
            new.note_batch(off, first, last, bend);
        }
        new.assume_durable();
        let live: u64 = keep.iter().map(|k| k.1 as u64).sum();
        new.live_bytes.store(live, Ordering::Relaxed);
        self.index.write().add_segment(new.clone());
        for (step, chunk) in keep
            .iter()
            .zip(new_offsets.iter())
            .collect::<Vec<_>>()
            .chunks(crate::limits::INDEX_STEP_KEYS)
            .enumerate()
        {
            let _ = step;
            let mut idx = self.index.write();
            for ((off, _, rev, is_put), new_off) in chunk {
                if !is_put {
                    continue;
                }
                let key_len = format::get_u16(b, off + format::REC_OFF_KEY_LEN) as usize;
                let key = &b[off + RECORD_HEADER_LEN..off + RECORD_HEADER_LEN + key_len];
                if let Some(chain) = idx.keys.get_mut(key) {
                    if let Some(v) = chain
                        .iter_mut()
                        .find(|v| v.rev == *rev && v.loc().seg == old.id)
                    {
                        let mut loc = v.loc();
                        loc.seg = new_id;
                        loc.off = **new_off as u32;
                        *v = v.with_loc(loc);
                    }
                }
            }
        }
        self.retire(old, Some(new))?;
        self.counters.rewritten.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn retire(&self, old: &Arc<Segment>, replacement: Option<Arc<Segment>>) -> Result<(), Error> {
        let mut idx = self.index.write();
        idx.segs[old.id as usize] = None;
        match replacement {
            Some(n) => {
                idx.order.insert(n.header.seq, n.id);
            }
            None => {
                idx.order.remove(&old.header.seq);
            }
        }
        Ok(())
    }
}
