//! One core's seats across every priority level: who runs now, who waits, who is refused,
//! and borrowing between levels. Pure (requests are ids; see `super` for the async side).
//!
//! **Borrowing** (upstream rebalances every 10 s from measured demand; keel decides per
//! request, on this core): every limited level keeps `guaranteed = nominal - lendable` seats
//! that no other level may take. A level below its guarantee always gets a seat; above it, a
//! level may take one more (up to `cap`, its nominal plus its borrowing limit) when the core's
//! seats in use, plus that seat, plus every other level's unused guarantee, still fit in the
//! core's total (the sum of the nominals). Invariant: `used + Σ max(0, guaranteed - executing)
//! ≤ total`, so a level's guaranteed seats are free whenever it needs them, and a level's idle
//! lendable seats are what the others borrow. Exempt levels hold no seats.
//!
//! **Width**: a request takes `width` seats (the work estimate), clamped to what its level
//! could ever hold on this core; a level's next request that does not fit waits for seats
//! to free, and nothing of that level is dispatched past it.

use super::config::{LimitResponse, Seats};
use super::queueset::QueueSet;
use crate::limits::{FLOWCONTROL_MAX_SEATS, FLOWCONTROL_MAX_SEATS_PERCENT};

/// One level on this core.
#[derive(Clone, Debug)]
pub struct Slot {
    pub seats: Seats,
    pub exempt: bool,
    /// `None` for `limitResponse: Reject`.
    pub queues: Option<QueueSet>,
    pub executing: u32,
}

impl Slot {
    pub fn new(seats: Seats, exempt: bool, response: &LimitResponse) -> Slot {
        let queues = match response {
            LimitResponse::Reject => None,
            LimitResponse::Queue {
                queues,
                hand_size,
                queue_length_limit,
            } => Some(QueueSet::new(*queues, *hand_size, *queue_length_limit)),
        };
        Slot {
            seats,
            exempt,
            queues,
            executing: 0,
        }
    }

    pub fn waiting(&self) -> usize {
        self.queues.as_ref().map_or(0, QueueSet::waiting)
    }
}

/// Why a request was refused (upstream's `reason` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Its queue was full.
    QueueFull,
    /// A `Reject` level had no seat.
    ConcurrencyLimit,
    /// It waited longer than allowed.
    TimeOut,
}

impl Reason {
    pub fn label(self) -> &'static str {
        match self {
            Reason::QueueFull => "queue-full",
            Reason::ConcurrencyLimit => "concurrency-limit",
            Reason::TimeOut => "time-out",
        }
    }
}

/// The decision on a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Runs now; `queue` is the queue its seat is counted in (to pass to `finish`).
    Run {
        queue: Option<usize>,
        /// The seats it holds.
        width: u32,
    },
    /// Waits in `queue` of its level until `finish` dispatches it (or it is cancelled).
    Wait {
        queue: usize,
    },
    Reject(Reason),
}

/// A waiting request that got a seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatched {
    pub level: usize,
    pub queue: usize,
    pub id: u64,
    /// The seats it holds.
    pub width: u32,
}

/// Every level of one core.
#[derive(Clone, Debug, Default)]
pub struct Dispatcher {
    pub levels: Vec<Slot>,
    /// Σ nominal of the limited levels.
    total: u32,
    /// Seats in use by limited levels.
    used: u32,
    /// Level to look at first in the next dispatch round (round robin between levels).
    next: usize,
}

impl Dispatcher {
    pub fn new(levels: Vec<Slot>) -> Dispatcher {
        let limited = levels.iter().filter(|l| !l.exempt);
        let total = limited.clone().map(|l| l.seats.nominal).sum();
        let used = limited.map(|l| l.executing).sum();
        Dispatcher {
            levels,
            total,
            used,
            next: 0,
        }
    }

    /// Seats in use by limited levels (borrowed ones included).
    pub fn used(&self) -> u32 {
        self.used
    }

    /// The most seats one request may take at level `i`: 15% of the level's seats on this
    /// core, rounded up, and at most `FLOWCONTROL_MAX_SEATS` (upstream's bounds on a list's
    /// estimate: `priorityLevelMaxSeatsPercent`, `MaximumListSeatsLimit`).
    pub fn max_width(&self, i: usize) -> u32 {
        let nominal = self.levels[i].seats.nominal;
        nominal
            .saturating_mul(FLOWCONTROL_MAX_SEATS_PERCENT)
            .div_ceil(100)
            .clamp(1, FLOWCONTROL_MAX_SEATS)
    }

    /// The seats a request `width` wide takes at level `i`: at least one, at most what the
    /// level could ever hold here (its cap, and the core's total), so that it can run.
    pub fn clamp_width(&self, i: usize, width: u32) -> u32 {
        let l = &self.levels[i];
        if l.exempt {
            return 1;
        }
        width.min(l.seats.cap).min(self.total).max(1)
    }

    /// Whether level `i` may take `width` more seats now.
    pub fn can_take(&self, i: usize, width: u32) -> bool {
        let l = &self.levels[i];
        if l.exempt || l.executing + width <= l.seats.guaranteed {
            return true;
        }
        if l.executing + width > l.seats.cap {
            return false;
        }
        let reserved_by_others: u32 = self
            .levels
            .iter()
            .enumerate()
            .filter(|(j, o)| *j != i && !o.exempt)
            .map(|(_, o)| o.seats.guaranteed.saturating_sub(o.executing))
            .sum();
        self.used + width + reserved_by_others <= self.total
    }

    fn take(&mut self, i: usize, width: u32) {
        let l = &mut self.levels[i];
        l.executing += width;
        if !l.exempt {
            self.used += width;
        }
    }

    /// Decides on request `id` of flow `flow_hash` at level `i`, `width` seats wide (clamped
    /// by [`Dispatcher::clamp_width`]; `Admit::Run` and `Dispatched` say the seats it holds);
    /// also returns the waiting requests that got seats meanwhile (never the caller's: that
    /// one is `Run`).
    pub fn admit(
        &mut self,
        i: usize,
        flow_hash: u64,
        id: u64,
        width: u32,
    ) -> (Admit, Vec<Dispatched>) {
        let width = self.clamp_width(i, width);
        let waiting = self.levels[i].waiting();
        if waiting == 0 && self.can_take(i, width) {
            self.take(i, width);
            let queue = self.levels[i]
                .queues
                .as_mut()
                .map(|q| q.start_unqueued(flow_hash, width));
            return (Admit::Run { queue, width }, Vec::new());
        }
        let Some(queues) = self.levels[i].queues.as_mut() else {
            return (Admit::Reject(Reason::ConcurrencyLimit), Vec::new());
        };
        let queue = match queues.enqueue(flow_hash, id, width) {
            Ok(q) => q,
            Err(_) => return (Admit::Reject(Reason::QueueFull), Vec::new()),
        };
        let mut started = self.dispatch_all();
        if let Some(pos) = started.iter().position(|d| d.id == id) {
            let me = started.remove(pos);
            return (
                Admit::Run {
                    queue: Some(me.queue),
                    width: me.width,
                },
                started,
            );
        }
        (Admit::Wait { queue }, started)
    }

    /// A request of level `i` that held `width` seats finished (`queue` and `width` as
    /// `Admit::Run` or `Dispatched` gave them); returns the waiting requests that get seats
    /// now.
    pub fn finish(&mut self, i: usize, queue: Option<usize>, width: u32) -> Vec<Dispatched> {
        let Some(l) = self.levels.get_mut(i) else {
            return Vec::new();
        };
        l.executing = l.executing.saturating_sub(width);
        if let (Some(qs), Some(q)) = (l.queues.as_mut(), queue) {
            qs.finish(q, width);
        }
        if !l.exempt {
            self.used = self.used.saturating_sub(width);
        }
        self.dispatch_all()
    }

    /// Takes a waiting request out of its queue (time-out, client gone); false if it is not
    /// waiting any more.
    pub fn cancel(&mut self, i: usize, queue: usize, id: u64) -> bool {
        self.levels
            .get_mut(i)
            .and_then(|l| l.queues.as_mut())
            .is_some_and(|qs| qs.remove(queue, id))
    }

    /// Gives free seats to waiting requests, the levels in turn, one request per level per
    /// round; a level whose next request does not fit is passed over.
    fn dispatch_all(&mut self) -> Vec<Dispatched> {
        let mut out = Vec::new();
        let n = self.levels.len();
        loop {
            let mut progressed = false;
            for k in 0..n {
                let i = (self.next + k) % n;
                let Some((_, width)) = self.levels[i].queues.as_ref().and_then(|q| q.next()) else {
                    continue;
                };
                if !self.can_take(i, width) {
                    continue;
                }
                let Some((queue, id, width)) =
                    self.levels[i].queues.as_mut().and_then(|q| q.dispatch())
                else {
                    continue;
                };
                self.take(i, width);
                out.push(Dispatched {
                    level: i,
                    queue,
                    id,
                    width,
                });
                progressed = true;
            }
            if n > 0 {
                self.next = (self.next + 1) % n;
            }
            if !progressed {
                return out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seats(nominal: u32, guaranteed: u32) -> Seats {
        Seats {
            nominal,
            guaranteed,
            cap: u32::MAX,
        }
    }

    fn queued(nominal: u32, guaranteed: u32) -> Slot {
        Slot::new(
            seats(nominal, guaranteed),
            false,
            &LimitResponse::Queue {
                queues: 8,
                hand_size: 2,
                queue_length_limit: 2,
            },
        )
    }

    fn run(a: Admit) -> bool {
        matches!(a, Admit::Run { .. })
    }

    /// A level within its seats runs at once; beyond them it queues; beyond the queues it is
    /// refused with queue-full; a Reject level is refused with concurrency-limit.
    #[test]
    fn run_wait_reject() {
        let mut d = Dispatcher::new(vec![
            queued(2, 2),
            Slot::new(seats(1, 1), false, &LimitResponse::Reject),
        ]);
        assert!(run(d.admit(0, 1, 1, 1).0));
        assert!(run(d.admit(0, 1, 2, 1).0));
        let waits: Vec<Admit> = (3..7).map(|id| d.admit(0, 1, id, 1).0).collect();
        assert!(
            waits.iter().all(|a| matches!(a, Admit::Wait { .. })),
            "{waits:?}"
        );
        assert_eq!(d.admit(0, 1, 7, 1).0, Admit::Reject(Reason::QueueFull));
        assert!(run(d.admit(1, 1, 8, 1).0));
        assert_eq!(
            d.admit(1, 1, 9, 1).0,
            Admit::Reject(Reason::ConcurrencyLimit)
        );
        // A finished request hands its seat to a waiting one of the same level.
        let started = d.finish(0, None, 1);
        assert_eq!(started.len(), 1);
        assert_eq!(started[0].level, 0);
    }

    /// Exempt levels always run and hold no seats.
    #[test]
    fn exempt_always_runs() {
        let mut d = Dispatcher::new(vec![
            Slot::new(seats(0, 0), true, &LimitResponse::Reject),
            Slot::new(seats(1, 1), false, &LimitResponse::Reject),
        ]);
        for id in 0..100 {
            assert!(run(d.admit(0, 0, id, 1).0));
        }
        assert_eq!(d.used(), 0);
        assert!(run(d.admit(1, 0, 100, 1).0));
    }

    /// An idle level's lendable seats are borrowed; its guaranteed ones are not, and come
    /// back to it first.
    #[test]
    fn borrowing_takes_lendable_seats_only() {
        // Level 0: 4 seats, 2 lendable. Level 1: 2 seats, none lendable, Reject.
        let mut d = Dispatcher::new(vec![
            queued(4, 2),
            Slot::new(seats(2, 2), false, &LimitResponse::Reject),
        ]);
        // Level 1 takes its own 2, then borrows level 0's 2 lendable seats, then stops.
        let got: Vec<bool> = (0..5).map(|id| run(d.admit(1, 0, id, 1).0)).collect();
        assert_eq!(got, vec![true, true, true, true, false]);
        // Level 0 still has its 2 guaranteed seats.
        assert!(run(d.admit(0, 0, 10, 1).0));
        assert!(run(d.admit(0, 0, 11, 1).0));
        assert!(matches!(d.admit(0, 0, 12, 1).0, Admit::Wait { .. }));
        // When a borrower finishes, the seat goes to level 0's waiting request.
        let started = d.finish(1, None, 1);
        assert_eq!(
            started,
            vec![Dispatched {
                level: 0,
                queue: started[0].queue,
                id: 12,
                width: 1,
            }]
        );
    }

    /// The borrowing limit bounds a level's seats.
    #[test]
    fn borrowing_limit_caps() {
        let capped = Seats {
            nominal: 1,
            guaranteed: 1,
            cap: 2,
        };
        let mut d = Dispatcher::new(vec![
            Slot::new(capped, false, &LimitResponse::Reject),
            Slot::new(seats(10, 0), false, &LimitResponse::Reject),
        ]);
        let got: Vec<bool> = (0..3).map(|id| run(d.admit(0, 0, id, 1).0)).collect();
        assert_eq!(got, vec![true, true, false]);
    }

    /// A cancelled waiter leaves its queue and is never dispatched.
    #[test]
    fn cancelled_waiters_are_not_dispatched() {
        let mut d = Dispatcher::new(vec![queued(1, 1)]);
        assert!(run(d.admit(0, 0, 1, 1).0));
        let Admit::Wait { queue } = d.admit(0, 0, 2, 1).0 else {
            panic!("waits")
        };
        assert!(d.cancel(0, queue, 2));
        assert!(!d.cancel(0, queue, 2));
        assert!(d.finish(0, None, 1).is_empty());
        assert_eq!(d.used(), 0);
    }
    /// A wide request takes its width in seats; when it does not fit it waits, and narrow
    /// requests of its level queued behind it wait too (no starvation of the wide one); a
    /// request wider than the level could ever hold is clamped so that it can run.
    #[test]
    fn wide_requests_take_their_width() {
        let mut d = Dispatcher::new(vec![Slot::new(
            seats(4, 4),
            false,
            &LimitResponse::Queue {
                queues: 1,
                hand_size: 1,
                queue_length_limit: 10,
            },
        )]);
        assert_eq!(
            d.admit(0, 1, 1, 3).0,
            Admit::Run {
                queue: Some(0),
                width: 3
            }
        );
        assert_eq!(d.used(), 3);
        // 1 seat left: a 3-wide request waits, and a 1-wide one behind it too.
        assert!(matches!(d.admit(0, 1, 2, 3).0, Admit::Wait { .. }));
        assert!(matches!(d.admit(0, 1, 3, 1).0, Admit::Wait { .. }));
        // The first finishes: 4 free; the 3-wide one runs, then the 1-wide one fits.
        let started = d.finish(0, Some(0), 3);
        let ids: Vec<(u64, u32)> = started.iter().map(|s| (s.id, s.width)).collect();
        assert_eq!(ids, vec![(2, 3), (3, 1)]);
        assert_eq!(d.used(), 4);
        // Wider than the level: clamped to its 4 seats.
        assert_eq!(d.clamp_width(0, 50), 4);
        assert_eq!(d.clamp_width(0, 0), 1);
        d.finish(0, Some(0), 3);
        d.finish(0, Some(0), 1);
        assert_eq!(d.used(), 0);
        assert!(matches!(
            d.admit(0, 1, 4, 50).0,
            Admit::Run { width: 4, .. }
        ));
    }

    /// Two flows both backlogged at one level, one of 4-wide requests, one of 1-wide: fair
    /// queuing gives them about the same seats, so the narrow flow gets about four requests
    /// for each of the wide flow's.
    #[test]
    fn fair_queuing_shares_seats_not_requests() {
        let mut d = Dispatcher::new(vec![Slot::new(
            seats(4, 4),
            false,
            &LimitResponse::Queue {
                queues: 64,
                hand_size: 1,
                queue_length_limit: 1000,
            },
        )]);
        let wide = 0u64;
        let narrow = (1..)
            .find(|h| {
                let qs = d.levels[0].queues.as_ref().unwrap();
                qs.deal(*h) != qs.deal(wide)
            })
            .unwrap();
        // Fill the level so that everything after queues.
        let Admit::Run { queue, width } = d.admit(0, 99, 0, 4).0 else {
            panic!("runs")
        };
        for id in 1..=200 {
            d.admit(0, wide, id, 4);
            d.admit(0, narrow, 1000 + id, 1);
        }
        // Run requests one after another (each finishes before the next is dispatched).
        let mut running = vec![(queue, width)];
        let (mut wide_seats, mut narrow_seats) = (0u32, 0u32);
        for _ in 0..100 {
            let (q, w) = running.remove(0);
            for s in d.finish(0, q, w) {
                if s.id >= 1000 {
                    narrow_seats += s.width;
                } else {
                    wide_seats += s.width;
                }
                running.push((Some(s.queue), s.width));
            }
        }
        let ratio = f64::from(narrow_seats) / f64::from(wide_seats);
        assert!(
            (0.75..1.34).contains(&ratio),
            "narrow {narrow_seats} seats, wide {wide_seats}"
        );
    }
}
