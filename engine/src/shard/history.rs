//! Watch history: committed changes read back from the segments (for watchers that start
//! below what the in-memory ring holds), in revision order.

use super::Shard;
use crate::format::{self, Op, BATCH_HEADER_LEN};
use crate::index::{Loc, Version};
use crate::segment::{kv_at, Segment};
use crate::{Event, EventKind, Revision, WatchError};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Shard {
    /// Reads committed changes in `(after, upto]` under `prefix` from the segments, in
    /// revision order, at most `max`. Returns the events and, if it stopped at `max`, the
    /// revision of the last one.
    pub fn read_history(
        &self,
        prefix: &[u8],
        after: Revision,
        upto: Revision,
        max: usize,
        out: &mut Vec<Arc<Event>>,
    ) -> Result<Option<Revision>, WatchError> {
        let segs: Vec<Arc<Segment>> = {
            let idx = self.index.read();
            idx.order
                .values()
                .map(|id| idx.seg(*id).clone())
                .filter(|s| {
                    s.max_rev.load(Ordering::Acquire) > after.0
                        && s.min_rev.load(Ordering::Acquire) <= upto.0
                })
                .collect()
        };
        let io = |s: &Segment, at: u64, why: String| {
            WatchError::Io(format!("{} at {at}: {why}", s.path.display()))
        };
        let mut n = 0;
        for seg in segs {
            let b = seg.bytes();
            let end = seg.data_end.load(Ordering::Acquire) as usize;
            let mut pos = seg.seek(after) as usize;
            while pos < end {
                let h = format::decode_batch_header(&b[pos..end])
                    .ok_or_else(|| io(&seg, pos as u64, "bad batch header".into()))?;
                let batch_end = pos + BATCH_HEADER_LEN + h.len as usize;
                if h.first > upto {
                    return Ok(None);
                }
                if h.last <= after {
                    pos = batch_end;
                    continue;
                }
                let mut at = pos + BATCH_HEADER_LEN;
                let idx = self.index.read();
                while at < batch_end {
                    let (r, span) = format::decode_record(&b[..batch_end], at)
                        .map_err(|e| io(&seg, at as u64, e))?;
                    at += span;
                    if r.revision <= after || r.op == Op::Nop || !r.key.starts_with(prefix) {
                        continue;
                    }
                    if r.revision > upto {
                        return Ok(None);
                    }
                    let ver = Version::new(
                        r.revision,
                        Loc {
                            seg: seg.id,
                            off: r.offset as u32,
                            value_len: r.value.len() as u32,
                            tombstone: r.op == Op::Delete,
                        },
                    );
                    let kv = kv_at(&seg, r.key.len(), &ver);
                    let prev = if r.prev_revision == Revision::ZERO {
                        None
                    } else {
                        idx.keys
                            .get(r.key)
                            .and_then(|c| c.iter().find(|v| v.rev == r.prev_revision))
                            .filter(|v| !v.is_tombstone())
                            .map(|v| kv_at(idx.seg(v.loc().seg), r.key.len(), v))
                    };
                    let kind = if r.op == Op::Delete {
                        EventKind::Delete
                    } else {
                        EventKind::Put
                    };
                    out.push(Arc::new(Event::new(kind, kv, prev)));
                    n += 1;
                    if n == max {
                        return Ok(Some(r.revision));
                    }
                }
                pos = batch_end;
            }
        }
        Ok(None)
    }
}
