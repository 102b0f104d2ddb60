//! Allocation counting for tests (cargo feature `alloc-count`).
//!
//! Wraps the system allocator and counts every allocation and reallocation,
//! reported as `STAT larder_allocations`. The test suite builds larder with
//! this feature to check that a warm connection serves get/set/delete/incr
//! without allocating. Release builds do not include it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

pub struct Counting;

// SAFETY: every method forwards to the system allocator with the caller's
// arguments unchanged; counting has no effect on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

/// Allocations since start.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Relaxed)
}
