//! `slow-bodies`: many connections without credentials that announce large request bodies and
//! trickle them (or trickle their heads), while an authenticated client measures GET latency
//! and the server's resident memory is sampled. It measures what such clients make a server
//! hold (issue 22: keel reserved every announced body whole, ~2 MiB per connection) and
//! whether authenticated clients still get answers.
//!
//! Phases: GETs alone for `idle` (latency baseline, resident baseline); then `connections`
//! slow clients are opened (at most `open_concurrency` handshakes at once; the time it takes
//! is reported, GETs pause); once each has been opened (or failed) the GETs go on for `hold`
//! while the slow clients trickle; then the slow clients are dropped, and the resident memory
//! is read again after `settle` more seconds of GETs. A slow client whose connection the server closes is counted
//! with the status it was answered (if any) and, with `reconnect`, opened again, so that the
//! server faces `connections` slow clients throughout.

use crate::driver::{self, Outcome, Plan};
use crate::procstat::{self, Monitor};
use crate::report::Report;
use keel_client::kubeconfig::Endpoint;
use keel_client::{KubeClient, Method};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{watch, Semaphore};

/// Bytes of a slow client's answer kept to read its status line.
const ANSWER_BYTES_KEPT: usize = 512;
/// Authenticated GETs in flight at once (connections of the GET client).
pub const PROBE_CONCURRENCY: usize = 4;
/// Longest the opening phase may take before the hold starts anyway.
const OPENING_TIMEOUT: Duration = Duration::from_secs(300);
/// How often the opening phase checks whether every slow client has connected.
const OPENING_POLL: Duration = Duration::from_millis(20);
/// Pause before a slow client whose connection failed tries again.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);

/// What a slow client trickles.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trickle {
    /// The whole head at once (announcing the body), then one body byte per interval.
    Body,
    /// The request line, then one byte of a header field per interval: the head never ends.
    Head,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct SlowSpec {
    pub connections: usize,
    pub announce_bytes: u64,
    pub trickle: Trickle,
    pub trickle_interval: Duration,
    pub idle: Duration,
    pub hold: Duration,
    pub settle: Duration,
    pub reconnect: bool,
    pub open_concurrency: usize,
    /// Authenticated GETs per second, and their path.
    pub probe_rate: f64,
    pub probe_path: String,
    pub server_pid: u32,
}

/// Where the slow clients connect: `https://host:port` or `http://host:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowTarget {
    pub tls: bool,
    pub host: String,
    pub port: u16,
}

/// Parses the server URL of an endpoint.
pub fn parse_target(server: &str) -> Result<SlowTarget, String> {
    let (tls, rest) = if let Some(r) = server.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = server.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(format!("{server}: expected an http:// or https:// URL"));
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let default_port = if tls { 443 } else { 80 };
    let port_of = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("{server}: invalid port {p:?}"))
    };
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("{server}: unclosed [ in the host"))?;
        match after.strip_prefix(':') {
            Some(p) => (host, port_of(p)?),
            None if after.is_empty() => (host, default_port),
            None => return Err(format!("{server}: unexpected {after:?} after the host")),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, p)) => (host, port_of(p)?),
            None => (authority, default_port),
        }
    };
    if host.is_empty() {
        return Err(format!("{server}: no host"));
    }
    Ok(SlowTarget {
        tls,
        host: host.to_string(),
        port,
    })
}

/// What a slow client sends first: the whole head announcing `announce_bytes` and one body
/// byte (`Body`), or only the request line (`Head`). No credentials.
pub fn first_bytes(trickle: Trickle, host: &str, announce_bytes: u64) -> Vec<u8> {
    let line = "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\n";
    match trickle {
        Trickle::Body => format!(
            "{line}Host: {host}\r\nContent-Type: application/json\r\n\
             Content-Length: {announce_bytes}\r\n\r\n{{"
        )
        .into_bytes(),
        Trickle::Head => format!("{line}Host: {host}\r\nX-Slow: ").into_bytes(),
    }
}

/// The status code of the first response in `answer` (0 if there is none).
pub fn answer_status(answer: &[u8]) -> u16 {
    let text = String::from_utf8_lossy(answer);
    text.strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// Counts of what the slow clients saw.
#[derive(Default, Debug)]
struct SlowStats {
    /// Connections (and handshakes) that succeeded.
    opened: AtomicU64,
    /// Connections or handshakes that failed (refused at accept shows as a handshake error).
    failed: AtomicU64,
    /// Connections open now.
    open: AtomicU64,
    /// Most connections open at once.
    open_max: AtomicU64,
    /// Connections the server closed, by the status of its answer (0: closed unanswered).
    closed_by_status: std::sync::Mutex<std::collections::BTreeMap<u16, u64>>,
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Everything a slow client needs to connect.
struct Dialer {
    target: SlowTarget,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
    first: Vec<u8>,
}

impl Dialer {
    fn new(ep: &Endpoint, spec: &SlowSpec) -> Result<Dialer, String> {
        let target = parse_target(&ep.server)?;
        let tls = if target.tls {
            let ca = ep
                .ca_pem
                .as_ref()
                .ok_or("slow-bodies over https needs the server's CA (--ca-file or kubeconfig)")?;
            let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
            let ca_path = dir.path().join("ca.crt");
            std::fs::write(&ca_path, ca).map_err(|e| e.to_string())?;
            let config = keel_http::tls::client_config(&ca_path, None)?;
            let name = ep.tls_server_name.as_deref().unwrap_or(&target.host);
            Some((
                tokio_rustls::TlsConnector::from(config),
                keel_http::tls::server_name(name)?,
            ))
        } else {
            None
        };
        let first = first_bytes(spec.trickle, &target.host, spec.announce_bytes);
        Ok(Dialer { target, tls, first })
    }

    /// Connects, completes the handshake and sends the first bytes.
    async fn open(&self) -> std::io::Result<Box<dyn Io>> {
        let tcp =
            tokio::net::TcpStream::connect((self.target.host.as_str(), self.target.port)).await?;
        let mut io: Box<dyn Io> = match &self.tls {
            None => Box::new(tcp),
            Some((connector, name)) => Box::new(connector.connect(name.clone(), tcp).await?),
        };
        io.write_all(&self.first).await?;
        io.flush().await?;
        Ok(io)
    }
}

/// Trickles on `io` until the server closes it or `stop`; returns the status the server
/// answered (0: none), or `None` if stopped first.
async fn trickle(
    io: Box<dyn Io>,
    spec: &SlowSpec,
    stop: &mut watch::Receiver<bool>,
) -> Option<u16> {
    let (mut rd, mut wr) = tokio::io::split(io);
    let mut tick = tokio::time::interval(spec.trickle_interval);
    tick.tick().await;
    let byte: &[u8] = if spec.trickle == Trickle::Head {
        b"a"
    } else {
        b" "
    };
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    let mut writing = true;
    loop {
        tokio::select! {
            _ = stop.changed() => return None,
            r = rd.read(&mut buf) => match r {
                Ok(0) | Err(_) => return Some(answer_status(&answer)),
                Ok(n) => {
                    let keep = n.min(ANSWER_BYTES_KEPT.saturating_sub(answer.len()));
                    answer.extend_from_slice(&buf[..keep]);
                }
            },
            _ = tick.tick(), if writing => {
                writing = wr.write_all(byte).await.is_ok() && wr.flush().await.is_ok();
            }
        }
    }
}

/// One slow client: opens, trickles, and (with `reconnect`) opens again when closed.
async fn slow_client(
    dialer: Arc<Dialer>,
    spec: Arc<SlowSpec>,
    stats: Arc<SlowStats>,
    opening: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let opened = {
            let Ok(_permit) = opening.acquire().await else {
                return;
            };
            if *stop.borrow() {
                return;
            }
            dialer.open().await
        };
        match opened {
            Err(_) => {
                stats.failed.fetch_add(1, Ordering::Relaxed);
                if !spec.reconnect {
                    return;
                }
                tokio::time::sleep(RECONNECT_BACKOFF).await;
            }
            Ok(io) => {
                stats.opened.fetch_add(1, Ordering::Relaxed);
                let open = stats.open.fetch_add(1, Ordering::Relaxed) + 1;
                stats.open_max.fetch_max(open, Ordering::Relaxed);
                let outcome = trickle(io, &spec, &mut stop).await;
                stats.open.fetch_sub(1, Ordering::Relaxed);
                let Some(status) = outcome else {
                    return; // stopped
                };
                *stats
                    .closed_by_status
                    .lock()
                    .unwrap()
                    .entry(status)
                    .or_default() += 1;
                if !spec.reconnect {
                    return;
                }
            }
        }
        if *stop.borrow() {
            return;
        }
    }
}

/// Authenticated GETs of `spec.probe_path` for `duration` at `spec.probe_rate`.
async fn probe(
    c: &KubeClient,
    spec: &SlowSpec,
    name: &str,
    duration: Duration,
) -> Result<crate::report::OpSummary, String> {
    let plan = Plan {
        concurrency: PROBE_CONCURRENCY,
        ops: None,
        duration: Some(duration),
        rate_per_s: Some(spec.probe_rate),
    };
    let (c, path) = (c.clone(), Arc::<str>::from(spec.probe_path.as_str()));
    driver::run(name, &plan, move |_| {
        let (c, path) = (c.clone(), path.clone());
        async move {
            let resp = c.request(Method::GET, &path, None).await?.ok()?;
            Ok(Outcome {
                bytes: resp.body.len() as u64,
                objects: 1,
            })
        }
    })
    .await
}

/// Runs the workload against the server at `ep` (GETs through `c`).
pub async fn slow_bodies(ep: &Endpoint, c: &KubeClient, spec: &SlowSpec) -> Result<Report, String> {
    let dialer = Arc::new(Dialer::new(ep, spec)?);
    procstat::sample(spec.server_pid)?;
    let idle = probe(c, spec, "get-idle", spec.idle).await?;
    let base = procstat::sample(spec.server_pid)?;

    let monitor = Monitor::start(spec.server_pid);
    let (stop_tx, stop_rx) = watch::channel(false);
    let stats = Arc::new(SlowStats::default());
    let opening = Arc::new(Semaphore::new(spec.open_concurrency.max(1)));
    let shared = Arc::new(spec.clone());
    let mut clients = Vec::with_capacity(spec.connections);
    for _ in 0..spec.connections {
        clients.push(tokio::spawn(slow_client(
            dialer.clone(),
            shared.clone(),
            stats.clone(),
            opening.clone(),
            stop_rx.clone(),
        )));
    }
    let opening_started = std::time::Instant::now();
    let n = spec.connections as u64;
    while stats.opened.load(Ordering::Relaxed) + stats.failed.load(Ordering::Relaxed) < n
        && opening_started.elapsed() < OPENING_TIMEOUT
    {
        tokio::time::sleep(OPENING_POLL).await;
    }
    let opening_s = opening_started.elapsed().as_secs_f64();
    let open_after_opening = stats.open.load(Ordering::Relaxed);
    let during = probe(c, spec, "get-during", spec.hold).await?;
    let held = procstat::sample(spec.server_pid)?;
    let open_at_end = stats.open.load(Ordering::Relaxed);
    let _ = stop_tx.send(true);
    for client in clients {
        let _ = client.await;
    }
    let usage = monitor.finish();
    // GETs go on while the server settles: an allocator such as mimalloc gives freed memory
    // back to the system only when the thread that freed it allocates again.
    let settled = probe(c, spec, "get-after", spec.settle).await?;
    let after = procstat::sample(spec.server_pid)?;

    let per_conn = |rss: u64| rss.saturating_sub(base.rss_bytes) / n.max(1);
    let p99_ratio = if idle.latency_us.p99 > 0 {
        during.latency_us.p99 as f64 / idle.latency_us.p99 as f64
    } else {
        0.0
    };
    let closed: serde_json::Map<String, serde_json::Value> = stats
        .closed_by_status
        .lock()
        .unwrap()
        .iter()
        .map(|(status, count)| (status.to_string(), json!(count)))
        .collect();
    let mut r = Report::new("slow-bodies", "kube");
    r.ops.push(idle);
    r.ops.push(during);
    r.ops.push(settled);
    let d = &mut r.details;
    d.insert("connections".into(), json!(spec.connections));
    d.insert("trickle".into(), json!(format!("{:?}", spec.trickle)));
    d.insert("announce_bytes".into(), json!(spec.announce_bytes));
    d.insert("opened".into(), json!(stats.opened.load(Ordering::Relaxed)));
    d.insert("failed".into(), json!(stats.failed.load(Ordering::Relaxed)));
    d.insert("opening_s".into(), json!(opening_s));
    d.insert("open_after_opening".into(), json!(open_after_opening));
    d.insert(
        "open_max".into(),
        json!(stats.open_max.load(Ordering::Relaxed)),
    );
    d.insert("open_at_end_of_hold".into(), json!(open_at_end));
    d.insert("closed_by_status".into(), json!(closed));
    d.insert("rss_base_bytes".into(), json!(base.rss_bytes));
    d.insert("rss_peak_bytes".into(), json!(usage.peak_rss_bytes));
    d.insert("rss_end_of_hold_bytes".into(), json!(held.rss_bytes));
    d.insert("rss_after_bytes".into(), json!(after.rss_bytes));
    d.insert(
        "rss_peak_delta_per_connection_bytes".into(),
        json!(per_conn(usage.peak_rss_bytes)),
    );
    d.insert(
        "rss_end_of_hold_delta_per_connection_bytes".into(),
        json!(per_conn(held.rss_bytes)),
    );
    d.insert("get_p99_ratio_during_to_idle".into(), json!(p99_ratio));
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_from_urls() {
        type Want = Option<(bool, &'static str, u16)>;
        let cases: &[(&str, Want)] = &[
            ("https://127.0.0.1:6443", Some((true, "127.0.0.1", 6443))),
            ("http://localhost:8080/", Some((false, "localhost", 8080))),
            ("https://example.com", Some((true, "example.com", 443))),
            ("https://[::1]:6443", Some((true, "::1", 6443))),
            ("https://[::1]", Some((true, "::1", 443))),
            ("ftp://x", None),
            ("https://:1", None),
            ("https://h:port", None),
        ];
        for (url, want) in cases {
            let got = parse_target(url).ok();
            let want = want.map(|(tls, host, port)| SlowTarget {
                tls,
                host: host.to_string(),
                port,
            });
            assert_eq!(got, want, "{url}");
        }
    }

    #[test]
    fn first_bytes_announce_the_body_without_credentials() {
        let body = String::from_utf8(first_bytes(Trickle::Body, "h", 3 << 20)).unwrap();
        assert!(body.starts_with("POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\n"));
        assert!(body.contains("Content-Length: 3145728\r\n\r\n{"), "{body}");
        assert!(!body.to_ascii_lowercase().contains("authorization"));
        let head = String::from_utf8(first_bytes(Trickle::Head, "h", 3 << 20)).unwrap();
        assert!(
            head.ends_with("X-Slow: ") && !head.contains("\r\n\r\n"),
            "{head}"
        );
    }

    #[test]
    fn answer_statuses() {
        assert_eq!(answer_status(b"HTTP/1.1 401 Unauthorized\r\n\r\n{}"), 401);
        assert_eq!(answer_status(b"HTTP/1.1 408"), 408);
        assert_eq!(answer_status(b""), 0);
        assert_eq!(answer_status(b"garbage"), 0);
    }
}
