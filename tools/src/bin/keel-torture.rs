//! `keel-torture`: see `keel-torture --help` and `keel_tools::torture`.

use clap::Parser;
use keel_server::options::parse_duration;
use keel_tools::limits;
use keel_tools::torture::{self, damage::Damage, Spec};
use std::path::PathBuf;
use std::time::Duration;

/// Exit status when the run found a lost acknowledged write or a revision handed out twice.
const EXIT_VIOLATIONS: i32 = 3;

/// Kills an API server under write load, optionally damages its store, restarts it, and
/// checks every acknowledged write and every revision against its own record.
///
/// After a start that does not refuse, every acknowledged write must be found; a server that
/// refuses (damage to acknowledged data) is started again with --storage-repair, and what the
/// repair dropped is counted, not failed. In every case no object may appear that no write
/// produced and no revision may be acknowledged twice or at or below one acknowledged
/// before the restart. Exits 3 when that fails, 1 on an error of the run itself.
#[derive(Parser, Debug)]
#[command(name = "keel-torture", version, about, long_about)]
struct Cli {
    /// The API server binary (keel's `apiserver`).
    #[arg(long, default_value = "target/release/apiserver")]
    apiserver: PathBuf,
    /// Working directory (the server's data directory and log); created if missing, and
    /// removed afterwards unless --keep.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the working directory.
    #[arg(long)]
    keep: bool,
    /// Kill-and-restart iterations.
    #[arg(long, short = 'n', default_value_t = 100)]
    iterations: usize,
    /// Concurrent writers (each writes its own keys, one write at a time).
    #[arg(long, default_value_t = 16)]
    writers: u32,
    /// Keys per writer (each created, replaced and deleted over and over).
    #[arg(long, default_value_t = 50)]
    keys_per_writer: u32,
    /// Shortest write load before a kill.
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    load_min: Duration,
    /// Longest write load before a kill.
    #[arg(long, default_value = "1500ms", value_parser = parse_duration)]
    load_max: Duration,
    /// Damages to choose from after a kill (comma separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "truncate,zero-range,overwrite,flip-bit,delete-segment,extra-segment"
    )]
    damage: Vec<Damage>,
    /// Probability that a kill is followed by a damage.
    #[arg(long, default_value_t = 0.5)]
    damage_probability: f64,
    /// Padding bytes in each ConfigMap.
    #[arg(long, default_value_t = 256)]
    value_bytes: usize,
    /// Random seed (default: from the clock; printed in the report).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the report as JSON to this file too.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Extra server flags (repeat, e.g. --server-arg=--sync=always).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
}

fn main() {
    let cli = Cli::parse();
    if cli.value_bytes > limits::TORTURE_VALUE_BYTES_MAX {
        eprintln!(
            "keel-torture: --value-bytes must be at most {}",
            limits::TORTURE_VALUE_BYTES_MAX
        );
        std::process::exit(1);
    }
    let tmp;
    let dir = match &cli.dir {
        Some(d) => d.clone(),
        None => {
            tmp = match tempfile::Builder::new().prefix("keel-torture-").tempdir() {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("keel-torture: {e}");
                    std::process::exit(1);
                }
            };
            tmp.path().to_path_buf()
        }
    };
    let spec = Spec {
        apiserver: cli.apiserver.clone(),
        dir: dir.clone(),
        iterations: cli.iterations,
        writers: cli.writers,
        keys_per_writer: cli.keys_per_writer,
        load_min: cli.load_min,
        load_max: cli.load_max,
        damages: cli.damage.clone(),
        damage_probability: cli.damage_probability,
        value_bytes: cli.value_bytes,
        seed: cli.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        }),
        server_args: cli.server_args.clone(),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("keel-torture: {e}");
            std::process::exit(1);
        }
    };
    let every = (cli.iterations / 20).max(1) as u64;
    let result = rt.block_on(torture::run(&spec, |r| {
        if r.iterations % every == 0 {
            eprintln!(
                "keel-torture: {} iterations, {} writes acknowledged, {} repairs, {} violations",
                r.iterations,
                r.writes_acknowledged,
                r.repairs,
                r.violations.len()
            );
        }
    }));
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("keel-torture: {e}");
            if cli.dir.is_some() || cli.keep {
                eprintln!("keel-torture: the store is kept in {}", dir.display());
            }
            std::process::exit(1);
        }
    };
    print!("{}", report.table());
    if let Some(path) = &cli.json {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!("keel-torture: {}: {e}", path.display());
            std::process::exit(1);
        }
    }
    if cli.keep && cli.dir.is_none() {
        let kept = tmp_keep(&dir);
        eprintln!("keel-torture: kept {}", kept.display());
    }
    if !report.ok() {
        std::process::exit(EXIT_VIOLATIONS);
    }
}

/// Moves the temporary working directory out of the way of its removal.
fn tmp_keep(dir: &std::path::Path) -> PathBuf {
    let to = dir.with_extension("kept");
    match std::fs::rename(dir, &to) {
        Ok(()) => to,
        Err(_) => dir.to_path_buf(),
    }
}
