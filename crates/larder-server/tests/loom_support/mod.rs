//! The server's loom models' side of `larder_testkit::loom` (which explores a
//! model and counts its interleavings, or shows that a deliberate flaw
//! fails it), as this crate's models name it.

pub use larder_testkit::loom::{catches, explore};
