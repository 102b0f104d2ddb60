//! Reading the store for observability, off the store's own request logic.
//!
//! * [`last_sizes`]: the sizes the calling thread's last successful store or
//!   delete charged and released, for exact per-prefix byte accounting in the
//!   server (a thread-local pair written under the shard lock by the same
//!   call, read right after it returns: no lock, no allocation, and no change
//!   to the store's result types).
//!
//! Kept in its own file so the eviction work in `evict.rs`/`shard.rs`/
//! `segment.rs` and this module do not touch the same lines.

use std::cell::Cell;

std::thread_local! {
    /// (bytes of the item written, bytes of the item removed or replaced);
    /// 0 = none.
    static LAST: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Called by the store (same thread, just before it returns).
#[inline]
pub(crate) fn note(written: u64, removed: u64) {
    LAST.with(|c| c.set((written, removed)));
}

/// For the calling thread's last successful `store`/`store_if`/`meta_store`
/// (`Stored`): (bytes the new item occupies, bytes of the item it replaced,
/// 0 if none). For its last successful `delete`/`delete_if`: (0, bytes of
/// the removed item). Sizes are what the store charges in `Stats::bytes`
/// (header + key + value). Only meaningful right after such a call.
#[inline]
pub fn last_sizes() -> (u64, u64) {
    LAST.with(|c| c.get())
}

/// Bytes the store charges for an item with this key length, value length
/// and client flags (what `Stats::bytes` counts per item).
#[inline]
pub fn item_bytes(klen: usize, vlen: usize, flags: u32) -> u64 {
    crate::item::item_len(klen, vlen, flags) as u64
}
