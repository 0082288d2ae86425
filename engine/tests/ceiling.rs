//! The revision ceiling (`keeper.rs`): no revision is ever handed out twice, whatever is lost.
//!
//! - Every revision handed out is at or below the ceiling in the `MANIFEST` on disk at that
//!   moment (the manifest is written before the revision is admitted).
//! - After a power cut, the next revision is above every revision handed out before it: in an
//!   acknowledgement or to a value builder.
//! - A failed manifest write stops the engine: no revision above the durable ceiling is handed
//!   out.
//! - A clean close records the last revision handed out: a clean restart skips none.

mod common;

use common::*;
use keel_engine::io::fault::{CutMode, Fault, FaultIo, FaultRule, IoOp};
use keel_engine::manifest::Manifest;
use keel_engine::{
    Engine, Error, Options, Precondition, RecoveryNote, Revision, Store, StoreExt, SyncMode,
    WriteContext, WriteOp,
};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn options(dir: &Path, reserve: u64) -> Options {
    let mut o = Options::new(dir);
    o.shards = 2;
    o.sync = SyncMode::Always;
    o.commit_linger = std::time::Duration::ZERO;
    o.maintenance_interval = None;
    o.limits.segment_bytes = 64 * 1024;
    o.limits.revision_reserve = reserve;
    o
}

fn ceiling_on_disk(dir: &Path) -> Revision {
    Manifest::decode(&std::fs::read(dir.join("MANIFEST")).unwrap())
        .unwrap()
        .ceiling
}

/// A value builder that records the revision it was told.
fn telling<'a>(
    told: &'a AtomicU64,
    v: &'a [u8],
) -> impl FnOnce(&WriteContext<'_>, &mut Vec<u8>) -> Result<(), keel_engine::BoxError> + 'a {
    move |ctx, out| {
        told.fetch_max(ctx.revision.unwrap().0, Ordering::Relaxed);
        out.extend_from_slice(v);
        Ok(())
    }
}

#[test]
fn every_revision_is_below_the_ceiling_on_disk_when_handed_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // A tiny reserve: the ceiling is raised every two revisions, often while writers wait.
    let engine = Engine::open(options(dir, 4)).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let engine = &engine;
            s.spawn(move || {
                let told = AtomicU64::new(0);
                for i in 0..60 {
                    let k = format!("/c/{t}/{i}");
                    let w = ack(engine.write(k.as_bytes(), WriteOp::Create, telling(&told, b"v")))
                        .unwrap();
                    let on_disk = ceiling_on_disk(dir);
                    assert!(
                        w.revision <= on_disk && told.load(Ordering::Relaxed) <= on_disk.0,
                        "revision {} handed out above the ceiling {on_disk} on disk",
                        w.revision
                    );
                }
            });
        }
    });
    let last = engine.current_revision();
    assert_eq!(last, Revision(240));
    engine.close().unwrap();
    // A clean close records the last revision: the restart skips none.
    assert_eq!(ceiling_on_disk(dir), last);
    let engine = Engine::open(options(dir, 4)).unwrap();
    assert_eq!(engine.next_revision(), last.next());
    let w = engine.create(b"/c/after", b"v").wait().unwrap();
    assert_eq!(w.revision, last.next());
    engine.close().unwrap();
}

/// The reviewer's finding: the last acknowledged batch damaged after a crash, dropped, and its
/// revisions handed out again to new writes. Power cuts at every point of a run of writes:
/// whatever the disk kept, the next revision is above every one handed out before the cut.
#[test]
fn after_a_power_cut_no_revision_is_handed_out_again() {
    let mut rng = Rng::new(0xce11);
    let mut skipped = 0;
    for round in 0..40 {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a");
        let io = FaultIo::new(&dir).unwrap();
        let mut o = options(&dir, 1 + rng.below(64));
        o.io = io.clone();
        let engine = Engine::open(o).unwrap();
        let told = AtomicU64::new(0);
        let acked = AtomicU64::new(0);
        let mode = if rng.chance(1, 2) {
            CutMode::SyncedOnly
        } else {
            CutMode::Torn {
                seed: rng.next_u64(),
            }
        };
        io.cut_after(rng.range(1, 400), mode);
        std::thread::scope(|s| {
            for t in 0..3 {
                let (engine, told, acked) = (&engine, &told, &acked);
                s.spawn(move || {
                    for i in 0..200 {
                        let k = format!("/p/{t}/{}", i % 7);
                        let r = ack(engine.write(
                            k.as_bytes(),
                            WriteOp::Update(Precondition::None),
                            telling(told, &[b'x'; 300]),
                        ))
                        .or_else(|e| match e {
                            Error::NotFound => ack(engine.write(
                                k.as_bytes(),
                                WriteOp::Create,
                                telling(told, b"v"),
                            )),
                            e => Err(e),
                        });
                        match r {
                            Ok(w) => {
                                acked.fetch_max(w.revision.0, Ordering::Relaxed);
                            }
                            Err(Error::Failed(_) | Error::Closed) => return,
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                });
            }
        });
        let image = io.cut(mode);
        drop(engine);
        let handed_out = told
            .load(Ordering::Relaxed)
            .max(acked.load(Ordering::Relaxed));
        let next_dir = tmp.path().join("b");
        image.write_to(&next_dir).unwrap();
        let engine = Engine::open(options(&next_dir, 8)).unwrap();
        let next = engine.next_revision();
        assert!(
            next.0 > handed_out,
            "round {round} ({mode:?}): next revision {next} but {handed_out} was handed out"
        );
        assert!(engine.current_revision().0 >= acked.load(Ordering::Relaxed));
        if next > engine.current_revision().next() {
            skipped += 1;
            assert!(engine
                .recovery_report()
                .notes
                .iter()
                .any(|n| matches!(n, RecoveryNote::RevisionsSkipped { .. })));
        }
        let w = engine.create(b"/p/after", b"v").wait().unwrap();
        assert_eq!(w.revision, next);
        engine.close().unwrap();
    }
    assert!(skipped > 0, "no cut left revisions to skip");
}

/// Raising the ceiling fails (the manifest cannot be written): the engine stops, and no
/// revision above the durable ceiling was handed out.
#[test]
fn a_failed_raise_stops_the_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let io = FaultIo::new(dir).unwrap();
    let mut o = options(dir, 8);
    o.io = io.clone();
    let engine = Engine::open(o).unwrap();
    let start_ceiling = ceiling_on_disk(dir);
    io.inject(FaultRule::new(IoOp::Rename, 1, Fault::Errno(libc::ENOSPC)).sticky());
    let told = Arc::new(AtomicU64::new(0));
    let mut failed = None;
    for i in 0..100 {
        match ack(engine.write(
            format!("/f/{i}").as_bytes(),
            WriteOp::Create,
            telling(&told, b"v"),
        )) {
            Ok(w) => assert!(w.revision <= start_ceiling),
            Err(Error::Failed(why)) => {
                failed = Some(why);
                break;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    let why = failed.expect("the engine stopped");
    assert!(why.contains("MANIFEST"), "{why}");
    let f = engine.health().unwrap_err();
    assert_eq!((f.shard, f.operation), (None, "writing MANIFEST"));
    assert!(told.load(Ordering::Relaxed) <= start_ceiling.0);
    drop(engine);
    io.clear_faults();
    // Restarted, it hands out revisions above the ceiling it had.
    let engine = Engine::open(options(dir, 8)).unwrap();
    assert!(engine.next_revision() > start_ceiling);
    engine.close().unwrap();
}
