//! keel-admin: back up a running keel API server, restore a backup into a new data directory,
//! and check a data directory offline. The etcd operator's `etcdctl snapshot save`,
//! `etcdutl snapshot restore` and `etcdutl snapshot status`, for keel's embedded store.
//!
//! Exit codes: 0 success (`check`: no damage); 1 failure (`check`: damage found); 2 `check`
//! could not read the directory (missing, in use by a running server, an I/O error).

use clap::{Args, Parser, Subcommand};
use keel_tools::admin::{self, Conn};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "keel-admin", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Snapshots: save one from a running server, restore one, show one's status.
    #[command(subcommand)]
    Snapshot(SnapshotCmd),
    /// Checks a data directory offline, read only, and reports every problem found with its
    /// file and offset (the server must be stopped).
    Check {
        /// The server's --data-dir (its `store` directory is checked), or a store directory.
        #[arg(long)]
        data_dir: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
enum SnapshotCmd {
    /// Saves a snapshot of a running server (every object at one revision) to a file.
    Save {
        #[command(flatten)]
        conn: ConnArgs,
        /// The snapshot file to write (mode 0600; written to a temporary file and renamed
        /// once complete and verified).
        #[arg(long)]
        out: PathBuf,
    },
    /// Restores a snapshot into a new data directory (which must not exist, or be empty).
    Restore {
        /// The snapshot file.
        file: PathBuf,
        /// The new server data directory (the store is written to `<data-dir>/store`; the
        /// server creates its certificates and tokens there on its first start).
        #[arg(long)]
        data_dir: PathBuf,
        /// Shards of the new store (default: one per core, as the server creates them).
        #[arg(long)]
        shards: Option<usize>,
    },
    /// Verifies a snapshot file and shows its revision, keys, size and checksum.
    Status {
        /// The snapshot file.
        file: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug, Clone)]
struct ConnArgs {
    /// The API server, e.g. https://127.0.0.1:6443 (overrides the kubeconfig's).
    #[arg(long)]
    server: Option<String>,
    /// Bearer token (overrides the kubeconfig's).
    #[arg(long)]
    token: Option<String>,
    /// A kubeconfig giving the server, its CA and the credentials.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long)]
    context: Option<String>,
    /// PEM file of the CA that signed the server's certificate.
    #[arg(long)]
    certificate_authority: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Snapshot(SnapshotCmd::Save { conn, out }) => {
            let conn = Conn {
                server: conn.server,
                token: conn.token,
                kubeconfig: conn.kubeconfig,
                context: conn.context,
                certificate_authority: conn.certificate_authority,
            };
            match admin::save(&conn, &out) {
                Ok(s) => {
                    println!(
                        "Snapshot saved at {}: revision {}, {} keys, {} bytes, in {:.2} s",
                        out.display(),
                        s.summary.header.revision,
                        s.summary.records,
                        s.summary.bytes,
                        s.seconds
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        Cmd::Snapshot(SnapshotCmd::Status { file, json }) => match admin::status(&file) {
            Ok(s) => {
                print!("{}", admin::render_status(&s, json));
                if json {
                    println!();
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
        Cmd::Snapshot(SnapshotCmd::Restore {
            file,
            data_dir,
            shards,
        }) => {
            let started = std::time::Instant::now();
            match admin::restore_to(&file, &data_dir, shards) {
                Ok(r) => {
                    println!(
                        "Restored {} keys at revision {} into {} ({} shards, {} segments) in \
                         {:.2} s; the first write will get revision {}",
                        r.summary.records,
                        r.summary.header.revision,
                        data_dir.display(),
                        r.shards,
                        r.segments,
                        started.elapsed().as_secs_f64(),
                        r.next_revision
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        Cmd::Check { data_dir } => match admin::check_dir(&data_dir) {
            Ok(r) => {
                print!("{}", admin::render_check(&admin::store_dir(&data_dir), &r));
                if r.is_clean() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                }
            }
            Err(e) => {
                eprintln!("keel-admin: {e}");
                ExitCode::from(2)
            }
        },
    }
}

fn fail(e: &str) -> ExitCode {
    eprintln!("keel-admin: {e}");
    ExitCode::FAILURE
}
