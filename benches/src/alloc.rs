//! A counting global allocator: tracks the live heap of the process.
//!
//! Install it in a binary with `#[global_allocator] static A: CountingAlloc = CountingAlloc;`.
//! Two figures are kept: bytes requested by Rust (`Layout::size`) and bytes the C allocator
//! actually reserved (`malloc_usable_size`), which includes its rounding.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

static LIVE_REQUESTED: AtomicI64 = AtomicI64::new(0);
static LIVE_USABLE: AtomicI64 = AtomicI64::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static LIVE_BLOCKS: AtomicI64 = AtomicI64::new(0);

pub struct CountingAlloc;

fn usable(p: *mut u8) -> i64 {
    // SAFETY: `p` was returned by the system allocator (glibc/musl malloc family) and is live.
    unsafe { libc::malloc_usable_size(p as *mut libc::c_void) as i64 }
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            LIVE_REQUESTED.fetch_add(layout.size() as i64, Relaxed);
            LIVE_USABLE.fetch_add(usable(p), Relaxed);
            LIVE_BLOCKS.fetch_add(1, Relaxed);
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            LIVE_REQUESTED.fetch_add(layout.size() as i64, Relaxed);
            LIVE_USABLE.fetch_add(usable(p), Relaxed);
            LIVE_BLOCKS.fetch_add(1, Relaxed);
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_REQUESTED.fetch_sub(layout.size() as i64, Relaxed);
        LIVE_USABLE.fetch_sub(usable(ptr), Relaxed);
        LIVE_BLOCKS.fetch_sub(1, Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old_usable = usable(ptr);
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE_REQUESTED.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
            LIVE_USABLE.fetch_add(usable(p) - old_usable, Relaxed);
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        p
    }
}

/// A reading of the counters.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct HeapSnapshot {
    /// Live bytes as requested by Rust code.
    pub requested: i64,
    /// Live bytes as reserved by malloc (requested + rounding; excludes malloc's own headers).
    pub usable: i64,
    /// Live allocations.
    pub blocks: i64,
    /// Allocations made since the start (monotonic).
    pub allocations: u64,
}

pub fn snapshot() -> HeapSnapshot {
    HeapSnapshot {
        requested: LIVE_REQUESTED.load(Relaxed),
        usable: LIVE_USABLE.load(Relaxed),
        blocks: LIVE_BLOCKS.load(Relaxed),
        allocations: ALLOCATIONS.load(Relaxed),
    }
}

/// Whether the counting allocator is installed (it has seen at least one allocation).
pub fn installed() -> bool {
    let _probe = Box::new(0u64);
    ALLOCATIONS.load(Relaxed) > 0
}
