//! larder-proto: parse memcached requests and encode memcached replies.
//!
//! Pure functions over byte slices: no I/O, no allocation per request, no
//! knowledge of the store. A request borrows the connection's read buffer
//! (keys and values are never copied); replies are appended to the
//! connection's write buffer.
//!
//! The contract is memcached 1.6's `doc/protocol.txt`, and where the text is
//! silent, the bytes memcached 1.6.18 actually sends.
//!
//! * [`outcome`]: what parsing one request comes to, and the limits, size
//!   rule and error lines the text and meta parsers share.
//! * [`number`]: numbers read as memcached reads them.
//! * [`text`]: the text (ASCII) protocol request parser; it hands meta
//!   commands to [`meta`].
//! * [`reply`]: encoders for every reply line the text protocol sends.
//! * [`meta`]: the meta protocol (`mg ms md ma mn me`): requests and replies.
//! * [`binary`]: the binary protocol: request parser and response encoders.
//! * [`block`]: where a storage request's data block is (after its command,
//!   or received aside into the store's buffer).

#![forbid(unsafe_code)]

pub mod binary;
pub mod block;
pub mod meta;
pub mod number;
pub mod outcome;
pub mod reply;
pub mod text;
pub mod track;

#[doc(hidden)]
pub mod encode;
#[doc(hidden)]
pub mod invariants;
#[doc(hidden)]
pub mod track_invariants;

pub use meta::{MetaCommand, MetaFlags, MetaRequest};
pub use text::{parse, AdminCommand, Keys, Limits, Parsed, Request, StoreCommand};
