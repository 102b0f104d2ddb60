//! One handle for everything: the wiring the server does in a few calls.
//!
//! ```text
//! startup:      let obs = Observer::new(ObserverConfig { delimiter: settings.prefix_delimiter, ..Default::default() });
//! each worker:  let mut ow = obs.worker();            // owned by the worker thread
//! get (per key):     ow.on_get(key, hit, value_len, now)
//! stored:            ow.on_set(key, item_bytes, old_item_bytes, now, exptime)
//! incr/decr:         ow.on_resize(key, new_item_bytes, old_item_bytes)
//! not stored:        ow.on_set_failed(key)
//! delete:            ow.on_delete(key, removed_item_bytes)       // None = NOT_FOUND
//! eviction/expiry:   ow.on_evict(key, item_bytes) / ow.on_expire(key, item_bytes)
//! touch/gat:         ow.on_touch(key, item_bytes, now, exptime)
//! per request:       ow.record_latency(ns)                // or record_latency_n(ns, n) for n alike
//! worker goes idle:  ow.quiesce()                          // before blocking in epoll_wait
//! once a second:     obs.maintain()                        // gives idle prefix rows back
//! stats <sub>:       if obs.render_stats(sub_tokens, now, &mut out) { reply done }
//! /metrics:          obs.write_prometheus(&mut exposition)      // after prometheus::write_stats(...)
//! ```
//!
//! `now` and `exptime` are unix seconds (`exptime` 0 = never). Item sizes are
//! whatever the store charges for the item (key + value + header), the same
//! number in `on_set` and in the removal that later undoes it: that is what
//! keeps per-prefix `bytes` exact. The store must report every way an item
//! leaves (delete, eviction, expiry reclaimed, flush, replacement) exactly
//! once; a replacement is `on_set(.., Some(old_bytes), ..)`.
//!
//! Hot keys count lookups (`get`-family and `mg`), not writes.

use std::sync::Arc;

use crate::bigkeys::{BigKeys, DEFAULT_BIGKEYS};
use crate::hotkeys::{HotKeys, HotKeysWorker, DEFAULT_COUNTERS, DEFAULT_WINDOW_SECS};
use crate::latency::{Latency, LatencyWorker};
use crate::prefix::{PrefixConfig, PrefixStats, PrefixWorker, DEFAULT_MAX_PREFIXES};
use crate::prometheus::{Exposition, MetricType};

/// Sizes of every structure (all bounded).
#[derive(Clone, Copy, Debug)]
pub struct ObserverConfig {
    /// memcached's `-D` (default `:`).
    pub delimiter: u8,
    /// Prefixes tracked individually (rest folded into `other`).
    pub max_prefixes: usize,
    /// Prefixes with their own Prometheus series (by bytes stored).
    pub prometheus_prefixes: usize,
    /// K of the big-key list.
    pub bigkeys: usize,
    /// Items smaller than this never enter the big-key list.
    pub bigkeys_min_size: u64,
    /// Space-Saving counters per summary.
    pub hotkeys_counters: usize,
    /// Hot-key sliding window, seconds.
    pub hotkeys_window_secs: u64,
    /// Entries listed by `stats hotkeys` per kind.
    pub hotkeys_listed: usize,
    /// Hot keys see about one request in this many (1 = all); 0: adaptive
    /// (every request while a worker sees fewer than 2048 a second, about
    /// 2048 samples a second above; see [`crate::hotkeys`], "Sampling").
    pub hotkeys_sample: u64,
}

impl Default for ObserverConfig {
    fn default() -> Self {
        ObserverConfig {
            delimiter: b':',
            max_prefixes: DEFAULT_MAX_PREFIXES,
            prometheus_prefixes: 50,
            bigkeys: DEFAULT_BIGKEYS,
            bigkeys_min_size: 1,
            hotkeys_counters: DEFAULT_COUNTERS,
            hotkeys_window_secs: DEFAULT_WINDOW_SECS,
            hotkeys_listed: 20,
            hotkeys_sample: 0,
        }
    }
}

/// The shared half (clone freely).
#[derive(Clone)]
pub struct Observer {
    pub cfg: ObserverConfig,
    pub prefixes: PrefixStats,
    pub bigkeys: Arc<BigKeys>,
    pub hotkeys: HotKeys,
    pub latency: Latency,
}

/// A worker thread's half.
pub struct ObserverWorker {
    pub prefixes: PrefixWorker,
    pub hotkeys: HotKeysWorker,
    pub latency: LatencyWorker,
    bigkeys: Arc<BigKeys>,
}

impl Observer {
    pub fn new(cfg: ObserverConfig) -> Self {
        Observer {
            cfg,
            prefixes: PrefixStats::new(PrefixConfig { delimiter: cfg.delimiter, max_prefixes: cfg.max_prefixes }),
            bigkeys: Arc::new(BigKeys::new(cfg.bigkeys, cfg.bigkeys_min_size)),
            hotkeys: HotKeys::new(cfg.hotkeys_counters, cfg.hotkeys_window_secs).with_sampling(cfg.hotkeys_sample),
            latency: Latency::new(),
        }
    }

    pub fn worker(&self) -> ObserverWorker {
        ObserverWorker {
            prefixes: self.prefixes.worker(),
            hotkeys: self.hotkeys.worker(),
            latency: self.latency.worker(),
            bigkeys: self.bigkeys.clone(),
        }
    }

    /// Answers the `stats` subcommands this crate defines, given the tokens
    /// after `stats`: `detail dump` (memcached), `prefixes`, `hotkeys`,
    /// `bigkeys`. Returns false for anything else (the server handles it,
    /// including `detail on|off`: call [`PrefixStats::set_detail`]).
    pub fn render_stats(&self, sub: &[&[u8]], now: u64, out: &mut Vec<u8>) -> bool {
        match sub {
            [b"detail", b"dump"] => self.prefixes.render_detail_dump(out),
            [b"prefixes"] => self.prefixes.render_prefixes(out),
            [b"hotkeys"] => self.hotkeys.render(out, now, self.cfg.hotkeys_listed),
            [b"bigkeys"] => self.bigkeys.render(out, now, self.cfg.delimiter, |_, _| true),
            _ => return false,
        }
        true
    }

    /// Housekeeping, about once a second: see [`PrefixStats::maintain`].
    pub fn maintain(&self) {
        self.prefixes.maintain();
    }

    /// `stats reset`.
    pub fn reset(&self) {
        self.prefixes.reset();
    }

    /// Per-prefix series, the request latency histogram and the memory the
    /// observability structures use (`larder_observe_memory_bytes`).
    pub fn write_prometheus(&self, e: &mut Exposition) {
        self.prefixes.write_prometheus(e, self.cfg.prometheus_prefixes);
        e.family("larder_request_duration_seconds", "Time spent handling a request.", MetricType::Histogram);
        self.latency.snapshot().write_prometheus(e, "larder_request_duration_seconds", &[]);
        e.family("larder_observe_memory_bytes", "Heap used by accounting structures.", MetricType::Gauge);
        e.sample("larder_observe_memory_bytes", &[("structure", "prefixes")], self.prefixes.heap_bytes() as f64);
        e.sample("larder_observe_memory_bytes", &[("structure", "bigkeys")], self.bigkeys.heap_bytes() as f64);
        e.sample("larder_observe_memory_bytes", &[("structure", "hotkeys")], self.hotkeys.heap_bytes() as f64);
        e.sample("larder_observe_memory_bytes", &[("structure", "latency")], self.latency.heap_bytes() as f64);
    }

    /// Heap bytes of all structures.
    pub fn heap_bytes(&self) -> usize {
        self.prefixes.heap_bytes() + self.bigkeys.heap_bytes() + self.hotkeys.heap_bytes() + self.latency.heap_bytes()
    }
}

impl ObserverWorker {
    /// A lookup of `key` (per key of a multi-get); `bytes_sent` = value
    /// length sent (0 on a miss).
    #[inline]
    pub fn on_get(&mut self, key: &[u8], hit: bool, bytes_sent: u64, now: u64) {
        self.prefixes.on_get(key, hit, bytes_sent);
        self.hotkeys.on_request(key, if hit { bytes_sent } else { 0 }, now);
    }

    /// An item was stored (set/add/replace/cas/append/prepend/incr/decr).
    #[inline]
    pub fn on_set(&mut self, key: &[u8], item_bytes: u64, old_item_bytes: Option<u64>, now: u64, exptime: u64) {
        self.prefixes.on_set(key, item_bytes, old_item_bytes);
        self.bigkeys.on_store(key, item_bytes, now, exptime);
    }

    /// An item was restored by a warm restart: accounted as present (its
    /// prefix's items and bytes, the big-key list), not as a command.
    #[inline]
    pub fn on_restored(&mut self, key: &[u8], item_bytes: u64, now: u64, exptime: u64) {
        self.prefixes.on_restored(key, item_bytes);
        self.bigkeys.on_store(key, item_bytes, now, exptime);
    }

    /// incr/decr rewrote an item (sizes as the store charges them).
    #[inline]
    pub fn on_resize(&mut self, key: &[u8], new_item_bytes: u64, old_item_bytes: u64) {
        self.prefixes.on_resize(key, new_item_bytes, old_item_bytes);
    }

    /// A storage command stored nothing.
    #[inline]
    pub fn on_set_failed(&mut self, key: &[u8]) {
        self.prefixes.on_set_failed(key);
    }

    /// `delete`: `Some(item_bytes)` when an item was removed.
    #[inline]
    pub fn on_delete(&mut self, key: &[u8], item_bytes: Option<u64>) {
        self.prefixes.on_delete(key, item_bytes);
        if item_bytes.is_some() {
            self.bigkeys.on_remove(key);
        }
    }

    #[inline]
    pub fn on_evict(&mut self, key: &[u8], item_bytes: u64) {
        self.prefixes.on_evict(key, item_bytes);
        self.bigkeys.on_remove(key);
    }

    /// A failed `set` dropped the key's old item (memcached does that): it
    /// leaves its prefix's items and bytes and the big-key list, and counts
    /// as no delete, eviction or expiry.
    #[inline]
    pub fn on_drop(&mut self, key: &[u8], item_bytes: u64) {
        self.prefixes.on_drop(key, item_bytes);
        self.bigkeys.on_remove(key);
    }

    /// An expired or flushed item was reclaimed.
    #[inline]
    pub fn on_expire(&mut self, key: &[u8], item_bytes: u64) {
        self.prefixes.on_expire(key, item_bytes);
        self.bigkeys.on_remove(key);
    }

    /// `touch`/`gat` changed an item's expiry.
    #[inline]
    pub fn on_touch(&mut self, key: &[u8], item_bytes: u64, now: u64, exptime: u64) {
        self.bigkeys.on_store(key, item_bytes, now, exptime);
    }

    /// The worker is about to block (no events for a while): lets
    /// [`Observer::maintain`] proceed without waiting for its next call.
    #[inline]
    pub fn quiesce(&mut self) {
        self.prefixes.quiesce();
    }

    /// One request's handling time.
    #[inline]
    pub fn record_latency(&mut self, ns: u64) {
        self.latency.record(ns);
    }

    /// `n` requests that took `ns` each (e.g. a pipelined batch timed as a
    /// whole, its time divided evenly).
    #[inline]
    pub fn record_latency_n(&mut self, ns: u64, n: u64) {
        self.latency.record_n(ns, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_safety() {
        fn send<T: Send>() {}
        fn sync<T: Send + Sync>() {}
        send::<ObserverWorker>();
        sync::<Observer>();
    }

    #[test]
    fn wiring_in_a_few_calls() {
        let obs = Observer::new(ObserverConfig { hotkeys_sample: 1, ..Default::default() });
        let mut w = obs.worker();
        w.on_set(b"item:big", 10 << 20, None, 100, 0);
        w.on_set(b"user:1", 100, None, 100, 160);
        for _ in 0..30 {
            w.on_get(b"user:1", true, 40, 100);
        }
        w.on_get(b"item:big", true, 10 << 20, 100);
        w.on_get(b"user:2", false, 0, 100);
        w.record_latency(5000);
        let mut out = Vec::new();
        assert!(obs.render_stats(&[b"bigkeys"], 101, &mut out));
        assert!(out.starts_with(b"STAT bigkey:1:key item:big\r\n"));
        out.clear();
        assert!(obs.render_stats(&[b"hotkeys"], 101, &mut out));
        let t = String::from_utf8(out.clone()).unwrap();
        assert!(t.contains("STAT hotkey:requests:1:key user:1\r\nSTAT hotkey:requests:1:count 30\r\n"), "{t}");
        assert!(t.contains("STAT hotkey:bytes:1:key item:big\r\n"), "{t}");
        out.clear();
        assert!(obs.render_stats(&[b"prefixes"], 101, &mut out));
        assert!(String::from_utf8(out.clone()).unwrap().starts_with("STAT prefix:item:items 1\r\n"));
        out.clear();
        assert!(obs.render_stats(&[b"detail", b"dump"], 101, &mut out));
        assert_eq!(out, b"END\r\n");
        assert!(!obs.render_stats(&[b"slabs"], 101, &mut out));
        w.on_evict(b"item:big", 10 << 20);
        assert!(obs.bigkeys.top().iter().all(|b| b.key != b"item:big"));
        assert_eq!(obs.prefixes.row(b"item").unwrap().items, 0);
        let mut e = Exposition::new();
        obs.write_prometheus(&mut e);
        let t = e.finish();
        assert!(t.contains("larder_request_duration_seconds_count 1\n"), "{t}");
        assert!(t.contains("larder_prefix_items{prefix=\"user\"} 1\n"), "{t}");
    }
}
