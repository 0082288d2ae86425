//! `Engine`: the embedded store. Shards + the global sequencer + the watch hub + background
//! maintenance, behind the `Store` trait.
//!
//! Directory layout (see `FORMAT.md`):
//!
//! ```text
//! <dir>/LOCK            flock'd while open: one engine per directory
//! <dir>/SHARDS          shard count, fixed at creation ("2\ncrc32 <hex>\n")
//! <dir>/COMPACTED       compacted revision: u64 LE + crc32 of it
//! <dir>/MANIFEST        every shard's segments, their lengths and revisions; the revision
//!                       ceiling (`manifest.rs`, `keeper.rs`)
//! <dir>/shard-000/0000000000000001.seg ...
//! ```

use crate::health::{Failure, Health};
use crate::io::{DirLock, Io, DIR_MODE, FILE_MODE};
use crate::keeper::{write_atomically, Keeper, KeeperSetup, MANIFEST_FILE};
use crate::limits::LIST_PREALLOC_ITEMS_MAX;
use crate::list::{self, Chunk, Stream};
use crate::manifest::Manifest;
use crate::meta::{self, Layout};
use crate::report::{RecoveryNote, RecoveryReport};
use crate::sequencer::Sequencer;
use crate::shard::{self, Listing, Shard, ShardSetup};
use crate::store::{Capabilities, EventStream, Stats, ValueBuilder};
use crate::watch::{HistorySource, Hub};
use crate::{
    Error, Event, KeyValue, ListRequest, ListResult, Options, Pending, ReadAt, Revision, Store,
    WatchError, Watcher, WriteOp, Written,
};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

struct Inner {
    opts: Options,
    shards: Vec<Arc<Shard>>,
    seq: Arc<Sequencer>,
    hub: Arc<Hub>,
    health: Arc<Health>,
    keeper: Arc<Keeper>,
    compacted: AtomicU64,
    /// (when, visible revision) samples for the history window.
    times: Mutex<VecDeque<(Instant, Revision)>>,
    maintenance: Mutex<()>,
    stop: Mutex<bool>,
    stop_cv: Condvar,
}

pub struct Engine {
    inner: Arc<Inner>,
    threads: Vec<JoinHandle<()>>,
    closed: bool,
    /// What the open found and did (torn tails, repairs, upgrades).
    report: RecoveryReport,
    /// Held by the engine, not `Inner`: watchers may keep `Inner` alive after the engine is
    /// dropped, and the directory must be reopenable then.
    _lock: Box<dyn DirLock>,
}

fn check_options(opts: &Options) -> Result<(), Error> {
    let l = &opts.limits;
    let bad = |why: String| {
        Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            why,
        )))
    };
    if opts.shards == 0 || opts.shards > crate::limits::SHARDS_MAX {
        return bad(format!(
            "shards must be between 1 and {}",
            crate::limits::SHARDS_MAX
        ));
    }
    if l.revision_reserve < 2 {
        return bad("revision_reserve must be at least 2".into());
    }
    if l.segment_bytes > crate::index::SEGMENT_BYTES_MAX || l.segment_bytes < 64 * 1024 {
        return bad(format!(
            "segment_bytes {} outside [64 KiB, {}]",
            l.segment_bytes,
            crate::index::SEGMENT_BYTES_MAX
        ));
    }
    if l.value_bytes_max > crate::index::VALUE_BYTES_MAX || l.key_bytes_max > u16::MAX as usize {
        return bad("value_bytes_max or key_bytes_max above what the format can hold".into());
    }
    Ok(())
}

impl Engine {
    /// Opens (or creates) the store in `opts.dir`: checks the store's files and every shard's
    /// segments against the manifest (all shards in parallel, changing nothing), then drops
    /// torn tails (or, with `Options::repair`, damaged data), rebuilds the indexes, records
    /// the store in a new manifest, and starts one flusher thread per shard, the keeper's
    /// thread and the maintenance thread. Damaged acknowledged data is `Error::Corrupt`.
    pub fn open(opts: Options) -> Result<Engine, Error> {
        check_options(&opts)?;
        let io = opts.io.clone();
        io.create_dir_all(&opts.dir)?;
        let lock = io.lock_dir(&opts.dir)?;
        let loaded = meta::load(&*io, &opts.dir, opts.shards, opts.repair)?;
        let n = loaded.shards;
        let shard_dir = |i: usize| opts.dir.join(shard::shard_dir_name(i));
        let listing = |i: usize| match &loaded.layout {
            Layout::Listed(m) => Listing::Manifest {
                entries: &m.shards[i],
                clean: m.clean,
            },
            Layout::Fresh => Listing::Manifest {
                entries: &[],
                clean: false,
            },
            Layout::Upgrade | Layout::Rebuild => Listing::Scan,
        };
        let plans = on_threads(n, |i| {
            shard::verify(&*io, i, &shard_dir(i), listing(i), opts.repair)
        })?;

        // From here on the open changes the directory.
        let mut report = RecoveryReport::default();
        tighten(&*io, &opts.dir, n, &mut report)?;
        let mut rewrite = loaded.rewrite;
        let shards_first = rewrite.iter().position(|r| r.0 == meta::SHARDS_FILE);
        if let (Layout::Fresh, Some(i)) = (&loaded.layout, shards_first) {
            // A new store's shard count first: nothing else says it yet. (Anywhere else the
            // manifest comes first: `SHARDS` in the current format and no manifest is a store
            // that lost its manifest.)
            let (name, bytes, note) = rewrite.remove(i);
            write_atomically(&*io, &opts.dir, name, &bytes)?;
            note.into_iter().for_each(|n| report.note(n));
        }
        // The shard directories' names must be durable before anything synced inside them
        // counts: one sync of the store directory covers those just created.
        for i in 0..n {
            io.create_dir_all(&shard_dir(i))?;
        }
        io.sync_dir(&opts.dir)?;
        let max_seen = plans.iter().map(|p| p.max_seen).max().unwrap_or_default();
        let compacted = loaded.compacted;
        let applied = on_threads_owned(plans, |p| {
            let mut r = RecoveryReport::default();
            shard::apply(p, &*io, &opts.limits, compacted, &mut r).map(|rec| (rec, r))
        })?;
        let mut recs = Vec::with_capacity(n);
        for (rec, r) in applied {
            report.notes.extend(r.notes);
            recs.push(rec);
        }
        let current = recs
            .iter()
            .map(|r| r.max_rev)
            .max()
            .unwrap_or_default()
            .max(compacted);
        // Above every revision the last run may have handed out (`keeper.rs`).
        let step = opts.limits.revision_reserve;
        let (floor, generation, clean) = match &loaded.layout {
            Layout::Listed(m) => (m.ceiling.max(current), m.generation, m.clean),
            Layout::Fresh | Layout::Upgrade => (current, 0, true),
            // The manifest's ceiling is lost: the highest revision anywhere, plus the most a
            // ceiling can have been ahead of it.
            Layout::Rebuild => (Revision(current.0.max(max_seen.0) + 2 * step), 0, false),
        };
        let next = floor.next();
        if floor > current && (!clean || report.dropped_data()) {
            report.note(RecoveryNote::RevisionsSkipped {
                last_on_disk: current,
                next,
            });
        }
        let health = Arc::new(Health::default());
        let mut manifest = Manifest {
            generation,
            ceiling: Revision(floor.0 + step),
            compacted,
            clean: false,
            shards: recs.iter().map(|r| r.entries.clone()).collect(),
        };
        // A clean store opened without a change keeps its manifest until the first write: a
        // reopen that writes nothing costs no manifest write.
        let on_disk = match &loaded.layout {
            Layout::Listed(m) => {
                m.clean
                    && report.notes.is_empty()
                    && rewrite.is_empty()
                    && m.ceiling == floor
                    && m.compacted == compacted
                    && m.shards == manifest.shards
            }
            _ => false,
        };
        if on_disk {
            (manifest.ceiling, manifest.clean) = (floor, true);
        }
        let actives = recs.iter().map(|r| Some(r.active.clone())).collect();
        let setup = KeeperSetup {
            io: io.clone(),
            dir: opts.dir.clone(),
            health: health.clone(),
            reserve: step,
            sync: opts.sync,
        };
        let keeper = Arc::new(Keeper::create(setup, manifest, actives, on_disk)?);
        for (name, bytes, note) in rewrite {
            if name != MANIFEST_FILE {
                write_atomically(&*io, &opts.dir, name, &bytes)?;
            }
            note.into_iter().for_each(|n| report.note(n));
        }
        if matches!(loaded.layout, Layout::Upgrade) {
            report.note(RecoveryNote::Upgraded {
                from: 1,
                to: crate::format::FORMAT_VERSION,
            });
        }
        let hub = Arc::new(Hub::new(&opts.limits, current));
        let seq = Arc::new(Sequencer::new(
            current,
            next,
            hub.clone(),
            keeper.ceiling.clone(),
        ));
        let setup = ShardSetup {
            sync: opts.sync,
            linger: shard::Linger {
                max: opts.commit_linger,
                gate: opts.commit_linger_gate,
            },
            limits: opts.limits.clone(),
            io,
            seq: seq.clone(),
            health: health.clone(),
            keeper: keeper.clone(),
        };
        let shards: Vec<Arc<Shard>> = recs
            .into_iter()
            .enumerate()
            .map(|(i, r)| Arc::new(Shard::new(i, shard_dir(i), r, &setup)))
            .collect();
        let inner = Arc::new(Inner {
            opts,
            shards,
            seq,
            hub,
            health,
            keeper,
            compacted: AtomicU64::new(compacted.0),
            times: Mutex::new(VecDeque::from([(Instant::now(), current)])),
            maintenance: Mutex::new(()),
            stop: Mutex::new(false),
            stop_cv: Condvar::new(),
        });
        let mut threads = Vec::new();
        for s in &inner.shards {
            let s = s.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("keel-flush-{}", s.id))
                    .spawn(move || {
                        crate::sched::request_short_slice();
                        s.flusher_loop()
                    })?,
            );
        }
        let k = inner.keeper.clone();
        threads.push(
            std::thread::Builder::new()
                .name("keel-keeper".into())
                .spawn(move || k.run(crate::limits::MANIFEST_REFRESH_INTERVAL))?,
        );
        if let Some(every) = inner.opts.maintenance_interval {
            let i = inner.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("keel-maintenance".into())
                    .spawn(move || i.maintenance_loop(every))?,
            );
        }
        Ok(Engine {
            inner,
            threads,
            closed: false,
            report,
            _lock: lock,
        })
    }

    /// What the open found and did beyond the plain case (each note was logged too).
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.report
    }

    /// The revision the next write gets at the earliest: after an unclean shutdown, above
    /// every revision the previous run may have handed out.
    pub fn next_revision(&self) -> Revision {
        self.inner.seq.next()
    }

    /// Flushes what is pending, stops the background threads and ends every watcher.
    pub fn close(mut self) -> Result<(), Error> {
        self.shutdown();
        Ok(())
    }

    /// Refuses new writes (`Error::Closed`) and has every shard flush and acknowledge what is
    /// pending, without waiting for it: a lingering batch is synced at once. Reads and
    /// watches keep working; `close` (or drop) then waits for the flushers.
    pub fn stop_writes(&self) {
        for s in &self.inner.shards {
            s.shutdown();
        }
    }

    fn shutdown(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        *self.inner.stop.lock() = true;
        self.inner.stop_cv.notify_all();
        for s in &self.inner.shards {
            s.shutdown();
        }
        self.inner.keeper.stop();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Every flusher has drained: record the exact ends, and the last revision handed out
        // as the ceiling, so that a clean restart skips no revision.
        let last = Revision(self.inner.seq.next().0 - 1);
        if let Err(e) = self.inner.keeper.close(last) {
            eprintln!("keel-engine: recording the clean close in MANIFEST failed: {e}");
        }
        self.inner.hub.close();
    }

    /// `Store::watch` as the engine's own watcher type, whose `poll_visit` takes any closure
    /// without a dynamic call per event (the engine benchmark's watch scenario).
    pub fn watcher(&self, prefix: &[u8], after: Revision) -> Result<Watcher, Error> {
        let current = self.inner.seq.visible();
        if after > current {
            // The hub would start it at its head and deliver changes at or below `after`.
            return Err(Error::FutureRevision {
                requested: after,
                current,
            });
        }
        let source: Arc<dyn HistorySource> = self.inner.clone();
        self.inner.hub.watch(source, prefix, after)
    }

    pub fn stats(&self) -> Stats {
        let mut st = Stats {
            revision: self.inner.seq.visible(),
            compacted: Revision(self.inner.compacted.load(Ordering::Acquire)),
            shards: self.inner.shards.len(),
            watchers: self.inner.hub.watcher_count(),
            ..Stats::default()
        };
        for s in &self.inner.shards {
            {
                let idx = s.index.read();
                st.keys += idx.live_keys;
                st.versions += idx.versions;
            }
            let (n, bytes) = s.segment_bytes();
            st.segments += n;
            st.segment_bytes += bytes;
            st.batches_written += s.counters.batches.load(Ordering::Relaxed);
            st.syncs += s.counters.syncs.load(Ordering::Relaxed);
            st.bytes_written += s.counters.bytes.load(Ordering::Relaxed);
            st.segments_rewritten += s.counters.rewritten.load(Ordering::Relaxed);
        }
        st
    }

    /// `Err` once a write path failed (`EIO`, `ENOSPC`, ... on a `pwrite`, `fdatasync` or a
    /// segment creation): the engine then refuses every write with `Error::Failed` until it is
    /// closed and reopened (fail-stop, see `health.rs`), while reads keep working. The server
    /// fails `/readyz` and `/livez` on it; `Failure::is_no_space` tells a full disk from a
    /// failing one.
    pub fn health(&self) -> Result<(), Failure> {
        self.inner.health.check()
    }

    /// Waits until `revision` is visible; false on timeout.
    pub fn wait_for(&self, revision: Revision, timeout: Duration) -> bool {
        self.inner.seq.wait_for(revision, timeout)
    }

    /// One maintenance pass now: compacts history older than the history window, then
    /// rewrites sparse segments. Returns the number of segments rewritten.
    pub fn maintain(&self) -> Result<usize, Error> {
        self.inner.maintain()
    }

    /// Rewrites every segment whose live data fell below the threshold (after `compact`).
    pub fn rewrite_segments(&self) -> Result<usize, Error> {
        self.inner.rewrite_segments()
    }

    /// Which shard owns `key`.
    pub fn shard_of(&self, key: &[u8]) -> usize {
        shard::shard_for_key(key, self.inner.shards.len())
    }
}

/// Runs `f` for `0..n` on a thread each; the results in order, or the first error.
fn on_threads<T: Send>(
    n: usize,
    f: impl Fn(usize) -> Result<T, Error> + Sync,
) -> Result<Vec<T>, Error> {
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = (0..n).map(|i| s.spawn(move || f(i))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("recovery thread panicked"))
            .collect()
    })
}

/// `on_threads` over owned inputs.
fn on_threads_owned<I: Send, T: Send>(
    items: Vec<I>,
    f: impl Fn(I) -> Result<T, Error> + Sync,
) -> Result<Vec<T>, Error> {
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = items.into_iter().map(|it| s.spawn(move || f(it))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("recovery thread panicked"))
            .collect()
    })
}

/// Makes the store private: the directory `DIR_MODE`, the shard directories too, every file
/// the engine keeps in them `FILE_MODE`; notes what it changed.
fn tighten(
    io: &dyn Io,
    dir: &Path,
    shards: usize,
    report: &mut RecoveryReport,
) -> Result<(), Error> {
    let one = |path: &Path, max: u32, report: &mut RecoveryReport| -> Result<(), Error> {
        match io.restrict_mode(path, max) {
            Ok(Some(was)) => {
                report.note(RecoveryNote::Tightened {
                    path: path.to_path_buf(),
                    was: was & 0o7777,
                    now: was & max & 0o7777,
                });
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        }
    };
    one(dir, DIR_MODE, report)?;
    for name in [
        "LOCK",
        meta::SHARDS_FILE,
        meta::COMPACTED_FILE,
        MANIFEST_FILE,
    ] {
        one(&dir.join(name), FILE_MODE, report)?;
    }
    for i in 0..shards {
        let d = dir.join(shard::shard_dir_name(i));
        one(&d, DIR_MODE, report)?;
        let names = match io.list_dir(&d) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        for name in names {
            one(&d.join(name), FILE_MODE, report)?;
        }
    }
    Ok(())
}

/// Full lists of stores with at least this many live keys scan their shards in parallel.
const PARALLEL_LIST_ITEMS_MIN: usize = 50_000;
/// ... and whose listed range holds at least this many keys.
const PARALLEL_LIST_RANGE_MIN: usize = 20_000;

impl Engine {
    /// Whether a full walk of `prefix` is worth a thread per shard: the store is big and so is
    /// the range (a small collection in a big store is walked on the calling thread). The range
    /// is measured by counting at most `PARALLEL_LIST_RANGE_MIN` index keys.
    fn is_big(&self, prefix: &[u8]) -> bool {
        if self.live_keys() < PARALLEL_LIST_ITEMS_MIN as u64 {
            return false;
        }
        let mut left = PARALLEL_LIST_RANGE_MIN;
        for s in &self.inner.shards {
            left -= s.keys_under_capped(prefix, left);
            if left == 0 {
                return true;
            }
        }
        false
    }

    fn live_keys(&self) -> u64 {
        self.inner
            .shards
            .iter()
            .map(|s| s.index.read().live_keys)
            .sum()
    }

    /// Runs `f` on every shard, in shard order; on a thread per shard if `parallel` (the
    /// calling thread takes the first shard).
    fn on_shards<T, F>(&self, parallel: bool, f: F) -> Result<Vec<T>, Error>
    where
        T: Send,
        F: Fn(&Arc<Shard>) -> Result<T, Error> + Sync,
    {
        let shards = &self.inner.shards;
        if !parallel {
            return shards.iter().map(&f).collect();
        }
        std::thread::scope(|sc| {
            let f = &f;
            let handles: Vec<_> = shards[1..].iter().map(|s| sc.spawn(move || f(s))).collect();
            let mut out = vec![f(&shards[0])];
            out.extend(
                handles
                    .into_iter()
                    .map(|h| h.join().expect("list thread panicked")),
            );
            out.into_iter().collect()
        })
    }

    /// A full list as a pipeline: one scanner thread per shard walks its index and sends
    /// chunks of `KeyValue`s (bounded: `LIST_STREAM_CHUNKS_IN_FLIGHT`, recycled), while this
    /// thread merges them into the result. The scans, the merge and the result's first-touch
    /// page faults overlap; intermediate buffers are reused instead of being allocated per key.
    fn list_streamed(
        &self,
        req: &ListRequest<'_>,
        snap: Revision,
        sort_skip: Option<usize>,
    ) -> Result<Vec<KeyValue>, Error> {
        use std::sync::mpsc::sync_channel;
        const DEPTH: usize = crate::limits::LIST_STREAM_CHUNKS_IN_FLIGHT;
        let compacted = &self.inner.compacted;
        let mut out = Vec::with_capacity((self.live_keys() as usize).min(LIST_PREALLOC_ITEMS_MAX));
        advise_huge_pages(&out);
        std::thread::scope(|sc| {
            let mut streams = Vec::new();
            let mut handles = Vec::new();
            for s in &self.inner.shards {
                let (tx, rx) = sync_channel::<Chunk>(DEPTH);
                let (back_tx, back_rx) = sync_channel::<Chunk>(DEPTH);
                streams.push(Stream::new(rx, back_tx));
                handles.push(sc.spawn(move || {
                    s.stream(
                        (req.prefix, req.start_after),
                        snap,
                        compacted,
                        sort_skip,
                        || back_rx.try_recv().unwrap_or_default(),
                        |c| tx.send(c).is_ok(),
                    )
                }));
            }
            list::stream_merge(&mut streams, sort_skip.unwrap_or(0), &mut out);
            drop(streams);
            for h in handles {
                h.join().expect("list thread panicked")?;
            }
            Ok(out)
        })
    }

    /// How many leading bytes every key a list can return shares: the merge compares what
    /// follows. Every such key lies between the smallest and the largest key in the range.
    fn sort_skip(&self, req: &ListRequest<'_>) -> usize {
        let bounds: Vec<_> = self
            .inner
            .shards
            .iter()
            .filter_map(|s| s.key_bounds(req.prefix, req.start_after))
            .collect();
        let lo = bounds.iter().map(|b| &b.0).min();
        let hi = bounds.iter().map(|b| &b.1).max();
        match (lo, hi) {
            (Some(lo), Some(hi)) => lo.iter().zip(hi.iter()).take_while(|(a, b)| a == b).count(),
            _ => req.prefix.len(),
        }
    }
}

/// Asks the kernel to back a large result buffer with transparent huge pages where it allows
/// them (`madvise` mode): filling a million-item list otherwise takes one page fault per 4 KiB.
fn advise_huge_pages<T>(v: &Vec<T>) {
    const HUGE: usize = 2 << 20;
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < 2 * HUGE {
        return;
    }
    let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
    let end = (v.as_ptr() as usize + bytes) & !(HUGE - 1);
    if end > start {
        // SAFETY: the range lies inside the vector's allocation; MADV_HUGEPAGE only changes
        // how the kernel backs it, never its contents. A refusal is harmless and ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Inner {
    fn snapshot(&self, at: ReadAt) -> Result<Revision, Error> {
        let cur = self.seq.visible();
        match at {
            ReadAt::Latest => Ok(cur),
            ReadAt::NotOlderThan(r) | ReadAt::Exact(r) if r > cur => Err(Error::FutureRevision {
                requested: r,
                current: cur,
            }),
            ReadAt::NotOlderThan(_) => Ok(cur),
            ReadAt::Exact(r) => {
                let c = Revision(self.compacted.load(Ordering::Acquire));
                if r < c {
                    return Err(Error::Compacted {
                        requested: r,
                        compacted: c,
                    });
                }
                Ok(r)
            }
        }
    }

    fn shard(&self, key: &[u8]) -> &Arc<Shard> {
        &self.shards[shard::shard_for_key(key, self.shards.len())]
    }

    /// `Error::Failed` once the engine stopped: maintenance writes files too.
    fn check_health(&self) -> Result<(), Error> {
        self.health
            .check()
            .map_err(|f| Error::Failed(f.to_string()))
    }

    fn compact(&self, revision: Revision) -> Result<(), Error> {
        let _g = self.maintenance.lock();
        self.check_health()?;
        let cur = self.seq.visible();
        if revision > cur {
            return Err(Error::FutureRevision {
                requested: revision,
                current: cur,
            });
        }
        if revision.0 <= self.compacted.load(Ordering::Acquire) {
            return Ok(());
        }
        // Persist first: a crash after this point recovers to the same compacted state. The
        // manifest follows (`COMPACTED` may be ahead of it, never behind).
        meta::write_compacted(&*self.opts.io, &self.opts.dir, revision)?;
        self.keeper.set_compacted(revision)?;
        self.compacted.store(revision.0, Ordering::Release);
        for s in &self.shards {
            s.compact(revision);
        }
        Ok(())
    }

    fn rewrite_segments(&self) -> Result<usize, Error> {
        let _g = self.maintenance.lock();
        self.check_health()?;
        let c = Revision(self.compacted.load(Ordering::Acquire));
        let mut n = 0;
        for s in &self.shards {
            for (seg, is_first) in s.rewrite_candidates(c, self.opts.rewrite_live_ratio) {
                s.rewrite(&seg, is_first, c)?;
                n += 1;
            }
        }
        Ok(n)
    }

    fn maintain(&self) -> Result<usize, Error> {
        let now = Instant::now();
        let target = {
            let mut times = self.times.lock();
            times.push_back((now, self.seq.visible()));
            let horizon = now.checked_sub(self.opts.history);
            let mut target = None;
            if let Some(h) = horizon {
                while times.len() > 1 && times[1].0 <= h {
                    times.pop_front();
                }
                if times[0].0 <= h {
                    target = Some(times[0].1);
                }
            }
            target
        };
        if let Some(t) = target {
            self.compact(t)?;
        }
        self.rewrite_segments()
    }

    fn maintenance_loop(&self, every: Duration) {
        let mut stop = self.stop.lock();
        loop {
            if *stop {
                return;
            }
            self.stop_cv.wait_for(&mut stop, every);
            if *stop {
                return;
            }
            drop(stop);
            // A stopped engine writes nothing more; `Engine::health` already says why.
            if self.health.check().is_err() {
                return;
            }
            if let Err(e) = self.maintain() {
                eprintln!("keel-engine: maintenance failed: {e}");
            }
            stop = self.stop.lock();
        }
    }
}

impl HistorySource for Inner {
    fn read_history(
        &self,
        prefix: &[u8],
        after: Revision,
        upto: Revision,
        max: usize,
        out: &mut Vec<Arc<Event>>,
    ) -> Result<Revision, WatchError> {
        // Each shard yields up to `max` events in its own order; merge them and cut at the
        // lowest revision where some shard stopped early.
        let mut all = Vec::new();
        let mut bound = upto;
        for s in &self.shards {
            let mut evs = Vec::new();
            if let Some(stopped) = s.read_history(prefix, after, upto, max, &mut evs)? {
                bound = bound.min(stopped);
            }
            all.extend(evs);
        }
        all.retain(|e| e.revision() <= bound);
        all.sort_by_key(|e| e.revision());
        if all.len() > max {
            all.truncate(max);
            bound = all.last().expect("non-empty").revision();
        }
        out.extend(all);
        Ok(bound)
    }

    fn compacted_revision(&self) -> Revision {
        Revision(self.compacted.load(Ordering::Acquire))
    }
}

fn check_key(key: &[u8], max: usize) -> Result<(), Error> {
    if key.is_empty() {
        return Err(Error::EmptyKey);
    }
    if key.len() > max {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max,
        });
    }
    Ok(())
}

impl Store for Engine {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            revision_before_seal: true,
            compacts_itself: true,
        }
    }

    fn current_revision(&self) -> Revision {
        self.inner.seq.visible()
    }

    fn compacted_revision(&self) -> Revision {
        Revision(self.inner.compacted.load(Ordering::Acquire))
    }

    fn get(&self, key: &[u8], at: ReadAt) -> Result<Option<KeyValue>, Error> {
        let snap = self.inner.snapshot(at)?;
        self.inner.shard(key).get(key, snap, &self.inner.compacted)
    }

    /// Full lists of big stores stream each shard's keys from a thread per shard into the
    /// merge (`Engine::list_streamed`). Other lists: each shard scans its part (`Shard::scan`),
    /// `list::merge` keeps the page, and if keys remain each shard counts its keys after the
    /// page's last one (cheap once the snapshot's rank marks exist: the first page at a
    /// snapshot builds them).
    fn list(&self, req: &ListRequest<'_>) -> Result<ListResult, Error> {
        let snap = self.inner.snapshot(req.at)?;
        let compacted = &self.inner.compacted;
        let multi = self.inner.shards.len() > 1;
        let skip = if multi { self.sort_skip(req) } else { 0 };
        if req.limit == 0 && self.is_big(req.prefix) {
            let items = self.list_streamed(req, snap, multi.then_some(skip))?;
            return Ok(ListResult {
                items,
                revision: snap,
                more: false,
                remaining: 0,
            });
        }
        let parts = self.on_shards(false, |s| {
            s.scan(
                req.prefix,
                req.start_after,
                req.limit,
                snap,
                compacted,
                multi.then_some(skip),
            )
        })?;
        let (items, more) = list::merge(&parts, req.limit, skip);
        drop(parts);
        let remaining = match items.last() {
            Some(last) if more => {
                let key = last.key();
                let building = multi
                    && self
                        .inner
                        .shards
                        .iter()
                        .any(|s| !s.has_rank_marks(req.prefix, snap));
                let counts = self.on_shards(building && self.is_big(req.prefix), |s| {
                    s.count_after(req.prefix, key, snap, compacted)
                })?;
                counts.iter().sum()
            }
            _ => 0,
        };
        debug_assert_eq!(more, remaining > 0, "more and remaining disagree");
        Ok(ListResult {
            items,
            revision: snap,
            more: remaining > 0,
            remaining,
        })
    }

    fn write_with(
        &self,
        key: &[u8],
        op: WriteOp,
        build: &mut ValueBuilder<'_>,
    ) -> Pending<Result<Written, Error>> {
        if let Err(e) = check_key(key, self.inner.opts.limits.key_bytes_max) {
            return Pending::ready(Err(e));
        }
        self.inner.shard(key).write(key, op, build)
    }

    fn watch(&self, prefix: &[u8], after: Revision) -> Result<Box<dyn EventStream>, Error> {
        Ok(Box::new(self.watcher(prefix, after)?))
    }

    fn compact(&self, revision: Revision) -> Result<(), Error> {
        self.inner.compact(revision)
    }

    fn stats(&self) -> Option<Stats> {
        Some(Engine::stats(self))
    }

    fn health(&self) -> Result<(), String> {
        Engine::health(self).map_err(|f| {
            let disk = if f.is_no_space() {
                "disk full"
            } else {
                "I/O error"
            };
            format!("writes stopped ({disk}): {f}")
        })
    }

    fn stop_writes(&self) {
        Engine::stop_writes(self)
    }
}
