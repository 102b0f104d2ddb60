//! What every loom model of larder shares (larder-store's and
//! larder-server's `tests/loom_*.rs`, built by scripts/loom with
//! `--cfg larder_loom`): running a model over every interleaving loom finds
//! (up to a preemption bound) and counting them, and running it with a
//! deliberate flaw switched on to show that it fails.
//!
//! The bound is `LOOM_MAX_PREEMPTIONS` when set, else [`PREEMPTIONS`]; each
//! model prints one line: how many interleavings it explored and how long
//! that took, or after how many interleavings loom caught the flaw.
//!
//! Flaws are switched on through [`crate::flaw`], the one switch every
//! crate's `Flaw` enum goes through.

use std::fmt::Debug;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

/// Preemptions per interleaving when `LOOM_MAX_PREEMPTIONS` is not set.
pub const PREEMPTIONS: usize = 3;

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(PREEMPTIONS);
    }
    // The near-cache tracker's model subscribes, attaches and unsubscribes,
    // each under the tracker's locks: more steps per run than loom's default
    // (1,000 branches) allows. A ceiling only: smaller models are unaffected.
    b.max_branches = b.max_branches.max(100_000);
    b
}

fn counted(f: impl Fn() + Sync + Send + 'static) -> (Arc<AtomicUsize>, impl Fn() + Sync + Send + 'static) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    (runs, move || {
        r.fetch_add(1, Relaxed);
        f()
    })
}

/// Checks `model` over every interleaving; prints and returns how many.
pub fn explore(name: &str, model: impl Fn() + Sync + Send + 'static) -> usize {
    let b = builder();
    let bound = b.preemption_bound;
    let (runs, f) = counted(model);
    let start = Instant::now();
    b.check(f);
    let n = runs.load(Relaxed);
    println!("loom {name}: {n} interleavings explored, preemption bound {bound:?}, {:.2?}", start.elapsed());
    n
}

/// Checks `model` with `flaw` switched on ([`crate::flaw::with`]), and
/// fails unless loom reports an interleaving that breaks it with a panic
/// whose message contains `expect` (so the model failed for the reason it
/// exists, not another).
pub fn catches<F: Debug + Copy + PartialEq + 'static>(name: &str, flaw: F, expect: &str, model: impl Fn() + Sync + Send + 'static) {
    let b = builder();
    let (runs, f) = counted(model);
    let start = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| crate::flaw::with(flaw, || b.check(f))));
    let n = runs.load(Relaxed);
    let Err(panic) = outcome else {
        panic!("loom {name}: {flaw:?} NOT caught in {n} interleavings: the model checks nothing");
    };
    let msg = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    assert!(msg.contains(expect), "loom {name}: {flaw:?} failed the model, but not as expected ({expect:?}): {msg}");
    println!("loom {name}: {flaw:?} caught at interleaving {n}, {:.2?}: {}", start.elapsed(), msg.lines().next().unwrap_or(""));
}
