//! Injected I/O faults (`io::fault::FaultIo`) on the flush path, with concurrent writers,
//! readers and a watcher.
//!
//! When a `pwrite` or an `fdatasync` fails (`EIO`, `ENOSPC`, a short write), the engine stops
//! taking writes (fail-stop, `Error::Failed`, `Engine::health`) and the writes that failed
//! leave nothing a reader can see: no `get` or `list` returns their values, no watch delivers
//! their events, every key keeps the state of its last acknowledged write, and every
//! acknowledged write stays readable at its revision. The store then reopens with every
//! acknowledged write; when the fault was a one-off, the failed writes (whose bytes the engine
//! zeroes again) do not come back either.
//!
//! Every value names the write that produced it (`t<thread>s<seq>`), so whatever a reader sees
//! can be traced to one write attempt.

mod common;

use common::*;
use keel_engine::io::fault::{Fault, FaultIo, FaultRule, IoOp};
use keel_engine::{
    Engine, Error, ListRequest, Options, Precondition, ReadAt, Revision, Store, StoreExt, SyncMode,
    WriteOp,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

const PREFIX: &[u8] = b"/f/";
const KEYS: usize = 24;
const WRITERS: usize = 4;
/// Attempts per writer thread at most (a fault ends them earlier).
const ATTEMPTS_MAX: usize = 600;

fn key(i: usize) -> Vec<u8> {
    format!("/f/k{i:02}").into_bytes()
}

fn options(dir: &Path, io: Option<Arc<FaultIo>>) -> Options {
    let mut o = Options::new(dir);
    o.shards = 2;
    o.sync = SyncMode::Always;
    o.maintenance_interval = None;
    // Small segments: rollovers (segment creation and its syncs) happen during the run.
    o.limits.segment_bytes = 64 * 1024;
    if let Some(io) = io {
        o.io = io;
    }
    o
}

/// A value that names its write: `t<tid>s<seq>:` and filler up to a few hundred bytes.
fn value_of(tid: usize, seq: usize) -> Vec<u8> {
    let mut v = format!("t{tid}s{seq:04}:").into_bytes();
    let len = 40 + (tid * 131 + seq * 37) % 700;
    v.extend((0..len).map(|i| b'a' + ((i + seq) % 26) as u8));
    v
}

/// The write a value names.
fn tag_of(v: &[u8]) -> String {
    let end = v.iter().position(|&b| b == b':').expect("value has a tag");
    String::from_utf8(v[..end].to_vec()).unwrap()
}

#[derive(Clone, Debug)]
struct Attempt {
    key: usize,
    tag: String,
    delete: bool,
    outcome: Outcome,
}

#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Acked(Revision),
    /// Refused by a precondition: nothing was written.
    Refused,
    /// `Error::Failed`: the write failed (or was refused by the stopped engine).
    Failed(String),
}

/// Writes until the engine fails: creates, and updates and deletes preconditioned on the
/// version just read (often stale: other writers share the keys).
fn writer(engine: &Engine, tid: usize, log: &Mutex<Vec<Attempt>>) {
    let mut rng = Rng::new(0x5eed ^ tid as u64);
    let mut failures = 0;
    for seq in 0..ATTEMPTS_MAX {
        let k = rng.below(KEYS as u64) as usize;
        let cur = engine
            .get(&key(k), ReadAt::Latest)
            .expect("reads keep working");
        let delete = cur.is_some() && rng.chance(1, 4);
        let op = match &cur {
            None => WriteOp::Create,
            Some(kv) if delete => WriteOp::Delete(Precondition::ModRevision(kv.mod_revision)),
            Some(kv) => WriteOp::Update(Precondition::ModRevision(kv.mod_revision)),
        };
        let v = value_of(tid, seq);
        let outcome = match ack(engine.write(&key(k), op, value(&v))) {
            Ok(w) => Outcome::Acked(w.revision),
            Err(Error::Failed(why)) => Outcome::Failed(why),
            Err(Error::Conflict { .. } | Error::NotFound | Error::AlreadyExists { .. }) => {
                Outcome::Refused
            }
            Err(e) => panic!("writer {tid}: unexpected {e:?}"),
        };
        if matches!(outcome, Outcome::Failed(_)) {
            failures += 1;
        } else {
            assert_eq!(failures, 0, "a write succeeded after the engine failed");
        }
        log.lock().unwrap().push(Attempt {
            key: k,
            tag: tag_of(&v),
            delete,
            outcome,
        });
        // A few more attempts after the first failure: all must fail.
        if failures == 3 {
            return;
        }
    }
}

/// Records the tag of every value readers and a watcher see while the writers run.
#[derive(Default)]
struct Seen {
    tags: HashSet<String>,
    /// Watch events as (revision, key, tag or None for a delete).
    events: Vec<(Revision, Vec<u8>, Option<String>)>,
}

fn read_everything(engine: &Engine, seen: &mut Seen) {
    for k in 0..KEYS {
        if let Some(kv) = engine.get(&key(k), ReadAt::Latest).unwrap() {
            seen.tags.insert(tag_of(kv.value()));
        }
    }
    let l = engine.list(&ListRequest::prefix(PREFIX)).unwrap();
    seen.tags
        .extend(l.items.iter().map(|kv| tag_of(kv.value())));
}

fn run_fault_case(name: &str, rule: FaultRule, want_errno: i32, strict_reopen: bool) {
    let dir = tempfile::tempdir().unwrap();
    let io = FaultIo::new(dir.path()).unwrap();
    let engine = Engine::open(options(dir.path(), Some(io.clone()))).unwrap();
    let mut watcher = engine.watch(PREFIX, Revision::ZERO).unwrap();
    io.inject(rule);
    let log = Mutex::new(Vec::new());
    let done = AtomicBool::new(false);
    let mut seen = Seen::default();
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|tid| {
                let (engine, log) = (&engine, &log);
                s.spawn(move || writer(engine, tid, log))
            })
            .collect();
        let reader = s.spawn(|| {
            let mut seen = Seen::default();
            while !done.load(Ordering::Acquire) {
                read_everything(&engine, &mut seen);
            }
            seen
        });
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        seen = reader.join().unwrap();
    });
    read_everything(&engine, &mut seen);
    let log = log.into_inner().unwrap();

    // The engine failed, says why, and refuses writes.
    let failure = engine.health().expect_err("the engine reports its failure");
    assert_eq!(failure.errno, Some(want_errno), "{name}: {failure}");
    assert_eq!(failure.is_no_space(), want_errno == libc::ENOSPC);
    assert!(
        log.iter().any(|a| matches!(a.outcome, Outcome::Failed(_))),
        "{name}: no write failed"
    );
    for a in &log {
        if let Outcome::Failed(why) = &a.outcome {
            assert_eq!(why, &failure.to_string(), "{name}: writers get the failure");
        }
    }
    let acked: BTreeMap<Revision, &Attempt> = log
        .iter()
        .filter_map(|a| match a.outcome {
            Outcome::Acked(r) => Some((r, a)),
            _ => None,
        })
        .collect();
    assert!(acked.len() >= 10, "{name}: the fault hit too early");
    let failed: HashMap<&str, &Attempt> = log
        .iter()
        .filter(|a| matches!(a.outcome, Outcome::Failed(_)))
        .map(|a| (a.tag.as_str(), a))
        .collect();

    // No reader ever saw a failed write's value.
    let leaked: Vec<_> = seen
        .tags
        .iter()
        .filter(|t| failed.contains_key(t.as_str()))
        .collect();
    assert!(
        leaked.is_empty(),
        "{name}: readers saw failed writes {leaked:?}"
    );

    // The watch delivers exactly the acknowledged writes, in order.
    let last = *acked.keys().last().unwrap();
    let mut events = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while events
        .last()
        .is_none_or(|e: &Arc<keel_engine::Event>| e.revision() < last)
    {
        let now = Instant::now();
        assert!(
            now < deadline,
            "{name}: watch stalled at {:?}",
            events.len()
        );
        watcher
            .next_batch_timeout(&mut events, deadline - now)
            .unwrap();
    }
    watcher.try_batch(&mut events).unwrap();
    seen.events = events
        .iter()
        .map(|e| {
            let tag = (e.kind == keel_engine::EventKind::Put).then(|| tag_of(e.kv.value()));
            (e.revision(), e.kv.key().to_vec(), tag)
        })
        .collect();
    let want: Vec<_> = acked
        .iter()
        .map(|(r, a)| (*r, key(a.key), (!a.delete).then(|| a.tag.clone())))
        .collect();
    assert_eq!(seen.events, want, "{name}: watch events");

    let expect_state = |engine: &Engine, when: &str| {
        // Every acknowledged write is readable at its revision ...
        for (r, a) in &acked {
            let got = engine.get(&key(a.key), ReadAt::Exact(*r)).unwrap();
            let got = got.map(|kv| tag_of(kv.value()));
            assert_eq!(
                got,
                (!a.delete).then(|| a.tag.clone()),
                "{name} {when}: at {r}"
            );
        }
        // ... and each key holds its last acknowledged write.
        for k in 0..KEYS {
            let last = acked.values().rev().find(|a| a.key == k);
            let want = last.and_then(|a| (!a.delete).then(|| a.tag.clone()));
            let got = engine.get(&key(k), ReadAt::Latest).unwrap();
            let got = got.map(|kv| tag_of(kv.value()));
            if !strict_reopen && when == "after reopen" && got != want {
                // The failed batch could not be zeroed (the disk kept failing): a failed write
                // may come back, as the latest version of its key.
                let a = failed
                    .get(got.as_deref().unwrap_or(""))
                    .unwrap_or_else(|| panic!("{name} {when}: {k} holds {got:?}"));
                assert_eq!(a.key, k);
                continue;
            }
            assert_eq!(got, want, "{name} {when}: latest of key {k}");
        }
    };
    expect_state(&engine, "before reopen");
    let live = engine.stats().keys;
    engine.close().unwrap();

    // A restart: the same files, through the real I/O.
    let engine = Engine::open(options(dir.path(), None)).unwrap();
    assert_eq!(engine.health(), Ok(()));
    expect_state(&engine, "after reopen");
    if strict_reopen {
        assert_eq!(engine.stats().keys, live, "{name}: live keys after reopen");
        assert_eq!(
            engine.current_revision(),
            last,
            "{name}: revision after reopen"
        );
    }
    // And it takes writes again.
    ok(engine.write(b"/f/after", WriteOp::Create, value(b"t9s9999:after")));
    engine.close().unwrap();
}

#[test]
fn failed_write_eio_leaves_no_trace() {
    run_fault_case(
        "write EIO",
        FaultRule::new(IoOp::Write, 40, Fault::Errno(libc::EIO)).on_paths_containing(".seg"),
        libc::EIO,
        true,
    );
}

#[test]
fn short_write_enospc_leaves_no_trace() {
    run_fault_case(
        "short write ENOSPC",
        FaultRule::new(
            IoOp::Write,
            40,
            Fault::Short {
                bytes: 100,
                errno: libc::ENOSPC,
            },
        )
        .on_paths_containing(".seg"),
        libc::ENOSPC,
        true,
    );
}

#[test]
fn failed_sync_eio_leaves_no_trace() {
    run_fault_case(
        "sync EIO",
        FaultRule::new(IoOp::Sync, 40, Fault::Errno(libc::EIO)).on_paths_containing(".seg"),
        libc::EIO,
        true,
    );
}

#[test]
fn failed_sync_enospc_leaves_no_trace() {
    run_fault_case(
        "sync ENOSPC",
        FaultRule::new(IoOp::Sync, 40, Fault::Errno(libc::ENOSPC)).on_paths_containing(".seg"),
        libc::ENOSPC,
        true,
    );
}

/// A disk that keeps failing: zeroing the failed batch fails too, so after a restart the
/// failed writes (none of them acknowledged) may be back; the acknowledged ones all are.
#[test]
fn dead_disk_keeps_every_acknowledged_write() {
    run_fault_case(
        "sync EIO, sticky",
        FaultRule::new(IoOp::Sync, 40, Fault::Errno(libc::EIO))
            .on_paths_containing(".seg")
            .sticky(),
        libc::EIO,
        false,
    );
}

/// Regression (issue 12): after a failed flush, `Shard::fail` aborted the failed revisions,
/// which let the visible revision move past them, but left their index entries in place: a
/// read at the latest revision then returned the value whose write had just failed.
#[test]
fn failed_write_is_not_served_once_the_revision_passes_it() {
    let dir = tempfile::tempdir().unwrap();
    let io = FaultIo::new(dir.path()).unwrap();
    let mut o = options(dir.path(), Some(io.clone()));
    o.shards = 1;
    let engine = Engine::open(o).unwrap();
    let w1 = ok(engine.write(b"/f/k", WriteOp::Create, value(b"t0s0:v1")));
    io.inject(FaultRule::new(IoOp::Sync, 1, Fault::Errno(libc::EIO)));
    let e = ack(engine.write(
        b"/f/k",
        WriteOp::Update(Precondition::None),
        value(b"t0s1:v2"),
    ));
    assert!(matches!(e, Err(Error::Failed(_))), "{e:?}");
    // The failed revision is consumed: the visible revision is past it.
    assert!(engine.wait_for(w1.revision.next(), PATIENCE));
    let got = engine.get(b"/f/k", ReadAt::Latest).unwrap().unwrap();
    assert_eq!(got.value(), b"t0s0:v1");
    assert_eq!(got.mod_revision, w1.revision);
    let l = engine.list(&ListRequest::prefix(PREFIX)).unwrap();
    assert_eq!(
        kvs(&l.items),
        vec![Kv::new(b"/f/k", b"t0s0:v1", w1.revision.get())]
    );
    assert_eq!(engine.stats().keys, 1);
    assert!(matches!(
        ack(engine.write(b"/f/other", WriteOp::Create, value(b"t0s2:x"))),
        Err(Error::Failed(_))
    ));
    engine.close().unwrap();
    let engine = Engine::open(options(dir.path(), None)).unwrap();
    let got = engine.get(b"/f/k", ReadAt::Latest).unwrap().unwrap();
    assert_eq!(got.value(), b"t0s0:v1", "the failed write came back");
    engine.close().unwrap();
}

/// A failure on one shard stops writes on all of them, with the same reason.
#[test]
fn a_failed_shard_stops_every_shard() {
    let dir = tempfile::tempdir().unwrap();
    let io = FaultIo::new(dir.path()).unwrap();
    let engine = Engine::open(options(dir.path(), Some(io.clone()))).unwrap();
    // Two keys on different shards.
    let on_shard = |s: usize| (0..).map(key).find(|k| engine.shard_of(k) == s).unwrap();
    let (a, b) = (on_shard(0), on_shard(1));
    ok(engine.write(&a, WriteOp::Create, value(b"t0s0:a")));
    io.inject(
        FaultRule::new(IoOp::Write, 1, Fault::Errno(libc::ENOSPC)).on_paths_containing("shard-000"),
    );
    assert!(matches!(
        ack(engine.write(&a, WriteOp::Update(Precondition::None), value(b"t0s1:a"))),
        Err(Error::Failed(_))
    ));
    let f = engine.health().unwrap_err();
    assert_eq!((f.shard, f.errno), (Some(0), Some(libc::ENOSPC)));
    assert_eq!(f.operation, "pwrite");
    let path = f
        .path
        .as_ref()
        .expect("the failed file")
        .display()
        .to_string();
    assert!(
        path.contains("shard-000") && path.ends_with(".seg"),
        "{path}"
    );
    match ack(engine.write(&b, WriteOp::Create, value(b"t0s2:b"))) {
        Err(Error::Failed(why)) => assert_eq!(why, f.to_string()),
        other => panic!("shard 1 took a write after shard 0 failed: {other:?}"),
    }
    assert_eq!(
        get_kv(&engine, &a, ReadAt::Latest).unwrap().value,
        b"t0s0:a"
    );
    // Maintenance writes files too: it stops with the writes.
    let cur = engine.current_revision();
    assert!(matches!(engine.compact(cur), Err(Error::Failed(_))));
    assert!(matches!(engine.rewrite_segments(), Err(Error::Failed(_))));
    engine.close().unwrap();
}
