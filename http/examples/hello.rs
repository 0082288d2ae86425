//! A trivial server for load tests: `cargo run --release -p keel-http --example hello -- ADDR CORES`
//! answers every request with a short text body (plain HTTP, keep-alive).

use keel_http::{handler_fn, serve, Listener, Request, Response, ServeConfig};
use std::sync::Arc;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8080".to_string());
    let addr = addr
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut cfg = ServeConfig::new(vec![Listener { addr, tls: None }]);
    if let Some(cores) = args.next().and_then(|c| c.parse().ok()) {
        cfg.cores = cores;
    }
    let hello = |_: Request| {
        std::future::ready(Response::full(200, "text/plain", b"Hello, World!".to_vec()))
    };
    let server = serve(cfg, Arc::new(handler_fn(hello)))?;
    eprintln!("listening on {:?}", server.local_addrs());
    server.join();
    Ok(())
}
