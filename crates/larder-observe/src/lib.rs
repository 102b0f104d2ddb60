//! # larder-observe
//!
//! "See what the cache holds": the pure building blocks behind larder's
//! observability features, plus the `larder top` client. Nothing in this
//! crate owns a socket or a thread of the server; the server feeds events in
//! and asks for rendered bytes out.
//!
//! | module | what it is | who calls it |
//! |---|---|---|
//! | [`prefix`] | bounded per-prefix accounting (items, bytes, traffic); `stats detail dump` and `stats prefixes` renderers | every worker, on every get/set/delete; the store's removal path (evictions, expiry) |
//! | [`bigkeys`] | the K largest items currently stored; `stats bigkeys` renderer | the write and removal paths |
//! | [`hotkeys`] | heavy hitters by requests and by bytes sent over a sliding window (Space-Saving); `stats hotkeys` renderer | every worker, on every key request |
//! | [`latency`] | per-worker log-linear latency histograms, merged at report time | every worker, once per request |
//! | [`prometheus`] | text exposition format 0.0.4 writer and a tiny `GET /metrics` HTTP/1.1 responder | the admin listener |
//! | [`escape`] | the percent-encoding of every key and prefix a listing prints (so a key holding any byte cannot forge reply lines), and memcached's `uriencode` | every renderer below, the server's `stats cachedump` |
//! | [`metadump`] | `lru_crawler metadump` line encoder (memcached's format) and the prefix filter | the key-dump crawler |
//! | [`watch`] | `watch` log-stream line encoders (memcached's format) | the logger |
//! | [`observer`] | one facade over all of the above: the few calls the server makes | the server |
//! | [`top`] | `larder top --server host:port` | the `larder` binary (`larder top ...`) and `larder-top` |
//!
//! Hot-path rules followed throughout: no allocation per call, no global lock
//! (per-worker state written only by its owner, read by the reporter through
//! relaxed atomics or an uncontended per-worker mutex), bounded memory that
//! each structure reports through a `heap_bytes()` method.

#![forbid(unsafe_code)]

pub mod bigkeys;
pub mod escape;
pub mod hotkeys;
pub mod latency;
pub mod metadump;
pub mod observer;
pub mod prefix;
pub mod prometheus;
pub mod top;
pub mod watch;

mod util;

pub use util::{hash_bytes, key_prefix};
