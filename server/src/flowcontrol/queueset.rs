//! Fair queuing for one priority level: shuffle sharding of flows onto queues, and a virtual
//! clock that dispatches from the queue that has been served least.
//!
//! Pure data (no clock, no I/O): requests are opaque ids; the caller decides when seats are
//! free (see `dispatch`). A request is `width` seats wide (the work estimate: a large list
//! takes several seats, see `super::estimate`); its queue counts those seats while it runs.
//!
//! **Shuffle sharding** (upstream's `shufflesharding.Dealer`): a flow's 64-bit hash deals a
//! *hand* of `hand_size` distinct queues out of `queues`, by reading the hash as digits of
//! mixed radix `queues, queues-1, ...`; the request joins the hand's queue with the fewest
//! requests waiting and executing (first in hand order on ties). Two flows share all their
//! queues only with a small probability, so one heavy flow cannot fill every queue another
//! flow could use.
//!
//! **Fair dispatch** (upstream's fair queuing for server requests, simplified): each queue
//! carries a virtual start time `next_r`; a queue that becomes active starts at the current
//! virtual time `r`; a dispatch takes the head of the active queue with the least `next_r`
//! (ties: the queue after the last one served, round robin) and advances that queue's
//! `next_r` by the request's width. Active queues are therefore served in turn whatever their
//! length: a flow that queues a thousand requests gets one turn per round, as does a flow that
//! queues one, and a flow of wide requests gets as many seats per round as one of narrow ones.
//! A chosen request that does not fit in the free seats waits at the head (nothing is
//! dispatched past it), so wide requests are not starved by narrow ones.

use std::collections::VecDeque;

/// A request waiting in a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Waiting {
    id: u64,
    width: u32,
}

#[derive(Clone, Debug, Default)]
struct Queue {
    waiting: VecDeque<Waiting>,
    /// Seats of this queue's dispatched requests that have not finished.
    executing: u32,
    /// Virtual time at which this queue's next request may start.
    next_r: u64,
}

/// The queues of one priority level (on one core).
#[derive(Clone, Debug)]
pub struct QueueSet {
    queues: Vec<Queue>,
    hand_size: usize,
    queue_length_limit: usize,
    /// The virtual time: the start time of the last dispatched request.
    r: u64,
    /// The queue served last (round-robin tie breaking).
    last: usize,
    waiting_total: usize,
}

/// Why a request did not get a place in a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueFull;

impl QueueSet {
    /// `queues` ≥ 1, `1 ≤ hand_size ≤ queues`, `queue_length_limit` ≥ 1 (config validates
    /// and clamps before this).
    pub fn new(queues: usize, hand_size: usize, queue_length_limit: usize) -> QueueSet {
        assert!(
            queues >= 1 && hand_size >= 1 && hand_size <= queues && queue_length_limit >= 1,
            "queue set shape: queues={queues} hand_size={hand_size} limit={queue_length_limit}"
        );
        QueueSet {
            queues: vec![Queue::default(); queues],
            hand_size,
            queue_length_limit,
            r: 0,
            last: queues - 1,
            waiting_total: 0,
        }
    }

    /// The least loaded queue (waiting and executing requests) of the flow's hand, the
    /// first of the hand among equals.
    fn least_loaded(&self, flow_hash: u64) -> usize {
        let mut best = (usize::MAX, 0);
        deal_each(self.queues.len(), self.hand_size, flow_hash, |q| {
            let load = self.queues[q].waiting.len() + self.queues[q].executing as usize;
            if load < best.0 {
                best = (load, q);
            }
            // An idle queue is the first least loaded: the rest of the hand need not be
            // dealt (on a server that is not saturated, most of them are idle).
            load > 0
        });
        best.1
    }

    /// Puts request `id` (`width` seats) of the flow `flow_hash` in the least loaded queue of
    /// the flow's hand; refused when that queue already holds `queue_length_limit` waiting
    /// requests.
    pub fn enqueue(&mut self, flow_hash: u64, id: u64, width: u32) -> Result<usize, QueueFull> {
        let q = self.least_loaded(flow_hash);
        let queue = &mut self.queues[q];
        if queue.waiting.len() >= self.queue_length_limit {
            return Err(QueueFull);
        }
        if queue.waiting.is_empty() {
            queue.next_r = queue.next_r.max(self.r);
        }
        queue.waiting.push_back(Waiting { id, width });
        self.waiting_total += 1;
        Ok(q)
    }

    /// The queue fair dispatch serves next, and the width of the request at its head.
    pub fn next(&self) -> Option<(usize, u32)> {
        if self.waiting_total == 0 {
            return None;
        }
        let n = self.queues.len();
        let mut best: Option<usize> = None;
        for step in 1..=n {
            let q = (self.last + step) % n;
            if self.queues[q].waiting.is_empty() {
                continue;
            }
            if best.is_none_or(|b| self.queues[q].next_r < self.queues[b].next_r) {
                best = Some(q);
            }
        }
        let q = best?;
        Some((q, self.queues[q].waiting.front()?.width))
    }

    /// Takes the next request to run, fairly across queues (the one [`QueueSet::next`]
    /// names): `(queue, id, width)`.
    pub fn dispatch(&mut self) -> Option<(usize, u64, u32)> {
        let (q, _) = self.next()?;
        let queue = &mut self.queues[q];
        let w = queue
            .waiting
            .pop_front()
            .expect("chosen queue is not empty");
        self.r = self.r.max(queue.next_r);
        queue.next_r += u64::from(w.width);
        queue.executing += w.width;
        self.waiting_total -= 1;
        self.last = q;
        Some((q, w.id, w.width))
    }

    /// Counts a request (`width` seats) that runs without waiting, in the queue its flow
    /// would use (so that shuffle sharding sees the flow's load).
    pub fn start_unqueued(&mut self, flow_hash: u64, width: u32) -> usize {
        let q = self.least_loaded(flow_hash);
        let queue = &mut self.queues[q];
        queue.next_r = queue.next_r.max(self.r) + u64::from(width);
        queue.executing += width;
        q
    }

    /// A dispatched request (`width` seats) of queue `q` finished.
    pub fn finish(&mut self, q: usize, width: u32) {
        if let Some(queue) = self.queues.get_mut(q) {
            queue.executing = queue.executing.saturating_sub(width);
        }
    }

    /// Takes a waiting request out (it timed out or its client left); false if it was not
    /// waiting (already dispatched).
    pub fn remove(&mut self, q: usize, id: u64) -> bool {
        let Some(queue) = self.queues.get_mut(q) else {
            return false;
        };
        match queue.waiting.iter().position(|w| w.id == id) {
            Some(i) => {
                queue.waiting.remove(i);
                self.waiting_total -= 1;
                true
            }
            None => false,
        }
    }

    /// Requests waiting in all queues.
    pub fn waiting(&self) -> usize {
        self.waiting_total
    }

    /// Every waiting request, in no particular order, leaving the queues empty.
    pub fn drain(&mut self) -> Vec<u64> {
        self.waiting_total = 0;
        self.queues
            .iter_mut()
            .flat_map(|q| q.waiting.drain(..).map(|w| w.id))
            .collect()
    }
}

/// The largest hand a level deals (upstream's validation bounds a hand by the entropy of its
/// deal, 60 bits, so no valid configuration needs more: 60 cards of a deck of 2).
pub const HAND_SIZE_MAX: usize = 64;

/// Deals `hand_size` (at most [`HAND_SIZE_MAX`]) distinct cards out of `deck` from the digits
/// of `hash` (mixed radix `deck, deck-1, ...`): the i-th digit picks among the cards not dealt
/// yet. Each card is handed to `f` in hand order, until `f` returns false. On the stack: the
/// request path deals one hand per request that runs at once.
pub fn deal_each(deck: usize, hand_size: usize, hash: u64, mut f: impl FnMut(usize) -> bool) {
    // The dealt cards in increasing order, to step over (a deck has at most 10,000,000
    // queues, upstream's bound: a card fits in 32 bits).
    let mut sorted = [0u32; HAND_SIZE_MAX];
    let mut rest = hash;
    for i in 0..hand_size.min(deck).min(HAND_SIZE_MAX) {
        let radix = (deck - i) as u64;
        let mut card = (rest % radix) as u32;
        rest /= radix;
        // The card-th of the cards not dealt yet: step over the dealt ones, in order.
        let mut at = i;
        for (j, &d) in sorted[..i].iter().enumerate() {
            if d <= card {
                card += 1;
            } else {
                at = j;
                break;
            }
        }
        // Insert it in order (a few cards: shifted one by one, no memmove call).
        let mut k = i;
        while k > at {
            sorted[k] = sorted[k - 1];
            k -= 1;
        }
        sorted[at] = card;
        if !f(card as usize) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand `deal_each` deals.
    fn deal(deck: usize, hand_size: usize, hash: u64) -> Vec<usize> {
        let mut hand = Vec::new();
        deal_each(deck, hand_size, hash, |c| {
            hand.push(c);
            true
        });
        hand
    }

    impl QueueSet {
        pub(in crate::flowcontrol) fn deal(&self, flow_hash: u64) -> Vec<usize> {
            deal(self.queues.len(), self.hand_size, flow_hash)
        }
    }

    /// A hand is `hand_size` distinct queues in range, and the same hash deals the same hand.
    #[test]
    fn deals_distinct_cards_deterministically() {
        for (deck, hand_size) in [(1, 1), (8, 8), (64, 6), (128, 6), (16, 4)] {
            for hash in [0u64, 1, 7, 0xdead_beef, u64::MAX, 1 << 40] {
                let hand = deal(deck, hand_size, hash);
                let mut sorted = hand.to_vec();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), hand_size, "deck {deck} hash {hash}: {hand:?}");
                assert!(hand.iter().all(|&c| c < deck));
                assert_eq!(hand, deal(deck, hand_size, hash));
            }
        }
        // Digits in mixed radix: hash 0 deals 0,1,2; hash 1 deals 1,0,2; hash 8 (= 0 + 1*8)
        // deals 0 then the second of the rest (2).
        assert_eq!(deal(8, 3, 0), [0, 1, 2]);
        assert_eq!(deal(8, 3, 1), [1, 0, 2]);
        assert_eq!(deal(8, 3, 8), [0, 2, 1]);
    }

    /// The dealer on the stack deals what the plain definition does: the i-th digit picks
    /// the digit-th card among those not dealt yet.
    #[test]
    fn deals_as_the_plain_definition() {
        fn reference(deck: usize, hand_size: usize, hash: u64) -> Vec<usize> {
            let mut left: Vec<usize> = (0..deck).collect();
            let mut rest = hash;
            let mut hand = Vec::new();
            for i in 0..hand_size.min(deck) {
                let radix = (deck - i) as u64;
                hand.push(left.remove((rest % radix) as usize));
                rest /= radix;
            }
            hand
        }
        let mut h = 0x9e37_79b9_7f4a_7c15u64;
        for (deck, hand_size) in [
            (1, 1),
            (2, 2),
            (8, 8),
            (64, 6),
            (128, 6),
            (512, 8),
            (2, 60),
            (70, 64),
        ] {
            for _ in 0..200 {
                h = super::super::classify::flow_hash("fs", &h.to_string());
                assert_eq!(
                    deal(deck, hand_size, h),
                    reference(deck, hand_size, h).as_slice(),
                    "deck {deck} hand {hand_size} hash {h}"
                );
            }
        }
    }

    /// Over many flows every queue is used about equally (the deal is not biased).
    #[test]
    fn deals_spread_over_the_deck() {
        let mut counts = [0usize; 16];
        for i in 0..16_000u64 {
            for c in deal(
                16,
                4,
                super::super::classify::flow_hash("fs", &i.to_string()),
            ) {
                counts[c] += 1;
            }
        }
        // 4,000 per card expected.
        assert!(
            counts.iter().all(|&n| (3_400..4_600).contains(&n)),
            "{counts:?}"
        );
    }

    /// A flow joins the least loaded queue of its hand (the first of the hand among
    /// equals: an idle one ends the search).
    #[test]
    fn a_flow_uses_the_shortest_queue_of_its_hand() {
        let mut qs = QueueSet::new(8, 3, 10);
        let hand = qs.deal(8 * 7 + 8 + 5);
        assert_eq!(hand, [5, 1, 2]);
        assert_eq!(qs.start_unqueued(8 * 7 + 8 + 5, 1), 5);
        assert_eq!(qs.start_unqueued(8 * 7 + 8 + 5, 1), 1);
        assert_eq!(qs.start_unqueued(8 * 7 + 8 + 5, 1), 2);
        qs.finish(1, 1);
        assert_eq!(qs.start_unqueued(8 * 7 + 8 + 5, 1), 1);
        assert_eq!(
            qs.start_unqueued(8 * 7 + 8 + 5, 1),
            5,
            "all at 2: the first"
        );

        let mut qs = QueueSet::new(8, 3, 10);
        let hand = qs.deal(0);
        assert_eq!(hand, [0, 1, 2]);
        let queues: Vec<usize> = (0..6).map(|id| qs.enqueue(0, id, 1).unwrap()).collect();
        assert_eq!(queues, vec![0, 1, 2, 0, 1, 2]);
    }

    /// A full queue refuses; the flow's other queues have to be full too before it does.
    #[test]
    fn queue_full_rejects() {
        let mut qs = QueueSet::new(4, 2, 2);
        let mut placed = 0;
        while qs.enqueue(5, placed, 1).is_ok() {
            placed += 1;
        }
        assert_eq!(placed, 4, "two queues of two");
        assert_eq!(qs.enqueue(5, 99, 1), Err(QueueFull));
        // Once one is dispatched there is room again.
        assert!(qs.dispatch().is_some());
        assert!(qs.enqueue(5, 100, 1).is_ok());
    }

    /// A heavy flow with many waiting requests and a light flow with one: the light flow's
    /// request is among the first two dispatched, not after the heavy backlog.
    #[test]
    fn fair_dispatch_serves_queues_in_turn() {
        // Hand size 1: each flow has exactly one queue. Find two hashes on different queues.
        let mut qs = QueueSet::new(16, 1, 100);
        let heavy = 0u64;
        let light = (1..).find(|h| qs.deal(*h) != qs.deal(heavy)).unwrap();
        for id in 0..50 {
            qs.enqueue(heavy, id, 1).unwrap();
        }
        // The heavy flow has been served for a while before the light one arrives.
        for _ in 0..10 {
            let (q, _, w) = qs.dispatch().unwrap();
            qs.finish(q, w);
        }
        qs.enqueue(light, 1000, 1).unwrap();
        let next: Vec<u64> = (0..2).map(|_| qs.dispatch().unwrap().1).collect();
        assert!(
            next.contains(&1000),
            "light flow waited behind the backlog: {next:?}"
        );
        // Two flows both backlogged alternate.
        for id in 2000..2010 {
            qs.enqueue(light, id, 1).unwrap();
        }
        let order: Vec<bool> = (0..10).map(|_| qs.dispatch().unwrap().1 >= 2000).collect();
        let light_turns = order.iter().filter(|l| **l).count();
        assert_eq!(light_turns, 5, "{order:?}");
    }

    /// A waiting request can be taken out (timeout), once.
    #[test]
    fn remove_takes_a_waiting_request_out() {
        let mut qs = QueueSet::new(4, 1, 10);
        let q = qs.enqueue(3, 7, 1).unwrap();
        qs.enqueue(3, 8, 1).unwrap();
        assert!(qs.remove(q, 7));
        assert!(!qs.remove(q, 7));
        assert_eq!(qs.waiting(), 1);
        assert_eq!(qs.dispatch().map(|d| d.1), Some(8));
        assert_eq!(qs.dispatch(), None);
    }
}
