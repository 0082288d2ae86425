//! The runtime seam: everything the server needs from an async runtime goes through here, so
//! the runtime can be swapped by rewriting this one module.
//!
//! Model: one single-threaded runtime per core (tokio `current_thread` + `LocalSet`), each on
//! its own OS thread, optionally pinned to its CPU. Tasks never migrate between cores, so
//! per-core state lives in `Rc`/`Cell` and futures need not be `Send`.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

pub use std::time::Instant;
pub(crate) use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
pub(crate) use tokio::net::{TcpListener, TcpStream};

thread_local! {
    static CORE_INDEX: Cell<usize> = const { Cell::new(0) };
}

/// The index of the core whose runtime runs the caller (`0..cores`); `0` on threads that
/// are not server cores.
pub fn core_index() -> usize {
    CORE_INDEX.with(Cell::get)
}

/// Spawns a task on the caller's core. It may hold non-`Send` state; it runs until it
/// finishes or the core's runtime shuts down. Must be called from a server core.
pub fn spawn_local<F: Future<Output = ()> + 'static>(fut: F) {
    drop(tokio::task::spawn_local(fut));
}

/// Completes after `d`.
pub async fn sleep(d: Duration) {
    tokio::time::sleep(d).await;
}

/// Completes at `deadline`.
pub async fn sleep_until(deadline: Instant) {
    tokio::time::sleep_until(deadline.into()).await;
}

/// The deadline passed before the future completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedOut;

/// Runs `fut` until it completes or `deadline` passes (then `fut` is dropped).
pub async fn timeout_at<F: Future>(deadline: Instant, fut: F) -> Result<F::Output, TimedOut> {
    tokio::time::timeout_at(deadline.into(), fut)
        .await
        .map_err(|_| TimedOut)
}

/// Which of two raced futures finished first.
pub enum Either<A, B> {
    /// The first one.
    Left(A),
    /// The second one.
    Right(B),
}

/// Polls `a` and `b` together (`a` first) and returns the first output; the other future is
/// dropped, so both must be cancel-safe.
pub async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let mut a = pin!(a);
    let mut b = pin!(b);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(v));
        }
        if let Poll::Ready(v) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(v));
        }
        Poll::Pending
    })
    .await
}

/// A one-shot, many-receiver stop signal shared by all cores.
#[derive(Clone)]
pub(crate) struct StopSignal {
    rx: tokio::sync::watch::Receiver<bool>,
}

/// The sending side of a [`StopSignal`].
pub(crate) struct StopTrigger {
    tx: tokio::sync::watch::Sender<bool>,
}

/// A new trigger and signal pair.
pub(crate) fn stop_signal() -> (StopTrigger, StopSignal) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    (StopTrigger { tx }, StopSignal { rx })
}

impl StopTrigger {
    /// Tells every signal holder to stop.
    pub fn stop(&self) {
        self.tx.send_replace(true);
    }
}

impl StopSignal {
    /// Completes once stop is triggered (or the trigger is dropped).
    pub async fn stopped(&self) {
        let mut rx = self.rx.clone();
        let _ = rx.wait_for(|stopped| *stopped).await;
    }
}

/// A core's own view of the [`StopSignal`]: waiting on it registers with this core only, so
/// the many idle connections of two cores never contend for the global signal's wait list.
#[derive(Clone)]
pub(crate) struct LocalStop(std::rc::Rc<LocalStopInner>);

struct LocalStopInner {
    stopped: Cell<bool>,
    notify: Notify,
}

impl LocalStop {
    /// Follows `global` from a task on the calling core (which must be a server core).
    pub fn follow(global: StopSignal) -> LocalStop {
        let local = LocalStop(std::rc::Rc::new(LocalStopInner {
            stopped: Cell::new(false),
            notify: Notify::new(),
        }));
        let l = local.clone();
        spawn_local(async move {
            global.stopped().await;
            l.0.stopped.set(true);
            l.0.notify.notify_waiters();
        });
        local
    }

    /// Whether stop was triggered.
    pub fn is_stopped(&self) -> bool {
        self.0.stopped.get()
    }

    /// Completes once stop is triggered.
    pub async fn stopped(&self) {
        loop {
            // Created before the check: a `notify_waiters` after it still wakes this one.
            let notified = self.0.notify.notified();
            if self.0.stopped.get() {
                return;
            }
            notified.await;
        }
    }
}

/// Wakes tasks on one core waiting for a local condition (re-exported runtime primitive).
pub(crate) use tokio::sync::Notify;

/// Starts core `index` on a new OS thread: pins it to CPU `index` (if `pin` and the CPU
/// exists), builds its single-threaded runtime and runs `main` to completion on it.
/// `main` is built on the new thread, so it may capture non-`Send` state it creates there.
pub(crate) fn start_core<M, F>(
    index: usize,
    pin: bool,
    main: M,
) -> std::io::Result<std::thread::JoinHandle<()>>
where
    M: FnOnce() -> F + Send + 'static,
    F: Future<Output = ()> + 'static,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(crate::load::parking)
        .on_thread_unpark(crate::load::unparked)
        .build()?;
    std::thread::Builder::new()
        .name(format!("keel-http-{index}"))
        .spawn(move || {
            CORE_INDEX.with(|c| c.set(index));
            if pin {
                pin_current_thread(index);
            }
            crate::load::register_core();
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, main());
            crate::load::unregister_core();
        })
}

/// Pins the calling thread to CPU `index`; returns whether it worked.
fn pin_current_thread(index: usize) -> bool {
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    cores
        .into_iter()
        .find(|c| c.id == index)
        .is_some_and(core_affinity::set_for_current)
}

/// Runs `fut` to completion on a fresh single-threaded runtime on the calling thread (for
/// tests and tools that need one core's environment).
pub fn block_on<F: Future>(fut: F) -> std::io::Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(tokio::task::LocalSet::new().block_on(&runtime, fut))
}
