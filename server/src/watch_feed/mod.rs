//! Shared watch fan-out: on each core, one store watcher per collection prefix feeds every
//! watch of that prefix, whatever its selectors and representation.
//!
//! The feed's task pulls events from the store, encodes each as its JSON watch line
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

mod log;
mod pacing;
mod subscription;
mod task;
#[cfg(test)]
mod tests;

pub use crate::limits::{
    WATCH_CHUNK_PIECES_MAX, WATCH_FEED_BATCHES_PER_POLL, WATCH_FEED_BYTES_MAX,
    WATCH_FEED_EVENTS_MAX, WATCH_FEED_INTERVAL, WATCH_FEED_PHASES, WATCH_FEED_RETAIN_EVENTS,
    WATCH_FEED_SUBSCRIBERS_MAX, WATCH_SCAN_LINES_PER_POLL,
};
pub use subscription::Subscription;
