//! A shard: the keys one hash bucket owns, its segments, its index and its flusher.
//!
//! Write path (caller's thread, under the shard's writer lock): check the precondition
//! against the newest version (pending ones included), take a revision from the sequencer,
//! let the value builder append the value straight into the pending batch, point the index at
//! the record's future location. The shard's flusher thread then takes the whole pending
//! batch (group commit), writes it with one `pwrite`, `fdatasync`s it, and hands the
//! revisions to the sequencer, which publishes and acknowledges them in global order.
//!
//! At most one batch per shard is in flight between `pwrite` and the end of its sync, and a
//! segment is synced before the next one receives data: so after a crash only the last batch
//! of the newest segment can be torn.

use crate::format::{self, Op, Record, BATCH_HEADER_LEN, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use crate::index::{compact_chain, version_at, Chain, IndexKey, KeyMap, Loc, Version};
use crate::limits::{
    COMMIT_LINGER_BYTES_MAX, COMMIT_LINGER_GAIN_MIN, COMMIT_LINGER_IDLE_RESET,
    COMMIT_LINGER_PROBE_EVERY,
};
use crate::list::{self, Hit, RankCache, RankMarks, ShardScan};
use crate::pending::Pending;
use crate::segment::{self, Segment};
use crate::sequencer::{Finished, Sequencer, WriteCompletion};
use crate::store::{BoxError, WriteContext};
use crate::value::{Backing, Value};
use crate::{
    Error, Event, EventKind, KeyValue, Limits, Precondition, Revision, SyncMode, WatchError,
    WriteOp, Written,
};
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The one function that decides which shard owns a key (FNV-1a over the whole key).
pub fn shard_for_key(key: &[u8], shards: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h % shards as u64) as usize
}

pub fn shard_dir_name(id: usize) -> String {
    format!("shard-{id:03}")
}

/// What readers need: the key index and the segments it points into, under one lock so a
/// location is always resolved against the segment table it was read with.
pub struct ShardIndex {
    pub keys: KeyMap,
    /// Segments by id; `None` once retired.
    pub segs: Vec<Option<Arc<Segment>>>,
    /// Log order: segment sequence number → id.
    pub order: BTreeMap<u64, u32>,
    pub live_keys: u64,
    pub versions: u64,
}

impl ShardIndex {
    pub fn seg(&self, id: u32) -> &Arc<Segment> {
        self.segs[id as usize]
            .as_ref()
            .expect("index points at a retired segment")
    }

    fn add_segment(&mut self, seg: Arc<Segment>) {
        let id = seg.id as usize;
        if self.segs.len() <= id {
            self.segs.resize(id + 1, None);
        }
        self.order.insert(seg.header.seq, seg.id);
        self.segs[id] = Some(seg);
    }
}

/// A key-value view of a stored version.
pub fn kv_at(seg: &Arc<Segment>, key_len: usize, v: &Version) -> KeyValue {
    let loc = v.loc();
    let start = loc.off as usize + RECORD_HEADER_LEN;
    let view = &seg.bytes()[start..start + key_len + loc.value_len as usize];
    let backing: Arc<dyn Backing> = seg.clone();
    KeyValue::new_trusted(Value::of_view(backing, view), key_len, v.rev)
}

struct Meta {
    rev: Revision,
    off: u64,
    key_len: usize,
    value_len: u32,
    op: Op,
    prev: Option<(Arc<Segment>, Version)>,
    completion: Option<WriteCompletion>,
    /// For the no-op record of a refused write: the error its writer gets.
    error: Option<Error>,
}

/// Records appended to one segment since the flusher last took the pending batches.
struct Chunk {
    seg: Arc<Segment>,
    /// Where the batch header goes.
    offset: u64,
    buf: Vec<u8>,
    count: u32,
    first: Revision,
    last: Revision,
    metas: Vec<Meta>,
}

/// A batch the flusher is writing; writers may still read values out of it.
struct Sealed {
    seg: Arc<Segment>,
    offset: u64,
    buf: Vec<u8>,
    first: Revision,
    last: Revision,
}

struct WriterState {
    active: Arc<Segment>,
    /// Logical end of the active segment, pending records included.
    tail: u64,
    pending: Vec<Chunk>,
    inflight: Vec<Arc<Sealed>>,
    pending_bytes: usize,
    /// Records in `pending` (no-ops included).
    pending_records: usize,
    flusher_idle: bool,
    /// The flusher is waiting out its linger (see `flusher_loop`): a writer that takes
    /// `pending_bytes` past `COMMIT_LINGER_BYTES_MAX` wakes it early.
    flusher_lingering: bool,
    failed: Option<String>,
    shutdown: bool,
    next_seq: u64,
    next_id: u32,
}

#[derive(Default)]
pub struct ShardCounters {
    pub batches: AtomicU64,
    pub syncs: AtomicU64,
    pub bytes: AtomicU64,
    pub rewritten: AtomicU64,
}

pub struct Shard {
    pub id: usize,
    pub dir: PathBuf,
    sync: SyncMode,
    /// How long a busy flusher waits for more writes before a sync, and when.
    linger: Linger,
    limits: Limits,
    pub index: RwLock<ShardIndex>,
    w: Mutex<WriterState>,
    work: Condvar,
    seq: Arc<Sequencer>,
    pub counters: ShardCounters,
    /// Rank marks of recent paginated lists (see `list.rs`).
    ranks: Mutex<RankCache>,
}

/// The state recovered from a shard directory.
pub struct Recovered {
    pub index: ShardIndex,
    pub active: Arc<Segment>,
    pub max_rev: Revision,
    next_seq: u64,
    next_id: u32,
}

fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> Error {
    Error::Corrupt {
        segment: path.to_path_buf(),
        offset,
        reason: reason.into(),
    }
}

/// Opens every segment of a shard directory, verifies it, truncates a torn tail of the
/// newest segment, and rebuilds the index (compacted at `compacted`).
pub fn recover(
    id: usize,
    dir: &Path,
    limits: &Limits,
    compacted: Revision,
) -> Result<Recovered, Error> {
    std::fs::create_dir_all(dir)?;
    let mut files: Vec<(u64, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".tmp") {
            // An unfinished segment rewrite: the original is still in place.
            std::fs::remove_file(entry.path())?;
        } else if let Some(seq) = segment::parse_segment_file_name(&name) {
            files.push((seq, entry.path()));
        }
    }
    files.sort();
    let mut segs: Vec<Arc<Segment>> = Vec::new();
    let mut next_id = 0u32;
    let n_files = files.len();
    for (i, (seq, path)) in files.into_iter().enumerate() {
        let seg = match Segment::open(next_id, &path) {
            Ok(s) => s,
            Err(Error::Corrupt { .. }) if i + 1 == n_files && file_is_zero(&path)? => {
                // Crashed while creating the segment, before its header was synced.
                std::fs::remove_file(&path)?;
                segment::sync_dir(dir)?;
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

fn file_is_zero(path: &Path) -> std::io::Result<bool> {
    let b = std::fs::read(path)?;
    Ok(b.iter().all(|&x| x == 0))
}

fn new_segment(shard: usize, dir: &Path, id: u32, seq: u64, size: u64) -> Result<Segment, Error> {
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
    Ok(Segment::create(id, dir, header, size, None)?)
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

/// The smallest and largest key of a range.
pub type KeyBounds = (Box<[u8]>, Box<[u8]>);

impl Shard {
    pub fn new(
        id: usize,
        dir: PathBuf,
        r: Recovered,
        sync: SyncMode,
        linger: Linger,
        limits: Limits,
        seq: Arc<Sequencer>,
    ) -> Shard {
        let tail = r.active.data_end.load(Ordering::Acquire);
        Shard {
            id,
            dir,
            sync,
            linger: if sync == SyncMode::Always {
                linger
            } else {
                Linger::default()
            },
            limits,
            index: RwLock::new(r.index),
            w: Mutex::new(WriterState {
                active: r.active,
                tail,
                pending: Vec::new(),
                inflight: Vec::new(),
                pending_bytes: 0,
                pending_records: 0,
                flusher_idle: false,
                flusher_lingering: false,
                failed: None,
                shutdown: false,
                next_seq: r.next_seq,
                next_id: r.next_id,
            }),
            work: Condvar::new(),
            seq,
            counters: ShardCounters::default(),
            ranks: Mutex::new(RankCache::default()),
        }
    }

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
        if let Some(why) = &w.failed {
            return Err(Error::Failed(why.clone()));
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
        let rev = self.seq.allocate();
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
                // Without a segment the revision cannot be recorded: stop writing to this
                // shard rather than risk handing it out twice.
                w.failed = Some(format!("shard {}: cannot create a segment: {e}", self.id));
                self.seq.abort(rev);
                return Err(e);
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
        let seg = Arc::new(new_segment(self.id, &self.dir, id, w.next_seq, size)?);
        w.next_id += 1;
        w.next_seq += 1;
        self.index.write().add_segment(seg.clone());
        w.active = seg;
        w.tail = SEGMENT_HEADER_LEN as u64;
        Ok(())
    }

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

    /// Asks the flusher to drain and stop.
    pub fn shutdown(&self) {
        let mut w = self.w.lock();
        w.shutdown = true;
        self.work.notify_all();
    }

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

    /// Segments that may be rewritten: sealed (not active, nothing pending for them), all
    /// history at or below `compacted`, live bytes below `ratio` of their data.
    pub fn rewrite_candidates(&self, compacted: Revision, ratio: f64) -> Vec<(Arc<Segment>, bool)> {
        let w = self.w.lock();
        let busy: Vec<u32> = std::iter::once(w.active.id)
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
        if keep.is_empty() {
            self.retire(old, None)?;
            std::fs::remove_file(&old.path)?;
            segment::sync_dir(&self.dir)?;
            self.counters.rewritten.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        // 2. Write the new file: batches of up to 1 MiB of copied records.
        const BATCH_BYTES: usize = 1 << 20;
        let header = format::SegmentHeader {
            shard: self.id as u32,
            seq: old.header.seq,
            flags: format::SEG_FLAG_REWRITTEN,
            compacted,
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
        let tmp = self.dir.join(format!(
            "{}.tmp",
            segment::segment_file_name(old.header.seq)
        ));
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&image)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &old.path)?;
        segment::sync_dir(&self.dir)?;
        // 3. Swap it in and move the index entries over, a step at a time.
        let new_id = {
            let mut w = self.w.lock();
            let id = w.next_id;
            w.next_id += 1;
            id
        };
        let new = Arc::new(Segment::open(new_id, &old.path)?);
        for &(off, first, last, bend) in &batches {
            new.note_batch(off, first, last, bend);
        }
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

    pub fn segment_bytes(&self) -> (usize, u64) {
        let idx = self.index.read();
        let n = idx.order.len();
        let bytes = idx.order.values().map(|id| idx.seg(*id).capacity()).sum();
        (n, bytes)
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

/// The value length recorded in an encoded record.
fn span_value_len(rec: &[u8]) -> usize {
    format::get_u32(rec, format::REC_OFF_VALUE_LEN) as usize
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

    #[test]
    fn shard_for_key_is_stable_and_in_range() {
        // Stores on disk depend on this mapping never changing.
        assert_eq!(shard_for_key(b"/core/pods/default/a", 1), 0);
        let spread: std::collections::HashSet<usize> = (0..100)
            .map(|i| shard_for_key(format!("/k/{i}").as_bytes(), 4))
            .collect();
        assert_eq!(spread.len(), 4);
        assert_eq!(
            shard_for_key(b"abc", 7),
            (0xe71fa2190541574bu64 % 7) as usize
        );
    }
}
