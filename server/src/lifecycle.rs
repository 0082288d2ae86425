//! The server's life after start: the `livez` grace period and graceful shutdown, as
//! upstream's generic API server.
//!
//! On SIGTERM (or SIGINT): `/readyz` fails at once (its `shutdown` check) while `/livez`
//! holds, and requests are served as before for `--shutdown-delay-duration`, so a load
//! balancer takes the server out before it goes. Then, with `--shutdown-send-retry-after`,
//! the listener stays open while the requests in flight drain, and every new request but
//! health probes and metrics is answered 429 with `Retry-After: 5` and `Connection: close`;
//! without it the listener closes at once. Then keel-http's own shutdown stops accepting,
//! ends every watch with a clean end of its stream (the client re-lists elsewhere), closes
//! idle connections and lets requests in flight finish (bounded by its shutdown timeout),
//! the storage backend stops taking writes and flushes what is pending, and the process
//! exits 0. A second signal during all that exits at once with 1, as upstream.

use crate::limits::SHUTDOWN_DRAIN_POLL;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Paths a draining server still serves: health probes and metrics scraping.
const EXEMPT_PREFIXES: &[&str] = &["/readyz", "/livez", "/healthz", "/metrics"];

/// The text upstream answers new requests with while it drains.
pub const RETRY_AFTER_MESSAGE: &str = "The apiserver is shutting down, please try again later.";

/// Shutdown state shared by the handlers and the main thread.
pub struct Lifecycle {
    started: Instant,
    livez_grace: Duration,
    shutdown_initiated: AtomicBool,
    rejecting: AtomicBool,
    in_flight: Arc<AtomicUsize>,
}

impl Lifecycle {
    pub fn new(livez_grace: Duration) -> Lifecycle {
        Lifecycle {
            started: Instant::now(),
            livez_grace,
            shutdown_initiated: AtomicBool::new(false),
            rejecting: AtomicBool::new(false),
            in_flight: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Whether `/livez` still assumes unfinished start-up hooks will finish
    /// (`--livez-grace-period` from the process start).
    pub fn in_livez_grace(&self) -> bool {
        self.started.elapsed() < self.livez_grace
    }

    /// Shutdown has begun: `/readyz` fails from now on.
    pub fn initiate_shutdown(&self) {
        self.shutdown_initiated.store(true, Ordering::SeqCst);
    }

    pub fn shutdown_initiated(&self) -> bool {
        self.shutdown_initiated.load(Ordering::SeqCst)
    }

    /// From now on new requests (but health probes and metrics) get 429 + `Retry-After`.
    pub fn start_rejecting(&self) {
        self.rejecting.store(true, Ordering::SeqCst);
    }

    /// Whether a new request to `path` is refused with `Retry-After` (as upstream, requests
    /// of the server's own loopback client, by user agent, are exempt too).
    pub fn rejects(&self, path: &str, user_agent: Option<&str>) -> bool {
        self.rejecting.load(Ordering::Relaxed)
            && !EXEMPT_PREFIXES.iter().any(|p| path.starts_with(p))
            && !user_agent.is_some_and(|ua| ua.starts_with("kube-apiserver/"))
    }

    /// Counts a request that is not long-running (not a watch) until the guard drops.
    pub fn track(&self) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.in_flight.clone())
    }

    /// Waits until no tracked request is in flight, or `limit` has passed; returns whether
    /// they drained.
    pub fn wait_drained(&self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while self.in_flight.load(Ordering::SeqCst) > 0 {
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(SHUTDOWN_DRAIN_POLL);
        }
        true
    }
}

/// A tracked request in flight.
pub struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Blocks until SIGTERM or SIGINT; returns the signal's name. A second one exits the process
/// with status 1 at once.
pub fn wait_for_termination() -> Result<&'static str, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (mut term, mut int) = rt
        .block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            Ok::<_, std::io::Error>((
                signal(SignalKind::terminate())?,
                signal(SignalKind::interrupt())?,
            ))
        })
        .map_err(|e| format!("signal handlers: {e}"))?;
    std::thread::Builder::new()
        .name("keel-signals".into())
        .spawn(move || {
            rt.block_on(async {
                let first = tokio::select! {
                    _ = term.recv() => "SIGTERM",
                    _ = int.recv() => "SIGINT",
                };
                let _ = tx.send(first);
                tokio::select! {
                    _ = term.recv() => {},
                    _ = int.recv() => {},
                }
                eprintln!("apiserver: second signal, exiting at once");
                std::process::exit(1);
            })
        })
        .map_err(|e| e.to_string())?;
    rx.recv().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_only_while_draining_and_never_probes() {
        let l = Lifecycle::new(Duration::ZERO);
        assert!(!l.rejects("/api/v1/pods", None));
        l.initiate_shutdown();
        assert!(
            !l.rejects("/api/v1/pods", None),
            "the delay serves as before"
        );
        l.start_rejecting();
        assert!(l.rejects("/api/v1/pods", None));
        assert!(l.rejects("/version", Some("kubectl/v1.32.0")));
        for p in ["/readyz", "/livez", "/healthz", "/healthz/ping", "/metrics"] {
            assert!(!l.rejects(p, None), "{p}");
        }
        assert!(!l.rejects("/api", Some("kube-apiserver/v1.36.2 (linux/amd64)")));
    }

    #[test]
    fn drain_waits_for_tracked_requests() {
        let l = Arc::new(Lifecycle::new(Duration::ZERO));
        assert!(l.wait_drained(Duration::ZERO));
        let guard = l.track();
        assert!(!l.wait_drained(Duration::from_millis(20)));
        let l2 = l.clone();
        let t = std::thread::spawn(move || l2.wait_drained(Duration::from_secs(60)));
        drop(guard);
        assert!(t.join().unwrap());
    }

    #[test]
    fn livez_grace_counts_from_start() {
        assert!(!Lifecycle::new(Duration::ZERO).in_livez_grace());
        assert!(Lifecycle::new(Duration::from_secs(3600)).in_livez_grace());
    }
}
