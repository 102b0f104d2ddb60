//! The synchronization of the server's shared state whose correctness is
//! about interleavings — the connection budget (`connmem::budget`),
//! coalesced cold misses (`stampede::coalesce`) and near-cache tracking
//! (`track`, whose own flaws are in `track::sync`) — behind one
//! door, so that a `--cfg larder_loom` build swaps in loom's model types and its
//! models (`tests/loom_*.rs`, run by `scripts/loom`) check every
//! interleaving of them. Everything else keeps `std`.
//!
//! The cfg is `larder_loom`, not the usual `loom`, so that dependencies with
//! loom modes of their own (tokio compiles `tokio::net` out under
//! `cfg(loom)`) build as usual in the models' build.
//!
//! In a normal build this is `std` itself (re-exports, and an empty inline
//! function for [`seqcst_point`]): the modules that import from here compile
//! to exactly what they would with `std`.
//!
//! loom rather than shuttle: the budget's counters are `Relaxed` and
//! coalescing's wake-up is a `SeqCst` handshake between two atomics; loom
//! explores the weak-memory outcomes of each access, shuttle only
//! sequentially consistent ones, which cannot show either kind of bug.

#[cfg(not(larder_loom))]
pub use std::sync::{
    atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize},
    Mutex, MutexGuard, RwLock,
};

#[cfg(larder_loom)]
pub use loom::sync::{
    atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize},
    Mutex, MutexGuard, RwLock,
};

/// Marks a `SeqCst` write that a later `SeqCst` read of another atomic, in
/// this thread, relies on being ordered with (the two halves of a
/// store-then-load handshake, as coalescing's parker and writer). The
/// accesses themselves already are; loom, though, treats `SeqCst` accesses
/// as `AcqRel` (its README, "Unsupported features") and would report
/// lost wake-ups that cannot happen, so under loom this is the `SeqCst`
/// fence that gives loom the same single order. Nothing otherwise.
#[inline(always)]
pub fn seqcst_point() {
    #[cfg(larder_loom)]
    loom::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// A worker's wake-up as loom sees it (`--cfg larder_loom` only): what
/// `mio::Waker::wake` does to the worker's `poll` (an eventfd: a wake before
/// the poll is kept for it, several coalesce into one).
#[cfg(larder_loom)]
pub struct ModelWaker(loom::sync::Notify);

#[cfg(larder_loom)]
impl ModelWaker {
    pub fn new() -> ModelWaker {
        ModelWaker(loom::sync::Notify::new())
    }

    pub fn wake(&self) {
        self.0.notify();
    }

    /// The worker's `poll`: returns once woken (since it last returned).
    pub fn poll(&self) {
        self.0.wait();
    }
}

#[cfg(larder_loom)]
impl Default for ModelWaker {
    fn default() -> ModelWaker {
        ModelWaker::new()
    }
}

/// Deliberate bugs a loom model must catch (`--cfg larder_loom` builds only): a
/// model that passes with its flaw switched on checks nothing. Each is one
/// small, plausible change at one place in the code under test, switched on
/// for the current test's thread only (loom runs a model's threads on the
/// thread that called it).
#[cfg(larder_loom)]
pub mod flaw {
    /// The switch is larder-testkit's, shared by every crate's flaws.
    pub use larder_testkit::flaw::{on, with};

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Flaw {
        /// The budget checks for room and then adds, in two steps.
        CheckThenTake,
        /// A gauge moves by a load and a store instead of one atomic add.
        GaugeLoadStore,
        /// A writer reads the parked count before bumping the generation.
        CountBeforeBump,
        /// A writer ends the key's round after bumping the generation (as
        /// `on_write` did before the model found it).
        RoundEndsAfterBump,
        /// The server-wide parked count, which `on_flush` reads, is
        /// counted `Relaxed` (as it was before the model found it).
        FlushCountRelaxed,
        /// A parked request is never released by the end of its window.
        DeadlineIgnored,
    }
}
