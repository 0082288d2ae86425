//! History compaction for backends that do not compact themselves (the in-memory model;
//! etcd, which upstream's API servers compact every `--etcd-compaction-interval`): every
//! interval, the revision that was current one history window ago becomes the oldest one
//! reads and watches may ask for. The embedded engine compacts itself on the same window.

use super::Storage;
use crate::limits::COMPACTION_SAMPLES_MAX;
use keel_engine::Revision;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The revisions seen over time, newest last, so that "current `window` ago" can be told.
#[derive(Debug, Default)]
pub struct Samples {
    seen: VecDeque<(Instant, Revision)>,
}

impl Samples {
    /// Records `rev` as current at `now`; returns the newest revision recorded at least
    /// `window` before `now` (what may be compacted), if any.
    pub fn observe(&mut self, now: Instant, rev: Revision, window: Duration) -> Option<Revision> {
        if self.seen.back().is_none_or(|(_, r)| *r != rev) {
            self.seen.push_back((now, rev));
        }
        while self.seen.len() > COMPACTION_SAMPLES_MAX {
            self.seen.pop_front();
        }
        let cutoff = now.checked_sub(window)?;
        let mut due = None;
        while let Some(&(at, r)) = self.seen.front() {
            if at > cutoff {
                break;
            }
            due = Some(r);
            // Keep the last sample at or before the cutoff: the next compaction starts there.
            if self.seen.get(1).is_some_and(|(next, _)| *next <= cutoff) {
                self.seen.pop_front();
            } else {
                break;
            }
        }
        due
    }
}

/// Runs the compactor on its own thread if the backend needs one.
pub fn spawn_if_needed(storage: Storage, interval: Duration, window: Duration) {
    if storage.compacts_itself() {
        return;
    }
    std::thread::Builder::new()
        .name("keel-compactor".into())
        .spawn(move || {
            let mut samples = Samples::default();
            loop {
                let rev = storage.current();
                if let Some(due) = samples.observe(Instant::now(), rev, window) {
                    if let Err(e) = storage.compact(due) {
                        eprintln!("compactor: compacting to {due}: {e}");
                    }
                }
                std::thread::sleep(interval);
            }
        })
        .expect("spawn compactor");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compacts_to_the_revision_current_one_window_ago() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let w = s(10);
        let mut samples = Samples::default();
        assert_eq!(samples.observe(t0, Revision(5), w), None);
        assert_eq!(samples.observe(t0 + s(4), Revision(9), w), None);
        assert_eq!(samples.observe(t0 + s(9), Revision(9), w), None);
        // Ten seconds after revision 5 was seen, 5 may go (9 was seen only 6 s ago).
        assert_eq!(
            samples.observe(t0 + s(10), Revision(12), w),
            Some(Revision(5))
        );
        assert_eq!(
            samples.observe(t0 + s(15), Revision(12), w),
            Some(Revision(9))
        );
        assert_eq!(
            samples.observe(t0 + s(30), Revision(20), w),
            Some(Revision(12))
        );
        // Quiet stores keep one sample.
        for i in 0..10 {
            samples.observe(t0 + s(40 + i), Revision(20), w);
        }
        assert!(samples.seen.len() <= 2, "{:?}", samples.seen);
    }

    #[test]
    fn samples_stay_bounded() {
        let t0 = Instant::now();
        let mut samples = Samples::default();
        for i in 0..(COMPACTION_SAMPLES_MAX as u64 * 2) {
            samples.observe(
                t0 + Duration::from_millis(i),
                Revision(i + 1),
                Duration::from_secs(3600),
            );
        }
        assert_eq!(samples.seen.len(), COMPACTION_SAMPLES_MAX);
    }
}
