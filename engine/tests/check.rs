//! The offline check (`check.rs`) over the damaged-disk matrix of `tests/damage.rs`: in every
//! cell it names what `Engine::open` names (same file, same offset) when the open refuses,
//! and finds no damage when the open accepts; it reports several damaged places at once; a
//! clean store checks clean; and it never changes a byte, a name or a mode of what it checks.

use keel_engine::check::{check, Severity};
mod disk;

use disk::{apply, batches, copy_dir, edit, segment_files, Rng, DAMAGES};
use keel_engine::format::{BATCH_OFF_LEN, REC_OFF_REV};
use keel_engine::{Engine, Error, Options, Precondition, Revision, Store, StoreExt, SyncMode};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.shards = 1;
    o.sync = SyncMode::Always;
    o.commit_linger = std::time::Duration::ZERO;
    o.maintenance_interval = None;
    o.limits.segment_bytes = 64 * 1024;
    o
}

/// A cleanly closed one-shard store of `segments` segments, each with several batches.
fn build(dir: &Path, segments: usize) {
    let engine = Engine::open(options(dir)).unwrap();
    let mut i = 0usize;
    while segment_files(dir).len() < segments || i % 10 != 9 {
        let k = format!("/check/k{i:05}");
        let mut v = format!("value {i} ").into_bytes();
        v.resize(300 + (i * 37) % 400, b'a' + (i % 26) as u8);
        engine.create(k.as_bytes(), &v).wait().unwrap();
        if i % 4 == 3 {
            let old = format!("/check/k{:05}", i - 1);
            engine
                .delete(old.as_bytes(), Precondition::None)
                .wait()
                .unwrap();
        }
        if i == 20 {
            engine.compact(Revision(5)).unwrap();
        }
        i += 1;
        assert!(i < 20_000, "no rollover");
    }
    engine.close().unwrap();
}

/// Every entry under `dir`: its bytes (files) and its mode, to show a check changed nothing.
fn image(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let mode = e.metadata().unwrap().permissions().mode();
        if e.file_type().unwrap().is_dir() {
            m.insert(e.path(), (Vec::new(), mode));
            m.extend(image(&e.path()));
        } else {
            m.insert(e.path(), (std::fs::read(e.path()).unwrap(), mode));
        }
    }
    m
}

/// What `Engine::open` says of a copy of `store`: `None` if it opens.
fn open_verdict(store: &Path) -> Option<(PathBuf, u64)> {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("store");
    copy_dir(store, &copy);
    match Engine::open(options(&copy)) {
        Ok(e) => {
            e.close().unwrap();
            None
        }
        Err(Error::Corrupt { file, offset, .. }) => {
            let rel = file.strip_prefix(&copy).unwrap().to_path_buf();
            Some((store.join(rel), offset))
        }
        Err(e) => panic!("open: {e}"),
    }
}

#[test]
fn every_damage_is_named_as_the_open_names_it_and_nothing_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = tmp.path().join("fixture");
    build(&fixture, 4);
    let clean = check(&fixture).unwrap();
    assert!(clean.is_clean(), "{:?}", clean.findings);
    assert_eq!(clean.segments, 4);
    let mut refused = 0;
    for (n, d) in DAMAGES.into_iter().enumerate() {
        for (w, pick) in [("newest", 3usize), ("older", 1)] {
            let cell = format!("{d:?} in the {w} segment");
            let store = tmp.path().join(format!("cell-{n}-{w}"));
            copy_dir(&fixture, &store);
            let seg = segment_files(&store)[pick].clone();
            apply(d, &store, &seg, &mut Rng((7 + n as u64) | 1));
            let before = image(&store);
            let report = check(&store).unwrap_or_else(|e| panic!("{cell}: {e}"));
            assert!(
                image(&store) == before,
                "{cell}: the check changed the store"
            );
            for f in &report.findings {
                eprintln!("{cell}: {f}");
            }
            match open_verdict(&store) {
                None => assert!(
                    report.is_clean(),
                    "{cell}: the open accepts it, the check says {:?}",
                    report.findings
                ),
                Some((file, offset)) => {
                    refused += 1;
                    assert!(
                        report
                            .damage()
                            .any(|f| f.file == file && f.offset == offset),
                        "{cell}: the open names {} at {offset}; the check found {:?}",
                        file.display(),
                        report.findings
                    );
                    let text = report.damage().next().unwrap().to_string();
                    assert!(text.contains("offset"), "{cell}: {text}");
                }
            }
            std::fs::remove_dir_all(&store).unwrap();
        }
    }
    assert!(refused >= 20, "only {refused} cells were damage");
}

/// Three damaged places (a metadata file and two segments of one shard's log): all three
/// are reported, each with its own file and offset, where an open stops at the first.
#[test]
fn reports_every_damaged_place_not_just_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    build(&store, 4);
    let segs = segment_files(&store);
    // A record's revision in segment 1 (named at the record), the last batch's header in segment 3, and COMPACTED.
    let b1 = batches(&segs[1]);
    let rec = b1[1].2[0];
    edit(&segs[1], |b| b[rec + REC_OFF_REV] ^= 0x01);
    let b3 = batches(&segs[3]);
    let last3 = b3.last().unwrap().0;
    edit(&segs[3], |b| b[last3 + BATCH_OFF_LEN] ^= 0x08);
    edit(&store.join("COMPACTED"), |b| b[2] ^= 0x04);
    let before = image(&store);
    let report = check(&store).unwrap();
    assert!(image(&store) == before);
    let damage: Vec<_> = report.damage().collect();
    for f in &damage {
        eprintln!("{f}");
    }
    assert!(
        damage.iter().any(|f| f.file == store.join("COMPACTED")),
        "{damage:?}"
    );
    assert!(
        damage
            .iter()
            .any(|f| f.file == segs[1] && f.offset == rec as u64),
        "segment 1's damaged record at {rec}: {damage:?}"
    );
    assert!(
        damage
            .iter()
            .any(|f| f.file == segs[3] && f.offset == last3 as u64),
        "segment 3's damaged batch at {last3}: {damage:?}"
    );
    assert!(
        !damage.iter().any(|f| f.file == segs[2]),
        "segment 2 is whole: {damage:?}"
    );
}

#[test]
fn refuses_to_check_a_store_an_engine_has_open() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let engine = Engine::open(options(&store)).unwrap();
    engine.create(b"/a", b"b").wait().unwrap();
    let e = check(&store).unwrap_err();
    assert!(e.to_string().contains("running engine"), "{e}");
    engine.close().unwrap();
    assert!(check(&store).unwrap().is_clean());
}

/// Looser modes and a leftover are notes (the next open handles them), not damage.
#[test]
fn notes_are_not_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    build(&store, 2);
    let seg = segment_files(&store)[0].clone();
    std::fs::set_permissions(&seg, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(
        store.join("shard-000").join("0000000000000001.seg.tmp"),
        b"x",
    )
    .unwrap();
    let report = check(&store).unwrap();
    assert!(report.is_clean(), "{:?}", report.findings);
    let notes: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Note)
        .collect();
    assert!(
        notes
            .iter()
            .any(|f| f.file == seg && f.reason.contains("0644")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|f| f.file.to_string_lossy().ends_with(".tmp")),
        "{notes:?}"
    );
    assert_eq!(
        std::fs::metadata(&seg).unwrap().permissions().mode() & 0o777,
        0o644,
        "the check changed a mode"
    );
}
