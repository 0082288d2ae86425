//! Pacing: a busy subscriber reads at most once per `WATCH_FEED_INTERVAL`, at one of
//! `WATCH_FEED_PHASES` phase points of the interval (drawn when it joins), so that under load
//! each watcher gets one write per interval and the watchers' writes are spread evenly over
//! it. One timer per feed (in its task) releases the subscribers of each phase point.

use super::log::FeedState;
use super::subscription::{Slot, Subscription};
use crate::limits::{WATCH_FEED_INTERVAL, WATCH_FEED_PHASES};
use std::time::Duration;
use tokio::time::Instant;

/// Time between two phase points of a feed.
pub(super) fn phase_len() -> Duration {
    WATCH_FEED_INTERVAL / WATCH_FEED_PHASES as u32
}

/// The index of the phase point at or before `now` (counted from `epoch`).
pub(super) fn phase_point_at(epoch: Instant, now: Instant) -> u64 {
    (now.saturating_duration_since(epoch).as_nanos() / phase_len().as_nanos()) as u64
}

/// When phase point `k` comes.
pub(super) fn phase_point_time(epoch: Instant, k: u64) -> Instant {
    epoch + Duration::from_nanos((phase_len().as_nanos() as u64).saturating_mul(k))
}

/// Origin of every feed's phase points.
pub(super) fn pacing_epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    Instant::from_std(*EPOCH.get_or_init(std::time::Instant::now))
}

impl FeedState {
    /// Wakes the subscribers paced in `phase`: their phase point has come.
    pub(super) fn release_phase(&mut self, phase: usize) {
        let list = std::mem::take(&mut self.paced[phase]);
        self.paced[phase] = wake_listed(&mut self.slots, list, |s| s.paced && s.phase == phase);
    }

    pub(super) fn any_paced(&self) -> bool {
        self.paced.iter().any(|p| !p.is_empty())
    }
}

/// Wakes the subscribers of the slots in `list` that still exist and are `due` (no longer
/// paced, if they were); returns `list` emptied, for reuse.
pub(super) fn wake_listed(
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

impl Subscription {
    /// Waits for its next phase point before reading again (if paced at all, and unless the
    /// feed has ended: its task no longer releases anyone).
    pub(super) fn pace(&self) {
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
}
