//! keel's `apiserver`, linked into this package so that `cargo test -p keel-tools` builds it in
//! the same profile and the tests find it via `CARGO_BIN_EXE_keel-apiserver-under-test`.
//! Identical to `target/<profile>/apiserver` built from keel-server.

use clap::Parser;

#[global_allocator]
static GLOBAL: keel_server::Allocator = keel_server::Allocator {};

fn main() {
    let opts = keel_server::options::Options::parse();
    if let Err(e) = keel_server::run::run(opts) {
        eprintln!("apiserver: {e}");
        std::process::exit(1);
    }
}
