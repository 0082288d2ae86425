//! What a request pays to find its resource in the live catalog: `load()` + `lookup`, with two
//! reader threads, against the same `lookup` on a plain `&Catalog` (what the server does
//! today with its leaked catalog) measured in the same run, and against `load_full()` +
//! `lookup` (a shared reference count the readers contend on). A last row has a writer
//! swapping in a new snapshot every millisecond while the readers run.
//!
//! Run: `cargo run --release -p keel-catalog --example live_catalog_load`

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use keel_catalog::{Catalog, LiveCatalog, ResourceId, ResourceSpec};

/// Lookups per reader thread per measurement.
const LOOKUPS_PER_THREAD: usize = 4_000_000;
/// Reader threads (the machine has 2 cores).
const READERS: usize = 2;
/// Measurements per variant; the median is reported.
const ROUNDS: usize = 5;

/// Paths a request would look up: a spread of built-in and run-time resources.
const PATHS: &[(&str, &str, &str)] = &[
    ("", "v1", "pods"),
    ("", "v1", "configmaps"),
    ("apps", "v1", "deployments"),
    ("batch", "v1", "jobs"),
    ("coordination.k8s.io", "v1", "leases"),
    ("example.com", "v1", "widgets"),
    ("", "v1", "nodes"),
    ("", "v1", "nope"),
];

/// Nanoseconds this thread has spent on a CPU (Linux schedstat): unlike wall time, not
/// inflated when other processes share the cores.
fn thread_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux schedstat");
    stat.split_whitespace().next().unwrap().parse().unwrap()
}

/// Runs `per_thread` on `READERS` threads at once; returns (wall, on-CPU) ns per lookup, each
/// the mean over threads.
fn measure(per_thread: impl Fn() + Sync) -> (f64, f64) {
    let barrier = Barrier::new(READERS);
    let elapsed: Vec<(Duration, u64)> = thread::scope(|s| {
        let handles: Vec<_> = (0..READERS)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let (start, cpu) = (Instant::now(), thread_cpu_ns());
                    per_thread();
                    (start.elapsed(), thread_cpu_ns() - cpu)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let n = (READERS * LOOKUPS_PER_THREAD) as f64;
    let wall: Duration = elapsed.iter().map(|e| e.0).sum();
    let cpu: u64 = elapsed.iter().map(|e| e.1).sum();
    (wall.as_nanos() as f64 / n, cpu as f64 / n)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs[xs.len() / 2]
}

/// `widgets.example.com` at `version`, stored as v1.
fn widget(version: &str) -> ResourceSpec {
    ResourceSpec {
        storage_version: "v1".into(),
        ..ResourceSpec::custom("example.com", version, "Widget", "widgets", true)
    }
}

fn main() {
    let plain = Catalog::new("")
        .unwrap()
        .with_changes(&keel_catalog::CatalogChange::add(vec![widget("v1")]))
        .unwrap();
    let live = LiveCatalog::new(plain.clone());
    let plain = &plain;
    let live = &live;
    let lookups = |find: &dyn Fn(&str, &str, &str) -> bool| {
        let mut found = 0usize;
        for i in 0..LOOKUPS_PER_THREAD {
            let (g, v, p) = PATHS[i % PATHS.len()];
            found += find(black_box(g), black_box(v), black_box(p)) as usize;
        }
        black_box(found);
    };
    let baseline = || lookups(&|g, v, p| plain.lookup(g, v, p).is_some());
    let guarded = || lookups(&|g, v, p| live.load().lookup(g, v, p).is_some());
    let counted = || lookups(&|g, v, p| live.load_full().lookup(g, v, p).is_some());

    let mut rows: Vec<(&str, Vec<(f64, f64)>)> = vec![
        ("lookup on &Catalog (baseline)", vec![]),
        ("load() + lookup", vec![]),
        ("load_full() + lookup", vec![]),
        ("load() + lookup, writer swapping every 1 ms", vec![]),
    ];
    let mut swaps = 0usize;
    for _ in 0..ROUNDS {
        rows[0].1.push(measure(baseline));
        rows[1].1.push(measure(guarded));
        rows[2].1.push(measure(counted));
        let stop = AtomicBool::new(false);
        let (ns, n) = thread::scope(|s| {
            let writer = s.spawn(|| {
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let id = ResourceId::new("example.com", "v2", "widgets");
                    live.add(vec![widget("v2")]).unwrap();
                    live.remove(vec![id]).unwrap();
                    n += 2;
                    thread::sleep(Duration::from_millis(1));
                }
                n
            });
            let ns = measure(guarded);
            stop.store(true, Ordering::Relaxed);
            (ns, writer.join().unwrap())
        });
        rows[3].1.push(ns);
        swaps += n;
    }
    let wall = |xs: &[(f64, f64)]| median(xs.iter().map(|x| x.0).collect());
    let cpu = |xs: &[(f64, f64)]| median(xs.iter().map(|x| x.1).collect());
    let (base_wall, base_cpu) = (wall(&rows[0].1), cpu(&rows[0].1));
    println!(
        "{READERS} reader threads, {LOOKUPS_PER_THREAD} lookups each, median of {ROUNDS} rounds"
    );
    println!("{:<46} {:>14} {:>16}", "", "on-CPU ns", "wall ns");
    for (name, xs) in &rows {
        let (w, c) = (wall(xs), cpu(xs));
        println!(
            "{name:<46} {c:>7.1} ({:>4.2}x) {w:>8.1} ({:>4.2}x)",
            c / base_cpu,
            w / base_wall
        );
    }
    println!("(writer swapped in {swaps} snapshots in the last row's rounds)");
}
