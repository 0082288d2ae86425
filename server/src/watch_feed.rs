//! Shared watch fan-out: on each core, one engine watcher per collection prefix feeds every
//! watch of that prefix, whatever its selectors and representation.
//!
//! The feed's task pulls events from the engine, encodes each as its JSON watch line
//! (`{"type":..,"object":..}\n`) once, and appends the line to a bounded, core-local log.
//! Subscribers (watch streams on the same core) keep a cursor into the log and hand the lines
//! to the connection as shared pieces of one chunk, so an event costs one encoding per core
//! and, per watcher, one reference count and one iovec instead of an allocation and a copy.
//!
//! A watch with selectors or of one name, or in protobuf or Table form, reads the same log:
//! the first such reader of a line parses its objects once, each reader tests its own
//! selection on the parsed objects (an object entering or leaving it is ADDED or DELETED for
//! that watch), and the encoding of each (representation, event type) is made once, by its
//! first reader, and shared by the rest. So a thousand kubelet-like watches with a thousand
//! different `spec.nodeName` selectors cost one parse per event per core, not a thousand.
//!
//! Index: a watch whose selection pins a value (its single name, a field term `f=v`, a label
//! requirement `k=v` or `k in (v)`: `Selection::index_key`) is also filed under that field and
//! value. The task marks each line it pulls for the indexed watches whose value the line's
//! new or previous object has (one lookup per indexed field, not one test per watch); an
//! indexed watch keeps the span of lines marked for it since its last read (`relevant`),
//! passes every other line unread, and is woken by an announcement only when the span has an
//! announced line. The index only rules lines out: marked lines are still tested against the
//! whole selection. Lines pulled before a watch joined were not marked for it, so it reads
//! them all.
//!
//! Pacing: the task announces lines as it pulls them. A subscriber that was waiting reads
//! them at once (so a lone event after a quiet period goes out immediately), but once it has
//! read everything it reads again only at its next *phase point*: every
//! `WATCH_FEED_INTERVAL`, at one of `WATCH_FEED_PHASES` offsets drawn at random when it joins.
//! Under load each watcher so gets one chunk (one write) and one wake-up per interval instead
//! of one per commit, and the watchers' writes are spread evenly over the interval rather than
//! all made at once (a burst the last watchers of which would wait for the whole round's
//! work). One timer per feed, ticking at each phase point while anyone is paced, releases the
//! subscribers of that phase.
//!
//! Bounds: the log keeps at most `WATCH_FEED_EVENTS_MAX` lines and `WATCH_FEED_BYTES_MAX`
//! bytes. A subscriber whose next line was dropped (it fell that far behind) is ended with
//! `WatchError::Lagged` (a 410 ERROR event), so a slow watcher never holds the others back
//! or grows memory. Lines every subscriber has passed are dropped too, except the newest
//! `WATCH_FEED_RETAIN_EVENTS`, which let watches that start slightly in the past join.
//!
//! ```text
//!   log:   first_seq ......... announced ..... head      (seq numbers of lines)
//!   sub:            next_seq ^                           reads [next_seq, announced)
//!   indexed sub:    next_seq ^   relevant (first..last)  reads from max(next_seq, first)
//!   floor: every event with revision > floor is in the log or still to come
//! ```

use crate::app::App;
use crate::registry::Indexed;
use crate::respond::Format;
use crate::watch::{as_happened, event_object, event_type, json_event_line, Selection};
use keel_engine::{Event, EventKind, Revision, Store, WatchError, Watcher};
use keel_http::{Chunk, Piece};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Least time between two reads of the feed by one busy subscriber (see "Pacing"). Measured
/// with 1,000 HTTP watchers of one collection and a writer paced at 1,200 writes/s on this
/// 2-core machine (load generator included), when all subscribers read together: 10 ms
/// sustained 480-550 writes/s, 15 ms 580-800, 20 ms ~770, 25 ms 790-1,130 and 50 ms
/// 1,060-1,180; later, with cheaper writes, 15 ms still cost ~10 % more CPU than 25 ms and
/// fell behind once in four runs. Fewer, larger writes per watcher are what lets the cores
/// keep up; a lone event after a quiet period is still read at once.
pub const WATCH_FEED_INTERVAL: Duration = Duration::from_millis(25);
/// Lines a feed keeps at most; a subscriber further behind is ended as lagged.
pub const WATCH_FEED_EVENTS_MAX: usize = 1 << 15;
/// Bytes of lines a feed keeps at most; a subscriber further behind is ended as lagged.
pub const WATCH_FEED_BYTES_MAX: usize = 64 * 1024 * 1024;
/// Lines kept after every subscriber has passed them, so that watches starting at a recent
/// revision can join the feed.
pub const WATCH_FEED_RETAIN_EVENTS: usize = 1024;
/// Engine batches a feed's task pulls per poll before yielding to other tasks.
pub const WATCH_FEED_BATCHES_PER_POLL: usize = 8;
/// Feed subscriptions open in the process at most (each also needs a connection); beyond,
/// a watch is refused with 429 as when the engine's watcher limit is reached.
pub const WATCH_FEED_SUBSCRIBERS_MAX: usize = 100_000;
/// Pieces (events) in one chunk at most: each is one iovec of the write.
pub const WATCH_CHUNK_PIECES_MAX: usize = 256;
/// Phase points per `WATCH_FEED_INTERVAL` over which busy subscribers are spread.
pub const WATCH_FEED_PHASES: usize = 16;
/// Lines a selective subscriber tests in one poll at most before letting other tasks run.
pub const WATCH_SCAN_LINES_PER_POLL: usize = 4096;
/// Bytes charged against `WATCH_FEED_BYTES_MAX` for a parsed object, per stored byte (a
/// `serde_json::Value` takes a few times the JSON it came from).
const PARSED_BYTES_PER_BYTE: usize = 4;

/// One event of the log.
struct Line {
    rev: u64,
    ev: Arc<Event>,
    /// Its JSON watch line as it happened (what JSON watches without selection send).
    bytes: Arc<[u8]>,
    /// Parsed objects and other encodings, made by the first subscriber that needs them.
    more: Option<Box<More>>,
}

#[derive(Default)]
struct More {
    /// The new object (puts) and the previous one, parsed; `None` if absent or unparsable.
    parsed: Option<(Option<Value>, Option<Value>)>,
    /// Encodings by representation and event type.
    encoded: Vec<(Format, &'static str, Arc<[u8]>)>,
    /// Bytes charged for the above.
    charged: usize,
}

impl Line {
    /// Bytes it holds: its line, the stored objects of its event, and what was made later.
    fn charged(&self) -> usize {
        let stored =
            self.ev.kv.value().len() + self.ev.prev.as_ref().map_or(0, |p| p.value().len());
        self.bytes.len() + stored + self.more.as_ref().map_or(0, |m| m.charged)
    }

    /// The new object (puts) and the previous one, parsed on first use; `charged` grows by
    /// what parsing them costs.
    fn parsed(&mut self, charged: &mut usize) -> (Option<&Value>, Option<&Value>) {
        let ev = &self.ev;
        let more = self.more.get_or_insert_with(Box::default);
        let (new, old) = more.parsed.get_or_insert_with(|| {
            let parse = |b: &[u8]| serde_json::from_slice::<Value>(b).ok();
            let new = (ev.kind == EventKind::Put)
                .then(|| parse(ev.kv.value()))
                .flatten();
            let old = ev.prev.as_ref().and_then(|p| parse(p.value()));
            let stored = ev.kv.value().len() + ev.prev.as_ref().map_or(0, |p| p.value().len());
            more.charged += stored * PARSED_BYTES_PER_BYTE;
            *charged += stored * PARSED_BYTES_PER_BYTE;
            (new, old)
        });
        (new.as_ref(), old.as_ref())
    }

    /// What `sel` sends for this event, if anything: the event's type and its shared bytes.
    /// `charged` grows by what had to be parsed or encoded.
    fn select(&mut self, sel: &Selection, charged: &mut usize) -> Option<Arc<[u8]>> {
        let kind = if sel.selects_all() {
            as_happened(&self.ev)?
        } else {
            let (new, old) = self.parsed(charged);
            let new_ok = new.is_some_and(|v| sel.matches(v));
            let old_ok = old.is_some_and(|v| sel.matches(v));
            event_type(self.ev.kind, old_ok, new_ok)?
        };
        let ev = &self.ev;
        let more = self.more.get_or_insert_with(Box::default);
        let format = sel.encoder().format();
        if format == Format::Json && Some(kind) == as_happened(ev) {
            return Some(self.bytes.clone());
        }
        if let Some((.., b)) = more
            .encoded
            .iter()
            .find(|(f, k, _)| *f == format && *k == kind)
        {
            return Some(b.clone());
        }
        let mut out = Vec::new();
        sel.encoder().event(&mut out, kind, &event_object(ev, kind));
        let bytes: Arc<[u8]> = out.into();
        more.charged += bytes.len();
        *charged += bytes.len();
        more.encoded.push((format, kind, bytes.clone()));
        (!bytes.is_empty()).then_some(bytes)
    }
}

/// A subscriber's slot: its cursor, its start revision and its waker while it waits.
struct Slot {
    next_seq: u64,
    after: u64,
    waker: Option<Waker>,
    /// Its phase (index into `FeedState::paced`).
    phase: usize,
    /// Waiting for its phase point: announcements do not wake it.
    paced: bool,
    /// The exact requirement of its selection, by which the feed's index finds it.
    index: Option<(Indexed, String)>,
    /// For an indexed subscriber: the first and last line (sequence numbers) pulled since it
    /// last read everything that its selection may select; lines outside are skipped unread.
    relevant: Option<(u64, u64)>,
}

impl Slot {
    /// Where its next read starts (`head`: the feed's head): past the lines the index rules
    /// out for an indexed subscriber.
    fn cursor(&self, head: u64) -> u64 {
        match (&self.index, self.relevant) {
            (None, _) => self.next_seq,
            (Some(_), None) => self.next_seq.max(head),
            (Some(_), Some((first, _))) => self.next_seq.max(first),
        }
    }

    /// Whether it has an announced line to read (`announced`: the announced head).
    fn has_announced(&self, announced: u64, head: u64) -> bool {
        self.cursor(head) < announced
    }
}

struct FeedState {
    lines: VecDeque<Line>,
    /// Sequence number of `lines[0]`.
    first_seq: u64,
    /// Lines below this sequence number may be read by subscribers.
    announced: u64,
    bytes: usize,
    /// Every event with a revision above `floor` is in `lines` or not yet pulled.
    floor: u64,
    /// Every event with a revision up to `synced` has been pulled.
    synced: u64,
    /// Set once the feed stops: its engine watcher failed or nobody is subscribed.
    ended: Option<WatchError>,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    subscribers: usize,
    task: Option<Waker>,
    /// Paced subscribers (slot indices) by phase; entries of slots since left or reused are
    /// skipped when their phase comes.
    paced: Vec<Vec<usize>>,
    /// The task's phase timer is armed.
    ticking: bool,
    /// Slots that asked to be woken by the next announcement (entries of slots since left,
    /// reused or paced are skipped; indexed ones stay until a line is for them).
    waiting: Vec<usize>,
    /// Indexed subscribers (slots) by the field and the value their selection requires.
    index: HashMap<Indexed, HashMap<String, Vec<usize>>>,
    /// Scratch list of the slots a pulled line concerns.
    marks: Vec<usize>,
}

impl FeedState {
    /// An empty feed holding every event after revision `after` (none yet).
    fn new(after: u64) -> FeedState {
        FeedState {
            lines: VecDeque::new(),
            first_seq: 0,
            announced: 0,
            bytes: 0,
            floor: after,
            synced: after,
            ended: None,
            slots: Vec::new(),
            free: Vec::new(),
            subscribers: 0,
            task: None,
            paced: vec![Vec::new(); WATCH_FEED_PHASES],
            ticking: false,
            waiting: Vec::new(),
            index: HashMap::new(),
            marks: Vec::new(),
        }
    }

    fn head_seq(&self) -> u64 {
        self.first_seq + self.lines.len() as u64
    }

    fn push(&mut self, line: Line) {
        self.bytes += line.charged();
        self.lines.push_back(line);
        while self.lines.len() > WATCH_FEED_EVENTS_MAX || self.bytes > WATCH_FEED_BYTES_MAX {
            self.drop_first();
        }
    }

    /// Appends a pulled line, first marking it for the indexed subscribers whose field has
    /// their value in its new or previous object (the only ones it may concern).
    fn push_marked(&mut self, mut line: Line) {
        if self.index.is_empty() {
            return self.push(line);
        }
        let mut marks = std::mem::take(&mut self.marks);
        // Charged through `push`, which counts the line's parsed objects too.
        let (new, old) = line.parsed(&mut 0);
        for (field, by_value) in &self.index {
            for obj in [new, old].into_iter().flatten() {
                let found = field.value_of(obj).and_then(|v| by_value.get(v.as_ref()));
                marks.extend(found.into_iter().flatten());
            }
        }
        self.push(line);
        let seq = self.head_seq() - 1;
        for &i in &marks {
            if let Some(slot) = self.slots[i].as_mut() {
                slot.relevant = Some((slot.relevant.map_or(seq, |(first, _)| first), seq));
            }
        }
        marks.clear();
        self.marks = marks;
    }

    /// Adds a subscriber for the events after revision `after`, reading at `phase`, filed in
    /// the index under `index` if given; returns its slot.
    fn add_slot(&mut self, after: u64, phase: usize, index: Option<(Indexed, String)>) -> usize {
        let next_seq = self.first_seq + self.lines.partition_point(|l| l.rev <= after) as u64;
        let head = self.head_seq();
        let key = index.clone();
        let slot = Slot {
            next_seq,
            after,
            waker: None,
            phase,
            paced: false,
            // Lines pulled before it joined were not marked for it: it reads them all.
            relevant: (next_seq < head).then(|| (next_seq, head - 1)),
            index,
        };
        self.subscribers += 1;
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(slot);
                i
            }
            None => {
                self.slots.push(Some(slot));
                self.slots.len() - 1
            }
        };
        if let Some(key) = &key {
            self.index_add(i, key);
        }
        i
    }

    fn index_add(&mut self, slot: usize, (field, value): &(Indexed, String)) {
        let by_value = self.index.entry(field.clone()).or_default();
        by_value.entry(value.clone()).or_default().push(slot);
    }

    fn index_remove(&mut self, slot: usize, (field, value): &(Indexed, String)) {
        let Some(by_value) = self.index.get_mut(field) else {
            return;
        };
        if let Some(slots) = by_value.get_mut(value) {
            slots.retain(|&i| i != slot);
            if slots.is_empty() {
                by_value.remove(value);
            }
        }
        if by_value.is_empty() {
            self.index.remove(field);
        }
    }

    fn drop_first(&mut self) {
        if let Some(old) = self.lines.pop_front() {
            self.bytes -= old.charged();
            self.floor = old.rev;
            self.first_seq += 1;
            self.announced = self.announced.max(self.first_seq);
        }
    }

    /// Drops lines every subscriber has passed, keeping the newest `WATCH_FEED_RETAIN_EVENTS`.
    fn trim(&mut self) {
        let head = self.head_seq();
        let slowest = self.slots.iter().flatten().map(|s| s.cursor(head)).min();
        let keep_from = self
            .head_seq()
            .saturating_sub(WATCH_FEED_RETAIN_EVENTS as u64);
        let upto = slowest.unwrap_or(u64::MAX).min(keep_from);
        while self.first_seq < upto && !self.lines.is_empty() {
            self.drop_first();
        }
    }

    /// Makes every pulled line readable and wakes the waiting subscribers that have one to
    /// read (indexed subscribers no line is for keep waiting).
    fn announce(&mut self) {
        let head = self.head_seq();
        self.announced = head;
        let mut waiting = std::mem::take(&mut self.waiting);
        waiting.retain(|&i| {
            let Some(slot) = self.slots.get_mut(i).and_then(Option::as_mut) else {
                return false;
            };
            if slot.paced || slot.waker.is_none() {
                return false; // woken since, or waiting for its phase point instead
            }
            if !slot.has_announced(head, head) {
                return true;
            }
            if let Some(w) = slot.waker.take() {
                w.wake();
            }
            false
        });
        self.waiting = waiting;
    }

    /// Asks for slot `i` to be woken by the next announcement.
    fn wait(&mut self, i: usize, waker: &Waker) {
        if let Some(slot) = self.slots[i].as_mut() {
            let listed = slot.waker.is_some() && !slot.paced;
            slot.waker = Some(waker.clone());
            if !listed && !slot.paced {
                self.waiting.push(i);
            }
        }
        // Watches that come and go while nothing is announced leave entries of their slots
        // behind: keep the list within twice the slots by rebuilding it from them.
        if self.waiting.len() > 2 * self.slots.len() {
            self.waiting.clear();
            for (i, slot) in self.slots.iter().enumerate() {
                if slot.as_ref().is_some_and(|s| s.waker.is_some() && !s.paced) {
                    self.waiting.push(i);
                }
            }
        }
    }

    /// Wakes the subscribers paced in `phase`: their phase point has come.
    fn release_phase(&mut self, phase: usize) {
        let list = std::mem::take(&mut self.paced[phase]);
        self.paced[phase] = wake_listed(&mut self.slots, list, |s| s.paced && s.phase == phase);
    }

    fn any_paced(&self) -> bool {
        self.paced.iter().any(|p| !p.is_empty())
    }
}

/// Wakes the subscribers of the slots in `list` that still exist and are `due` (no longer
/// paced, if they were); returns `list` emptied, for reuse.
fn wake_listed(
    slots: &mut [Option<Slot>],
    mut list: Vec<usize>,
    due: impl Fn(&Slot) -> bool,
) -> Vec<usize> {
    for &i in &list {
        if let Some(slot) = slots.get_mut(i).and_then(Option::as_mut) {
            if due(slot) {
                slot.paced = false;
                if let Some(w) = slot.waker.take() {
                    w.wake();
                }
            }
        }
    }
    list.clear();
    list
}

/// The shared part of one prefix's fan-out on one core.
pub struct Feed {
    state: RefCell<FeedState>,
}

impl Feed {
    /// Ends the feed: every subscriber, waiting or paced, is woken to read its rest and `e`.
    fn end(&self, e: WatchError) {
        let mut st = self.state.borrow_mut();
        st.ended = Some(e);
        st.task = None;
        st.announced = st.head_seq();
        for slot in st.slots.iter_mut().flatten() {
            slot.paced = false;
            if let Some(w) = slot.waker.take() {
                w.wake();
            }
        }
    }
}

/// Drops `feed`'s entry from this core's `FEEDS` (unless another feed took the key since).
fn forget_feed(key: &FeedKey, feed: &Rc<Feed>) {
    FEEDS.with(|f| {
        let mut f = f.borrow_mut();
        if f.get(key)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), Rc::as_ptr(feed)))
        {
            f.remove(key);
        }
    });
}

type FeedKey = (usize, Vec<u8>);

/// Open subscriptions on all cores.
static SUBSCRIBERS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This core's feeds by (engine, prefix).
    static FEEDS: RefCell<HashMap<FeedKey, Weak<Feed>>> = RefCell::new(HashMap::new());
}

/// What one read of the feed found.
enum Read {
    /// Lines up to this revision were appended.
    Got(u64),
    Ended(WatchError),
    /// The scan bound was reached with nothing selected: continue after other tasks.
    Yield,
    /// Nothing (more) for this watch; `scanned`: lines were read past.
    Idle {
        scanned: bool,
    },
}

/// A watch stream's place in a feed. Dropping it leaves the feed.
pub struct Subscription {
    feed: Rc<Feed>,
    slot: usize,
    /// Whether it is paced once it has read everything (always, but in some tests).
    paced: bool,
}

/// Time between two phase points of a feed.
fn phase_len() -> Duration {
    WATCH_FEED_INTERVAL / WATCH_FEED_PHASES as u32
}

/// The index of the phase point at or before `now` (counted from `epoch`).
fn phase_point_at(epoch: Instant, now: Instant) -> u64 {
    (now.saturating_duration_since(epoch).as_nanos() / phase_len().as_nanos()) as u64
}

/// When phase point `k` comes.
fn phase_point_time(epoch: Instant, k: u64) -> Instant {
    epoch + Duration::from_nanos((phase_len().as_nanos() as u64).saturating_mul(k))
}

impl Subscription {
    /// Subscribes to this core's feed for `prefix`, for events after revision `after`,
    /// starting the feed (and its engine watcher) if there is none. `index`: the field and
    /// value every object the watch selects has (`Selection::index_key`); the feed then wakes
    /// it only for lines whose new or previous object has that value. `Ok(None)`: a feed
    /// exists but no longer holds every event after `after`; the caller watches on its own.
    pub fn join(
        app: &Arc<App>,
        prefix: &[u8],
        after: u64,
        index: Option<(Indexed, String)>,
    ) -> Result<Option<Subscription>, keel_engine::Error> {
        if SUBSCRIBERS.fetch_add(1, Ordering::Relaxed) >= WATCH_FEED_SUBSCRIBERS_MAX {
            SUBSCRIBERS.fetch_sub(1, Ordering::Relaxed);
            return Err(keel_engine::Error::TooManyWatchers {
                max: WATCH_FEED_SUBSCRIBERS_MAX,
            });
        }
        let joined = Self::join_feed(app, prefix, after, index);
        if !matches!(joined, Ok(Some(_))) {
            SUBSCRIBERS.fetch_sub(1, Ordering::Relaxed);
        }
        joined
    }

    fn join_feed(
        app: &Arc<App>,
        prefix: &[u8],
        after: u64,
        index: Option<(Indexed, String)>,
    ) -> Result<Option<Subscription>, keel_engine::Error> {
        let key = (Arc::as_ptr(&app.storage.engine) as usize, prefix.to_vec());
        let existing = FEEDS.with(|f| f.borrow().get(&key).and_then(Weak::upgrade));
        let feed = match existing {
            Some(feed) if feed.state.borrow().ended.is_none() => {
                if after < feed.state.borrow().floor {
                    return Ok(None);
                }
                feed
            }
            _ => {
                let watcher = app.storage.engine.watch(prefix, Revision(after))?;
                let feed = start_feed(app.clone(), key.clone(), watcher, after);
                FEEDS.with(|f| f.borrow_mut().insert(key.clone(), Rc::downgrade(&feed)));
                feed
            }
        };
        let phase = rand::random::<u64>() as usize % WATCH_FEED_PHASES;
        let slot = feed.state.borrow_mut().add_slot(after, phase, index);
        Ok(Some(Subscription {
            feed,
            slot,
            paced: true,
        }))
    }

    /// Appends the announced lines not yet read that `sel` selects (at most `max_bytes`, and
    /// at least one line) to `out` as shared pieces. `Ready(Ok(rev))`: lines up to revision
    /// `rev` were appended. `Ready(Err)`: the watch is over (lagged, or the feed's watcher
    /// failed). Once it has read every announced line, the subscriber waits for its next
    /// phase point before reading again.
    pub(crate) fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Chunk,
        max_bytes: usize,
        sel: &Selection,
    ) -> Poll<Result<u64, WatchError>> {
        {
            let mut st = self.feed.state.borrow_mut();
            let slot = st.slots[self.slot].as_mut().expect("own slot");
            if slot.paced {
                slot.waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        match self.read(out, max_bytes, sel) {
            Read::Got(rev) => {
                if self.read_all_announced() {
                    self.pace();
                }
                Poll::Ready(Ok(rev))
            }
            Read::Ended(e) => Poll::Ready(Err(e)),
            Read::Yield => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            // Lines were read but none was for this watch: it is as busy as if they had
            // been (else a selective watch would be woken by every announcement).
            Read::Idle { scanned: true } => {
                self.pace();
                self.wait_on_feed(cx);
                Poll::Pending
            }
            Read::Idle { scanned: false } => {
                self.wait_on_feed(cx);
                Poll::Pending
            }
        }
    }

    /// Waits for its next phase point before reading again (if paced at all, and unless the
    /// feed has ended: its task no longer releases anyone).
    fn pace(&self) {
        if !self.paced {
            return;
        }
        let mut st = self.feed.state.borrow_mut();
        if st.ended.is_some() {
            return;
        }
        let slot = st.slots[self.slot].as_mut().expect("own slot");
        slot.paced = true;
        let phase = slot.phase;
        st.paced[phase].push(self.slot);
        if !st.ticking {
            if let Some(task) = &st.task {
                task.wake_by_ref();
            }
        }
    }

    /// Asks to be woken when lines are announced.
    fn wait_on_feed(&self, cx: &Context<'_>) {
        self.feed.state.borrow_mut().wait(self.slot, cx.waker());
    }

    fn read_all_announced(&self) -> bool {
        let st = self.feed.state.borrow();
        st.slots[self.slot]
            .as_ref()
            .is_some_and(|s| !s.has_announced(st.announced, st.head_seq()))
    }

    /// Reads what is announced and not yet read (see `poll_chunk`).
    fn read(&mut self, out: &mut Chunk, max_bytes: usize, sel: &Selection) -> Read {
        let mut st = self.feed.state.borrow_mut();
        let st = &mut *st;
        let (first_seq, announced, head) = (st.first_seq, st.announced, st.head_seq());
        let FeedState {
            lines,
            slots,
            bytes: charged,
            ended,
            ..
        } = st;
        let slot = slots[self.slot].as_mut().expect("own slot");
        // Lines the index rules out for this watch are passed unread.
        slot.next_seq = slot.next_seq.max(slot.cursor(head).min(announced));
        if slot.next_seq < first_seq {
            return Read::Ended(WatchError::Lagged {
                behind_events: head - slot.next_seq,
                max: WATCH_FEED_EVENTS_MAX as u64,
            });
        }
        let plain = sel.is_plain_json();
        let mut last = None;
        let (mut pieces, mut scanned) = (0, 0);
        while slot.next_seq < announced && out.len() < max_bytes && pieces < WATCH_CHUNK_PIECES_MAX
        {
            if scanned == WATCH_SCAN_LINES_PER_POLL {
                if last.is_none() {
                    // Nothing selected yet: continue after other tasks had their turn.
                    return Read::Yield;
                }
                break;
            }
            scanned += 1;
            let line = &mut lines[(slot.next_seq - first_seq) as usize];
            slot.next_seq += 1;
            if line.rev <= slot.after {
                continue;
            }
            let piece = if plain {
                Some(line.bytes.clone())
            } else {
                line.select(sel, charged)
            };
            if let Some(bytes) = piece {
                out.push(Piece::Shared(bytes));
                last = Some(line.rev);
                pieces += 1;
            }
        }
        if slot.relevant.is_some_and(|(_, end)| slot.next_seq > end) {
            slot.relevant = None;
        }
        if let Some(rev) = last {
            return Read::Got(rev);
        }
        if slot.next_seq >= announced {
            if let Some(e) = ended {
                return Read::Ended(e.clone());
            }
        }
        Read::Idle {
            scanned: scanned > 0,
        }
    }

    /// The revision up to which this subscriber has been sent every event, if it has read
    /// everything the feed pulled (for bookmarks).
    pub fn caught_up_to(&self) -> Option<u64> {
        let st = self.feed.state.borrow();
        let slot = st.slots[self.slot].as_ref()?;
        (slot.cursor(st.head_seq()) >= st.head_seq()).then_some(st.synced)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        SUBSCRIBERS.fetch_sub(1, Ordering::Relaxed);
        let mut st = self.feed.state.borrow_mut();
        if let Some(key) = st.slots[self.slot].take().and_then(|s| s.index) {
            st.index_remove(self.slot, &key);
        }
        st.free.push(self.slot);
        st.subscribers -= 1;
        if st.subscribers == 0 {
            if let Some(w) = st.task.take() {
                w.wake();
            }
        }
    }
}

/// Appends the JSON watch line of an event as it happened (nothing for a delete of an
/// unknown previous value).
fn encode(ev: &Event, out: &mut Vec<u8>) {
    if let Some(kind) = as_happened(ev) {
        json_event_line(out, kind, &event_object(ev, kind));
    }
}

fn start_feed(app: Arc<App>, key: FeedKey, watcher: Watcher, after: u64) -> Rc<Feed> {
    let feed = Rc::new(Feed {
        state: RefCell::new(FeedState::new(after)),
    });
    tokio::task::spawn_local(FeedTask {
        app,
        feed: feed.clone(),
        key,
        watcher,
        batch: Vec::new(),
        tick: Box::pin(tokio::time::sleep(Duration::ZERO)),
        next_point: 0,
    });
    feed
}

/// Pulls a feed's events from the engine, encodes and announces them; ends when the feed
/// has no subscribers left or its watcher fails.
struct FeedTask {
    app: Arc<App>,
    feed: Rc<Feed>,
    /// Its entry in `FEEDS`.
    key: FeedKey,
    watcher: Watcher,
    batch: Vec<Arc<Event>>,
    /// Fires at the next phase point while subscribers are paced.
    tick: Pin<Box<Sleep>>,
    /// Index of the next phase point to release.
    next_point: u64,
}

/// Origin of every feed's phase points.
fn pacing_epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    Instant::from_std(*EPOCH.get_or_init(std::time::Instant::now))
}

impl FeedTask {
    /// Pulls what the engine has; `Err` once the watcher failed.
    fn pull(&mut self, cx: &mut Context<'_>) -> Result<(), WatchError> {
        let mut line = Vec::new();
        for _ in 0..WATCH_FEED_BATCHES_PER_POLL {
            let visible = self.app.storage.current();
            self.batch.clear();
            match self.watcher.poll_batch(cx, &mut self.batch) {
                Poll::Ready(Ok(())) => {
                    let mut st = self.feed.state.borrow_mut();
                    for ev in &self.batch {
                        encode(ev, &mut line);
                        if !line.is_empty() {
                            let rev = ev.revision().get();
                            let bytes = Arc::from(std::mem::take(&mut line));
                            st.push_marked(Line {
                                rev,
                                ev: ev.clone(),
                                bytes,
                                more: None,
                            });
                        }
                    }
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {
                    let mut st = self.feed.state.borrow_mut();
                    st.synced = st.synced.max(visible);
                    return Ok(());
                }
            }
        }
        cx.waker().wake_by_ref(); // more may be waiting: continue after other tasks ran
        Ok(())
    }

    fn stop(&self, e: WatchError) {
        self.feed.end(e);
        forget_feed(&self.key, &self.feed);
    }
}

impl Future for FeedTask {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        {
            let mut st = this.feed.state.borrow_mut();
            if st.subscribers == 0 {
                drop(st);
                this.stop(WatchError::Closed);
                return Poll::Ready(());
            }
            st.task = Some(cx.waker().clone());
        }
        if let Err(e) = this.pull(cx) {
            this.stop(e);
            return Poll::Ready(());
        }
        let mut st = this.feed.state.borrow_mut();
        if st.announced < st.head_seq() {
            st.announce();
        }
        // Release the paced subscribers of every phase point that has come; lines everyone
        // read are dropped once per interval then (a pass over every subscriber), or on each
        // poll while nobody is paced.
        let epoch = pacing_epoch();
        loop {
            if !st.any_paced() {
                st.ticking = false;
                st.trim();
                return Poll::Pending;
            }
            if !st.ticking {
                st.ticking = true;
                this.next_point = phase_point_at(epoch, Instant::now()) + 1;
                this.tick
                    .as_mut()
                    .reset(phase_point_time(epoch, this.next_point));
            }
            if this.tick.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let now = phase_point_at(epoch, Instant::now());
            let from = this
                .next_point
                .max(now.saturating_sub(WATCH_FEED_PHASES as u64 - 1));
            for point in from..=now {
                st.release_phase(point as usize % WATCH_FEED_PHASES);
                if point % WATCH_FEED_PHASES as u64 == 0 {
                    st.trim();
                }
            }
            this.next_point = now + 1;
            this.tick
                .as_mut()
                .reset(phase_point_time(epoch, this.next_point));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Filter;
    use crate::watch::Encoder;
    use keel_engine::{KeyValue, Value as Stored};
    use serde_json::json;

    fn kv(rev: u64, obj: &serde_json::Value) -> KeyValue {
        let key = b"/registry/configmaps/ns/a";
        let mut record = key.to_vec();
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
            rev,
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
            Filter::parse(labels, None, info).unwrap(),
            name.map(str::to_string),
            Encoder::new(format, "v1".into(), info),
        )
    }

    fn everything() -> Selection {
        selection(None, None, Format::Json)
    }

    fn state() -> FeedState {
        FeedState::new(10)
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
            after,
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
            .map(|r| r.map(|rev| (rev, chunk)))
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
                    after: 10,
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
        assert_eq!(sub.caught_up_to(), Some(10));
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
        assert_eq!(st.floor, 15);
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
        assert_eq!((st.lines.len(), st.floor, st.bytes), (1, 11, charged));
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
            after: 0,
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
        assert_eq!(st.floor, 10 + st.first_seq);
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
                after: 10,
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
                let i = feed.state.borrow_mut().add_slot(10, 0, sel.index_key());
                SUBSCRIBERS.fetch_add(1, Ordering::Relaxed);
                unpaced(feed.clone(), i)
            })
            .collect()
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
        let info = catalog().lookup("", "v1", "pods").unwrap();
        let pods = Filter::parse(None, Some("status.phase!=Failed,spec.nodeName=n1"), info);
        assert_eq!(
            pods.unwrap().exact_requirement(),
            Some((
                Indexed::Field {
                    group: "",
                    resource: "pods",
                    path: "spec.nodeName".into()
                },
                "n1".into()
            ))
        );
        // What the index reads is what the selectors compare.
        let unscheduled = json!({"metadata": {"name": "p"}, "spec": {}});
        let (field, value) = Filter::parse(None, Some("spec.nodeName="), info)
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
        let pull = |line: Line| {
            let mut st = feed.state.borrow_mut();
            st.push_marked(line);
            st.announce();
        };
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
            Some(10),
            "db has been sent all it selects up to the feed's head"
        );
        assert!(feed.state.borrow().waiting.contains(&1), "db still waits");
        // Leaving takes the watch out of the index.
        subs.remove(1);
        assert!(!feed.state.borrow().index[&Indexed::Label("tier".into())].contains_key("db"));
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
        let i = feed.state.borrow_mut().add_slot(10, 0, web.index_key());
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
                after: 10,
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
}
