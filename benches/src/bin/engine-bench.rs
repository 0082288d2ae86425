//! engine-bench: the keel-engine benchmark harness. See benches/README.md.
//!
//! Runs every scenario in process against fresh stores under `--dir`, prints a table of the
//! figures against their targets, and optionally writes JSON (`--json`) and adds a dated
//! section to a markdown report (`--report`).

use clap::{Parser, ValueEnum};
use keel_benches::alloc::{self, CountingAlloc};
use keel_benches::backend::Backend;
use keel_benches::report::{self, Meta, Results, RunReport};
use keel_benches::scenarios::{self, StoreConfig, WatchConfig, WritesConfig};
use keel_benches::sys;
use keel_engine::{Engine, MemStore};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Scenario {
    /// 1: durable creates (SyncMode::Always) with each `--writers` count, plus the raw
    /// append+fdatasync baseline.
    Writes,
    /// 2-4: load `--keys` keys, then heap per key, full and paginated scans, close + reopen.
    Store,
    /// 5: `--watchers` watchers on one prefix while a paced writer writes.
    Watch,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BackendKind {
    /// The real embedded engine (keel_engine::Engine).
    Engine,
    /// The in-memory model (keel_engine::MemStore): only to self-test the harness; its figures
    /// mean nothing (no disk, no syncs, no reopen).
    Model,
}

/// Benchmarks keel-engine in process. Every value is 1 KiB; each scenario opens a fresh store
/// in a temporary directory under `--dir` and removes it afterwards.
///
/// Scenarios (targets in brackets):
///   1 writes  durable creates (SyncMode::Always) by 1,024 and by 64 concurrent writers on one
///             tokio current-thread runtime per core: writes/s and latency p50/p99/p99.9
///             [>= 150,000/s with 1,024 writers]; then a raw baseline appends the same bytes
///             to a fresh file in as many appends as the engine made syncs, each followed by
///             fdatasync, from one thread [engine bytes/s >= 70% of raw].
///   2 store   full scan of 1,000,000 keys at a snapshot (list, limit 0, ReadAt::Exact)
///             [>= 10 million keys/s]; paginated scan with limit 500 (pages/s).
///   3 store   live heap (counting global allocator) after loading 1,000,000 keys minus
///             before, minus the key bytes, per key [<= 150 B/key]; RSS for information.
///   4 store   close, then time Engine::open on the 1,000,000-key store (warm page cache)
///             [<= 3 s]; on-disk size.
///   5 watch   1,000 watchers on one prefix while a writer does 10,000 paced writes/s (sync
///             Always) for 5 s: every watcher must get every event exactly once; delivery
///             latency from commit = receive instant - Event::visible_at (the revision was
///             committed and published) [p99 <= 10 ms, median of 3 runs]; also shown:
///             delivery from submit (timestamp in the value, includes the commit), write
///             latency, and the disk alone (1 KiB append + fdatasync loop for 2 s in the same
///             directory).
///
/// Full sizes take about 2 minutes on 2 cores and ~2.5 GB of temporary disk; `--quick`
/// shrinks everything to a smoke test of under ~20 s. Explicit size flags override the
/// `--quick` sizes. Exit status: 0 when every scenario ran (whether or not targets were met),
/// 1 if a scenario failed to run, 2 on a setup or output error.
#[derive(Parser, Debug)]
#[command(name = "engine-bench", version, verbatim_doc_comment)]
struct Cli {
    /// Smoke mode for CI: 1 s write runs, 100,000 keys, 1 s of watch traffic.
    #[arg(long)]
    quick: bool,

    /// Parent directory for the temporary stores (use one on the disk you want to measure).
    #[arg(long, default_value_os_t = std::env::temp_dir())]
    dir: PathBuf,

    /// Write the machine-readable results here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Insert a dated section for this run at the top of this markdown report
    /// (e.g. benches/REPORT.md); earlier runs are kept.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,

    /// Scenarios to run (comma separated). Default: all.
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Scenario>,

    /// Store to benchmark.
    #[arg(long, value_enum, default_value_t = BackendKind::Engine)]
    backend: BackendKind,

    /// Shards per store [default: number of cores].
    #[arg(long)]
    shards: Option<usize>,

    /// Runtime/driver threads for writers and watchers [default: number of cores].
    #[arg(long)]
    threads: Option<usize>,

    /// Scenario 1: concurrent writer counts, one run each.
    #[arg(long, value_delimiter = ',', default_value = "1024,64")]
    writers: Vec<usize>,

    /// Scenario 1: seconds per writer run [default: 5, quick: 1].
    #[arg(long)]
    write_secs: Option<f64>,

    /// Scenario 1: stop a writer run after this many writes (0 = only the duration limit).
    #[arg(long, default_value_t = 2_000_000)]
    write_max: u64,

    /// Scenario 1: cap on the raw baseline's duration in seconds (extrapolated beyond).
    #[arg(long, default_value_t = 30.0)]
    raw_max_secs: f64,

    /// Scenarios 2-4: keys to load [default: 1,000,000, quick: 100,000].
    #[arg(long)]
    keys: Option<u64>,

    /// Scenarios 2-4: writes in flight per load thread.
    #[arg(long, default_value_t = 4096)]
    load_window: usize,

    /// Scenario 2: full-scan repetitions (the median is reported) [default: 3, quick: 1].
    #[arg(long)]
    scan_reps: Option<usize>,

    /// Scenario 2: page size of the paginated scan.
    #[arg(long, default_value_t = 500)]
    page_limit: usize,

    /// Scenario 2: stop the paginated scan after this many seconds (reported as truncated).
    #[arg(long, default_value_t = 120.0)]
    paged_max_secs: f64,

    /// Scenario 5: number of watchers.
    #[arg(long, default_value_t = 1000)]
    watchers: usize,

    /// Scenario 5: writes per second.
    #[arg(long, default_value_t = 10_000)]
    watch_rate: u64,

    /// Scenario 5: seconds of paced writing [default: 5, quick: 1].
    #[arg(long)]
    watch_secs: Option<f64>,

    /// Scenario 5: repetitions, each on a fresh store; the run with the median p99 is held to
    /// the target and detailed, every run's figures are listed [default: 3, quick: 1].
    #[arg(long)]
    watch_reps: Option<usize>,

    /// Scenario 5: distinct keys (the first this many writes create, the rest update).
    #[arg(long, default_value_t = 5000)]
    watch_keys: u64,

    /// Scenario 5: seconds the watchers may take to drain after the last acknowledgement.
    #[arg(long, default_value_t = 20.0)]
    drain_secs: f64,

    /// Scenario 5: seconds of the raw disk probe (1 KiB append + fdatasync in a loop, in the
    /// watch store's directory before it opens) [default: 2, quick: 0.5; 0 skips it].
    #[arg(long, value_parser = parse_probe_secs)]
    disk_probe_secs: Option<f64>,
}

/// Longest disk probe `--disk-probe-secs` accepts.
const DISK_PROBE_SECS_MAX: f64 = 600.0;

fn parse_probe_secs(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if (0.0..=DISK_PROBE_SECS_MAX).contains(&v) {
        Ok(v)
    } else {
        Err(format!("expected 0 to {DISK_PROBE_SECS_MAX} seconds"))
    }
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.backend {
        BackendKind::Engine => run::<Engine>(&cli),
        BackendKind::Model => run::<MemStore>(&cli),
    };
    std::process::exit(code);
}

fn progress(msg: &str) {
    eprintln!("[engine-bench] {msg}");
}

fn run<B: Backend>(cli: &Cli) -> i32 {
    let started = Instant::now();
    let date_utc = sys::utc_now();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let shards = cli.shards.unwrap_or(cores);
    let threads = cli.threads.unwrap_or(cores);
    let q = cli.quick;
    let want = |s: Scenario| cli.only.is_empty() || cli.only.contains(&s);
    if !alloc::installed() {
        eprintln!("counting allocator is not installed");
        return 2;
    }
    if let Err(e) = std::fs::create_dir_all(&cli.dir) {
        eprintln!("cannot create --dir {}: {e}", cli.dir.display());
        return 2;
    }
    let root = match tempfile::Builder::new()
        .prefix("engine-bench-")
        .tempdir_in(&cli.dir)
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!(
                "cannot make a temporary directory under {}: {e}",
                cli.dir.display()
            );
            return 2;
        }
    };
    let machine = sys::machine(root.path());
    progress(&format!(
        "backend {}, {} mode, data under {} ({} on {})",
        B::NAME,
        if q { "quick" } else { "full" },
        root.path().display(),
        machine.fs_type,
        machine.fs_device
    ));

    let mut results = Results::default();
    if want(Scenario::Writes) {
        let secs = cli.write_secs.unwrap_or(if q { 1.0 } else { 5.0 });
        for &writers in &cli.writers {
            progress(&format!(
                "scenario 1: durable creates, {writers} writers, {secs} s"
            ));
            let cfg = WritesConfig {
                writers,
                threads,
                shards,
                duration: Duration::from_secs_f64(secs),
                max_writes: cli.write_max,
                raw_max: Duration::from_secs_f64(if q { 3.0 } else { cli.raw_max_secs }),
            };
            match scenarios::run_writes::<B>(root.path(), &cfg) {
                Ok(r) => results.writes.push(r),
                Err(e) => results
                    .failures
                    .push(format!("writes ({writers} writers): {e}")),
            }
        }
    }
    if want(Scenario::Store) {
        let cfg = StoreConfig {
            keys: cli.keys.unwrap_or(if q { 100_000 } else { 1_000_000 }),
            shards,
            load_threads: threads,
            load_window: cli.load_window,
            scan_reps: cli.scan_reps.unwrap_or(if q { 1 } else { 3 }),
            page_limit: cli.page_limit,
            paged_max: Duration::from_secs_f64(if q {
                cli.paged_max_secs.min(5.0)
            } else {
                cli.paged_max_secs
            }),
        };
        progress(&format!("scenarios 2-4: store of {} keys", cfg.keys));
        match scenarios::run_store::<B>(root.path(), &cfg, &progress) {
            Ok(r) => results.store = Some(r),
            Err(e) => results.failures.push(format!("store: {e}")),
        }
    }
    if want(Scenario::Watch) {
        let cfg = WatchConfig {
            watchers: cli.watchers,
            threads,
            shards,
            rate: cli.watch_rate,
            duration: Duration::from_secs_f64(cli.watch_secs.unwrap_or(if q { 1.0 } else { 5.0 })),
            keys: cli.watch_keys,
            drain_timeout: Duration::from_secs_f64(if q {
                cli.drain_secs.min(5.0)
            } else {
                cli.drain_secs
            }),
            disk_probe: Duration::from_secs_f64(cli.disk_probe_secs.unwrap_or(if q {
                0.5
            } else {
                2.0
            })),
        };
        progress(&format!(
            "scenario 5: {} watchers, {} writes/s for {:.1} s",
            cfg.watchers,
            cfg.rate,
            cfg.duration.as_secs_f64()
        ));
        let reps = cli.watch_reps.unwrap_or(if q { 1 } else { 3 }).max(1);
        for i in 0..reps {
            if reps > 1 {
                progress(&format!("scenario 5: run {} of {reps}", i + 1));
            }
            match scenarios::run_watch::<B>(root.path(), &cfg) {
                Ok(r) => results.watch_runs.push(r),
                Err(e) => results.failures.push(format!("watch (run {}): {e}", i + 1)),
            }
        }
        results.watch = scenarios::median_watch_run(&results.watch_runs);
    }

    let checks = report::checks(&results);
    let rep = RunReport {
        meta: Meta {
            date_utc,
            commit: sys::git_commit(),
            machine,
            backend: B::NAME.to_string(),
            quick: q,
            command: std::env::args().collect::<Vec<_>>().join(" "),
            total_s: started.elapsed().as_secs_f64(),
        },
        checks,
        results,
    };
    report::print_table(&rep);
    let mut code = 0;
    if let Some(p) = &cli.json {
        match serde_json::to_string_pretty(&rep) {
            Ok(s) => {
                if let Err(e) = std::fs::write(p, s + "\n") {
                    eprintln!("writing {}: {e}", p.display());
                    code = 2;
                } else {
                    progress(&format!("wrote {}", p.display()));
                }
            }
            Err(e) => {
                eprintln!("serializing results: {e}");
                code = 2;
            }
        }
    }
    if let Some(p) = &cli.report {
        match report::update_report_md(p, &rep) {
            Ok(()) => progress(&format!("updated {}", p.display())),
            Err(e) => {
                eprintln!("updating {}: {e}", p.display());
                code = 2;
            }
        }
    }
    drop(root);
    if code == 0 && !rep.results.failures.is_empty() {
        code = 1;
    }
    code
}
