//! The write path: admission (preconditions against the newest version, pending ones
//! included; the pending-bytes bound), a revision from the sequencer, the record encoded into
//! the pending batch of the active segment, and the index pointed at its future location.
//! The pending batches wait here for the flusher (`flush.rs`).

use super::recovery::new_segment;
use super::Shard;
use crate::format::{self, Op, BATCH_HEADER_LEN, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use crate::health::Failure;
use crate::index::{Chain, IndexKey, Loc, Version};
use crate::limits::COMMIT_LINGER_BYTES_MAX;
use crate::pending::Pending;
use crate::segment::Segment;
use crate::sequencer::WriteCompletion;
use crate::store::{BoxError, WriteContext};
use crate::{Error, Precondition, Revision, WriteOp, Written};
use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(super) struct Meta {
    pub(super) rev: Revision,
    pub(super) off: u64,
    pub(super) key_len: usize,
    pub(super) value_len: u32,
    pub(super) op: Op,
    pub(super) prev: Option<(Arc<Segment>, Version)>,
    pub(super) completion: Option<WriteCompletion>,
    /// For the no-op record of a refused write: the error its writer gets.
    pub(super) error: Option<Error>,
}

/// Records appended to one segment since the flusher last took the pending batches.
pub(super) struct Chunk {
    pub(super) seg: Arc<Segment>,
    /// Where the batch header goes.
    pub(super) offset: u64,
    pub(super) buf: Vec<u8>,
    pub(super) count: u32,
    pub(super) first: Revision,
    pub(super) last: Revision,
    pub(super) metas: Vec<Meta>,
}

/// A batch the flusher is writing; writers may still read values out of it.
pub(super) struct Sealed {
    pub(super) seg: Arc<Segment>,
    pub(super) offset: u64,
    pub(super) buf: Vec<u8>,
    pub(super) first: Revision,
    pub(super) last: Revision,
}

pub(super) struct WriterState {
    /// The segment the manifest records as active: the flusher's, which lags `active` between
    /// a rollover and the first flush into the new segment (`Keeper::roll`).
    pub(super) listed: Arc<Segment>,
    pub(super) active: Arc<Segment>,
    /// Logical end of the active segment, pending records included.
    pub(super) tail: u64,
    pub(super) pending: Vec<Chunk>,
    pub(super) inflight: Vec<Arc<Sealed>>,
    pub(super) pending_bytes: usize,
    /// Records in `pending` (no-ops included).
    pub(super) pending_records: usize,
    pub(super) flusher_idle: bool,
    /// The flusher is waiting out its linger (see `flusher_loop`): a writer that takes
    /// `pending_bytes` past `COMMIT_LINGER_BYTES_MAX` wakes it early.
    pub(super) flusher_lingering: bool,
    pub(super) shutdown: bool,
    pub(super) next_seq: u64,
    pub(super) next_id: u32,
}

/// Resolves the bytes of the value at `v` for a writer: from the mapping if written, else
/// from a pending or in-flight batch (copied, as the pending buffer is about to grow).
fn current_value<'a>(w: &WriterState, seg: &'a Arc<Segment>, v: &Version) -> Cow<'a, [u8]> {
    let loc = v.loc();
    let off = loc.off as u64;
    let range = |base: u64, key_len: usize| {
        let s = (off - base) as usize + RECORD_HEADER_LEN + key_len;
        s..s + loc.value_len as usize
    };
    let key_len = |b: &[u8], at: usize| format::get_u16(b, at + format::REC_OFF_KEY_LEN) as usize;
    if off < seg.data_end.load(Ordering::Acquire) {
        let b = seg.bytes();
        let r = range(0, key_len(b, off as usize));
        return Cow::Borrowed(&b[r]);
    }
    for c in &w.pending {
        if Arc::ptr_eq(&c.seg, seg) && off >= c.offset && off < c.offset + c.buf.len() as u64 {
            let r = range(c.offset, key_len(&c.buf, (off - c.offset) as usize));
            return Cow::Owned(c.buf[r].to_vec());
        }
    }
    for c in &w.inflight {
        if Arc::ptr_eq(&c.seg, seg) && off >= c.offset && off < c.offset + c.buf.len() as u64 {
            let r = range(c.offset, key_len(&c.buf, (off - c.offset) as usize));
            return Cow::Owned(c.buf[r].to_vec());
        }
    }
    // The flusher finished between our data_end read and now.
    let b = seg.bytes();
    assert!(
        off < seg.data_end.load(Ordering::Acquire),
        "version at {off} is nowhere"
    );
    let r = range(0, key_len(b, off as usize));
    Cow::Owned(b[r].to_vec())
}

impl Shard {
    pub fn write<F>(&self, key: &[u8], op: WriteOp, build: F) -> Pending<Result<Written, Error>>
    where
        F: FnOnce(&WriteContext<'_>, &mut Vec<u8>) -> Result<(), BoxError>,
    {
        match self.write_inner(key, op, build) {
            Ok(p) => p,
            Err(e) => Pending::ready(Err(e)),
        }
    }

    fn write_inner<F>(
        &self,
        key: &[u8],
        op: WriteOp,
        build: F,
    ) -> Result<Pending<Result<Written, Error>>, Error>
    where
        F: FnOnce(&WriteContext<'_>, &mut Vec<u8>) -> Result<(), BoxError>,
    {
        let mut w = self.w.lock();
        if let Err(f) = self.health.check() {
            return Err(Error::Failed(f.to_string()));
        }
        if w.shutdown {
            return Err(Error::Closed);
        }
        if w.pending_bytes >= self.limits.shard_pending_bytes_max {
            return Err(Error::Busy);
        }
        let cur: Option<(Version, Arc<Segment>)> = {
            let idx = self.index.read();
            idx.keys
                .get(key)
                .and_then(|c| c.last())
                .filter(|v| !v.is_tombstone())
                .map(|v| (*v, idx.seg(v.loc().seg).clone()))
        };
        let cur_rev = cur.as_ref().map(|(v, _)| v.rev);
        match (op, cur_rev) {
            (WriteOp::Create, Some(r)) => return Err(Error::AlreadyExists { revision: r }),
            (WriteOp::Update(_) | WriteOp::Delete(_), None) => return Err(Error::NotFound),
            (
                WriteOp::Update(Precondition::ModRevision(want))
                | WriteOp::Delete(Precondition::ModRevision(want)),
                Some(actual),
            ) if want != actual => {
                return Err(Error::Conflict {
                    expected: want,
                    actual,
                })
            }
            _ => {}
        }
        let fop = if matches!(op, WriteOp::Delete(_)) {
            Op::Delete
        } else {
            Op::Put
        };
        let cur_bytes = cur.as_ref().map(|(v, seg)| current_value(&w, seg, v));
        let rev = self.seq.allocate()?;
        let ctx = WriteContext {
            revision: Some(rev),
            current: cur_bytes.as_deref(),
            current_revision: cur_rev,
        };
        // Encode into a batch for the active segment, starting one if needed.
        let w = &mut *w;
        let needs_chunk = w
            .pending
            .last()
            .is_none_or(|c| !Arc::ptr_eq(&c.seg, &w.active));
        if needs_chunk {
            w.pending.push(Chunk {
                seg: w.active.clone(),
                offset: w.tail,
                buf: vec![0u8; BATCH_HEADER_LEN],
                count: 0,
                first: rev,
                last: rev,
                metas: Vec::new(),
            });
            w.tail += BATCH_HEADER_LEN as u64;
        }
        let chunk = w.pending.last_mut().expect("chunk");
        let res = format::encode_record(
            &mut chunk.buf,
            rev,
            cur_rev.unwrap_or_default(),
            fop,
            key,
            |buf| {
                if fop == Op::Delete {
                    Ok(())
                } else {
                    build(&ctx, buf)
                }
            },
        );
        let failure = match res {
            Err(e) => Some(Error::Aborted(e)),
            Ok((_, value_len)) if value_len > self.limits.value_bytes_max => {
                Some(Error::ValueTooLarge {
                    len: value_len,
                    max: self.limits.value_bytes_max,
                })
            }
            Ok(_) => None,
        };
        drop(cur_bytes);
        let rec_start = (w.tail - w.pending.last().map(|c| c.offset).unwrap_or(0)) as usize;
        let chunk = w.pending.last_mut().expect("chunk");
        if failure.is_some() {
            // The revision is consumed: record it with a no-op so that it is never handed out
            // again after a restart (a client may already have seen it as a list revision).
            chunk.buf.truncate(rec_start);
            format::encode_record::<()>(&mut chunk.buf, rev, Revision::ZERO, Op::Nop, &[], |_| {
                Ok(())
            })
            .expect("no-op records cannot fail");
        }
        let mut chunk = w.pending.last_mut().expect("chunk");
        let span = chunk.buf.len() - rec_start;
        if chunk.offset + chunk.buf.len() as u64 > w.active.capacity() {
            // Does not fit: move the record (position-independent bytes) to a new segment,
            // sized up if this one record needs more than a normal segment.
            let rec = chunk.buf.split_off(rec_start);
            self.drop_empty_chunk(w);
            let needed = (SEGMENT_HEADER_LEN + BATCH_HEADER_LEN + rec.len()) as u64;
            if let Err(e) = self.roll_segment(w, needed) {
                // Without a segment the revision cannot be recorded: stop writing rather
                // than risk handing it out twice.
                let what = "creating a segment";
                let failure = self.health.fail(match &e {
                    Error::Io(io) => Failure::io(self.id, what, Some(self.dir.clone()), io),
                    other => Failure::other(self.id, what, other.to_string()),
                });
                self.seq.abort(rev);
                return Err(Error::Failed(failure.to_string()));
            }
            let offset = w.tail;
            w.pending.push(Chunk {
                seg: w.active.clone(),
                offset,
                buf: vec![0u8; BATCH_HEADER_LEN],
                count: 0,
                first: rev,
                last: rev,
                metas: Vec::new(),
            });
            w.tail += BATCH_HEADER_LEN as u64;
            chunk = w.pending.last_mut().expect("chunk");
            chunk.buf.extend_from_slice(&rec);
        }
        let off = chunk.offset + (chunk.buf.len() - span) as u64;
        let value_len = (span_value_len(&chunk.buf[chunk.buf.len() - span..])) as u32;
        if chunk.count == 0 {
            chunk.first = rev;
        }
        chunk.count += 1;
        chunk.last = rev;
        let seg = chunk.seg.clone();
        w.tail = chunk.offset + chunk.buf.len() as u64;
        w.pending_bytes += span;
        w.pending_records += 1;
        if let Some(e) = failure {
            // The writer learns of its failure once the no-op is durable and visible, so that
            // a read after the error already sees the consumed revision.
            let (pending, completion) = Pending::new();
            chunk.metas.push(Meta {
                rev,
                off,
                key_len: 0,
                value_len: 0,
                op: Op::Nop,
                prev: None,
                completion: Some(completion),
                error: Some(e),
            });
            self.wake_flusher(w);
            return Ok(pending);
        }
        let ver = Version::new(
            rev,
            Loc {
                seg: seg.id,
                off: off as u32,
                value_len,
                tombstone: fop == Op::Delete,
            },
        );
        {
            let mut idx = self.index.write();
            match idx.keys.get_mut(key) {
                Some(chain) => chain.push(ver),
                None => {
                    let mut chain = Chain::new();
                    chain.push(ver);
                    idx.keys.insert(IndexKey::from_slice(key), chain);
                }
            }
            idx.versions += 1;
            match (fop, cur_rev) {
                (Op::Put, None) => idx.live_keys += 1,
                (Op::Delete, _) => idx.live_keys -= 1,
                _ => {}
            }
        }
        seg.live_bytes.fetch_add(span as u64, Ordering::Relaxed);
        let (pending, completion) = Pending::new();
        let chunk = w.pending.last_mut().expect("chunk");
        chunk.metas.push(Meta {
            rev,
            off,
            key_len: key.len(),
            value_len,
            op: fop,
            prev: cur.map(|(v, s)| (s, v)),
            completion: Some(completion),
            error: None,
        });
        self.wake_flusher(w);
        Ok(pending)
    }

    fn wake_flusher(&self, w: &mut WriterState) {
        if w.flusher_idle {
            w.flusher_idle = false;
            self.work.notify_one();
        } else if w.flusher_lingering && w.pending_bytes >= COMMIT_LINGER_BYTES_MAX {
            w.flusher_lingering = false;
            self.work.notify_one();
        }
    }

    fn drop_empty_chunk(&self, w: &mut WriterState) {
        if let Some(c) = w.pending.last() {
            if c.count == 0 && c.buf.len() == BATCH_HEADER_LEN {
                w.tail = c.offset;
                w.pending.pop();
            } else {
                w.tail = c.offset + c.buf.len() as u64;
            }
        }
    }

    fn roll_segment(&self, w: &mut WriterState, min_bytes: u64) -> Result<(), Error> {
        let id = w.next_id;
        let size = self
            .limits
            .segment_bytes
            .max(min_bytes.next_multiple_of(4096));
        let seg = Arc::new(new_segment(
            &*self.io, self.id, &self.dir, id, w.next_seq, size,
        )?);
        w.next_id += 1;
        w.next_seq += 1;
        self.index.write().add_segment(seg.clone());
        w.active = seg;
        w.tail = SEGMENT_HEADER_LEN as u64;
        Ok(())
    }
}

/// The value length recorded in an encoded record.
fn span_value_len(rec: &[u8]) -> usize {
    format::get_u32(rec, format::REC_OFF_VALUE_LEN) as usize
}
