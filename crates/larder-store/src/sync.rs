//! The synchronization the store's concurrency protocols are built from,
//! behind one door so that a `--cfg larder_loom` build can swap in loom's model
//! types and check every interleaving of them (the models are
//! `tests/loom_*.rs`, run by `scripts/loom`).
//!
//! The cfg is `larder_loom`, not the usual `loom`: `RUSTFLAGS` reach every
//! crate of the build, and dependencies have loom modes of their own
//! (tokio, under larder-server's admin listener, compiles `tokio::net` out
//! under `cfg(loom)`, so larder-server would not build at all).
//!
//! In a normal build everything here is `std` itself (re-exports, and
//! zero-sized no-ops for the access probes), so the modules that import from
//! here compile to exactly what they would with `std`. Only the modules whose
//! correctness is about interleavings import from here: `large` (pins, seal,
//! last release), `pool` (the budget those releases go back to), `valueref`
//! (the generation check) and the shard locks of `Store` (eviction's second
//! lock, [`lock_other`]). Everything else keeps `std`.
//!
//! Why loom and not shuttle: the protocols checked here lean on memory
//! ordering (`Relaxed` counters, the `SeqCst` handshake of
//! coalescing in larder-server, an `Arc`'s release/acquire on its last
//! drop) and on who may touch which bytes when. loom explores the weak-memory
//! outcomes of each atomic access and checks every access to an
//! `UnsafeCell` against happens-before ([`Region`]); shuttle schedules
//! threads at random over sequentially consistent memory, so it could not
//! see either kind of bug. The models are small enough for loom's exhaustive
//! (preemption-bounded) search.

#[cfg(not(larder_loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicU64, AtomicUsize},
    Arc, Mutex, MutexGuard,
};

#[cfg(larder_loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, AtomicU64, AtomicUsize},
    Arc, Mutex, MutexGuard,
};

/// The one rule by which eviction takes a shard's lock other than the one
/// it may already hold, so that shard locks can never deadlock: while
/// holding its own shard (`holding_own`), a thread only *tries* another
/// shard's lock (`None`: busy, or poisoned, pick another victim); holding
/// none, it waits for the lock, and takes one at a time (the caller drops
/// the guard before asking for the next). No thread ever waits for a lock
/// while holding one, so there is no cycle of waiters. The loom model
/// `tests/loom_shard_locks.rs` runs this function from several threads.
#[inline]
pub(crate) fn lock_other<T>(shard: &Mutex<T>, holding_own: bool) -> Option<MutexGuard<'_, T>> {
    #[cfg(larder_loom)]
    let holding_own = holding_own && !flaw::on(flaw::Flaw::BlockingSecondLock);
    if holding_own {
        shard.try_lock().ok()
    } else {
        Some(shard.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A region of bytes shared between threads through raw pointers (a large
/// object's value, [`large`](crate::large)), with each access announced:
/// under loom it is a `loom::cell::UnsafeCell<()>`, so loom reports a read
/// and a write (or two writes) of the region that happens-before does not
/// order; in a normal build it is zero-sized and its methods are empty.
#[cfg(not(larder_loom))]
pub(crate) struct Region;

#[cfg(not(larder_loom))]
impl Region {
    #[inline(always)]
    pub(crate) fn new() -> Region {
        Region
    }
    #[inline(always)]
    pub(crate) fn read(&self) {}
    #[inline(always)]
    pub(crate) fn write(&self) {}
}

#[cfg(larder_loom)]
pub(crate) struct Region(loom::cell::UnsafeCell<()>);

#[cfg(larder_loom)]
impl Region {
    pub(crate) fn new() -> Region {
        Region(loom::cell::UnsafeCell::new(()))
    }
    pub(crate) fn read(&self) {
        self.0.with(|_| ());
    }
    pub(crate) fn write(&self) {
        self.0.with_mut(|_| ());
    }
}

/// Deliberate bugs a loom model must catch (`--cfg larder_loom` builds only): a
/// model that passes with its flaw switched on checks nothing. Each flaw
/// is one small, plausible change at one place in the code under test;
/// it is switched on for the current test's thread only (loom runs a
/// model's threads on the thread that called it), so the healthy models
/// running beside it in the same test binary are untouched.
#[cfg(larder_loom)]
pub mod flaw {
    /// The switch is larder-testkit's, shared by every crate's flaws.
    pub use larder_testkit::flaw::{on, with};

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Flaw {
        /// `SegBuf`'s `&mut` access hands out the whole large object even
        /// while a reader pins its value (the seal ignored).
        SealIgnored,
        /// Moving a pinned object's charge to the spill forgets to mark it
        /// there, so its last release gives the bytes back to `-m` instead.
        SpillUnmarked,
        /// `ValueRef` copies without comparing generations.
        NoGenerationCheck,
        /// `ValueRef` checks the generation under the shard lock, lets go
        /// of it, and copies under a second lock without checking again.
        CopyAfterUnlock,
        /// Eviction blocks on a second shard's lock while holding its own.
        BlockingSecondLock,
    }
}
