//! The group-commit linger (`Options::commit_linger`, `Shard::flusher_loop`): a busy shard
//! waits for more writes before a sync, but never for a lone writer, never when its gate says
//! CPU time is not scarce, and never past a full batch or a shutdown.
//!
//! The lingers here are set far longer (30 s) than any test may take, so a linger that should
//! not happen shows up as a test that takes 30 s and fails its bound of 10 s, whatever the
//! machine's speed.

mod common;

use common::TestEngine;
use keel_engine::{Engine, ListRequest, Options, Store, StoreExt, SyncMode};
use std::time::{Duration, Instant};

/// Longer than any test may take: a linger that happens is unmistakable.
const LINGER_LONG: Duration = Duration::from_secs(30);
/// What every test here must finish within if no linger waited its full length.
const BOUND: Duration = Duration::from_secs(10);

fn gate_yes() -> bool {
    true
}

fn gate_no() -> bool {
    false
}

/// The tests of this file run one at a time: each judges lingers by how writers and the
/// flusher interleave, which sixteen busy writers of another test on the same cores would
/// skew (the sync count of the sharing test rose past its bound under them in a CI run).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// An engine for one test, and the guard that keeps the other tests of this file waiting.
struct Serial {
    engine: TestEngine,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl std::ops::Deref for Serial {
    type Target = TestEngine;
    fn deref(&self) -> &TestEngine {
        &self.engine
    }
}

impl std::ops::DerefMut for Serial {
    fn deref_mut(&mut self) -> &mut TestEngine {
        &mut self.engine
    }
}

fn open(linger: Duration, gate: Option<fn() -> bool>) -> Serial {
    let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let engine = TestEngine::open_with(|o: &mut Options| {
        o.shards = 1;
        o.sync = SyncMode::Always;
        o.commit_linger = linger;
        o.commit_linger_gate = gate;
    });
    Serial {
        engine,
        _turn: turn,
    }
}

/// `writers` threads, each creating `per_writer` keys one after another (waiting for each
/// acknowledgement, then `think` before the next), with values of `value_bytes`.
fn concurrent_creates(
    e: &Engine,
    writers: usize,
    per_writer: usize,
    value_bytes: usize,
    think: Duration,
) {
    std::thread::scope(|s| {
        for w in 0..writers {
            s.spawn(move || {
                let value = vec![b'v'; value_bytes];
                for i in 0..per_writer {
                    let key = format!("/k/{w:02}/{i:04}").into_bytes();
                    futures_executor::block_on(e.create(&key, &value)).expect("create");
                    std::thread::sleep(think);
                }
            });
        }
    });
}

#[test]
fn a_lone_writer_is_never_kept_waiting() {
    let e = open(LINGER_LONG, Some(gate_yes));
    let start = Instant::now();
    concurrent_creates(e.engine(), 1, 40, 100, Duration::ZERO);
    assert!(start.elapsed() < BOUND, "took {:?}", start.elapsed());
    assert_eq!(e.stats().syncs, 40, "one sync per acknowledged write");
}

#[test]
fn concurrent_writers_share_syncs_while_lingering() {
    let e = open(Duration::from_millis(50), Some(gate_yes));
    // Writers that spend 3 ms between writes (as an API server's requests do) reach the
    // flusher one or two at a time: without a linger most syncs would commit a write or two.
    concurrent_creates(e.engine(), 16, 30, 100, Duration::from_millis(3));
    let st = e.stats();
    // Until the first probe (`COMMIT_LINGER_PROBE_EVERY` batches) batches are small; from
    // then on each linger holds every writer's next write (16).
    assert!(
        st.syncs <= 480 / 6,
        "480 writes of 16 writers took {} syncs",
        st.syncs
    );
}

#[test]
fn a_gate_that_finds_idle_cpus_stops_the_linger() {
    let e = open(LINGER_LONG, Some(gate_no));
    let start = Instant::now();
    concurrent_creates(e.engine(), 16, 40, 100, Duration::ZERO);
    assert!(start.elapsed() < BOUND, "took {:?}", start.elapsed());
}

/// `writers` threads creating keys with `value_bytes` values as fast as they are
/// acknowledged, for `run`; then writes are stopped. Returns the writes acknowledged.
fn write_for(e: &Engine, writers: usize, value_bytes: usize, run: Duration) -> usize {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                s.spawn(move || {
                    let value = vec![b'v'; value_bytes];
                    let mut ok = 0;
                    for i in 0.. {
                        let key = format!("/k/{w:02}/{i:06}").into_bytes();
                        match futures_executor::block_on(e.create(&key, &value)) {
                            Ok(_) => ok += 1,
                            Err(keel_engine::Error::Closed) => break,
                            Err(other) => panic!("create: {other}"),
                        }
                    }
                    ok
                })
            })
            .collect();
        std::thread::sleep(run);
        e.stop_writes();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

#[test]
fn a_full_batch_ends_the_linger() {
    let e = open(LINGER_LONG, Some(gate_yes));
    // 16 writers of 32 KiB values: the writes pending during a linger pass
    // `COMMIT_LINGER_BYTES_MAX` (256 KiB) once 8 writers wait on it, which must end it. Were
    // it to wait its 30 s, syncs would stop at the first linger, which starts within
    // `COMMIT_LINGER_PROBE_EVERY` (16) batches.
    write_for(e.engine(), 16, 32 * 1024, Duration::from_secs(2));
    let st = e.stats();
    assert!(st.syncs > 40, "only {} syncs in 2 s", st.syncs);
}

#[test]
fn stopping_writes_ends_a_linger_and_keeps_its_writes() {
    let mut e = open(LINGER_LONG, Some(gate_yes));
    let start = Instant::now();
    // Sixteen busy writers make the shard probe a linger within its first
    // `COMMIT_LINGER_PROBE_EVERY` batches, and that linger (30 s, tiny values) holds them all
    // until `stop_writes` ends it.
    let acknowledged = write_for(e.engine(), 16, 1, Duration::from_secs(1));
    assert!(start.elapsed() < BOUND, "took {:?}", start.elapsed());
    e.reopen();
    let list = e.list(&ListRequest::prefix(b"/k/")).expect("list");
    assert_eq!(
        list.items.len(),
        acknowledged,
        "every acknowledged write is kept"
    );
}
