//! `Pending<T>`: the result of a write that becomes available once it is durable.
//!
//! Runtime-agnostic: it is a `std::future::Future` (any executor can await it) and it can be
//! waited on by a plain thread. This is the engine's only seam with async code.

use parking_lot::{Condvar, Mutex};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

struct Slot<T> {
    state: Mutex<SlotState<T>>,
    ready: Condvar,
}

struct SlotState<T> {
    value: Option<T>,
    waker: Option<Waker>,
}

/// The receiving half. Awaiting or `wait()`ing yields the value exactly once.
pub struct Pending<T> {
    inner: PendingInner<T>,
}

enum PendingInner<T> {
    Ready(Option<T>),
    Waiting(Arc<Slot<T>>),
}

/// The sending half, held by the engine until the write is durable and visible.
pub struct Completion<T> {
    slot: Arc<Slot<T>>,
}

impl<T> Pending<T> {
    /// A result that is already known (validation failures, the in-memory model).
    pub fn ready(value: T) -> Pending<T> {
        Pending {
            inner: PendingInner::Ready(Some(value)),
        }
    }

    /// A pending result and the completion that fulfils it.
    pub fn new() -> (Pending<T>, Completion<T>) {
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState {
                value: None,
                waker: None,
            }),
            ready: Condvar::new(),
        });
        (
            Pending {
                inner: PendingInner::Waiting(slot.clone()),
            },
            Completion { slot },
        )
    }

    /// Blocks the calling thread until the result is available.
    pub fn wait(self) -> T {
        match self.inner {
            PendingInner::Ready(v) => v.expect("Pending polled after completion"),
            PendingInner::Waiting(slot) => {
                let mut st = slot.state.lock();
                loop {
                    if let Some(v) = st.value.take() {
                        return v;
                    }
                    slot.ready.wait(&mut st);
                }
            }
        }
    }

    /// The result if it is already available.
    pub fn try_take(&mut self) -> Option<T> {
        match &mut self.inner {
            PendingInner::Ready(v) => v.take(),
            PendingInner::Waiting(slot) => slot.state.lock().value.take(),
        }
    }
}

impl<T> Completion<T> {
    pub fn complete(self, value: T) {
        let waker = {
            let mut st = self.slot.state.lock();
            st.value = Some(value);
            st.waker.take()
        };
        self.slot.ready.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Unpin for Pending<T> {}

impl<T> Future for Pending<T> {
    type Output = T;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        match &mut this.inner {
            PendingInner::Ready(v) => {
                Poll::Ready(v.take().expect("Pending polled after completion"))
            }
            PendingInner::Waiting(slot) => {
                let mut st = slot.state.lock();
                if let Some(v) = st.value.take() {
                    return Poll::Ready(v);
                }
                match &st.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => st.waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_across_threads() {
        let (p, c) = Pending::new();
        let t = std::thread::spawn(move || c.complete(7u32));
        assert_eq!(p.wait(), 7);
        t.join().unwrap();
    }

    #[test]
    fn ready_is_immediate() {
        assert_eq!(Pending::ready(3).wait(), 3);
    }
}
