//! API Priority and Fairness (upstream's `k8s.io/apiserver/pkg/util/flowcontrol`): every
//! request, once its user is known, is classified by the FlowSchemas into a priority level and
//! a flow; an exempt level runs it at once, a limited level runs it if it has a seat, queues
//! it fairly (shuffle sharding, fair queuing) or refuses it with 429.
//!
//! Pure parts, table-tested: `config` (parsing, seats), `classify` (schemas, flows),
//! `queueset` (shuffle sharding and fair dispatch of one level), `dispatch` (one core's
//! seats over all levels, borrowing, wide requests), `estimate` (the seats a request
//! takes), `bootstrap` (upstream's objects).
//!
//! **Per core, no global lock on the request path.** The configuration (parsed objects and
//! seat counts) is published by the flow-control controller as an `Arc<Config>` with a
//! generation number; each serving thread keeps its own `Dispatcher` (its share of every
//! level's seats, its own queues) in a thread-local, and rebuilds it when it sees a new
//! generation (one atomic load per request; the mutex is taken only on a change). Requests
//! executing under the old configuration keep their seats, counted against the level of the
//! same name; requests waiting are queued again in the new one. The cost of this design:
//! fairness and borrowing are per core (a flow's requests spread over cores by connection),
//! and a level's seats are `ceil(NominalCL / cores)` on each core, so the server as a whole
//! may run a few more than NominalCL.
//!
//! Seats are held for the request's handler; a watch's seat is released when the watch is
//! established (its handler returns the stream), as upstream does, and a list streamed in
//! chunks releases its seat when the handler hands over the stream.

pub mod bootstrap;
pub mod classify;
pub mod config;
pub mod dispatch;
pub mod estimate;
pub mod queueset;
pub mod retry;

use crate::limits::{FLOWCONTROL_QUEUE_WAIT_MAX, FLOWCONTROL_USERS_CACHED_MAX};
use classify::Digest;
use config::{Level, Schema};
use dispatch::{Admit, Dispatched, Dispatcher, Reason, Slot};
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// Buckets (seconds) of `apiserver_flowcontrol_request_wait_duration_seconds`, as upstream.
pub const WAIT_BUCKETS: &[f64] = &[
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];

/// Counters of one (flow schema, priority level) pair, shared by every core (atomics).
#[derive(Default)]
pub struct SchemaStats {
    pub dispatched: AtomicU64,
    /// By `Reason` (queue-full, concurrency-limit, time-out).
    pub rejected: [AtomicU64; 3],
    pub inqueue: AtomicI64,
    pub executing: AtomicI64,
    /// Seats held by the executing requests.
    pub executing_seats: AtomicI64,
    /// Wait durations of executed requests: how many fell in each bucket (not cumulative:
    /// the metrics add them up), then the sum in microseconds.
    pub wait_buckets: [AtomicU64; 13],
    pub wait_count: AtomicU64,
    pub wait_sum_micros: AtomicU64,
}

const _: () = assert!(WAIT_BUCKETS.len() == 13);

impl SchemaStats {
    fn reject(&self, r: Reason) {
        let i = match r {
            Reason::QueueFull => 0,
            Reason::ConcurrencyLimit => 1,
            Reason::TimeOut => 2,
        };
        self.rejected[i].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn waited(&self, d: Duration) {
        let secs = d.as_secs_f64();
        // One counter per request (beyond the last bucket: only the count).
        if let Some(i) = WAIT_BUCKETS.iter().position(|b| secs <= *b) {
            self.wait_buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.wait_count.fetch_add(1, Ordering::Relaxed);
        self.wait_sum_micros
            .fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }
}

/// A published configuration.
pub struct Config {
    generation: u64,
    /// In matching order.
    pub schemas: Vec<Schema>,
    pub levels: Vec<Level>,
    /// NominalCL of each level, server-wide.
    pub nominal: Vec<u32>,
    level_index: HashMap<String, usize>,
    /// Per schema (same order): the index of its priority level, if that level exists
    /// (resolved once here, so that classifying a request hashes no level name).
    schema_level: Vec<Option<usize>>,
    /// Per schema (same order).
    stats: Vec<Arc<SchemaStats>>,
}

impl Config {
    fn empty() -> Config {
        Config {
            generation: 0,
            schemas: Vec::new(),
            levels: Vec::new(),
            nominal: Vec::new(),
            level_index: HashMap::new(),
            schema_level: Vec::new(),
            stats: Vec::new(),
        }
    }
}

/// What the metrics need: one row per (flow schema, priority level), and each level's
/// nominal seats.
pub struct Snapshot {
    pub schemas: Vec<(String, String, Arc<SchemaStats>)>,
    pub levels: Vec<(String, u32)>,
}

/// API Priority and Fairness for one server.
pub struct FlowControl {
    /// Tells instances apart in the per-thread dispatchers (tests run several servers).
    id: usize,
    /// `--enable-priority-and-fairness`.
    pub enabled: bool,
    /// The server's concurrency limit (`--max-requests-inflight` +
    /// `--max-mutating-requests-inflight`).
    pub server_limit: usize,
    cores: usize,
    generation: AtomicU64,
    current: Mutex<Arc<Config>>,
    /// Stats by (schema, level) name, kept across configurations (touched only when one is
    /// published and when metrics are rendered).
    stats: Mutex<HashMap<(String, String), Arc<SchemaStats>>>,
    /// Recent refusals per level, for `Retry-After` (touched only when a request is refused).
    refusals: retry::Refusals,
}

/// Seconds since the Unix epoch.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

static INSTANCES: AtomicUsize = AtomicUsize::new(0);

/// Why a request was refused, with what to put in its response headers.
#[derive(Debug)]
pub struct Rejected {
    pub schema_uid: String,
    pub level_uid: String,
    pub reason: Reason,
    pub retry_after_seconds: u32,
}

/// An admitted request: its flow schema and priority level (for the response headers) and
/// its seat (released on drop).
pub struct Ticket {
    /// The configuration it was classified by, with the schema's and level's indexes; none
    /// when no schema matched (the request runs unmanaged).
    matched: Option<(Arc<Config>, usize, usize)>,
    _seat: Option<Seat>,
}

impl Ticket {
    /// The matched FlowSchema's UID (empty when none matched).
    pub fn schema_uid(&self) -> &str {
        self.matched
            .as_ref()
            .map_or("", |(c, si, _)| c.schemas[*si].uid.as_str())
    }

    /// The PriorityLevelConfiguration's UID (empty when no schema matched).
    pub fn level_uid(&self) -> &str {
        self.matched
            .as_ref()
            .map_or("", |(c, _, li)| c.levels[*li].uid.as_str())
    }
}

impl FlowControl {
    pub fn new(enabled: bool, server_limit: usize, cores: usize) -> FlowControl {
        let fc = FlowControl {
            id: INSTANCES.fetch_add(1, Ordering::Relaxed),
            enabled,
            server_limit: server_limit.max(1),
            cores: cores.max(1),
            generation: AtomicU64::new(0),
            current: Mutex::new(Arc::new(Config::empty())),
            stats: Mutex::default(),
            refusals: retry::Refusals::default(),
        };
        // Until the controller publishes the stored objects: upstream's bootstrap objects.
        let levels = bootstrap::priority_levels()
            .iter()
            .filter_map(config::parse_level)
            .collect();
        let schemas = bootstrap::flow_schemas()
            .iter()
            .filter_map(config::parse_schema)
            .collect();
        fc.publish(schemas, levels);
        fc
    }

    /// Publishes a new configuration; the cores pick it up with their next request.
    pub fn publish(&self, mut schemas: Vec<Schema>, levels: Vec<Level>) {
        classify::sort_schemas(&mut schemas);
        let nominal = config::nominal_limits(&levels, self.server_limit);
        let level_index: HashMap<String, usize> = levels
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.clone(), i))
            .collect();
        let schema_level = schemas
            .iter()
            .map(|s| level_index.get(&s.level).copied())
            .collect();
        let mut all = self.stats.lock();
        let stats: Vec<Arc<SchemaStats>> = schemas
            .iter()
            .map(|s| {
                all.entry((s.name.clone(), s.level.clone()))
                    .or_default()
                    .clone()
            })
            .collect();
        // Forget the series of schemas that are gone once nothing of theirs is in flight.
        all.retain(|(s, l), st| {
            schemas.iter().any(|x| &x.name == s && &x.level == l)
                || st.inqueue.load(Ordering::Relaxed) != 0
                || st.executing.load(Ordering::Relaxed) != 0
        });
        drop(all);
        let mut current = self.current.lock();
        let generation = current.generation + 1;
        *current = Arc::new(Config {
            generation,
            schemas,
            levels,
            nominal,
            level_index,
            schema_level,
            stats,
        });
        self.generation.store(generation, Ordering::Release);
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.current.lock().clone()
    }

    /// For `/metrics`.
    pub fn snapshot(&self) -> Snapshot {
        let cfg = self.config();
        let mut schemas: Vec<_> = self
            .stats
            .lock()
            .iter()
            .map(|((s, l), st)| (s.clone(), l.clone(), st.clone()))
            .collect();
        schemas.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        Snapshot {
            schemas,
            levels: cfg
                .levels
                .iter()
                .zip(&cfg.nominal)
                .map(|(l, n)| (l.name.clone(), if l.exempt { 0 } else { *n }))
                .collect(),
        }
    }

    /// Classifies a request and waits for its seat. `never_reject`: health endpoints, which
    /// run at once whatever their level (upstream's `probes` schema covers only the bare
    /// paths; keel keeps every sub-path out of load shedding too).
    ///
    /// `width`: the seats the request would take by its work estimate (`estimate`); the
    /// level bounds it (see [`Dispatcher::max_width`]).
    pub async fn admit(
        &self,
        d: &Digest<'_>,
        never_reject: bool,
        width: u32,
    ) -> Result<Ticket, Rejected> {
        let cfg = self.refresh();
        let Some(si) = with_core(self, |core| core.classify(&cfg, d)) else {
            // No schema at all (catch-all deleted and not yet restored): run unmanaged.
            return Ok(Ticket {
                matched: None,
                _seat: None,
            });
        };
        let schema = &cfg.schemas[si];
        let li = cfg.schema_level[si].expect("classified by an existing level");
        let level = &cfg.levels[li];
        let stats = &cfg.stats[si];
        let ticket = |seat| Ticket {
            matched: Some((cfg.clone(), si, li)),
            _seat: seat,
        };
        if never_reject {
            stats.dispatched.fetch_add(1, Ordering::Relaxed);
            stats.waited(Duration::ZERO);
            return Ok(ticket(None));
        }
        let flow = classify::flow_hash(&schema.name, classify::distinguisher(schema, d));
        let started = Instant::now();
        let waiter = with_core(self, |core| {
            let id = core.next_id;
            core.next_id += 1;
            let width = width.min(core.dispatcher.max_width(li));
            let (decision, others) = core.dispatcher.admit(li, flow, id, width);
            core.wake(others);
            match decision {
                Admit::Run { queue, width } => Ok(Err(Seat::new(self.id, core, li, queue, width))),
                Admit::Wait { queue } => {
                    let w = Rc::new(Waiter {
                        id,
                        width,
                        level: Cell::new(li),
                        level_name: level.name.clone(),
                        flow,
                        queue: Cell::new(queue),
                        state: Cell::new(WaitState::Waiting),
                        waker: Cell::new(None),
                    });
                    core.waiters.insert(id, w.clone());
                    Ok(Ok(w))
                }
                Admit::Reject(r) => Err(r),
            }
        });
        let reject = |reason: Reason| {
            stats.reject(reason);
            Rejected {
                schema_uid: schema.uid.clone(),
                level_uid: level.uid.clone(),
                reason,
                retry_after_seconds: self.refusals.refuse(&level.name, unix_now()),
            }
        };
        let seat = match waiter {
            Err(reason) => return Err(reject(reason)),
            Ok(Err(mut seat)) => {
                seat.stats = Some(stats.clone());
                seat
            }
            Ok(Ok(w)) => {
                stats.inqueue.fetch_add(1, Ordering::Relaxed);
                let mut guard = WaitGuard {
                    fc: self,
                    waiter: w,
                    done: false,
                };
                let outcome = tokio::time::timeout(FLOWCONTROL_QUEUE_WAIT_MAX, guard.wait()).await;
                stats.inqueue.fetch_sub(1, Ordering::Relaxed);
                match outcome {
                    Ok(mut seat) => {
                        seat.stats = Some(stats.clone());
                        seat
                    }
                    Err(_) => match guard.give_up() {
                        // Dispatched at the last moment: run it.
                        Some(mut seat) => {
                            seat.stats = Some(stats.clone());
                            seat
                        }
                        None => return Err(reject(Reason::TimeOut)),
                    },
                }
            }
        };
        stats.dispatched.fetch_add(1, Ordering::Relaxed);
        stats.executing.fetch_add(1, Ordering::Relaxed);
        stats
            .executing_seats
            .fetch_add(i64::from(seat.width), Ordering::Relaxed);
        stats.waited(started.elapsed());
        Ok(ticket(Some(seat)))
    }

    /// This core's view, rebuilt if a new configuration was published.
    fn refresh(&self) -> Arc<Config> {
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(cfg) = with_core(self, |core| {
            (core.config.generation == generation).then(|| core.config.clone())
        }) {
            return cfg;
        }
        let cfg = self.config();
        with_core(self, |core| core.rebuild(cfg.clone(), self.cores));
        cfg
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WaitState {
    Waiting,
    /// Got `width` seats in (level, queue).
    Dispatched(usize, usize, u32),
    /// Its seat was taken over by the request.
    Taken,
}

struct Waiter {
    id: u64,
    /// The seats it asks for.
    width: u32,
    level: Cell<usize>,
    level_name: String,
    flow: u64,
    queue: Cell<usize>,
    state: Cell<WaitState>,
    waker: Cell<Option<Waker>>,
}

/// Leaves the queue if the waiting request is dropped (client gone) or times out.
struct WaitGuard<'a> {
    fc: &'a FlowControl,
    waiter: Rc<Waiter>,
    done: bool,
}

impl WaitGuard<'_> {
    async fn wait(&mut self) -> Seat {
        let w = self.waiter.clone();
        std::future::poll_fn(|cx| match w.state.get() {
            WaitState::Dispatched(..) => Poll::Ready(()),
            _ => {
                w.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await;
        self.take().expect("dispatched")
    }

    /// The seat, if the waiter was dispatched.
    fn take(&mut self) -> Option<Seat> {
        let WaitState::Dispatched(level, queue, width) = self.waiter.state.get() else {
            return None;
        };
        self.waiter.state.set(WaitState::Taken);
        self.done = true;
        Some(with_core(self.fc, |core| Seat {
            fc: self.fc.id,
            config: core.config.clone(),
            level,
            queue: Some(queue),
            width,
            stats: None,
        }))
    }

    /// Leaves the queue; returns the seat if it was dispatched meanwhile.
    fn give_up(&mut self) -> Option<Seat> {
        if let Some(seat) = self.take() {
            return Some(seat);
        }
        self.done = true;
        let w = &self.waiter;
        with_core(self.fc, |core| {
            core.waiters.remove(&w.id);
            core.dispatcher.cancel(w.level.get(), w.queue.get(), w.id);
        });
        None
    }
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if !self.done {
            // Dropped while waiting, or dispatched but never resumed: free what it holds.
            drop(self.give_up());
        }
    }
}

/// A seat held by a running request; dropping it frees the seat and starts waiters.
struct Seat {
    fc: usize,
    /// The core's configuration when the seat was taken: `level` indexes its dispatcher.
    config: Arc<Config>,
    level: usize,
    queue: Option<usize>,
    /// Seats held.
    width: u32,
    /// The stats of the schema it was classified by, which count it as executing (not an
    /// index into `config`: a request that waited across a change of configuration takes
    /// its seat in the new one).
    stats: Option<Arc<SchemaStats>>,
}

impl Seat {
    fn new(fc: usize, core: &Core, level: usize, queue: Option<usize>, width: u32) -> Seat {
        Seat {
            fc,
            config: core.config.clone(),
            level,
            queue,
            width,
            stats: None,
        }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        if let Some(s) = &self.stats {
            s.executing.fetch_sub(1, Ordering::Relaxed);
            s.executing_seats
                .fetch_sub(i64::from(self.width), Ordering::Relaxed);
        }
        CORES.with(|cores| {
            let mut cores = cores.borrow_mut();
            let Some(core) = cores.iter_mut().find(|c| c.fc == self.fc) else {
                return;
            };
            let started = if core.config.generation == self.config.generation {
                core.dispatcher.finish(self.level, self.queue, self.width)
            } else {
                // Configuration changed while it ran: free a seat of the level of that name
                // (none for a level that was gone when it was dispatched).
                let name = self.config.levels.get(self.level).map(|l| l.name.as_str());
                match name.and_then(|n| core.config.level_index.get(n)) {
                    Some(&i) => core.dispatcher.finish(i, None, self.width),
                    None => Vec::new(),
                }
            };
            core.wake(started);
        });
    }
}

/// One core's dispatcher for one `FlowControl`.
struct Core {
    fc: usize,
    config: Arc<Config>,
    dispatcher: Dispatcher,
    waiters: HashMap<u64, Rc<Waiter>>,
    next_id: u64,
    /// Each user's rules under `config` ([`classify::user_rules`]).
    users: UserRules,
}

/// Users' rules by the hash of (user, number of groups, authenticated), the groups compared
/// on look-up; a colliding user replaces the entry; at most
/// [`FLOWCONTROL_USERS_CACHED_MAX`], then all go.
#[derive(Default)]
struct UserRules {
    hasher: foldhash::fast::FixedState,
    entries: HashMap<u64, UserRulesEntry, foldhash::fast::FixedState>,
}

struct UserRulesEntry {
    user: Box<str>,
    groups: Box<[String]>,
    authenticated: bool,
    rules: Box<[(usize, usize)]>,
}

impl Core {
    /// The schema (index in `cfg`) of a request, from its user's rules, which are worked
    /// out once per user and configuration (`cfg` is this core's, [`FlowControl::refresh`]
    /// made sure).
    fn classify(&mut self, cfg: &Arc<Config>, d: &Digest<'_>) -> Option<usize> {
        use std::hash::BuildHasher;
        let level_exists = |i: usize| cfg.schema_level[i].is_some();
        if !Arc::ptr_eq(cfg, &self.config) {
            let rules = classify::user_rules(&cfg.schemas, d);
            return classify::classify(&cfg.schemas, level_exists, &rules, d);
        }
        let users = &mut self.users;
        let key = users
            .hasher
            .hash_one((d.user, d.groups.len(), d.authenticated));
        let current = users.entries.get(&key).is_some_and(|e| {
            *e.user == *d.user && *e.groups == *d.groups && e.authenticated == d.authenticated
        });
        if !current {
            if users.entries.len() >= FLOWCONTROL_USERS_CACHED_MAX {
                users.entries.clear();
            }
            users.entries.insert(
                key,
                UserRulesEntry {
                    user: d.user.into(),
                    groups: d.groups.into(),
                    authenticated: d.authenticated,
                    rules: classify::user_rules(&cfg.schemas, d).into(),
                },
            );
        }
        let rules = &users.entries[&key].rules;
        classify::classify(&cfg.schemas, level_exists, rules, d)
    }

    fn wake(&mut self, started: Vec<Dispatched>) {
        for d in started {
            if let Some(w) = self.waiters.remove(&d.id) {
                w.state
                    .set(WaitState::Dispatched(d.level, d.queue, d.width));
                if let Some(waker) = w.waker.take() {
                    waker.wake();
                }
            }
        }
    }

    /// Switches to `cfg`: running requests keep their seats (by level name), waiting ones
    /// are queued again (run at once if their level is gone).
    fn rebuild(&mut self, cfg: Arc<Config>, cores: usize) {
        let mut running: HashMap<String, u32> = HashMap::new();
        for (l, slot) in self.config.levels.iter().zip(&self.dispatcher.levels) {
            running.insert(l.name.clone(), slot.executing);
        }
        for slot in &mut self.dispatcher.levels {
            if let Some(q) = slot.queues.as_mut() {
                q.drain();
            }
        }
        let slots = cfg
            .levels
            .iter()
            .zip(&cfg.nominal)
            .map(|(l, n)| {
                let mut s = Slot::new(
                    config::core_seats(l, *n, cores),
                    l.exempt,
                    &l.limit_response,
                );
                s.executing = running.get(&l.name).copied().unwrap_or(0);
                s
            })
            .collect();
        self.dispatcher = Dispatcher::new(slots);
        self.config = cfg;
        self.users.entries.clear();
        let mut waiters: Vec<Rc<Waiter>> = self.waiters.drain().map(|(_, w)| w).collect();
        waiters.sort_by_key(|w| w.id);
        for w in waiters {
            let Some(&li) = self.config.level_index.get(&w.level_name) else {
                // Its level is gone: it runs, holding no seat of the new configuration.
                self.dispatcher.levels.push(Slot::new(
                    config::Seats {
                        nominal: 0,
                        guaranteed: 0,
                        cap: u32::MAX,
                    },
                    true,
                    &config::LimitResponse::Reject,
                ));
                let li = self.dispatcher.levels.len() - 1;
                self.dispatcher.levels[li].executing += w.width;
                w.state.set(WaitState::Dispatched(li, 0, w.width));
                if let Some(waker) = w.waker.take() {
                    waker.wake();
                }
                continue;
            };
            w.level.set(li);
            let width = w.width.min(self.dispatcher.max_width(li));
            let (decision, started) = self.dispatcher.admit(li, w.flow, w.id, width);
            self.wake(started);
            match decision {
                Admit::Wait { queue } => {
                    w.queue.set(queue);
                    self.waiters.insert(w.id, w);
                }
                Admit::Run { queue, width } => {
                    w.state
                        .set(WaitState::Dispatched(li, queue.unwrap_or(0), width));
                    if let Some(waker) = w.waker.take() {
                        waker.wake();
                    }
                }
                // No room in the new queues: it times out where it is (its seat never
                // comes); leave it dispatched-less until its wait ends.
                Admit::Reject(_) => {}
            }
        }
    }
}

thread_local! {
    /// This thread's dispatchers, one per `FlowControl` (normally one).
    static CORES: RefCell<Vec<Core>> = const { RefCell::new(Vec::new()) };
}

fn with_core<R>(fc: &FlowControl, f: impl FnOnce(&mut Core) -> R) -> R {
    CORES.with(|cores| {
        let mut cores = cores.borrow_mut();
        let i = match cores.iter().position(|c| c.fc == fc.id) {
            Some(i) => i,
            None => {
                let cfg = fc.config();
                let mut core = Core {
                    fc: fc.id,
                    config: Arc::new(Config::empty()),
                    dispatcher: Dispatcher::default(),
                    waiters: HashMap::new(),
                    next_id: 0,
                    users: UserRules::default(),
                };
                core.rebuild(cfg, fc.cores);
                cores.push(core);
                cores.len() - 1
            }
        };
        f(&mut cores[i])
    })
}

#[cfg(test)]
mod tests;
