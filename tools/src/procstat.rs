//! A server process's memory and CPU from `/proc`: resident set (current and peak) and CPU
//! seconds, sampled by a background thread so a workload's peak is seen even when the kernel's
//! high-water mark (`VmHWM`) covers the whole process life.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the monitor samples.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(50);

/// One reading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub rss_bytes: u64,
    /// Peak resident set over the process's life (`VmHWM`).
    pub hwm_bytes: u64,
    /// User + system CPU time in clock ticks.
    pub cpu_ticks: u64,
}

/// `VmRSS` and `VmHWM` of a `/proc/<pid>/status` text, in bytes.
pub fn parse_status(text: &str) -> (u64, u64) {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// utime + stime (ticks) of a `/proc/<pid>/stat` line. The command name may hold spaces and
/// parentheses, so fields are counted after the last `)`.
pub fn parse_stat_cpu(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, utime field 14, stime field 15 (1-based).
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Clock ticks per second.
pub fn ticks_per_s() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Reads process `pid` now.
pub fn sample(pid: u32) -> Result<Sample, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("pid {pid}: {e}"))?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("pid {pid}: {e}"))?;
    let (rss_bytes, hwm_bytes) = parse_status(&status);
    let cpu_ticks = parse_stat_cpu(&stat).ok_or_else(|| format!("pid {pid}: unreadable stat"))?;
    Ok(Sample {
        rss_bytes,
        hwm_bytes,
        cpu_ticks,
    })
}

/// What a process used during one measured interval.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Usage {
    pub peak_rss_bytes: u64,
    pub end_rss_bytes: u64,
    pub cpu_s: f64,
}

/// Samples a process until stopped.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Usage>>,
}

impl Monitor {
    pub fn start(pid: u32) -> Monitor {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let thread = std::thread::spawn(move || {
            let first = sample(pid).unwrap_or_default();
            let mut last = first;
            let mut peak = first.rss_bytes;
            while !s2.load(Ordering::Relaxed) {
                std::thread::sleep(SAMPLE_INTERVAL);
                if let Ok(s) = sample(pid) {
                    peak = peak.max(s.rss_bytes);
                    last = s;
                }
            }
            if let Ok(s) = sample(pid) {
                peak = peak.max(s.rss_bytes);
                last = s;
            }
            Usage {
                peak_rss_bytes: peak,
                end_rss_bytes: last.rss_bytes,
                cpu_s: last.cpu_ticks.saturating_sub(first.cpu_ticks) as f64 / ticks_per_s() as f64,
            }
        });
        Monitor {
            stop,
            thread: Some(thread),
        }
    }

    pub fn finish(mut self) -> Usage {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_texts() {
        let status = "Name:\tetcd\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(parse_status(status), (1024 * 1024, 2048 * 1024));
        assert_eq!(parse_status("Name: x\n"), (0, 0));
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 1 2 3";
        assert_eq!(parse_stat_cpu(stat), Some(300));
        assert_eq!(parse_stat_cpu("garbage"), None);
    }

    #[test]
    fn samples_this_process() {
        let s = sample(std::process::id()).unwrap();
        assert!(s.rss_bytes > 0 && s.hwm_bytes >= s.rss_bytes);
        let m = Monitor::start(std::process::id());
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let u = m.finish();
        assert!(u.peak_rss_bytes > 0);
    }
}
