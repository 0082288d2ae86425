//! Measurements: per-worker recorders merged into per-operation statistics, and the report
//! (a readable table and JSON).

use crate::limits;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::fmt::Write as _;

/// What one worker measured for one kind of operation.
#[derive(Clone)]
pub struct Recorder {
    pub hist: Histogram<u64>,
    pub ops: u64,
    pub errors: u64,
    pub bytes: u64,
    pub objects: u64,
    pub error_samples: Vec<String>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            hist: Histogram::new_with_bounds(1, limits::LATENCY_US_MAX, 3).expect("valid bounds"),
            ops: 0,
            errors: 0,
            bytes: 0,
            objects: 0,
            error_samples: Vec::new(),
        }
    }
}

impl Recorder {
    /// Records one successful operation that took `latency_us`.
    pub fn ok(&mut self, latency_us: u64, bytes: u64, objects: u64) {
        self.hist.saturating_record(latency_us.max(1));
        self.ops += 1;
        self.bytes += bytes;
        self.objects += objects;
    }

    /// Records one failed operation.
    pub fn error(&mut self, message: String) {
        self.errors += 1;
        if self.error_samples.len() < limits::ERROR_SAMPLES_MAX
            && !self.error_samples.contains(&message)
        {
            self.error_samples.push(message);
        }
    }

    pub fn merge(&mut self, other: &Recorder) {
        self.hist.add(&other.hist).expect("same bounds");
        self.ops += other.ops;
        self.errors += other.errors;
        self.bytes += other.bytes;
        self.objects += other.objects;
        for s in &other.error_samples {
            if self.error_samples.len() < limits::ERROR_SAMPLES_MAX
                && !self.error_samples.contains(s)
            {
                self.error_samples.push(s.clone());
            }
        }
    }

    /// The figures of `name` over `elapsed_s` seconds.
    pub fn summary(&self, name: &str, elapsed_s: f64) -> OpSummary {
        let per_s = |n: u64| {
            if elapsed_s > 0.0 {
                n as f64 / elapsed_s
            } else {
                0.0
            }
        };
        let h = &self.hist;
        let empty = h.is_empty();
        let q = |p: f64| if empty { 0 } else { h.value_at_quantile(p) };
        OpSummary {
            name: name.to_string(),
            ops: self.ops,
            errors: self.errors,
            elapsed_s,
            ops_per_s: per_s(self.ops),
            bytes: self.bytes,
            bytes_per_s: per_s(self.bytes),
            objects: self.objects,
            objects_per_s: per_s(self.objects),
            latency_us: Latency {
                p50: q(0.5),
                p90: q(0.9),
                p99: q(0.99),
                p999: q(0.999),
                max: if empty { 0 } else { h.max() },
                mean: if empty { 0.0 } else { h.mean() },
            },
            error_samples: self.error_samples.clone(),
        }
    }
}

/// Latency percentiles in microseconds.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct Latency {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
}

/// The figures of one kind of operation.
#[derive(Serialize, Clone, Debug, Default)]
pub struct OpSummary {
    pub name: String,
    pub ops: u64,
    pub errors: u64,
    pub elapsed_s: f64,
    pub ops_per_s: f64,
    pub bytes: u64,
    pub bytes_per_s: f64,
    pub objects: u64,
    pub objects_per_s: f64,
    pub latency_us: Latency,
    pub error_samples: Vec<String>,
}

/// The result of one workload run.
#[derive(Serialize, Clone, Debug, Default)]
pub struct Report {
    pub workload: String,
    pub target: String,
    pub ops: Vec<OpSummary>,
    /// Workload-specific figures (watch: events, gaps, duplicates; nodes: leases renewed...).
    pub details: serde_json::Map<String, serde_json::Value>,
}

impl Report {
    pub fn new(workload: &str, target: &str) -> Report {
        Report {
            workload: workload.into(),
            target: target.into(),
            ..Default::default()
        }
    }

    /// The summary of operation `name`, if measured.
    pub fn op(&self, name: &str) -> Option<&OpSummary> {
        self.ops.iter().find(|o| o.name == name)
    }

    /// A detail as an unsigned integer (0 if absent).
    pub fn detail_u64(&self, key: &str) -> u64 {
        self.details.get(key).and_then(|v| v.as_u64()).unwrap_or(0)
    }

    /// Total errors over all operations.
    pub fn errors(&self) -> u64 {
        self.ops.iter().map(|o| o.errors).sum()
    }

    /// A readable table.
    pub fn table(&self) -> String {
        let mut out = format!("{} against {}\n", self.workload, self.target);
        let _ = writeln!(
            out,
            "{:<14} {:>9} {:>6} {:>10} {:>11} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "op",
            "count",
            "errors",
            "ops/s",
            "objects/s",
            "MiB/s",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms"
        );
        for o in &self.ops {
            let ms = |us: u64| us as f64 / 1000.0;
            let l = &o.latency_us;
            let _ = writeln!(
                out,
                "{:<14} {:>9} {:>6} {:>10.1} {:>11.1} {:>10.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                o.name,
                o.ops,
                o.errors,
                o.ops_per_s,
                o.objects_per_s,
                o.bytes_per_s / (1024.0 * 1024.0),
                ms(l.p50),
                ms(l.p90),
                ms(l.p99),
                ms(l.p999),
                ms(l.max)
            );
        }
        for (k, v) in &self.details {
            let _ = writeln!(out, "{k}: {v}");
        }
        for o in self.ops.iter().filter(|o| !o.error_samples.is_empty()) {
            let _ = writeln!(
                out,
                "{} errors, e.g.: {}",
                o.name,
                o.error_samples.join(" | ")
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_percentiles_and_rates() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        for us in 1..=1000u64 {
            a.ok(us, 10, 1);
        }
        b.ok(1_000_000, 5, 2);
        b.error("HTTP 409 AlreadyExists".into());
        b.error("HTTP 409 AlreadyExists".into());
        a.merge(&b);
        let s = a.summary("create", 2.0);
        assert_eq!(s.ops, 1001);
        assert_eq!(s.errors, 2);
        assert_eq!(s.error_samples, vec!["HTTP 409 AlreadyExists".to_string()]);
        assert_eq!(s.bytes, 10_005);
        assert_eq!(s.objects, 1002);
        assert!((s.ops_per_s - 500.5).abs() < 1e-9);
        assert!(
            (499..=501).contains(&s.latency_us.p50),
            "{:?}",
            s.latency_us
        );
        assert!(
            (899..=901).contains(&s.latency_us.p90),
            "{:?}",
            s.latency_us
        );
        assert!(s.latency_us.max >= 999_000, "{:?}", s.latency_us);
        let mut r = Report::new("create", "keel");
        r.ops.push(s);
        let t = r.table();
        assert!(
            t.contains("create") && t.contains("1001") && t.contains("AlreadyExists"),
            "{t}"
        );
    }

    #[test]
    fn empty_recorder_reports_zeros() {
        let s = Recorder::default().summary("get", 0.0);
        assert_eq!((s.ops, s.ops_per_s, s.latency_us.max), (0, 0.0, 0));
    }
}
