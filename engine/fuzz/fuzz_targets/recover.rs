//! Recovery on arbitrary segment contents: the input becomes the only segment file of a
//! one-shard store and `Engine::open` runs on it. It must return `Ok` or `Err`, never panic;
//! an engine that opened must serve reads, take a write and close.
//!
//! The first input byte picks how the file is made: bit 2 set builds a valid segment from the
//! input (records cut from it, see `common::build_segment`) and damages it as the rest of the
//! input says; otherwise bit 0 set prefixes a valid segment header (shard 0, seq 1) to the raw
//! input. Bit 1 set pads the file with zeros to the configured segment size. Bit 3 set opens
//! with `Options::repair`, which must always open.
//!
//! The store's manifest lists the segment as active and empty, written by a run that did not
//! close cleanly: data after its header is what a crash may leave (verified batches, then at
//! most a torn one); anything else is refused.
#![no_main]

mod common;

use keel_engine::manifest::Manifest;
use keel_engine::{Engine, ListRequest, Options, ReadAt, Store, StoreExt, SyncMode};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const SEGMENT_BYTES: u64 = 64 * 1024;

fn options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.shards = 1;
    o.sync = SyncMode::None;
    o.maintenance_interval = None;
    o.limits.segment_bytes = SEGMENT_BYTES;
    o.limits.key_bytes_max = 1024;
    o.limits.value_bytes_max = 16 * 1024;
    o
}

/// A freshly created, closed store to copy for each input.
fn template() -> &'static Path {
    static T: OnceLock<PathBuf> = OnceLock::new();
    T.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("keel-fuzz-template")
            .tempdir()
            .unwrap()
            .keep();
        Engine::open(options(&dir))
            .expect("create template store")
            .close()
            .unwrap();
        // As a crash leaves it: not closed cleanly.
        let path = dir.join("MANIFEST");
        let mut m = Manifest::decode(&std::fs::read(&path).unwrap()).unwrap();
        m.clean = false;
        std::fs::write(&path, m.encode()).unwrap();
        dir
    })
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let tmp = tempfile::Builder::new()
        .prefix("keel-fuzz-recover")
        .tempdir()
        .unwrap();
    let dir = tmp.path().join("store");
    copy_tree(template(), &dir);
    let shard = dir.join("shard-000");
    for e in std::fs::read_dir(&shard).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let mut file = Vec::new();
    if mode & 4 != 0 {
        let (seg, used) = common::build_segment(rest);
        file = seg;
        common::damage(&mut file, &rest[used..]);
    } else {
        if mode & 1 != 0 {
            file.extend_from_slice(&common::header());
        }
        file.extend_from_slice(rest);
    }
    if mode & 2 != 0 && (file.len() as u64) < SEGMENT_BYTES {
        file.resize(SEGMENT_BYTES as usize, 0);
    }
    std::fs::write(shard.join(format!("{:016x}.seg", 1)), &file).unwrap();

    let mut o = options(&dir);
    o.repair = mode & 8 != 0;
    let engine = match Engine::open(o) {
        Ok(e) => e,
        Err(e) if mode & 8 != 0 => panic!("a repair did not open: {e}"),
        Err(_) => return,
    };
    let all = engine
        .list(&ListRequest::prefix(b""))
        .expect("list after a successful open");
    for kv in &all.items {
        assert!(kv.mod_revision <= engine.current_revision());
        let got = engine
            .get(kv.key(), ReadAt::Latest)
            .expect("get after a successful open");
        assert_eq!(got.as_ref().map(|g| g.value()), Some(kv.value()));
    }
    let before = engine.current_revision();
    let w = engine
        .write(
            b"/fuzz/after-recovery",
            keel_engine::WriteOp::Update(keel_engine::Precondition::None),
            |_, out| {
                out.extend_from_slice(b"v");
                Ok(())
            },
        )
        .wait();
    if let Ok(w) = w {
        assert!(
            w.revision > before,
            "write after recovery got {} <= {before}",
            w.revision
        );
    }
    let c = engine.create(b"/fuzz/new-key-\x01", b"x").wait();
    if let Ok(w) = c {
        assert!(w.revision > before);
    }
    engine.close().expect("close after a successful open");
});
