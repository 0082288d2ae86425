//! Randomized model-based test: random operation sequences applied in lockstep to the engine
//! and to `MemStore` (the `BTreeMap` reference model), which must agree on every result —
//! revisions included, exactly.
//!
//! Each case is generated from a seed (SplitMix64, see `common`). On a failure the case is
//! shrunk to a minimal operation sequence, which is printed with the seed and configuration.
//!
//! - `KEEL_SEED=<n|0xhex>`: run only that seed (in every test of this file).
//! - `KEEL_RANDOM_CASES=<n>`: cases per test (default 2,000 and 800).
//! - `KEEL_RANDOM_NO_SHRINK=1`: report the unshrunk failing sequence.
//!
//! The power-cut suite runs the engine on `io::fault::FaultIo` with `SyncMode::Always` and
//! now and then submits a few writes without waiting, cuts the power at a chosen I/O call
//! among them, and reopens from what the disk kept (synced bytes only, or torn at sectors).
//! Every write whose acknowledgement arrived must be there; each unacknowledged one may be
//! there or not, but per shard only a prefix of them in revision order, each exactly as
//! written; the model then replays the ones that survived (and skips the revisions of the
//! lost ones) and must agree with the engine again on everything.

mod common;

use common::*;
use keel_engine::io::fault::CutMode;
use keel_engine::store::{BoxError, WriteContext};
use keel_engine::{
    Error, EventStream, Limits, ListRequest, ListResult, MemStore, Precondition, ReadAt, Revision,
    Store, StoreExt, SyncMode, WriteOp, Written,
};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const BASE_SEED: u64 = 0x6B65_656C_5EED_0001;

const KEYS: [&[u8]; 8] = [b"a", b"a/0", b"a/1", b"a/10", b"a/2", b"a0", b"b/0", b"b/1"];
const PREFIXES: [&[u8]; 7] = [b"", b"a", b"a/", b"a/1", b"b/", b"c", b"a/10"];
const AFTER_KEYS: [&[u8]; 11] = [
    b"a", b"a/0", b"a/1", b"a/10", b"a/2", b"a0", b"b/0", b"b/1", b"a/", b"0", b"z",
];
/// `value_bytes_max` in every case, so oversized values are cheap to produce.
const VALUE_MAX: usize = 10_000;
const KEY_MAX: usize = 64;

// =============================================================================================
// Operations

/// A revision relative to the model's state when the operation runs.
#[derive(Clone, Copy, Debug)]
enum Pick {
    /// `current - n` (saturating).
    Back(u8),
    Compacted,
    /// `compacted - 1` (saturating).
    BelowCompacted,
    /// `current + 1 + n`.
    Future(u8),
    Zero,
}

#[derive(Clone, Copy, Debug)]
enum At {
    Latest,
    Exact(Pick),
    NotOlderThan(Pick),
}

#[derive(Clone, Copy, Debug)]
enum Pre {
    None,
    /// The key's current mod revision (or the current revision if it has none).
    Current,
    /// `ModRevision(current - n)`: usually stale.
    Back(u8),
}

#[derive(Clone, Debug)]
enum Op {
    Create {
        key: u8,
        value: Vec<u8>,
    },
    Update {
        key: u8,
        pre: Pre,
        value: Vec<u8>,
    },
    Delete {
        key: u8,
        pre: Pre,
    },
    /// A create (or update) whose value builder refuses.
    Abort {
        key: u8,
        create: bool,
    },
    /// A create (or update) whose value exceeds `value_bytes_max`.
    TooLarge {
        key: u8,
        create: bool,
    },
    /// An empty or overlong key.
    BadKey {
        empty: bool,
        kind: u8,
    },
    Get {
        key: u8,
        at: At,
    },
    List {
        prefix: u8,
        after: Option<u8>,
        limit: u8,
        at: At,
    },
    /// A paginated list at one snapshot, with writes between the pages.
    Paginate {
        prefix: u8,
        limit: u8,
        at: At,
        between: Vec<Op>,
    },
    Watch {
        prefix: u8,
        after: Pick,
    },
    Drain {
        which: u8,
    },
    Compact {
        to: Pick,
    },
    /// Engine maintenance (`rewrite_segments`, or `maintain` with the default history window,
    /// which compacts nothing this young): nothing observable may change.
    Rewrite {
        maintain: bool,
    },
    Reopen,
    /// Submits `writes` without waiting, cuts the power at the `after_calls`-th I/O call
    /// from then (or once they all finished), and reopens from the disk image (torn with
    /// this seed, or synced bytes only).
    PowerCut {
        writes: Vec<Op>,
        after_calls: u16,
        torn: Option<u64>,
    },
    Check,
}

#[derive(Clone, Debug)]
struct Config {
    shards: usize,
    sync: SyncMode,
    small_ring: bool,
    /// `Limits::segment_bytes`.
    segment_bytes: u64,
    /// The engine's I/O goes through a `FaultIo` (power-cut cases).
    fault_io: bool,
}

#[derive(Clone, Copy)]
struct Mix {
    aborts: bool,
    power_cuts: bool,
}

fn gen_pick(rng: &mut Rng) -> Pick {
    match rng.below(10) {
        0..=4 => Pick::Back(rng.below(6) as u8),
        5 => Pick::Back(rng.range(6, 60) as u8),
        6 => Pick::Compacted,
        7 => Pick::BelowCompacted,
        8 => Pick::Future(rng.below(3) as u8),
        _ => Pick::Zero,
    }
}

fn gen_at(rng: &mut Rng) -> At {
    match rng.below(8) {
        0..=2 => At::Latest,
        3..=6 => At::Exact(gen_pick(rng)),
        _ => At::NotOlderThan(gen_pick(rng)),
    }
}

fn gen_pre(rng: &mut Rng) -> Pre {
    match rng.below(6) {
        0 | 1 => Pre::None,
        2..=4 => Pre::Current,
        _ => Pre::Back(rng.below(4) as u8),
    }
}

fn gen_value(rng: &mut Rng, large: bool) -> Vec<u8> {
    let len = if large && rng.chance(1, 2) {
        rng.below(6000)
    } else {
        rng.below(7)
    };
    rng.bytes(len as usize)
}

fn gen_write(rng: &mut Rng, large: bool) -> Op {
    let key = rng.below(KEYS.len() as u64) as u8;
    match rng.below(10) {
        0..=3 => Op::Create {
            key,
            value: gen_value(rng, large),
        },
        4..=7 => Op::Update {
            key,
            pre: gen_pre(rng),
            value: gen_value(rng, large),
        },
        _ => Op::Delete {
            key,
            pre: gen_pre(rng),
        },
    }
}

fn gen_power_cut(rng: &mut Rng, large: bool) -> Op {
    Op::PowerCut {
        writes: (0..rng.below(8)).map(|_| gen_write(rng, large)).collect(),
        after_calls: rng.range(1, 24) as u16,
        torn: rng.chance(3, 4).then(|| rng.next_u64()),
    }
}

fn gen_case(seed: u64, mix: Mix) -> (Config, Vec<Op>) {
    let mut rng = Rng::new(seed);
    let mut cfg = Config {
        shards: rng.range(1, 4) as usize,
        sync: if rng.chance(1, 40) {
            SyncMode::Always
        } else {
            SyncMode::None
        },
        small_ring: rng.chance(1, 3),
        // Recovery reads a pre-sized segment whole, so the default 64 MiB segments make every
        // reopen slow: mostly small segments (which also roll over often).
        segment_bytes: match rng.below(100) {
            0..=79 => 64 * 1024,
            80..=98 => 1024 * 1024,
            _ => Limits::default().segment_bytes,
        },
        fault_io: false,
    };
    if mix.power_cuts {
        // Acknowledged means synced only with `SyncMode::Always` (its syncs cost nothing on
        // `FaultIo`, which models durability instead of asking the disk for it).
        cfg.sync = SyncMode::Always;
        cfg.fault_io = true;
    }
    let large = rng.chance(1, 5);
    let n = rng.range(20, 160);
    let mut ops = Vec::new();
    for _ in 0..n {
        let op = match rng.below(100) {
            0..=39 => gen_write(&mut rng, large),
            40..=49 => Op::Get {
                key: rng.below(KEYS.len() as u64) as u8,
                at: gen_at(&mut rng),
            },
            50..=61 => Op::List {
                prefix: rng.below(PREFIXES.len() as u64) as u8,
                after: if rng.chance(1, 2) {
                    None
                } else {
                    Some(rng.below(AFTER_KEYS.len() as u64) as u8)
                },
                limit: rng.below(5) as u8,
                at: gen_at(&mut rng),
            },
            62..=67 => Op::Paginate {
                prefix: rng.below(PREFIXES.len() as u64) as u8,
                limit: rng.range(1, 3) as u8,
                at: gen_at(&mut rng),
                between: (0..rng.below(6))
                    .map(|_| gen_write(&mut rng, large))
                    .collect(),
            },
            68..=74 => Op::Watch {
                prefix: rng.below(PREFIXES.len() as u64) as u8,
                after: gen_pick(&mut rng),
            },
            75..=79 => Op::Drain {
                which: rng.below(4) as u8,
            },
            80..=83 => Op::Compact {
                to: gen_pick(&mut rng),
            },
            84..=85 => Op::Reopen,
            86 => Op::Rewrite {
                maintain: rng.chance(1, 3),
            },
            87..=88 => Op::Check,
            89..=90 => Op::BadKey {
                empty: rng.chance(1, 2),
                kind: rng.below(3) as u8,
            },
            _ if mix.power_cuts && rng.chance(1, 2) => gen_power_cut(&mut rng, large),
            _ if mix.aborts && rng.chance(2, 3) => Op::Abort {
                key: rng.below(KEYS.len() as u64) as u8,
                create: rng.chance(1, 2),
            },
            _ if mix.aborts => Op::TooLarge {
                key: rng.below(KEYS.len() as u64) as u8,
                create: rng.chance(1, 2),
            },
            _ => gen_write(&mut rng, large),
        };
        ops.push(op);
    }
    (cfg, ops)
}

/// An operation with its keys and values spelled out.
fn describe(op: &Op) -> String {
    let k = |i: &u8| show(KEYS[*i as usize]);
    let p = |i: &u8| show(PREFIXES[*i as usize]);
    let v = |v: &[u8]| {
        if v.len() <= 16 {
            show(v)
        } else {
            format!("<{} bytes>", v.len())
        }
    };
    match op {
        Op::Create { key, value } => format!("create {:?} = {:?}", k(key), v(value)),
        Op::Update { key, pre, value } => format!("update {:?} {pre:?} = {:?}", k(key), v(value)),
        Op::Delete { key, pre } => format!("delete {:?} {pre:?}", k(key)),
        Op::Abort { key, create } => format!(
            "aborted {} {:?}",
            if *create { "create" } else { "update" },
            k(key)
        ),
        Op::TooLarge { key, create } => format!(
            "oversized {} {:?}",
            if *create { "create" } else { "update" },
            k(key)
        ),
        Op::BadKey { empty, kind } => format!("bad key (empty: {empty}) op {kind}"),
        Op::Get { key, at } => format!("get {:?} at {at:?}", k(key)),
        Op::List {
            prefix,
            after,
            limit,
            at,
        } => format!(
            "list prefix {:?} start_after {:?} limit {limit} at {at:?}",
            p(prefix),
            after.map(|a| show(AFTER_KEYS[a as usize]))
        ),
        Op::Paginate {
            prefix,
            limit,
            at,
            between,
        } => format!(
            "paginate prefix {:?} limit {limit} at {at:?}, writes between pages: [{}]",
            p(prefix),
            between.iter().map(describe).collect::<Vec<_>>().join("; ")
        ),
        Op::Watch { prefix, after } => format!("watch prefix {:?} after {after:?}", p(prefix)),
        Op::Drain { which } => format!("drain watcher #{which}"),
        Op::Compact { to } => format!("compact to {to:?}"),
        Op::Rewrite { maintain: true } => "engine.maintain()".into(),
        Op::Rewrite { maintain: false } => "engine.rewrite_segments()".into(),
        Op::Reopen => "close + reopen".into(),
        Op::PowerCut {
            writes,
            after_calls,
            torn,
        } => format!(
            "power cut at I/O call {after_calls} ({}) among unacknowledged writes: [{}]",
            match torn {
                Some(seed) => format!("torn, seed {seed:#x}"),
                None => "synced bytes only".into(),
            },
            writes.iter().map(describe).collect::<Vec<_>>().join("; ")
        ),
        Op::Check => "check everything".into(),
    }
}

// =============================================================================================
// Running a case

type Outcome = Result<(), String>;

/// Segments the engine rewrote over the run (reported: the rewrite path must be exercised).
static REWRITTEN: AtomicU64 = AtomicU64::new(0);

/// Power cuts over the run, and the unacknowledged writes they caught that survived or were
/// lost (reported: both outcomes must occur).
static POWER_CUTS: AtomicU64 = AtomicU64::new(0);
static UNACKED_KEPT: AtomicU64 = AtomicU64::new(0);
static UNACKED_LOST: AtomicU64 = AtomicU64::new(0);

/// Set while shrinking: waits for missing events are cut short.
static SHRINKING: AtomicBool = AtomicBool::new(false);

fn patience() -> Duration {
    if SHRINKING.load(Ordering::Relaxed) {
        Duration::from_millis(300)
    } else {
        PATIENCE
    }
}

/// What kind of failure a message describes: the text after the failing operation, without
/// numbers. Shrinking keeps only candidates that fail the same way.
fn signature(err: &str) -> String {
    let tail = err.split_once(" :: ").map_or(err, |(_, t)| t);
    tail.lines()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_ascii_digit())
        .collect()
}

macro_rules! ensure {
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            return Err(format!($($arg)+));
        }
    };
}

macro_rules! ensure_eq {
    ($e:expr, $m:expr, $($arg:tt)+) => {{
        let (e, m) = (&$e, &$m);
        if e != m {
            return Err(format!("{}\n  engine: {:?}\n  model:  {:?}", format!($($arg)+), e, m));
        }
    }};
}

struct WatchPair {
    prefix: Vec<u8>,
    engine: Box<dyn EventStream>,
    model: Box<dyn EventStream>,
    /// The revision this pair has been read up to (for resuming after a reopen).
    seen: Revision,
}

struct Runner {
    eng: TestEngine,
    model: MemStore,
    watches: Vec<WatchPair>,
    writes_since_drain: usize,
    drain_every: usize,
}

fn limits(cfg: &Config) -> Limits {
    let mut l = Limits {
        key_bytes_max: KEY_MAX,
        value_bytes_max: VALUE_MAX,
        ..Limits::default()
    };
    if cfg.small_ring {
        l.watch_ring_events_max = 16;
        l.watcher_backlog_events_max = 16;
    }
    l.segment_bytes = cfg.segment_bytes;
    // Raise the revision ceiling often (a manifest write every few revisions), and keep the
    // jump after a power cut small (the checks read at every revision).
    l.revision_reserve = 256;
    l
}

type Res<T> = Result<T, String>;

fn norm_write(r: Result<Written, Error>) -> Result<Written, String> {
    r.map_err(|e| err_str(&e))
}

/// A list result as plain data: items, revision, more, remaining.
type ListView = (Vec<Kv>, Revision, bool, u64);

fn norm_list(r: Result<ListResult, Error>) -> Result<ListView, String> {
    r.map(|l| (kvs(&l.items), l.revision, l.more, l.remaining))
        .map_err(|e| err_str(&e))
}

type Seen = Option<(Option<Revision>, Option<Vec<u8>>, Option<Revision>)>;

/// A value builder that appends `value` (or refuses, if `abort`) and records its context.
fn builder<'a>(
    seen: &'a mut Seen,
    value: &'a [u8],
    abort: bool,
) -> impl FnOnce(&WriteContext<'_>, &mut Vec<u8>) -> Result<(), BoxError> + 'a {
    move |ctx, out| {
        *seen = Some((
            ctx.revision,
            ctx.current.map(<[u8]>::to_vec),
            ctx.current_revision,
        ));
        out.extend_from_slice(value);
        if abort {
            Err("aborted by the test".into())
        } else {
            Ok(())
        }
    }
}

impl Runner {
    fn new(cfg: &Config) -> Runner {
        let l = limits(cfg);
        let drain_every = if cfg.small_ring { 8 } else { usize::MAX };
        let eng = if cfg.fault_io {
            TestEngine::open_on_fault_io(|o| {
                o.shards = cfg.shards;
                o.sync = cfg.sync;
                o.limits = l.clone();
            })
        } else {
            TestEngine::open(cfg.shards, cfg.sync, l.clone())
        };
        Runner {
            eng,
            model: MemStore::new(l),
            watches: Vec::new(),
            writes_since_drain: 0,
            drain_every,
        }
    }

    fn pick(&self, p: Pick) -> Revision {
        let cur = self.model.current_revision().0;
        let c = self.model.compacted_revision().0;
        Revision(match p {
            Pick::Back(n) => cur.saturating_sub(n as u64),
            Pick::Compacted => c,
            Pick::BelowCompacted => c.saturating_sub(1),
            Pick::Future(n) => cur + 1 + n as u64,
            Pick::Zero => 0,
        })
    }

    fn at(&self, a: At) -> ReadAt {
        match a {
            At::Latest => ReadAt::Latest,
            At::Exact(p) => ReadAt::Exact(self.pick(p)),
            At::NotOlderThan(p) => ReadAt::NotOlderThan(self.pick(p)),
        }
    }

    fn pre(&self, key: &[u8], p: Pre) -> Precondition {
        match p {
            Pre::None => Precondition::None,
            Pre::Current => Precondition::ModRevision(
                self.model
                    .get(key, ReadAt::Latest)
                    .unwrap()
                    .map_or(self.model.current_revision(), |kv| kv.mod_revision),
            ),
            Pre::Back(n) => Precondition::ModRevision(Revision(
                self.model.current_revision().0.saturating_sub(n as u64),
            )),
        }
    }

    /// The same write on both stores, with a value builder that records what it was told.
    fn write_both(&mut self, key: &[u8], op: WriteOp, value: &[u8], abort: bool) -> Outcome {
        let (mut se, mut sm): (Seen, Seen) = (None, None);
        let re = norm_write(ack(self.eng.write(key, op, builder(&mut se, value, abort))));
        let rm = norm_write(ack(self.model.write(
            key,
            op,
            builder(&mut sm, value, abort),
        )));
        ensure_eq!(
            re,
            rm,
            "write {} {op:?} ({} value bytes)",
            show(key),
            value.len()
        );
        ensure_eq!(se, sm, "value builder context for {} {op:?}", show(key));
        ensure_eq!(
            self.eng.current_revision(),
            self.model.current_revision(),
            "current revision after write {} {op:?}",
            show(key)
        );
        if re.is_ok() {
            ensure_eq!(
                get_kv(&self.eng, key, ReadAt::Latest),
                get_kv(&self.model, key, ReadAt::Latest),
                "latest {} right after an acknowledged write",
                show(key)
            );
            self.writes_since_drain += 1;
            if self.writes_since_drain >= self.drain_every {
                self.drain_all()?;
            }
        }
        Ok(())
    }

    /// Lists on both; `Err` if they disagree, `Ok(Err(_))` if both failed alike.
    fn list_both(&self, req: &ListRequest<'_>) -> Res<Result<ListView, String>> {
        let re = norm_list(self.eng.list(req));
        let rm = norm_list(self.model.list(req));
        ensure_eq!(
            re,
            rm,
            "list prefix {} after {:?} limit {} at {:?}",
            show(req.prefix),
            req.start_after.map(show),
            req.limit,
            req.at
        );
        Ok(rm)
    }

    fn apply(&mut self, op: &Op) -> Outcome {
        match op {
            Op::Create { key, value } => {
                self.write_both(KEYS[*key as usize], WriteOp::Create, value, false)?;
            }
            Op::Update { key, pre, value } => {
                let k = KEYS[*key as usize];
                let pre = self.pre(k, *pre);
                self.write_both(k, WriteOp::Update(pre), value, false)?;
            }
            Op::Delete { key, pre } => {
                let k = KEYS[*key as usize];
                let pre = self.pre(k, *pre);
                self.write_both(k, WriteOp::Delete(pre), b"", false)?;
            }
            Op::Abort { key, create } => {
                let op = if *create {
                    WriteOp::Create
                } else {
                    WriteOp::Update(Precondition::None)
                };
                self.write_both(KEYS[*key as usize], op, b"partial", true)?;
            }
            Op::TooLarge { key, create } => {
                let op = if *create {
                    WriteOp::Create
                } else {
                    WriteOp::Update(Precondition::None)
                };
                self.write_both(KEYS[*key as usize], op, &[b'x'; VALUE_MAX + 1], false)?;
            }
            Op::BadKey { empty, kind } => {
                let long = vec![b'k'; KEY_MAX + 1];
                let key: &[u8] = if *empty { b"" } else { &long };
                let op = match kind {
                    0 => WriteOp::Create,
                    1 => WriteOp::Update(Precondition::None),
                    _ => WriteOp::Delete(Precondition::None),
                };
                self.write_both(key, op, b"v", false)?;
            }
            Op::Get { key, at } => {
                let k = KEYS[*key as usize];
                let at = self.at(*at);
                let re = self
                    .eng
                    .get(k, at)
                    .map(|o| o.map(|v| kv(&v)))
                    .map_err(|e| err_str(&e));
                let rm = self
                    .model
                    .get(k, at)
                    .map(|o| o.map(|v| kv(&v)))
                    .map_err(|e| err_str(&e));
                ensure_eq!(re, rm, "get {} at {at:?}", show(k));
            }
            Op::List {
                prefix,
                after,
                limit,
                at,
            } => {
                let req = ListRequest {
                    prefix: PREFIXES[*prefix as usize],
                    start_after: after.map(|a| AFTER_KEYS[a as usize]),
                    limit: *limit as usize,
                    at: self.at(*at),
                };
                let _both_failed_alike = self.list_both(&req)?;
            }
            Op::Paginate {
                prefix,
                limit,
                at,
                between,
            } => {
                let prefix = PREFIXES[*prefix as usize];
                let mut start_after: Option<Vec<u8>> = None;
                let mut at = self.at(*at);
                let mut writes = between.iter();
                for pages in 0.. {
                    ensure!(pages < 100, "pagination does not end");
                    let req = ListRequest {
                        prefix,
                        start_after: start_after.as_deref(),
                        limit: *limit as usize,
                        at,
                    };
                    // Both failing alike (e.g. Compacted, FutureRevision) ends the chain.
                    let Ok((items, snap, more, _)) = self.list_both(&req)? else {
                        break;
                    };
                    if !more {
                        break;
                    }
                    start_after = Some(
                        items
                            .last()
                            .expect("a page with more has items")
                            .key
                            .clone(),
                    );
                    at = ReadAt::Exact(snap);
                    if let Some(w) = writes.next() {
                        self.apply(w)?;
                    }
                }
                // Writes not used between pages still happen.
                for w in writes {
                    self.apply(w)?;
                }
            }
            Op::Watch { prefix, after } => {
                let prefix = PREFIXES[*prefix as usize];
                let after = self.pick(*after);
                let re = self.eng.watch(prefix, after);
                let rm = self.model.watch(prefix, after);
                match (re, rm) {
                    (Ok(e), Ok(m)) => {
                        if self.watches.len() >= 3 {
                            self.watches.remove(0);
                        }
                        self.watches.push(WatchPair {
                            prefix: prefix.to_vec(),
                            engine: e,
                            model: m,
                            seen: after,
                        });
                        if self.drain_every != usize::MAX {
                            // With a small ring, a watcher from an old revision starts up to a
                            // ring behind: read it now so it cannot lag in either store.
                            self.drain(self.watches.len() - 1)?;
                        }
                    }
                    (Err(e), Err(m)) => ensure_eq!(
                        err_str(&e),
                        err_str(&m),
                        "watch {} after {after}",
                        show(prefix)
                    ),
                    (e, m) => {
                        return Err(format!(
                            "watch {} after {after}: engine {:?}, model {:?}",
                            show(prefix),
                            e.map(|_| "watcher").map_err(|e| err_str(&e)),
                            m.map(|_| "watcher").map_err(|e| err_str(&e)),
                        ))
                    }
                }
            }
            Op::Drain { which } => {
                if !self.watches.is_empty() {
                    let i = *which as usize % self.watches.len();
                    self.drain(i)?;
                }
            }
            Op::Compact { to } => {
                // Drained watchers are reading live events in both stores, so compaction
                // affects them alike.
                self.drain_all()?;
                let to = self.pick(*to);
                let re = self.eng.compact(to).map_err(|e| err_str(&e));
                let rm = self.model.compact(to).map_err(|e| err_str(&e));
                ensure_eq!(re, rm, "compact to {to}");
                ensure_eq!(
                    self.eng.compacted_revision(),
                    self.model.compacted_revision(),
                    "compacted revision"
                );
            }
            Op::Rewrite { maintain } => {
                let r = if *maintain {
                    self.eng.maintain()
                } else {
                    self.eng.rewrite_segments()
                };
                ensure!(r.is_ok(), "{}: {r:?}", describe(op));
                REWRITTEN.fetch_add(r.unwrap_or(0) as u64, Ordering::Relaxed);
                self.check_all()?;
            }
            Op::Reopen => self.reopen()?,
            Op::PowerCut {
                writes,
                after_calls,
                torn,
            } => {
                let mode = match torn {
                    Some(seed) => CutMode::Torn { seed: *seed },
                    None => CutMode::SyncedOnly,
                };
                self.power_cut(writes, *after_calls as u64, mode)?;
            }
            Op::Check => self.check_all()?,
        }
        Ok(())
    }

    /// Drains watch pair `i`: the engine must deliver exactly the model's events (and end
    /// the same way if the model's watcher ended).
    fn drain(&mut self, i: usize) -> Outcome {
        let p = &mut self.watches[i];
        let mut want = Vec::new();
        let mut model_end = None;
        loop {
            let before = want.len();
            match p.model.try_batch(&mut want) {
                Ok(_) if want.len() == before => break,
                Ok(_) => {}
                Err(e) => {
                    model_end = Some(e);
                    break;
                }
            }
        }
        let want = evs(&want);
        let mut got = Vec::new();
        let mut engine_end = None;
        let deadline = Instant::now() + patience();
        while got.len() < want.len() || (model_end.is_some() && engine_end.is_none()) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            if let Err(e) = p.engine.next_batch_timeout(&mut got, deadline - now) {
                engine_end = Some(e);
                break;
            }
        }
        if engine_end.is_none() && model_end.is_none() {
            let n = got.len();
            if let Err(e) = p.engine.try_batch(&mut got) {
                engine_end = Some(e);
            }
            ensure!(
                got.len() == n,
                "watch {}: extra events {:?}",
                show(&p.prefix),
                evs(&got[n..])
            );
        }
        let got = evs(&got);
        let prefix = show(&p.prefix);
        ensure_eq!(got, want, "events of watch {prefix} from {}", p.seen);
        ensure_eq!(engine_end, model_end, "end of watch {prefix}");
        if let Some(last) = want.last() {
            p.seen = Revision(last.kv.rev);
        }
        if model_end.is_some() {
            self.watches.remove(i);
        }
        Ok(())
    }

    fn drain_all(&mut self) -> Outcome {
        for i in (0..self.watches.len()).rev() {
            self.drain(i)?;
        }
        self.writes_since_drain = 0;
        Ok(())
    }

    /// Close + reopen the engine. Open watchers are resumed on the reopened engine from the
    /// revision they had reached; the model's keep going.
    fn reopen(&mut self) -> Outcome {
        self.drain_all()?;
        let positions = self.take_watches();
        self.eng.reopen();
        self.check_all()?;
        // A clean close records the last revision handed out: the reopened engine skips none.
        ensure_eq!(
            self.eng.next_revision(),
            self.model.next_revision(),
            "next revision after a clean reopen"
        );
        self.resume_watches(positions)
    }

    /// The open watch pairs' positions, for resuming them on a reopened engine.
    fn take_watches(&mut self) -> Vec<(Vec<u8>, Revision, Box<dyn EventStream>)> {
        self.watches
            .drain(..)
            .map(|p| (p.prefix, p.seen, p.model))
            .collect()
    }

    /// Resumes watch pairs on the reopened engine from the revision they had reached; the
    /// model's watchers keep going.
    fn resume_watches(
        &mut self,
        positions: Vec<(Vec<u8>, Revision, Box<dyn EventStream>)>,
    ) -> Outcome {
        let compacted = self.model.compacted_revision();
        for (prefix, seen, model) in positions {
            match self.eng.watch(&prefix, seen) {
                Ok(engine) => {
                    ensure!(
                        seen >= compacted,
                        "resumed watch {} from {seen} below compacted {compacted}",
                        show(&prefix)
                    );
                    self.watches.push(WatchPair {
                        prefix,
                        engine,
                        model,
                        seen,
                    });
                }
                Err(Error::Compacted { .. }) if seen < compacted => {}
                Err(e) => {
                    return Err(format!(
                        "resuming watch {} from {seen} after reopen: {e:?}",
                        show(&prefix)
                    ))
                }
            }
        }
        Ok(())
    }

    /// See `Op::PowerCut` and the module docs.
    fn power_cut(&mut self, writes: &[Op], after_calls: u64, mode: CutMode) -> Outcome {
        self.drain_all()?;
        let r0 = self.model.current_revision();
        // A watch from a revision above the current one reads every event published after
        // it started (see `Hub::watch`): the model's watchers will see the replayed writes,
        // so the engine's resume from r0 at the latest.
        let positions: Vec<_> = self
            .take_watches()
            .into_iter()
            .map(|(prefix, seen, model)| (prefix, seen.min(r0), model))
            .collect();
        // The writes as the engine gets them (preconditions from the model's state now).
        let writes: Vec<(&'static [u8], WriteOp, Vec<u8>)> = writes
            .iter()
            .map(|op| match op {
                Op::Create { key, value } => (KEYS[*key as usize], WriteOp::Create, value.clone()),
                Op::Update { key, pre, value } => {
                    let k = KEYS[*key as usize];
                    (k, WriteOp::Update(self.pre(k, *pre)), value.clone())
                }
                Op::Delete { key, pre } => {
                    let k = KEYS[*key as usize];
                    (k, WriteOp::Delete(self.pre(k, *pre)), Vec::new())
                }
                other => unreachable!("not a write: {other:?}"),
            })
            .collect();
        // The revision the first admitted write gets (after an earlier cut, above r0 + 1).
        let first = self.eng.next_revision();
        self.eng.fault_io().cut_after(after_calls, mode);
        // The highest revision a value builder was told: handed out, if not acknowledged.
        let told = std::cell::Cell::new(Revision::ZERO);
        let pending: Vec<_> = writes
            .iter()
            .map(|(k, op, v)| {
                self.eng
                    .write(k, *op, |ctx: &WriteContext<'_>, out: &mut Vec<u8>| {
                        told.set(told.get().max(ctx.revision.unwrap_or_default()));
                        out.extend_from_slice(v);
                        Ok(())
                    })
            })
            .collect();
        let results: Vec<Result<Written, Error>> = pending.into_iter().map(ack).collect();
        let handed_out = results
            .iter()
            .filter_map(|r| r.as_ref().ok().map(|w| w.revision))
            .chain([told.get()])
            .max()
            .unwrap_or_default();
        let shard_of: Vec<usize> = writes
            .iter()
            .map(|(k, _, _)| self.eng.shard_of(k))
            .collect();
        self.eng.reopen_after_power_cut(mode);

        // What each write got, had every one been admitted in order: the model's state then
        // decides preconditions and revisions exactly as the engine's pending state does.
        let mut state: std::collections::HashMap<&[u8], Option<Revision>> = KEYS
            .iter()
            .map(|k| {
                (
                    *k,
                    get_kv(&self.model, k, ReadAt::Latest).map(|kv| Revision(kv.rev)),
                )
            })
            .collect();
        let mut next = first;
        let mut admitted: Vec<Option<Revision>> = Vec::new();
        for (i, ((k, op, _), res)) in writes.iter().zip(&results).enumerate() {
            let cur = state[k];
            let verdict = match (op, cur) {
                (WriteOp::Create, Some(r)) => Err(Error::AlreadyExists { revision: r }),
                (WriteOp::Update(_) | WriteOp::Delete(_), None) => Err(Error::NotFound),
                (
                    WriteOp::Update(Precondition::ModRevision(want))
                    | WriteOp::Delete(Precondition::ModRevision(want)),
                    Some(actual),
                ) if *want != actual => Err(Error::Conflict {
                    expected: *want,
                    actual,
                }),
                _ => {
                    let r = next;
                    next = next.next();
                    let live = !matches!(op, WriteOp::Delete(_));
                    state.insert(k, live.then_some(r));
                    Ok(Written {
                        revision: r,
                        prev_revision: cur,
                    })
                }
            };
            match (res, &verdict) {
                // Refused by the stopped engine or failed by the cut: outcome unknown.
                (Err(Error::Failed(_)), _) => {}
                (res, verdict) => ensure_eq!(
                    norm_write(clone_result(res)),
                    norm_write(clone_result(verdict)),
                    "unacknowledged write #{i} {} {op:?}",
                    show(k)
                ),
            }
            admitted.push(verdict.ok().map(|w| w.revision));
        }

        // What survived: the history after r0, straight from the reopened segments.
        let cur = self.eng.current_revision();
        let mut events = Vec::new();
        if cur > r0 {
            let mut w = self
                .eng
                .watch(b"", r0)
                .map_err(|e| format!("watch after cut: {e}"))?;
            let deadline = Instant::now() + patience();
            while events
                .last()
                .is_none_or(|e: &std::sync::Arc<keel_engine::Event>| e.revision() < cur)
            {
                let now = Instant::now();
                ensure!(now < deadline, "history after the cut stops before {cur}");
                w.next_batch_timeout(&mut events, deadline - now)
                    .map_err(|e| format!("history after the cut: {e}"))?;
            }
        }
        let by_rev: std::collections::HashMap<Revision, usize> = admitted
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.map(|r| (r, i)))
            .collect();
        let mut survived = vec![false; writes.len()];
        for e in &events {
            let Some(&i) = by_rev.get(&e.revision()) else {
                return Err(format!(
                    "after the cut, revision {} is no write of ours: {:?}",
                    e.revision(),
                    ev(e)
                ));
            };
            let (k, op, v) = &writes[i];
            let want = if matches!(op, WriteOp::Delete(_)) {
                (false, k.to_vec(), Vec::new())
            } else {
                (true, k.to_vec(), v.clone())
            };
            let got = (
                e.kind == keel_engine::EventKind::Put,
                e.kv.key().to_vec(),
                e.kv.value().to_vec(),
            );
            ensure_eq!(got, want, "write #{i} as recovered at {}", e.revision());
            survived[i] = true;
        }
        for (i, res) in results.iter().enumerate() {
            ensure!(
                res.is_err() || survived[i],
                "acknowledged write #{i} {} lost by the power cut",
                show(writes[i].0)
            );
            if matches!(res, Err(Error::Failed(_))) && admitted[i].is_some() {
                let n = if survived[i] {
                    &UNACKED_KEPT
                } else {
                    &UNACKED_LOST
                };
                n.fetch_add(1, Ordering::Relaxed);
            }
        }
        POWER_CUTS.fetch_add(1, Ordering::Relaxed);
        // Per shard, the survivors are a prefix of the admitted writes in revision order
        // (at most one batch per shard is ever unsynced).
        for shard in 0..self.eng.stats().shards {
            let mut lost = None;
            for (i, r) in admitted.iter().enumerate() {
                if r.is_none() || shard_of[i] != shard {
                    continue;
                }
                match (survived[i], lost) {
                    (false, None) => lost = Some(i),
                    (true, Some(l)) => {
                        return Err(format!("write #{i} survived the cut but #{l} before it on shard {shard} did not"));
                    }
                    _ => {}
                }
            }
        }
        let top = events.last().map_or(r0, |e| e.revision());
        ensure_eq!(cur, top, "current revision after the cut");

        // The model replays the survivors; a lost write's revision is skipped (consumed by
        // a write whose value builder refuses).
        let mut r = first;
        while r <= cur {
            let done = match by_rev.get(&r) {
                Some(&i) if survived[i] => {
                    let (k, op, v) = &writes[i];
                    ack(self.model.write(k, *op, value(v)))
                }
                _ => {
                    let k = KEYS[0];
                    let op = if get_kv(&self.model, k, ReadAt::Latest).is_some() {
                        WriteOp::Update(Precondition::None)
                    } else {
                        WriteOp::Create
                    };
                    let skip = ack(self
                        .model
                        .write(k, op, |_, _| Err("lost in the cut".into())));
                    ensure!(
                        matches!(skip, Err(Error::Aborted(_))),
                        "skipping {r}: {skip:?}"
                    );
                    Ok(Written {
                        revision: r,
                        prev_revision: None,
                    })
                }
            };
            ensure!(
                done.as_ref().is_ok_and(|w| w.revision == r),
                "model replay of {r}: {done:?}"
            );
            ensure_eq!(
                self.model.current_revision(),
                r,
                "model revision in the replay"
            );
            r = r.next();
        }
        self.check_all()?;
        // The engine hands out no revision it handed out before the cut (to a value builder or
        // in an acknowledgement), whatever the cut kept.
        ensure!(
            self.eng.next_revision() > handed_out,
            "next revision {} after the cut would reuse {handed_out}, handed out before it",
            self.eng.next_revision()
        );
        self.model.skip_revisions_below(self.eng.next_revision());
        self.resume_watches(positions)
    }

    /// Everything observable agrees: revisions, every snapshot still readable, stats.
    fn check_all(&self) -> Outcome {
        let cur = self.model.current_revision();
        let c = self.model.compacted_revision();
        ensure_eq!(self.eng.current_revision(), cur, "current revision");
        ensure_eq!(self.eng.compacted_revision(), c, "compacted revision");
        for r in c.0..=cur.0 {
            let req = ListRequest {
                at: ReadAt::Exact(Revision(r)),
                ..ListRequest::prefix(b"")
            };
            ensure!(self.list_both(&req)?.is_ok(), "list at {r} failed in both");
        }
        let (live, _, _, _) = self
            .list_both(&ListRequest::prefix(b""))?
            .expect("list latest");
        let st = self.eng.stats();
        ensure_eq!(st.revision, cur, "stats().revision");
        ensure_eq!(st.keys, live.len() as u64, "stats().keys");
        Ok(())
    }
}

fn run_case(cfg: &Config, ops: &[Op]) -> Outcome {
    let mut r = Runner::new(cfg);
    for (i, op) in ops.iter().enumerate() {
        r.apply(op)
            .map_err(|e| format!("op #{i} {} :: {e}", describe(op)))?;
    }
    r.drain_all().map_err(|e| format!("final drain :: {e}"))?;
    r.check_all().map_err(|e| format!("final check :: {e}"))?;
    r.reopen().map_err(|e| format!("final reopen :: {e}"))?;
    Ok(())
}

/// Runs a case, turning panics (in the engine or the harness) into failures.
fn run_caught(cfg: &Config, ops: &[Op]) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| run_case(cfg, ops))) {
        Ok(r) => r,
        Err(p) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "<non-string panic>".into())
        )),
    }
}

/// Greedily removes operations (chunks, then single ones, then writes between pages) while
/// the case still fails.
fn shrink(cfg: &Config, mut ops: Vec<Op>, mut err: String) -> (Vec<Op>, String) {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    SHRINKING.store(true, Ordering::Relaxed);
    let sig = signature(&err);
    let same = |r: Outcome| match r {
        Err(e) if signature(&e) == sig => Some(e),
        _ => None,
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut chunk = ops.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        let mut progressed = false;
        while i < ops.len() && Instant::now() < deadline {
            let mut cand = ops.clone();
            cand.drain(i..(i + chunk).min(ops.len()));
            match same(run_caught(cfg, &cand)) {
                Some(e) => {
                    ops = cand;
                    err = e;
                    progressed = true;
                }
                None => i += chunk,
            }
        }
        if chunk == 1 && !progressed || Instant::now() >= deadline {
            break;
        }
        chunk = (chunk / 2).max(1);
    }
    for i in 0..ops.len() {
        if let Op::Paginate { between, .. } = &ops[i] {
            for j in (0..between.len()).rev() {
                let mut cand = ops.clone();
                if let Op::Paginate { between, .. } = &mut cand[i] {
                    between.remove(j);
                }
                if let Some(e) = same(run_caught(cfg, &cand)) {
                    ops = cand;
                    err = e;
                }
            }
        }
    }
    SHRINKING.store(false, Ordering::Relaxed);
    std::panic::set_hook(hook);
    (ops, err)
}

fn run_suite(name: &str, mix: Mix, default_cases: u64) {
    let seeds: Vec<u64> = match std::env::var("KEEL_SEED") {
        Ok(s) => vec![parse_seed(&s)],
        Err(_) => {
            let n = std::env::var("KEEL_RANDOM_CASES")
                .map(|s| s.parse().expect("KEEL_RANDOM_CASES"))
                .unwrap_or(default_cases);
            let base = BASE_SEED ^ name.len() as u64;
            (0..n).map(|i| case_seed(base, i)).collect()
        }
    };
    let started = Instant::now();
    let mut total_ops = 0;
    for &seed in &seeds {
        let (cfg, ops) = gen_case(seed, mix);
        total_ops += ops.len();
        if let Err(err) = run_caught(&cfg, &ops) {
            eprintln!("{name}: seed {seed:#x} failed: {err}\nshrinking...");
            let (min, min_err) = if std::env::var_os("KEEL_RANDOM_NO_SHRINK").is_some() {
                (ops, err.clone())
            } else {
                shrink(&cfg, ops, err.clone())
            };
            let listing: Vec<String> = min.iter().map(|o| format!("  {}", describe(o))).collect();
            panic!(
                "{name}: engine and model disagree.\n\
                 replay: KEEL_SEED={seed:#x} cargo test -p keel-engine --test model_random {name}\n\
                 config: {cfg:?}\n\
                 original failure: {err}\n\
                 minimal sequence ({} ops):\n{}\n\
                 its failure: {min_err}",
                min.len(),
                listing.join("\n"),
            );
        }
    }
    eprintln!(
        "{name}: {} cases, {total_ops} ops in {:.1?}; {} segments rewritten; {} power cuts, \
         unacknowledged writes caught by them: {} kept, {} lost",
        seeds.len(),
        started.elapsed(),
        REWRITTEN.load(Ordering::Relaxed),
        POWER_CUTS.load(Ordering::Relaxed),
        UNACKED_KEPT.load(Ordering::Relaxed),
        UNACKED_LOST.load(Ordering::Relaxed),
    );
}

/// Creates, updates and deletes with random (often stale) preconditions, reads at random
/// revisions, lists and paginated lists at snapshots, watches from random revisions,
/// compaction, close + reopen, invalid keys.
#[test]
fn random_ops_engine_matches_model() {
    run_suite(
        "random_ops_engine_matches_model",
        Mix {
            aborts: false,
            power_cuts: false,
        },
        2000,
    );
}

/// The same, plus writes that fail after the value builder ran: builders that refuse
/// (`Aborted`) and values over `value_bytes_max`. The model does not consume a revision for
/// them; revisions are compared exactly.
#[test]
fn random_ops_with_aborted_writes_engine_matches_model() {
    run_suite(
        "random_ops_with_aborted_writes_engine_matches_model",
        Mix {
            aborts: true,
            power_cuts: false,
        },
        800,
    );
}

/// With power cuts: the engine on `FaultIo`, `SyncMode::Always`, and `Op::PowerCut` among
/// the operations (see the module docs).
#[test]
fn random_ops_with_power_cuts_engine_matches_model() {
    run_suite(
        "random_ops_with_power_cuts_engine_matches_model",
        Mix {
            aborts: true,
            power_cuts: true,
        },
        300,
    );
}

/// A write result, cloned (errors are not `Clone`) for comparison.
fn clone_result(r: &Result<Written, Error>) -> Result<Written, Error> {
    match r {
        Ok(w) => Ok(*w),
        Err(e) => Err(Error::Failed(err_str(e))),
    }
}
