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

/// What one worker records about the requests it serves: its half of the
/// observer and its side of the `watch` log. The worker owns it and lends
/// it to each request ([`crate::exec::Ctx`]) and, through the request, to
/// the store's departure reports: nothing of it hides in thread-locals.
pub struct WorkerTrace {
    pub obs: observe::Obs,
    pub log: watch::WorkerLog,
}
