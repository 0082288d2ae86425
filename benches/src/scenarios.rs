//! The benchmark scenarios. Each takes a parent directory, makes its own fresh store under it
//! and returns a serializable result. See `README.md` for what each measures.

use crate::alloc::{self, HeapSnapshot};
use crate::backend::Backend;
use crate::hist::{self, Latency};
use crate::sys::{self, Rss};
use hdrhistogram::Histogram;
use keel_engine::{
    Error, Event, ListRequest, Options, Pending, Precondition, ReadAt, Revision, Stats, StoreExt,
    SyncMode, WriteOp, Written,
};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

pub type BenchResult<T> = Result<T, String>;

/// Size of every value written.
pub const VALUE_BYTES: usize = 1024;

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// A 1 KiB value of printable filler (not all zeroes, not compressible to nothing).
pub fn filler_value() -> Vec<u8> {
    (0..VALUE_BYTES)
        .map(|i| b'a' + ((i * 7 + i / 13) % 26) as u8)
        .collect()
}

fn configmap_key(buf: &mut String, i: u64) {
    buf.clear();
    write!(buf, "/core/configmaps/ns-{}/cm-{}", i % 100, i).expect("write to String");
}

fn open_store<B: Backend>(dir: &Path, shards: usize, sync: SyncMode) -> BenchResult<B> {
    let mut opts = Options::new(dir);
    opts.shards = shards;
    opts.sync = sync;
    B::open(opts).map_err(err("open store"))
}

fn close_store<B: Backend>(store: Arc<B>) -> BenchResult<()> {
    match Arc::try_unwrap(store) {
        Ok(s) => s.close().map_err(err("close store")),
        Err(_) => Err("store still shared at close (harness bug)".to_string()),
    }
}

fn per_sec(n: f64, d: Duration) -> f64 {
    n / d.as_secs_f64().max(1e-9)
}

// ---------------------------------------------------------------------------------------------
// Scenario 1: durable creates with N concurrent writers, and the raw-disk baseline.

#[derive(Clone, Debug)]
pub struct WritesConfig {
    pub writers: usize,
    /// Driver threads, each a tokio current-thread runtime with writers/threads tasks.
    pub threads: usize,
    pub shards: usize,
    pub duration: Duration,
    pub max_writes: u64,
    /// Cap on the raw baseline's duration (it extrapolates past it).
    pub raw_max: Duration,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RawResult {
    pub bytes: u64,
    pub syncs: u64,
    pub chunk_bytes: u64,
    /// Appends actually done (fewer than `syncs` when the baseline hit its time cap).
    pub appends_done: u64,
    pub elapsed_s: f64,
    pub mb_per_s: f64,
    pub syncs_per_s: f64,
    pub avg_sync_us: f64,
    pub truncated: bool,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct WritesResult {
    pub writers: usize,
    pub threads: usize,
    pub shards: usize,
    pub elapsed_s: f64,
    pub ok: u64,
    pub errors: u64,
    pub busy: u64,
    pub first_error: Option<String>,
    pub writes_per_s: f64,
    pub latency: Latency,
    /// Engine `stats()` deltas over the run.
    pub bytes_written: u64,
    pub syncs: u64,
    pub batches_written: u64,
    pub engine_mb_per_s: f64,
    /// bytes_written / syncs.
    pub avg_group_bytes: f64,
    pub writes_per_sync: f64,
    pub writes_per_batch: f64,
    /// Process CPU (user + system) over the run, all threads, and per acknowledged write.
    pub cpu_s: f64,
    pub cpu_us_per_write: f64,
    pub keys_after: u64,
    pub segments_after: usize,
    pub segment_bytes_after: u64,
    pub raw: Option<RawResult>,
    /// Engine bytes/s as a percentage of the raw append+fdatasync baseline.
    pub engine_pct_of_raw: Option<f64>,
    /// Informational: the same appends spread over one file and thread per shard, syncing
    /// in parallel (the engine syncs each shard's file independently).
    pub raw_parallel: Option<RawResult>,
    pub engine_pct_of_raw_parallel: Option<f64>,
}

#[derive(Default)]
struct WriterAgg {
    hist: Option<Histogram<u64>>,
    ok: u64,
    errors: u64,
    busy: u64,
    first_error: Option<String>,
}

fn fatal(e: &Error) -> bool {
    matches!(
        e,
        Error::Closed | Error::Failed(_) | Error::Io(_) | Error::Corrupt { .. }
    )
}

struct WriterShared<B> {
    store: Arc<B>,
    next: AtomicU64,
    stop: AtomicBool,
    max: u64,
    value: Vec<u8>,
}

async fn writer_task<B: Backend>(sh: Arc<WriterShared<B>>, agg: Rc<RefCell<WriterAgg>>) {
    let mut key = String::with_capacity(64);
    loop {
        if sh.stop.load(Relaxed) {
            break;
        }
        let i = sh.next.fetch_add(1, Relaxed);
        if i >= sh.max {
            break;
        }
        configmap_key(&mut key, i);
        let t0 = Instant::now();
        let r = sh.store.create(key.as_bytes(), &sh.value).await;
        let ns = t0.elapsed().as_nanos() as u64;
        let busy = {
            let mut a = agg.borrow_mut();
            match r {
                Ok(_) => {
                    a.ok += 1;
                    hist::record(a.hist.as_mut().expect("hist"), ns);
                    false
                }
                Err(Error::Busy) => {
                    a.busy += 1;
                    true
                }
                Err(e) => {
                    a.errors += 1;
                    if a.first_error.is_none() {
                        a.first_error = Some(e.to_string());
                    }
                    if fatal(&e) {
                        sh.stop.store(true, Relaxed);
                    }
                    false
                }
            }
        };
        if busy {
            tokio::task::yield_now().await;
        }
    }
}

pub fn run_writes<B: Backend>(parent: &Path, cfg: &WritesConfig) -> BenchResult<WritesResult> {
    let dir = tempfile::Builder::new()
        .prefix("writes-")
        .tempdir_in(parent)
        .map_err(err("tempdir"))?;
    let store = Arc::new(open_store::<B>(dir.path(), cfg.shards, SyncMode::Always)?);
    let threads = cfg.threads.max(1).min(cfg.writers.max(1));
    let sh = Arc::new(WriterShared {
        store: store.clone(),
        next: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        max: if cfg.max_writes == 0 {
            u64::MAX
        } else {
            cfg.max_writes
        },
        value: filler_value(),
    });
    let start_barrier = Arc::new(Barrier::new(threads + 1));
    let s0 = store.counters();
    let cpu0 = sys::cpu_seconds();
    let mut handles = Vec::new();
    for t in 0..threads {
        let tasks = cfg.writers / threads + usize::from(t < cfg.writers % threads);
        let sh = sh.clone();
        let barrier = start_barrier.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("writer-rt-{t}"))
                .spawn(move || -> BenchResult<WriterAgg> {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .map_err(err("runtime"))?;
                    let local = tokio::task::LocalSet::new();
                    let agg = Rc::new(RefCell::new(WriterAgg {
                        hist: Some(hist::new_hist()),
                        ..WriterAgg::default()
                    }));
                    barrier.wait();
                    local.block_on(&rt, async {
                        let hs: Vec<_> = (0..tasks)
                            .map(|_| tokio::task::spawn_local(writer_task(sh.clone(), agg.clone())))
                            .collect();
                        for h in hs {
                            let _ = h.await;
                        }
                    });
                    drop(local);
                    Ok(agg.take())
                })
                .map_err(err("spawn"))?,
        );
    }
    start_barrier.wait();
    let t0 = Instant::now();
    while t0.elapsed() < cfg.duration && !sh.stop.load(Relaxed) {
        if sh.next.load(Relaxed) >= sh.max {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    sh.stop.store(true, Relaxed);
    let mut total = WriterAgg {
        hist: Some(hist::new_hist()),
        ..WriterAgg::default()
    };
    for h in handles {
        let a = h
            .join()
            .map_err(|_| "writer thread panicked".to_string())??;
        total.ok += a.ok;
        total.errors += a.errors;
        total.busy += a.busy;
        if total.first_error.is_none() {
            total.first_error = a.first_error;
        }
        if let (Some(t), Some(h)) = (total.hist.as_mut(), a.hist.as_ref()) {
            t.add(h).map_err(err("merge histograms"))?;
        }
    }
    let elapsed = t0.elapsed();
    let cpu = sys::cpu_seconds() - cpu0;
    let s1 = store.counters();
    drop(sh);
    close_store(store)?;
    drop(dir);

    let bytes = s1.bytes_written.saturating_sub(s0.bytes_written);
    let syncs = s1.syncs.saturating_sub(s0.syncs);
    let batches = s1.batches_written.saturating_sub(s0.batches_written);
    let mut r = WritesResult {
        writers: cfg.writers,
        threads,
        shards: s1.shards,
        elapsed_s: elapsed.as_secs_f64(),
        ok: total.ok,
        errors: total.errors,
        busy: total.busy,
        first_error: total.first_error,
        writes_per_s: per_sec(total.ok as f64, elapsed),
        latency: hist::summarize(total.hist.as_ref().expect("hist")),
        bytes_written: bytes,
        syncs,
        batches_written: batches,
        engine_mb_per_s: per_sec(bytes as f64, elapsed) / 1e6,
        avg_group_bytes: if syncs > 0 {
            bytes as f64 / syncs as f64
        } else {
            0.0
        },
        writes_per_sync: if syncs > 0 {
            total.ok as f64 / syncs as f64
        } else {
            0.0
        },
        writes_per_batch: if batches > 0 {
            total.ok as f64 / batches as f64
        } else {
            0.0
        },
        cpu_s: cpu,
        cpu_us_per_write: if total.ok > 0 {
            cpu * 1e6 / total.ok as f64
        } else {
            0.0
        },
        keys_after: s1.keys,
        segments_after: s1.segments,
        segment_bytes_after: s1.segment_bytes,
        raw: None,
        engine_pct_of_raw: None,
        raw_parallel: None,
        engine_pct_of_raw_parallel: None,
    };
    if bytes > 0 && syncs > 0 {
        let raw = raw_baseline(parent, bytes, syncs, cfg.raw_max)?;
        if raw.mb_per_s > 0.0 {
            r.engine_pct_of_raw = Some(100.0 * r.engine_mb_per_s / raw.mb_per_s);
        }
        r.raw = Some(raw);
        let files = r.shards.max(1) as u64;
        if files > 1 {
            let par = raw_baseline_parallel(parent, bytes, syncs, files, cfg.raw_max)?;
            if par.mb_per_s > 0.0 {
                r.engine_pct_of_raw_parallel = Some(100.0 * r.engine_mb_per_s / par.mb_per_s);
            }
            r.raw_parallel = Some(par);
        }
    }
    Ok(r)
}

/// Like `raw_baseline`, but the `syncs` appends are split over `files` files, each appended
/// and synced by its own thread at the same time.
pub fn raw_baseline_parallel(
    parent: &Path,
    bytes: u64,
    syncs: u64,
    files: u64,
    max: Duration,
) -> BenchResult<RawResult> {
    let chunk = (bytes / syncs).max(1);
    let per_file = syncs.div_ceil(files);
    let barrier = Barrier::new(files as usize);
    let t0 = Instant::now();
    let done: Vec<BenchResult<(u64, Duration)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..files)
            .map(|f| {
                let barrier = &barrier;
                s.spawn(move || -> BenchResult<(u64, Duration)> {
                    let n = per_file.min(syncs - (f * per_file).min(syncs));
                    let buf = vec![0x5au8; chunk as usize];
                    let file = tempfile::Builder::new()
                        .prefix("raw-parallel-")
                        .tempfile_in(parent)
                        .map_err(err("raw baseline file"))?;
                    let mut fh = file.as_file();
                    barrier.wait();
                    let t0 = Instant::now();
                    let mut k = 0;
                    while k < n {
                        fh.write_all(&buf).map_err(err("raw append"))?;
                        fh.sync_data().map_err(err("raw fdatasync"))?;
                        k += 1;
                        if t0.elapsed() > max {
                            break;
                        }
                    }
                    Ok((k, t0.elapsed()))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("raw thread panicked"))
            .collect()
    });
    let _ = t0;
    let mut appends = 0;
    let mut slowest = Duration::ZERO;
    for d in done {
        let (k, dt) = d?;
        appends += k;
        slowest = slowest.max(dt);
    }
    let truncated = appends < syncs;
    let elapsed = slowest.as_secs_f64() * syncs as f64 / appends.max(1) as f64;
    let total = chunk * syncs;
    Ok(RawResult {
        bytes: total,
        syncs,
        chunk_bytes: chunk,
        appends_done: appends,
        elapsed_s: elapsed,
        mb_per_s: total as f64 / elapsed.max(1e-9) / 1e6,
        syncs_per_s: syncs as f64 / elapsed.max(1e-9),
        avg_sync_us: elapsed * 1e6 * files as f64 / syncs as f64,
        truncated,
    })
}

/// Appends `bytes` to a fresh file in `syncs` appends of `bytes / syncs` each, each followed by
/// `fdatasync`, from one thread. Stops after `max` and extrapolates (marked `truncated`).
pub fn raw_baseline(
    parent: &Path,
    bytes: u64,
    syncs: u64,
    max: Duration,
) -> BenchResult<RawResult> {
    let chunk = (bytes / syncs).max(1);
    let (done, measured) =
        append_sync_loop(parent, "raw-baseline-", chunk as usize, syncs, max, |_| {})?;
    let truncated = done < syncs;
    // Time for all `syncs` appends, extrapolated when cut short.
    let elapsed = measured.as_secs_f64() * syncs as f64 / done as f64;
    let total = chunk * syncs;
    Ok(RawResult {
        bytes: total,
        syncs,
        chunk_bytes: chunk,
        appends_done: done,
        elapsed_s: elapsed,
        mb_per_s: total as f64 / elapsed.max(1e-9) / 1e6,
        syncs_per_s: syncs as f64 / elapsed.max(1e-9),
        avg_sync_us: elapsed * 1e6 / syncs as f64,
        truncated,
    })
}

/// Bytes per append of the disk-sync probe: one engine value.
pub const DISK_PROBE_CHUNK_BYTES: usize = VALUE_BYTES;
/// The disk-sync probe stops after this many appends even if its time is not up.
pub const DISK_PROBE_SYNCS_MAX: u64 = 200_000;

/// The disk alone: latency of appending one small chunk to a file and `fdatasync`ing it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DiskSyncResult {
    pub chunk_bytes: usize,
    pub elapsed_s: f64,
    /// Each append + `fdatasync`, timed from before the write to after the sync returned.
    pub latency: Latency,
}

/// Appends `DISK_PROBE_CHUNK_BYTES` + `fdatasync` to a fresh file in `dir`, from one thread,
/// one after another, for `duration` (at most `DISK_PROBE_SYNCS_MAX` times), timing each.
pub fn disk_sync_probe(dir: &Path, duration: Duration) -> BenchResult<DiskSyncResult> {
    let mut h = hist::new_hist();
    let (_, elapsed) = append_sync_loop(
        dir,
        "disk-probe-",
        DISK_PROBE_CHUNK_BYTES,
        DISK_PROBE_SYNCS_MAX,
        duration,
        |took| hist::record(&mut h, took.as_nanos() as u64),
    )?;
    Ok(DiskSyncResult {
        chunk_bytes: DISK_PROBE_CHUNK_BYTES,
        elapsed_s: elapsed.as_secs_f64(),
        latency: hist::summarize(&h),
    })
}

/// Appends `chunk` bytes to a fresh file in `parent` followed by `fdatasync`, one pair after
/// another from this thread, until `appends` pairs are done or `max` has passed (at least one
/// pair runs); `each` gets every pair's duration. Returns the pairs done and the time taken.
fn append_sync_loop(
    parent: &Path,
    prefix: &str,
    chunk: usize,
    appends: u64,
    max: Duration,
    mut each: impl FnMut(Duration),
) -> BenchResult<(u64, Duration)> {
    let buf = vec![0x5au8; chunk];
    let file = tempfile::Builder::new()
        .prefix(prefix)
        .tempfile_in(parent)
        .map_err(err("append+fdatasync file"))?;
    let mut f = file.as_file();
    let t0 = Instant::now();
    let mut done = 0u64;
    while done < appends {
        let t = Instant::now();
        f.write_all(&buf).map_err(err("append"))?;
        f.sync_data().map_err(err("fdatasync"))?;
        each(t.elapsed());
        done += 1;
        if t0.elapsed() > max {
            break;
        }
    }
    Ok((done, t0.elapsed()))
}

// ---------------------------------------------------------------------------------------------
// Scenarios 2-4: one store of N keys: load, heap per key, full and paginated scans, reopen.

#[derive(Clone, Debug)]
pub struct StoreConfig {
    pub keys: u64,
    pub shards: usize,
    pub load_threads: usize,
    /// Writes in flight per load thread.
    pub load_window: usize,
    pub scan_reps: usize,
    pub page_limit: usize,
    /// The paginated scan stops after this long (marked truncated).
    pub paged_max: Duration,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadResult {
    pub keys: u64,
    pub ok: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub elapsed_s: f64,
    pub writes_per_s: f64,
    pub key_bytes: u64,
    pub value_bytes: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct HeapResult {
    pub before: HeapSnapshot,
    pub after: HeapSnapshot,
    /// (after - before - key bytes) / keys, requested bytes.
    pub bytes_per_key_beyond_key: f64,
    /// The same with malloc's rounding (malloc_usable_size).
    pub usable_bytes_per_key_beyond_key: f64,
    pub blocks_per_key: f64,
    pub avg_key_bytes: f64,
    pub rss_before: Rss,
    pub rss_after: Rss,
    /// The same measure after the reopen (index rebuilt from disk).
    pub reopened_bytes_per_key_beyond_key: Option<f64>,
    pub reopened_rss: Option<Rss>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ScanResult {
    pub revision: u64,
    pub keys: u64,
    pub reps_s: Vec<f64>,
    pub best_s: f64,
    pub median_s: f64,
    /// keys / median time.
    pub keys_per_s: f64,
    pub best_keys_per_s: f64,
    pub paged_limit: usize,
    pub paged_pages: u64,
    pub paged_keys: u64,
    pub paged_s: f64,
    pub pages_per_s: f64,
    pub paged_keys_per_s: f64,
    /// The paginated scan hit its time cap before the end.
    pub paged_truncated: bool,
    /// Average time of the first and of the last 10 pages.
    pub paged_first_pages_ms: f64,
    pub paged_last_pages_ms: f64,
    pub after_reopen_keys_per_s: Option<f64>,
    pub errors: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ReopenResult {
    pub keys: u64,
    pub close_s: f64,
    pub open_s: f64,
    pub warm_cache: bool,
    pub disk_apparent_bytes: u64,
    pub disk_allocated_bytes: u64,
    pub disk_files: u64,
    pub stats_before_close: StatsLite,
    pub stats_after_open: StatsLite,
    pub keys_match: bool,
    pub revision_match: bool,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct StatsLite {
    pub revision: u64,
    pub keys: u64,
    pub versions: u64,
    pub segments: usize,
    pub segment_bytes: u64,
    pub shards: usize,
}

impl From<&Stats> for StatsLite {
    fn from(s: &Stats) -> Self {
        StatsLite {
            revision: s.revision.get(),
            keys: s.keys,
            versions: s.versions,
            segments: s.segments,
            segment_bytes: s.segment_bytes,
            shards: s.shards,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct StoreResult {
    pub load: LoadResult,
    pub heap: HeapResult,
    pub scan: ScanResult,
    pub reopen: ReopenResult,
}

/// Loads keys 0..n with a window of writes in flight per thread. Returns the load figures.
pub fn load<B: Backend>(store: &Arc<B>, n: u64, threads: usize, window: usize) -> LoadResult {
    let t0 = Instant::now();
    let threads = threads.max(1) as u64;
    let results: Vec<(u64, u64, u64, Option<String>)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let store = store.clone();
                s.spawn(move || {
                    let value = filler_value();
                    let mut key = String::with_capacity(64);
                    let mut q: VecDeque<Pending<Result<Written, Error>>> =
                        VecDeque::with_capacity(window);
                    let (mut ok, mut errors, mut key_bytes) = (0u64, 0u64, 0u64);
                    let mut first: Option<String> = None;
                    let mut settle = |r: Result<Written, Error>| match r {
                        Ok(_) => ok += 1,
                        Err(e) => {
                            errors += 1;
                            if first.is_none() {
                                first = Some(e.to_string());
                            }
                        }
                    };
                    let mut i = t;
                    while i < n {
                        configmap_key(&mut key, i);
                        key_bytes += key.len() as u64;
                        q.push_back(store.create(key.as_bytes(), &value));
                        if q.len() >= window.max(1) {
                            settle(q.pop_front().expect("window").wait());
                        }
                        i += threads;
                    }
                    while let Some(p) = q.pop_front() {
                        settle(p.wait());
                    }
                    drop(q);
                    (ok, errors, key_bytes, first)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("load thread panicked"))
            .collect()
    });
    let elapsed = t0.elapsed();
    let mut r = LoadResult {
        keys: n,
        ..LoadResult::default()
    };
    for (ok, errors, kb, first) in results {
        r.ok += ok;
        r.errors += errors;
        r.key_bytes += kb;
        if r.first_error.is_none() {
            r.first_error = first;
        }
    }
    r.value_bytes = r.ok * VALUE_BYTES as u64;
    r.elapsed_s = elapsed.as_secs_f64();
    r.writes_per_s = per_sec(r.ok as f64, elapsed);
    r
}

const CM_PREFIX: &[u8] = b"/core/configmaps/";

fn full_scan<B: Backend>(store: &B, rev: Revision) -> BenchResult<(Duration, u64)> {
    let req = ListRequest {
        prefix: CM_PREFIX,
        start_after: None,
        limit: 0,
        at: ReadAt::Exact(rev),
    };
    let t0 = Instant::now();
    let res = store.list(&req).map_err(err("full list"))?;
    let dt = t0.elapsed();
    let n = res.items.len() as u64;
    drop(res);
    Ok((dt, n))
}

struct PagedScan {
    elapsed: Duration,
    pages: u64,
    keys: u64,
    truncated: bool,
    first_pages_ms: f64,
    last_pages_ms: f64,
}

fn paged_scan<B: Backend>(
    store: &B,
    rev: Revision,
    limit: usize,
    max: Duration,
) -> BenchResult<PagedScan> {
    let t0 = Instant::now();
    let mut truncated = false;
    let mut page_times: Vec<f64> = Vec::new();
    let mut last: Option<Vec<u8>> = None;
    let (mut pages, mut keys) = (0u64, 0u64);
    loop {
        let req = ListRequest {
            prefix: CM_PREFIX,
            start_after: last.as_deref(),
            limit,
            at: ReadAt::Exact(rev),
        };
        let tp = Instant::now();
        let res = store.list(&req).map_err(err("paged list"))?;
        page_times.push(tp.elapsed().as_secs_f64());
        pages += 1;
        keys += res.items.len() as u64;
        let more = res.more;
        match res.items.last() {
            Some(kv) if more => last = Some(kv.key().to_vec()),
            _ => break,
        }
        if t0.elapsed() > max {
            truncated = true;
            break;
        }
    }
    let k = page_times.len().min(10);
    let avg = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    Ok(PagedScan {
        elapsed: t0.elapsed(),
        pages,
        keys,
        truncated,
        first_pages_ms: avg(&page_times[..k]) * 1e3,
        last_pages_ms: avg(&page_times[page_times.len() - k..]) * 1e3,
    })
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if s.is_empty() {
        0.0
    } else {
        s[s.len() / 2]
    }
}

pub fn run_store<B: Backend>(
    parent: &Path,
    cfg: &StoreConfig,
    progress: &dyn Fn(&str),
) -> BenchResult<StoreResult> {
    let dir = tempfile::Builder::new()
        .prefix("store-")
        .tempdir_in(parent)
        .map_err(err("tempdir"))?;
    let mut out = StoreResult::default();

    // Load with SyncMode::None, measuring the live heap around it.
    let store = Arc::new(open_store::<B>(dir.path(), cfg.shards, SyncMode::None)?);
    let heap_before = alloc::snapshot();
    let rss_before = sys::rss();
    progress(&format!("loading {} keys (SyncMode::None)", cfg.keys));
    out.load = load(&store, cfg.keys, cfg.load_threads, cfg.load_window);
    if out.load.ok != cfg.keys {
        return Err(format!(
            "load: {} of {} creates succeeded; first error: {:?}",
            out.load.ok, cfg.keys, out.load.first_error
        ));
    }
    let rev = store.current_revision();
    // Let background work (flushes) settle before reading the heap.
    std::thread::sleep(Duration::from_millis(300));
    let heap_after = alloc::snapshot();
    let rss_after = sys::rss();
    let n = cfg.keys.max(1) as f64;
    let kb = out.load.key_bytes as f64;
    out.heap = HeapResult {
        before: heap_before,
        after: heap_after,
        bytes_per_key_beyond_key: ((heap_after.requested - heap_before.requested) as f64 - kb) / n,
        usable_bytes_per_key_beyond_key: ((heap_after.usable - heap_before.usable) as f64 - kb) / n,
        blocks_per_key: (heap_after.blocks - heap_before.blocks) as f64 / n,
        avg_key_bytes: kb / n,
        rss_before,
        rss_after,
        reopened_bytes_per_key_beyond_key: None,
        reopened_rss: None,
    };

    // Full scans at the snapshot, then a paginated scan.
    progress("full scans");
    out.scan.revision = rev.get();
    for _ in 0..cfg.scan_reps.max(1) {
        match full_scan(&*store, rev) {
            Ok((dt, got)) => {
                out.scan.keys = got;
                out.scan.reps_s.push(dt.as_secs_f64());
                if got != cfg.keys {
                    out.scan
                        .errors
                        .push(format!("full scan returned {got} of {} keys", cfg.keys));
                }
            }
            Err(e) => {
                out.scan.errors.push(e);
                break;
            }
        }
    }
    if !out.scan.reps_s.is_empty() {
        out.scan.best_s = out.scan.reps_s.iter().cloned().fold(f64::MAX, f64::min);
        out.scan.median_s = median(&out.scan.reps_s);
        out.scan.keys_per_s = out.scan.keys as f64 / out.scan.median_s.max(1e-9);
        out.scan.best_keys_per_s = out.scan.keys as f64 / out.scan.best_s.max(1e-9);
    }
    progress(&format!("paginated scan (limit {})", cfg.page_limit));
    out.scan.paged_limit = cfg.page_limit;
    match paged_scan(&*store, rev, cfg.page_limit, cfg.paged_max) {
        Ok(PagedScan {
            elapsed: dt,
            pages,
            keys,
            truncated,
            first_pages_ms,
            last_pages_ms,
        }) => {
            out.scan.paged_truncated = truncated;
            out.scan.paged_first_pages_ms = first_pages_ms;
            out.scan.paged_last_pages_ms = last_pages_ms;
            out.scan.paged_pages = pages;
            out.scan.paged_keys = keys;
            out.scan.paged_s = dt.as_secs_f64();
            out.scan.pages_per_s = per_sec(pages as f64, dt);
            out.scan.paged_keys_per_s = per_sec(keys as f64, dt);
            if keys != cfg.keys && !truncated {
                out.scan.errors.push(format!(
                    "paginated scan returned {keys} of {} keys",
                    cfg.keys
                ));
            }
        }
        Err(e) => out.scan.errors.push(e),
    }

    // Close, measure the directory, reopen.
    progress("close + reopen");
    let before_close = store.counters();
    out.reopen.stats_before_close = StatsLite::from(&before_close);
    out.reopen.keys = cfg.keys;
    let t0 = Instant::now();
    close_store(store)?;
    out.reopen.close_s = t0.elapsed().as_secs_f64();
    let (apparent, allocated, files) = sys::dir_size(dir.path());
    out.reopen.disk_apparent_bytes = apparent;
    out.reopen.disk_allocated_bytes = allocated;
    out.reopen.disk_files = files;
    out.reopen.warm_cache = true;
    let heap_closed = alloc::snapshot();
    let t0 = Instant::now();
    let store = open_store::<B>(dir.path(), cfg.shards, SyncMode::Always)?;
    out.reopen.open_s = t0.elapsed().as_secs_f64();
    let after = store.counters();
    out.reopen.stats_after_open = StatsLite::from(&after);
    out.reopen.keys_match = after.keys == before_close.keys;
    out.reopen.revision_match = store.current_revision() == rev;
    let heap_reopened = alloc::snapshot();
    out.heap.reopened_bytes_per_key_beyond_key =
        Some(((heap_reopened.requested - heap_closed.requested) as f64 - kb) / n);
    out.heap.reopened_rss = Some(sys::rss());
    match full_scan(&store, rev) {
        Ok((dt, got)) => out.scan.after_reopen_keys_per_s = Some(per_sec(got as f64, dt)),
        Err(e) => out.scan.errors.push(format!("after reopen: {e}")),
    }
    store.close().map_err(err("close reopened store"))?;
    drop(dir);
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Scenario 5: many watchers on one prefix while a paced writer writes.

#[derive(Clone, Debug)]
pub struct WatchConfig {
    pub watchers: usize,
    pub threads: usize,
    pub shards: usize,
    pub rate: u64,
    pub duration: Duration,
    /// Distinct keys: the first `keys` writes create, later ones update.
    pub keys: u64,
    /// How long watchers may take to drain after the last write was acknowledged.
    pub drain_timeout: Duration,
    /// Length of the raw disk-sync probe run in the same directory before the store opens
    /// (`disk_sync_probe`); zero skips it.
    pub disk_probe: Duration,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct WatchResult {
    pub watchers: usize,
    pub threads: usize,
    pub target_rate: u64,
    pub duration_s: f64,
    pub watch_setup_s: f64,
    pub submitted: u64,
    pub acked: u64,
    pub write_errors: u64,
    pub first_write_error: Option<String>,
    pub achieved_rate: f64,
    /// Largest delay of a submission behind its schedule.
    pub max_pacing_lag_us: f64,
    pub write_latency: Latency,
    /// Receive instant minus `Event::visible_at` (the instant the engine published the
    /// revision, committed, to its watchers): the figure held to the target.
    pub delivery_from_commit: Latency,
    /// Receive instant minus the submit timestamp embedded in the value: includes the commit
    /// (group commit and `fdatasync`).
    pub delivery_from_submit: Latency,
    /// Deliveries whose event had no `visible_at` (not timed from commit; expected 0).
    pub deliveries_without_visible_at: u64,
    /// The disk alone in the same directory: 1 KiB append + `fdatasync` latency.
    pub disk_sync: Option<DiskSyncResult>,
    pub complete_watchers: usize,
    pub watchers_with_missing: usize,
    pub watchers_with_dups: usize,
    pub watchers_with_errors: usize,
    pub watchers_unfinished: usize,
    pub total_deliveries: u64,
    pub min_events_per_watcher: u64,
    pub max_events_per_watcher: u64,
    /// Non-consecutive revision steps seen (informational: the store has no other writers).
    pub revision_gaps: u64,
    pub first_watch_error: Option<String>,
    pub drain_s: f64,
    /// Process CPU (user + system, all threads) during the paced writing, as cores busy.
    pub cpu_cores_busy: f64,
}

#[derive(Clone, Default)]
struct WatcherStat {
    count: u64,
    rev_sum: u128,
    dups: u64,
    gaps: u64,
    last: u64,
    error: Option<String>,
    finished: bool,
}

struct WatchAgg {
    stats: Vec<WatcherStat>,
    from_commit: Histogram<u64>,
    from_submit: Histogram<u64>,
    unstamped: u64,
}

impl WatchAgg {
    fn new(watchers: usize) -> WatchAgg {
        WatchAgg {
            stats: vec![WatcherStat::default(); watchers],
            from_commit: hist::new_hist(),
            from_submit: hist::new_hist(),
            unstamped: 0,
        }
    }

    /// Times `n` deliveries of events published together at `at` (`Event::visible_at` of any
    /// of them), received at `received`: one histogram entry for the group.
    fn record_stamp_group(&mut self, at: Option<Instant>, n: u64, received: Instant) {
        match at {
            Some(at) => {
                let ns = received.saturating_duration_since(at).as_nanos();
                hist::record_n(
                    &mut self.from_commit,
                    u64::try_from(ns).unwrap_or(u64::MAX),
                    n,
                );
            }
            None => self.unstamped += n,
        }
    }

    /// Times one delivery from its writer's submit timestamp (the value's first 8 bytes).
    fn record_submit(&mut self, ev: &Event, received_ns: u64) {
        let v = ev.kv.value();
        if v.len() >= 8 {
            let ts = u64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
            hist::record(&mut self.from_submit, received_ns.saturating_sub(ts));
        }
    }

    fn merge(&mut self, other: &WatchAgg) -> BenchResult<()> {
        self.from_commit
            .add(&other.from_commit)
            .map_err(err("merge"))?;
        self.from_submit
            .add(&other.from_submit)
            .map_err(err("merge"))?;
        self.unstamped += other.unstamped;
        Ok(())
    }
}

struct WatchShared {
    base: Instant,
    rev0: u64,
    finished: AtomicUsize,
}

const POD_PREFIX: &[u8] = b"/core/pods/";
/// Delivery from submit (which includes the commit) is timed for one revision in this many,
/// an unbiased sample that keeps the harness's own CPU out of the measured tail; delivery
/// from commit is timed for every delivery (one histogram entry per run of events published
/// together).
const SUBMIT_SAMPLE_EVERY: u64 = 4;
const SENTINEL_KEY: &[u8] = b"/core/pods/~end-of-benchmark";

async fn watch_task(
    mut w: Box<dyn keel_engine::EventStream>,
    idx: usize,
    agg: Rc<RefCell<WatchAgg>>,
    sh: Arc<WatchShared>,
) {
    let mut last = sh.rev0;
    loop {
        let mut done = false;
        let r = std::future::poll_fn(|cx| {
            // The clock is read when the first event is seen, not on polls that find none.
            let mut clock: Option<(Instant, u64)> = None;
            let mut guard = agg.borrow_mut();
            let a = &mut *guard;
            // Events published together share a stamp: time each such run once. The run is
            // kept as (stamp, publish instant, count), not as a clone of one of its events: a
            // thousand watchers cloning the same `Arc` would contend on its count.
            let mut group: Option<(u64, Option<Instant>, u64)> = None;
            let polled = w.poll_visit(cx, &mut |ev: &Arc<Event>| {
                let (received, received_ns) = *clock.get_or_insert_with(|| {
                    let r = Instant::now();
                    (r, r.saturating_duration_since(sh.base).as_nanos() as u64)
                });
                let st = &mut a.stats[idx];
                let rev = ev.revision().get();
                if rev <= last {
                    st.dups += 1;
                    return;
                }
                if rev != last + 1 {
                    st.gaps += 1;
                }
                last = rev;
                if ev.kv.key() == SENTINEL_KEY {
                    done = true;
                    return;
                }
                st.count += 1;
                st.rev_sum += rev as u128;
                if rev % SUBMIT_SAMPLE_EVERY == 0 {
                    a.record_submit(ev, received_ns);
                }
                let stamp = ev.visible_stamp();
                group = match group.take() {
                    Some((g, at, n)) if g == stamp => Some((g, at, n + 1)),
                    Some((_, at, n)) => {
                        a.record_stamp_group(at, n, received);
                        Some((stamp, ev.visible_at(), 1))
                    }
                    None => Some((stamp, ev.visible_at(), 1)),
                };
            });
            if let (Some((_, at, n)), Some((received, _))) = (group, clock) {
                a.record_stamp_group(at, n, received);
            }
            a.stats[idx].last = last;
            polled
        })
        .await;
        if let Err(e) = r {
            agg.borrow_mut().stats[idx].error = Some(e.to_string());
            break;
        }
        if done {
            agg.borrow_mut().stats[idx].finished = true;
            sh.finished.fetch_add(1, Relaxed);
            break;
        }
    }
}

struct WriteOutcome {
    acked: u64,
    errors: u64,
    first_error: Option<String>,
    rev_sum: u128,
    sentinel_rev: Option<u64>,
    latency: Histogram<u64>,
}

/// The run whose p99 delivery from commit is the median of `runs` (the upper one of an even
/// count).
pub fn median_watch_run(runs: &[WatchResult]) -> Option<WatchResult> {
    let mut order: Vec<&WatchResult> = runs.iter().collect();
    order.sort_by(|a, b| {
        a.delivery_from_commit
            .p99_us
            .total_cmp(&b.delivery_from_commit.p99_us)
    });
    order.get(order.len() / 2).map(|r| (*r).clone())
}

pub fn run_watch<B: Backend>(parent: &Path, cfg: &WatchConfig) -> BenchResult<WatchResult> {
    let dir = tempfile::Builder::new()
        .prefix("watch-")
        .tempdir_in(parent)
        .map_err(err("tempdir"))?;
    let disk_sync = if cfg.disk_probe.is_zero() {
        None
    } else {
        Some(disk_sync_probe(dir.path(), cfg.disk_probe)?)
    };
    let store = Arc::new(open_store::<B>(dir.path(), cfg.shards, SyncMode::Always)?);
    let rev0 = store.current_revision();
    let sh = Arc::new(WatchShared {
        base: Instant::now(),
        rev0: rev0.get(),
        finished: AtomicUsize::new(0),
    });

    // Open the watchers on this thread, then hand them to the runtime threads.
    let t0 = Instant::now();
    let threads = cfg.threads.max(1);
    let mut per_thread: Vec<Vec<(usize, Box<dyn keel_engine::EventStream>)>> =
        (0..threads).map(|_| Vec::new()).collect();
    for i in 0..cfg.watchers {
        let w = store.watch(POD_PREFIX, rev0).map_err(err("watch"))?;
        per_thread[i % threads].push((i, w));
    }
    let watch_setup = t0.elapsed();

    let ready = Arc::new(Barrier::new(threads + 1));
    let stops: Vec<Arc<tokio::sync::Notify>> = (0..threads)
        .map(|_| Arc::new(tokio::sync::Notify::new()))
        .collect();
    let mut handles = Vec::new();
    for (t, ws) in per_thread.into_iter().enumerate() {
        let sh = sh.clone();
        let ready = ready.clone();
        let stop = stops[t].clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("watch-rt-{t}"))
                .spawn(
                    move || -> BenchResult<(Vec<(usize, WatcherStat)>, WatchAgg)> {
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .build()
                            .map_err(err("runtime"))?;
                        let local = tokio::task::LocalSet::new();
                        let ids: Vec<usize> = ws.iter().map(|(i, _)| *i).collect();
                        let agg = Rc::new(RefCell::new(WatchAgg::new(ws.len())));
                        local.block_on(&rt, async {
                            let hs: Vec<_> = ws
                                .into_iter()
                                .enumerate()
                                .map(|(k, (_, w))| {
                                    tokio::task::spawn_local(watch_task(
                                        w,
                                        k,
                                        agg.clone(),
                                        sh.clone(),
                                    ))
                                })
                                .collect();
                            // Let every task poll once (register its waker) before the writer starts.
                            tokio::task::yield_now().await;
                            ready.wait();
                            let all = async {
                                for h in hs {
                                    let _ = h.await;
                                }
                            };
                            tokio::select! {
                                _ = all => {}
                                _ = stop.notified() => {}
                            }
                        });
                        drop(local); // drops unfinished tasks and their watchers
                        let agg = Rc::try_unwrap(agg)
                            .map_err(|_| "watch aggregate still shared".to_string())?
                            .into_inner();
                        let stats = ids.into_iter().zip(agg.stats.iter().cloned()).collect();
                        Ok((stats, agg))
                    },
                )
                .map_err(err("spawn"))?,
        );
    }
    ready.wait();

    // The completer waits for acknowledgements in submission order.
    let (tx, rx) = mpsc::channel::<(Pending<Result<Written, Error>>, u64, bool)>();
    let completer = {
        let sh = sh.clone();
        std::thread::Builder::new()
            .name("watch-acks".into())
            .spawn(move || {
                let mut o = WriteOutcome {
                    acked: 0,
                    errors: 0,
                    first_error: None,
                    rev_sum: 0,
                    sentinel_rev: None,
                    latency: hist::new_hist(),
                };
                for (p, submit_ns, sentinel) in rx {
                    let r = p.wait();
                    let now = sh.base.elapsed().as_nanos() as u64;
                    match r {
                        Ok(w) => {
                            let rev = w.revision.get();
                            if sentinel {
                                o.sentinel_rev = Some(rev);
                            } else {
                                o.acked += 1;
                                o.rev_sum += rev as u128;
                                hist::record(&mut o.latency, now.saturating_sub(submit_ns));
                            }
                        }
                        Err(e) => {
                            o.errors += 1;
                            if o.first_error.is_none() {
                                o.first_error = Some(e.to_string());
                            }
                        }
                    }
                }
                o
            })
            .map_err(err("spawn"))?
    };

    // The paced writer (this thread): open loop, the k-th write is due at start + k/rate.
    let mut value = filler_value();
    let mut key = String::with_capacity(64);
    let cpu0 = sys::cpu_seconds();
    let start = Instant::now();
    let total = (cfg.rate as f64 * cfg.duration.as_secs_f64()).round() as u64;
    let mut max_lag = Duration::ZERO;
    let mut submitted = 0u64;
    for k in 0..total {
        let due = start + Duration::from_nanos(k * 1_000_000_000 / cfg.rate.max(1));
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else {
            max_lag = max_lag.max(now - due);
        }
        key.clear();
        write!(key, "/core/pods/ns-{}/pod-{}", k % 100, k % cfg.keys.max(1)).expect("String");
        let op = if k < cfg.keys {
            WriteOp::Create
        } else {
            WriteOp::Update(Precondition::None)
        };
        let ts = sh.base.elapsed().as_nanos() as u64;
        value[..8].copy_from_slice(&ts.to_le_bytes());
        value[8..16].copy_from_slice(&k.to_le_bytes());
        let p = store.write(key.as_bytes(), op, |_, out| {
            out.extend_from_slice(&value);
            Ok(())
        });
        submitted += 1;
        if tx.send((p, ts, false)).is_err() {
            break;
        }
    }
    let write_elapsed = start.elapsed();
    let cpu = sys::cpu_seconds() - cpu0;
    let ts = sh.base.elapsed().as_nanos() as u64;
    value[..8].copy_from_slice(&ts.to_le_bytes());
    let _ = tx.send((store.create(SENTINEL_KEY, &value), ts, true));
    drop(tx);
    let outcome = completer
        .join()
        .map_err(|_| "completer panicked".to_string())?;

    // Wait for every watcher to reach the sentinel, then stop the runtimes.
    let drain_start = Instant::now();
    while sh.finished.load(Relaxed) < cfg.watchers && drain_start.elapsed() < cfg.drain_timeout {
        std::thread::sleep(Duration::from_millis(2));
    }
    let drain = drain_start.elapsed();
    for s in &stops {
        s.notify_one();
    }
    let mut stats: Vec<WatcherStat> = vec![WatcherStat::default(); cfg.watchers];
    let mut all = WatchAgg::new(0);
    for h in handles {
        let (st, agg) = h
            .join()
            .map_err(|_| "watch thread panicked".to_string())??;
        for (i, s) in st {
            stats[i] = s;
        }
        all.merge(&agg)?;
    }
    drop(sh);
    close_store(store)?;
    drop(dir);

    let mut r = WatchResult {
        watchers: cfg.watchers,
        threads,
        target_rate: cfg.rate,
        duration_s: write_elapsed.as_secs_f64(),
        watch_setup_s: watch_setup.as_secs_f64(),
        submitted,
        acked: outcome.acked,
        write_errors: outcome.errors,
        first_write_error: outcome.first_error,
        achieved_rate: per_sec(submitted as f64, write_elapsed),
        max_pacing_lag_us: max_lag.as_secs_f64() * 1e6,
        write_latency: hist::summarize(&outcome.latency),
        delivery_from_commit: hist::summarize(&all.from_commit),
        delivery_from_submit: hist::summarize(&all.from_submit),
        deliveries_without_visible_at: all.unstamped,
        disk_sync,
        drain_s: drain.as_secs_f64(),
        cpu_cores_busy: cpu / write_elapsed.as_secs_f64().max(1e-9),
        min_events_per_watcher: u64::MAX,
        ..WatchResult::default()
    };
    for s in &stats {
        r.total_deliveries += s.count;
        r.min_events_per_watcher = r.min_events_per_watcher.min(s.count);
        r.max_events_per_watcher = r.max_events_per_watcher.max(s.count);
        r.revision_gaps += s.gaps;
        let complete = s.count == outcome.acked && s.rev_sum == outcome.rev_sum;
        if !complete {
            r.watchers_with_missing += 1;
        }
        if s.dups > 0 {
            r.watchers_with_dups += 1;
        }
        if let Some(e) = &s.error {
            r.watchers_with_errors += 1;
            if r.first_watch_error.is_none() {
                r.first_watch_error = Some(e.clone());
            }
        }
        if !s.finished {
            r.watchers_unfinished += 1;
        }
        if complete && s.dups == 0 && s.error.is_none() && s.finished {
            r.complete_watchers += 1;
        }
    }
    if stats.is_empty() {
        r.min_events_per_watcher = 0;
    }
    if outcome.sentinel_rev.is_none() && r.first_write_error.is_none() {
        r.first_write_error = Some("end-of-benchmark sentinel write failed".into());
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_engine::{EventKind, KeyValue, Limits, MemStore, Store};

    #[test]
    fn disk_probe_times_each_sync_and_cleans_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = disk_sync_probe(dir.path(), Duration::from_millis(100)).expect("probe");
        assert_eq!(r.chunk_bytes, DISK_PROBE_CHUNK_BYTES);
        assert!(r.latency.count > 0);
        assert!(r.latency.p50_us <= r.latency.p99_us && r.latency.p99_us <= r.latency.max_us);
        // Every timed sync happened inside the probe's wall time.
        assert!(r.latency.mean_us * r.latency.count as f64 <= r.elapsed_s * 1e6 * 1.01);
        assert_eq!(std::fs::read_dir(dir.path()).expect("read_dir").count(), 0);
    }

    #[test]
    fn deliveries_are_timed_from_visible_at_and_from_the_submit_stamp() {
        let store = MemStore::new(Limits::default());
        let mut w = store.watch(b"/p/", Revision::ZERO).expect("watch");
        let base = Instant::now();
        let mut value = vec![0u8; 16];
        let submit_ns = base.elapsed().as_nanos() as u64;
        value[..8].copy_from_slice(&submit_ns.to_le_bytes());
        store.create(b"/p/a", &value).wait().expect("create");
        let mut out = Vec::new();
        assert!(w
            .next_batch_timeout(&mut out, Duration::from_secs(5))
            .expect("batch"));
        std::thread::sleep(Duration::from_millis(2));
        let received = Instant::now();
        let received_ns = received.duration_since(base).as_nanos() as u64;

        let mut agg = WatchAgg::new(1);
        agg.record_stamp_group(out[0].visible_at(), 3, received);
        agg.record_submit(&out[0], received_ns);
        let unpublished = Event::new(
            EventKind::Put,
            KeyValue::from_parts(b"/p/b", &value, Revision(2)),
            None,
        );
        agg.record_stamp_group(unpublished.visible_at(), 2, received);
        agg.record_submit(&unpublished, received_ns);

        assert_eq!(agg.unstamped, 2);
        assert_eq!(
            agg.from_commit.len(),
            3,
            "a group counts each of its deliveries"
        );
        assert_eq!(agg.from_submit.len(), 2);
        let from_commit = agg.from_commit.max();
        let at = out[0].visible_at().expect("published");
        let expect = received.duration_since(at).as_nanos() as u64;
        // 3 significant digits.
        assert!(
            from_commit.abs_diff(expect) <= expect / 500 + 1,
            "{from_commit} vs {expect}"
        );
        assert!(from_commit >= 2_000_000);
        assert!(agg.from_submit.min() >= from_commit - from_commit / 500);
    }
}
