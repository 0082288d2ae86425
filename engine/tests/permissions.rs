//! The store is private whatever the umask: the directories the engine creates are 0700 and
//! its files 0600, and looser modes found on open are reduced (and noted).
//!
//! The umask is process-wide, so this file holds a single test: its binary runs nothing else
//! that could create files meanwhile.

use keel_engine::{
    Engine, Options, Precondition, RecoveryNote, Revision, Store, StoreExt, SyncMode,
};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.shards = 2;
    o.sync = SyncMode::Always;
    o.maintenance_interval = None;
    o.limits.segment_bytes = 64 * 1024;
    o
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn set_mode(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

/// Every directory and file under `dir` (itself included).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Opens a store, writes enough to roll segments over, compacts, rewrites, closes.
fn fill(dir: &Path, round: usize) {
    let e = Engine::open(options(dir)).unwrap();
    for i in 0..300 {
        let k = format!("/perm/{round}/{i}");
        e.create(k.as_bytes(), &[b'x'; 600]).wait().unwrap();
        if i % 3 == 0 {
            e.delete(k.as_bytes(), Precondition::None).wait().unwrap();
        }
    }
    e.compact(Revision(e.current_revision().0 - 100)).unwrap();
    e.rewrite_segments().unwrap();
    e.close().unwrap();
}

fn assert_private(store: &Path, umask: u32) {
    let paths = walk(store);
    assert!(paths.iter().any(|p| p.ends_with("MANIFEST")));
    assert!(paths.iter().any(|p| p.ends_with("COMPACTED")));
    assert!(
        paths
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "seg"))
            .count()
            > 2
    );
    for p in paths {
        let want = if p.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(
            mode(&p),
            want,
            "{} with umask {umask:03o}: mode {:04o}",
            p.display(),
            mode(&p)
        );
    }
}

#[test]
fn files_are_0600_and_directories_0700_whatever_the_umask() {
    let tmp = tempfile::tempdir().unwrap();
    // A permissive umask, then one that would leave the owner without write access.
    for umask in [0o000, 0o277] {
        // SAFETY: umask only changes this process's file creation mask; this binary runs
        // this one test.
        unsafe { libc::umask(umask as libc::mode_t) };
        let store = tmp.path().join(format!("store-{umask:03o}"));
        fill(&store, 0);
        assert_private(&store, umask);
        // Reopening and writing again keeps it so.
        fill(&store, 1);
        assert_private(&store, umask);
    }
    unsafe { libc::umask(0o022) };

    // Looser modes left by an older version (or an operator) are reduced on open, and noted.
    let store = tmp.path().join("store-000");
    set_mode(&store, 0o755);
    set_mode(&store.join("shard-001"), 0o777);
    set_mode(&store.join("SHARDS"), 0o644);
    let seg = walk(&store.join("shard-000"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    set_mode(&seg, 0o664);
    let e = Engine::open(options(&store)).unwrap();
    let tightened: Vec<(PathBuf, u32, u32)> = e
        .recovery_report()
        .notes
        .iter()
        .filter_map(|n| match n {
            RecoveryNote::Tightened { path, was, now } => Some((path.clone(), *was, *now)),
            _ => None,
        })
        .collect();
    e.close().unwrap();
    let want = [
        (store.clone(), 0o755, 0o700),
        (store.join("SHARDS"), 0o644, 0o600),
        (store.join("shard-001"), 0o777, 0o700),
        (seg.clone(), 0o664, 0o600),
    ];
    for w in &want {
        assert!(tightened.contains(w), "{w:?} not in {tightened:?}");
    }
    assert_eq!(tightened.len(), want.len(), "{tightened:?}");
    assert_private(&store, 0o022);
}
