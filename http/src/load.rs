//! How busy the server cores and the machine are: each core's runtime reports when it parks
//! (nothing to run) and when it wakes, `/proc/stat` gives the machine's idle time, and
//! [`saturated`] tells whether CPU time has been scarce lately.
//!
//! Why: work that is cheap to batch (the store's commits) can be batched harder when the
//! cores have no idle time, and should be done at once when they do. A core counts as busy
//! from the moment its runtime wakes until it parks again, including time it spends runnable
//! but waiting for a CPU: on a machine saturated by other processes the cores look busy too,
//! which is the point.
//!
//! Every server core thread of the process takes one slot for its life (`CORE_SLOTS_MAX`
//! slots; threads beyond them are not tracked). Readers take no lock: each slot is written
//! only by its own thread, and a reader that races a park may count a few microseconds
//! twice, which the clamp to [0, 1] absorbs.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// Core threads tracked per process (a server runs one per CPU).
pub const CORE_SLOTS_MAX: usize = 256;
/// Shortest interval over which [`sample`] recomputes the cores' utilization; calls within
/// it reuse the last value.
pub const SAMPLE_NS_MIN: u64 = 2_000_000;
/// Server-core utilization at and above which [`saturated`] answers true.
pub const SATURATED_MIN: f64 = 0.85;
/// Machine idle CPU share at and below which [`saturated`] answers true.
pub const MACHINE_IDLE_MAX: f64 = 0.1;
/// Shortest interval over which the machine's idle share is recomputed: `/proc/stat` counts
/// in clock ticks (10 ms), so a shorter window would be mostly rounding.
pub const MACHINE_SAMPLE_NS_MIN: u64 = 50_000_000;

struct Slot {
    /// Busy nanoseconds accumulated up to the last park.
    busy_ns: AtomicU64,
    /// When the thread last woke (nanoseconds since `epoch()`, plus one so that 0 can mean
    /// "parked" or "slot unused").
    awake_since: AtomicU64,
    /// Registered and not yet ended.
    alive: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const SLOT_INIT: Slot = Slot {
    busy_ns: AtomicU64::new(0),
    awake_since: AtomicU64::new(0),
    alive: AtomicBool::new(false),
};
static SLOTS: [Slot; CORE_SLOTS_MAX] = [SLOT_INIT; CORE_SLOTS_MAX];
static SLOTS_TAKEN: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_SLOT: Cell<Option<usize>> = const { Cell::new(None) };
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ns() -> u64 {
    epoch().elapsed().as_nanos() as u64 + 1
}

/// Registers the calling thread as a server core, awake from now. Idempotent.
pub(crate) fn register_core() {
    if MY_SLOT.get().is_some() {
        return;
    }
    let i = SLOTS_TAKEN.fetch_add(1, Ordering::Relaxed);
    if i >= CORE_SLOTS_MAX {
        SLOTS_TAKEN.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    SLOTS[i].awake_since.store(now_ns(), Ordering::Release);
    SLOTS[i].alive.store(true, Ordering::Release);
    MY_SLOT.set(Some(i));
}

/// The calling core's runtime has nothing to run and is about to sleep.
pub(crate) fn parking() {
    if let Some(i) = MY_SLOT.get() {
        let s = &SLOTS[i];
        let since = s.awake_since.load(Ordering::Relaxed);
        if since != 0 {
            s.busy_ns
                .fetch_add(now_ns().saturating_sub(since), Ordering::Relaxed);
            s.awake_since.store(0, Ordering::Release);
        }
    }
}

/// The calling core's runtime woke up.
pub(crate) fn unparked() {
    if let Some(i) = MY_SLOT.get() {
        SLOTS[i].awake_since.store(now_ns(), Ordering::Release);
    }
}

/// The calling core's thread is ending: it no longer counts as busy.
pub(crate) fn unregister_core() {
    parking();
    if let Some(i) = MY_SLOT.take() {
        SLOTS[i].alive.store(false, Ordering::Release);
    }
}

/// Busy nanoseconds of every tracked core up to `now` (ended cores included, so the total
/// never goes back), and how many cores are alive.
fn busy_total(now: u64) -> (u64, usize) {
    let n = SLOTS_TAKEN.load(Ordering::Relaxed).min(CORE_SLOTS_MAX);
    let mut busy = 0u64;
    let mut alive = 0;
    for s in &SLOTS[..n] {
        busy += s.busy_ns.load(Ordering::Relaxed);
        let since = s.awake_since.load(Ordering::Acquire);
        if since != 0 {
            busy += now.saturating_sub(since);
        }
        alive += usize::from(s.alive.load(Ordering::Relaxed));
    }
    (busy, alive)
}

/// The machine's CPU time so far, from the first line of `/proc/stat` (clock ticks summed
/// over every CPU): (idle, total). Idle includes iowait.
struct CpuTimes {
    file: Option<std::fs::File>,
}

impl CpuTimes {
    fn read(&mut self) -> Option<(u64, u64)> {
        use std::os::unix::fs::FileExt;
        let file = self.file.as_ref()?;
        let mut buf = [0u8; 256];
        let n = file.read_at(&mut buf, 0).ok()?;
        let times = std::str::from_utf8(&buf[..n]).ok().and_then(parse_cpu_line);
        if times.is_none() {
            self.file = None; // not the format we know: stop asking
        }
        times
    }
}

/// (idle + iowait, total of user..steal) from the aggregate `cpu` line of `/proc/stat`.
fn parse_cpu_line(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    let f: Vec<u64> = line
        .split_whitespace()
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    if f.len() < 5 {
        return None;
    }
    Some((f[3] + f[4], f.iter().sum()))
}

struct Sample {
    at: u64,
    busy: u64,
    utilization: f64,
}

struct MachineSample {
    at: u64,
    times: Option<(u64, u64)>,
    idle: f64,
}

struct State {
    cores: Sample,
    machine: MachineSample,
    cpu_times: CpuTimes,
}

/// Current figures: the fraction of time the server cores were busy over the interval
/// since the previous sample (at least `SAMPLE_NS_MIN`), and the fraction of the machine's
/// CPU time that was idle over the last `MACHINE_SAMPLE_NS_MIN` or more (1 where
/// `/proc/stat` cannot be read). Calls within an interval get the previous figures.
pub fn sample() -> (f64, f64) {
    static STATE: Mutex<Option<State>> = Mutex::new(None);
    /// The latest figures (`f64` bits), for callers that find another thread sampling.
    static LATEST: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0x3ff0_0000_0000_0000)];
    let Ok(mut guard) = STATE.try_lock() else {
        return (
            f64::from_bits(LATEST[0].load(Ordering::Relaxed)),
            f64::from_bits(LATEST[1].load(Ordering::Relaxed)),
        );
    };
    let st = guard.get_or_insert_with(|| State {
        cores: Sample {
            at: 0,
            busy: 0,
            utilization: 0.0,
        },
        machine: MachineSample {
            at: 0,
            times: None,
            idle: 1.0,
        },
        cpu_times: CpuTimes {
            file: std::fs::File::open("/proc/stat").ok(),
        },
    });
    let now = now_ns();
    if now.saturating_sub(st.cores.at) >= SAMPLE_NS_MIN {
        let (busy, cores) = busy_total(now);
        let utilization = if st.cores.at == 0 || cores == 0 {
            0.0
        } else {
            let wall = (now - st.cores.at) as f64 * cores as f64;
            (busy.saturating_sub(st.cores.busy) as f64 / wall).clamp(0.0, 1.0)
        };
        st.cores = Sample {
            at: now,
            busy,
            utilization,
        };
    }
    if now.saturating_sub(st.machine.at) >= MACHINE_SAMPLE_NS_MIN {
        let times = st.cpu_times.read();
        let idle = match (st.machine.times, times) {
            (Some((i0, t0)), Some((i1, t1))) if t1 > t0 => {
                (i1.saturating_sub(i0) as f64 / (t1 - t0) as f64).clamp(0.0, 1.0)
            }
            (_, None) => 1.0,
            _ => st.machine.idle,
        };
        st.machine = MachineSample {
            at: now,
            times,
            idle,
        };
    }
    let out = (st.cores.utilization, st.machine.idle);
    LATEST[0].store(out.0.to_bits(), Ordering::Relaxed);
    LATEST[1].store(out.1.to_bits(), Ordering::Relaxed);
    out
}

/// Whether CPU time is scarce right now: the server cores were busy nearly all the time
/// (`SATURATED_MIN`), or the machine had almost no idle CPU (`MACHINE_IDLE_MAX`; e.g. a load
/// generator on the same machine keeps the CPUs busy while the server's cores wait for it).
/// A plain `fn`, so it can be handed to code that must not depend on this crate (the store's
/// commit linger).
pub fn saturated() -> bool {
    let (utilization, idle) = sample();
    utilization >= SATURATED_MIN || idle <= MACHINE_IDLE_MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_line_gives_idle_and_total_ticks() {
        let text = "cpu  71858 0 15255 118474 1286 0 2584 104 0 0\n\
                    cpu0 35790 0 7349 60455 269 0 987 55 0 0\n";
        assert_eq!(
            parse_cpu_line(text),
            Some((
                118_474 + 1_286,
                71_858 + 15_255 + 118_474 + 1_286 + 2_584 + 104
            ))
        );
        assert_eq!(parse_cpu_line("cpu  1 2 3\n"), None, "too few fields");
        assert_eq!(
            parse_cpu_line("cpu0 1 2 3 4 5 6 7 8\n"),
            None,
            "not the total"
        );
        assert_eq!(parse_cpu_line("cpu  1 x 3 4 5 6 7 8\n"), None);
        assert_eq!(parse_cpu_line(""), None);
    }

    #[test]
    fn this_machine_reports_idle_time() {
        let mut t = CpuTimes {
            file: std::fs::File::open("/proc/stat").ok(),
        };
        if t.file.is_some() {
            let (idle, total) = t.read().expect("/proc/stat parses");
            assert!(idle <= total && total > 0);
        }
    }

    /// The calling thread's own busy nanoseconds (other cores of the process aside).
    fn own_busy(now: u64) -> u64 {
        let s = &SLOTS[MY_SLOT.get().expect("registered")];
        let since = s.awake_since.load(Ordering::Acquire);
        s.busy_ns.load(Ordering::Relaxed) + if since != 0 { now - since } else { 0 }
    }

    #[test]
    fn a_core_is_busy_from_waking_until_it_parks() {
        std::thread::spawn(|| {
            register_core();
            let b0 = own_busy(now_ns());
            std::thread::sleep(std::time::Duration::from_millis(5));
            let b1 = own_busy(now_ns());
            assert!(
                b1 >= b0 + 4_000_000,
                "awake time counts as busy: {b0} -> {b1}"
            );
            parking();
            let b2 = own_busy(now_ns());
            std::thread::sleep(std::time::Duration::from_millis(5));
            assert_eq!(own_busy(now_ns()), b2, "parked time does not count");
            unparked();
            std::thread::sleep(std::time::Duration::from_millis(2));
            assert!(own_busy(now_ns()) >= b2 + 1_000_000, "awake again");
            let (_, alive) = busy_total(now_ns());
            assert!(alive >= 1);
            unregister_core();
        })
        .join()
        .unwrap();
    }
}
