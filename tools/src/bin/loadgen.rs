//! `loadgen`: see `loadgen --help`.

use clap::Parser;
use keel_tools::cli::{self, Cli, Cmd};
use std::sync::atomic::Ordering;

/// Exit status when the run completed but some operation failed or a watch missed events.
const EXIT_ERRORS: i32 = 3;

fn main() {
    let args = Cli::parse();
    keel_tools::driver::raise_fd_limit();
    if args.quiet {
        keel_tools::driver::PROGRESS.store(false, Ordering::Relaxed);
    }
    if let Cmd::Compare(c) = &args.cmd {
        if let Err(e) = keel_tools::compare::run(c) {
            eprintln!("loadgen compare: {e}");
            std::process::exit(1);
        }
        return;
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::exit(1);
        }
    };
    let report = match rt.block_on(cli::execute(&args.conn, &args.cmd)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::exit(1);
        }
    };
    print!("{}", report.table());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!("loadgen: {}: {e}", path.display());
            std::process::exit(1);
        }
    }
    let exact = report
        .details
        .get("exact")
        .and_then(|v| v.as_bool())
        .unwrap_or(true);
    if report.errors() > 0 || !exact {
        std::process::exit(EXIT_ERRORS);
    }
}
