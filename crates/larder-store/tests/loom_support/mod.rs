//! The store's loom models' side of `larder_testkit::loom` (which explores a
//! model and counts its interleavings, or shows that a deliberate flaw
//! fails it): this crate's flaw switch plugged in.

use larder_store::loom_model::{flaw, Flaw};

pub use larder_testkit::loom::explore;

/// `model` with `flaw` on must fail with a panic containing `expect`.
pub fn catches(name: &str, flaw: Flaw, expect: &str, model: impl Fn() + Sync + Send + 'static) {
    larder_testkit::loom::catches(name, flaw, expect, |f, check| flaw::with(f, check), model);
}
