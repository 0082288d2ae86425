//! Shared helpers for the engine's test suites: a deterministic PRNG, an `Engine` opened on a
//! temporary directory (with close + reopen), and plain-data views of events and key-values
//! that compare and print well.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use keel_engine::io::fault::{CutMode, FaultIo};
use keel_engine::{
    BoxError, Capabilities, Engine, Error, Event, EventKind, EventStream, KeyValue, Limits,
    ListRequest, ListResult, Options, Pending, ReadAt, Revision, Stats, Store, SyncMode,
    ValueBuilder, WatchError, WriteContext, WriteOp, Written,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// How long a test waits for something that should be (nearly) immediate before failing.
pub const PATIENCE: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// PRNG

/// SplitMix64: tiny, fast, deterministic, good enough to drive random tests.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        // The modulo bias is irrelevant for n this small relative to 2^64.
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| b'a' + self.below(26) as u8).collect()
    }
}

/// A well-mixed seed for case `i` of a run based on `base`.
pub fn case_seed(base: u64, i: u64) -> u64 {
    Rng::new(base ^ i.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64()
}

/// Parses a seed given as decimal or `0x` hex.
pub fn parse_seed(s: &str) -> u64 {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).expect("KEEL_SEED: bad hex"),
        None => s.parse().expect("KEEL_SEED: bad decimal"),
    }
}

// ---------------------------------------------------------------------------------------------
// Engine on a temporary directory

/// An `Engine` on its own temporary directory, closed (not just dropped) at the end of the
/// test, and reopenable on the same directory.
pub struct TestEngine {
    engine: Option<Engine>,
    opts: Options,
    /// The engine's I/O when it runs on a `FaultIo` (see `open_on_fault_io`).
    fault: Option<Arc<FaultIo>>,
    // Dropped after `engine` (fields drop in declaration order).
    _dir: TempDir,
}

impl TestEngine {
    /// Opens a fresh engine: no background maintenance, the given shards, sync mode, limits.
    pub fn open(shards: usize, sync: SyncMode, limits: Limits) -> TestEngine {
        TestEngine::open_with(|o| {
            o.shards = shards;
            o.sync = sync;
            o.limits = limits;
        })
    }

    /// Opens a fresh engine with `maintenance_interval: None`, one shard, `SyncMode::None`,
    /// then `tweak`ed.
    pub fn open_with(tweak: impl FnOnce(&mut Options)) -> TestEngine {
        TestEngine::open_in(temp_dir(), None, tweak)
    }

    /// Like `open_with`, with the engine's I/O going through a `FaultIo` (power cuts).
    pub fn open_on_fault_io(tweak: impl FnOnce(&mut Options)) -> TestEngine {
        let dir = temp_dir();
        let fault = FaultIo::new(dir.path()).expect("FaultIo::new");
        TestEngine::open_in(dir, Some(fault), tweak)
    }

    fn open_in(
        dir: TempDir,
        fault: Option<Arc<FaultIo>>,
        tweak: impl FnOnce(&mut Options),
    ) -> TestEngine {
        let mut opts = Options::new(dir.path());
        opts.shards = 1;
        opts.sync = SyncMode::None;
        opts.maintenance_interval = None;
        tweak(&mut opts);
        if let Some(f) = &fault {
            opts.io = f.clone();
        }
        let engine = Engine::open(opts.clone()).expect("Engine::open on a fresh directory");
        TestEngine {
            engine: Some(engine),
            opts,
            fault,
            _dir: dir,
        }
    }

    /// The `FaultIo` of an engine opened with `open_on_fault_io`.
    pub fn fault_io(&self) -> &Arc<FaultIo> {
        self.fault.as_ref().expect("opened with open_on_fault_io")
    }

    /// Cuts the power (now, unless a cut armed with `FaultIo::cut_after` came first), drops
    /// the engine, and opens a new one on what the disk kept: the image, in a new directory,
    /// through a new `FaultIo`.
    pub fn reopen_after_power_cut(&mut self, mode: CutMode) {
        let image = self.fault_io().cut(mode);
        drop(self.engine.take());
        let dir = temp_dir();
        image.write_to(dir.path()).expect("writing the image");
        let fault = FaultIo::new(dir.path()).expect("FaultIo::new");
        self.opts.dir = dir.path().to_path_buf();
        self.opts.io = fault.clone();
        self.fault = Some(fault);
        self._dir = dir;
        self.engine =
            Some(Engine::open(self.opts.clone()).expect("Engine::open after a power cut"));
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    pub fn engine(&self) -> &Engine {
        self.engine.as_ref().expect("engine is open")
    }

    /// Closes the engine and opens it again on the same directory.
    pub fn reopen(&mut self) {
        self.close();
        self.engine = Some(Engine::open(self.opts.clone()).expect("Engine::open (reopen)"));
    }

    /// Closes the engine, reporting `close`'s result. `reopen_after_close` opens it again.
    pub fn close(&mut self) {
        let e = self.engine.take().expect("engine is open");
        e.close().expect("Engine::close");
    }

    pub fn reopen_after_close(&mut self) {
        assert!(self.engine.is_none());
        self.engine = Some(Engine::open(self.opts.clone()).expect("Engine::open (reopen)"));
    }

    pub fn stats(&self) -> Stats {
        self.engine().stats()
    }
}

impl Drop for TestEngine {
    fn drop(&mut self) {
        if let Some(e) = self.engine.take() {
            if std::thread::panicking() {
                // Don't risk a second panic (an abort) while unwinding.
                drop(e);
            } else {
                e.close().expect("Engine::close at the end of the test");
            }
        }
    }
}

impl std::ops::Deref for TestEngine {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        self.engine()
    }
}

impl Store for TestEngine {
    fn current_revision(&self) -> Revision {
        self.engine().current_revision()
    }
    fn compacted_revision(&self) -> Revision {
        self.engine().compacted_revision()
    }
    fn get(&self, key: &[u8], at: ReadAt) -> Result<Option<KeyValue>, Error> {
        self.engine().get(key, at)
    }
    fn list(&self, req: &ListRequest<'_>) -> Result<ListResult, Error> {
        self.engine().list(req)
    }
    fn capabilities(&self) -> Capabilities {
        self.engine().capabilities()
    }
    fn write_with(
        &self,
        key: &[u8],
        op: WriteOp,
        build: &mut ValueBuilder<'_>,
    ) -> Pending<Result<Written, Error>> {
        self.engine().write_with(key, op, build)
    }
    fn watch(&self, prefix: &[u8], after: Revision) -> Result<Box<dyn EventStream>, Error> {
        self.engine().watch(prefix, after)
    }
    fn compact(&self, revision: Revision) -> Result<(), Error> {
        self.engine().compact(revision)
    }
}

fn temp_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("keel-test-")
        .tempdir()
        .expect("tempdir")
}

// ---------------------------------------------------------------------------------------------
// Plain views

/// A key-value as plain data: (key, value, mod revision).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Kv {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub rev: u64,
}

impl std::fmt::Debug for Kv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}@{}", show(&self.key), show(&self.value), self.rev)
    }
}

impl Kv {
    pub fn new(key: &[u8], value: &[u8], rev: u64) -> Kv {
        Kv {
            key: key.to_vec(),
            value: value.to_vec(),
            rev,
        }
    }
}

pub fn kv(k: &KeyValue) -> Kv {
    Kv::new(k.key(), k.value(), k.mod_revision.get())
}

pub fn kvs(items: &[KeyValue]) -> Vec<Kv> {
    items.iter().map(kv).collect()
}

/// An event as plain data.
#[derive(Clone, PartialEq, Eq)]
pub struct Ev {
    pub put: bool,
    pub kv: Kv,
    pub prev: Option<Kv>,
}

impl std::fmt::Debug for Ev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.put { "PUT" } else { "DEL" };
        write!(f, "{kind} {:?} prev={:?}", self.kv, self.prev)
    }
}

pub fn ev(e: &Event) -> Ev {
    Ev {
        put: e.kind == EventKind::Put,
        kv: kv(&e.kv),
        prev: e.prev.as_ref().map(kv),
    }
}

pub fn evs(events: &[Arc<Event>]) -> Vec<Ev> {
    events.iter().map(|e| ev(e)).collect()
}

pub fn put(key: &[u8], value: &[u8], rev: u64, prev: Option<Kv>) -> Ev {
    Ev {
        put: true,
        kv: Kv::new(key, value, rev),
        prev,
    }
}

pub fn del(key: &[u8], rev: u64, prev: Option<Kv>) -> Ev {
    Ev {
        put: false,
        kv: Kv::new(key, b"", rev),
        prev,
    }
}

/// Bytes shown as a string when printable, escaped otherwise.
pub fn show(b: &[u8]) -> String {
    b.escape_ascii().to_string()
}

// ---------------------------------------------------------------------------------------------
// Store helpers

/// Waits for a write's result.
pub fn ack(p: Pending<Result<Written, Error>>) -> Result<Written, Error> {
    p.wait()
}

/// Waits for a write that must succeed.
#[track_caller]
pub fn ok(p: Pending<Result<Written, Error>>) -> Written {
    match p.wait() {
        Ok(w) => w,
        Err(e) => panic!("write failed: {e:?}"),
    }
}

#[track_caller]
pub fn get_kv<S: Store + ?Sized>(s: &S, key: &[u8], at: ReadAt) -> Option<Kv> {
    s.get(key, at)
        .unwrap_or_else(|e| panic!("get {} at {at:?}: {e:?}", show(key)))
        .map(|k| kv(&k))
}

/// Lists everything under `prefix` at `at`, no limit.
#[track_caller]
pub fn list_all<S: Store + ?Sized>(s: &S, prefix: &[u8], at: ReadAt) -> (Vec<Kv>, Revision) {
    let r = s
        .list(&ListRequest {
            prefix,
            start_after: None,
            limit: 0,
            at,
        })
        .unwrap_or_else(|e| panic!("list {} at {at:?}: {e:?}", show(prefix)));
    assert!(
        !r.more && r.remaining == 0,
        "an unlimited list has nothing remaining"
    );
    (kvs(&r.items), r.revision)
}

/// Collects events from `w` until `n` have arrived (failing after `PATIENCE`), then checks
/// that no further event is immediately available.
#[track_caller]
pub fn collect(w: &mut dyn EventStream, n: usize) -> Vec<Ev> {
    let mut out = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while out.len() < n {
        let now = Instant::now();
        assert!(
            now < deadline,
            "watch delivered {} of {n} expected events within {PATIENCE:?}: {:?}",
            out.len(),
            evs(&out)
        );
        if let Err(e) = w.next_batch_timeout(&mut out, deadline - now) {
            panic!(
                "watch ended with {e:?} after {} of {n} events: {:?}",
                out.len(),
                evs(&out)
            );
        }
    }
    let got = out.len();
    w.try_batch(&mut out)
        .expect("try_batch after the expected events");
    assert_eq!(
        got,
        out.len(),
        "unexpected extra events: {:?}",
        evs(&out[n..])
    );
    evs(&out)
}

/// Reads whatever `w` has available right now, until it has nothing more.
pub fn drain_now(w: &mut dyn EventStream) -> Result<Vec<Ev>, WatchError> {
    let mut out = Vec::new();
    loop {
        let before = out.len();
        w.try_batch(&mut out)?;
        if out.len() == before {
            return Ok(evs(&out));
        }
    }
}

/// A store-independent rendering of an error, for comparing two stores' failures.
pub fn err_str(e: &Error) -> String {
    format!("{e:?}")
}

/// A value builder that appends `v`.
pub fn value(
    v: &[u8],
) -> impl FnOnce(&WriteContext<'_>, &mut Vec<u8>) -> Result<(), BoxError> + '_ {
    move |_, out| {
        out.extend_from_slice(v);
        Ok(())
    }
}
