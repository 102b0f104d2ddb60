//! What the server tells about itself while it runs, fed by the executors
//! from each command's outcome:
//!
//! * [`watch`]: memcached's `watch` live log (event encoding, per-thread
//!   buffers, the logger thread that writes to watchers).
//! * [`observe`]: the worker's side of larder-observe (per-prefix accounting,
//!   big/hot keys, latency).
//!
//! This layer knows nothing of the server aggregate (`state::server`): it is
//! handed the pieces it reports on (the logger, the store) and, for the
//! logger thread, a [`watch::WatcherHost`] to give closed watchers back.

pub mod observe;
pub mod watch;
