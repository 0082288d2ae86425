//! The watch half of `keel-ceiling`: watch fan-out with no API work behind it, so `loadgen
//! compare` can show how many watch events per second this machine moves at all (loopback TCP,
//! TLS, keel's HTTP front end and the load generator on the same cores) beside what keel
//! delivers.
//!
//! A create (`POST`) is given the next resourceVersion (`WatchLog::append`), answered with the
//! object carrying it, and appended to one log shared by all cores as a ready-encoded `ADDED`
//! event line. A watch (`GET ...?watch=...`) starts at the log's end and is paced as keel's
//! watches are (`keel_server::watch_feed`): every `WATCH_FEED_INTERVAL`, at one of
//! `WATCH_FEED_PHASES` offsets, it sends everything appended since its last round as one chunk
//! of shared lines. What keel does on top (storage, selectors, encodings, bookmarks,
//! resourceVersion semantics) is absent; what is left is the cost of moving the bytes.
//!
//! Bounds: the log keeps the newest `CEILING_WATCH_LOG_EVENTS` lines; a watch that falls
//! further behind is ended (the load generator then reports it as a watcher error), never
//! buffered without bound.

use keel_http::{rt, Chunk, Piece};
use keel_server::watch_feed::{WATCH_FEED_INTERVAL, WATCH_FEED_PHASES};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Event lines the shared log keeps.
pub const CEILING_WATCH_LOG_EVENTS: usize = 1 << 16;
/// Most lines one watch sends in one chunk.
pub const CEILING_WATCH_LINES_PER_CHUNK: usize = 4096;

/// The resourceVersion of the collection before any create (what a `GET` answers).
pub const CEILING_INITIAL_RV: u64 = 1;

/// The shared log of event lines (all cores).
pub struct WatchLog {
    inner: Mutex<Log>,
    capacity: usize,
}

struct Log {
    /// Position of `lines[0]` in the sequence of all lines ever appended.
    first: u64,
    lines: VecDeque<Arc<[u8]>>,
    rv: u64,
}

/// A watch fell behind what the log keeps.
#[derive(Debug, PartialEq, Eq)]
pub struct Behind;

impl WatchLog {
    pub fn new(capacity: usize) -> WatchLog {
        WatchLog {
            inner: Mutex::new(Log {
                first: 0,
                lines: VecDeque::with_capacity(capacity),
                rv: CEILING_INITIAL_RV,
            }),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        // A panic while holding the lock leaves the log consistent (each step is one push or
        // pop), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Gives `obj` (a JSON object with `metadata`) the next resourceVersion, appends its
    /// `ADDED` event line, and returns the object as stored.
    pub fn append(&self, obj: &[u8]) -> Result<Vec<u8>, String> {
        let mut log = self.lock();
        let rv = log.rv + 1;
        let stored = with_resource_version(obj, rv)?;
        let mut line = Vec::with_capacity(stored.len() + 32);
        line.extend_from_slice(br#"{"type":"ADDED","object":"#);
        line.extend_from_slice(&stored);
        line.extend_from_slice(b"}\n");
        log.rv = rv;
        if log.lines.len() == self.capacity {
            log.lines.pop_front();
            log.first += 1;
        }
        log.lines.push_back(line.into());
        Ok(stored)
    }

    /// Position after the newest line: where a new watch starts.
    pub fn end(&self) -> u64 {
        let log = self.lock();
        log.first + log.lines.len() as u64
    }

    /// Appends the lines from position `from` on (at most `max`) to `out`; returns the position
    /// after them, or `Behind` if lines from `from` on are no longer kept.
    pub fn read(&self, from: u64, max: usize, out: &mut Vec<Arc<[u8]>>) -> Result<u64, Behind> {
        let log = self.lock();
        if from < log.first {
            return Err(Behind);
        }
        let skip = (from - log.first) as usize;
        let n = log.lines.len().saturating_sub(skip).min(max);
        out.extend(log.lines.range(skip..skip + n).cloned());
        Ok(from + n as u64)
    }
}

/// `obj` with `"resourceVersion":"rv"` as the first field of its `metadata`. The load
/// generator's objects never carry one; an object without `metadata` is an error.
pub fn with_resource_version(obj: &[u8], rv: u64) -> Result<Vec<u8>, String> {
    let field = format!(r#""resourceVersion":"{rv}""#);
    crate::objects::with_first_member(obj, "metadata", &field)
}

/// One core's pacing: a ticker that wakes, every `WATCH_FEED_INTERVAL / WATCH_FEED_PHASES`,
/// the watches of the next phase. Started by the core's first watch; runs until the core stops.
struct Pacer {
    phases: Vec<Notify>,
    next_phase: Cell<usize>,
}

thread_local! {
    static PACER: RefCell<Option<Rc<Pacer>>> = const { RefCell::new(None) };
}

fn pacer() -> Rc<Pacer> {
    PACER.with(|p| {
        p.borrow_mut()
            .get_or_insert_with(|| {
                let pacer = Rc::new(Pacer {
                    phases: (0..WATCH_FEED_PHASES).map(|_| Notify::new()).collect(),
                    next_phase: Cell::new(0),
                });
                rt::spawn_local(tick(pacer.clone()));
                pacer
            })
            .clone()
    })
}

async fn tick(p: Rc<Pacer>) {
    let step = WATCH_FEED_INTERVAL / WATCH_FEED_PHASES as u32;
    let mut at = rt::Instant::now();
    let mut phase = 0;
    loop {
        at += step;
        rt::sleep_until(at).await;
        p.phases[phase].notify_waiters();
        phase = (phase + 1) % WATCH_FEED_PHASES;
    }
}

/// The chunks of one watch that starts now: each round's new lines, at this watch's phase.
/// Must be called on a server core. Ends if the watch falls behind the log.
pub fn watch(log: Arc<WatchLog>) -> impl futures_core::Stream<Item = Chunk> {
    let pacer = pacer();
    let phase = pacer.next_phase.get();
    pacer.next_phase.set((phase + 1) % WATCH_FEED_PHASES);
    let at = log.end();
    futures_util::stream::unfold((log, pacer, at), move |(log, pacer, mut at)| async move {
        let mut lines = Vec::new();
        loop {
            pacer.phases[phase].notified().await;
            at = log
                .read(at, CEILING_WATCH_LINES_PER_CHUNK, &mut lines)
                .ok()?;
            if !lines.is_empty() {
                break;
            }
        }
        let mut chunk = Chunk::new();
        for l in lines {
            chunk.push(Piece::Shared(l));
        }
        Some((chunk, (log, pacer, at)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_version_goes_first_in_metadata() {
        assert_eq!(
            with_resource_version(br#"{"kind":"ConfigMap","metadata":{"name":"a"}}"#, 7).unwrap(),
            br#"{"kind":"ConfigMap","metadata":{"resourceVersion":"7","name":"a"}}"#
        );
        assert_eq!(
            with_resource_version(br#"{"metadata":{}}"#, 2).unwrap(),
            br#"{"metadata":{"resourceVersion":"2"}}"#
        );
        assert!(with_resource_version(br#"{"kind":"ConfigMap"}"#, 2).is_err());
    }

    #[test]
    fn appends_number_and_log_keeps_the_newest() {
        let log = WatchLog::new(3);
        assert_eq!(log.end(), 0);
        for i in 0..5 {
            let stored = log.append(format!(r#"{{"metadata":{{"name":"o{i}"}}}}"#).as_bytes());
            let want = format!(
                r#"{{"metadata":{{"resourceVersion":"{}","name":"o{i}"}}}}"#,
                CEILING_INITIAL_RV + 1 + i
            );
            assert_eq!(stored.unwrap(), want.as_bytes());
        }
        assert_eq!(log.end(), 5);
        let mut out = Vec::new();
        assert_eq!(log.read(1, 10, &mut out), Err(Behind));
        assert_eq!(log.read(2, 2, &mut out), Ok(4));
        assert_eq!(log.read(4, 10, &mut out), Ok(5));
        assert_eq!(log.read(5, 10, &mut out), Ok(5));
        let text: Vec<String> = out
            .iter()
            .map(|l| String::from_utf8(l.to_vec()).unwrap())
            .collect();
        assert_eq!(
            text,
            [2, 3, 4].map(|i| format!(
                "{{\"type\":\"ADDED\",\"object\":{{\"metadata\":{{\"resourceVersion\":\"{}\",\"name\":\"o{i}\"}}}}}}\n",
                CEILING_INITIAL_RV + 1 + i
            ))
        );
        // A bad object takes no revision.
        assert!(log.append(b"{}").is_err());
        assert_eq!(log.end(), 5);
    }
}
