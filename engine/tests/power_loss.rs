//! Power-loss tests: writers run against `FaultIo`, the power is cut at a random I/O call, and
//! the store is reopened from only what the disk kept (`CutMode::SyncedOnly`: the synced
//! bytes; `CutMode::Torn`: those plus a random part of the rest, torn at 512-byte sectors; see
//! `io::fault`).
//!
//! Rounds are chained: each reopens the previous round's image, checks it, writes until the
//! power goes, and hands its own image to the next, so torn tails are met by later segments
//! and cuts also fall inside a recovery (a cut armed before `Engine::open`).
//!
//! After each reopen: every acknowledged write (`SyncMode::Always`) is readable at its
//! revision; each key's latest state is its last acknowledged write or one of the writes
//! attempted after it (whose outcome was never delivered), never an older state; every value
//! any read or the watch history returns is, byte for byte, a value some write attempted for
//! that key (nothing half-written); the current revision covers every acknowledged write.
//!
//! Environment: `KEEL_POWER_ROUNDS` (default 40), `KEEL_POWER_SEED` (default fixed). A
//! failure prints the seed and the round.

mod common;

use common::*;
use keel_engine::io::fault::{CutMode, FaultIo};
use keel_engine::{
    Engine, Error, ListRequest, Options, Precondition, ReadAt, Revision, Store, StoreExt, SyncMode,
    WriteOp,
};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KEYS: usize = 32;
const WRITERS: usize = 3;
/// Attempts per writer and round when the cut comes late (it then comes at the end).
const ATTEMPTS_MAX: u64 = 400;
const PREFIX: &[u8] = b"/p/";

fn key(i: usize) -> Vec<u8> {
    format!("/p/k{i:02}").into_bytes()
}

fn options(dir: &Path, io: Arc<FaultIo>) -> Options {
    let mut o = Options::new(dir);
    o.shards = 2;
    o.sync = SyncMode::Always;
    o.maintenance_interval = None;
    o.limits.segment_bytes = 64 * 1024;
    o.limits.value_bytes_max = 16 * 1024;
    o.io = io;
    o
}

/// A write attempt, recorded before it is made.
#[derive(Clone, Debug)]
struct Attempt {
    key: usize,
    /// `None` for a delete.
    value: Option<Vec<u8>>,
}

#[derive(Default)]
struct Record {
    /// Every attempt, by tag (the value's first bytes; deletes get a tag too).
    attempts: HashMap<String, Attempt>,
    /// Acknowledged writes by revision: (key, tag).
    acked: BTreeMap<Revision, (usize, String)>,
    /// Per key, the tags attempted after its last acknowledged write (outcome unknown).
    unsure: HashMap<usize, Vec<String>>,
}

/// A value that names its tag and whose filler is derived from it.
fn make_value(tag: &str, len: usize) -> Vec<u8> {
    let mut v = format!("{tag}:").into_bytes();
    let mut rng = Rng::new(tag.bytes().fold(7u64, |h, b| h.wrapping_mul(31) ^ b as u64));
    while v.len() < len {
        v.push(b'a' + rng.below(26) as u8);
    }
    v
}

fn tag_of(v: &[u8]) -> String {
    let end = v.iter().position(|&b| b == b':').unwrap_or(v.len());
    String::from_utf8_lossy(&v[..end]).into_owned()
}

fn writer(engine: &Engine, round: usize, tid: usize, seed: u64, rec: &Mutex<Record>) {
    let mut rng = Rng::new(seed);
    let deadline = Instant::now() + Duration::from_secs(60);
    for seq in 0..ATTEMPTS_MAX {
        assert!(Instant::now() < deadline, "writer {tid} stuck");
        let k = rng.below(KEYS as u64) as usize;
        let cur = match engine.get(&key(k), ReadAt::Latest) {
            Ok(c) => c,
            Err(e) => panic!("get: {e}"),
        };
        let tag = format!("r{round}t{tid}s{seq}");
        let len = if rng.chance(1, 8) {
            rng.range(4000, 15_000)
        } else {
            rng.range(20, 1500)
        } as usize;
        let delete = cur.is_some() && rng.chance(1, 4);
        let op = match &cur {
            None => WriteOp::Create,
            Some(kv) if delete => WriteOp::Delete(Precondition::ModRevision(kv.mod_revision)),
            Some(_) if rng.chance(1, 3) => WriteOp::Update(Precondition::None),
            Some(kv) => WriteOp::Update(Precondition::ModRevision(kv.mod_revision)),
        };
        let v = (!delete).then(|| make_value(&tag, len));
        {
            let mut r = rec.lock().unwrap();
            r.attempts.insert(
                tag.clone(),
                Attempt {
                    key: k,
                    value: v.clone(),
                },
            );
            r.unsure.entry(k).or_default().push(tag.clone());
        }
        let res = ack(engine.write(&key(k), op, value(v.as_deref().unwrap_or(b""))));
        let mut r = rec.lock().unwrap();
        match res {
            Ok(w) => {
                r.acked.insert(w.revision, (k, tag.clone()));
            }
            Err(Error::Conflict { .. } | Error::NotFound | Error::AlreadyExists { .. }) => {
                r.unsure.get_mut(&k).unwrap().retain(|t| *t != tag);
            }
            Err(Error::Failed(_)) => return,
            Err(e) => panic!("writer {tid}: {e:?}"),
        }
    }
}

/// After an acknowledgement only the writes attempted later are unsure for its key: rebuilt
/// from the record (acks arrive out of attempt order across threads, so this is done once).
fn settle(rec: &mut Record) {
    // An attempt stays unsure unless it was acknowledged; acknowledged tags are not unsure.
    let acked_tags: std::collections::HashSet<&String> =
        rec.acked.values().map(|(_, t)| t).collect();
    for tags in rec.unsure.values_mut() {
        tags.retain(|t| !acked_tags.contains(t));
    }
}

fn check(engine: &Engine, rec: &Record, ctx: &str) {
    let acked_tag: HashMap<&str, Revision> = rec
        .acked
        .iter()
        .map(|(r, (_, t))| (t.as_str(), *r))
        .collect();
    let valid = |k: usize, v: &[u8], rev: Revision, what: &str| {
        let tag = tag_of(v);
        let a = rec
            .attempts
            .get(&tag)
            .unwrap_or_else(|| panic!("{ctx}: {what}: value {tag:?} was never written"));
        assert_eq!(a.key, k, "{ctx}: {what}: {tag} belongs to another key");
        assert!(
            a.value.as_deref() == Some(v),
            "{ctx}: {what}: {tag} at {rev} is not the value written ({} bytes)",
            v.len()
        );
        if let Some(r) = acked_tag.get(tag.as_str()) {
            assert_eq!(
                *r, rev,
                "{ctx}: {what}: {tag} acknowledged at another revision"
            );
        }
    };
    let max_acked = rec.acked.keys().last().copied().unwrap_or_default();
    assert!(
        engine.current_revision() >= max_acked,
        "{ctx}: revision {} below acknowledged {max_acked}",
        engine.current_revision()
    );
    for (r, (k, tag)) in &rec.acked {
        let got = engine.get(&key(*k), ReadAt::Exact(*r)).unwrap();
        let want = rec.attempts[tag].value.as_deref();
        match (&got, want) {
            (Some(kv), Some(v)) => {
                assert_eq!(kv.mod_revision, *r, "{ctx}: {tag}");
                assert!(kv.value() == v, "{ctx}: {tag} at {r} changed");
            }
            (None, None) => {}
            _ => panic!(
                "{ctx}: acknowledged {tag} (key {k}) at {r}: got {:?}",
                got.map(|kv| tag_of(kv.value()))
            ),
        }
    }
    let mut last_ack: HashMap<usize, (Revision, &str)> = HashMap::new();
    for (r, (k, t)) in &rec.acked {
        last_ack.insert(*k, (*r, t));
    }
    let no_unsure = Vec::new();
    for k in 0..KEYS {
        let got = engine.get(&key(k), ReadAt::Latest).unwrap();
        let unsure = rec.unsure.get(&k).unwrap_or(&no_unsure);
        let last = last_ack.get(&k);
        match got {
            Some(kv) => {
                valid(k, kv.value(), kv.mod_revision, "latest");
                let tag = tag_of(kv.value());
                match last {
                    Some((r, t)) if kv.mod_revision == *r => assert_eq!(tag, *t),
                    Some((r, _)) if kv.mod_revision < *r => {
                        panic!("{ctx}: key {k} rolled back to {tag} below acked {r}")
                    }
                    _ => assert!(
                        unsure.contains(&tag),
                        "{ctx}: key {k} holds {tag}, neither its last acked nor unsure"
                    ),
                }
            }
            None => {
                let last_is_delete = last.is_none_or(|(_, t)| rec.attempts[*t].value.is_none());
                let unsure_delete = unsure.iter().any(|t| rec.attempts[t].value.is_none());
                assert!(
                    last_is_delete || unsure_delete,
                    "{ctx}: key {k} is gone; last acked {last:?}"
                );
            }
        }
    }
    let l = engine.list(&ListRequest::prefix(PREFIX)).unwrap();
    for kv in &l.items {
        let k: usize = std::str::from_utf8(&kv.key()[4..])
            .unwrap()
            .parse()
            .unwrap();
        valid(k, kv.value(), kv.mod_revision, "list");
    }
    // The whole history, from the segments.
    if engine.current_revision() == Revision::ZERO {
        return;
    }
    let mut w = engine.watch(PREFIX, Revision::ZERO).unwrap();
    let mut events = Vec::new();
    let cur = engine.current_revision();
    let deadline = Instant::now() + PATIENCE;
    while events
        .last()
        .is_none_or(|e: &Arc<keel_engine::Event>| e.revision() < cur)
    {
        let now = Instant::now();
        assert!(now < deadline, "{ctx}: history stalled");
        w.next_batch_timeout(&mut events, deadline - now).unwrap();
    }
    let mut seen = 0;
    for e in &events {
        let k: usize = std::str::from_utf8(&e.kv.key()[4..])
            .unwrap()
            .parse()
            .unwrap();
        if e.kind == keel_engine::EventKind::Put {
            valid(k, e.kv.value(), e.revision(), "history");
        }
        if let Some((kk, _)) = rec.acked.get(&e.revision()) {
            assert_eq!(*kk, k, "{ctx}: history at {}", e.revision());
            seen += 1;
        }
    }
    assert_eq!(
        seen,
        rec.acked.len(),
        "{ctx}: acknowledged writes missing from history"
    );
}

fn seed() -> u64 {
    std::env::var("KEEL_POWER_SEED").map_or(0x9017_e7c0_ffee_0001, |s| parse_seed(&s))
}

fn rounds() -> usize {
    std::env::var("KEEL_POWER_ROUNDS").map_or(40, |s| s.parse().expect("KEEL_POWER_ROUNDS"))
}

#[test]
fn power_cuts_keep_every_acknowledged_write() {
    let seed = seed();
    let base = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(seed);
    let rec = Mutex::new(Record::default());
    let mut dir: PathBuf = base.path().join("round-0");
    let (mut torn, mut during_open, mut cut_writes) = (0, 0, 0);
    let started = Instant::now();
    for round in 0..rounds() {
        let ctx = format!("seed {seed:#x} (KEEL_POWER_SEED) round {round}");
        let io = FaultIo::new(&dir).unwrap();
        let mode = if rng.chance(3, 4) {
            torn += 1;
            CutMode::Torn {
                seed: rng.next_u64(),
            }
        } else {
            CutMode::SyncedOnly
        };
        if rng.chance(1, 6) {
            // Inside recovery (torn-tail zeroing, segment creation, the SHARDS file).
            io.cut_after(rng.range(1, 12), mode);
        }
        let opened = Engine::open(options(&dir, io.clone()));
        let engine = match opened {
            Ok(e) => Some(e),
            Err(Error::Io(e)) if io.is_cut() => {
                assert_eq!(e.raw_os_error(), Some(libc::EIO), "{ctx}: {e}");
                during_open += 1;
                None
            }
            Err(e) => panic!("{ctx}: open failed: {e:?}"),
        };
        if let Some(engine) = engine {
            check(&engine, &rec.lock().unwrap(), &ctx);
            if !io.is_cut() {
                io.cut_after(rng.range(1, 600), mode);
            }
            std::thread::scope(|s| {
                for tid in 0..WRITERS {
                    let (engine, rec, wseed) = (&engine, &rec, rng.next_u64());
                    s.spawn(move || writer(engine, round, tid, wseed, rec));
                }
            });
            cut_writes += io.is_cut() as usize;
            drop(engine);
        }
        let image = io.cut(mode);
        settle(&mut rec.lock().unwrap());
        let next = base.path().join(format!("round-{}", round + 1));
        image.write_to(&next).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        dir = next;
    }
    let io = FaultIo::new(&dir).unwrap();
    let engine = Engine::open(options(&dir, io)).unwrap();
    let rec = rec.into_inner().unwrap();
    check(&engine, &rec, &format!("seed {seed:#x} final"));
    eprintln!(
        "power loss: {} rounds ({torn} torn, {during_open} cut inside open, {cut_writes} \
         cut while writing), {} acknowledged writes, revision {}, in {:.1?}",
        rounds(),
        rec.acked.len(),
        engine.current_revision(),
        started.elapsed()
    );
    assert!(
        cut_writes > rounds() / 2,
        "most cuts should fall among the writes"
    );
}
