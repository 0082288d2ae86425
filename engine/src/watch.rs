//! Watch fan-out: one shared, bounded broadcast ring of committed events and cursors into it.
//!
//! Instead of copying every event into a queue per watcher (1,000 watchers × 10,000 writes/s
//! would be 10 million queue operations a second), the engine publishes each event once into
//! a ring of `Arc<Event>`; each `Watcher` keeps a sequence number into it. The ring is the only
//! event buffer, so memory is bounded by `watch_ring_events_max` whatever the watchers do. A
//! watcher more than `watcher_backlog_events_max` events behind the head (or whose next event
//! has left the ring) is ended with `WatchError::Lagged`.
//!
//! Pushing events into the ring is what makes them visible to watchers, so `Hub::push` stamps
//! them (`Event::visible_at`, one clock read per push): the delivery latency the engine is
//! responsible for is from that stamp to the watcher receiving the event.
//!
//! A watch that starts before the ring's floor first reads history from a `HistorySource`
//! (the engine's segments on disk, the model's log) up to the floor, then switches to the ring.
//!
//! ```text
//!   revisions:  ... 90 | 91 92 93 ... 140      (ring holds events with rev > floor = 90)
//!   watch(after = 50): CatchUp reads (50, 90] from disk, then Live from the ring's first seq
//!   watch(after = 120): Live from the first event with rev > 120
//! ```

use crate::store::VisibleStamp;
use crate::{Event, Limits, Revision, WatchError};
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// Where a watcher reads events older than the ring.
pub trait HistorySource: Send + Sync {
    /// Appends to `out`, in revision order, at most `max` events with revision in
    /// `(after, upto]` and key starting with `prefix`. Returns the revision up to which the
    /// range has been read: `upto` when fewer than `max` events were appended, otherwise the
    /// revision of the last event appended.
    fn read_history(
        &self,
        prefix: &[u8],
        after: Revision,
        upto: Revision,
        max: usize,
        out: &mut Vec<Arc<Event>>,
    ) -> Result<Revision, WatchError>;

    fn compacted_revision(&self) -> Revision;
}

struct Ring {
    events: VecDeque<Arc<Event>>,
    /// Sequence number of `events[0]`.
    first_seq: u64,
    /// Every event with a revision above `floor` is in the ring or newer.
    floor: Revision,
}

impl Ring {
    fn head_seq(&self) -> u64 {
        self.first_seq + self.events.len() as u64
    }

    /// Sequence number of the first event with revision > `after` (or the head).
    fn seq_after(&self, after: Revision) -> u64 {
        let idx = self.events.partition_point(|e| e.revision() <= after);
        self.first_seq + idx as u64
    }
}

/// A watcher waiting for events: registered when it found nothing to read at the ring's head
/// (`seq` S, say); each push matches its new events against `prefix`.
struct Waiting {
    prefix: Arc<[u8]>,
    /// Taken (and woken) when an event under `prefix` is pushed.
    waker: Option<Waker>,
    /// The sequence number of the first pushed event under `prefix`, once there is one:
    /// the events in `[S, matched_at)` do not concern the watcher.
    matched_at: Option<u64>,
}

/// Prefix tests one push may make to decide whom to wake; beyond it every waiting watcher
/// is woken to look for itself (as if each event matched everyone), so a push of many
/// events among many watchers holds the ring's write lock for bounded time.
const WAKE_MATCH_CHECKS_MAX: usize = 1 << 16;

/// Wakes the wakers `Hub::push` took.
pub fn wake(wakers: Vec<Waker>) {
    for w in wakers {
        w.wake();
    }
}

/// The broadcast hub. One per store.
pub struct Hub {
    ring: RwLock<Ring>,
    /// Watchers waiting for events, by id (see `Waiting`). Lock order: `ring`, then
    /// `wakers`.
    wakers: Mutex<HashMap<u64, Waiting>>,
    ring_events_max: usize,
    backlog_events_max: usize,
    watchers_max: usize,
    watchers: AtomicUsize,
    next_watcher_id: AtomicU64,
    closed: AtomicBool,
}

impl Hub {
    /// `floor`: the newest revision already durable when the hub starts (history below it
    /// comes from the `HistorySource`).
    pub fn new(limits: &Limits, floor: Revision) -> Hub {
        Hub {
            ring: RwLock::new(Ring {
                events: VecDeque::with_capacity(limits.watch_ring_events_max.min(1 << 16)),
                first_seq: 0,
                floor,
            }),
            wakers: Mutex::new(HashMap::new()),
            ring_events_max: limits.watch_ring_events_max.max(1),
            backlog_events_max: limits.watcher_backlog_events_max.max(1),
            watchers_max: limits.watchers_max,
            watchers: AtomicUsize::new(0),
            next_watcher_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
        }
    }

    /// Publishes committed events and wakes the watchers they concern.
    pub fn publish(&self, events: impl IntoIterator<Item = Arc<Event>>) {
        let woken = self.push(events);
        wake(woken);
    }

    /// Appends committed events to the ring and takes the wakers of the waiting watchers
    /// they concern, for the caller to `wake` (after acknowledging its writers, say). Callers
    /// push in revision order, one at a time (the sequencer holds its lock). This is the
    /// instant the events become visible to watchers: each is stamped with it
    /// (`Event::visible_at`, one clock read per push, taken under the ring's write lock so no
    /// watcher sees an unstamped event).
    ///
    /// Waiting watchers are matched against the events under the same write lock, so a
    /// watcher that reads the ring sees every event in it already matched: one that is still
    /// waiting knows that nothing since it began waiting concerns it (`take_skip`), and skips
    /// ahead instead of scanning (or lagging behind) a busy store's other keys.
    #[must_use = "the wakers must be woken"]
    pub fn push(&self, events: impl IntoIterator<Item = Arc<Event>>) -> Vec<Waker> {
        let mut ring = self.ring.write();
        let mut waiting = self.wakers.lock();
        let first_new = ring.head_seq();
        let stamp = VisibleStamp::now();
        // The pushed events, kept for matching when someone waits: a push larger than the
        // ring evicts some of its own events before they could be matched there.
        let mut new = Vec::new();
        for e in events {
            e.set_visible_at(stamp);
            if let Some(last) = ring.events.back() {
                assert!(
                    e.revision() > last.revision(),
                    "events published out of order: {} after {}",
                    e.revision(),
                    last.revision()
                );
            }
            if !waiting.is_empty() {
                new.push(e.clone());
            }
            ring.events.push_back(e);
            if ring.events.len() > self.ring_events_max {
                let old = ring.events.pop_front().expect("ring not empty");
                ring.floor = old.revision();
                ring.first_seq += 1;
            }
        }
        if new.is_empty() {
            return Vec::new();
        }
        let filter = waiting.len().saturating_mul(new.len()) <= WAKE_MATCH_CHECKS_MAX;
        let mut woken = Vec::new();
        for w in waiting.values_mut() {
            if w.matched_at.is_some() {
                continue;
            }
            let matched = if filter {
                new.iter().position(|e| has_prefix(e.kv.key(), &w.prefix))
            } else {
                Some(0) // too much to match: wake it to look for itself
            };
            if let Some(i) = matched {
                // If that event has already left the ring, the watcher is ended as lagged.
                w.matched_at = Some(first_new + i as u64);
                woken.extend(w.waker.take());
            }
        }
        woken
    }

    /// Wakes every waiting watcher.
    pub fn wake_all(&self) {
        let woken: Vec<Waker> = {
            let mut waiting = self.wakers.lock();
            waiting.drain().filter_map(|(_, w)| w.waker).collect()
        };
        wake(woken);
    }

    /// Registers watcher `id`, whose next event to read is the ring's head, as waiting for
    /// events under `prefix`. The caller holds the ring's read lock and has checked that its
    /// position is the head, so every later push matches against it.
    fn wait_for_events(&self, id: u64, prefix: &Arc<[u8]>, waker: &Waker) {
        self.wakers.lock().insert(
            id,
            Waiting {
                prefix: prefix.clone(),
                waker: Some(waker.clone()),
                matched_at: None,
            },
        );
    }

    /// For watcher `id` reading the ring whose head is `head` (caller holds the ring's read
    /// lock): the position it may skip to because the events before it were matched against
    /// its prefix and did not concern it, and ends its wait.
    fn take_skip(&self, id: u64, head: u64) -> Option<u64> {
        let w = self.wakers.lock().remove(&id)?;
        Some(w.matched_at.unwrap_or(head))
    }

    /// Ends every watcher with `WatchError::Closed`.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.wake_all();
    }

    pub fn watcher_count(&self) -> usize {
        self.watchers.load(Ordering::Relaxed)
    }

    /// Opens a watcher on `prefix` for changes after `after`.
    pub fn watch(
        self: &Arc<Self>,
        source: Arc<dyn HistorySource>,
        prefix: &[u8],
        after: Revision,
    ) -> Result<Watcher, crate::Error> {
        let compacted = source.compacted_revision();
        if after < compacted {
            return Err(crate::Error::Compacted {
                requested: after,
                compacted,
            });
        }
        let n = self.watchers.fetch_add(1, Ordering::SeqCst);
        if n >= self.watchers_max {
            self.watchers.fetch_sub(1, Ordering::SeqCst);
            return Err(crate::Error::TooManyWatchers {
                max: self.watchers_max,
            });
        }
        let state = {
            let ring = self.ring.read();
            if after >= ring.floor {
                WatchState::Live {
                    next_seq: ring.seq_after(after),
                }
            } else {
                WatchState::CatchUp { after }
            }
        };
        Ok(Watcher {
            hub: self.clone(),
            source,
            prefix: Arc::from(prefix),
            id: self.next_watcher_id.fetch_add(1, Ordering::Relaxed),
            state,
        })
    }
}

/// A watcher's position. On any error the watcher moves to `Ended` and keeps returning it.
#[derive(Debug)]
enum WatchState {
    /// Reading history older than the ring from the `HistorySource`, after this revision.
    CatchUp {
        after: Revision,
    },
    /// Reading the ring from this sequence number.
    Live {
        next_seq: u64,
    },
    Ended(WatchError),
}

/// A stream of events for one prefix. Dropping it releases its watcher slot.
pub struct Watcher {
    hub: Arc<Hub>,
    source: Arc<dyn HistorySource>,
    prefix: Arc<[u8]>,
    id: u64,
    state: WatchState,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.hub.watchers.fetch_sub(1, Ordering::SeqCst);
        self.hub.wakers.lock().remove(&self.id);
    }
}

struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

impl Watcher {
    /// Appends available events (at most `WATCH_BATCH_EVENTS_MAX`) to `out` without waiting.
    /// Returns how many were appended.
    pub fn try_batch(&mut self, out: &mut Vec<Arc<Event>>) -> Result<usize, WatchError> {
        self.fill_with(&mut |e: &Arc<Event>| out.push(e.clone()))
    }

    /// Polls for a batch: `Ready(Ok(()))` once at least one event was appended to `out`.
    pub fn poll_batch(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<Arc<Event>>,
    ) -> Poll<Result<(), WatchError>> {
        self.poll_visit(cx, |e| out.push(e.clone()))
            .map(|r| r.map(|_| ()))
    }

    /// Like `poll_batch`, but hands each event to `visit` by reference instead of cloning it
    /// into a vector: live events are visited in place in the hub's ring (under its read lock,
    /// so `visit` must be quick), which spares a thousand watchers of one collection a
    /// thousand reference-count updates per event on a cache line they all share.
    /// `Ready(Ok(n))` once `n > 0` events were visited.
    pub fn poll_visit(
        &mut self,
        cx: &mut Context<'_>,
        mut visit: impl FnMut(&Arc<Event>),
    ) -> Poll<Result<usize, WatchError>> {
        loop {
            match self.fill_with(&mut visit) {
                Err(e) => return Poll::Ready(Err(e)),
                Ok(n) if n > 0 => return Poll::Ready(Ok(n)),
                Ok(_) => {}
            }
            let seq_seen = match self.state {
                WatchState::Live { next_seq } => next_seq,
                _ => continue,
            };
            {
                // Registered under the ring's read lock at the head: no push comes between
                // what this watcher has read and what it will be matched against.
                let ring = self.hub.ring.read();
                if ring.head_seq() == seq_seen {
                    self.hub.wait_for_events(self.id, &self.prefix, cx.waker());
                    // Checked after registering: a close after this check wakes it.
                    if !self.hub.closed.load(Ordering::SeqCst) {
                        return Poll::Pending;
                    }
                }
            }
        }
    }

    /// Blocks the thread until at least one event is appended to `out` or `timeout` passes.
    /// Returns whether events were appended.
    pub fn next_batch_timeout(
        &mut self,
        out: &mut Vec<Arc<Event>>,
        timeout: Duration,
    ) -> Result<bool, WatchError> {
        let deadline = Instant::now() + timeout;
        let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            match self.poll_batch(&mut cx, out) {
                Poll::Ready(Ok(())) => return Ok(true),
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {
                    let now = Instant::now();
                    if now >= deadline {
                        self.hub.wakers.lock().remove(&self.id);
                        return Ok(false);
                    }
                    std::thread::park_timeout(deadline - now);
                }
            }
        }
    }

    /// Ends the watcher with `e` (every later poll returns it too).
    fn end(&mut self, e: WatchError) -> Result<usize, WatchError> {
        self.state = WatchState::Ended(e.clone());
        Err(e)
    }

    /// Visits available events (at most `WATCH_BATCH_EVENTS_MAX`); returns how many.
    fn fill_with(&mut self, visit: &mut dyn FnMut(&Arc<Event>)) -> Result<usize, WatchError> {
        if self.hub.closed.load(Ordering::SeqCst) {
            return self.end(WatchError::Closed);
        }
        let max = crate::limits::WATCH_BATCH_EVENTS_MAX;
        loop {
            match self.state {
                WatchState::Ended(ref e) => return Err(e.clone()),
                WatchState::CatchUp { after } => {
                    let floor = {
                        let ring = self.hub.ring.read();
                        if after >= ring.floor {
                            self.state = WatchState::Live {
                                next_seq: ring.seq_after(after),
                            };
                            continue;
                        }
                        ring.floor
                    };
                    let compacted = self.source.compacted_revision();
                    if after < compacted {
                        return self.end(WatchError::Compacted {
                            requested: after,
                            compacted,
                        });
                    }
                    let mut history = Vec::new();
                    let reached = match self.source.read_history(
                        &self.prefix,
                        after,
                        floor,
                        max,
                        &mut history,
                    ) {
                        Ok(r) => r,
                        Err(e) => return self.end(e),
                    };
                    assert!(
                        reached > after || reached == floor,
                        "history made no progress"
                    );
                    self.state = WatchState::CatchUp { after: reached };
                    if !history.is_empty() {
                        history.iter().for_each(&mut *visit);
                        return Ok(history.len());
                    }
                }
                WatchState::Live { next_seq } => {
                    let ring = self.hub.ring.read();
                    let head = ring.head_seq();
                    let next_seq = match self.hub.take_skip(self.id, head) {
                        Some(skip) => next_seq.max(skip),
                        None => next_seq,
                    };
                    if next_seq < ring.first_seq {
                        let behind = head - next_seq;
                        drop(ring);
                        return self.end(WatchError::Lagged {
                            behind_events: behind,
                            max: self.hub.backlog_events_max as u64,
                        });
                    }
                    let behind = head - next_seq;
                    if behind > self.hub.backlog_events_max as u64 {
                        drop(ring);
                        return self.end(WatchError::Lagged {
                            behind_events: behind,
                            max: self.hub.backlog_events_max as u64,
                        });
                    }
                    let mut seq = next_seq;
                    let mut appended = 0;
                    let start = (seq - ring.first_seq) as usize;
                    // Bounded scan per lock hold: a watcher whose prefix matches little must
                    // not hold the ring (and so every writer) while it skips a long backlog.
                    let end = (start + crate::limits::WATCH_SCAN_EVENTS_MAX).min(ring.events.len());
                    for e in ring.events.range(start..end) {
                        seq += 1;
                        if has_prefix(e.kv.key(), &self.prefix) {
                            visit(e);
                            appended += 1;
                            if appended >= max {
                                break;
                            }
                        }
                    }
                    drop(ring);
                    self.state = WatchState::Live { next_seq: seq };
                    if appended == 0 && seq < head {
                        continue; // more to skip: take the lock again
                    }
                    return Ok(appended);
                }
            }
        }
    }
}

impl crate::store::EventStream for Watcher {
    fn poll_visit(
        &mut self,
        cx: &mut Context<'_>,
        visit: &mut dyn FnMut(&Arc<Event>),
    ) -> Poll<Result<usize, WatchError>> {
        Watcher::poll_visit(self, cx, visit)
    }

    fn try_batch(&mut self, out: &mut Vec<Arc<Event>>) -> Result<usize, WatchError> {
        Watcher::try_batch(self, out)
    }

    fn next_batch_timeout(
        &mut self,
        out: &mut Vec<Arc<Event>>,
        timeout: Duration,
    ) -> Result<bool, WatchError> {
        Watcher::next_batch_timeout(self, out, timeout)
    }

    fn poll_batch(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<Arc<Event>>,
    ) -> Poll<Result<(), WatchError>> {
        Watcher::poll_batch(self, cx, out)
    }
}

/// `key.starts_with(prefix)`, without a `memcmp` call for the usual short prefix (every watcher
/// tests every event of the ring).
#[inline]
fn has_prefix(key: &[u8], prefix: &[u8]) -> bool {
    match (key.first_chunk::<16>(), prefix.len()) {
        (Some(k), n @ 1..=16) => {
            let mut p = [0u8; 16];
            p[..n].copy_from_slice(prefix);
            let mask = u128::MAX << (8 * (16 - n));
            (u128::from_be_bytes(*k) ^ u128::from_be_bytes(p)) & mask == 0
        }
        _ => key.starts_with(prefix),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn has_prefix_agrees_with_starts_with() {
        let keys: [&[u8]; 5] = [
            b"",
            b"/a",
            b"/core/pods/ns/name-0001",
            b"/core/pods/",
            b"/core/podsX/ns/long-name",
        ];
        let prefixes: [&[u8]; 7] = [
            b"",
            b"/",
            b"/core/pods/",
            b"/core/pods/ns/name-0",
            b"/core/pods/ns/na",
            b"/core/podsX",
            b"x",
        ];
        for k in keys {
            for p in prefixes {
                assert_eq!(super::has_prefix(k, p), k.starts_with(p), "{k:?} {p:?}");
            }
        }
    }

    use crate::{
        Engine, Event, EventKind, KeyValue, Limits, MemStore, Options, Revision, Store, StoreExt,
        SyncMode,
    };
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    const WAIT: Duration = Duration::from_secs(10);

    fn open_engine(dir: &std::path::Path) -> Engine {
        let mut opts = Options::new(dir);
        opts.shards = 2;
        opts.sync = SyncMode::Always;
        opts.maintenance_interval = None;
        Engine::open(opts).expect("Engine::open")
    }

    /// Creates `key` (value `v`) and waits for it to be acknowledged.
    fn create(store: &impl Store, key: &str) {
        store.create(key.as_bytes(), b"v").wait().expect("create");
    }

    /// Writes `n` keys one at a time; each received event must have been stamped visible
    /// after its write was submitted and no later than the watcher received it.
    fn assert_stamped_between_submit_and_receive(store: &impl Store, n: usize) {
        let mut w = store
            .watch(b"/w/", store.current_revision())
            .expect("watch");
        let mut out: Vec<Arc<Event>> = Vec::new();
        for i in 0..n {
            let submitted = Instant::now();
            let written = store
                .create(format!("/w/k{i}").as_bytes(), b"v")
                .wait()
                .expect("create");
            out.clear();
            assert!(w.next_batch_timeout(&mut out, WAIT).expect("watch batch"));
            let received = Instant::now();
            assert_eq!(out.len(), 1);
            assert_eq!(out[0].revision(), written.revision);
            let visible = out[0]
                .visible_at()
                .expect("a received event has visible_at");
            assert!(
                visible >= submitted,
                "visible before the write was submitted"
            );
            assert!(visible <= received, "visible after the watcher received it");
        }
    }

    #[test]
    fn engine_events_are_stamped_visible_between_submit_and_receive() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = open_engine(dir.path());
        assert_stamped_between_submit_and_receive(&engine, 20);
        engine.close().expect("close");
    }

    #[test]
    fn model_events_are_stamped_visible_between_submit_and_receive() {
        assert_stamped_between_submit_and_receive(&MemStore::new(Limits::default()), 20);
    }

    #[test]
    fn history_read_back_from_disk_has_no_visible_at() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = open_engine(dir.path());
        for i in 0..5 {
            create(&engine, &format!("/w/k{i}"));
        }
        engine.close().expect("close");
        let engine = open_engine(dir.path());
        let mut w = engine.watch(b"/w/", Revision::ZERO).expect("watch");
        let mut out = Vec::new();
        assert!(w.next_batch_timeout(&mut out, WAIT).expect("watch batch"));
        assert_eq!(out.len(), 5);
        assert!(out.iter().all(|e| e.visible_at().is_none()));
        drop(w);
        engine.close().expect("close");
    }

    /// Collects `n` events with `poll_visit`, parking between polls.
    fn visit_n(w: &mut super::Watcher, n: usize) -> Vec<(u64, Vec<u8>)> {
        let waker = std::task::Waker::from(Arc::new(super::ThreadWaker(std::thread::current())));
        let mut cx = std::task::Context::from_waker(&waker);
        let deadline = Instant::now() + WAIT;
        let mut got = Vec::new();
        while got.len() < n && Instant::now() < deadline {
            let polled = w.poll_visit(&mut cx, |e| {
                got.push((e.revision().get(), e.kv.key().to_vec()));
            });
            match polled {
                std::task::Poll::Ready(r) => assert!(r.expect("visit") > 0),
                std::task::Poll::Pending => std::thread::park_timeout(Duration::from_millis(50)),
            }
        }
        got
    }

    #[test]
    fn visiting_sees_what_batches_see_from_history_and_live() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = open_engine(dir.path());
        for i in 0..5 {
            create(&engine, &format!("/w/old{i}"));
            create(&engine, &format!("/x/other{i}"));
        }
        engine.close().expect("close");
        // After a reopen the first five come from disk (catch-up), the rest live.
        let engine = open_engine(dir.path());
        let mut batched = engine.watch(b"/w/", Revision::ZERO).expect("watch");
        let mut visited = engine.watcher(b"/w/", Revision::ZERO).expect("watch");
        for i in 0..5 {
            create(&engine, &format!("/w/new{i}"));
            create(&engine, &format!("/x/more{i}"));
        }
        let mut out = Vec::new();
        while out.len() < 10 {
            assert!(batched.next_batch_timeout(&mut out, WAIT).expect("batch"));
        }
        let want: Vec<(u64, Vec<u8>)> = out
            .iter()
            .map(|e| (e.revision().get(), e.kv.key().to_vec()))
            .collect();
        assert!(want.iter().all(|(_, k)| k.starts_with(b"/w/")));
        assert_eq!(visit_n(&mut visited, 10), want);
        drop((batched, visited));
        engine.close().expect("close");
    }

    #[test]
    fn visible_at_survives_clone_and_is_ignored_by_equality() {
        let hub = super::Hub::new(&Limits::default(), Revision::ZERO);
        let kv = KeyValue::from_parts(b"/w/a", b"v", Revision(1));
        let unpublished = Event::new(EventKind::Put, kv.clone(), None);
        assert_eq!(unpublished.visible_at(), None);
        let before = Instant::now();
        let published = Arc::new(Event::new(EventKind::Put, kv, None));
        super::wake(hub.push([published.clone()]));
        let at = published.visible_at().expect("pushed events are stamped");
        assert!(at >= before && at <= Instant::now());
        let copy = (*published).clone();
        assert_eq!(copy.visible_at(), Some(at));
        assert_eq!(copy, unpublished);
    }

    /// A history source for hubs that start at revision 0 with nothing older.
    struct NoHistory;

    impl super::HistorySource for NoHistory {
        fn read_history(
            &self,
            _prefix: &[u8],
            _after: Revision,
            upto: Revision,
            _max: usize,
            _out: &mut Vec<Arc<Event>>,
        ) -> Result<Revision, crate::WatchError> {
            Ok(upto)
        }

        fn compacted_revision(&self) -> Revision {
            Revision::ZERO
        }
    }

    /// Counts how often it is woken.
    struct CountingWaker(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    struct Harness {
        hub: Arc<super::Hub>,
        rev: u64,
    }

    impl Harness {
        /// A hub whose ring keeps `ring` events and lets a watcher fall `ring` behind.
        fn new(ring: usize) -> Harness {
            let limits = Limits {
                watch_ring_events_max: ring,
                watcher_backlog_events_max: ring,
                ..Limits::default()
            };
            Harness {
                hub: Arc::new(super::Hub::new(&limits, Revision::ZERO)),
                rev: 0,
            }
        }

        fn watch(&self, prefix: &[u8]) -> super::Watcher {
            self.hub
                .watch(Arc::new(NoHistory), prefix, Revision::ZERO)
                .expect("watch")
        }

        /// Publishes one event per key, in one push.
        fn publish(&mut self, keys: &[String]) {
            let events: Vec<Arc<Event>> = keys
                .iter()
                .map(|k| {
                    self.rev += 1;
                    let kv = KeyValue::from_parts(k.as_bytes(), b"v", Revision(self.rev));
                    Arc::new(Event::new(EventKind::Put, kv, None))
                })
                .collect();
            self.hub.publish(events);
        }
    }

    /// Polls `w` once with a counting waker; the revisions it got, or `None` if pending.
    fn poll_once(
        w: &mut super::Watcher,
        waker: &Arc<CountingWaker>,
    ) -> Option<Result<Vec<u64>, crate::WatchError>> {
        let waker = std::task::Waker::from(waker.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        let mut got = Vec::new();
        match w.poll_visit(&mut cx, |e| got.push(e.revision().get())) {
            std::task::Poll::Ready(Ok(_)) => Some(Ok(got)),
            std::task::Poll::Ready(Err(e)) => Some(Err(e)),
            std::task::Poll::Pending => None,
        }
    }

    fn keys(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}")).collect()
    }

    fn counting() -> Arc<CountingWaker> {
        Arc::new(CountingWaker(std::sync::atomic::AtomicUsize::new(0)))
    }

    fn wakes(w: &Arc<CountingWaker>) -> usize {
        w.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    #[test]
    fn a_waiting_watcher_is_woken_only_by_its_own_keys() {
        let mut h = Harness::new(1024);
        let mut w = h.watch(b"/a/");
        let waker = counting();
        assert!(poll_once(&mut w, &waker).is_none());
        h.publish(&keys("/b/", 10));
        assert_eq!(wakes(&waker), 0, "events under another prefix wake nobody");
        h.publish(&[keys("/b/x", 3), keys("/a/", 2)].concat());
        assert_eq!(wakes(&waker), 1, "a push with its keys wakes it once");
        assert_eq!(poll_once(&mut w, &waker), Some(Ok(vec![14, 15])));
    }

    #[test]
    fn a_waiting_watcher_does_not_lag_behind_other_keys() {
        // A ring of 64 events; 10,000 events under another prefix pass through it while the
        // watcher waits, unpolled: it was never behind on anything of its own.
        let mut h = Harness::new(64);
        let mut w = h.watch(b"/a/");
        let waker = counting();
        assert!(poll_once(&mut w, &waker).is_none());
        for _ in 0..1000 {
            h.publish(&keys("/b/", 10));
        }
        h.publish(&keys("/a/", 1));
        assert_eq!(poll_once(&mut w, &waker), Some(Ok(vec![10_001])));
        assert!(poll_once(&mut w, &waker).is_none(), "waiting again");
        // Polled without a wake (a timer, say) after more foreign events: still nothing.
        h.publish(&keys("/b/", 200));
        assert!(poll_once(&mut w, &waker).is_none());
        h.publish(&keys("/a/", 1));
        assert_eq!(poll_once(&mut w, &waker), Some(Ok(vec![10_202])));
    }

    #[test]
    fn a_woken_watcher_that_does_not_read_still_lags() {
        let mut h = Harness::new(64);
        let mut w = h.watch(b"/a/");
        let waker = counting();
        assert!(poll_once(&mut w, &waker).is_none());
        h.publish(&keys("/a/", 1));
        assert_eq!(wakes(&waker), 1);
        // Its event leaves the ring before it reads it: that is a real lag.
        for _ in 0..10 {
            h.publish(&keys("/b/", 10));
        }
        assert!(matches!(
            poll_once(&mut w, &waker),
            Some(Err(crate::WatchError::Lagged { .. }))
        ));
    }

    /// Regression: a push larger than the ring evicted some of its own events before they
    /// were matched, and waiting watchers were told to skip to the first event left, so one
    /// whose event was evicted lost it silently instead of being ended as lagged. (A watcher
    /// none of whose events were evicted still skips: see the test above.)
    #[test]
    fn a_push_that_overflows_the_ring_lags_instead_of_skipping() {
        let mut h = Harness::new(8);
        let mut w = h.watch(b"/a/");
        let waker = counting();
        assert!(poll_once(&mut w, &waker).is_none());
        // Its event is the first of 20 pushed at once into a ring of 8.
        h.publish(&[keys("/a/", 1), keys("/b/", 19)].concat());
        assert_eq!(wakes(&waker), 1);
        assert!(matches!(
            poll_once(&mut w, &waker),
            Some(Err(crate::WatchError::Lagged { .. }))
        ));
    }

    #[test]
    fn pushes_too_big_to_match_wake_everyone_and_lose_nothing() {
        let mut h = Harness::new(1 << 17);
        let mut ws: Vec<_> = (0..20)
            .map(|i| h.watch(format!("/p{i}/").as_bytes()))
            .collect();
        let wakers: Vec<_> = ws.iter().map(|_| counting()).collect();
        for (w, k) in ws.iter_mut().zip(&wakers) {
            assert!(poll_once(w, k).is_none());
        }
        // 20 waiting watchers × 4,000 new events is past `WAKE_MATCH_CHECKS_MAX`.
        const { assert!(20 * 4000 > super::WAKE_MATCH_CHECKS_MAX) };
        h.publish(&[keys("/q/", 3999), keys("/p7/", 1)].concat());
        assert!(wakers.iter().all(|k| wakes(k) == 1), "everyone is woken");
        for (i, (w, k)) in ws.iter_mut().zip(&wakers).enumerate() {
            let got = poll_once(w, k);
            if i == 7 {
                assert_eq!(got, Some(Ok(vec![4000])));
            } else {
                assert!(got.is_none(), "watcher {i} got {got:?}");
            }
        }
    }
}
