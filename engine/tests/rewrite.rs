//! Space reclamation: compaction followed by segment rewrites must free disk space and keep
//! every live version, every tombstone that still hides an older version, and the history
//! above the compacted revision — across reopen too.

use keel_engine::*;
use std::collections::BTreeMap;
use std::time::Duration;

fn opts(dir: &std::path::Path) -> Options {
    let mut o = Options::new(dir);
    o.shards = 2;
    o.sync = SyncMode::None;
    o.maintenance_interval = None;
    o.limits.segment_bytes = 64 * 1024;
    o
}

fn value(key: usize, gen: usize) -> Vec<u8> {
    format!("k{key}-g{gen}-").repeat(40).into_bytes()
}

fn key(i: usize) -> Vec<u8> {
    format!("/r/{i:05}").into_bytes()
}

/// Writes 400 keys, overwrites each many times and deletes a quarter; returns the expected
/// final state.
fn churn(e: &Engine) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut want = BTreeMap::new();
    for i in 0..400 {
        e.create(&key(i), &value(i, 0)).wait().unwrap();
        want.insert(key(i), value(i, 0));
    }
    for gen in 1..8 {
        for i in 0..400 {
            e.update(&key(i), Precondition::None, &value(i, gen))
                .wait()
                .unwrap();
            want.insert(key(i), value(i, gen));
        }
    }
    for i in (0..400).step_by(4) {
        e.delete(&key(i), Precondition::None).wait().unwrap();
        want.remove(&key(i));
    }
    want
}

fn assert_state(e: &Engine, want: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let got = e.list(&ListRequest::prefix(b"/r/")).unwrap();
    let got: BTreeMap<Vec<u8>, Vec<u8>> = got
        .items
        .iter()
        .map(|kv| (kv.key().to_vec(), kv.value().to_vec()))
        .collect();
    assert_eq!(got.len(), want.len());
    assert!(got == *want, "store content differs from what was written");
    for i in (0..400).step_by(4) {
        assert!(
            e.get(&key(i), ReadAt::Latest).unwrap().is_none(),
            "deleted key {i} came back"
        );
    }
}

#[test]
fn compaction_and_rewrite_reclaim_space_and_keep_data() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(opts(dir.path())).unwrap();
    let want = churn(&e);
    let before = e.stats();
    assert!(
        before.segments > 8,
        "expected many segments, got {}",
        before.segments
    );
    let rev = e.current_revision();
    e.compact(rev).unwrap();
    assert_eq!(
        e.stats().versions,
        want.len() as u64,
        "one version per live key after compaction"
    );
    let rewritten = e.rewrite_segments().unwrap();
    let after = e.stats();
    assert!(rewritten > 0, "nothing rewritten");
    assert!(
        after.segment_bytes * 2 < before.segment_bytes,
        "space not reclaimed: {} -> {} bytes",
        before.segment_bytes,
        after.segment_bytes
    );
    assert_state(&e, &want);
    // Writes continue after the rewrite, and the new data is not confused with moved records.
    e.update(&key(1), Precondition::None, b"after")
        .wait()
        .unwrap();
    let mut want = want;
    want.insert(key(1), b"after".to_vec());
    assert_state(&e, &want);
    e.close().unwrap();

    let e = Engine::open(opts(dir.path())).unwrap();
    assert_state(&e, &want);
    assert!(e.current_revision() > rev);
    // A second pass finds nothing more to do.
    e.compact(e.current_revision()).unwrap();
    e.rewrite_segments().unwrap();
    assert_state(&e, &want);
    e.close().unwrap();
}

#[test]
fn history_above_the_compacted_revision_survives_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(opts(dir.path())).unwrap();
    let mut want = churn(&e);
    let mid = e.current_revision();
    // More history after `mid`, then compact at `mid` only.
    for i in (1..50).filter(|i| i % 4 != 0) {
        e.update(&key(i), Precondition::None, &value(i, 99))
            .wait()
            .unwrap();
    }
    let before_watch: Vec<_> = {
        let mut w = e.watch(b"/r/", mid).unwrap();
        let mut out = Vec::new();
        while w
            .next_batch_timeout(&mut out, Duration::from_millis(200))
            .unwrap()
        {}
        out
    };
    assert!(
        before_watch.len() >= 36,
        "only {} events",
        before_watch.len()
    );
    e.compact(mid).unwrap();
    e.rewrite_segments().unwrap();
    // Reads at the compacted revision still see the state as of then.
    let at_mid = e
        .list(&ListRequest {
            at: ReadAt::Exact(mid),
            ..ListRequest::prefix(b"/r/")
        })
        .unwrap();
    assert_eq!(at_mid.items.len(), want.len());
    // Watching from the compacted revision replays the same events, prev values included.
    let mut w = e.watch(b"/r/", mid).unwrap();
    let mut out = Vec::new();
    while w
        .next_batch_timeout(&mut out, Duration::from_millis(200))
        .unwrap()
    {}
    assert_eq!(out.len(), before_watch.len());
    for (a, b) in out.iter().zip(&before_watch) {
        assert_eq!(**a, **b);
    }
    for i in 1..50 {
        if i % 4 != 0 {
            want.insert(key(i), value(i, 99));
        }
    }
    assert!(matches!(
        e.get(b"/r/00001", ReadAt::Exact(Revision(mid.0 - 1))),
        Err(Error::Compacted { .. })
    ));
    e.close().unwrap();
    let e = Engine::open(opts(dir.path())).unwrap();
    assert_eq!(e.compacted_revision(), mid);
    assert!(matches!(
        e.watch(b"/r/", Revision(mid.0 - 1)),
        Err(Error::Compacted { .. })
    ));
    e.close().unwrap();
}

#[test]
fn background_maintenance_compacts_history_older_than_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.history = Duration::from_millis(50);
    o.maintenance_interval = Some(Duration::from_millis(20));
    let e = Engine::open(o).unwrap();
    e.create(b"/r/a", b"1").wait().unwrap();
    let first = e
        .update(b"/r/a", Precondition::None, b"2")
        .wait()
        .unwrap()
        .revision;
    e.update(b"/r/a", Precondition::None, b"3").wait().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while e.compacted_revision() < first {
        assert!(
            std::time::Instant::now() < deadline,
            "history was never compacted"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(matches!(
        e.get(b"/r/a", ReadAt::Exact(Revision(1))),
        Err(Error::Compacted { .. })
    ));
    assert_eq!(
        e.get(b"/r/a", ReadAt::Latest).unwrap().unwrap().value(),
        b"3"
    );
    e.close().unwrap();
}

/// Tombstones are dropped only from a shard's first segment; elsewhere they must stay, or the
/// older version they hide (in an earlier segment) would come back on reopen.
#[test]
fn deleted_keys_stay_deleted_after_rewrites_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(opts(dir.path())).unwrap();
    let mut want = BTreeMap::new();
    // Generation 0 of every key, then each key deleted in a later segment, then filler that
    // pushes everything into sealed segments.
    for i in 0..300 {
        e.create(&key(i), &value(i, 0)).wait().unwrap();
        if i % 3 != 0 {
            want.insert(key(i), value(i, 0));
        }
    }
    // Filler, with the deletes mixed in: these segments die when the filler is overwritten
    // and get rewritten, while the segments holding the deleted keys' puts stay mostly live.
    for i in 1000..1300 {
        e.create(&key(i), &value(i, 0)).wait().unwrap();
        if (i - 1000) % 3 == 0 {
            e.delete(&key(i - 1000), Precondition::None).wait().unwrap();
        }
    }
    for round in 1..4 {
        for i in 1000..1300 {
            e.update(&key(i), Precondition::None, &value(i, round))
                .wait()
                .unwrap();
            want.insert(key(i), value(i, round));
        }
        e.compact(e.current_revision()).unwrap();
        e.rewrite_segments().unwrap();
    }
    let check = |e: &Engine| {
        let got = e.list(&ListRequest::prefix(b"/r/")).unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> = got
            .items
            .iter()
            .map(|kv| (kv.key().to_vec(), kv.value().to_vec()))
            .collect();
        assert!(
            got == want,
            "content differs: {} keys vs {} expected",
            got.len(),
            want.len()
        );
    };
    check(&e);
    assert!(e.stats().segments_rewritten > 0);
    e.close().unwrap();
    let e = Engine::open(opts(dir.path())).unwrap();
    check(&e);
    e.close().unwrap();
}
