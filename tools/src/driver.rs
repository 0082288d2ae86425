//! Runs one operation at a given concurrency, for a count or a time, optionally paced to a
//! target rate; records latencies per worker and prints a progress line.

use crate::limits;
use crate::report::{OpSummary, Recorder};
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Off: no progress lines (tests, `--quiet`).
pub static PROGRESS: AtomicBool = AtomicBool::new(true);

/// How much work to do and how fast.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Workers, each with at most one request in flight (so at most this many connections).
    pub concurrency: usize,
    /// Stop after this many operations (indices 0..ops).
    pub ops: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Start operation i no earlier than i / rate seconds after the start.
    pub rate_per_s: Option<f64>,
}

/// What one successful operation moved.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    pub bytes: u64,
    pub objects: u64,
}

impl Plan {
    pub fn validate(&self) -> Result<(), String> {
        if self.concurrency == 0 || self.concurrency > limits::CONCURRENCY_MAX {
            return Err(format!(
                "concurrency must be 1..={} (got {})",
                limits::CONCURRENCY_MAX,
                self.concurrency
            ));
        }
        if self.ops.is_none() && self.duration.is_none() {
            return Err("give a count or a duration".into());
        }
        if matches!(self.rate_per_s, Some(r) if r.is_nan() || r <= 0.0) {
            return Err("rate must be positive".into());
        }
        Ok(())
    }
}

/// Counters a progress line reads.
#[derive(Default)]
pub struct Progress {
    pub done: AtomicU64,
    pub errors: AtomicU64,
}

/// Prints `label: N ops, R/s, E errors` about once a second until the guard is dropped.
pub struct ProgressLine {
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ProgressLine {
    pub fn start(label: String, p: Arc<Progress>) -> ProgressLine {
        if !PROGRESS.load(Ordering::Relaxed) {
            return ProgressLine { task: None };
        }
        let tty = std::io::stderr().is_terminal();
        let task = tokio::spawn(async move {
            let start = Instant::now();
            let mut tick = tokio::time::interval(Duration::from_secs(if tty { 1 } else { 5 }));
            tick.tick().await;
            loop {
                tick.tick().await;
                let done = p.done.load(Ordering::Relaxed);
                let errors = p.errors.load(Ordering::Relaxed);
                let secs = start.elapsed().as_secs_f64();
                let line = format!(
                    "{label}: {done} ops in {secs:.0}s, {:.0}/s, {errors} errors",
                    done as f64 / secs
                );
                let mut err = std::io::stderr().lock();
                let _ = if tty {
                    write!(err, "\r{line}\x1b[K")
                } else {
                    writeln!(err, "{line}")
                };
            }
        });
        ProgressLine { task: Some(task) }
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
            if std::io::stderr().is_terminal() {
                eprint!("\r\x1b[K");
            }
        }
    }
}

/// Runs `op(i)` for i = 0, 1, ... under `plan` and returns the merged figures.
pub async fn run<F, Fut>(name: &str, plan: &Plan, op: F) -> Result<OpSummary, String>
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Outcome, String>> + Send + 'static,
{
    plan.validate()?;
    let op = Arc::new(op);
    let next = Arc::new(AtomicU64::new(0));
    let progress = Arc::new(Progress::default());
    let _line = ProgressLine::start(name.to_string(), progress.clone());
    let start = tokio::time::Instant::now();
    let deadline = plan.duration.map(|d| start + d);
    let mut workers = Vec::with_capacity(plan.concurrency);
    for _ in 0..plan.concurrency {
        let (op, next, progress, plan) = (op.clone(), next.clone(), progress.clone(), plan.clone());
        workers.push(tokio::spawn(async move {
            let mut rec = Recorder::default();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if plan.ops.is_some_and(|n| i >= n) {
                    break;
                }
                if let Some(rate) = plan.rate_per_s {
                    let at = start + Duration::from_secs_f64(i as f64 / rate);
                    if deadline.is_some_and(|d| at >= d) {
                        break;
                    }
                    tokio::time::sleep_until(at).await;
                }
                if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    break;
                }
                let t0 = Instant::now();
                match op(i).await {
                    Ok(o) => rec.ok(t0.elapsed().as_micros() as u64, o.bytes, o.objects),
                    Err(e) => {
                        rec.error(e);
                        progress.errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                progress.done.fetch_add(1, Ordering::Relaxed);
            }
            rec
        }));
    }
    let mut total = Recorder::default();
    for w in workers {
        total.merge(&w.await.map_err(|e| format!("worker failed: {e}"))?);
    }
    Ok(total.summary(name, start.elapsed().as_secs_f64()))
}

/// Raises the open-files limit to the hard limit (1,000 watchers need 1,000 sockets). Called
/// by `loadgen` at start and by `compare` (whose servers inherit it).
pub fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_each_index_once_and_counts_errors() {
        PROGRESS.store(false, Ordering::Relaxed);
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let plan = Plan {
            concurrency: 7,
            ops: Some(100),
            duration: None,
            rate_per_s: None,
        };
        let sum = run("t", &plan, move |i| {
            let seen = s2.clone();
            async move {
                seen.lock().unwrap().push(i);
                if i % 10 == 0 {
                    Err(format!("boom {}", i % 20))
                } else {
                    Ok(Outcome {
                        bytes: 3,
                        objects: 1,
                    })
                }
            }
        })
        .await
        .unwrap();
        let mut v = seen.lock().unwrap().clone();
        v.sort();
        assert_eq!(v, (0..100).collect::<Vec<_>>());
        assert_eq!((sum.ops, sum.errors, sum.bytes), (90, 10, 270));
        assert_eq!(sum.error_samples.len(), 2);
    }

    #[tokio::test]
    async fn rate_and_duration_bound_the_run() {
        PROGRESS.store(false, Ordering::Relaxed);
        let plan = Plan {
            concurrency: 4,
            ops: None,
            duration: Some(Duration::from_millis(300)),
            rate_per_s: Some(100.0),
        };
        let sum = run("t", &plan, |_| async { Ok(Outcome::default()) })
            .await
            .unwrap();
        assert!((25..=31).contains(&sum.ops), "{} ops", sum.ops);
    }

    #[test]
    fn bad_plans_are_errors() {
        let p = |c, ops, d| Plan {
            concurrency: c,
            ops,
            duration: d,
            rate_per_s: None,
        };
        assert!(p(0, Some(1), None).validate().is_err());
        assert!(p(1, None, None).validate().is_err());
        assert!(p(1, Some(1), None).validate().is_ok());
    }
}
