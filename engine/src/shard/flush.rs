//! The flush path: the shard's flusher thread takes the pending batches (group commit),
//! lingers for more when that pays, writes each with one `pwrite`, `fdatasync`s it, and hands
//! the revisions to the sequencer, which publishes and acknowledges them in global order. An
//! I/O error stops the shard (`fail`).

use super::write::{Meta, Sealed};
use super::{Shard, ShardIndex};
use crate::format::{self, Op, BATCH_HEADER_LEN, RECORD_HEADER_LEN};
use crate::health::Failure;
use crate::index::{Loc, Version};
use crate::limits::{
    COMMIT_LINGER_BYTES_MAX, COMMIT_LINGER_GAIN_MIN, COMMIT_LINGER_IDLE_RESET,
    COMMIT_LINGER_PROBE_EVERY,
};
use crate::segment::{kv_at, Segment};
use crate::sequencer::Finished;
use crate::{Error, Event, EventKind, Revision, SyncMode, Written};
use parking_lot::MutexGuard;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many records the recent lingers of a shard gained (a moving average), to tell
/// whether lingering still fills batches.
#[derive(Default)]
struct LingerGain {
    avg: f64,
}

impl LingerGain {
    /// Weight of the newest linger in the average: one probe that fills a batch is enough
    /// to start lingering, a few that gain nothing to stop.
    const WEIGHT: f64 = 1.0 / 4.0;

    fn record(&mut self, gained: usize) {
        self.avg += (gained as f64 - self.avg) * Self::WEIGHT;
    }

    fn worth_it(&self) -> bool {
        self.avg >= COMMIT_LINGER_GAIN_MIN
    }
}

/// The group-commit linger policy of a shard (`Options::commit_linger` and its gate).
#[derive(Clone, Copy, Debug, Default)]
pub struct Linger {
    pub max: Duration,
    pub gate: Option<fn() -> bool>,
}

impl Shard {
    /// The flusher: group commit for this shard. Runs until shutdown with nothing pending.
    ///
    /// Linger: a sync costs far more CPU than the records it commits (on a VM, ~0.1-0.2 ms of
    /// CPU across the flusher, the block layer and the wake-ups it causes, whatever the batch
    /// size), so when the shard is busy the flusher waits up to `linger` for more writes
    /// before syncing. Busy means the previous batch held several records or writes arrived
    /// while it was being synced (concurrent writers, who gain throughput from larger
    /// batches), and the shard has not been idle for `COMMIT_LINGER_IDLE_RESET` since.
    /// A lone writer waiting for each acknowledgement never makes the shard busy, so its
    /// writes are synced at once; `COMMIT_LINGER_BYTES_MAX` pending bytes end a linger early.
    /// Two more conditions keep lingers that buy nothing from adding latency: the gate (the
    /// server answers whether CPU time is scarce: with idle CPUs a sync costs nobody
    /// anything), and the records recent lingers gained (a few writers who all wait on this
    /// batch bring nothing more while it lingers; such a shard only probes now and then).
    pub fn flusher_loop(&self) {
        let mut busy = false;
        let mut gain = LingerGain::default();
        let mut batches: u64 = 0;
        loop {
            let batch: (Flush, Arc<Segment>) = {
                let mut w = self.w.lock();
                if w.pending.is_empty() {
                    let idle_from = Instant::now();
                    while w.pending.is_empty() {
                        if w.shutdown {
                            return;
                        }
                        w.flusher_idle = true;
                        self.work.wait(&mut w);
                    }
                    w.flusher_idle = false;
                    if idle_from.elapsed() >= COMMIT_LINGER_IDLE_RESET {
                        busy = false;
                    }
                }
                let probe = batches.is_multiple_of(COMMIT_LINGER_PROBE_EVERY);
                batches += 1;
                if busy
                    && (gain.worth_it() || probe)
                    && !self.linger.max.is_zero()
                    && MutexGuard::unlocked(&mut w, || self.linger.gate.is_none_or(|g| g()))
                {
                    let before = w.pending_records;
                    let deadline = Instant::now() + self.linger.max;
                    while !w.shutdown && w.pending_bytes < COMMIT_LINGER_BYTES_MAX {
                        w.flusher_lingering = true;
                        if self.work.wait_until(&mut w, deadline).timed_out() {
                            break;
                        }
                    }
                    w.flusher_lingering = false;
                    gain.record(w.pending_records - before);
                }
                busy = w.pending_records > 1;
                let chunks = if w.pending.len() > 1 {
                    // One segment per flush, so that a rollover's manifest write comes after
                    // the old segment's last batch is synced and before the new one's first.
                    let c = w.pending.remove(0);
                    w.pending_bytes -= c.buf.len() - BATCH_HEADER_LEN;
                    w.pending_records -= c.count as usize;
                    vec![c]
                } else {
                    w.pending_bytes = 0;
                    w.pending_records = 0;
                    std::mem::take(&mut w.pending)
                };
                let mut out = Vec::with_capacity(chunks.len());
                for mut c in chunks {
                    format::seal_batch(&mut c.buf, c.count, c.first, c.last);
                    let s = Arc::new(Sealed {
                        seg: c.seg,
                        offset: c.offset,
                        buf: c.buf,
                        first: c.first,
                        last: c.last,
                    });
                    w.inflight.push(s.clone());
                    out.push((s, c.metas));
                }
                (out, w.listed.clone())
            };
            let (batch, listed) = batch;
            if let Err(e) = self.roll_if_new(&listed, &batch) {
                self.fail(e, batch);
                continue;
            }
            if let Err(e) = self.write_batches(&batch) {
                self.fail(e, batch);
                continue;
            }
            for (s, _) in &batch {
                let end = s.offset + s.buf.len() as u64;
                s.seg.note_batch(s.offset, s.first, s.last, end);
                if self.sync == SyncMode::Always {
                    // Synced: the manifest may record it (`Keeper::refresh`).
                    s.seg.mark_durable(end, s.first, s.last);
                }
            }
            {
                let mut w = self.w.lock();
                w.inflight.clear();
                busy |= !w.pending.is_empty();
            }
            let mut finished = Vec::new();
            for (s, metas) in batch {
                for m in metas {
                    let rev = m.rev;
                    finished.push((rev, self.finish(&s.seg, m)));
                }
            }
            self.seq.finish_slots(finished);
        }
    }

    /// Before the first batch goes into a new segment: the manifest records the segment it
    /// had as active (`listed`) sealed, and the new one as active (`Keeper::roll`).
    fn roll_if_new(
        &self,
        listed: &Arc<Segment>,
        batch: &[(Arc<Sealed>, Vec<Meta>)],
    ) -> Result<(), WriteFailure> {
        let seg = &batch[0].0.seg;
        if Arc::ptr_eq(seg, listed) {
            return Ok(());
        }
        self.keeper
            .roll(self.id, listed, seg)
            .map_err(|e| WriteFailure {
                attempted: 0,
                failure: Failure::io(
                    self.id,
                    "rolling over to a new segment",
                    Some(seg.path.clone()),
                    &e,
                ),
            })?;
        self.w.lock().listed = seg.clone();
        Ok(())
    }

    /// Writes and syncs the batches in order; stops at the first error.
    fn write_batches(&self, batch: &[(Arc<Sealed>, Vec<Meta>)]) -> Result<(), WriteFailure> {
        for (i, (s, _)) in batch.iter().enumerate() {
            let failed = |what: &'static str, e: std::io::Error| WriteFailure {
                attempted: i + 1,
                failure: Failure::io(self.id, what, Some(s.seg.path.clone()), &e),
            };
            s.seg
                .write_at(s.offset, &s.buf)
                .map_err(|e| failed("pwrite", e))?;
            self.counters.batches.fetch_add(1, Ordering::Relaxed);
            self.counters
                .bytes
                .fetch_add(s.buf.len() as u64, Ordering::Relaxed);
            let last_for_segment = batch
                .get(i + 1)
                .is_none_or(|(n, _)| !Arc::ptr_eq(&n.seg, &s.seg));
            if self.sync == SyncMode::Always && last_for_segment {
                s.seg.sync().map_err(|e| failed("fdatasync", e))?;
                self.counters.syncs.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Fail-stop after an I/O error: nothing after a failed write or sync can be trusted to
    /// be durable, so the engine refuses writes from now on (on every shard: `Health`), and
    /// this shard fails the writers in flight: the batch that failed and the pending ones.
    ///
    /// Their writes leave no trace a reader could see. Their index entries go first, while
    /// their revisions are still above the visible revision (no reader looks at them yet);
    /// only then are the revisions finished as aborted, which lets the visible revision move
    /// past them. Their events are never published, and the history readers stop at each
    /// segment's `data_end`, which never covered them. Finally the bytes already written are
    /// zeroed again (`retract`), so that a restart does not bring them back either, when the
    /// disk still allows that.
    fn fail(&self, e: WriteFailure, batch: Vec<(Arc<Sealed>, Vec<Meta>)>) {
        let why = self.health.fail(e.failure).to_string();
        let mut w = self.w.lock();
        w.inflight.clear();
        let pending = std::mem::take(&mut w.pending);
        w.pending_bytes = 0;
        w.pending_records = 0;
        {
            let mut idx = self.index.write();
            for (s, metas) in &batch {
                unindex(&mut idx, &s.seg, s.offset, &s.buf, metas);
            }
            for c in &pending {
                unindex(&mut idx, &c.seg, c.offset, &c.buf, &c.metas);
            }
        }
        drop(w);
        if let Err(e) = self.retract(&batch[..e.attempted]) {
            eprintln!(
                "keel-engine: shard {}: zeroing the failed batch failed too ({e}): its writes, \
                 none of them acknowledged, may reappear after a restart",
                self.id
            );
        }
        let metas: Vec<Meta> = batch
            .into_iter()
            .flat_map(|(_, m)| m)
            .chain(pending.into_iter().flat_map(|c| c.metas))
            .collect();
        let revs: Vec<Revision> = metas.iter().map(|m| m.rev).collect();
        for m in metas {
            if let Some(c) = m.completion {
                c.complete(Err(Error::Failed(why.clone())));
            }
        }
        self.seq.finish_slots(revs.into_iter().map(|r| (r, None)));
    }

    /// Zeroes the batches a failed flush wrote (or may have written), newest first, each
    /// synced before the next: whatever step fails, the disk holds a prefix of the log plus
    /// at most one damaged batch at its end, which recovery drops as a torn tail.
    fn retract(&self, written: &[(Arc<Sealed>, Vec<Meta>)]) -> std::io::Result<()> {
        for (s, _) in written.iter().rev() {
            s.seg.write_at(s.offset, &vec![0u8; s.buf.len()])?;
            if self.sync == SyncMode::Always {
                s.seg.sync()?;
            }
        }
        Ok(())
    }

    /// What the sequencer needs for a flushed record; `None` for a no-op.
    fn finish(&self, seg: &Arc<Segment>, m: Meta) -> Option<Finished> {
        let completion = m.completion?;
        if let Some(e) = m.error {
            return Some(Finished {
                event: None,
                result: Err(e),
                completion,
            });
        }
        let ver = Version::new(
            m.rev,
            Loc {
                seg: seg.id,
                off: m.off as u32,
                value_len: m.value_len,
                tombstone: m.op == Op::Delete,
            },
        );
        let kv = kv_at(seg, m.key_len, &ver);
        let prev = m.prev.as_ref().map(|(s, v)| kv_at(s, m.key_len, v));
        let kind = if m.op == Op::Delete {
            EventKind::Delete
        } else {
            EventKind::Put
        };
        let written = Written {
            revision: m.rev,
            prev_revision: prev.as_ref().map(|p| p.mod_revision),
        };
        Some(Finished {
            event: Some(Arc::new(Event::new(kind, kv, prev))),
            result: Ok(written),
            completion,
        })
    }
}

/// The batches of one flush, each with its records' metadata.
type Flush = Vec<(Arc<Sealed>, Vec<Meta>)>;

/// Why a flush failed, and how many of its batches it had started writing.
struct WriteFailure {
    attempted: usize,
    failure: Failure,
}

/// Removes from the index the versions of `metas`, whose records are in `buf` (a batch that
/// starts at `offset` in `seg`), undoing what `Shard::write` counted for them.
fn unindex(idx: &mut ShardIndex, seg: &Segment, offset: u64, buf: &[u8], metas: &[Meta]) {
    for m in metas.iter().filter(|m| m.op != Op::Nop) {
        let at = (m.off - offset) as usize + RECORD_HEADER_LEN;
        let key = &buf[at..at + m.key_len];
        let chain = idx
            .keys
            .get_mut(key)
            .unwrap_or_else(|| panic!("failed write of {key:?} at {} is not indexed", m.rev));
        let was_live = chain.last().is_some_and(|v| !v.is_tombstone());
        let pos = chain
            .iter()
            .rposition(|v| v.rev == m.rev)
            .unwrap_or_else(|| panic!("failed write of {key:?} at {} is not indexed", m.rev));
        chain.remove(pos);
        let now_live = chain.last().is_some_and(|v| !v.is_tombstone());
        if chain.is_empty() {
            idx.keys.remove(key);
        }
        idx.versions -= 1;
        match (was_live, now_live) {
            (true, false) => idx.live_keys -= 1,
            (false, true) => idx.live_keys += 1,
            _ => {}
        }
        seg.live_bytes.fetch_sub(
            format::record_span(m.key_len, m.value_len as usize) as u64,
            Ordering::Relaxed,
        );
    }
}
