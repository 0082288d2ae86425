//! `Retry-After` of refused requests, per priority level, as upstream's dropped-requests
//! tracker sets it: it starts at 1 s and grows or shrinks with the level's recent refusals,
//! in the manner of TCP's congestion window (additive decrease, multiplicative increase).
//!
//! Each level keeps the number of refusals in each recent second. When the first refusal of
//! a new second `t` is counted, the refusals of the `retry_after` seconds before `t` are
//! added up: if there were at least `3 x retry_after` of them, and the value has not grown
//! in the last `retry_after` seconds, it doubles (at most `FLOWCONTROL_RETRY_AFTER_MAX`);
//! if there were fewer than `retry_after`, it drops by one (at least 1). Only the refusal
//! path touches this (a lock on it is no cost to admitted requests).

use crate::limits::FLOWCONTROL_RETRY_AFTER_MAX;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};

/// One level's recent refusals and its current `Retry-After`.
#[derive(Debug)]
struct Level {
    /// (second, refusals) of past seconds, oldest first.
    past: VecDeque<(i64, u64)>,
    /// The second being counted and its refusals so far.
    second: i64,
    count: u64,
    retry_after: u32,
    /// When `retry_after` last grew.
    grown_at: i64,
}

impl Level {
    fn new() -> Level {
        Level {
            past: VecDeque::new(),
            second: 0,
            count: 0,
            retry_after: 1,
            grown_at: 0,
        }
    }

    /// Counts a refusal at second `now`.
    fn refuse(&mut self, now: i64) {
        if now == self.second {
            self.count += 1;
            return;
        }
        // Close the second counted so far; keep only what a later decision can read.
        if self.count > 0 {
            self.past.push_back((self.second, self.count));
        }
        let keep = i64::from((2 * self.retry_after).min(FLOWCONTROL_RETRY_AFTER_MAX));
        while self
            .past
            .front()
            .is_some_and(|(s, _)| self.second - s > keep)
        {
            self.past.pop_front();
        }
        self.second = now;
        self.count = 1;
        self.adjust(now);
    }

    fn adjust(&mut self, now: i64) {
        let window = i64::from(self.retry_after);
        let recent: u64 = self
            .past
            .iter()
            .filter(|(s, _)| *s < now && now - s <= window)
            .map(|(_, n)| n)
            .sum();
        if now - self.grown_at >= window && recent >= 3 * u64::from(self.retry_after) {
            self.retry_after = (self.retry_after * 2).min(FLOWCONTROL_RETRY_AFTER_MAX);
            self.grown_at = now;
        } else if recent < u64::from(self.retry_after) && self.retry_after > 1 {
            self.retry_after -= 1;
        }
    }
}

/// Every level's tracker.
#[derive(Default)]
pub struct Refusals {
    levels: Mutex<HashMap<String, Level>>,
}

impl Refusals {
    /// Counts a refusal at `level` at unix second `now`; returns the level's `Retry-After`
    /// in seconds.
    pub fn refuse(&self, level: &str, now: i64) -> u32 {
        let mut levels = self.levels.lock();
        if !levels.contains_key(level)
            && levels.len() >= crate::limits::FLOWCONTROL_LEVELS_TRACKED_MAX
        {
            levels.clear();
        }
        let l = levels.entry(level.to_string()).or_insert_with(Level::new);
        l.refuse(now);
        l.retry_after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A steady stream of refusals doubles `Retry-After` once per `Retry-After` seconds up to
    /// the cap; when refusals stop arriving in numbers it comes down by one per second.
    #[test]
    fn grows_under_refusals_and_shrinks_after() {
        let r = Refusals::default();
        // 10 refusals a second for 40 s.
        let mut seen = Vec::new();
        for t in 1_000..1_040 {
            let mut last = 0;
            for _ in 0..10 {
                last = r.refuse("pl", t);
            }
            seen.push(last);
        }
        assert_eq!(seen[0], 1, "{seen:?}");
        assert!(seen.windows(2).all(|w| w[1] >= w[0]), "{seen:?}");
        // At 10 a second its window always holds 10 x Retry-After refusals, at least the
        // 3 x it takes: it doubles every Retry-After seconds until the cap.
        assert_eq!(
            *seen.last().unwrap(),
            FLOWCONTROL_RETRY_AFTER_MAX,
            "{seen:?}"
        );
        // Then one refusal every 5 s: it comes down.
        let mut after = Vec::new();
        for t in (1_100..1_400).step_by(5) {
            after.push(r.refuse("pl", t));
        }
        assert_eq!(*after.last().unwrap(), 1, "{after:?}");
        assert!(after.windows(2).all(|w| w[1] <= w[0]), "{after:?}");
        // Levels are separate.
        assert_eq!(r.refuse("other", 1_400), 1);
    }

    /// A few refusals do not raise it.
    #[test]
    fn sparse_refusals_keep_one_second() {
        let r = Refusals::default();
        for t in 0..100 {
            assert_eq!(r.refuse("pl", t * 2), 1);
        }
    }
}
