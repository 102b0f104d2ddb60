//! The synchronization types of the tracker, behind one door so that a
//! `--cfg larder_loom` build swaps in loom's model types (the model is
//! `tests/loom_track.rs`, run by `scripts/loom`).
//!
//! The types are the crate's (`crate::sync`, std or loom); what is the
//! tracker's own here is [`lock`] and the deliberate flaws its model must
//! catch.

pub use crate::sync::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Mutex, MutexGuard, RwLock};

/// Lock, recovering from poisoning: a panicking request never leaves the
/// table half-edited in a way later calls rely on (every edit keeps the
/// table's own invariants before it can panic), and the crate's failure
/// policy ends only the connection that panicked.
#[inline]
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Deliberate bugs the loom model must catch (`--cfg larder_loom` only),
/// switched on for the current thread (loom runs a model's threads on the
/// thread that called it).
#[cfg(larder_loom)]
pub mod flaw {
    /// The switch is larder-testkit's, shared by every crate's flaws.
    pub use larder_testkit::flaw::{on, with};

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Flaw {
        /// A read registers without comparing the key's write generation
        /// with the one it saw before its lookup.
        RegisterIgnoresGeneration,
        /// A write bumps the key's generation after looking the key up in
        /// the table instead of before.
        BumpAfterLookup,
    }
}
