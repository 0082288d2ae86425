//! Checks against targets, the printed table, and the `REPORT.md` section.

use crate::hist::fmt_us;
use crate::scenarios::{StoreResult, WatchResult, WritesResult};
use crate::sys::Machine;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// Whether bigger or smaller is better.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub enum Goal {
    AtLeast,
    AtMost,
}

/// One figure against its target.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub goal: Goal,
    pub target: f64,
    /// value / target.
    pub ratio: f64,
    pub pass: bool,
}

impl Check {
    pub fn new(name: &str, value: f64, unit: &str, goal: Goal, target: f64) -> Check {
        let pass = match goal {
            Goal::AtLeast => value >= target,
            Goal::AtMost => value <= target,
        } && value.is_finite();
        Check {
            name: name.to_string(),
            value,
            unit: unit.to_string(),
            goal,
            target,
            ratio: if target != 0.0 { value / target } else { 0.0 },
            pass,
        }
    }

    pub fn target_text(&self) -> String {
        let op = match self.goal {
            Goal::AtLeast => "≥",
            Goal::AtMost => "≤",
        };
        format!("{op} {} {}", fmt_num(self.target), self.unit)
    }

    pub fn value_text(&self) -> String {
        format!("{} {}", fmt_num(self.value), self.unit)
    }
}

/// Thousands separators for big numbers, 2-3 significant decimals for small ones.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a >= 1000.0 {
        let s = format!("{:.0}", v.abs());
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if v < 0.0 {
            format!("-{out}")
        } else {
            out
        }
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Meta {
    /// When the run started.
    pub date_utc: String,
    pub commit: String,
    pub machine: Machine,
    pub backend: String,
    pub quick: bool,
    pub command: String,
    pub total_s: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Results {
    pub writes: Vec<WritesResult>,
    pub store: Option<StoreResult>,
    /// The watch run with the median p99 delivery from commit (held to the target).
    pub watch: Option<WatchResult>,
    /// Every watch run, in the order they ran.
    pub watch_runs: Vec<WatchResult>,
    /// Scenarios that failed to run, with the reason.
    pub failures: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub meta: Meta,
    pub checks: Vec<Check>,
    pub results: Results,
}

/// Targets.
pub const TARGET_WRITES_PER_S: f64 = 150_000.0;
pub const TARGET_WRITES_WRITERS: usize = 1024;
pub const TARGET_PCT_OF_RAW: f64 = 70.0;
pub const TARGET_SCAN_KEYS_PER_S: f64 = 10_000_000.0;
pub const TARGET_HEAP_BYTES_PER_KEY: f64 = 150.0;
pub const TARGET_REOPEN_S: f64 = 3.0;
pub const TARGET_WATCH_P99_MS: f64 = 10.0;

pub fn checks(r: &Results) -> Vec<Check> {
    let mut c = Vec::new();
    for w in &r.writes {
        if w.writers == TARGET_WRITES_WRITERS {
            c.push(Check::new(
                &format!("durable creates, {} writers", w.writers),
                w.writes_per_s,
                "writes/s",
                Goal::AtLeast,
                TARGET_WRITES_PER_S,
            ));
        }
        if let Some(p) = w.engine_pct_of_raw {
            c.push(Check::new(
                &format!(
                    "engine bytes/s vs raw append+fdatasync, {} writers",
                    w.writers
                ),
                p,
                "%",
                Goal::AtLeast,
                TARGET_PCT_OF_RAW,
            ));
        }
    }
    if let Some(s) = &r.store {
        if s.scan.keys_per_s > 0.0 {
            c.push(Check::new(
                &format!(
                    "full scan of {} keys at a snapshot",
                    fmt_num(s.load.keys as f64)
                ),
                s.scan.keys_per_s,
                "keys/s",
                Goal::AtLeast,
                TARGET_SCAN_KEYS_PER_S,
            ));
        }
        c.push(Check::new(
            "heap per key beyond the key bytes",
            s.heap.bytes_per_key_beyond_key,
            "B/key",
            Goal::AtMost,
            TARGET_HEAP_BYTES_PER_KEY,
        ));
        if s.reopen.open_s > 0.0 {
            c.push(Check::new(
                &format!(
                    "reopen of {} objects (warm cache)",
                    fmt_num(s.load.keys as f64)
                ),
                s.reopen.open_s,
                "s",
                Goal::AtMost,
                TARGET_REOPEN_S,
            ));
        }
    }
    if let Some(w) = &r.watch {
        let runs = r.watch_runs.len().max(1);
        c.push(Check::new(
            &if runs > 1 {
                format!(
                    "watch delivery p99 (from commit), {} watchers, median of {runs} runs",
                    w.watchers
                )
            } else {
                format!("watch delivery p99 (from commit), {} watchers", w.watchers)
            },
            w.delivery_from_commit.p99_us / 1000.0,
            "ms",
            Goal::AtMost,
            TARGET_WATCH_P99_MS,
        ));
        // Completeness is held in every run, not only the median one.
        let complete = r
            .watch_runs
            .iter()
            .map(|x| x.complete_watchers)
            .min()
            .unwrap_or(w.complete_watchers);
        c.push(Check::new(
            &if runs > 1 {
                format!("watchers that received every event exactly once, worst of {runs} runs")
            } else {
                "watchers that received every event exactly once".to_string()
            },
            complete as f64,
            "watchers",
            Goal::AtLeast,
            w.watchers as f64,
        ));
    }
    c
}

fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

/// The human-readable details, one line each (shared by stdout and REPORT.md).
pub fn detail_lines(r: &Results) -> Vec<String> {
    let mut l = Vec::new();
    for w in &r.writes {
        l.push(format!(
            "Durable creates, {} writers ({} runtime threads, {} shards): {} writes in {:.2} s = {} writes/s; latency {}; errors {}, busy {}{}",
            w.writers,
            w.threads,
            w.shards,
            fmt_num(w.ok as f64),
            w.elapsed_s,
            fmt_num(w.writes_per_s),
            w.latency.brief(),
            w.errors,
            w.busy,
            w.first_error.as_ref().map(|e| format!(" (first: {e})")).unwrap_or_default(),
        ));
        l.push(format!(
            "  engine: {} written, {} syncs, {} batches = {:.1} MB/s; avg group {} B/sync; {:.1} writes/sync; {:.1} writes/batch; process CPU {:.2} s = {:.1} µs/write",
            mb(w.bytes_written),
            fmt_num(w.syncs as f64),
            fmt_num(w.batches_written as f64),
            w.engine_mb_per_s,
            fmt_num(w.avg_group_bytes),
            w.writes_per_sync,
            w.writes_per_batch,
            w.cpu_s,
            w.cpu_us_per_write,
        ));
        let raw_par = w.raw_parallel.as_ref().map(|p| {
            format!(
                "  raw baseline, parallel (info): the same appends over {} files, one thread each: {:.2} s = {:.1} MB/s{} → engine at {:.1}% of it",
                w.shards,
                p.elapsed_s,
                p.mb_per_s,
                if p.truncated { " (extrapolated)" } else { "" },
                w.engine_pct_of_raw_parallel.unwrap_or(0.0),
            )
        });
        match &w.raw {
            Some(raw) => l.push(format!(
                "  raw baseline: {} appends of {} B + fdatasync, 1 thread: {:.2} s = {:.1} MB/s, {} syncs/s, {} per sync{} → engine at {:.1}% of raw",
                fmt_num(raw.syncs as f64),
                fmt_num(raw.chunk_bytes as f64),
                raw.elapsed_s,
                raw.mb_per_s,
                fmt_num(raw.syncs_per_s),
                fmt_us(raw.avg_sync_us),
                if raw.truncated {
                    format!(" (extrapolated from {} appends)", raw.appends_done)
                } else {
                    String::new()
                },
                w.engine_pct_of_raw.unwrap_or(0.0),
            )),
            None => l.push("  raw baseline: skipped (engine reported no bytes or syncs)".into()),
        }
        l.extend(raw_par);
    }
    if let Some(s) = &r.store {
        l.push(format!(
            "Load: {} creates with SyncMode::None in {:.2} s = {} writes/s (errors {}); key bytes {} (avg {:.1} B), value bytes {}",
            fmt_num(s.load.ok as f64),
            s.load.elapsed_s,
            fmt_num(s.load.writes_per_s),
            s.load.errors,
            mb(s.load.key_bytes),
            s.heap.avg_key_bytes,
            mb(s.load.value_bytes),
        ));
        l.push(format!(
            "Full scan at revision {}: {} keys, median {:.3} s = {} keys/s (best {} keys/s; runs: {})",
            s.scan.revision,
            fmt_num(s.scan.keys as f64),
            s.scan.median_s,
            fmt_num(s.scan.keys_per_s),
            fmt_num(s.scan.best_keys_per_s),
            s.scan
                .reps_s
                .iter()
                .map(|t| format!("{t:.3} s"))
                .collect::<Vec<_>>()
                .join(", "),
        ));
        l.push(format!(
            "Paginated scan, limit {}: {} pages, {} keys in {:.2} s = {} pages/s, {} keys/s{}; first 10 pages {:.2} ms each, last 10 {:.2} ms",
            s.scan.paged_limit,
            fmt_num(s.scan.paged_pages as f64),
            fmt_num(s.scan.paged_keys as f64),
            s.scan.paged_s,
            fmt_num(s.scan.pages_per_s),
            fmt_num(s.scan.paged_keys_per_s),
            if s.scan.paged_truncated {
                " (stopped at the time cap)"
            } else {
                ""
            },
            s.scan.paged_first_pages_ms,
            s.scan.paged_last_pages_ms,
        ));
        if let Some(k) = s.scan.after_reopen_keys_per_s {
            l.push(format!(
                "Full scan right after reopen: {} keys/s",
                fmt_num(k)
            ));
        }
        for e in &s.scan.errors {
            l.push(format!("  scan error: {e}"));
        }
        let h = &s.heap;
        l.push(format!(
            "Heap: live +{} requested (+{} with malloc rounding, +{} blocks = {:.2}/key) for {} keys → {:.1} B/key beyond the key bytes ({:.1} with rounding)",
            mb((h.after.requested - h.before.requested).max(0) as u64),
            mb((h.after.usable - h.before.usable).max(0) as u64),
            fmt_num((h.after.blocks - h.before.blocks) as f64),
            h.blocks_per_key,
            fmt_num(s.load.keys as f64),
            h.bytes_per_key_beyond_key,
            h.usable_bytes_per_key_beyond_key,
        ));
        l.push(format!(
            "  RSS before load {} MiB (anon {}, file {}); after {} MiB (anon {}, file {})",
            h.rss_before.vm_rss_kib / 1024,
            h.rss_before.rss_anon_kib / 1024,
            h.rss_before.rss_file_kib / 1024,
            h.rss_after.vm_rss_kib / 1024,
            h.rss_after.rss_anon_kib / 1024,
            h.rss_after.rss_file_kib / 1024,
        ));
        if let (Some(b), Some(rss)) = (h.reopened_bytes_per_key_beyond_key, h.reopened_rss) {
            l.push(format!(
                "  after reopen: {:.1} B/key beyond the key bytes; RSS {} MiB (anon {}, file {})",
                b,
                rss.vm_rss_kib / 1024,
                rss.rss_anon_kib / 1024,
                rss.rss_file_kib / 1024,
            ));
        }
        let o = &s.reopen;
        l.push(format!(
            "Reopen (warm page cache): close {:.3} s, open {:.3} s; on disk {} apparent / {} allocated in {} files; keys {} → {} ({}), revision {} ({})",
            o.close_s,
            o.open_s,
            mb(o.disk_apparent_bytes),
            mb(o.disk_allocated_bytes),
            o.disk_files,
            fmt_num(o.stats_before_close.keys as f64),
            fmt_num(o.stats_after_open.keys as f64),
            if o.keys_match { "match" } else { "MISMATCH" },
            o.stats_after_open.revision,
            if o.revision_match { "match" } else { "MISMATCH" },
        ));
        l.push(format!(
            "  stats before close: {} versions, {} segments, {} segment bytes",
            fmt_num(o.stats_before_close.versions as f64),
            o.stats_before_close.segments,
            mb(o.stats_before_close.segment_bytes),
        ));
    }
    if r.watch_runs.len() > 1 {
        let each = |f: &dyn Fn(&WatchResult) -> String| {
            r.watch_runs.iter().map(f).collect::<Vec<_>>().join(" / ")
        };
        l.push(format!(
            "Watch, {} runs on fresh stores (the median run is detailed next): p99 delivery from commit {}; write latency p99 {}; complete watchers {}; process CPU {} cores busy",
            r.watch_runs.len(),
            each(&|w| fmt_us(w.delivery_from_commit.p99_us)),
            each(&|w| fmt_us(w.write_latency.p99_us)),
            each(&|w| w.complete_watchers.to_string()),
            each(&|w| format!("{:.2}", w.cpu_cores_busy)),
        ));
    }
    if let Some(w) = &r.watch {
        l.push(format!(
            "Watch: {} watchers on {} runtime threads (opened in {:.3} s); writer paced at {}/s for {:.2} s: {} submitted ({} /s achieved, max pacing lag {}), {} acked, {} errors{}; process CPU {:.2} cores busy",
            w.watchers,
            w.threads,
            w.watch_setup_s,
            fmt_num(w.target_rate as f64),
            w.duration_s,
            fmt_num(w.submitted as f64),
            fmt_num(w.achieved_rate),
            fmt_us(w.max_pacing_lag_us),
            fmt_num(w.acked as f64),
            w.write_errors,
            w.first_write_error.as_ref().map(|e| format!(" (first: {e})")).unwrap_or_default(),
            w.cpu_cores_busy,
        ));
        l.extend(watch_latency_lines(w));
        l.push(format!(
            "  {} / {} watchers complete; events per watcher min {} max {} (expected {}); {} deliveries; missing {}, dups {}, errors {}, unfinished {}; revision gaps {}; drain {:.3} s{}",
            w.complete_watchers,
            w.watchers,
            fmt_num(w.min_events_per_watcher as f64),
            fmt_num(w.max_events_per_watcher as f64),
            fmt_num(w.acked as f64),
            fmt_num(w.total_deliveries as f64),
            w.watchers_with_missing,
            w.watchers_with_dups,
            w.watchers_with_errors,
            w.watchers_unfinished,
            w.revision_gaps,
            w.drain_s,
            w.first_watch_error.as_ref().map(|e| format!(" (first error: {e})")).unwrap_or_default(),
        ));
    }
    for f in &r.failures {
        l.push(format!("FAILED: {f}"));
    }
    l
}

/// The watch scenario's latency lines: from commit (the target), from submit, the writes, and
/// the disk alone.
fn watch_latency_lines(w: &WatchResult) -> Vec<String> {
    let mut l = vec![format!(
        "  delivery from commit (Event::visible_at → received): {}{}",
        w.delivery_from_commit.brief(),
        match w.deliveries_without_visible_at {
            0 => String::new(),
            n => format!(
                "; {} deliveries without visible_at (not timed)",
                fmt_num(n as f64)
            ),
        }
    )];
    l.push(format!(
        "  delivery from submit (timestamp in the value; includes the commit): {}",
        w.delivery_from_submit.brief()
    ));
    l.push(format!(
        "  write latency (submit → ack): {}",
        w.write_latency.brief()
    ));
    if let Some(d) = &w.disk_sync {
        l.push(format!(
            "  disk alone (same directory, before the store opened): {} B append + fdatasync, 1 thread, {:.1} s: {}",
            d.chunk_bytes,
            d.elapsed_s,
            d.latency.brief()
        ));
    }
    l
}

/// The table printed to stdout.
pub fn print_table(rep: &RunReport) {
    let rows: Vec<[String; 5]> = rep
        .checks
        .iter()
        .map(|c| {
            [
                c.name.clone(),
                c.value_text(),
                c.target_text(),
                format!("{:.2}×", c.ratio),
                if c.pass { "PASS".into() } else { "FAIL".into() },
            ]
        })
        .collect();
    let head = ["figure", "value", "target", "vs target", "result"];
    let mut w = head.map(|h| h.chars().count());
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String; 5]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = w[i] - c.chars().count();
            if i == 0 {
                let _ = write!(s, "{c}{}", " ".repeat(pad));
            } else {
                let _ = write!(s, "  {}{c}", " ".repeat(pad));
            }
        }
        s
    };
    println!();
    println!(
        "engine-bench {} ({}) — {} — {} — load average at start {}",
        if rep.meta.quick { "QUICK" } else { "full" },
        rep.meta.backend,
        rep.meta.date_utc,
        rep.meta.commit,
        rep.meta.machine.load_avg_at_start
    );
    println!("{}", line(&head.map(String::from)));
    println!(
        "{}",
        "-".repeat(w.iter().sum::<usize>() + 2 * (w.len() - 1))
    );
    for r in &rows {
        println!("{}", line(r));
    }
    println!();
    for d in detail_lines(&rep.results) {
        println!("{d}");
    }
    println!();
}

pub const MARKER: &str = "<!-- engine-bench: runs are inserted below this line, newest first -->";

const HEADER: &str = "# keel-engine benchmark report

Written by `engine-bench --report benches/REPORT.md` (see `benches/README.md`). Each run adds a
section under a dated heading; the newest is first and earlier runs are kept for comparison.
Quick (`--quick`) runs are smoke tests at reduced sizes: compare full runs with full runs.
";

/// The markdown section for one run.
pub fn markdown_section(rep: &RunReport) -> String {
    let m = &rep.meta;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## {} — {}{}",
        m.date_utc,
        m.commit,
        if m.quick {
            " — QUICK (smoke sizes)"
        } else {
            ""
        }
    );
    s.push('\n');
    let _ = writeln!(
        s,
        "- Machine: {} cores ({}), {:.1} GiB RAM, Linux {}; data dir {} on {} ({}, mounted at {}); load average at start {}",
        m.machine.nproc,
        m.machine.cpu_model,
        m.machine.mem_total_gib,
        m.machine.kernel,
        m.machine.data_dir,
        m.machine.fs_type,
        m.machine.fs_device,
        m.machine.fs_mount,
        m.machine.load_avg_at_start
    );
    let _ = writeln!(
        s,
        "- Backend: {}; command: `{}`; total {:.0} s",
        m.backend, m.command, m.total_s
    );
    let passed = rep.checks.iter().filter(|c| c.pass).count();
    let _ = writeln!(s, "- Result: {passed} of {} checks pass", rep.checks.len());
    s.push('\n');
    s.push_str("| Figure | Value | Target | vs target | Result |\n");
    s.push_str("| --- | ---: | ---: | ---: | --- |\n");
    for c in &rep.checks {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.2}× | {} |",
            c.name,
            c.value_text(),
            c.target_text(),
            c.ratio,
            if c.pass { "pass" } else { "**FAIL**" }
        );
    }
    s.push('\n');
    s.push_str("Details:\n\n");
    for d in detail_lines(&rep.results) {
        match d.strip_prefix("  ") {
            Some(sub) => {
                let _ = writeln!(s, "  - {sub}");
            }
            None => {
                let _ = writeln!(s, "- {d}");
            }
        }
    }
    s.push('\n');
    s
}

/// Inserts the run's section at the top of the runs in `path` (creating the file if needed).
pub fn update_report_md(path: &Path, rep: &RunReport) -> std::io::Result<()> {
    let old = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let section = markdown_section(rep);
    let new = match old.find(MARKER) {
        Some(at) => {
            let after = at + MARKER.len();
            let rest = old[after..].trim_start_matches('\n');
            format!("{}\n\n{}{}", &old[..after], section, rest)
        }
        None if old.trim().is_empty() => format!("{HEADER}\n{MARKER}\n\n{section}"),
        None => format!("{}\n\n{MARKER}\n\n{section}", old.trim_end()),
    };
    std::fs::write(path, new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::Latency;

    /// The check whose name starts with `prefix`.
    fn named<'a>(checks: &'a [Check], prefix: &str) -> &'a Check {
        checks
            .iter()
            .find(|c| c.name.starts_with(prefix))
            .unwrap_or_else(|| panic!("no check named {prefix}..."))
    }

    fn latency(p99_ms: f64) -> Latency {
        Latency {
            count: 1,
            p99_us: p99_ms * 1000.0,
            ..Latency::default()
        }
    }

    #[test]
    fn watch_target_is_held_to_delivery_from_commit() {
        // (from commit p99 ms, from submit p99 ms, passes)
        let cases = [(4.0, 15.0, true), (10.0, 25.0, true), (12.0, 8.0, false)];
        for (commit, submit, pass) in cases {
            let r = Results {
                watch: Some(WatchResult {
                    watchers: 1000,
                    complete_watchers: 1000,
                    delivery_from_commit: latency(commit),
                    delivery_from_submit: latency(submit),
                    ..WatchResult::default()
                }),
                ..Results::default()
            };
            let c = checks(&r);
            let p99 = named(&c, "watch delivery p99 (from commit)");
            assert_eq!(p99.value, commit);
            assert_eq!(
                p99.pass, pass,
                "{commit} ms from commit, {submit} ms from submit"
            );
            let lines = detail_lines(&r).join("\n");
            assert!(lines.contains("delivery from commit"));
            assert!(lines.contains("delivery from submit"));
        }
    }

    #[test]
    fn repeated_watch_runs_hold_the_median_p99_and_every_run_complete() {
        let run = |p99_ms: f64, complete: usize| WatchResult {
            watchers: 1000,
            complete_watchers: complete,
            delivery_from_commit: latency(p99_ms),
            ..WatchResult::default()
        };
        let runs = vec![run(12.0, 1000), run(4.0, 1000), run(7.0, 999)];
        let median = crate::scenarios::median_watch_run(&runs).expect("a run");
        assert_eq!(median.delivery_from_commit.p99_us, 7000.0);
        let r = Results {
            watch: Some(median),
            watch_runs: runs,
            ..Results::default()
        };
        let c = checks(&r);
        let p99 = named(&c, "watch delivery p99");
        assert!(p99.name.contains("median of 3 runs"), "{}", p99.name);
        assert_eq!(p99.value, 7.0);
        assert!(p99.pass);
        let complete = named(&c, "watchers that received");
        assert_eq!(complete.value, 999.0, "the worst run counts");
        assert!(!complete.pass);
        let lines = detail_lines(&r).join("\n");
        assert!(lines.contains("3 runs on fresh stores"), "{lines}");
        assert!(lines.contains("12.00 ms / 4.00 ms / 7.00 ms"), "{lines}");
    }
}
