//! The damaged-disk matrix: every way a closed store's files can be damaged (cut, erased,
//! overwritten, a flipped bit in any header or record, in `COMPACTED`, `SHARDS` or
//! `MANIFEST`, a segment file deleted or added) × where (the newest segment, an older one, a
//! shard's only segment).
//!
//! In every cell `Engine::open` either refuses with `Error::Corrupt` naming the damaged file
//! (and then has changed nothing, and a repair opens the store and reports what it dropped),
//! or opens with every acknowledged write present. In no cell does a write after the damage
//! get a revision that was handed out before it.
//!
//! The stores were closed cleanly, so every byte of them was acknowledged: a torn tail (a
//! crash during the last write) is `tests/corruption.rs`'s and `tests/power_loss.rs`'s.

mod disk;

use disk::{apply, copy_dir, segment_files, Damage, Rng, DAMAGES};
use keel_engine::{
    Engine, Error, ListRequest, Options, Precondition, ReadAt, RecoveryNote, Revision, Store,
    StoreExt, SyncMode,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SEGMENT_BYTES: u64 = 64 * 1024;

fn options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.shards = 1;
    o.sync = SyncMode::Always;
    o.commit_linger = std::time::Duration::ZERO;
    o.maintenance_interval = None;
    o.limits.segment_bytes = SEGMENT_BYTES;
    o
}

fn key(i: usize) -> Vec<u8> {
    format!("/damage/k{i:04}").into_bytes()
}

fn value(i: usize, rev_hint: usize) -> Vec<u8> {
    let mut v = format!("value {i} {rev_hint} ").into_bytes();
    v.resize(300 + (i * 37) % 400, b'a' + (i % 26) as u8);
    v
}

/// A closed store and what it must hold.
struct Fixture {
    dir: PathBuf,
    /// Latest state of every key ever written: (value, mod revision), `None` once deleted.
    state: BTreeMap<Vec<u8>, Option<(Vec<u8>, Revision)>>,
    /// The highest revision handed out.
    top: Revision,
}

/// Creates, updates and deletes until the shard holds `segments` segments (the newest with a
/// few batches), compacts at an early revision (so `COMPACTED` exists), closes cleanly.
fn build(dir: &Path, segments: usize) -> Fixture {
    let engine = Engine::open(options(dir)).unwrap();
    let mut state = BTreeMap::new();
    let mut top = Revision::ZERO;
    let mut tail = None;
    for i in 0.. {
        let (k, w) = match i % 7 {
            // Updates of keys created at i ≡ 2, deletes of keys created at i ≡ 1 (mod 7).
            3 if i > 10 => {
                let k = key(i - 1);
                let v = value(i - 1, i);
                let w = engine.update(&k, Precondition::None, &v).wait().unwrap();
                state.insert(k.clone(), Some((v, w.revision)));
                (k, w)
            }
            5 if i > 10 => {
                let k = key(i - 4);
                let w = engine.delete(&k, Precondition::None).wait().unwrap();
                state.insert(k.clone(), None);
                (k, w)
            }
            _ => {
                let (k, v) = (key(i), value(i, i));
                let w = engine.create(&k, &v).wait().unwrap();
                state.insert(k.clone(), Some((v, w.revision)));
                (k, w)
            }
        };
        let _ = k;
        assert!(w.revision > top);
        top = w.revision;
        if i == 6 {
            engine.compact(Revision(3)).unwrap();
        }
        let n = segment_files(dir).len();
        match tail {
            None if n >= segments && i >= 12 => tail = Some(8),
            Some(0) => break,
            Some(t) => tail = Some(t - 1),
            None => assert!(i < 5000, "no rollover"),
        }
    }
    engine.close().unwrap();
    let f = Fixture {
        dir: dir.to_path_buf(),
        state,
        top,
    };
    assert_eq!(segment_files(dir).len(), segments, "fixture segments");
    f
}

/// Every file under `dir` with its bytes, to show a refused open changed nothing.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            m.extend(snapshot(&e.path()));
        } else if e.file_name() != "LOCK" {
            m.insert(e.path(), std::fs::read(e.path()).unwrap());
        }
    }
    m
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Where {
    Newest,
    Older,
    Only,
}

/// Every acknowledged write is there, at its revision, with its value; deleted keys stay
/// deleted.
fn check_all_present(engine: &Engine, f: &Fixture, cell: &str) {
    for (k, want) in &f.state {
        let got = engine.get(k, ReadAt::Latest).unwrap();
        let got = got.map(|kv| (kv.value().to_vec(), kv.mod_revision));
        assert_eq!(&got, want, "{cell}: {}", String::from_utf8_lossy(k));
    }
    let live = f.state.values().filter(|v| v.is_some()).count();
    let listed = engine.list(&ListRequest::prefix(b"/damage/")).unwrap();
    assert_eq!(listed.items.len(), live, "{cell}: keys listed");
    assert!(
        engine.current_revision() >= f.top,
        "{cell}: current revision"
    );
}

/// A write after the damage gets a revision above every one handed out before it.
fn check_new_write(engine: &Engine, f: &Fixture, cell: &str) {
    let w = engine
        .create(format!("/after/{cell}").as_bytes(), b"after")
        .wait()
        .unwrap_or_else(|e| panic!("{cell}: write after reopen: {e}"));
    assert!(
        w.revision > f.top,
        "{cell}: a write after the damage got revision {}, but {} was handed out before",
        w.revision,
        f.top
    );
}

#[derive(Default, Debug)]
struct Tally {
    refused: usize,
    opened_whole: usize,
    repaired_with_loss: usize,
}

fn run_cell(fixture: &Fixture, d: Damage, w: Where, seed: u64, tally: &mut Tally) {
    let cell = format!("{d:?} in the {w:?} segment");
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    copy_dir(&fixture.dir, &store);
    let f = Fixture {
        dir: store.clone(),
        state: fixture.state.clone(),
        top: fixture.top,
    };
    let segs = segment_files(&store);
    let seg = match w {
        Where::Newest | Where::Only => segs.last().unwrap().clone(),
        Where::Older => segs[segs.len() / 2 - 1].clone(),
    };
    let mut rng = Rng(seed | 1);
    let named = apply(d, &store, &seg, &mut rng);
    let before = snapshot(&store);

    match Engine::open(options(&store)) {
        Ok(engine) => {
            // Opening is allowed only with nothing acknowledged missing.
            check_all_present(&engine, &f, &cell);
            check_new_write(&engine, &f, &cell);
            engine.close().unwrap();
            tally.opened_whole += 1;
            eprintln!("{cell}: opened with every acknowledged write");
            return;
        }
        Err(Error::Corrupt {
            file,
            offset,
            revisions,
            reason,
        }) => {
            let e = Error::Corrupt {
                file: file.clone(),
                offset,
                revisions: revisions.clone(),
                reason,
            };
            eprintln!("{cell}: refused: {e}");
            assert_eq!(file, named, "{cell}: the error names another file: {e}");
            let text = e.to_string();
            assert!(
                text.contains(&named.display().to_string()) && text.contains("offset"),
                "{cell}: {text}"
            );
            let loses_records = !matches!(
                d,
                Damage::TruncateFewBytes
                    | Damage::ExtraSegment
                    | Damage::FlipCompacted
                    | Damage::FlipShards
                    | Damage::FlipManifest
            );
            if loses_records && !(d == Damage::TruncateHalf && w != Where::Older) {
                assert!(revisions.is_some(), "{cell}: which revisions? {text}");
            }
        }
        Err(e) => panic!("{cell}: expected Error::Corrupt, got {e:?}"),
    }
    tally.refused += 1;
    assert!(
        snapshot(&store) == before,
        "{cell}: the refused open changed the store"
    );

    // A repair opens it, says what it dropped, and hands out no old revision.
    let mut o = options(&store);
    o.repair = true;
    let engine = Engine::open(o).unwrap_or_else(|e| panic!("{cell}: the repair did not open: {e}"));
    let notes = &engine.recovery_report().notes;
    let dropped: Vec<&RecoveryNote> = notes
        .iter()
        .filter(|n| matches!(n, RecoveryNote::Dropped { .. }))
        .collect();
    let rebuilt = notes
        .iter()
        .any(|n| matches!(n, RecoveryNote::Rebuilt { .. }));
    assert!(
        !dropped.is_empty() || rebuilt,
        "{cell}: the repair reports nothing: {notes:?}"
    );
    for n in &dropped {
        if let RecoveryNote::Dropped { file, kept_as, .. } = n {
            assert!(
                kept_as.as_ref().is_none_or(|k| k.exists()),
                "{cell}: {file:?} kept as {kept_as:?}, which is not there"
            );
        }
    }
    if dropped.is_empty() {
        check_all_present(&engine, &f, &format!("{cell}, repaired"));
    } else {
        tally.repaired_with_loss += 1;
    }
    check_new_write(&engine, &f, &format!("{cell}, repaired"));
    engine.close().unwrap();
    // The repaired store is whole again: it opens without a repair.
    let engine = Engine::open(options(&store))
        .unwrap_or_else(|e| panic!("{cell}: the repaired store does not open: {e}"));
    check_new_write(&engine, &f, &format!("{cell}, repaired and reopened"));
    engine.close().unwrap();
}

#[test]
fn every_damage_is_refused_or_harmless() {
    let tmp = tempfile::tempdir().unwrap();
    let multi = build(&tmp.path().join("multi"), 3);
    let single = build(&tmp.path().join("single"), 1);
    let mut tally = Tally::default();
    for (i, d) in DAMAGES.iter().enumerate() {
        for w in [Where::Newest, Where::Older, Where::Only] {
            let fx = if w == Where::Only { &single } else { &multi };
            run_cell(fx, *d, w, 0x5eed + i as u64, &mut tally);
        }
    }
    eprintln!("damage matrix: {tally:?}");
    // Every cell here damages acknowledged data or the store's own files: none may open as
    // if nothing happened, except where nothing acknowledged was touched.
    assert_eq!(tally.opened_whole, 0, "{tally:?}");
}

/// Every single-bit flip in `SHARDS`, `COMPACTED` and `MANIFEST` is refused, naming the file.
#[test]
fn every_flipped_bit_in_the_store_files_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = build(&tmp.path().join("store"), 1);
    for name in ["SHARDS", "COMPACTED", "MANIFEST"] {
        let path = fx.dir.join(name);
        let orig = std::fs::read(&path).unwrap();
        for bit in 0..orig.len() * 8 {
            let mut b = orig.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            std::fs::write(&path, &b).unwrap();
            match Engine::open(options(&fx.dir)) {
                Err(Error::Corrupt { file, .. }) => {
                    assert_eq!(file, path, "{name} bit {bit}")
                }
                Ok(e) => {
                    drop(e);
                    panic!("{name} with bit {bit} flipped opened")
                }
                Err(e) => panic!("{name} bit {bit}: {e:?}"),
            }
        }
        std::fs::write(&path, &orig).unwrap();
    }
    let engine = Engine::open(options(&fx.dir)).unwrap();
    check_all_present(&engine, &fx, "undamaged");
    engine.close().unwrap();
}
