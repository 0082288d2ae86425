//! Latency histograms (nanoseconds, 3 significant digits) and their summaries.

use hdrhistogram::Histogram;
use serde::Serialize;

/// A histogram of nanoseconds from 1 ns to 10 minutes.
pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000_000, 3).expect("histogram bounds")
}

pub fn record(h: &mut Histogram<u64>, ns: u64) {
    h.saturating_record(ns.max(1));
}

/// Records `n` samples of `ns` nanoseconds at once.
pub fn record_n(h: &mut Histogram<u64>, ns: u64, n: u64) {
    h.saturating_record_n(ns.max(1), n);
}

/// Percentiles in microseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

pub fn summarize(h: &Histogram<u64>) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    Latency {
        count: h.len(),
        mean_us: h.mean() / 1000.0,
        p50_us: us(h.value_at_quantile(0.50)),
        p99_us: us(h.value_at_quantile(0.99)),
        p999_us: us(h.value_at_quantile(0.999)),
        max_us: us(h.max()),
    }
}

impl Latency {
    pub fn brief(&self) -> String {
        format!(
            "p50 {} / p99 {} / p99.9 {} / max {} (n={})",
            fmt_us(self.p50_us),
            fmt_us(self.p99_us),
            fmt_us(self.p999_us),
            fmt_us(self.max_us),
            self.count
        )
    }
}

/// `850 µs`, `12.3 ms`, `1.20 s`.
pub fn fmt_us(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1_000_000.0)
    }
}
