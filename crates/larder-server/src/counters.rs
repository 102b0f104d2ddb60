//! Counters and the `stats` family of replies.
//!
//! Request counters live per worker thread ([`WorkerStats`]): each worker is
//! the only writer of its own counters, so an increment is a plain relaxed
//! load and store on a cache line no other thread writes (no locked
//! instruction, no sharing). `stats` sums them. `stats reset` does not touch
//! the workers' counters; it records a baseline that is subtracted when
//! reporting, so a reset can never lose or tear a concurrent increment.
//!
//! Names and order follow memcached 1.6.18 so exporters and dashboards that
//! parse memcached's `stats` work unchanged; larder's own figures are added
//! with a `larder_` prefix.

use larder_proto::reply;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// The memcached version larder is compatible with and reports.
pub const VERSION: &str = "1.6.18";

macro_rules! counters {
    ($($name:ident),* $(,)?) => {
        /// One worker's request counters (single writer: that worker).
        #[derive(Default)]
        #[repr(align(128))]
        pub struct WorkerStats {
            $(pub $name: AtomicU64,)*
        }

        /// A snapshot of summed counters.
        #[derive(Default, Clone, Copy, Debug)]
        pub struct Totals {
            $(pub $name: u64,)*
        }

        impl WorkerStats {
            fn add_into(&self, t: &mut Totals) {
                $(t.$name += self.$name.load(Relaxed);)*
            }
        }

        impl Totals {
            fn minus(&self, base: &Totals) -> Totals {
                Totals { $($name: self.$name.wrapping_sub(base.$name),)* }
            }
        }
    };
}

counters!(
    cmd_get, cmd_set, cmd_flush, cmd_touch, cmd_meta, get_hits, get_misses, get_expired, get_flushed,
    delete_misses, delete_hits, incr_misses, incr_hits, decr_misses, decr_hits, cas_misses,
    cas_hits, cas_badval, touch_hits, touch_misses, store_too_large, store_no_memory,
    bytes_read, bytes_written, conn_yields, idle_kicks, grace_hits, grace_wins,
    grace_winner_timeouts, auth_cmds, auth_errors, udp_replies_cut,
);

/// Add `n` to a counter owned by the calling worker.
#[inline]
pub fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
}

/// Server-wide connection counters (touched on accept/close only).
#[derive(Default)]
pub struct ConnCounters {
    pub curr_connections: AtomicU64,
    pub total_connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub connection_structures: AtomicU64,
    /// Connections ended by a panic while serving them (`conn::contain`).
    pub conn_panics: AtomicU64,
}

/// All statistics of one server.
pub struct ServerStats {
    pub workers: Vec<WorkerStats>,
    pub conns: ConnCounters,
    baseline: Mutex<(Totals, u64, u64)>,
}

impl ServerStats {
    pub fn new(workers: usize) -> ServerStats {
        ServerStats {
            // One extra slot for the UDP/acceptor side and admin work.
            workers: (0..workers + 1).map(|_| WorkerStats::default()).collect(),
            conns: ConnCounters::default(),
            baseline: Mutex::new((Totals::default(), 0, 0)),
        }
    }

    /// Counters since the last `stats reset`.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for w in &self.workers {
            w.add_into(&mut t);
        }
        t.minus(&self.baseline.lock().unwrap().0)
    }

    /// (total_connections, rejected_connections) since the last reset.
    pub fn conn_totals(&self) -> (u64, u64) {
        let b = self.baseline.lock().unwrap();
        (
            self.conns.total_connections.load(Relaxed).wrapping_sub(b.1),
            self.conns.rejected_connections.load(Relaxed).wrapping_sub(b.2),
        )
    }

    /// `stats reset`.
    pub fn reset(&self) {
        let mut t = Totals::default();
        for w in &self.workers {
            w.add_into(&mut t);
        }
        *self.baseline.lock().unwrap() = (
            t,
            self.conns.total_connections.load(Relaxed),
            self.conns.rejected_connections.load(Relaxed),
        );
    }
}

/// CPU time used by the process: (user, system) in seconds.
pub fn rusage() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// Append a `STAT name value` line with a formatted float (memcached prints
/// rusage with six decimals).
pub fn stat_f64(out: &mut Vec<u8>, name: &str, v: f64) {
    reply::stat_str(out, name, &format!("{v:.6}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_subtracts_a_baseline() {
        let s = ServerStats::new(2);
        bump(&s.workers[0].cmd_get, 5);
        bump(&s.workers[1].cmd_get, 2);
        assert_eq!(s.totals().cmd_get, 7);
        s.reset();
        assert_eq!(s.totals().cmd_get, 0);
        bump(&s.workers[1].cmd_get, 3);
        assert_eq!(s.totals().cmd_get, 3);
    }

    #[test]
    fn rusage_reads_the_process() {
        // Burn a little CPU so user time is measurable.
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (u, s) = rusage();
        assert!(u > 0.0 || s > 0.0);
    }
}
