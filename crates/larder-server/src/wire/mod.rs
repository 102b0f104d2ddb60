//! Protocol front ends: each turns its parser's requests into calls of the
//! shared executors (`crate::exec`) and encodes their outcomes in its own
//! reply format. Nothing here decides what a command does.
//!
//! * [`text`]: memcached's ASCII protocol (and the entry for meta commands,
//!   which arrive on the same connections).
//! * [`meta`]: `mg ms md ma mn me`.
//! * [`binary`]: the binary protocol.

pub mod binary;
pub mod meta;
pub mod text;
