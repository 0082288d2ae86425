//! The global sequencer: hands out revisions to every shard and merges their completions into
//! one visible order.
//!
//! Shards sync independently, so revision 12 (shard B) can become durable before 11 (shard A).
//! The sequencer keeps one slot per revision in flight and advances the *visible* revision
//! only over a contiguous run of finished slots; it publishes their events to the watch hub in
//! that order and only then acknowledges their writers (and after them wakes the watchers:
//! waking a thousand watchers costs more than acknowledging a batch, and the writers need not
//! wait for it). Hence a reader that sees N sees every change at or below N, and no watcher
//! sees N before N-1. The push into the hub is when a run of events becomes visible; it stamps
//! each event's `visible_at` with one clock read for the whole run.
//!
//! ```text
//! allocate: 10 11 12 13         slots [10:pending 11:pending 12:pending 13:pending]
//! shard B done 11, 13           slots [10:pending 11:done 12:pending 13:done]  visible = 9
//! shard A done 10, 12           → pop 10 11 12 13, publish in order            visible = 13
//! ```

use crate::keeper::Ceiling;
use crate::pending::Completion;
use crate::watch::Hub;
use crate::{Error, Event, Revision, Written};

use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub type WriteCompletion = Completion<Result<Written, Error>>;

/// What a finished revision carries: its event (none for a no-op) and its writer's result.
pub struct Finished {
    pub event: Option<Arc<Event>>,
    pub result: Result<Written, Error>,
    pub completion: WriteCompletion,
}

enum Slot {
    InFlight,
    Done(Finished),
    /// The revision was allocated but nothing was written (the value builder refused).
    Aborted,
}

struct State {
    /// Revision of `slots[0]`.
    base: u64,
    slots: VecDeque<Slot>,
}

pub struct Sequencer {
    state: Mutex<State>,
    visible: AtomicU64,
    visible_changed: Condvar,
    hub: Arc<Hub>,
    /// Revisions are handed out only at or below the durable ceiling (`keeper.rs`).
    ceiling: Arc<Ceiling>,
}

impl Sequencer {
    /// `current`: the newest revision already durable. `next`: the first revision to hand
    /// out, above every revision an earlier run may have handed out (after an unclean
    /// shutdown it is above `current + 1`: the revisions between stay unused).
    pub fn new(
        current: Revision,
        next: Revision,
        hub: Arc<Hub>,
        ceiling: Arc<Ceiling>,
    ) -> Sequencer {
        assert!(
            next > current,
            "next revision {next} not above current {current}"
        );
        Sequencer {
            state: Mutex::new(State {
                base: next.0,
                slots: VecDeque::new(),
            }),
            visible: AtomicU64::new(current.0),
            visible_changed: Condvar::new(),
            hub,
            ceiling,
        }
    }

    pub fn visible(&self) -> Revision {
        Revision(self.visible.load(Ordering::Acquire))
    }

    /// Allocates the next revision. Callers hold their shard's writer lock, so revisions are
    /// increasing within each shard's log. Waits if the revision is above the durable ceiling
    /// (only when writers outrun the keeper's raise); fails if the engine stopped meanwhile.
    pub fn allocate(&self) -> Result<Revision, Error> {
        loop {
            let mut st = self.state.lock();
            let rev = Revision(st.base + st.slots.len() as u64);
            if self.ceiling.admit(rev) {
                st.slots.push_back(Slot::InFlight);
                return Ok(rev);
            }
            drop(st);
            self.ceiling.wait_for(rev)?;
        }
    }

    /// The revision the next allocation gets (unless another shard's comes first).
    pub fn next(&self) -> Revision {
        let st = self.state.lock();
        Revision(st.base + st.slots.len() as u64)
    }

    pub fn abort(&self, rev: Revision) {
        self.finish_slots(std::iter::once((rev, None)));
    }

    /// Marks revisions durable (or aborted when `None`), publishes what became visible and
    /// acknowledges its writers.
    pub fn finish_slots(&self, items: impl IntoIterator<Item = (Revision, Option<Finished>)>) {
        let mut ready: Vec<Finished> = Vec::new();
        let woken = {
            let mut st = self.state.lock();
            for (rev, f) in items {
                assert!(
                    rev.0 >= st.base,
                    "revision {rev} finished twice (base {})",
                    st.base
                );
                let i = (rev.0 - st.base) as usize;
                let slot = &mut st.slots[i];
                assert!(
                    matches!(slot, Slot::InFlight),
                    "revision {rev} finished twice"
                );
                *slot = match f {
                    Some(f) => Slot::Done(f),
                    None => Slot::Aborted,
                };
            }
            while matches!(st.slots.front(), Some(Slot::Done(_) | Slot::Aborted)) {
                if let Some(Slot::Done(f)) = st.slots.pop_front() {
                    ready.push(f);
                }
                st.base += 1;
            }
            if ready.is_empty() {
                self.visible.store(st.base - 1, Ordering::Release);
                self.visible_changed.notify_all();
                return;
            }
            // Published under the lock so the ring receives events in revision order; the
            // push stamps them visible (`Event::visible_at`, one clock read for the run).
            let woken = self.hub.push(ready.iter().filter_map(|f| f.event.clone()));
            self.visible.store(st.base - 1, Ordering::Release);
            woken
        };
        self.visible_changed.notify_all();
        // Acknowledge first: a handful of writers, while waking the watchers can mean a
        // thousand wakers, which the writers need not wait for.
        for f in ready {
            f.completion.complete(f.result);
        }
        crate::watch::wake(woken);
    }

    /// Revisions allocated and not yet visible.
    pub fn in_flight(&self) -> usize {
        self.state.lock().slots.len()
    }

    /// Waits until `rev` is visible or `timeout` passes.
    pub fn wait_for(&self, rev: Revision, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.state.lock();
        while self.visible() < rev {
            if self
                .visible_changed
                .wait_until(&mut st, deadline)
                .timed_out()
            {
                return self.visible() >= rev;
            }
        }
        true
    }
}
