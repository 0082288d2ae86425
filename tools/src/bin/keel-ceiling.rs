//! The HTTP ceiling of this machine for API-shaped traffic: keel's own HTTP/1.1 + TLS front end
//! (same runtime, parser, limits and rustls setup as the API server) with *no* API work behind
//! it. `loadgen compare` runs the create and get workloads against it (`--ceiling-server`, by default
//! `keel-ceiling` next to `loadgen`) beside
//! keel, so the report shows what fraction of the machine's request-handling capacity is left
//! for the API itself once loopback TCP, TLS and the load generator have taken theirs.
//!
//! `keel-ceiling --pki DIR --https ADDR [--http ADDR] [--cores N]`: `POST` answers `201` with the
//! request body given the next resourceVersion (a create's response is about the size of its
//! request), and appends it to the watch log as an `ADDED` event; `GET` with `watch=1` (or
//! `true`) streams the events created from then on, paced as keel's watches are
//! (`keel_tools::ceiling`); any other `GET` answers `200` with a stored-ConfigMap-shaped JSON
//! object of about 1.4 KB; anything else `200 {}`. No authentication. Certificates (a CA and a serving certificate for 127.0.0.1) are created in
//! `DIR` on first start; clients trust `DIR/ca.crt`.

use keel_http::{handler_fn, serve, Body, Listener, Method, Request, Response, ServeConfig};
use keel_tools::ceiling::{self, WatchLog, CEILING_WATCH_LOG_EVENTS};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The API server's allocator, so the two are compared on equal terms.
#[global_allocator]
static GLOBAL: keel_server::Allocator = keel_server::Allocator {};

/// A ConfigMap as keel stores it, with a 1 KiB payload (what `loadgen get` fetches).
fn get_body() -> Vec<u8> {
    let payload = "x".repeat(1024);
    format!(
        concat!(
            r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"lg-0","namespace":"loadgen","#,
            r#""uid":"00000000-0000-4000-8000-000000000000","resourceVersion":"1","#,
            r#""creationTimestamp":"2026-01-01T00:00:00Z","labels":{{"app":"lg"}}}},"#,
            r#""data":{{"payload":"{}"}}}}"#
        ),
        payload
    )
    .into_bytes()
}

struct Args {
    pki: PathBuf,
    https: SocketAddr,
    http: Option<SocketAddr>,
    cores: Option<usize>,
}

fn parse_args() -> Result<Args, String> {
    let mut pki = None;
    let mut https = None;
    let mut http = None;
    let mut cores = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--pki" => pki = Some(PathBuf::from(value)),
            "--https" => https = Some(value.parse().map_err(|e| format!("--https: {e}"))?),
            "--http" => http = Some(value.parse().map_err(|e| format!("--http: {e}"))?),
            "--cores" => cores = Some(value.parse().map_err(|e| format!("--cores: {e}"))?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(Args {
        pki: pki.ok_or("--pki DIR is required")?,
        https: https.ok_or("--https ADDR is required")?,
        http,
        cores,
    })
}

fn is_watch(req: &Request) -> bool {
    matches!(req.query_get("watch").as_deref(), Some("1" | "true"))
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "keel-ceiling: {e}\nusage: keel-ceiling --pki DIR --https ADDR [--http ADDR] [--cores N]"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args) {
        eprintln!("keel-ceiling: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    let files = keel_http::tls::load_or_create(&args.pki, &["127.0.0.1".to_string()])
        .map_err(|e| format!("certificates: {e}"))?;
    let tls = keel_http::tls::server_config(&files.cert, &files.key, None)?;
    let mut listeners = vec![Listener {
        addr: args.https,
        tls: Some(tls),
    }];
    if let Some(addr) = args.http {
        listeners.push(Listener { addr, tls: None });
    }
    let mut cfg = ServeConfig::new(listeners);
    if let Some(n) = args.cores {
        cfg.cores = n;
    }
    let get: Arc<[u8]> = get_body().into();
    let log = Arc::new(WatchLog::new(CEILING_WATCH_LOG_EVENTS));
    let handler = handler_fn(move |req: Request| {
        let resp = match req.method {
            Method::Post => match log.append(&req.body) {
                Ok(stored) => Response::full(201, "application/json", stored),
                Err(e) => keel_http::status_response(400, "BadRequest", &e),
            },
            Method::Get if is_watch(&req) => Response {
                status: 200,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Body::Chunks(Box::pin(ceiling::watch(log.clone()))),
            },
            Method::Get => Response::full(200, "application/json", get.to_vec()),
            _ => Response::full(200, "application/json", b"{}".to_vec()),
        };
        std::future::ready(resp)
    });
    let server = serve(cfg, Arc::new(handler)).map_err(|e| format!("listening: {e}"))?;
    let addrs: Vec<String> = server.local_addrs().iter().map(|a| a.to_string()).collect();
    println!("listening {}", addrs.join(" "));
    server.join();
    Ok(())
}
