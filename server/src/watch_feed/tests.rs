use super::log::{Feed, FeedState, Line};
use super::pacing::{phase_len, phase_point_at, phase_point_time};
use super::subscription::{Slot, Subscription, SUBSCRIBERS};
use super::task::{encode, forget_feed, FeedKey, FEEDS};
use super::*;
use crate::repr::{Encoder, Format};
use crate::selection::{Filter, Indexed, Selection};
use keel_engine::{Event, EventKind, KeyValue, Revision, Value as Stored, WatchError};
use keel_http::{Chunk, Piece};
use serde_json::json;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::time::Instant;

/// `obj` stored at `rev` under its key (`/core/configmaps/ns/<name>`).
fn kv(rev: u64, obj: &serde_json::Value) -> KeyValue {
    let name = obj["metadata"]["name"].as_str().unwrap_or("a");
    let key = format!("/core/configmaps/ns/{name}").into_bytes();
    let mut record = key.clone();
    record.extend_from_slice(obj.to_string().as_bytes());
    KeyValue::new(Stored::from_vec(record), key.len(), Revision(rev))
}

/// A ConfigMap `name` at `rev` with label `tier`.
fn cm(name: &str, rev: u64, tier: &str) -> serde_json::Value {
    json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
        "name": name, "namespace": "ns", "resourceVersion": rev.to_string(),
        "labels": {"tier": tier}}})
}

/// A line for a put of `obj` (over `prev`) at `rev`, as the feed task makes it.
fn put(rev: u64, obj: serde_json::Value, prev: Option<serde_json::Value>) -> Line {
    let ev = Arc::new(Event::new(
        EventKind::Put,
        kv(rev, &obj),
        prev.map(|p| kv(rev - 1, &p)),
    ));
    let mut bytes = Vec::new();
    encode(&ev, &mut bytes);
    Line {
        rev: Revision(rev),
        ev,
        bytes: bytes.into(),
        more: None,
    }
}

fn line(rev: u64, len: usize) -> Line {
    Line {
        bytes: vec![b'x'; len].into(),
        ..put(rev, cm("a", rev, "web"), None)
    }
}

fn catalog() -> &'static keel_catalog::Catalog {
    static CATALOG: std::sync::OnceLock<keel_catalog::Catalog> = std::sync::OnceLock::new();
    CATALOG.get_or_init(|| keel_catalog::Catalog::new("").unwrap())
}

fn selection(labels: Option<&str>, name: Option<&str>, format: Format) -> Selection {
    let info = catalog().lookup("", "v1", "configmaps").unwrap();
    Selection::new(
        Filter::parse(
            labels,
            None,
            keel_strategy::strategy(info.group, info.plural),
        )
        .unwrap(),
        name.map(str::to_string),
        Encoder::new(format, info.clone()),
    )
}

fn everything() -> Selection {
    selection(None, None, Format::Json)
}

fn state() -> FeedState {
    FeedState::new(Revision(10))
}

/// A subscription to a feed holding lines for revisions 11..=15, 11..=13 announced.
fn subscribed(next_seq: u64, after: u64) -> Subscription {
    let mut st = state();
    for rev in 11..=15 {
        st.push(Line {
            bytes: rev.to_string().into_bytes().into(),
            ..line(rev, 0)
        });
    }
    st.announced = 3;
    st.slots.push(Some(Slot {
        next_seq,
        after: Revision(after),
        waker: None,
        phase: 0,
        paced: false,
        index: None,
        relevant: None,
    }));
    st.subscribers = 1;
    SUBSCRIBERS.fetch_add(1, Ordering::Relaxed);
    let feed = Rc::new(Feed {
        state: RefCell::new(st),
    });
    unpaced(feed, 0)
}

/// A subscription of `feed`'s slot `slot`, reading whenever lines are announced.
fn unpaced(feed: Rc<Feed>, slot: usize) -> Subscription {
    Subscription {
        feed,
        slot,
        paced: false,
    }
}

fn poll(sub: &mut Subscription, max_bytes: usize) -> Poll<Result<(u64, Vec<u8>), WatchError>> {
    poll_as(sub, max_bytes, &everything()).map(|r| r.map(|(rev, c)| (rev, c.to_vec())))
}

fn poll_as(
    sub: &mut Subscription,
    max_bytes: usize,
    sel: &Selection,
) -> Poll<Result<(u64, Chunk), WatchError>> {
    let mut cx = Context::from_waker(Waker::noop());
    let mut chunk = Chunk::new();
    sub.poll_chunk(&mut cx, &mut chunk, max_bytes, sel)
        .map(|r| r.map(|rev| (rev.get(), chunk)))
}

/// A feed holding `lines`, all announced, with `n` subscribers from the start.
fn feed_of(lines: Vec<Line>, n: usize) -> Vec<Subscription> {
    let mut st = state();
    for l in lines {
        st.push(l);
    }
    st.announce();
    let feed = Rc::new(Feed {
        state: RefCell::new(st),
    });
    (0..n)
        .map(|i| {
            let mut st = feed.state.borrow_mut();
            st.slots.push(Some(Slot {
                next_seq: 0,
                after: Revision(10),
                waker: None,
                phase: i % WATCH_FEED_PHASES,
                paced: false,
                index: None,
                relevant: None,
            }));
            st.subscribers += 1;
            SUBSCRIBERS.fetch_add(1, Ordering::Relaxed);
            unpaced(feed.clone(), i)
        })
        .collect()
}

/// The JSON events of a chunk: (type, name, resourceVersion).
fn events(chunk: &Chunk) -> Vec<(String, String, String)> {
    String::from_utf8(chunk.to_vec())
        .unwrap()
        .lines()
        .map(|l| {
            let e: serde_json::Value = serde_json::from_str(l).unwrap();
            let m = &e["object"]["metadata"];
            let s = |v: &serde_json::Value| v.as_str().unwrap().to_string();
            (s(&e["type"]), s(&m["name"]), s(&m["resourceVersion"]))
        })
        .collect()
}

fn history() -> Vec<Line> {
    vec![
        put(11, cm("a", 11, "web"), None),
        put(12, cm("b", 12, "db"), None),
        // a leaves tier=web, b enters it.
        put(13, cm("a", 13, "db"), Some(cm("a", 11, "web"))),
        put(14, cm("b", 14, "web"), Some(cm("b", 12, "db"))),
        put(15, cm("b", 15, "web"), Some(cm("b", 14, "web"))),
    ]
}

#[test]
fn selective_subscribers_see_objects_enter_and_leave_their_selection() {
    let mut subs = feed_of(history(), 3);
    let web = selection(Some("tier=web"), None, Format::Json);
    let Poll::Ready(Ok((rev, chunk))) = poll_as(&mut subs[0], 1 << 20, &web) else {
        panic!("events expected");
    };
    assert_eq!(rev, 15);
    let ev = |t: &str, n: &str, rv: u64| (t.to_string(), n.to_string(), rv.to_string());
    assert_eq!(
        events(&chunk),
        [
            ev("ADDED", "a", 11),
            ev("DELETED", "a", 13),
            ev("ADDED", "b", 14),
            ev("MODIFIED", "b", 15),
        ]
    );
    let only_b = selection(None, Some("b"), Format::Json);
    let Poll::Ready(Ok((_, chunk))) = poll_as(&mut subs[1], 1 << 20, &only_b) else {
        panic!("events expected");
    };
    assert_eq!(
        events(&chunk),
        [
            ev("ADDED", "b", 12),
            ev("MODIFIED", "b", 14),
            ev("MODIFIED", "b", 15)
        ]
    );
    let Poll::Ready(Ok((_, chunk))) = poll_as(&mut subs[2], 1 << 20, &everything()) else {
        panic!("events expected");
    };
    assert_eq!(events(&chunk)[2], ev("MODIFIED", "a", 13));
    assert_eq!(
        poll_as(&mut subs[0], 1 << 20, &web).map(|r| r.is_ok()),
        Poll::Pending
    );
}

#[test]
fn lines_are_parsed_and_encoded_once_for_all_subscribers() {
    let mut subs = feed_of(history(), 4);
    let web = selection(Some("tier=web"), None, Format::Json);
    let proto = selection(None, None, Format::Protobuf);
    let mut chunks = Vec::new();
    for (sub, sel) in subs.iter_mut().zip([&web, &web, &proto, &proto]) {
        let Poll::Ready(Ok((_, chunk))) = poll_as(sub, 1 << 20, sel) else {
            panic!("events expected");
        };
        chunks.push(chunk);
    }
    let shared = |a: &Chunk, b: &Chunk| {
        a.pieces().len() == b.pieces().len()
            && a.pieces()
                .iter()
                .zip(b.pieces())
                .all(|(x, y)| match (x, y) {
                    (Piece::Shared(x), Piece::Shared(y)) => Arc::ptr_eq(x, y),
                    _ => false,
                })
    };
    assert!(shared(&chunks[0], &chunks[1]), "same selection, same bytes");
    assert!(
        shared(&chunks[2], &chunks[3]),
        "same representation, same bytes"
    );
    let frames = chunks[2].to_vec();
    let first_len = u32::from_be_bytes(frames[..4].try_into().unwrap()) as usize;
    let first = keel_proto::decode_watch_event(&frames[..4 + first_len]).unwrap();
    assert_eq!(first.0, "ADDED");
    let st = subs[0].feed.state.borrow();
    let parsed = st
        .lines
        .iter()
        .filter(|l| l.more.as_ref().is_some_and(|m| m.parsed.is_some()));
    assert_eq!(
        parsed.count(),
        5,
        "each line parsed once, for the selective readers"
    );
    let charged: usize = st.lines.iter().map(Line::charged).sum();
    assert_eq!(
        st.bytes, charged,
        "parsed and extra encodings are charged to the bound"
    );
}

#[test]
fn a_selective_subscriber_scans_a_bounded_number_of_lines_per_poll() {
    let n = WATCH_SCAN_LINES_PER_POLL as u64 + 10;
    let mut lines: Vec<Line> = (11..11 + n)
        .map(|r| put(r, cm("a", r, "db"), None))
        .collect();
    lines.push(put(11 + n, cm("b", 11 + n, "web"), None));
    let mut subs = feed_of(lines, 1);
    let web = selection(Some("tier=web"), None, Format::Json);
    assert_eq!(
        poll_as(&mut subs[0], 1 << 20, &web).map(|r| r.is_ok()),
        Poll::Pending
    );
    let Poll::Ready(Ok((rev, _))) = poll_as(&mut subs[0], 1 << 20, &web) else {
        panic!("the matching line after the first scan");
    };
    assert_eq!(rev, 11 + n);
}

#[test]
fn subscribers_read_announced_lines_after_their_revision() {
    let mut sub = subscribed(0, 11);
    assert_eq!(
        poll(&mut sub, 1 << 20),
        Poll::Ready(Ok((13, b"1213".to_vec())))
    );
    assert_eq!(sub.caught_up_to(), None, "lines 14 and 15 not read yet");
    assert_eq!(poll(&mut sub, 1 << 20), Poll::Pending);
    sub.feed.state.borrow_mut().announce();
    assert_eq!(poll(&mut sub, 2), Poll::Ready(Ok((14, b"14".to_vec()))));
    assert_eq!(poll(&mut sub, 2), Poll::Ready(Ok((15, b"15".to_vec()))));
    assert_eq!(sub.caught_up_to(), Some(Revision(10)));
    sub.feed.state.borrow_mut().ended = Some(WatchError::Closed);
    assert_eq!(poll(&mut sub, 2), Poll::Ready(Err(WatchError::Closed)));
}

#[test]
fn a_subscriber_whose_lines_were_dropped_has_lagged() {
    let mut sub = subscribed(0, 10);
    sub.feed.state.borrow_mut().drop_first();
    assert!(matches!(
        poll(&mut sub, 1 << 20),
        Poll::Ready(Err(WatchError::Lagged {
            behind_events: 5,
            ..
        }))
    ));
}

#[test]
fn leaving_frees_the_slot_and_wakes_the_task_when_last() {
    let sub = subscribed(0, 10);
    let feed = sub.feed.clone();
    drop(sub);
    let st = feed.state.borrow();
    assert_eq!((st.subscribers, st.free.as_slice()), (0, &[0][..]));
    assert!(st.slots[0].is_none());
}

#[test]
fn the_log_is_bounded_and_raises_its_floor() {
    let mut st = state();
    for rev in 11..11 + WATCH_FEED_EVENTS_MAX as u64 + 5 {
        st.push(line(rev, 1));
    }
    assert_eq!(st.lines.len(), WATCH_FEED_EVENTS_MAX);
    assert_eq!(st.first_seq, 5);
    assert_eq!(st.floor.get(), 15);
    let held: usize = st.lines.iter().map(Line::charged).sum();
    assert_eq!(st.bytes, held);
    assert!(
        held > WATCH_FEED_EVENTS_MAX * 100,
        "the events' stored objects count"
    );
    let mut st = state();
    st.push(line(11, WATCH_FEED_BYTES_MAX));
    let last = line(12, 1);
    let charged = last.charged();
    st.push(last);
    assert_eq!((st.lines.len(), st.floor.get(), st.bytes), (1, 11, charged));
}

#[test]
fn trimming_keeps_what_the_slowest_subscriber_and_late_joiners_need() {
    let mut st = state();
    let n = WATCH_FEED_RETAIN_EVENTS as u64 * 3;
    for rev in 11..11 + n {
        st.push(line(rev, 1));
    }
    st.slots.push(Some(Slot {
        next_seq: 5,
        after: Revision(0),
        waker: None,
        phase: 0,
        paced: false,
        index: None,
        relevant: None,
    }));
    st.trim();
    assert_eq!(st.first_seq, 5, "the slowest subscriber's next line stays");
    st.slots[0].as_mut().unwrap().next_seq = n;
    st.trim();
    assert_eq!(st.first_seq, n - WATCH_FEED_RETAIN_EVENTS as u64);
    assert_eq!(st.floor.get(), 10 + st.first_seq);
}

#[test]
fn phase_points_divide_the_interval() {
    let epoch = Instant::now();
    let len = phase_len();
    assert_eq!(len * WATCH_FEED_PHASES as u32, WATCH_FEED_INTERVAL);
    assert_eq!(phase_point_at(epoch, epoch), 0);
    assert_eq!(
        phase_point_at(epoch, epoch + len - Duration::from_nanos(1)),
        0
    );
    assert_eq!(phase_point_at(epoch, epoch + len * 3), 3);
    assert_eq!(phase_point_time(epoch, 3), epoch + len * 3);
    let far = 1u64 << 40;
    assert!(phase_point_time(epoch, far) > phase_point_time(epoch, far - 1));
}

/// The one subscriber, paced, of a feed holding `lines`.
fn paced_sub(lines: Vec<Line>) -> Subscription {
    let mut sub = feed_of(lines, 1).pop().unwrap();
    sub.paced = true;
    sub
}

fn paced_slot(sub: &Subscription) -> (bool, bool, usize) {
    let st = sub.feed.state.borrow();
    let slot = st.slots[sub.slot].as_ref().unwrap();
    (slot.paced, slot.waker.is_some(), slot.phase)
}

#[test]
fn a_subscriber_that_read_everything_waits_for_its_phase_point() {
    let mut sub = paced_sub(vec![put(11, cm("a", 11, "web"), None)]);
    let sel = everything();
    assert!(matches!(
        poll_as(&mut sub, 1 << 20, &sel),
        Poll::Ready(Ok((11, _)))
    ));
    let (paced, _, phase) = paced_slot(&sub);
    assert!(paced);
    assert_eq!(sub.feed.state.borrow().paced[phase], [0]);
    {
        let mut st = sub.feed.state.borrow_mut();
        st.push(put(12, cm("a", 12, "web"), Some(cm("a", 11, "web"))));
        st.announce();
    }
    assert!(poll_as(&mut sub, 1 << 20, &sel).is_pending(), "paced");
    sub.feed.state.borrow_mut().announce();
    assert!(paced_slot(&sub).1, "an announcement does not wake it");
    sub.feed
        .state
        .borrow_mut()
        .release_phase((phase + 1) % WATCH_FEED_PHASES);
    assert!(
        paced_slot(&sub).0,
        "another phase's point does not release it"
    );
    sub.feed.state.borrow_mut().release_phase(phase);
    assert_eq!(
        paced_slot(&sub),
        (false, false, phase),
        "released and woken"
    );
    assert!(matches!(
        poll_as(&mut sub, 1 << 20, &sel),
        Poll::Ready(Ok((12, _)))
    ));
    // Released with nothing new: it waits on the feed and reads the next line at once.
    sub.feed.state.borrow_mut().release_phase(phase);
    assert!(poll_as(&mut sub, 1 << 20, &sel).is_pending());
    assert_eq!(paced_slot(&sub), (false, true, phase));
    {
        let mut st = sub.feed.state.borrow_mut();
        st.push(put(13, cm("a", 13, "web"), Some(cm("a", 12, "web"))));
        st.announce();
    }
    assert!(matches!(
        poll_as(&mut sub, 1 << 20, &sel),
        Poll::Ready(Ok((13, _)))
    ));
}

#[test]
fn a_subscriber_behind_reads_chunk_after_chunk_without_pacing() {
    let lines = (11..11 + 600)
        .map(|r| put(r, cm("a", r, "web"), None))
        .collect();
    let mut sub = paced_sub(lines);
    let sel = everything();
    // 600 lines, at most WATCH_CHUNK_PIECES_MAX per chunk: partial reads do not pace.
    assert!(matches!(
        poll_as(&mut sub, 1 << 20, &sel),
        Poll::Ready(Ok((266, _)))
    ));
    assert!(matches!(
        poll_as(&mut sub, 1 << 20, &sel),
        Poll::Ready(Ok((522, _)))
    ));
    assert!(!paced_slot(&sub).0);
    assert!(matches!(
        poll_as(&mut sub, 1 << 20, &sel),
        Poll::Ready(Ok((610, _)))
    ));
    assert!(paced_slot(&sub).0, "caught up: paced");
}

#[test]
fn a_selective_subscriber_that_read_past_lines_is_paced_too() {
    let mut sub = paced_sub(vec![put(11, cm("a", 11, "db"), None)]);
    let web = selection(Some("tier=web"), None, Format::Json);
    assert!(poll_as(&mut sub, 1 << 20, &web).is_pending());
    assert!(paced_slot(&sub).0, "read past a line: paced");
    sub.feed.state.borrow_mut().announce();
    assert!(
        paced_slot(&sub).1,
        "not woken by the feed's next announcement, only by its phase point"
    );
}

#[test]
fn phase_lists_skip_slots_that_left_or_were_reused() {
    let mut subs = feed_of(vec![put(11, cm("a", 11, "web"), None)], 2);
    for sub in &mut subs {
        sub.paced = true;
        assert!(poll_as(sub, 1 << 20, &everything()).is_ready());
    }
    let feed = subs[0].feed.clone();
    let phase1 = paced_slot(&subs[1]).2;
    drop(subs.pop());
    // A newcomer takes the freed slot in a different phase.
    {
        let mut st = feed.state.borrow_mut();
        let i = st.free.pop().unwrap();
        st.slots[i] = Some(Slot {
            next_seq: 1,
            after: Revision(10),
            waker: Some(Waker::noop().clone()),
            phase: (phase1 + 1) % WATCH_FEED_PHASES,
            paced: true,
            index: None,
            relevant: None,
        });
    }
    feed.state.borrow_mut().release_phase(phase1);
    let st = feed.state.borrow();
    assert!(
        st.slots[1].as_ref().unwrap().paced,
        "not released by its predecessor's phase"
    );
}

struct Count(std::sync::atomic::AtomicUsize);

/// `n` wake-up counters (`Waker::from` each).
fn counters(n: usize) -> Vec<Arc<Count>> {
    (0..n)
        .map(|_| Arc::new(Count(AtomicUsize::new(0))))
        .collect()
}

fn woken(counts: &[Arc<Count>]) -> Vec<usize> {
    counts.iter().map(|c| c.0.load(Ordering::Relaxed)).collect()
}

impl std::task::Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn an_announcement_wakes_each_waiting_subscriber_once() {
    let mut subs = feed_of(Vec::new(), 3);
    let counts = counters(3);
    for (sub, count) in subs.iter_mut().zip(&counts).take(2) {
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        // Polled twice: listed once.
        for _ in 0..2 {
            let p = sub.poll_chunk(&mut cx, &mut Chunk::new(), 1 << 20, &everything());
            assert!(p.is_pending());
        }
    }
    let feed = subs[0].feed.clone();
    assert_eq!(feed.state.borrow().waiting, [0, 1]);
    feed.state
        .borrow_mut()
        .push(put(11, cm("a", 11, "web"), None));
    feed.state.borrow_mut().announce();
    assert_eq!(woken(&counts), [1, 1, 0], "the third never waited");
    assert!(feed.state.borrow().waiting.is_empty());
    feed.state.borrow_mut().announce();
    assert_eq!(woken(&counts), [1, 1, 0], "woken once per wait");
}

/// A feed (empty, nothing announced) with one unpaced subscriber per selection, each
/// joined with its selection's index key, as `Subscription::join` does.
fn indexed_feed(sels: &[&Selection]) -> Vec<Subscription> {
    let feed = Rc::new(Feed {
        state: RefCell::new(state()),
    });
    sels.iter()
        .map(|sel| {
            let i = feed
                .state
                .borrow_mut()
                .add_slot(Revision(10), 0, sel.index_key());
            SUBSCRIBERS.fetch_add(1, Ordering::Relaxed);
            unpaced(feed.clone(), i)
        })
        .collect()
}

/// Pulls `line` into `feed` as its task does: marked for the indexed watches, announced.
fn pull_marked(feed: &Feed, line: Line) {
    let mut st = feed.state.borrow_mut();
    st.push_marked(line);
    st.announce();
}

/// Polls each subscriber with its own counting waker until it waits.
fn wait_all(subs: &mut [Subscription], sels: &[&Selection], counts: &[Arc<Count>]) {
    for ((sub, sel), count) in subs.iter_mut().zip(sels).zip(counts) {
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        while sub
            .poll_chunk(&mut cx, &mut Chunk::new(), 1 << 20, sel)
            .is_ready()
        {}
    }
}

#[test]
fn index_keys_are_a_selection_s_exact_requirement() {
    let label = |k: &str| Indexed::Label(k.to_string());
    let key = |labels: Option<&str>, name: Option<&str>| {
        selection(labels, name, Format::Json).index_key()
    };
    assert_eq!(
        key(Some("tier=web"), None),
        Some((label("tier"), "web".into()))
    );
    assert_eq!(
        key(Some("a!=1,tier in (db)"), None),
        Some((label("tier"), "db".into()))
    );
    assert_eq!(key(Some("tier in (db,web)"), None), None);
    assert_eq!(key(Some("tier!=web,!x"), None), None);
    assert_eq!(key(None, None), None);
    assert_eq!(
        key(Some("tier=web"), Some("b")),
        Some((Indexed::Name, "b".into()))
    );
    let pods_strategy = keel_strategy::strategy("", "pods");
    let pods = Filter::parse(
        None,
        Some("status.phase!=Failed,spec.nodeName=n1"),
        pods_strategy,
    );
    assert_eq!(
        pods.unwrap().exact_requirement(),
        Some((
            Indexed::Field {
                of: pods_strategy.into(),
                path: "spec.nodeName".into()
            },
            "n1".into()
        ))
    );
    // What the index reads is what the selectors compare.
    let unscheduled = json!({"metadata": {"name": "p"}, "spec": {}});
    let (field, value) = Filter::parse(None, Some("spec.nodeName="), pods_strategy)
        .unwrap()
        .exact_requirement()
        .unwrap();
    assert_eq!(value, "");
    assert_eq!(field.value_of(&unscheduled).as_deref(), Some(""));
    let odd = json!({"metadata": {"name": "c", "labels": {"tier": 7}}});
    assert_eq!(label("tier").value_of(&odd).as_deref(), Some(""));
    assert_eq!(label("app").value_of(&odd), None);
}

#[test]
fn indexed_watches_are_woken_only_by_lines_for_them() {
    let web = selection(Some("tier=web"), None, Format::Json);
    let db = selection(Some("tier=db,x!=1"), None, Format::Json);
    let sels = [&web, &db, &everything()];
    let mut subs = indexed_feed(&sels);
    let counts = counters(3);
    wait_all(&mut subs, &sels, &counts);
    let feed = subs[0].feed.clone();
    let pull = |line: Line| pull_marked(&feed, line);
    pull(put(11, cm("a", 11, "db"), None));
    assert_eq!(
        woken(&counts),
        [0, 1, 1],
        "web is not woken for a db object"
    );
    wait_all(&mut subs, &sels, &counts);
    // a moves from db to web: its previous object concerns db, its new one web.
    pull(put(12, cm("a", 12, "web"), Some(cm("a", 11, "db"))));
    assert_eq!(woken(&counts), [1, 2, 2]);
    let ev = |t: &str, rv: u64| (t.to_string(), "a".to_string(), rv.to_string());
    let Poll::Ready(Ok((_, chunk))) = poll_as(&mut subs[0], 1 << 20, &web) else {
        panic!("web's event expected");
    };
    assert_eq!(
        events(&chunk),
        [ev("ADDED", 12)],
        "line 11 was passed unread"
    );
    let Poll::Ready(Ok((_, chunk))) = poll_as(&mut subs[1], 1 << 20, &db) else {
        panic!("db's event expected");
    };
    assert_eq!(events(&chunk), [ev("DELETED", 12)]);
    wait_all(&mut subs, &sels, &counts);
    for rev in 13..20 {
        pull(put(rev, cm("b", rev, "web"), None));
    }
    assert_eq!(woken(&counts), [2, 2, 3], "db slept through web's lines");
    assert_eq!(
        subs[1].caught_up_to(),
        Some(Revision(10)),
        "db has been sent all it selects up to the feed's head"
    );
    assert!(feed.state.borrow().waiting.contains(&1), "db still waits");
    // Leaving takes the watch out of the index.
    subs.remove(1);
    assert!(!feed.state.borrow().index[&Indexed::Label("tier".into())].contains_key("db"));
}

/// Watches of one name (single-name, or a `metadata.name` field selector, as the
/// `kube-root-ca.crt` watch of every namespace's ConfigMaps) are marked from the lines' keys:
/// woken only by their names' lines, which nobody parsed for it.
#[test]
fn name_indexed_watches_are_marked_from_keys_without_parsing() {
    let info = catalog().lookup("", "v1", "configmaps").unwrap();
    let strategy = keel_strategy::strategy(info.group, info.plural);
    let root_ca = Selection::new(
        Filter::parse(None, Some("metadata.name=kube-root-ca.crt"), strategy).unwrap(),
        None,
        Encoder::new(Format::Json, info.clone()),
    );
    let single = selection(None, Some("b"), Format::Json);
    let sels = [&root_ca, &single];
    let mut subs = indexed_feed(&sels);
    let counts = counters(2);
    wait_all(&mut subs, &sels, &counts);
    let feed = subs[0].feed.clone();
    let pull = |line: Line| pull_marked(&feed, line);
    pull(put(11, cm("a", 11, "db"), None));
    assert_eq!(woken(&counts), [0, 0], "neither is woken for a");
    assert!(
        feed.state.borrow().lines.back().unwrap().more.is_none(),
        "nothing was parsed to mark the line"
    );
    pull(put(12, cm("kube-root-ca.crt", 12, "db"), None));
    assert_eq!(woken(&counts), [1, 0]);
    let ev = |t: &str, name: &str, rv: u64| (t.to_string(), name.to_string(), rv.to_string());
    let Poll::Ready(Ok((_, chunk))) = poll_as(&mut subs[0], 1 << 20, &root_ca) else {
        panic!("the root CA watch's event expected");
    };
    assert_eq!(events(&chunk), [ev("ADDED", "kube-root-ca.crt", 12)]);
    wait_all(&mut subs, &sels, &counts);
    pull(put(13, cm("b", 13, "db"), Some(cm("b", 12, "web"))));
    assert_eq!(woken(&counts), [1, 1]);
    let Poll::Ready(Ok((_, chunk))) = poll_as(&mut subs[1], 1 << 20, &single) else {
        panic!("b's event expected");
    };
    assert_eq!(events(&chunk), [ev("MODIFIED", "b", 13)]);
}

#[test]
fn an_idle_indexed_watch_does_not_hold_lines_back() {
    let web = selection(Some("tier=web"), None, Format::Json);
    let mut subs = indexed_feed(&[&web]);
    let feed = subs[0].feed.clone();
    let n = WATCH_FEED_RETAIN_EVENTS as u64 + 100;
    {
        let mut st = feed.state.borrow_mut();
        for rev in 11..11 + n {
            st.push_marked(put(rev, cm("a", rev, "db"), None));
        }
        st.announce();
        st.trim();
        assert_eq!(
            st.lines.len(),
            WATCH_FEED_RETAIN_EVENTS,
            "lines it cannot select are not kept for it"
        );
        st.push_marked(put(11 + n, cm("b", 11 + n, "web"), None));
        st.announce();
    }
    // Not lagged: every line it might select is still there.
    let Poll::Ready(Ok((rev, chunk))) = poll_as(&mut subs[0], 1 << 20, &web) else {
        panic!("the web line expected");
    };
    assert_eq!(rev, 11 + n);
    assert_eq!(events(&chunk).len(), 1);
}

#[test]
fn an_indexed_watch_reads_the_lines_pulled_before_it_joined() {
    let mut subs = feed_of(history(), 1);
    let web = selection(Some("tier=web"), None, Format::Json);
    let feed = subs[0].feed.clone();
    // Joins as `Subscription::join` does, after all of history was pulled.
    let i = feed
        .state
        .borrow_mut()
        .add_slot(Revision(10), 0, web.index_key());
    SUBSCRIBERS.fetch_add(1, Ordering::Relaxed);
    subs.push(unpaced(feed.clone(), i));
    let Poll::Ready(Ok((rev, chunk))) = poll_as(&mut subs[1], 1 << 20, &web) else {
        panic!("history expected");
    };
    assert_eq!(rev, 15);
    assert_eq!(
        events(&chunk).len(),
        4,
        "as a watch without the index sees it"
    );
}

#[test]
fn the_waiting_list_stays_bounded_while_watches_come_and_go() {
    let mut st = state();
    let waker = Waker::noop().clone();
    for _ in 0..1000 {
        // A watch joins slot 0, waits, and leaves before anything is announced.
        st.slots.resize_with(1, || None);
        st.slots[0] = Some(Slot {
            next_seq: 0,
            after: Revision(10),
            waker: None,
            phase: 0,
            paced: false,
            index: None,
            relevant: None,
        });
        st.wait(0, &waker);
        st.slots[0] = None;
    }
    assert!(st.waiting.len() <= 2, "{} entries", st.waiting.len());
}

#[test]
fn an_ended_feed_wakes_paced_subscribers_too() {
    let mut subs = feed_of(vec![put(11, cm("a", 11, "web"), None)], 2);
    let counts = counters(2);
    subs[0].paced = true;
    for (sub, count) in subs.iter_mut().zip(&counts) {
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        while sub
            .poll_chunk(&mut cx, &mut Chunk::new(), 1 << 20, &everything())
            .is_ready()
        {}
    }
    assert!(
        paced_slot(&subs[0]).0,
        "the first is paced, the second waits"
    );
    subs[0].feed.end(WatchError::Closed);
    assert_eq!(woken(&counts), [1, 1]);
    for sub in &mut subs {
        assert_eq!(poll(sub, 1 << 20), Poll::Ready(Err(WatchError::Closed)));
    }
}

#[test]
fn a_stopped_feed_leaves_the_core_s_table() {
    let key: FeedKey = (1, b"/registry/configmaps/gone/".to_vec());
    let subs = feed_of(Vec::new(), 1);
    let feed = subs[0].feed.clone();
    FEEDS.with(|f| f.borrow_mut().insert(key.clone(), Rc::downgrade(&feed)));
    let other = feed_of(Vec::new(), 1)[0].feed.clone();
    forget_feed(&key, &other);
    assert!(
        FEEDS.with(|f| f.borrow().contains_key(&key)),
        "not that feed's entry"
    );
    forget_feed(&key, &feed);
    assert!(!FEEDS.with(|f| f.borrow().contains_key(&key)));
}

#[test]
fn a_paced_subscriber_reads_the_rest_of_an_ended_feed_then_its_end() {
    let mut sub = paced_sub(vec![put(11, cm("a", 11, "web"), None)]);
    sub.feed.end(WatchError::Closed);
    assert!(matches!(poll(&mut sub, 1 << 20), Poll::Ready(Ok((11, _)))));
    assert!(!paced_slot(&sub).0, "no task is left to release it");
    assert_eq!(
        poll(&mut sub, 1 << 20),
        Poll::Ready(Err(WatchError::Closed))
    );
}
