//! What the loom models (`tests/loom_*.rs`) drive, `--cfg larder_loom`
//! builds only: the crate's own types and functions, not copies of them.
//! Its own module, above everything it names, so that `sync` (which every
//! concurrent module builds on) imports none of them.

pub use crate::sync::flaw::{self, Flaw};
pub use crate::large::{Landing, PinSpill, Pinned, SegBuf};
pub use crate::pool::Pool;
pub use crate::segment::{SegTable, Segment};
pub use crate::valueref::ValueRef;
pub use loom::sync::{Mutex, MutexGuard};

/// Eviction's rule for a second shard lock (`sync::lock_other`).
pub fn lock_other<T>(shard: &Mutex<T>, holding_own: bool) -> Option<MutexGuard<'_, T>> {
    crate::sync::lock_other(shard, holding_own)
}

/// The store adopts a completed landing (as `Store::write` does once it
/// has reserved its bytes in `-m`).
pub fn adopt(landing: &Landing) -> SegBuf {
    landing.adopt()
}

/// A reference to `len` bytes at `off` in segment `seg` (generation
/// `gen`) of shard `shard`, as `Item::value_ref` makes one.
pub fn value_ref(shard: u32, seg: u32, gen: u64, off: u32, len: u32) -> ValueRef {
    ValueRef { shard, seg, gen, off, len }
}

/// [`ValueRef`]'s read protocol, as `Store::copy_value` runs it, on a
/// shard that is only a segment table.
pub fn copy_value(r: &ValueRef, shard: &crate::sync::Mutex<SegTable>, from: usize, dst: &mut [u8]) -> bool {
    r.copy_out(shard, |s| s, from, dst)
}
