//! Snapshot and restore (`snapshot.rs`, `restore.rs`): a store saved while it is written to,
//! restored into a new directory, holds every key with its value and mod revision, opens at
//! the snapshot's revision, and hands out revisions above it; damaged snapshots and used
//! target directories are refused without writing anything.

use keel_engine::restore::{restore, RestoreError, RestoreOptions};
use keel_engine::snapshot::{self, read_snapshot};
use keel_engine::{
    Engine, ListRequest, MemStore, Options, Precondition, ReadAt, Revision, Store, StoreExt,
    SyncMode,
};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn options(dir: &Path, shards: usize) -> Options {
    let mut o = Options::new(dir);
    o.shards = shards;
    o.sync = SyncMode::None;
    o.maintenance_interval = None;
    o.limits.segment_bytes = 64 * 1024;
    o
}

type State = BTreeMap<Vec<u8>, (Vec<u8>, Revision)>;

/// Creates, updates and deletes; returns the live state.
fn fill(store: &dyn Store, n: usize) -> State {
    let mut state = State::new();
    for i in 0..n {
        let k = format!("/registry/configmaps/ns{}/cm{i:05}", i % 3).into_bytes();
        let v = format!("value {i} {}", "x".repeat(i % 700)).into_bytes();
        let w = store.create(&k, &v).wait().unwrap();
        state.insert(k, (v, w.revision));
        if i % 5 == 4 {
            let k = format!("/registry/configmaps/ns{}/cm{:05}", (i - 2) % 3, i - 2).into_bytes();
            let v = format!("updated {i}").into_bytes();
            if !state.contains_key(&k) {
                continue;
            }
            let w = store.update(&k, Precondition::None, &v).wait().unwrap();
            state.insert(k, (v, w.revision));
        }
        if i % 7 == 6 {
            let k = format!("/registry/configmaps/ns{}/cm{:05}", (i - 1) % 3, i - 1).into_bytes();
            if state.remove(&k).is_some() {
                store.delete(&k, Precondition::None).wait().unwrap();
            }
        }
    }
    state
}

fn save_to(store: &dyn Store, path: &Path) -> (Revision, u64) {
    let mut f = std::fs::File::create(path).unwrap();
    snapshot::save(store, &mut f, 1).unwrap()
}

fn assert_holds(engine: &Engine, state: &State) {
    for (k, (v, rev)) in state {
        let kv = engine
            .get(k, ReadAt::Latest)
            .unwrap()
            .unwrap_or_else(|| panic!("{} missing", String::from_utf8_lossy(k)));
        assert_eq!(kv.value(), &v[..]);
        assert_eq!(kv.mod_revision, *rev, "{}", String::from_utf8_lossy(k));
    }
    let all = engine.list(&ListRequest::prefix(b"")).unwrap();
    assert_eq!(all.items.len(), state.len());
}

#[test]
fn round_trip_keeps_every_revision_and_new_writes_go_above() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Engine::open(options(&tmp.path().join("src"), 2)).unwrap();
    let state = fill(&src, 3000);
    // A trailing delete: R is above every record's mod revision.
    let gone = state.keys().next().unwrap().clone();
    let mut state = state;
    src.delete(&gone, Precondition::None).wait().unwrap();
    state.remove(&gone);
    let snap = tmp.path().join("snap.db");
    let (r, n) = save_to(&src, &snap);
    assert_eq!(r, src.current_revision());
    assert_eq!(n as usize, state.len());
    src.close().unwrap();

    let dir = tmp.path().join("restored");
    let mut o = RestoreOptions::new(&snap, &dir);
    o.shards = 3; // a different shard count than the source's: keys are placed anew
    o.limits.segment_bytes = 64 * 1024;
    let done = restore(&o).unwrap();
    assert_eq!(done.summary.header.revision, r);
    assert_eq!(done.summary.records as usize, state.len());
    assert!(
        done.segments > 3,
        "several segments per shard: {}",
        done.segments
    );
    assert_eq!(done.next_revision, Revision(r.0 + 1));

    let mut opts = options(&dir, 1);
    opts.shards = 1; // ignored: the store says 3
    let engine = Engine::open(opts).unwrap();
    assert_eq!(engine.stats().shards, 3);
    assert_eq!(engine.current_revision(), r);
    assert_eq!(engine.compacted_revision(), r);
    assert_holds(&engine, &state);
    // History before R is not in the snapshot: reads there answer Compacted, as after a
    // compaction.
    assert!(engine.get(&gone, ReadAt::Exact(Revision(r.0 - 1))).is_err());
    // A watch from R sees the next write, which is above R.
    let mut w = engine.watch(b"/registry/", r).unwrap();
    let written = engine.create(b"/registry/new", b"after").wait().unwrap();
    assert!(written.revision > r, "{} not above {r}", written.revision);
    let mut got = Vec::new();
    assert!(w
        .next_batch_timeout(&mut got, std::time::Duration::from_secs(5))
        .unwrap());
    assert_eq!(got[0].revision(), written.revision);
    drop(w);
    engine.close().unwrap();

    // Private modes, whatever the umask.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    for e in walk(&dir) {
        let want = if e.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&e), want, "{}", e.display());
    }
    // A clean restart keeps the revisions (no reuse after the close either).
    let engine = Engine::open(options(&dir, 3)).unwrap();
    let again = engine.create(b"/registry/again", b"x").wait().unwrap();
    assert!(again.revision > written.revision);
    engine.close().unwrap();
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.extend(walk(&p));
        }
        v.push(p);
    }
    v
}

/// Saved while another thread writes: the snapshot is exactly the state at R, whatever was
/// written during the save.
#[test]
fn saved_while_written_is_the_state_at_its_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let src = std::sync::Arc::new(Engine::open(options(&tmp.path().join("src"), 2)).unwrap());
    fill(&*src, 2000);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (src, stop) = (src.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let k = format!("/registry/configmaps/ns{}/cm{:05}", i % 3, i % 2000);
                let _ = src
                    .update(k.as_bytes(), Precondition::None, b"during")
                    .wait();
                let _ = src
                    .create(format!("/registry/during/{i}").as_bytes(), b"d")
                    .wait();
                i += 1;
            }
            i
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(50));
    let snap = tmp.path().join("snap.db");
    let (r, _) = save_to(&*src, &snap);
    // The writer goes on past R before it stops (on a loaded machine it may not have been
    // scheduled since the save began).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while src.current_revision() <= r && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.join().unwrap();
    assert!(writes > 10, "the writer ran ({writes} rounds)");
    assert!(src.current_revision() > r, "writes continued past R");
    // The state at R, read from the source afterwards.
    let at_r = src
        .list(&ListRequest {
            prefix: b"",
            start_after: None,
            limit: 0,
            at: ReadAt::Exact(r),
        })
        .unwrap();
    let mut saved = Vec::new();
    read_snapshot(&mut std::fs::File::open(&snap).unwrap(), &mut |rec| {
        saved.push((rec.key.to_vec(), rec.value.to_vec(), rec.mod_revision));
        Ok(())
    })
    .unwrap();
    let want: Vec<_> = at_r
        .items
        .iter()
        .map(|kv| (kv.key().to_vec(), kv.value().to_vec(), kv.mod_revision))
        .collect();
    assert_eq!(saved.len(), want.len());
    assert!(saved == want, "the snapshot differs from the state at {r}");
}

#[test]
fn a_memory_store_snapshot_restores_too() {
    let tmp = tempfile::tempdir().unwrap();
    let mem = MemStore::new(keel_engine::Limits::default());
    let state = fill(&mem, 500);
    let snap = tmp.path().join("snap.db");
    let (r, _) = save_to(&mem, &snap);
    let dir = tmp.path().join("restored");
    restore(&RestoreOptions::new(&snap, &dir)).unwrap();
    let engine = Engine::open(options(&dir, 1)).unwrap();
    assert_eq!(engine.current_revision(), r);
    assert_holds(&engine, &state);
}

#[test]
fn refuses_a_target_that_is_not_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let mem = MemStore::new(keel_engine::Limits::default());
    fill(&mem, 20);
    let snap = tmp.path().join("snap.db");
    save_to(&mem, &snap);
    let dir = tmp.path().join("used");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("something"), b"keep me").unwrap();
    let e = restore(&RestoreOptions::new(&snap, &dir)).unwrap_err();
    assert!(matches!(e, RestoreError::TargetNotEmpty(_)), "{e}");
    assert_eq!(std::fs::read(dir.join("something")).unwrap(), b"keep me");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    // An empty directory is fine.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    restore(&RestoreOptions::new(&snap, &empty)).unwrap();
    assert!(empty.join("MANIFEST").exists());
}

#[test]
fn refuses_a_damaged_or_cut_snapshot_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mem = MemStore::new(keel_engine::Limits::default());
    fill(&mem, 200);
    let snap = tmp.path().join("snap.db");
    save_to(&mem, &snap);
    let good = std::fs::read(&snap).unwrap();
    let len = good.len();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("a flipped bit in a value", {
            let mut b = good.clone();
            b[len / 2] ^= 0x04;
            b
        }),
        ("cut in the middle", good[..len / 2].to_vec()),
        ("cut before the hash", good[..len - 10].to_vec()),
        ("the header's revision changed", {
            let mut b = good.clone();
            b[snapshot::SNAP_OFF_REVISION] ^= 0x01;
            b
        }),
        ("a byte appended", {
            let mut b = good.clone();
            b.push(0);
            b
        }),
    ];
    for (what, bytes) in cases {
        let bad = tmp.path().join("bad.db");
        std::fs::write(&bad, &bytes).unwrap();
        let dir = tmp.path().join("target");
        let e = restore(&RestoreOptions::new(&bad, &dir)).unwrap_err();
        assert!(matches!(e, RestoreError::Snapshot(_)), "{what}: {e}");
        assert!(!dir.exists(), "{what}: the target was created");
        let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().contains("restoring"))
            .collect();
        assert!(leftovers.is_empty(), "{what}: {leftovers:?}");
    }
}

/// Measures (run with `--release --ignored --nocapture`): saving and restoring a store of
/// `KEEL_SNAPSHOT_KEYS` (default 100,000) ConfigMap-sized values, and the throughput of a
/// writer while a save runs against it without one.
#[test]
#[ignore]
fn measure_save_and_restore() {
    let n: usize = std::env::var("KEEL_SNAPSHOT_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let tmp = tempfile::tempdir().unwrap();
    let mut o = options(&tmp.path().join("src"), 2);
    o.limits.segment_bytes = 64 << 20;
    o.sync = SyncMode::Always;
    let src = std::sync::Arc::new(Engine::open(o).unwrap());
    let value = |i: usize| {
        let mut v = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}","namespace":"bench","resourceVersion":"0"}},"data":{{"k":""#
        )
        .into_bytes();
        v.resize(900, b'x');
        v.extend_from_slice(b"\"}}");
        v
    };
    let t = std::time::Instant::now();
    let pendings: Vec<_> = (0..n)
        .map(|i| {
            src.create(
                format!("/registry/configmaps/bench/cm-{i:07}").as_bytes(),
                &value(i),
            )
        })
        .collect();
    for p in pendings {
        p.wait().unwrap();
    }
    eprintln!("filled {n} keys in {:.2} s", t.elapsed().as_secs_f64());

    // Writer throughput: 4 threads of sequential creates, 2 s without a save, then during one.
    let rate = |src: &std::sync::Arc<Engine>, tag: &str, during: &dyn Fn()| {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|w| {
                let (src, stop, count, tag) =
                    (src.clone(), stop.clone(), count.clone(), tag.to_string());
                std::thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let k = format!("/registry/configmaps/w/{tag}-{w}-{i}");
                        src.create(k.as_bytes(), b"{}").wait().unwrap();
                        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        i += 1;
                    }
                })
            })
            .collect();
        let t = std::time::Instant::now();
        during();
        if t.elapsed() < std::time::Duration::from_secs(2) {
            std::thread::sleep(std::time::Duration::from_secs(2) - t.elapsed());
        }
        let secs = t.elapsed().as_secs_f64();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
        count.load(std::sync::atomic::Ordering::Relaxed) as f64 / secs
    };
    let idle = rate(&src, "idle", &|| {});
    let snap = tmp.path().join("snap.db");
    let save_secs = std::sync::Mutex::new(0.0);
    let busy = rate(&src, "busy", &|| {
        let t = std::time::Instant::now();
        let mut f = std::io::BufWriter::new(std::fs::File::create(&snap).unwrap());
        snapshot::save(&*src, &mut f, 0).unwrap();
        f.into_inner().unwrap().sync_all().unwrap();
        *save_secs.lock().unwrap() = t.elapsed().as_secs_f64();
    });
    let bytes = std::fs::metadata(&snap).unwrap().len();
    eprintln!(
        "save: {:.2} s for {} MB; writer: {idle:.0} creates/s without a save, {busy:.0} during \
         ({:+.0}%)",
        save_secs.lock().unwrap(),
        bytes / 1_000_000,
        (busy / idle - 1.0) * 100.0
    );
    let t = std::time::Instant::now();
    let r = restore(&RestoreOptions::new(&snap, tmp.path().join("restored"))).unwrap();
    eprintln!(
        "restore: {:.2} s for {} keys ({} segments), verified by an open",
        t.elapsed().as_secs_f64(),
        r.summary.records,
        r.segments
    );
}
