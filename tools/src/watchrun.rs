//! The `watch` workload's coordinator, shared by the Kubernetes and etcd targets: open W
//! watchers, wait until all are established, run the writer, wait until every watcher has
//! caught up (or a timeout), stop them and account for every event.

use crate::limits;
use crate::report::{OpSummary, Recorder, Report};
use crate::watchcheck::{self, Delivery};
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch as signal;
use tokio::task::JoinHandle;

/// What one watcher saw.
#[derive(Default)]
pub struct WatcherOut {
    /// Revisions of the events, in arrival order (at most `WATCH_EVENTS_PER_WATCHER_MAX`).
    pub rvs: Vec<u64>,
    /// Delivery latencies (receipt time minus the writer's send time in the object, in
    /// microseconds) not yet added to the shared histograms (`WatcherCtx::latency`).
    pub pending_latency_us: Vec<u64>,
    /// Events without a send time.
    pub unstamped: u64,
    pub last_event: Option<Instant>,
    /// Why the watch ended early, if it did.
    pub error: Option<String>,
    /// Events beyond the memory bound, counted but not checked.
    pub dropped: u64,
}

/// Handed to each watcher task.
#[derive(Clone)]
pub struct WatcherCtx {
    /// Incremented once the watch is established.
    pub connected: Arc<AtomicUsize>,
    /// Events carrying a writer's send time received by all watchers together: the drain waits
    /// for these. Others (another client's writes, a controller's such as the `kube-root-ca.crt`
    /// published into a new namespace) are accounted as unexpected but do not count, or the
    /// drain would stop one written event early.
    pub events: Arc<AtomicU64>,
    /// Becomes true when the watcher must stop.
    pub stop: signal::Receiver<bool>,
    /// Delivery latencies of all watchers.
    pub latency: Arc<LatencyShards>,
}

/// A few delivery-latency histograms shared by all watchers: one per watcher would be
/// hundreds of megabytes for a thousand watchers, and every record a cache miss. Watchers add
/// latencies in batches, each to the next shard in turn.
pub struct LatencyShards {
    shards: Vec<Mutex<Recorder>>,
    next: AtomicUsize,
}

impl Default for LatencyShards {
    fn default() -> LatencyShards {
        LatencyShards {
            shards: (0..limits::WATCH_LATENCY_SHARDS)
                .map(|_| Mutex::new(Recorder::default()))
                .collect(),
            next: AtomicUsize::new(0),
        }
    }
}

impl LatencyShards {
    /// Records `latencies_us` (and empties it).
    pub fn add(&self, latencies_us: &mut Vec<u64>) {
        let shard = self.next.fetch_add(1, Ordering::Relaxed) % self.shards.len();
        let mut rec = self.shards[shard].lock().unwrap_or_else(|e| e.into_inner());
        for &l in latencies_us.iter() {
            rec.ok(l, 0, 1);
        }
        latencies_us.clear();
    }

    /// All latencies recorded.
    pub fn total(&self) -> Recorder {
        let mut total = Recorder::default();
        for s in &self.shards {
            total.merge(&s.lock().unwrap_or_else(|e| e.into_inner()));
        }
        total
    }
}

/// When a batch of events was received: every event of one read shares it, so the clocks are
/// read once per read rather than once per event.
pub struct Receipt {
    pub at: Instant,
    pub unix_nanos: u128,
}

impl Receipt {
    pub fn now() -> Receipt {
        Receipt {
            at: Instant::now(),
            unix_nanos: crate::objects::now_unix_nanos(),
        }
    }
}

impl WatcherOut {
    /// Records one event of revision `rv` whose object was sent at `sent_unix_nanos`, received
    /// now, and counts it in `ctx.events` if stamped.
    pub fn record(&mut self, ctx: &WatcherCtx, rv: u64, sent_unix_nanos: Option<u128>) {
        self.record_at(ctx, &Receipt::now(), rv, sent_unix_nanos);
        if sent_unix_nanos.is_some() {
            ctx.events.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records one event received at `at` (the caller counts it in `WatcherCtx::events`).
    pub fn record_at(
        &mut self,
        ctx: &WatcherCtx,
        at: &Receipt,
        rv: u64,
        sent_unix_nanos: Option<u128>,
    ) {
        if self.rvs.len() < limits::WATCH_EVENTS_PER_WATCHER_MAX {
            self.rvs.push(rv);
        } else {
            self.dropped += 1;
        }
        match sent_unix_nanos {
            Some(sent) => {
                let lat_us = at.unix_nanos.saturating_sub(sent) / 1000;
                self.pending_latency_us.push(lat_us as u64);
                if self.pending_latency_us.len() >= limits::WATCH_LATENCY_BATCH {
                    ctx.latency.add(&mut self.pending_latency_us);
                }
            }
            None => self.unstamped += 1,
        }
        self.last_event = Some(at.at);
    }

    /// Events recorded so far.
    pub fn received(&self) -> u64 {
        self.rvs.len() as u64 + self.dropped
    }

    /// Events recorded so far that carried a send time (what `WatcherCtx::events` counts).
    pub fn stamped(&self) -> u64 {
        self.received() - self.unstamped
    }
}

/// What the writer reports: its figures and the revisions it wrote (in any order), each with
/// the watch group of the object written (0 when watchers are not grouped).
pub type WriterOut = (OpSummary, Vec<(u64, u32)>);

/// Runs the watch workload. `open(w, ctx)` spawns watcher w, which must receive exactly the
/// writes of group `w % groups` (`groups` is 1 when every watcher sees every write).
pub async fn run<O, W>(
    target: &str,
    watchers: usize,
    groups: u32,
    open: O,
    writer: W,
) -> Result<Report, String>
where
    O: Fn(usize, WatcherCtx) -> JoinHandle<WatcherOut>,
    W: Future<Output = Result<WriterOut, String>>,
{
    if watchers == 0 || watchers > limits::WATCHERS_MAX {
        return Err(format!("watchers must be 1..={}", limits::WATCHERS_MAX));
    }
    if groups == 0 || groups as usize > watchers {
        return Err(format!(
            "watch groups must be 1..={watchers} (the watchers)"
        ));
    }
    let (stop_tx, stop_rx) = signal::channel(false);
    let ctx = WatcherCtx {
        connected: Arc::new(AtomicUsize::new(0)),
        events: Arc::new(AtomicU64::new(0)),
        stop: stop_rx,
        latency: Arc::new(LatencyShards::default()),
    };
    let handles: Vec<_> = (0..watchers).map(|w| open(w, ctx.clone())).collect();
    let established = wait_until(Duration::from_secs(120), || {
        ctx.connected.load(Ordering::Relaxed) + handles.iter().filter(|h| h.is_finished()).count()
            >= watchers
    })
    .await;
    let t_write = Instant::now();
    let writer_result = if established {
        writer.await
    } else {
        Err("watchers not established within 120s".into())
    };
    let (write_sum, written) = match writer_result {
        Ok(w) => w,
        Err(e) => {
            let _ = stop_tx.send(true);
            return Err(e);
        }
    };
    // Revisions written per group; watcher w expects group w % groups.
    let mut by_group = vec![Vec::new(); groups as usize];
    for &(rv, g) in &written {
        by_group
            .get_mut(g as usize)
            .ok_or_else(|| format!("write in watch group {g} of {groups}"))?
            .push(rv);
    }
    let expected = expected_events(&by_group, watchers);
    let drained = wait_until(Duration::from_secs(limits::WATCH_DRAIN_TIMEOUT_S), || {
        ctx.events.load(Ordering::Relaxed) >= expected || handles.iter().all(|h| h.is_finished())
    })
    .await;
    let _ = stop_tx.send(true);
    let mut outs = Vec::with_capacity(watchers);
    for h in handles {
        outs.push(h.await.map_err(|e| format!("watcher failed: {e}"))?);
    }
    for o in &mut outs {
        ctx.latency.add(&mut o.pending_latency_us);
    }
    let mut latency = ctx.latency.total();
    latency.ops += outs.iter().map(|o| o.unstamped).sum::<u64>();
    Ok(account(
        target, t_write, write_sum, by_group, outs, latency, drained,
    ))
}

/// Events all watchers must receive: watcher w gets the writes of group `w % groups`.
fn expected_events(by_group: &[Vec<u64>], watchers: usize) -> u64 {
    (0..watchers)
        .map(|w| by_group[w % by_group.len()].len() as u64)
        .sum()
}

fn account(
    target: &str,
    t_write: Instant,
    write_sum: OpSummary,
    mut by_group: Vec<Vec<u64>>,
    outs: Vec<WatcherOut>,
    latency: Recorder,
    drained: bool,
) -> Report {
    for g in &mut by_group {
        g.sort_unstable();
    }
    let written: usize = by_group.iter().map(Vec::len).sum();
    let mut total = Delivery::default();
    let (mut worst_missing, mut errors, mut dropped) = (0u64, Vec::new(), 0u64);
    let mut last = t_write;
    for (w, o) in outs.iter().enumerate() {
        let d = watchcheck::check(&by_group[w % by_group.len()], &o.rvs);
        worst_missing = worst_missing.max(d.missing);
        total.add(&d);
        dropped += o.dropped;
        if let Some(e) = &o.error {
            if errors.len() < limits::ERROR_SAMPLES_MAX {
                errors.push(e.clone());
            }
        }
        last = last.max(o.last_event.unwrap_or(t_write));
    }
    let watchers = outs.len();
    let watcher_errors = outs.iter().filter(|o| o.error.is_some()).count();
    let mut deliver = latency.summary("deliver", (last - t_write).as_secs_f64());
    deliver.ops = total.received;
    deliver.objects = total.received;
    deliver.objects_per_s = if deliver.elapsed_s > 0.0 {
        total.received as f64 / deliver.elapsed_s
    } else {
        0.0
    };
    deliver.ops_per_s = deliver.objects_per_s;
    deliver.errors = total.missing + total.duplicates + total.out_of_order;
    deliver.error_samples = errors;
    let mut r = Report::new("watch", target);
    r.ops.push(write_sum);
    r.ops.push(deliver);
    let d = &mut r.details;
    d.insert("watchers".into(), watchers.into());
    d.insert("watch_groups".into(), (by_group.len() as u64).into());
    d.insert("written".into(), (written as u64).into());
    d.insert(
        "expected_events".into(),
        expected_events(&by_group, watchers).into(),
    );
    d.insert("received_events".into(), total.received.into());
    d.insert("missing_events".into(), total.missing.into());
    d.insert("duplicate_events".into(), total.duplicates.into());
    d.insert("out_of_order_events".into(), total.out_of_order.into());
    d.insert("unexpected_events".into(), total.unexpected.into());
    d.insert("worst_watcher_missing".into(), worst_missing.into());
    d.insert("watcher_errors".into(), watcher_errors.into());
    d.insert("unchecked_events".into(), dropped.into());
    d.insert("caught_up".into(), drained.into());
    d.insert(
        "exact".into(),
        (total.exact() && watcher_errors == 0 && dropped == 0).into(),
    );
    r
}

async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}
