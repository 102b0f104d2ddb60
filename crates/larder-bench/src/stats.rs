//! Counters and latency histograms of one run, merged across generator threads, and their
//! summary (rates, percentiles) as text and JSON.
//!
//! Latency is recorded in nanoseconds in an HDR histogram (3 significant digits, up to 60 s),
//! one per thread, merged at the end; recording is allocation free.

use hdrhistogram::Histogram;

use crate::json::Obj;

/// Raw results of one thread or one whole run.
#[derive(Clone)]
pub struct Stats {
    /// Requests completed (with a reply) whose send time fell in the measurement window.
    pub ops: u64,
    /// Keys in those requests (a multi-get of 100 keys counts 100).
    pub keys: u64,
    /// Keys found / not found by reads (get, multi-get, mg).
    pub hits: u64,
    pub misses: u64,
    /// Key and value bytes of the hits (memory scenario: what the server retained).
    pub hit_key_bytes: u64,
    pub hit_value_bytes: u64,
    /// Error replies (ERROR, CLIENT_ERROR, SERVER_ERROR, NOT_STORED to a set, ...).
    pub errors: u64,
    /// Replies that are not memcached protocol, or connections that failed.
    pub protocol_errors: u64,
    pub conn_errors: u64,
    /// Values checked, and of those the ones that did not match what was written.
    pub verified: u64,
    pub corrupt: u64,
    /// Requests still without a reply when the run gave up waiting.
    pub timeouts: u64,
    /// Latency of each request in ns, from its intended send time to its complete reply.
    pub latency: Histogram<u64>,
    /// Open loop: how late each request was written, after its intended send time (ns). A
    /// generator that keeps up has a small lag; a large lag means the generator, not the
    /// server, delayed the requests (their latency still counts from the intended time).
    pub send_lag: Histogram<u64>,
    /// Length of the measurement window in seconds.
    pub seconds: f64,
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            ops: 0,
            keys: 0,
            hits: 0,
            misses: 0,
            hit_key_bytes: 0,
            hit_value_bytes: 0,
            errors: 0,
            protocol_errors: 0,
            conn_errors: 0,
            verified: 0,
            corrupt: 0,
            timeouts: 0,
            latency: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("histogram bounds"),
            send_lag: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("histogram bounds"),
            seconds: 0.0,
        }
    }

    pub fn merge(&mut self, o: &Stats) {
        self.ops += o.ops;
        self.keys += o.keys;
        self.hits += o.hits;
        self.misses += o.misses;
        self.hit_key_bytes += o.hit_key_bytes;
        self.hit_value_bytes += o.hit_value_bytes;
        self.errors += o.errors;
        self.protocol_errors += o.protocol_errors;
        self.conn_errors += o.conn_errors;
        self.verified += o.verified;
        self.corrupt += o.corrupt;
        self.timeouts += o.timeouts;
        self.latency.add(&o.latency).expect("same histogram bounds");
        self.send_lag.add(&o.send_lag).expect("same histogram bounds");
        self.seconds = self.seconds.max(o.seconds);
    }

    #[inline]
    pub fn record_latency(&mut self, ns: u64) {
        self.latency.saturating_record(ns.max(1));
    }

    pub fn summary(&self) -> Summary {
        let secs = if self.seconds > 0.0 { self.seconds } else { f64::NAN };
        let q = |p: f64| self.latency.value_at_quantile(p) as f64 / 1000.0;
        Summary {
            ops_per_sec: self.ops as f64 / secs,
            keys_per_sec: self.keys as f64 / secs,
            hit_ratio: if self.hits + self.misses > 0 { self.hits as f64 / (self.hits + self.misses) as f64 } else { f64::NAN },
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: self.latency.max() as f64 / 1000.0,
            mean_us: self.latency.mean() / 1000.0,
            send_lag_p99_us: if self.send_lag.is_empty() { f64::NAN } else { self.send_lag.value_at_quantile(0.99) as f64 / 1000.0 },
            send_lag_max_us: if self.send_lag.is_empty() { f64::NAN } else { self.send_lag.max() as f64 / 1000.0 },
            ops: self.ops,
            keys: self.keys,
            hits: self.hits,
            misses: self.misses,
            errors: self.errors + self.protocol_errors + self.conn_errors + self.timeouts,
            corrupt: self.corrupt,
            verified: self.verified,
            seconds: self.seconds,
            hit_bytes: self.hit_key_bytes + self.hit_value_bytes,
        }
    }
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

/// The figures a report shows for one run.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub ops_per_sec: f64,
    pub keys_per_sec: f64,
    pub hit_ratio: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
    /// Open loop only: p99 and max of how late requests were written (generator lag).
    pub send_lag_p99_us: f64,
    pub send_lag_max_us: f64,
    pub ops: u64,
    pub keys: u64,
    pub hits: u64,
    pub misses: u64,
    /// All kinds of errors together (error replies, protocol, connection, timeouts).
    pub errors: u64,
    pub corrupt: u64,
    pub verified: u64,
    pub seconds: f64,
    pub hit_bytes: u64,
}

impl Summary {
    pub fn to_json(&self) -> String {
        Obj::new()
            .num("ops_per_sec", round(self.ops_per_sec))
            .num("keys_per_sec", round(self.keys_per_sec))
            .num("hit_ratio", self.hit_ratio)
            .num("p50_us", self.p50_us)
            .num("p90_us", self.p90_us)
            .num("p99_us", self.p99_us)
            .num("p999_us", self.p999_us)
            .num("max_us", self.max_us)
            .num("mean_us", (self.mean_us * 10.0).round() / 10.0)
            .num("send_lag_p99_us", self.send_lag_p99_us)
            .num("send_lag_max_us", self.send_lag_max_us)
            .int("ops", self.ops)
            .int("keys", self.keys)
            .int("hits", self.hits)
            .int("misses", self.misses)
            .int("errors", self.errors)
            .int("corrupt", self.corrupt)
            .int("verified", self.verified)
            .num("seconds", self.seconds)
            .build()
    }

    pub fn to_text(&self) -> String {
        format!(
            "ops/s {:.0}  keys/s {:.0}  hit ratio {:.4}  latency us p50 {:.1} p90 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}  errors {}  corrupt {}/{} verified  ({} ops in {:.2} s)",
            self.ops_per_sec, self.keys_per_sec, self.hit_ratio, self.p50_us, self.p90_us, self.p99_us, self.p999_us, self.max_us, self.errors, self.corrupt, self.verified, self.ops, self.seconds
        ) + &if self.send_lag_p99_us.is_finite() { format!("  send lag us p99 {:.1} max {:.1}", self.send_lag_p99_us, self.send_lag_max_us) } else { String::new() }
    }
}

fn round(v: f64) -> f64 {
    v.round()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_and_summarise() {
        let mut a = Stats::new();
        a.ops = 10;
        a.keys = 10;
        a.hits = 9;
        a.misses = 1;
        a.seconds = 2.0;
        for i in 1..=100 {
            a.record_latency(i * 1000);
        }
        let mut b = Stats::new();
        b.ops = 10;
        b.keys = 1000;
        b.seconds = 2.0;
        b.corrupt = 1;
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.ops_per_sec, 10.0);
        assert_eq!(s.keys_per_sec, 505.0);
        assert!((s.hit_ratio - 0.9).abs() < 1e-9);
        assert!((s.p50_us - 50.0).abs() < 0.1);
        assert!((s.p99_us - 99.0).abs() < 0.1);
        assert_eq!(s.corrupt, 1);
        assert!(s.to_json().contains("\"corrupt\":1"));
    }
}
