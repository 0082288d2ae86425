//! Subscriptions: a watch stream's place in its core's feed (a slot with a cursor into the
//! log, its start revision, its waker, its phase and its index key), joining and leaving,
//! and reading the announced lines its selection selects as shared pieces of a chunk.

use super::log::{Feed, FeedState};
use super::task::{start_feed, FEEDS};
use crate::limits::{
    WATCH_CHUNK_PIECES_MAX, WATCH_FEED_EVENTS_MAX, WATCH_FEED_PHASES, WATCH_FEED_SUBSCRIBERS_MAX,
    WATCH_SCAN_LINES_PER_POLL,
};
use crate::selection::{Indexed, Selection};
use crate::storage::Storage;
use keel_engine::{Revision, WatchError};
use keel_http::{Chunk, Piece};
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

/// A subscriber's slot: its cursor, its start revision and its waker while it waits.
pub(super) struct Slot {
    pub(super) next_seq: u64,
    pub(super) after: Revision,
    pub(super) waker: Option<Waker>,
    /// Its phase (index into `FeedState::paced`).
    pub(super) phase: usize,
    /// Waiting for its phase point: announcements do not wake it.
    pub(super) paced: bool,
    /// The exact requirement of its selection, by which the feed's index finds it.
    pub(super) index: Option<(Indexed, String)>,
    /// For an indexed subscriber: the first and last line (sequence numbers) pulled since it
    /// last read everything that its selection may select; lines outside are skipped unread.
    pub(super) relevant: Option<(u64, u64)>,
}

impl Slot {
    /// Where its next read starts (`head`: the feed's head): past the lines the index rules
    /// out for an indexed subscriber.
    pub(super) fn cursor(&self, head: u64) -> u64 {
        match (&self.index, self.relevant) {
            (None, _) => self.next_seq,
            (Some(_), None) => self.next_seq.max(head),
            (Some(_), Some((first, _))) => self.next_seq.max(first),
        }
    }

    /// Whether it has an announced line to read (`announced`: the announced head).
    pub(super) fn has_announced(&self, announced: u64, head: u64) -> bool {
        self.cursor(head) < announced
    }
}

impl FeedState {
    /// Adds a subscriber for the events after revision `after`, reading at `phase`, filed in
    /// the index under `index` if given; returns its slot.
    pub(super) fn add_slot(
        &mut self,
        after: Revision,
        phase: usize,
        index: Option<(Indexed, String)>,
    ) -> usize {
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

    pub(super) fn index_add(&mut self, slot: usize, (field, value): &(Indexed, String)) {
        let by_value = self.index.entry(field.clone()).or_default();
        by_value.entry(value.clone()).or_default().push(slot);
    }

    pub(super) fn index_remove(&mut self, slot: usize, (field, value): &(Indexed, String)) {
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

    /// Makes every pulled line readable and wakes the waiting subscribers that have one to
    /// read (indexed subscribers no line is for keep waiting).
    pub(super) fn announce(&mut self) {
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
    pub(super) fn wait(&mut self, i: usize, waker: &Waker) {
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
}

/// Open subscriptions on all cores.
pub(super) static SUBSCRIBERS: AtomicUsize = AtomicUsize::new(0);

/// What one read of the feed found.
pub(super) enum Read {
    /// Lines up to this revision were appended.
    Got(Revision),
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
    pub(super) feed: Rc<Feed>,
    pub(super) slot: usize,
    /// Whether it is paced once it has read everything (always, but in some tests).
    pub(super) paced: bool,
}

impl Subscription {
    /// Subscribes to this core's feed for `prefix`, for events after revision `after`,
    /// starting the feed (and its store watcher) if there is none. `index`: the field and
    /// value every object the watch selects has (`Selection::index_key`); the feed then wakes
    /// it only for lines whose new or previous object has that value. `Ok(None)`: a feed
    /// exists but no longer holds every event after `after`; the caller watches on its own.
    pub fn join(
        storage: &Storage,
        prefix: &[u8],
        after: Revision,
        index: Option<(Indexed, String)>,
    ) -> Result<Option<Subscription>, keel_engine::Error> {
        if SUBSCRIBERS.fetch_add(1, Ordering::Relaxed) >= WATCH_FEED_SUBSCRIBERS_MAX {
            SUBSCRIBERS.fetch_sub(1, Ordering::Relaxed);
            return Err(keel_engine::Error::TooManyWatchers {
                max: WATCH_FEED_SUBSCRIBERS_MAX,
            });
        }
        let joined = Self::join_feed(storage, prefix, after, index);
        if !matches!(joined, Ok(Some(_))) {
            SUBSCRIBERS.fetch_sub(1, Ordering::Relaxed);
        }
        joined
    }

    pub(super) fn join_feed(
        storage: &Storage,
        prefix: &[u8],
        after: Revision,
        index: Option<(Indexed, String)>,
    ) -> Result<Option<Subscription>, keel_engine::Error> {
        let key = (storage.id(), prefix.to_vec());
        let existing = FEEDS.with(|f| f.borrow().get(&key).and_then(Weak::upgrade));
        let feed = match existing {
            Some(feed) if feed.state.borrow().ended.is_none() => {
                if after < feed.state.borrow().floor {
                    return Ok(None);
                }
                feed
            }
            _ => {
                let events = storage.watch(prefix, after)?;
                let feed = start_feed(storage.clone(), key.clone(), events, after);
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
    ) -> Poll<Result<Revision, WatchError>> {
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

    /// Asks to be woken when lines are announced.
    pub(super) fn wait_on_feed(&self, cx: &Context<'_>) {
        self.feed.state.borrow_mut().wait(self.slot, cx.waker());
    }

    pub(super) fn read_all_announced(&self) -> bool {
        let st = self.feed.state.borrow();
        st.slots[self.slot]
            .as_ref()
            .is_some_and(|s| !s.has_announced(st.announced, st.head_seq()))
    }

    /// Reads what is announced and not yet read (see `poll_chunk`).
    pub(super) fn read(&mut self, out: &mut Chunk, max_bytes: usize, sel: &Selection) -> Read {
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
        // A custom resource's watch: lines of objects older than its schema are decoded.
        let enc = sel.encoder();
        let old_objects = enc.decodes_any();
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
            let piece = if plain && !(old_objects && enc.decodes(line.written())) {
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
    pub fn caught_up_to(&self) -> Option<Revision> {
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
