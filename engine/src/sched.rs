//! Scheduling hints for the threads on the commit path.
//!
//! A flusher sleeps in `fdatasync` and must run as soon as the sync returns: every write of
//! its batch (and, through the sequencer's global order, of the other shards) waits for it.
//! When the CPUs are busy with other work (watch fan-out, request handling), the kernel's
//! fair scheduler (EEVDF, Linux 6.6 and later) lets the running thread finish its time slice
//! (about a millisecond or more) before a woken thread with the same nice value gets the CPU;
//! a thread that asks for a short slice gets an earlier deadline and so runs first, without
//! receiving more CPU time in total. This is the kernel's documented latency hint
//! (`sched_setattr(2)`, `sched_runtime` for `SCHED_OTHER`); it needs no privilege. Older
//! kernels ignore it. Failure is harmless and ignored.

use crate::limits::COMMIT_THREAD_SLICE;

/// `struct sched_attr` (first version, 56 bytes) of `sched_setattr(2)`.
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

/// Asks the kernel for a short time slice for the calling thread (best effort): see the
/// module documentation. Returns whether the kernel accepted the request.
pub fn request_short_slice() -> bool {
    // Keep the thread's nice value: raising priority is not the point (and needs privilege).
    // SAFETY: getpriority only reads the calling thread's nice value (errno aside).
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice,
        priority: 0,
        runtime: COMMIT_THREAD_SLICE.as_nanos() as u64,
        deadline: 0,
        period: 0,
        util_min: 0,
        util_max: 0,
    };
    // SAFETY: `attr` is a valid, fully initialised `sched_attr` of the size it declares and
    // outlives the call; pid 0 is the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    rc == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the kernel reports a thread's slice (`/proc/thread-self/sched`, Linux 6.6+ with
    /// scheduler debug info), a granted request shows the requested slice.
    #[test]
    fn a_granted_request_sets_the_slice() {
        std::thread::spawn(|| {
            let granted = request_short_slice();
            let Ok(sched) = std::fs::read_to_string("/proc/thread-self/sched") else {
                return;
            };
            let slice = sched
                .lines()
                .find(|l| l.trim_start().starts_with("se.slice"))
                .and_then(|l| l.rsplit(':').next())
                .and_then(|v| v.trim().parse::<u64>().ok());
            if granted {
                if let Some(ns) = slice {
                    assert_eq!(ns, COMMIT_THREAD_SLICE.as_nanos() as u64);
                }
            }
        })
        .join()
        .expect("test thread");
    }
}
