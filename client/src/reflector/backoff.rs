//! Bounded exponential backoff between failed attempts. Pure.

use std::time::Duration;

/// Delays that double from `initial` up to `max`. No jitter: each reflector keeps its own
/// schedule, and the delays only pace retries against a server that is failing.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        assert!(
            initial <= max,
            "backoff initial {initial:?} over max {max:?}"
        );
        Backoff {
            initial,
            max,
            next: initial,
        }
    }

    /// The delay to wait before this retry; the next one is twice as long, up to `max`.
    pub fn next_delay(&mut self) -> Duration {
        let now = self.next;
        self.next = (now * 2).min(self.max);
        now
    }

    /// After a success: the next failure waits `initial` again.
    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{REFLECTOR_BACKOFF_INITIAL, REFLECTOR_BACKOFF_MAX};

    #[test]
    fn delays_double_up_to_the_bound_and_reset() {
        let mut b = Backoff::new(REFLECTOR_BACKOFF_INITIAL, REFLECTOR_BACKOFF_MAX);
        let ms: Vec<u128> = (0..12).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(
            ms,
            [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
        );
        b.reset();
        assert_eq!(b.next_delay(), REFLECTOR_BACKOFF_INITIAL);
        assert_eq!(b.next_delay(), REFLECTOR_BACKOFF_INITIAL * 2);
    }
}
