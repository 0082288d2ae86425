//! Binding, per-core accept loops, connection admission and shutdown.
//!
//! Every core binds its own socket on every listener address with `SO_REUSEPORT`, so the
//! kernel spreads new connections over the cores and no connection ever moves between them.
//! All sockets are bound before [`serve`] returns, so a caller that gets `Ok` can announce
//! readiness.
//!
//! Admission at accept: a connection beyond its core's connection cap, or beyond its cap of
//! connections that have not had a request admitted yet, is closed at once (its write side
//! shut first, so the client reads an orderly end of stream when it has sent nothing yet).

use crate::budget::ByteBudget;
use crate::conn::{Conn, ConnInfo, CoreState, UnadmittedGuard};
use crate::limits::{Limits, ACCEPT_ERROR_BACKOFF, LISTEN_BACKLOG, OPEN_FILES_RESERVED};
use crate::rt::{self, Either, Instant};
use crate::tls::{PeerCert, ServerTls};
use crate::{fdlimit, Handler};
use socket2::{Domain, Protocol, Socket, Type};
use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

/// One address to serve, plain or TLS.
#[derive(Clone)]
pub struct Listener {
    /// Address to bind; port 0 picks a free port (the same one on every core).
    pub addr: SocketAddr,
    /// TLS configuration ([`crate::tls::server_config`]), or `None` for plain HTTP.
    pub tls: Option<Arc<ServerTls>>,
}

/// What to serve and how.
#[derive(Clone)]
pub struct ServeConfig {
    /// Addresses to serve; every core accepts on all of them.
    pub listeners: Vec<Listener>,
    /// Number of cores (threads, each with its own runtime). Default: available parallelism.
    pub cores: usize,
    /// Pin core `i`'s thread to CPU `i`.
    pub pin: bool,
    /// Limits.
    pub limits: Limits,
}

impl ServeConfig {
    /// Serves `listeners` on every available core, pinned, with default limits.
    pub fn new(listeners: Vec<Listener>) -> ServeConfig {
        ServeConfig {
            listeners,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            pin: true,
            limits: Limits::default(),
        }
    }
}

/// A running server.
pub struct ServerHandle {
    addrs: Vec<SocketAddr>,
    stop: rt::StopTrigger,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// The bound address of each listener, in [`ServeConfig::listeners`] order (with the
    /// real port where port 0 was asked for).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.addrs.clone()
    }

    /// Stops accepting, lets in-flight requests finish (streams are ended, idle keep-alive
    /// connections closed) for up to [`Limits::shutdown_timeout`], then joins the cores.
    pub fn shutdown(self) {
        self.stop.stop();
        self.join();
    }

    /// Waits for the cores to finish (they run until [`ServerHandle::shutdown`]; with
    /// `join` alone, forever).
    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// A bound, not yet served, listener socket.
struct Bound {
    socket: std::net::TcpListener,
    tls: Option<Arc<ServerTls>>,
}

/// Binds every listener on every core, then starts the cores on background threads.
///
/// First raises the process's open-file limit to its hard limit and lowers
/// [`Limits::connections_per_core_max`] (and the cap on unadmitted connections) to what fits
/// under it (see [`crate::raise_open_files_limit`]), saying so on stderr when that binds.
/// Fails with `InvalidInput` if the limits contradict each other.
pub fn serve(cfg: ServeConfig, handler: Arc<dyn Handler>) -> io::Result<ServerHandle> {
    let cores = cfg.cores.max(1);
    cfg.limits
        .validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let limits = fit_to_open_files(cfg.limits.clone(), cores);
    let (per_core, addrs) = bind_all(&cfg.listeners, cores)?;
    let (trigger, signal) = rt::stop_signal();
    let mut threads = Vec::with_capacity(cores);
    for (index, bound) in per_core.into_iter().enumerate() {
        let limits = limits.clone();
        let handler = handler.clone();
        let signal = signal.clone();
        let started = rt::start_core(index, cfg.pin, move || {
            core_main(bound, limits, handler, signal)
        });
        match started {
            Ok(t) => threads.push(t),
            Err(e) => {
                ServerHandle {
                    addrs,
                    stop: trigger,
                    threads,
                }
                .shutdown();
                return Err(e);
            }
        }
    }
    Ok(ServerHandle {
        addrs,
        stop: trigger,
        threads,
    })
}

/// `limits` with the connection caps lowered to fit under the open-file limit (raised first).
fn fit_to_open_files(mut limits: Limits, cores: usize) -> Limits {
    let open_files = match fdlimit::raise_open_files_limit() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("keel-http: reading the open-file limit: {e}; connection caps unchanged");
            return limits;
        }
    };
    let configured = limits.connections_per_core_max;
    let cap = fdlimit::connections_per_core_cap(configured, open_files, cores);
    if cap < configured {
        eprintln!(
            "keel-http: the open-file limit ({open_files}, less {OPEN_FILES_RESERVED} kept for \
             files and listeners) allows {cap} connections per core on {cores} cores, not the \
             {configured} configured: connections beyond {cap} per core are closed at accept"
        );
    }
    limits.connections_per_core_max = cap;
    limits.unadmitted_connections_per_core_max =
        limits.unadmitted_connections_per_core_max.min(cap);
    limits
}

/// Binds each listener once per core; returns the sockets per core and the bound addresses.
fn bind_all(
    listeners: &[Listener],
    cores: usize,
) -> io::Result<(Vec<Vec<Bound>>, Vec<SocketAddr>)> {
    let mut per_core: Vec<Vec<Bound>> = (0..cores).map(|_| Vec::new()).collect();
    let mut addrs = Vec::with_capacity(listeners.len());
    for l in listeners {
        let mut addr = l.addr;
        if addr.port() != 0 {
            probe_unused(addr)?;
        }
        for core in per_core.iter_mut() {
            let socket = bind_reuseport(addr)?;
            addr = socket.local_addr()?; // later cores bind the port the first one got
            core.push(Bound {
                socket,
                tls: l.tls.clone(),
            });
        }
        addrs.push(addr);
    }
    Ok((per_core, addrs))
}

/// Fails with `AddrInUse` if any socket already holds `addr`. `SO_REUSEPORT` would otherwise
/// let this process share a port with another server started by the same user (an earlier
/// instance still running, say), splitting connections between the two without a word; a
/// socket bound without it is refused while any other socket holds the port, as
/// kube-apiserver's listener would be. The probe is closed before the cores bind.
fn probe_unused(addr: SocketAddr) -> io::Result<()> {
    tcp_socket(addr)?.bind(&addr.into()).map_err(|e| {
        if e.kind() == io::ErrorKind::AddrInUse {
            io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{addr} is already in use by another process"),
            )
        } else {
            e
        }
    })
}

/// A TCP socket for `addr` as every listener and the probe start: IPv6 only on an IPv6
/// address, and `SO_REUSEADDR` (connections of an earlier run in TIME_WAIT do not block it).
fn tcp_socket(addr: SocketAddr) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_address(true)?;
    Ok(socket)
}

fn bind_reuseport(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let socket = tcp_socket(addr)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    Ok(socket.into())
}

/// One core: accept on all its sockets until stop, then wait for its connections to end.
async fn core_main(
    bound: Vec<Bound>,
    limits: Limits,
    handler: Arc<dyn Handler>,
    stop: rt::StopSignal,
) {
    let shutdown_timeout = limits.shutdown_timeout;
    let core = Rc::new(CoreState {
        body_budget: Rc::new(ByteBudget::new(limits.body_bytes_in_flight_per_core_max)),
        limits,
        handler,
        in_flight: Cell::new(0),
        connections: Cell::new(0),
        unadmitted: Rc::new(Cell::new(0)),
        drained: rt::Notify::new(),
        stop: rt::LocalStop::follow(stop),
    });
    for b in bound {
        match rt::TcpListener::from_std(b.socket) {
            Ok(listener) => rt::spawn_local(accept_loop(listener, b.tls, core.clone())),
            Err(e) => eprintln!("keel-http: core {}: listener: {e}", rt::core_index()),
        }
    }
    core.stop.stopped().await;
    let deadline = Instant::now() + shutdown_timeout;
    while core.connections.get() > 0 {
        if let Either::Right(()) =
            rt::race(core.drained.notified(), rt::sleep_until(deadline)).await
        {
            break;
        }
    }
}

async fn accept_loop(listener: rt::TcpListener, tls: Option<Arc<ServerTls>>, core: Rc<CoreState>) {
    loop {
        let accepted = match rt::race(listener.accept(), core.stop.stopped()).await {
            Either::Right(()) => return,
            Either::Left(a) => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(_) => {
                // Out of descriptors or similar: back off instead of spinning.
                rt::sleep(ACCEPT_ERROR_BACKOFF).await;
                continue;
            }
        };
        if core.connections.get() >= core.limits.connections_per_core_max
            || core.unadmitted.get() >= core.limits.unadmitted_connections_per_core_max
        {
            refuse_at_accept(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        core.connections.set(core.connections.get() + 1);
        let guard = ConnGuard(core.clone());
        let unadmitted = UnadmittedGuard::new(core.unadmitted.clone());
        rt::spawn_local(serve_stream(stream, peer, tls.clone(), guard, unadmitted));
    }
}

/// Closes a connection accepted over a cap: the write side first (FIN), so a client that
/// has sent nothing yet reads an orderly end of stream (one whose first bytes are already
/// queued gets a reset, as the kernel answers unread data on close). Nothing is written: a
/// TLS client would not understand a plain-text answer.
fn refuse_at_accept(stream: rt::TcpStream) {
    let _ = socket2::SockRef::from(&stream).shutdown(std::net::Shutdown::Write);
}

/// Counts a connection as open while alive; wakes the drain wait when the last one ends.
struct ConnGuard(Rc<CoreState>);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        let n = self.0.connections.get() - 1;
        self.0.connections.set(n);
        if n == 0 {
            self.0.drained.notify_one();
        }
    }
}

async fn serve_stream(
    stream: rt::TcpStream,
    peer: SocketAddr,
    tls: Option<Arc<ServerTls>>,
    guard: ConnGuard,
    unadmitted: UnadmittedGuard,
) {
    let core = guard.0.clone();
    let deadline = Instant::now() + core.limits.header_read_timeout;
    match tls {
        None => {
            let info = ConnInfo {
                peer,
                tls: false,
                client_cert: PeerCert::None,
            };
            Conn::new(stream, info, core, unadmitted)
                .run(deadline)
                .await;
        }
        Some(tls) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.config().clone());
            let Ok(Ok(tls_stream)) = rt::timeout_at(deadline, acceptor.accept(stream)).await else {
                return; // handshake failed or too slow
            };
            let info = ConnInfo {
                peer,
                tls: true,
                client_cert: tls.peer_cert(tls_stream.get_ref().1),
            };
            Conn::new(tls_stream, info, core, unadmitted)
                .run(deadline)
                .await;
        }
    }
    drop(guard);
}
