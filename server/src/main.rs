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
