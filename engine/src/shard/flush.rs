//! The flush path: the shard's flusher thread takes the pending batches (group commit),
//! lingers for more when that pays, writes each with one `pwrite`, `fdatasync`s it, and hands
//! the revisions to the sequencer, which publishes and acknowledges them in global order. An
//! I/O error stops the shard (`fail`).

use super::write::{Meta, Sealed};
use super::Shard;
use crate::format::{self, Op};
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
            let batch: Vec<(Arc<Sealed>, Vec<Meta>)> = {
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
                w.pending_bytes = 0;
                w.pending_records = 0;
                let chunks = std::mem::take(&mut w.pending);
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
                out
            };
            if let Err(e) = self.write_batches(&batch) {
                self.fail(format!("shard {}: {e}", self.id), batch);
                continue;
            }
            for (s, _) in &batch {
                let end = s.offset + s.buf.len() as u64;
                s.seg.note_batch(s.offset, s.first, s.last, end);
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

    fn write_batches(&self, batch: &[(Arc<Sealed>, Vec<Meta>)]) -> std::io::Result<()> {
        for (i, (s, _)) in batch.iter().enumerate() {
            s.seg.write_at(s.offset, &s.buf)?;
            self.counters.batches.fetch_add(1, Ordering::Relaxed);
            self.counters
                .bytes
                .fetch_add(s.buf.len() as u64, Ordering::Relaxed);
            let last_for_segment = batch
                .get(i + 1)
                .is_none_or(|(n, _)| !Arc::ptr_eq(&n.seg, &s.seg));
            if self.sync == SyncMode::Always && last_for_segment {
                s.seg.sync()?;
                self.counters.syncs.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Fail-stop after an I/O error: nothing after a failed write or sync can be trusted to be
    /// durable, so this shard refuses writes from now on and fails the writers in flight.
    fn fail(&self, why: String, batch: Vec<(Arc<Sealed>, Vec<Meta>)>) {
        let mut w = self.w.lock();
        w.failed = Some(why.clone());
        w.inflight.clear();
        let mut metas: Vec<Meta> = batch.into_iter().flat_map(|(_, m)| m).collect();
        for c in std::mem::take(&mut w.pending) {
            metas.extend(c.metas);
        }
        w.pending_bytes = 0;
        w.pending_records = 0;
        drop(w);
        let revs: Vec<Revision> = metas.iter().map(|m| m.rev).collect();
        for m in metas {
            if let Some(c) = m.completion {
                c.complete(Err(Error::Failed(why.clone())));
            }
        }
        self.seq.finish_slots(revs.into_iter().map(|r| (r, None)));
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
