//! The storage contract, written once as generic functions over `Store` and run against the
//! in-memory model (`MemStore`) and the engine (1 and 4 shards, `SyncMode::None`, and 4 shards
//! with `SyncMode::Always`). Engine-only behaviour (close + reopen, maintenance, stats) is at
//! the end.
//!
//! Run one backend: `cargo test -p keel-engine --test contract memstore::` (or `engine_1shard::`,
//! `engine_4shards::`, `engine_4shards_sync::`, `engine_only::`).

mod common;

use common::*;
use keel_engine::ReadAt::{Exact, Latest, NotOlderThan};
use keel_engine::{
    Error, Limits, ListRequest, MemStore, Precondition, ReadAt, Revision, Store, StoreExt,
    SyncMode, WatchError, WriteOp,
};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const NONE: Precondition = Precondition::None;

fn at(r: Revision) -> Precondition {
    Precondition::ModRevision(r)
}

fn rev(n: u64) -> Revision {
    Revision(n)
}

fn page<S: Store + ?Sized>(
    s: &S,
    prefix: &[u8],
    start_after: Option<&[u8]>,
    limit: usize,
    at: ReadAt,
) -> keel_engine::ListResult {
    s.list(&ListRequest {
        prefix,
        start_after,
        limit,
        at,
    })
    .unwrap_or_else(|e| {
        panic!(
            "list {} after {start_after:?} at {at:?}: {e:?}",
            show(prefix)
        )
    })
}

#[track_caller]
fn assert_future<T: std::fmt::Debug>(r: Result<T, Error>, requested: Revision, current: Revision) {
    match r {
        Err(Error::FutureRevision {
            requested: q,
            current: c,
        }) => {
            assert_eq!((q, c), (requested, current), "FutureRevision fields")
        }
        other => panic!("expected FutureRevision({requested}, current {current}), got {other:?}"),
    }
}

#[track_caller]
fn assert_compacted<T: std::fmt::Debug>(
    r: Result<T, Error>,
    requested: Revision,
    compacted: Revision,
) {
    match r {
        Err(Error::Compacted {
            requested: q,
            compacted: c,
        }) => {
            assert_eq!((q, c), (requested, compacted), "Compacted fields")
        }
        other => panic!("expected Compacted({requested}, compacted {compacted}), got {other:?}"),
    }
}

#[track_caller]
fn assert_not_found<T: std::fmt::Debug>(r: Result<T, Error>) {
    assert!(
        matches!(r, Err(Error::NotFound)),
        "expected NotFound, got {r:?}"
    );
}

#[track_caller]
fn assert_conflict<T: std::fmt::Debug>(r: Result<T, Error>, expected: Revision, actual: Revision) {
    match r {
        Err(Error::Conflict {
            expected: e,
            actual: a,
        }) => {
            assert_eq!((e, a), (expected, actual), "Conflict fields")
        }
        other => panic!("expected Conflict(expected {expected}, actual {actual}), got {other:?}"),
    }
}

/// The state at `snapshot` rebuilt from a complete, revision-ordered event sequence.
fn state_at(events: &[Ev], snapshot: u64) -> Vec<Kv> {
    let mut m = BTreeMap::new();
    for e in events.iter().take_while(|e| e.kv.rev <= snapshot) {
        if e.put {
            m.insert(e.kv.key.clone(), e.kv.clone());
        } else {
            m.remove(&e.kv.key);
        }
    }
    m.into_values().collect()
}

// =============================================================================================
// The contract

fn starts_empty<S: Store + ?Sized>(s: &S) {
    assert_eq!(s.current_revision(), Revision::ZERO);
    assert_eq!(s.compacted_revision(), Revision::ZERO);
    assert_eq!(get_kv(s, b"a", Latest), None);
    assert_eq!(get_kv(s, b"a", Exact(Revision::ZERO)), None);
    assert_future(s.get(b"a", Exact(rev(1))), rev(1), Revision::ZERO);
    assert_future(s.get(b"a", NotOlderThan(rev(1))), rev(1), Revision::ZERO);
    let (items, r) = list_all(s, b"", Latest);
    assert!(items.is_empty());
    assert_eq!(r, Revision::ZERO);
    assert_future(
        s.list(&ListRequest {
            at: Exact(rev(1)),
            ..ListRequest::prefix(b"")
        }),
        rev(1),
        Revision::ZERO,
    );
}

fn create_and_already_exists<S: Store + ?Sized>(s: &S) {
    let k: &[u8] = b"/registry/pods/default/a";
    let w1 = ok(s.create(k, b"v1"));
    assert!(w1.revision > Revision::ZERO);
    assert_eq!(w1.prev_revision, None, "a create replaces nothing");
    assert_eq!(s.current_revision(), w1.revision);
    assert_eq!(get_kv(s, k, Latest), Some(Kv::new(k, b"v1", w1.revision.0)));

    match ack(s.create(k, b"v2")) {
        Err(Error::AlreadyExists { revision }) => assert_eq!(revision, w1.revision),
        other => panic!("create of an existing key: expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(
        get_kv(s, k, Latest),
        Some(Kv::new(k, b"v1", w1.revision.0)),
        "failed create wrote"
    );

    let w2 = ok(s.update(k, NONE, b"v2"));
    assert!(w2.revision > w1.revision);
    match ack(s.create(k, b"v3")) {
        Err(Error::AlreadyExists { revision }) => assert_eq!(revision, w2.revision),
        other => panic!("expected AlreadyExists at the latest revision, got {other:?}"),
    }

    // Deleted keys can be created again; the create replaces nothing.
    let w3 = ok(s.delete(k, NONE));
    assert!(w3.revision > w2.revision);
    assert_eq!(w3.prev_revision, Some(w2.revision));
    let w4 = ok(s.create(k, b"v3"));
    assert!(w4.revision > w3.revision);
    assert_eq!(w4.prev_revision, None);
    assert_eq!(get_kv(s, k, Latest), Some(Kv::new(k, b"v3", w4.revision.0)));

    // Empty values and binary keys/values are fine.
    let bin: &[u8] = b"\x00\xff\x01/key";
    let w5 = ok(s.create(bin, b""));
    assert_eq!(
        get_kv(s, bin, Latest),
        Some(Kv::new(bin, b"", w5.revision.0))
    );
    let w6 = ok(s.update(bin, at(w5.revision), b"\x00\x00\xfe"));
    assert_eq!(
        get_kv(s, bin, Latest),
        Some(Kv::new(bin, b"\x00\x00\xfe", w6.revision.0))
    );
    assert_eq!(s.current_revision(), w6.revision);
}

fn update_preconditions<S: Store + ?Sized>(s: &S) {
    let k: &[u8] = b"u/k";
    assert_not_found(ack(s.update(k, NONE, b"x")));
    assert_not_found(ack(s.update(k, at(rev(1)), b"x")));
    assert_eq!(get_kv(s, k, Latest), None, "failed update created the key");

    let c = ok(s.create(k, b"v1"));
    let u1 = ok(s.update(k, NONE, b"v2"));
    assert!(u1.revision > c.revision);
    assert_eq!(u1.prev_revision, Some(c.revision));
    assert_eq!(get_kv(s, k, Latest), Some(Kv::new(k, b"v2", u1.revision.0)));

    let u2 = ok(s.update(k, at(u1.revision), b"v3"));
    assert!(u2.revision > u1.revision);
    assert_eq!(u2.prev_revision, Some(u1.revision));

    // A stale precondition conflicts and writes nothing.
    assert_conflict(
        ack(s.update(k, at(c.revision), b"v4")),
        c.revision,
        u2.revision,
    );
    assert_conflict(
        ack(s.update(k, at(rev(u2.revision.0 + 100)), b"v4")),
        rev(u2.revision.0 + 100),
        u2.revision,
    );
    assert_eq!(get_kv(s, k, Latest), Some(Kv::new(k, b"v3", u2.revision.0)));

    // Another key's revision is not this key's.
    let other = ok(s.create(b"u/other", b"o"));
    assert_conflict(
        ack(s.update(k, at(other.revision), b"v4")),
        other.revision,
        u2.revision,
    );
    let u3 = ok(s.update(k, at(u2.revision), b"v4"));
    assert!(u3.revision > other.revision);

    // Deleted: NotFound with or without a precondition.
    ok(s.delete(k, NONE));
    assert_not_found(ack(s.update(k, NONE, b"v5")));
    assert_not_found(ack(s.update(k, at(u3.revision), b"v5")));
    assert_eq!(get_kv(s, k, Latest), None);
    assert_eq!(
        get_kv(s, b"u/other", Latest),
        Some(Kv::new(b"u/other", b"o", other.revision.0))
    );
}

fn delete_preconditions<S: Store + ?Sized>(s: &S) {
    let k: &[u8] = b"d/k";
    assert_not_found(ack(s.delete(k, NONE)));
    assert_not_found(ack(s.delete(k, at(rev(1)))));

    let c = ok(s.create(k, b"v1"));
    let c2 = ok(s.create(b"d/k2", b"w"));
    let u = ok(s.update(k, NONE, b"v2"));
    assert_conflict(ack(s.delete(k, at(c.revision))), c.revision, u.revision);
    assert_eq!(
        get_kv(s, k, Latest),
        Some(Kv::new(k, b"v2", u.revision.0)),
        "conflicting delete deleted"
    );

    let d = ok(s.delete(k, at(u.revision)));
    assert!(d.revision > u.revision);
    assert_eq!(d.prev_revision, Some(u.revision));
    assert_eq!(s.current_revision(), d.revision);
    assert_eq!(get_kv(s, k, Latest), None);
    assert_eq!(
        get_kv(s, k, Exact(u.revision)),
        Some(Kv::new(k, b"v2", u.revision.0))
    );
    assert_not_found(ack(s.delete(k, NONE)));
    assert_not_found(ack(s.delete(k, at(u.revision))));

    let d2 = ok(s.delete(b"d/k2", NONE));
    assert_eq!(d2.prev_revision, Some(c2.revision));
    let (items, _) = list_all(s, b"d/", Latest);
    assert!(items.is_empty(), "deleted keys listed: {items:?}");

    // The value builder is not called for a delete.
    ok(s.create(b"d/k3", b"x"));
    let called = Cell::new(false);
    ok(s.write(b"d/k3", WriteOp::Delete(NONE), |_, _| {
        called.set(true);
        Ok(())
    }));
    assert!(!called.get(), "the value builder was called for a delete");
    assert_eq!(get_kv(s, b"d/k3", Latest), None);
}

fn value_builder_context_and_abort<S: Store + ?Sized>(s: &S) {
    let k: &[u8] = b"b/k";
    let mut seen = None;
    let w1 = ok(s.write(k, WriteOp::Create, |ctx, out| {
        seen = Some((
            ctx.revision,
            ctx.current.map(<[u8]>::to_vec),
            ctx.current_revision,
        ));
        let rv = ctx.revision.map_or(0, |r| r.0);
        out.extend_from_slice(format!("rv={rv}").as_bytes());
        Ok(())
    }));
    // A backend tells the builder its revision exactly when it says it can.
    let told = |r: Revision| s.capabilities().revision_before_seal.then_some(r);
    assert_eq!(
        seen.take(),
        Some((told(w1.revision), None, None)),
        "builder context of a create"
    );
    let v1 = match told(w1.revision) {
        Some(r) => format!("rv={r}").into_bytes(),
        None => b"rv=0".to_vec(),
    };
    assert_eq!(get_kv(s, k, Latest), Some(Kv::new(k, &v1, w1.revision.0)));

    let w2 = ok(s.write(k, WriteOp::Update(at(w1.revision)), |ctx, out| {
        seen = Some((
            ctx.revision,
            ctx.current.map(<[u8]>::to_vec),
            ctx.current_revision,
        ));
        out.extend_from_slice(ctx.current.unwrap_or_default());
        out.extend_from_slice(b"+1");
        Ok(())
    }));
    assert_eq!(
        seen.take(),
        Some((told(w2.revision), Some(v1.clone()), Some(w1.revision)))
    );
    let v2 = [&v1[..], b"+1"].concat();
    assert_eq!(get_kv(s, k, Latest), Some(Kv::new(k, &v2, w2.revision.0)));

    // Aborts: nothing is written.
    let before = s.current_revision();
    match ack(s.write(k, WriteOp::Update(NONE), |_, out| {
        out.extend_from_slice(b"partial");
        Err("refused by the builder".into())
    })) {
        Err(Error::Aborted(e)) => assert_eq!(e.to_string(), "refused by the builder"),
        other => panic!("expected Aborted, got {other:?}"),
    }
    match ack(s.write(b"b/new", WriteOp::Create, |_, _| Err("no".into()))) {
        Err(Error::Aborted(_)) => {}
        other => panic!("expected Aborted, got {other:?}"),
    }
    assert_eq!(
        get_kv(s, k, Latest),
        Some(Kv::new(k, &v2, w2.revision.0)),
        "aborted update wrote"
    );
    assert_eq!(get_kv(s, b"b/new", Latest), None, "aborted create wrote");
    let (items, _) = list_all(s, b"b/", Latest);
    assert_eq!(items, vec![Kv::new(k, &v2, w2.revision.0)]);
    assert!(s.current_revision() >= before);

    // Revisions keep increasing after aborts, and the aborted writes left no event.
    let mut w = s.watch(b"b/", before).expect("watch");
    let w3 = ok(s.update(k, at(w2.revision), b"after"));
    assert!(w3.revision > w2.revision && w3.revision > before);
    assert_eq!(
        collect(&mut w, 1),
        vec![put(
            k,
            b"after",
            w3.revision.0,
            Some(Kv::new(k, &v2, w2.revision.0))
        )]
    );
    for r in w2.revision.0..w3.revision.0 {
        assert_eq!(
            get_kv(s, k, Exact(rev(r))),
            Some(Kv::new(k, &v2, w2.revision.0)),
            "at {r}"
        );
        assert_eq!(get_kv(s, b"b/new", Exact(rev(r))), None, "at {r}");
    }
}

fn get_at_revisions<S: Store + ?Sized>(s: &S) {
    let k: &[u8] = b"g/k";
    let w1 = ok(s.create(k, b"v1"));
    let w2 = ok(s.update(k, NONE, b"v2"));
    let o = ok(s.create(b"g/other", b"o"));
    let w3 = ok(s.update(k, NONE, b"v3"));
    let d = ok(s.delete(k, NONE));

    assert_eq!(get_kv(s, k, Exact(rev(w1.revision.0 - 1))), None);
    assert_eq!(
        get_kv(s, k, Exact(w1.revision)),
        Some(Kv::new(k, b"v1", w1.revision.0))
    );
    assert_eq!(
        get_kv(s, k, Exact(w2.revision)),
        Some(Kv::new(k, b"v2", w2.revision.0))
    );
    assert_eq!(
        get_kv(s, k, Exact(o.revision)),
        Some(Kv::new(k, b"v2", w2.revision.0))
    );
    assert_eq!(
        get_kv(s, k, Exact(w3.revision)),
        Some(Kv::new(k, b"v3", w3.revision.0))
    );
    assert_eq!(get_kv(s, k, Exact(d.revision)), None);
    assert_eq!(get_kv(s, k, Latest), None);
    assert_eq!(get_kv(s, b"g/other", Exact(w2.revision)), None);
    assert_eq!(get_kv(s, b"g/never", Exact(w3.revision)), None);

    let cur = s.current_revision();
    assert_eq!(cur, d.revision);
    assert_eq!(
        get_kv(s, b"g/other", Exact(cur)),
        Some(Kv::new(b"g/other", b"o", o.revision.0))
    );
    assert_future(s.get(k, Exact(cur.next())), cur.next(), cur);
    assert_future(s.get(k, Exact(rev(cur.0 + 1000))), rev(cur.0 + 1000), cur);

    assert_eq!(
        get_kv(s, b"g/other", NotOlderThan(w1.revision)),
        Some(Kv::new(b"g/other", b"o", o.revision.0))
    );
    assert_eq!(
        get_kv(s, k, NotOlderThan(w2.revision)),
        None,
        "NotOlderThan reads the latest"
    );
    assert_eq!(
        get_kv(s, b"g/other", NotOlderThan(cur)),
        Some(Kv::new(b"g/other", b"o", o.revision.0))
    );
    assert_future(s.get(k, NotOlderThan(cur.next())), cur.next(), cur);
    let r = page(s, b"g/", None, 0, NotOlderThan(w1.revision));
    assert_eq!(
        r.revision, cur,
        "NotOlderThan lists at the current revision"
    );
    assert_eq!(kvs(&r.items), vec![Kv::new(b"g/other", b"o", o.revision.0)]);
}

fn list_prefix_in_key_order<S: Store + ?Sized>(s: &S) {
    let keys: [&[u8]; 11] = [
        b"b/1", b"a/2", b"a/10", b"a", b"a/", b"a0", b"a/1", b"\xff", b"a/1/x", b"\x00", b"A/1",
    ];
    let mut revs = BTreeMap::new();
    for k in keys {
        let w = ok(s.create(k, &[b"v:", k].concat()));
        revs.insert(k.to_vec(), w.revision.0);
    }
    let expect = |ks: &[&[u8]]| -> Vec<Kv> {
        ks.iter()
            .map(|k| Kv::new(k, &[b"v:", *k].concat(), revs[*k]))
            .collect()
    };
    let cur = s.current_revision();

    let (items, r) = list_all(s, b"a/", Latest);
    assert_eq!(r, cur);
    assert_eq!(items, expect(&[b"a/", b"a/1", b"a/1/x", b"a/10", b"a/2"]));
    let (items, _) = list_all(s, b"a", Latest);
    assert_eq!(
        items,
        expect(&[b"a", b"a/", b"a/1", b"a/1/x", b"a/10", b"a/2", b"a0"])
    );
    let (items, _) = list_all(s, b"", Latest);
    let mut sorted: Vec<&[u8]> = keys.to_vec();
    sorted.sort();
    assert_eq!(items, expect(&sorted));
    let (items, _) = list_all(s, b"\xff", Latest);
    assert_eq!(items, expect(&[b"\xff"]));
    let (items, r) = list_all(s, b"c", Latest);
    assert!(items.is_empty());
    assert_eq!(r, cur);

    // Deleted keys are absent.
    ok(s.delete(b"a/10", NONE));
    let (items, _) = list_all(s, b"a/", Latest);
    assert_eq!(items, expect(&[b"a/", b"a/1", b"a/1/x", b"a/2"]));

    // Limits: `more` and `remaining` count what is left after the last item.
    let r = page(s, b"a/", None, 2, Latest);
    assert_eq!(kvs(&r.items), expect(&[b"a/", b"a/1"]));
    assert!(r.more);
    assert_eq!(r.remaining, 2);
    let r = page(s, b"a/", None, 4, Latest);
    assert_eq!(r.items.len(), 4);
    assert!(!r.more);
    assert_eq!(r.remaining, 0);
    let r = page(s, b"a/", None, 100, Latest);
    assert_eq!(r.items.len(), 4);
    assert!(!r.more);
    assert_eq!(r.remaining, 0);
    let r = page(s, b"", None, 1, Latest);
    assert_eq!(kvs(&r.items), expect(&[b"\x00"]));
    assert_eq!(r.remaining, 9);

    // start_after: strictly after, whether or not it is a key.
    let r = page(s, b"a/", Some(b"a/1"), 0, Latest);
    assert_eq!(kvs(&r.items), expect(&[b"a/1/x", b"a/2"]));
    let r = page(s, b"a/", Some(b"a/15"), 0, Latest);
    assert_eq!(kvs(&r.items), expect(&[b"a/2"]));
    let r = page(s, b"a/", Some(b"0"), 0, Latest);
    assert_eq!(r.items.len(), 4);
    let r = page(s, b"a/", Some(b"z"), 0, Latest);
    assert!(r.items.is_empty() && !r.more && r.remaining == 0);
    let r = page(s, b"a", Some(b"a/2"), 1, Latest);
    assert_eq!(kvs(&r.items), expect(&[b"a0"]));
    assert!(!r.more);
}

fn list_many_keys_across_shards<S: Store + ?Sized>(s: &S) {
    let n = 120u64;
    let mut want = Vec::new();
    for i in 0..n {
        let j = i * 37 % n; // scrambled insertion order
        let k = format!("m/{j:03}");
        let w = ok(s.create(k.as_bytes(), format!("{j}").as_bytes()));
        want.push(Kv::new(
            k.as_bytes(),
            format!("{j}").as_bytes(),
            w.revision.0,
        ));
    }
    ok(s.create(b"m", b"not under m/"));
    ok(s.create(b"n/000", b"not under m/"));
    want.sort();
    let (items, _) = list_all(s, b"m/", Latest);
    assert_eq!(items, want);

    let snap = s.current_revision();
    let mut got = Vec::new();
    let mut after: Option<Vec<u8>> = None;
    loop {
        let r = page(s, b"m/", after.as_deref(), 7, Exact(snap));
        assert_eq!(r.revision, snap);
        got.extend(kvs(&r.items));
        assert_eq!(r.remaining, n - got.len() as u64);
        assert_eq!(r.more, r.remaining > 0);
        if !r.more {
            break;
        }
        after = Some(
            r.items
                .last()
                .expect("a page with more has items")
                .key()
                .to_vec(),
        );
    }
    assert_eq!(got, want);
}

fn list_pagination_at_snapshot_while_writing<S: Store + ?Sized>(s: &S) {
    let mut expected = Vec::new();
    for i in 0..20 {
        let k = format!("p/{i:02}");
        let w = ok(s.create(k.as_bytes(), b"v0"));
        expected.push(Kv::new(k.as_bytes(), b"v0", w.revision.0));
    }
    ok(s.create(b"q/outside", b"x"));

    let first = page(s, b"p/", None, 6, Latest);
    let snap = first.revision;
    assert_eq!(snap, s.current_revision());
    assert_eq!(kvs(&first.items), expected[..6].to_vec());
    assert!(first.more);
    assert_eq!(first.remaining, 14);

    let mut got = kvs(&first.items);
    let mut last = first.items.last().unwrap().key().to_vec();
    let mut n = 0;
    loop {
        n += 1;
        // Changes the snapshot must not show: updates, deletes, creates in the next pages.
        ok(s.update(format!("p/{:02}", 19 - n).as_bytes(), NONE, b"newer"));
        ok(s.delete(format!("p/{:02}", 6 * n + 1).as_bytes(), NONE));
        ok(s.create(format!("p/{:02}a", 6 * n).as_bytes(), b"inserted"));
        ok(s.create(format!("p/9{n}").as_bytes(), b"appended"));
        let r = page(s, b"p/", Some(&last), 6, Exact(snap));
        assert_eq!(
            r.revision, snap,
            "a page at an exact revision is served at it"
        );
        got.extend(kvs(&r.items));
        assert_eq!(r.remaining, 20 - got.len() as u64, "remaining on page {n}");
        assert_eq!(r.more, r.remaining > 0);
        if !r.more {
            break;
        }
        last = r.items.last().unwrap().key().to_vec();
    }
    assert_eq!(n, 3);
    assert_eq!(got, expected, "pages at the snapshot show the snapshot");
    let (whole, _) = list_all(s, b"p/", Exact(snap));
    assert_eq!(whole, expected);
    let (now, r) = list_all(s, b"p/", Latest);
    assert_eq!(r, s.current_revision());
    assert_eq!(now.len(), 20 - 3 + 3 + 3);
    assert!(
        now.iter().any(|kv| kv.value == b"newer") && now.iter().any(|kv| kv.value == b"inserted")
    );
}

/// Keys under `prefix` in `want` (sorted) that sort after `key`.
fn count_after(want: &[Kv], key: &[u8]) -> u64 {
    want.iter().filter(|kv| kv.key.as_slice() > key).count() as u64
}

/// Enough keys that a shard's rank marks (one per 256 live keys) are used: `remaining` must
/// stay exact on every page at a snapshot while the store changes, after compacting up to
/// the snapshot, for pages that resume after a key that is not in the store, and at a newer
/// snapshot.
fn list_pagination_counts_remaining_at_scale<S: Store + ?Sized>(s: &S) {
    let n = 3000u64;
    let pending: Vec<_> = (0..n)
        .map(|i| {
            let j = i * 7919 % n; // scrambled insertion order
            s.create(format!("r/{j:05}").as_bytes(), format!("{j}").as_bytes())
        })
        .collect();
    pending.into_iter().for_each(|p| {
        ok(p);
    });
    let deleted: Vec<_> = (0..n)
        .step_by(7)
        .map(|j| s.delete(format!("r/{j:05}").as_bytes(), NONE))
        .collect();
    deleted.into_iter().for_each(|p| {
        ok(p);
    });
    ok(s.create(b"r", b"not under r/"));
    ok(s.create(b"s/0", b"not under r/"));
    let snap = s.current_revision();
    let (want, _) = list_all(s, b"r/", Exact(snap));
    assert_eq!(want.len() as u64, n - n.div_ceil(7));

    let mut got = Vec::new();
    let mut after: Option<Vec<u8>> = None;
    let mut pages = 0u64;
    loop {
        // Changes the snapshot must not show, ahead of and behind the cursor.
        let k = format!("r/{:05}", (pages * 131 + 3) % n);
        if pages.is_multiple_of(2) {
            ok(s.create(format!("{k}x").as_bytes(), b"new"));
        } else if let Some(kv) = s.get(k.as_bytes(), Latest).unwrap() {
            ok(s.delete(k.as_bytes(), at(kv.mod_revision)));
        }
        if pages == 10 {
            s.compact(snap).unwrap();
        }
        let r = page(s, b"r/", after.as_deref(), 97, Exact(snap));
        got.extend(kvs(&r.items));
        pages += 1;
        assert_eq!(
            r.remaining,
            want.len() as u64 - got.len() as u64,
            "page {pages}"
        );
        assert_eq!(r.more, r.remaining > 0);
        if !r.more {
            break;
        }
        after = Some(r.items.last().unwrap().key().to_vec());
    }
    assert_eq!(got, want);
    assert_eq!(pages, (want.len() as u64).div_ceil(97));

    // Resuming after keys that are not in the store (between, before, after the marks).
    for probe in ["r/00000a", "r/01234z", "r/02999~", "r/", "r/1"] {
        let r = page(s, b"r/", Some(probe.as_bytes()), 50, Exact(snap));
        let last = r.items.last().map(|kv| kv.key().to_vec());
        let expect = last.map_or(0, |l| count_after(&want, &l));
        assert_eq!(r.remaining, expect, "after {probe}");
        assert_eq!(r.more, expect > 0, "after {probe}");
    }

    // A newer snapshot counts its own keys.
    let (now, cur) = list_all(s, b"r/", Latest);
    let r = page(s, b"r/", Some(b"r/01500"), 10, Exact(cur));
    let last = r.items.last().unwrap().key().to_vec();
    assert_eq!(r.remaining, count_after(&now, &last));
}

fn list_at_old_revisions<S: Store + ?Sized>(s: &S) {
    let a = ok(s.create(b"o/a", b"1")).revision.0;
    let b = ok(s.create(b"o/b", b"1")).revision.0;
    let c = ok(s.create(b"o/c", b"1")).revision.0;
    let b2 = ok(s.update(b"o/b", NONE, b"2")).revision.0;
    let da = ok(s.delete(b"o/a", NONE)).revision.0;
    let d = ok(s.create(b"o/d", b"1")).revision.0;
    let cur = s.current_revision();

    let at_c = vec![
        Kv::new(b"o/a", b"1", a),
        Kv::new(b"o/b", b"1", b),
        Kv::new(b"o/c", b"1", c),
    ];
    let at_b2 = vec![
        Kv::new(b"o/a", b"1", a),
        Kv::new(b"o/b", b"2", b2),
        Kv::new(b"o/c", b"1", c),
    ];
    let at_da = vec![Kv::new(b"o/b", b"2", b2), Kv::new(b"o/c", b"1", c)];
    let at_d = vec![
        Kv::new(b"o/b", b"2", b2),
        Kv::new(b"o/c", b"1", c),
        Kv::new(b"o/d", b"1", d),
    ];
    assert_eq!(list_all(s, b"o/", Exact(rev(a - 1))), (vec![], rev(a - 1)));
    assert_eq!(list_all(s, b"o/", Exact(rev(c))), (at_c, rev(c)));
    assert_eq!(list_all(s, b"o/", Exact(rev(b2))), (at_b2.clone(), rev(b2)));
    assert_eq!(list_all(s, b"o/", Exact(rev(da))), (at_da, rev(da)));
    assert_eq!(list_all(s, b"o/", Exact(rev(d))), (at_d.clone(), rev(d)));
    assert_eq!(list_all(s, b"o/", Latest), (at_d, cur));
    assert_future(
        s.list(&ListRequest {
            at: Exact(cur.next()),
            ..ListRequest::prefix(b"o/")
        }),
        cur.next(),
        cur,
    );
    assert_future(
        s.list(&ListRequest {
            at: NotOlderThan(cur.next()),
            ..ListRequest::prefix(b"o/")
        }),
        cur.next(),
        cur,
    );

    // Paginated at an old revision.
    let p1 = page(s, b"o/", None, 1, Exact(rev(b2)));
    assert_eq!(
        (kvs(&p1.items), p1.more, p1.remaining),
        (at_b2[..1].to_vec(), true, 2)
    );
    let p2 = page(s, b"o/", Some(b"o/a"), 1, Exact(rev(b2)));
    assert_eq!(
        (kvs(&p2.items), p2.more, p2.remaining),
        (at_b2[1..2].to_vec(), true, 1)
    );
    let p3 = page(s, b"o/", Some(b"o/b"), 1, Exact(rev(b2)));
    assert_eq!(
        (kvs(&p3.items), p3.more, p3.remaining),
        (at_b2[2..].to_vec(), false, 0)
    );
}

fn compaction<S: Store + ?Sized>(s: &S) {
    let k1 = ok(s.create(b"c/k", b"v1")).revision;
    let k2 = ok(s.update(b"c/k", NONE, b"v2")).revision;
    let j = ok(s.create(b"c/j", b"j")).revision;
    let k3 = ok(s.update(b"c/k", NONE, b"v3")).revision;
    let jd = ok(s.delete(b"c/j", NONE)).revision;
    let m = ok(s.create(b"c/m", b"m")).revision;
    let g = ok(s.create(b"c/gone", b"g")).revision;
    let gd = ok(s.delete(b"c/gone", NONE)).revision;
    let c = jd;

    s.compact(c).expect("compact");
    assert_eq!(s.compacted_revision(), c);
    for r in [rev(0), k1, k2, j, k3] {
        assert_compacted(s.get(b"c/k", Exact(r)), r, c);
        assert_compacted(
            s.list(&ListRequest {
                at: Exact(r),
                ..ListRequest::prefix(b"c/")
            }),
            r,
            c,
        );
    }
    // At the compacted revision: the versions current at it are kept.
    assert_eq!(
        get_kv(s, b"c/k", Exact(c)),
        Some(Kv::new(b"c/k", b"v3", k3.0))
    );
    assert_eq!(get_kv(s, b"c/j", Exact(c)), None);
    assert_eq!(
        list_all(s, b"c/", Exact(c)),
        (vec![Kv::new(b"c/k", b"v3", k3.0)], c)
    );
    assert_eq!(
        list_all(s, b"c/", Exact(m)).0,
        vec![Kv::new(b"c/k", b"v3", k3.0), Kv::new(b"c/m", b"m", m.0)]
    );
    assert_eq!(
        get_kv(s, b"c/gone", Exact(g)),
        Some(Kv::new(b"c/gone", b"g", g.0))
    );
    assert_eq!(get_kv(s, b"c/gone", Exact(gd)), None);
    assert_eq!(
        get_kv(s, b"c/k", Latest),
        Some(Kv::new(b"c/k", b"v3", k3.0))
    );
    assert_eq!(
        get_kv(s, b"c/k", NotOlderThan(k1)),
        Some(Kv::new(b"c/k", b"v3", k3.0))
    );

    // Watching: from below the compacted revision fails, from it works.
    match s.watch(b"c/", rev(c.0 - 1)) {
        Err(Error::Compacted {
            requested,
            compacted,
        }) => assert_eq!((requested, compacted), (rev(c.0 - 1), c)),
        Err(e) => panic!("expected Compacted, got {e:?}"),
        Ok(_) => panic!("watch below the compacted revision succeeded"),
    }
    let mut w = s.watch(b"c/", c).expect("watch at the compacted revision");
    assert_eq!(
        collect(&mut w, 3),
        vec![
            put(b"c/m", b"m", m.0, None),
            put(b"c/gone", b"g", g.0, None),
            del(b"c/gone", gd.0, Some(Kv::new(b"c/gone", b"g", g.0))),
        ]
    );

    // Compacting to an older revision is a no-op; beyond the current one fails.
    s.compact(k1).expect("compact to an older revision");
    assert_eq!(s.compacted_revision(), c);
    s.compact(c).expect("compact again at the same revision");
    let cur = s.current_revision();
    assert_future(s.compact(cur.next()), cur.next(), cur);
    assert_eq!(s.compacted_revision(), c);

    // Mod revisions survive compaction: preconditions still work.
    let k4 = ok(s.update(b"c/k", at(k3), b"v4")).revision;
    assert_eq!(
        collect(&mut w, 1),
        vec![put(b"c/k", b"v4", k4.0, Some(Kv::new(b"c/k", b"v3", k3.0)))]
    );

    // Compact to the current revision: only the latest state remains.
    let cur = s.current_revision();
    s.compact(cur).expect("compact to current");
    assert_eq!(s.compacted_revision(), cur);
    assert_compacted(s.get(b"c/k", Exact(rev(cur.0 - 1))), rev(cur.0 - 1), cur);
    assert_eq!(
        list_all(s, b"c/", Exact(cur)).0,
        vec![Kv::new(b"c/k", b"v4", k4.0), Kv::new(b"c/m", b"m", m.0)]
    );
    assert_eq!(
        list_all(s, b"c/", Latest).0,
        list_all(s, b"c/", Exact(cur)).0
    );
    let k5 = ok(s.update(b"c/k", at(k4), b"v5")).revision;
    assert!(k5 > cur);
    assert_eq!(
        get_kv(s, b"c/k", Exact(cur)),
        Some(Kv::new(b"c/k", b"v4", k4.0))
    );
    assert_eq!(
        collect(&mut w, 1),
        vec![put(b"c/k", b"v5", k5.0, Some(Kv::new(b"c/k", b"v4", k4.0)))]
    );
}

fn revisions_increase_and_acks_are_visible<S: Store + ?Sized>(s: &S) {
    let mut last = s.current_revision();
    let mut live: BTreeMap<Vec<u8>, Kv> = BTreeMap::new();
    for i in 0..200u64 {
        let k = format!("r/{:02}", (i * 7) % 17).into_bytes();
        let v = format!("v{i}").into_bytes();
        let p = match (live.get(&k), i % 3) {
            (None, _) => s.create(&k, &v),
            (Some(_), 0) => s.delete(&k, NONE),
            (Some(cur), _) => s.update(&k, at(rev(cur.rev)), &v),
        };
        // Alternate between waiting on the thread and awaiting the future.
        let w = if i % 2 == 0 {
            ok(p)
        } else {
            futures_executor::block_on(p).expect("write")
        };
        assert!(w.revision > last, "revision {} after {last}", w.revision);
        last = w.revision;
        assert_eq!(
            s.current_revision(),
            w.revision,
            "an acknowledged write is the current revision"
        );
        let now = get_kv(s, &k, Latest);
        let r = page(s, b"r/", None, 0, Latest);
        assert_eq!(r.revision, w.revision);
        if live.contains_key(&k) && i % 3 == 0 {
            live.remove(&k);
            assert_eq!(now, None, "acknowledged delete not visible");
        } else {
            let kv = Kv::new(&k, &v, w.revision.0);
            assert_eq!(now.as_ref(), Some(&kv), "acknowledged write not visible");
            live.insert(k.clone(), kv);
        }
        assert_eq!(kvs(&r.items), live.values().cloned().collect::<Vec<_>>());
        assert_eq!(get_kv(s, &k, Exact(w.revision)), now);
    }
}

fn watch_from_revision<S: Store + ?Sized>(s: &S) {
    let r1 = ok(s.create(b"w/1", b"v1")).revision.0;
    let before = s.current_revision();
    let mut w = s.watch(b"", before).expect("watch");
    let r2 = ok(s.update(b"w/1", NONE, b"v2")).revision.0;
    let r3 = ok(s.create(b"w/2", b"x")).revision.0;
    let r4 = ok(s.delete(b"w/1", NONE)).revision.0;
    let r5 = ok(s.create(b"w/1", b"again")).revision.0;
    let r6 = ok(s.update(b"w/2", NONE, b"")).revision.0;
    let expected = vec![
        put(b"w/1", b"v2", r2, Some(Kv::new(b"w/1", b"v1", r1))),
        put(b"w/2", b"x", r3, None),
        del(b"w/1", r4, Some(Kv::new(b"w/1", b"v2", r2))),
        put(b"w/1", b"again", r5, None),
        put(b"w/2", b"", r6, Some(Kv::new(b"w/2", b"x", r3))),
    ];
    assert_eq!(collect(&mut w, 5), expected);

    // Raw events: kinds, revisions, empty value on delete.
    let mut raw = Vec::new();
    let mut w2 = s.watch(b"w/1", rev(r3)).expect("watch");
    let deadline = std::time::Instant::now() + PATIENCE;
    while raw.len() < 2 && std::time::Instant::now() < deadline {
        w2.next_batch_timeout(&mut raw, Duration::from_millis(100))
            .expect("watch");
    }
    assert_eq!(raw.len(), 2);
    assert_eq!(raw[0].kind, keel_engine::EventKind::Delete);
    assert_eq!(raw[0].revision(), rev(r4));
    assert!(raw[0].kv.value().is_empty());
    assert_eq!(raw[0].kv.key(), b"w/1");
    assert_eq!(raw[0].prev.as_ref().map(|p| p.value()), Some(&b"v2"[..]));
    assert_eq!(raw[1].kind, keel_engine::EventKind::Put);
    assert!(raw[1].prev.is_none());

    // A watch at the current revision has nothing until the next write.
    let cur = s.current_revision();
    let mut w3 = s.watch(b"", cur).expect("watch");
    let mut out = Vec::new();
    assert!(!w3
        .next_batch_timeout(&mut out, Duration::from_millis(50))
        .expect("watch"));
    assert_eq!(w3.try_batch(&mut out).expect("watch"), 0);
    let r7 = ok(s.delete(b"w/2", at(rev(r6)))).revision.0;
    let e7 = del(b"w/2", r7, Some(Kv::new(b"w/2", b"", r6)));
    assert_eq!(collect(&mut w3, 1), vec![e7.clone()]);
    assert_eq!(collect(&mut w, 1), vec![e7]);
}

/// A watch cannot start after a revision the store has not reached: it would be started at
/// the store's head and deliver changes at or below its start (found by review: the hub did
/// exactly that).
fn watch_from_a_future_revision_fails<S: Store + ?Sized>(s: &S) {
    ok(s.create(b"fw/a", b"1"));
    let current = s.current_revision();
    let future = Revision(current.0 + 5);
    match s.watch(b"fw/", future) {
        Err(Error::FutureRevision {
            requested,
            current: c,
        }) => {
            assert_eq!((requested, c), (future, current))
        }
        Err(e) => panic!("expected FutureRevision, got {e:?}"),
        Ok(_) => panic!("a watch after a future revision was accepted"),
    }
    assert!(
        s.watch(b"fw/", current).is_ok(),
        "the current revision is fine"
    );
}

fn watch_prefix_filter<S: Store + ?Sized>(s: &S) {
    ok(s.create(b"a/0", b"old"));
    let cur = s.current_revision();
    let mut wa = s.watch(b"a/", cur).expect("watch");
    let mut wall = s.watch(b"", cur).expect("watch");
    let mut wnone = s.watch(b"zzz", cur).expect("watch");
    let mut all = Vec::new();
    let mut under_a = Vec::new();
    for (k, v) in [
        (&b"a/1"[..], &b"1"[..]),
        (b"b/1", b"2"),
        (b"a", b"3"),
        (b"a/", b"4"),
        (b"ab", b"5"),
        (b"a/2/x", b"6"),
        (b"A/1", b"7"),
    ] {
        let r = ok(s.create(k, v)).revision.0;
        all.push(put(k, v, r, None));
        if k.starts_with(b"a/") {
            under_a.push(put(k, v, r, None));
        }
    }
    let r = ok(s.delete(b"a/0", NONE)).revision.0;
    let e = del(b"a/0", r, Some(Kv::new(b"a/0", b"old", cur.0)));
    all.push(e.clone());
    under_a.push(e);
    let r = ok(s.delete(b"b/1", NONE)).revision.0;
    all.push(del(b"b/1", r, Some(Kv::new(b"b/1", b"2", all[1].kv.rev))));
    assert_eq!(collect(&mut wa, under_a.len()), under_a);
    assert_eq!(collect(&mut wall, all.len()), all);
    let mut out = Vec::new();
    assert!(!wnone
        .next_batch_timeout(&mut out, Duration::from_millis(50))
        .expect("watch"));
    assert!(
        out.is_empty(),
        "a watch on an unused prefix got {:?}",
        evs(&out)
    );
}

/// Watch from an old revision: history first, then live events, with the default ring and
/// with a ring too small to hold the history (the engine then reads it from its segments).
fn watch_history_then_live<S: Store>(make: impl Fn(Limits) -> S) {
    for small in [false, true] {
        let limits = if small {
            Limits {
                watch_ring_events_max: 8,
                watcher_backlog_events_max: 8,
                ..Limits::default()
            }
        } else {
            Limits::default()
        };
        let s = make(limits);
        let mut events = Vec::new();
        let mut cur: BTreeMap<Vec<u8>, Kv> = BTreeMap::new();
        let mut write = |s: &S, i: u64| {
            let k = format!("h/{}", i % 5).into_bytes();
            let v = format!("{i}").into_bytes();
            let prev = cur.get(&k).cloned();
            let e = match &prev {
                Some(p) if i % 7 == 3 => del(
                    &k,
                    ok(s.delete(&k, at(rev(p.rev)))).revision.0,
                    prev.clone(),
                ),
                Some(_) => put(&k, &v, ok(s.update(&k, NONE, &v)).revision.0, prev.clone()),
                None => put(&k, &v, ok(s.create(&k, &v)).revision.0, None),
            };
            if e.put {
                cur.insert(k, e.kv.clone());
            } else {
                cur.remove(&k);
            }
            ok(s.create(format!("other/{i}").as_bytes(), b"noise"));
            e
        };
        for i in 0..30 {
            events.push(write(&s, i));
        }
        let from = events[4].kv.rev;
        let mut w = s.watch(b"h/", rev(from)).expect("watch from history");
        assert_eq!(
            collect(&mut w, 25),
            events[5..].to_vec(),
            "history (small ring: {small})"
        );
        for i in 30..40 {
            let e = write(&s, i);
            assert_eq!(
                collect(&mut w, 1),
                vec![e.clone()],
                "live (small ring: {small})"
            );
            events.push(e);
        }
        let mut w0 = s.watch(b"h/", Revision::ZERO).expect("watch from 0");
        assert_eq!(
            collect(&mut w0, 40),
            events,
            "everything (small ring: {small})"
        );
    }
}

/// More history than one watch batch holds.
fn watch_long_history<S: Store>(make: impl Fn(Limits) -> S) {
    let s = make(Limits {
        watch_ring_events_max: 64,
        watcher_backlog_events_max: 64,
        ..Limits::default()
    });
    let n = 1300u64;
    let mut want = Vec::new();
    for i in 0..n {
        let k = format!("l/{:04}", i);
        let r = ok(s.create(k.as_bytes(), b"v")).revision.0;
        want.push(put(k.as_bytes(), b"v", r, None));
    }
    let mut w = s.watch(b"l/", Revision::ZERO).expect("watch");
    assert_eq!(collect(&mut w, n as usize), want);
    let mut w = s.watch(b"l/1", rev(want[10].kv.rev)).expect("watch");
    let want1: Vec<Ev> = want[11..]
        .iter()
        .filter(|e| e.kv.key.starts_with(b"l/1"))
        .cloned()
        .collect();
    assert_eq!(collect(&mut w, want1.len()), want1);
}

fn watch_compacted<S: Store>(make: impl Fn(Limits) -> S) {
    let s = make(Limits {
        watch_ring_events_max: 4,
        watcher_backlog_events_max: 4,
        ..Limits::default()
    });
    let mut revs = vec![0];
    for i in 0..20 {
        revs.push(
            ok(s.create(format!("x/{i:02}").as_bytes(), b"v"))
                .revision
                .0,
        );
    }
    // A watcher still reading history when compaction overtakes it ends with Compacted.
    let mut behind = s.watch(b"x/", rev(revs[2])).expect("watch");
    let c = rev(revs[10]);
    s.compact(c).expect("compact");
    let mut out = Vec::new();
    match behind.try_batch(&mut out) {
        Err(WatchError::Compacted {
            requested,
            compacted,
        }) => {
            assert_eq!((requested, compacted), (rev(revs[2]), c))
        }
        other => panic!(
            "expected WatchError::Compacted, got {other:?} with {:?}",
            evs(&out)
        ),
    }
    assert!(
        matches!(
            behind.try_batch(&mut out),
            Err(WatchError::Compacted { .. })
        ),
        "an ended watch stays ended"
    );

    for after in [Revision::ZERO, rev(revs[2]), rev(c.0 - 1)] {
        match s.watch(b"x/", after) {
            Err(Error::Compacted {
                requested,
                compacted,
            }) => assert_eq!((requested, compacted), (after, c)),
            Err(e) => panic!("expected Compacted, got {e:?}"),
            Ok(_) => panic!("watch from {after} below compacted {c} succeeded"),
        }
    }
    let mut w = s.watch(b"x/", c).expect("watch at the compacted revision");
    let got = collect(&mut w, 10);
    assert_eq!(
        got.iter().map(|e| e.kv.rev).collect::<Vec<_>>(),
        revs[11..].to_vec()
    );
}

fn size_limits<S: Store>(make: impl Fn(Limits) -> S) {
    let s = make(Limits {
        key_bytes_max: 8,
        value_bytes_max: 16,
        ..Limits::default()
    });
    let k8: &[u8] = b"12345678";
    let k9: &[u8] = b"123456789";
    let v16 = [b'v'; 16];
    let v17 = [b'v'; 17];
    let w = ok(s.create(k8, &v16));
    let mut watcher = s.watch(b"", w.revision).expect("watch");

    let key_too_large = |r: Result<keel_engine::Written, Error>| match r {
        Err(Error::KeyTooLarge { len, max }) => assert_eq!((len, max), (9, 8)),
        other => panic!("expected KeyTooLarge, got {other:?}"),
    };
    key_too_large(ack(s.create(k9, b"v")));
    key_too_large(ack(s.update(k9, NONE, b"v")));
    key_too_large(ack(s.delete(k9, NONE)));
    for r in [
        ack(s.create(b"", b"v")),
        ack(s.update(b"", NONE, b"v")),
        ack(s.delete(b"", NONE)),
    ] {
        assert!(
            matches!(r, Err(Error::EmptyKey)),
            "expected EmptyKey, got {r:?}"
        );
    }
    let value_too_large = |r: Result<keel_engine::Written, Error>| match r {
        Err(Error::ValueTooLarge { len, max }) => assert_eq!((len, max), (17, 16)),
        other => panic!("expected ValueTooLarge, got {other:?}"),
    };
    value_too_large(ack(s.create(b"new", &v17)));
    value_too_large(ack(s.update(k8, NONE, &v17)));
    value_too_large(ack(s.update(k8, at(w.revision), &v17)));

    assert_eq!(
        list_all(&s, b"", Latest).0,
        vec![Kv::new(k8, &v16, w.revision.0)]
    );
    let w2 = ok(s.update(k8, at(w.revision), b""));
    assert!(w2.revision > w.revision);
    assert_eq!(
        collect(&mut watcher, 1),
        vec![put(
            k8,
            b"",
            w2.revision.0,
            Some(Kv::new(k8, &v16, w.revision.0))
        )]
    );
}

fn too_many_watchers<S: Store>(make: impl Fn(Limits) -> S) {
    let s = make(Limits {
        watchers_max: 2,
        ..Limits::default()
    });
    let w1 = s.watch(b"", Revision::ZERO).expect("first watcher");
    let mut w2 = s.watch(b"t/", Revision::ZERO).expect("second watcher");
    match s.watch(b"", Revision::ZERO) {
        Err(Error::TooManyWatchers { max }) => assert_eq!(max, 2),
        Err(e) => panic!("expected TooManyWatchers, got {e:?}"),
        Ok(_) => panic!("a third watcher was allowed with watchers_max = 2"),
    }
    drop(w1);
    let mut w3 = s
        .watch(b"t/", Revision::ZERO)
        .expect("a slot freed by dropping a watcher");
    assert!(matches!(
        s.watch(b"", Revision::ZERO),
        Err(Error::TooManyWatchers { .. })
    ));
    let r = ok(s.create(b"t/1", b"v")).revision.0;
    assert_eq!(collect(&mut w2, 1), vec![put(b"t/1", b"v", r, None)]);
    assert_eq!(collect(&mut w3, 1), vec![put(b"t/1", b"v", r, None)]);
    drop(w2);
    drop(w3);
    let _a = s.watch(b"", Revision::ZERO).expect("slots freed");
    let _b = s.watch(b"", Revision::ZERO).expect("slots freed");
}

fn lagging_watcher<S: Store>(make: impl Fn(Limits) -> S) {
    let s = make(Limits {
        watch_ring_events_max: 16,
        watcher_backlog_events_max: 8,
        ..Limits::default()
    });
    let cur = s.current_revision();
    let mut slow_backlog = s.watch(b"", cur).expect("watch");
    let mut slow_ring = s.watch(b"", cur).expect("watch");
    let mut fast = s.watch(b"", cur).expect("watch");
    let expect_lagged = |w: &mut dyn keel_engine::EventStream, what: &str| {
        let mut out = Vec::new();
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: not ended as lagged"
            );
            match w.next_batch_timeout(&mut out, Duration::from_millis(100)) {
                Ok(_) => continue,
                Err(WatchError::Lagged { behind_events, max }) => {
                    assert_eq!(max, 8, "{what}");
                    assert!(behind_events > 8, "{what}: behind {behind_events}");
                    break;
                }
                Err(e) => panic!("{what}: expected Lagged, got {e:?}"),
            }
        }
        assert!(
            out.len() <= 8,
            "{what}: a lagging watcher delivered {} events first",
            out.len()
        );
        assert!(
            matches!(w.try_batch(&mut out), Err(WatchError::Lagged { .. })),
            "{what}: stays ended"
        );
    };
    let mut i = 0;
    let mut step = |fast: &mut dyn keel_engine::EventStream| {
        let r = ok(s.create(format!("lag/{i:03}").as_bytes(), b"v"))
            .revision
            .0;
        assert_eq!(
            collect(fast, 1),
            vec![put(format!("lag/{i:03}").as_bytes(), b"v", r, None)]
        );
        i += 1;
    };
    // 12 behind: more than the backlog bound, still inside the ring.
    for _ in 0..12 {
        step(&mut fast);
    }
    expect_lagged(&mut slow_backlog, "behind the backlog bound");
    // 52 behind: its next event has left the ring.
    for _ in 0..40 {
        step(&mut fast);
    }
    expect_lagged(&mut slow_ring, "behind the ring");
}

/// Several writers, a lister and a watcher at once: every acknowledged revision is distinct
/// and visible to its writer at once; the watcher sees every change exactly once in revision
/// order; every list shows exactly the state at its snapshot revision.
fn concurrent_writers_readers_and_watcher<S: Store + ?Sized>(s: &S) {
    const WRITERS: usize = 4;
    const WRITES: usize = 50;
    let base = s.current_revision();
    let mut w = s.watch(b"cc/", base).expect("watch");
    let writes = Mutex::new(Vec::new());
    let lists = Mutex::new(Vec::new());
    let done = AtomicBool::new(false);
    let watched = std::thread::scope(|sc| {
        let watcher = sc.spawn(|| {
            let mut out = Vec::new();
            let deadline = std::time::Instant::now() + PATIENCE * 3;
            while out.len() < WRITERS * WRITES {
                assert!(
                    std::time::Instant::now() < deadline,
                    "watcher got {} events",
                    out.len()
                );
                w.next_batch_timeout(&mut out, Duration::from_millis(200))
                    .expect("watch");
            }
            evs(&out)
        });
        let lister = sc.spawn(|| {
            // At least once after the writers finished, however fast they were.
            loop {
                let finished = done.load(Ordering::SeqCst);
                let r = page(s, b"cc/", None, 0, Latest);
                lists.lock().unwrap().push((r.revision.0, kvs(&r.items)));
                if finished {
                    break;
                }
            }
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let writes = &writes;
                sc.spawn(move || {
                    let mut mine: BTreeMap<Vec<u8>, Kv> = BTreeMap::new();
                    let mut last = Revision::ZERO;
                    for i in 0..WRITES {
                        let k = format!("cc/{t}/{}", i % 5).into_bytes();
                        let v = format!("{t}:{i}").into_bytes();
                        let prev = mine.get(&k).cloned();
                        let deleting = prev.is_some() && i % 4 == 3;
                        let wr = match &prev {
                            None => ok(s.create(&k, &v)),
                            Some(_) if deleting => ok(s.delete(&k, NONE)),
                            Some(p) => ok(s.update(&k, at(rev(p.rev)), &v)),
                        };
                        assert!(wr.revision > last);
                        last = wr.revision;
                        assert_eq!(wr.prev_revision.map(|r| r.0), prev.as_ref().map(|p| p.rev));
                        assert!(s.current_revision() >= wr.revision, "ack before visibility");
                        let now = get_kv(s, &k, Latest);
                        let e = if deleting {
                            assert_eq!(now, None);
                            mine.remove(&k);
                            del(&k, wr.revision.0, prev)
                        } else {
                            let kv = Kv::new(&k, &v, wr.revision.0);
                            assert_eq!(now.as_ref(), Some(&kv), "acknowledged write not visible");
                            mine.insert(k.clone(), kv);
                            put(&k, &v, wr.revision.0, prev)
                        };
                        writes.lock().unwrap().push(e);
                    }
                })
            })
            .collect();
        for t in writers {
            t.join().expect("writer");
        }
        done.store(true, Ordering::SeqCst);
        lister.join().expect("lister");
        watcher.join().expect("watcher")
    });
    let mut written = writes.into_inner().unwrap();
    written.sort_by_key(|e| e.kv.rev);
    for pair in written.windows(2) {
        assert!(
            pair[0].kv.rev < pair[1].kv.rev,
            "two writes acknowledged with revision {}",
            pair[0].kv.rev
        );
    }
    assert_eq!(
        watched, written,
        "the watcher saw every change once, in revision order"
    );
    let lists = lists.into_inner().unwrap();
    assert!(!lists.is_empty());
    for (snap, items) in &lists {
        assert_eq!(items, &state_at(&written, *snap), "list at snapshot {snap}");
    }
    // And every revision can be listed exactly afterwards.
    for r in base.0..=s.current_revision().0 {
        assert_eq!(
            list_all(s, b"cc/", Exact(rev(r))).0,
            state_at(&written, r),
            "at {r}"
        );
    }
}

/// Conditional updates racing on one key: each precondition admits exactly one writer, so
/// no increment is lost and every committed value is distinct.
fn concurrent_conditional_updates<S: Store + ?Sized>(s: &S) {
    const THREADS: u64 = 4;
    const INCREMENTS: u64 = 40;
    let k: &[u8] = b"cas/counter";
    ok(s.create(k, b"0"));
    std::thread::scope(|sc| {
        for _ in 0..THREADS {
            sc.spawn(|| {
                let mut done = 0;
                while done < INCREMENTS {
                    let cur = s.get(k, Latest).expect("get").expect("counter exists");
                    let n: u64 = std::str::from_utf8(cur.value()).unwrap().parse().unwrap();
                    let next = (n + 1).to_string();
                    match ack(s.update(k, at(cur.mod_revision), next.as_bytes())) {
                        Ok(w) => {
                            assert_eq!(w.prev_revision, Some(cur.mod_revision));
                            done += 1;
                        }
                        Err(Error::Conflict { expected, actual }) => {
                            assert_eq!(expected, cur.mod_revision);
                            assert!(actual > expected, "conflict with an older revision");
                        }
                        Err(e) => panic!("unexpected {e:?}"),
                    }
                }
            });
        }
    });
    let total = THREADS * INCREMENTS;
    let end = get_kv(s, k, Latest).expect("counter");
    assert_eq!(end.value, total.to_string().into_bytes(), "lost updates");
    let mut w = s.watch(k, Revision::ZERO).expect("watch");
    let events = collect(&mut w, total as usize + 1);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.kv.value, i.to_string().into_bytes(), "event {i}");
        if i > 0 {
            assert_eq!(
                e.prev.as_ref(),
                Some(&events[i - 1].kv),
                "event {i}'s previous value"
            );
        }
    }
}

/// Writers contending on shared keys (creates, updates, deletes, some failing), readers at
/// random exact revisions, and a compactor, all at once. Afterwards the complete change log
/// (watched from the start) must be self-consistent (each event's previous value is the
/// key's previous event), contain every acknowledged write, and explain every read: a read
/// at revision R saw exactly the log's state at R, or failed with `Compacted`.
fn concurrent_contention_with_compaction<S: Store + ?Sized>(s: &S) {
    const WRITERS: u64 = 3;
    const OPS: u64 = 120;
    let mut log_watch = s.watch(b"x/", Revision::ZERO).expect("watch");
    let acked = Mutex::new(Vec::new());
    let reads = Mutex::new(Vec::new());
    let done = AtomicBool::new(false);
    let watched = std::thread::scope(|sc| {
        let watcher = sc.spawn(|| {
            let mut out = Vec::new();
            let deadline = std::time::Instant::now() + PATIENCE * 3;
            while !done.load(Ordering::SeqCst)
                || s.current_revision()
                    > out
                        .last()
                        .map_or(Revision::ZERO, |e: &std::sync::Arc<keel_engine::Event>| {
                            e.revision()
                        })
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "watcher stuck at {} events",
                    out.len()
                );
                // Keep up so the watcher never lags.
                watch_step(&mut log_watch, &mut out);
            }
            evs(&out)
        });
        for t in 0..2u64 {
            let reads = &reads;
            let done = &done;
            sc.spawn(move || {
                let mut rng = Rng::new(100 + t);
                while !done.load(Ordering::SeqCst) {
                    let cur = s.current_revision().0;
                    let r = rev(cur.saturating_sub(rng.below(20)));
                    let k = format!("x/{}", rng.below(4)).into_bytes();
                    match s.get(&k, Exact(r)) {
                        Ok(v) => reads.lock().unwrap().push((r.0, k, v.map(|v| kv(&v)))),
                        Err(Error::Compacted { .. }) => {}
                        Err(e) => panic!("get at {r}: {e:?}"),
                    }
                }
            });
        }
        let compactor = sc.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                let c = rev(s.current_revision().0.saturating_sub(10));
                s.compact(c).expect("compact");
                assert!(s.compacted_revision() >= c);
                std::thread::yield_now();
            }
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let acked = &acked;
                sc.spawn(move || {
                    let mut rng = Rng::new(t);
                    for i in 0..OPS {
                        let k = format!("x/{}", rng.below(4)).into_bytes();
                        let v = format!("{t}.{i}").into_bytes();
                        let (put, r) = match rng.below(3) {
                            0 => (true, ack(s.create(&k, &v))),
                            1 => (true, ack(s.update(&k, NONE, &v))),
                            _ => (false, ack(s.delete(&k, NONE))),
                        };
                        match r {
                            Ok(w) => acked.lock().unwrap().push((w.revision.0, put, k, v)),
                            Err(Error::AlreadyExists { .. } | Error::NotFound) => {}
                            Err(e) => panic!("write: {e:?}"),
                        }
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        done.store(true, Ordering::SeqCst);
        compactor.join().expect("compactor");
        watcher.join().expect("watcher")
    });
    // The log: strictly increasing, each prev the key's previous event.
    let mut last: BTreeMap<Vec<u8>, Kv> = BTreeMap::new();
    for (i, e) in watched.iter().enumerate() {
        if i > 0 {
            assert!(watched[i - 1].kv.rev < e.kv.rev, "log out of order at {i}");
        }
        assert_eq!(e.prev.as_ref(), last.get(&e.kv.key), "prev of {e:?}");
        if e.put {
            last.insert(e.kv.key.clone(), e.kv.clone());
        } else {
            last.remove(&e.kv.key);
        }
    }
    let mut acked = acked.into_inner().unwrap();
    acked.sort();
    let logged: Vec<_> = watched
        .iter()
        .map(|e| {
            (
                e.kv.rev,
                e.put,
                e.kv.key.clone(),
                if e.put {
                    e.kv.value.clone()
                } else {
                    b"".to_vec()
                },
            )
        })
        .collect();
    let acked: Vec<_> = acked
        .into_iter()
        .map(|(r, put, k, v)| (r, put, k, if put { v } else { b"".to_vec() }))
        .collect();
    assert_eq!(logged, acked, "the log is exactly the acknowledged writes");
    assert_eq!(
        list_all(s, b"x/", Latest).0,
        last.into_values().collect::<Vec<_>>()
    );
    for (r, k, got) in reads.into_inner().unwrap() {
        let want = state_at(&watched, r).into_iter().find(|kv| kv.key == k);
        assert_eq!(got, want, "get {} at {r}", show(&k));
    }
}

fn watch_step(
    w: &mut dyn keel_engine::EventStream,
    out: &mut Vec<std::sync::Arc<keel_engine::Event>>,
) {
    w.next_batch_timeout(out, Duration::from_millis(20))
        .expect("watch");
}

// =============================================================================================
// Instantiations

macro_rules! contract_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            use super::*;

            fn make(limits: Limits) -> impl Store {
                #[allow(clippy::redundant_closure_call)]
                ($make)(limits)
            }

            /// Behind `dyn Store`, as the server holds a backend.
            fn fresh() -> Box<dyn Store> {
                Box::new(make(Limits::default()))
            }

            #[test]
            fn starts_empty() {
                super::starts_empty(&*fresh())
            }
            #[test]
            fn create_and_already_exists() {
                super::create_and_already_exists(&*fresh())
            }
            #[test]
            fn update_preconditions() {
                super::update_preconditions(&*fresh())
            }
            #[test]
            fn delete_preconditions() {
                super::delete_preconditions(&*fresh())
            }
            #[test]
            fn watch_from_a_future_revision_fails() {
                super::watch_from_a_future_revision_fails(&*fresh())
            }
            #[test]
            fn value_builder_context_and_abort() {
                super::value_builder_context_and_abort(&*fresh())
            }
            #[test]
            fn get_at_revisions() {
                super::get_at_revisions(&*fresh())
            }
            #[test]
            fn list_prefix_in_key_order() {
                super::list_prefix_in_key_order(&*fresh())
            }
            #[test]
            fn list_many_keys_across_shards() {
                super::list_many_keys_across_shards(&*fresh())
            }
            #[test]
            fn list_pagination_at_snapshot_while_writing() {
                super::list_pagination_at_snapshot_while_writing(&*fresh())
            }
            #[test]
            fn list_pagination_counts_remaining_at_scale() {
                super::list_pagination_counts_remaining_at_scale(&*fresh())
            }
            #[test]
            fn list_at_old_revisions() {
                super::list_at_old_revisions(&*fresh())
            }
            #[test]
            fn compaction() {
                super::compaction(&*fresh())
            }
            #[test]
            fn revisions_increase_and_acks_are_visible() {
                super::revisions_increase_and_acks_are_visible(&*fresh())
            }
            #[test]
            fn watch_from_revision() {
                super::watch_from_revision(&*fresh())
            }
            #[test]
            fn watch_prefix_filter() {
                super::watch_prefix_filter(&*fresh())
            }
            #[test]
            fn watch_history_then_live() {
                super::watch_history_then_live(make)
            }
            #[test]
            fn watch_long_history() {
                super::watch_long_history(make)
            }
            #[test]
            fn watch_compacted() {
                super::watch_compacted(make)
            }
            #[test]
            fn size_limits() {
                super::size_limits(make)
            }
            #[test]
            fn too_many_watchers() {
                super::too_many_watchers(make)
            }
            #[test]
            fn lagging_watcher() {
                super::lagging_watcher(make)
            }
            #[test]
            fn concurrent_contention_with_compaction() {
                super::concurrent_contention_with_compaction(&*fresh())
            }
            #[test]
            fn concurrent_conditional_updates() {
                super::concurrent_conditional_updates(&*fresh())
            }
            #[test]
            fn concurrent_writers_readers_and_watcher() {
                super::concurrent_writers_readers_and_watcher(&*fresh())
            }
        }
    };
}

contract_suite!(memstore, MemStore::new);
contract_suite!(memstore_no_revision_before_seal, |l| MemStore::new(l)
    .without_revision_before_seal());
contract_suite!(engine_1shard, |l| TestEngine::open(1, SyncMode::None, l));
contract_suite!(engine_4shards, |l| TestEngine::open(4, SyncMode::None, l));
contract_suite!(engine_4shards_sync, |l| TestEngine::open(
    4,
    SyncMode::Always,
    l
));

// =============================================================================================
// Engine-only: durability across close + reopen, maintenance, stats.

mod engine_only {
    use super::*;
    use keel_engine::Options;

    /// Full lists of a store past the streaming threshold (a scanner thread per shard, merged
    /// as chunks arrive) match the model: at the latest and an older revision, after a key,
    /// under a narrower prefix, with many keys whose 16 bytes after the common prefix agree
    /// (the merge then compares the keys).
    #[test]
    fn full_lists_of_a_big_store_match_the_model() {
        let e = TestEngine::open(4, SyncMode::None, Limits::default());
        let m = MemStore::new(Limits::default());
        let n = 60_000u64;
        let key = |i: u64| match i % 3 {
            0 => format!("b/ns-{}/pod-{i}", i % 10),
            _ => format!("b/kube-system-namespace/pod-{i:06}"),
        };
        for batch in (0..n).collect::<Vec<_>>().chunks(2000) {
            let pe: Vec<_> = batch
                .iter()
                .map(|&i| e.create(key(i).as_bytes(), &i.to_le_bytes()))
                .collect();
            for &i in batch {
                ok(m.create(key(i).as_bytes(), &i.to_le_bytes()));
            }
            pe.into_iter().for_each(|p| {
                ok(p);
            });
        }
        for i in (0..n).step_by(11) {
            ok(e.delete(key(i).as_bytes(), NONE));
            ok(m.delete(key(i).as_bytes(), NONE));
        }
        let old = e.current_revision();
        for i in (1..n).step_by(13).filter(|i| i % 11 != 0) {
            ok(e.update(key(i).as_bytes(), NONE, b"later"));
            ok(m.update(key(i).as_bytes(), NONE, b"later"));
        }
        assert_eq!(e.current_revision(), m.current_revision());
        for (prefix, at) in [
            (&b"b/"[..], Latest),
            (b"b/", Exact(old)),
            (b"b/kube", Latest),
            (b"", Exact(old)),
        ] {
            let (le, _) = list_all(&*e, prefix, at);
            let (lm, _) = list_all(&m, prefix, at);
            assert_eq!(le.len(), lm.len(), "{} at {at:?}", show(prefix));
            assert!(le == lm, "{} at {at:?}", show(prefix));
        }
        let after = key(30_001);
        let (le, lm) = (
            page(&*e, b"b/", Some(after.as_bytes()), 0, Latest),
            page(&m, b"b/", Some(after.as_bytes()), 0, Latest),
        );
        assert!(!le.more && le.remaining == 0);
        assert!(kvs(&le.items) == kvs(&lm.items));
        assert!(le.items.len() > 10_000);
    }

    /// Applies `n` deterministic pseudo-random writes to both stores, checking they agree.
    fn scripted_writes(e: &TestEngine, m: &MemStore, rng: &mut Rng, n: usize, keys: u64) {
        for _ in 0..n {
            let k = format!("s/{:02}", rng.below(keys)).into_bytes();
            let len = rng.range(0, 40) as usize;
            let v = rng.bytes(len);
            let cur = m.get(&k, Latest).unwrap();
            let (pe, pm) = match (&cur, rng.below(4)) {
                (None, _) => (e.create(&k, &v), m.create(&k, &v)),
                (Some(_), 0) => (e.delete(&k, NONE), m.delete(&k, NONE)),
                (Some(c), 1) => (
                    e.update(&k, at(c.mod_revision), &v),
                    m.update(&k, at(c.mod_revision), &v),
                ),
                (Some(_), _) => (e.update(&k, NONE, &v), m.update(&k, NONE, &v)),
            };
            let (we, wm) = (ok(pe), ok(pm));
            assert_eq!(
                we,
                wm,
                "engine and model acknowledged {} differently",
                show(&k)
            );
        }
    }

    /// Everything observable agrees: revisions, every snapshot from the compacted revision on,
    /// and the full watch history.
    fn assert_same(e: &TestEngine, m: &MemStore) {
        assert_eq!(
            e.current_revision(),
            m.current_revision(),
            "current revision"
        );
        assert_eq!(
            e.compacted_revision(),
            m.compacted_revision(),
            "compacted revision"
        );
        for r in m.compacted_revision().0..=m.current_revision().0 {
            assert_eq!(
                list_all(e, b"", Exact(rev(r))),
                list_all(m, b"", Exact(rev(r))),
                "list at {r}"
            );
        }
        let from = m.compacted_revision();
        let want = drain_now(&mut m.watch(b"", from).unwrap()).unwrap();
        let mut w = e.watch(b"", from).expect("engine watch");
        assert_eq!(
            collect(&mut w, want.len()),
            want,
            "watch history from {from}"
        );
        let st = e.stats();
        assert_eq!(st.revision, m.current_revision());
        assert_eq!(st.compacted, m.compacted_revision());
        assert_eq!(
            st.keys,
            list_all(m, b"", Latest).0.len() as u64,
            "stats().keys"
        );
    }

    #[test]
    fn reopen_preserves_data_history_and_revisions() {
        for shards in [1, 4] {
            let mut e = TestEngine::open(shards, SyncMode::None, Limits::default());
            let m = MemStore::default();
            let mut rng = Rng::new(42 + shards as u64);
            scripted_writes(&e, &m, &mut rng, 300, 40);
            assert_same(&e, &m);
            let before = e.current_revision();
            e.reopen();
            assert_eq!(e.stats().shards, shards);
            assert_same(&e, &m);
            // Revisions continue after the reopen.
            let w = ok(e.create(b"after/reopen", b"x"));
            assert_eq!(w.revision, before.next(), "first revision after reopen");
            ok(m.create(b"after/reopen", b"x"));
            scripted_writes(&e, &m, &mut rng, 100, 40);
            e.reopen();
            e.reopen();
            assert_same(&e, &m);
        }
    }

    /// A write that fails after its value builder ran (refused, or value too large) still
    /// consumed the revision the builder was shown, and the current revision moves past it.
    /// A reopen must not hand that revision out again: a reader that listed at revision N
    /// before the restart would find a different change at N after it.
    #[test]
    fn revisions_never_go_backwards_across_reopen() {
        let mut e = TestEngine::open(
            2,
            SyncMode::None,
            Limits {
                value_bytes_max: 8,
                ..Limits::default()
            },
        );
        let w = ok(e.create(b"k", b"v"));
        let r = ack(e.write(b"k", WriteOp::Update(NONE), |_, _| Err("refused".into())));
        assert!(matches!(r, Err(Error::Aborted(_))), "{r:?}");
        let r = ack(e.create(b"k2", &[0u8; 9]));
        assert!(matches!(r, Err(Error::ValueTooLarge { .. })), "{r:?}");
        let seen = e.current_revision();
        assert!(seen >= w.revision);
        let before = list_all(&e, b"", Latest);
        assert_eq!(before.1, seen);
        e.reopen();
        assert!(
            e.current_revision() >= seen,
            "current revision went back from {seen} to {} across a reopen",
            e.current_revision()
        );
        let w2 = ok(e.create(b"k3", b"x"));
        assert!(
            w2.revision > seen,
            "revision {} handed out again after a reopen (readers saw it before)",
            w2.revision
        );
        assert_eq!(
            list_all(&e, b"", Exact(seen)),
            before,
            "the state at {seen} changed"
        );
    }

    /// More keys per shard than one index lock hold visits (`INDEX_STEP_KEYS`): lists,
    /// counts and compaction resume correctly across the steps.
    #[test]
    fn lists_and_compaction_beyond_one_index_step() {
        let mut e = TestEngine::open(2, SyncMode::None, Limits::default());
        let m = MemStore::default();
        let n = 2 * keel_engine::limits::INDEX_STEP_KEYS + 700;
        for i in 0..n {
            let k = format!("big/{:05}", (i * 7919) % n).into_bytes();
            assert_eq!(ok(e.create(&k, b"v")), ok(m.create(&k, b"v")));
        }
        let mid = e.current_revision();
        for i in (0..n).step_by(3) {
            let k = format!("big/{i:05}").into_bytes();
            assert_eq!(ok(e.delete(&k, NONE)), ok(m.delete(&k, NONE)));
        }
        let check = |e: &TestEngine| {
            for (after, limit, at) in [
                (None, 0, Latest),
                (None, 5000, Latest),
                (Some(&b"big/04000"[..]), 3, Latest),
                (Some(&b"big/00001"[..]), 6000, Exact(mid)),
                (None, 1, Exact(mid)),
            ] {
                let req = ListRequest {
                    prefix: b"big/",
                    start_after: after,
                    limit,
                    at,
                };
                let (a, b) = (e.list(&req).unwrap(), m.list(&req).unwrap());
                assert_eq!(
                    (kvs(&a.items), a.revision, a.more, a.remaining),
                    (kvs(&b.items), b.revision, b.more, b.remaining),
                    "list after {after:?} limit {limit} at {at:?}"
                );
            }
        };
        check(&e);
        e.compact(mid).unwrap();
        m.compact(mid).unwrap();
        check(&e);
        let c = e.current_revision();
        e.compact(c).unwrap();
        m.compact(c).unwrap();
        assert_eq!(list_all(&e, b"", Exact(c)), list_all(&m, b"", Exact(c)));
        e.reopen();
        assert_eq!(list_all(&e, b"", Latest), list_all(&m, b"", Latest));
        assert_eq!(e.stats().keys, list_all(&m, b"", Latest).0.len() as u64);
    }

    /// A value within `value_bytes_max` but larger than a (small) segment: either `open`
    /// refuses such limits or the write succeeds. A `ValueTooLarge` whose `len` is below its
    /// `max` is neither.
    #[test]
    fn values_within_the_limit_fit_or_open_refuses_the_limits() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = Options::new(dir.path());
        o.shards = 1;
        o.sync = SyncMode::None;
        o.maintenance_interval = None;
        o.limits.segment_bytes = 64 * 1024;
        o.limits.value_bytes_max = 256 * 1024;
        let Ok(e) = keel_engine::Engine::open(o) else {
            return; // refusing limits the segments cannot hold is fine
        };
        let v = vec![b'x'; 100 * 1024];
        let r = ack(e.create(b"k", &v));
        e.close().unwrap();
        assert!(
            r.is_ok(),
            "a 100 KiB value with value_bytes_max = 256 KiB: {r:?}"
        );
    }

    #[test]
    fn watch_after_reopen_reads_history_from_disk() {
        let mut e = TestEngine::open(4, SyncMode::None, Limits::default());
        let m = MemStore::default();
        let mut rng = Rng::new(7);
        scripted_writes(&e, &m, &mut rng, 120, 10);
        let mid = e.current_revision();
        e.reopen();
        // History up to `mid` comes from the segments, then live events follow.
        let mut we = e.watch(b"s/0", rev(mid.0 / 2)).expect("watch");
        let mut wm = m.watch(b"s/0", rev(mid.0 / 2)).unwrap();
        let hist = drain_now(&mut wm).unwrap();
        assert!(!hist.is_empty());
        assert_eq!(collect(&mut we, hist.len()), hist, "history after reopen");
        scripted_writes(&e, &m, &mut rng, 60, 10);
        let live = drain_now(&mut wm).unwrap();
        assert_eq!(collect(&mut we, live.len()), live, "live after history");
    }

    #[test]
    fn compaction_survives_reopen() {
        let mut e = TestEngine::open(2, SyncMode::None, Limits::default());
        let m = MemStore::default();
        let mut rng = Rng::new(9);
        scripted_writes(&e, &m, &mut rng, 100, 12);
        let c = rev(60);
        e.compact(c).unwrap();
        m.compact(c).unwrap();
        assert_same(&e, &m);
        e.reopen();
        assert_compacted(e.get(b"s/01", Exact(rev(59))), rev(59), c);
        assert_compacted(
            e.list(&ListRequest {
                at: Exact(rev(10)),
                ..ListRequest::prefix(b"")
            }),
            rev(10),
            c,
        );
        assert!(matches!(
            e.watch(b"", rev(59)),
            Err(Error::Compacted { .. })
        ));
        assert_same(&e, &m);
    }

    #[test]
    fn sync_always_counts_syncs_and_survives_reopen() {
        let mut e = TestEngine::open(2, SyncMode::Always, Limits::default());
        let m = MemStore::default();
        let mut rng = Rng::new(11);
        scripted_writes(&e, &m, &mut rng, 50, 8);
        let st = e.stats();
        assert!(st.syncs >= 1, "SyncMode::Always made no fdatasync: {st:?}");
        assert!(st.batches_written >= 1 && st.bytes_written > 0, "{st:?}");
        e.reopen();
        assert_same(&e, &m);
    }

    #[test]
    fn rewrite_segments_after_compaction_keeps_data() {
        let mut e = TestEngine::open_with(|o: &mut Options| {
            o.shards = 2;
            o.limits.segment_bytes = 64 * 1024;
        });
        let m = MemStore::default();
        // ~1 KiB values overwritten many times: the old segments end up nearly all garbage.
        for round in 0..20 {
            for k in 0..20 {
                let key = format!("big/{k:02}").into_bytes();
                let v = vec![b'a' + (round % 26) as u8; 1000];
                let (pe, pm) = if round == 0 {
                    (e.create(&key, &v), m.create(&key, &v))
                } else {
                    (e.update(&key, NONE, &v), m.update(&key, NONE, &v))
                };
                assert_eq!(ok(pe), ok(pm));
            }
        }
        let before = e.stats();
        assert!(
            before.segments > 2,
            "expected several 64 KiB segments: {before:?}"
        );
        let c = e.current_revision();
        e.compact(c).unwrap();
        m.compact(c).unwrap();
        let n = e.rewrite_segments().expect("rewrite_segments");
        let after = e.stats();
        assert!(
            n >= 1,
            "nothing rewritten after compacting 95% garbage: {after:?}"
        );
        assert_eq!(after.segments_rewritten, n as u64);
        assert!(
            after.segment_bytes < before.segment_bytes,
            "rewriting did not reclaim space: {} -> {}",
            before.segment_bytes,
            after.segment_bytes
        );
        assert_same(&e, &m);
        // Writes continue, and everything survives a reopen.
        let v = vec![b'z'; 1000];
        assert_eq!(
            ok(e.update(b"big/03", NONE, &v)),
            ok(m.update(b"big/03", NONE, &v))
        );
        e.reopen();
        assert_same(&e, &m);
    }

    #[test]
    fn maintain_compacts_history_outside_the_window() {
        let mut e = TestEngine::open_with(|o: &mut Options| {
            o.shards = 2;
            o.history = Duration::ZERO;
        });
        let m = MemStore::default();
        let mut rng = Rng::new(13);
        scripted_writes(&e, &m, &mut rng, 80, 10);
        let cur = e.current_revision();
        e.maintain().expect("maintain");
        let c = e.compacted_revision();
        assert!(
            c > Revision::ZERO && c <= cur,
            "maintain with no history window compacted to {c} (current {cur})"
        );
        assert_compacted(e.get(b"s/01", Exact(rev(c.0 - 1))), rev(c.0 - 1), c);
        m.compact(c).unwrap();
        assert_same(&e, &m);
        e.reopen();
        assert_same(&e, &m);
    }

    #[test]
    fn maintain_keeps_history_inside_the_window() {
        let e = TestEngine::open_with(|o: &mut Options| o.history = Duration::from_secs(3600));
        let m = MemStore::default();
        let mut rng = Rng::new(17);
        scripted_writes(&e, &m, &mut rng, 50, 5);
        e.maintain().expect("maintain");
        assert_eq!(e.compacted_revision(), Revision::ZERO);
        assert_same(&e, &m);
    }

    #[test]
    fn close_ends_watchers() {
        let mut e = TestEngine::open(2, SyncMode::None, Limits::default());
        ok(e.create(b"k", b"v"));
        let mut w = e.watch(b"", Revision::ZERO).expect("watch");
        e.close();
        let mut out = Vec::new();
        let deadline = std::time::Instant::now() + PATIENCE;
        let err = loop {
            assert!(
                std::time::Instant::now() < deadline,
                "watcher not ended by close"
            );
            match w.next_batch_timeout(&mut out, Duration::from_millis(100)) {
                Ok(_) => continue,
                Err(err) => break err,
            }
        };
        assert_eq!(err, WatchError::Closed);
        assert!(out.len() <= 1);
        drop(w);
        e.reopen_after_close();
        assert_eq!(
            get_kv(&e, b"k", Latest).map(|kv| kv.value),
            Some(b"v".to_vec())
        );
    }

    #[test]
    fn wait_for_revisions() {
        let e = TestEngine::open(2, SyncMode::None, Limits::default());
        let w = ok(e.create(b"k", b"v"));
        assert!(e.wait_for(w.revision, Duration::from_secs(1)));
        assert!(e.wait_for(Revision::ZERO, Duration::from_secs(1)));
        assert!(
            !e.wait_for(w.revision.next(), Duration::from_millis(50)),
            "waited for a future revision"
        );
        let target = w.revision.next();
        std::thread::scope(|sc| {
            let waiter = sc.spawn(|| e.wait_for(target, PATIENCE));
            let w2 = ok(e.update(b"k", NONE, b"v2"));
            assert_eq!(w2.revision, target);
            assert!(waiter.join().unwrap(), "wait_for missed a write");
        });
    }

    #[test]
    fn stats_track_the_store() {
        let e = TestEngine::open(3, SyncMode::None, Limits::default());
        let st = e.stats();
        assert_eq!(
            (st.revision, st.compacted, st.shards, st.keys, st.watchers),
            (Revision::ZERO, Revision::ZERO, 3, 0, 0)
        );
        for i in 0..10 {
            ok(e.create(format!("k{i}").as_bytes(), b"v"));
        }
        ok(e.update(b"k1", NONE, b"v2"));
        ok(e.delete(b"k2", NONE));
        let _w = e.watch(b"", Revision::ZERO).unwrap();
        let st = e.stats();
        assert_eq!(st.revision, rev(12));
        assert_eq!(st.keys, 9);
        assert!(st.versions >= 12, "versions {}", st.versions);
        assert_eq!(st.watchers, 1);
        assert!(
            st.segments >= 1 && st.segment_bytes > 0 && st.bytes_written > 0,
            "{st:?}"
        );
    }
}
