//! The feed's task: one per feed (per core and prefix), it pulls the store's events, encodes
//! each as its JSON watch line once, appends it to the log and announces it; it releases the
//! paced subscribers at their phase points and stops when the last subscriber leaves or its
//! store watcher fails. The core's table of feeds (`FEEDS`) lets watches find it.

use super::log::{Feed, FeedState, Line};
use super::pacing::{pacing_epoch, phase_point_at, phase_point_time};
use crate::limits::{WATCH_FEED_BATCHES_PER_POLL, WATCH_FEED_PHASES};
use crate::repr::json_event_line;
use crate::selection::{as_happened, event_object};
use crate::storage::Storage;
use keel_engine::{Event, EventStream, Revision, WatchError};
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Drops `feed`'s entry from this core's `FEEDS` (unless another feed took the key since).
pub(super) fn forget_feed(key: &FeedKey, feed: &Rc<Feed>) {
    FEEDS.with(|f| {
        let mut f = f.borrow_mut();
        if f.get(key)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), Rc::as_ptr(feed)))
        {
            f.remove(key);
        }
    });
}

pub(super) type FeedKey = (usize, Vec<u8>);

thread_local! {
    /// This core's feeds by (backend, prefix).
    pub(super) static FEEDS: RefCell<HashMap<FeedKey, Weak<Feed>>> = RefCell::new(HashMap::new());
}

/// Appends the JSON watch line of an event as it happened (nothing for a delete of an
/// unknown previous value).
pub(super) fn encode(ev: &Event, out: &mut Vec<u8>) {
    if let Some(kind) = as_happened(ev) {
        json_event_line(out, kind, &event_object(ev, kind));
    }
}

pub(super) fn start_feed(
    storage: Storage,
    key: FeedKey,
    events: Box<dyn EventStream>,
    after: Revision,
) -> Rc<Feed> {
    let feed = Rc::new(Feed {
        state: RefCell::new(FeedState::new(after)),
    });
    tokio::task::spawn_local(FeedTask {
        storage,
        feed: feed.clone(),
        key,
        events,
        batch: Vec::new(),
        tick: Box::pin(tokio::time::sleep(Duration::ZERO)),
        next_point: 0,
    });
    feed
}

/// Pulls a feed's events from the store, encodes and announces them; ends when the feed
/// has no subscribers left or its watcher fails.
pub(super) struct FeedTask {
    pub(super) storage: Storage,
    pub(super) feed: Rc<Feed>,
    /// Its entry in `FEEDS`.
    pub(super) key: FeedKey,
    /// The store's events of the prefix.
    pub(super) events: Box<dyn EventStream>,
    pub(super) batch: Vec<Arc<Event>>,
    /// Fires at the next phase point while subscribers are paced.
    pub(super) tick: Pin<Box<Sleep>>,
    /// Index of the next phase point to release.
    pub(super) next_point: u64,
}

impl FeedTask {
    /// Pulls what the store has; `Err` once the watcher failed.
    pub(super) fn pull(&mut self, cx: &mut Context<'_>) -> Result<(), WatchError> {
        let mut line = Vec::new();
        for _ in 0..WATCH_FEED_BATCHES_PER_POLL {
            let visible = self.storage.current();
            self.batch.clear();
            match self.events.poll_batch(cx, &mut self.batch) {
                Poll::Ready(Ok(())) => {
                    let mut st = self.feed.state.borrow_mut();
                    for ev in &self.batch {
                        encode(ev, &mut line);
                        if !line.is_empty() {
                            let rev = ev.revision();
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

    pub(super) fn stop(&self, e: WatchError) {
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
