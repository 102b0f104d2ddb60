//! Protocol front ends: each turns its parser's requests into calls of the
//! shared executors (`crate::exec`) and encodes their outcomes in its own
//! reply format. Nothing here decides what a command does.
//!
//! * [`text`]: memcached's ASCII protocol (and the entry for meta commands,
//!   which arrive on the same connections).
//! * [`meta`]: `mg ms md ma mn me`.
//! * [`binary`]: the binary protocol.
//! * [`auth`]: `-Y`'s handshake, all a connection may say before it has
//!   authenticated.

pub mod auth;
pub mod binary;
pub mod meta;
pub mod text;
