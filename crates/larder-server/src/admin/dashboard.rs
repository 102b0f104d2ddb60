//! The dashboard (issue 15): a page at `/` of the admin listener that a
//! person opens in a browser, and the versioned JSON API it polls.
//!
//! * `GET /` — the page (`dashboard/index.html`), with `/dashboard.css`
//!   and `/dashboard.js`: embedded in the binary, no network at run time
//!   (a Content-Security-Policy of `'self'` only says so to the browser).
//! * `GET /api/v1/summary` — the current figures (polled every second):
//!   every numeric `stats` and `stats larder` figure from the same typed
//!   [`snapshot`] the text reply prints, memory by category against `-m`,
//!   request latency percentiles since start, and the newest history sample.
//! * `GET /api/v1/prefixes` — the top prefixes by bytes, with their traffic.
//! * `GET /api/v1/keys` — the big keys, the hot keys by requests and by
//!   bytes (with each key's size and TTL, read with the store's
//!   side-effect-free `peek`). With `-X` (no key dumps) every `key` is
//!   `null` and `"key_names": "hidden"` says why; prefixes, sizes, counts
//!   and TTLs remain.
//! * `GET /api/v1/history` — the ring of [`super::history`] samples (fetched
//!   once when the page opens; the page appends the newest sample of each
//!   summary).
//!
//! The v1 contract (README, "Dashboard API"): within v1 fields may be
//! added, never renamed, removed or given another meaning; each document
//! carries `"api_version": 1`. A change that breaks it is `/api/v2/`.
//!
//! Keys go out percent-escaped as every `stats` listing prints them
//! ([`larder_observe::escape::escape_key`]) and then JSON-escaped with
//! `<`, `>`, `&` as `\u00XX`; the page only ever sets them as text
//! (`textContent`), never as markup.
//!
//! Cost of a page refresh (the three documents): two sweeps of the store's
//! shard locks (as a `stats`), the prefix registry lock (not taken by
//! workers on their fast path), the big-key list lock, each worker's
//! hot-key lock for one merge of 2 x 256 counters, and up to 20 `peek`s.
//! Bounded whatever the traffic.

use super::history::{History, FIELDS};
use super::json::Json;
use crate::exec::report::{snapshot, Group, Value};
use crate::state::server::Server;
use larder_observe::escape::escaped_key;
use larder_observe::key_prefix;
use larder_observe::prefix::PrefixName;

pub const INDEX_HTML: &str = include_str!("dashboard/index.html");
pub const DASHBOARD_JS: &str = include_str!("dashboard/dashboard.js");
pub const DASHBOARD_CSS: &str = include_str!("dashboard/dashboard.css");
/// The page's icon (linked from the page, so browsers do not ask for a
/// `/favicon.ico` that would 404 in their console).
pub const FAVICON_SVG: &str = include_str!("dashboard/favicon.svg");

/// Prefix rows sent (the largest by bytes; the rest are summed in `other`
/// by the accounting itself once it runs out of rows).
const PREFIX_ROWS: usize = 30;
/// Hot keys sent per kind.
const HOT_KEYS: usize = 10;

fn write_stats(j: &mut Json, srv: &Server, now: larder_store::Time) {
    j.obj("stats");
    for group in [Group::General, Group::Larder] {
        for (name, value) in &snapshot(srv, group, now).stats {
            match value {
                Value::U64(v) => j.u64(name, *v),
                Value::F64(v) => j.f64(name, *v),
                Value::Str(s) => j.str(name, s),
            }
        }
    }
    j.end_obj();
}

fn write_sample(j: &mut Json, s: &super::history::Sample) {
    j.begin_arr();
    j.elem_f64(s.unix_ms as f64);
    for v in s.v {
        j.elem_f32(v);
    }
    j.end_arr();
}

/// The version every `/api/v1/` document states in `api_version`.
pub const API_VERSION: u64 = 1;

fn begin(j: &mut Json) {
    j.begin_obj();
    j.u64("api_version", API_VERSION);
    j.u64("now_ms", super::history::unix_ms());
}

/// `/api/v1/history`.
pub fn history_json(history: &History) -> String {
    let mut j = Json::new();
    begin(&mut j);
    j.u64("interval_ms", super::history::INTERVAL.as_millis() as u64);
    j.u64("capacity", history.capacity() as u64);
    j.u64("heap_bytes", history.heap_bytes() as u64);
    j.arr("fields");
    j.elem_str("unix_ms");
    for f in FIELDS {
        j.elem_str(f);
    }
    j.end_arr();
    j.arr("samples");
    for s in history.samples() {
        write_sample(&mut j, &s);
    }
    j.end_arr();
    j.end_obj();
    j.finish()
}

/// `/api/v1/summary`.
pub fn summary_json(srv: &Server, history: &History) -> String {
    let now = srv.clock().now();
    let delim = srv.settings().prefix_delimiter;
    let mut j = Json::new();
    begin(&mut j);
    j.bool("observe_enabled", srv.settings().observe.enabled);
    j.bool("grace_enabled", srv.settings().grace.enabled());
    j.str("prefix_delimiter", &escaped_key(&[delim]));
    write_stats(&mut j, srv, now);

    let st = srv.store_stats();
    let (read_bufs, write_bufs) = srv.conns().budget.buffer_bytes();
    j.obj("memory");
    j.u64("limit", st.limit_maxbytes);
    j.u64("used", st.memory_used);
    j.u64("items", st.bytes);
    j.u64("index", st.index_bytes);
    j.u64("dead", st.bytes_dead);
    j.u64("large", st.large_bytes);
    j.u64("read_buf_bytes", read_bufs as u64);
    j.u64("response_obj_bytes", write_bufs as u64);
    j.u64("observe", srv.insight().observer.heap_bytes() as u64);
    j.u64("history", history.heap_bytes() as u64);
    j.end_obj();

    let lat = srv.insight().observer.latency.snapshot();
    j.obj("latency_us");
    j.u64("count", lat.count);
    j.f64("mean", if lat.count == 0 { 0.0 } else { lat.sum_ns as f64 / lat.count as f64 / 1000.0 });
    for (name, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)] {
        j.f64(name, lat.quantile(q) as f64 / 1000.0);
    }
    j.end_obj();

    match history.latest() {
        Some(s) => {
            j.key_only("latest");
            write_sample(&mut j, &s);
        }
        None => j.null("latest"),
    }
    j.end_obj();
    j.finish()
}

/// `/api/v1/prefixes`.
pub fn prefixes_json(srv: &Server) -> String {
    let mut j = Json::new();
    begin(&mut j);
    j.bool("observe_enabled", srv.settings().observe.enabled);
    j.str("prefix_delimiter", &escaped_key(&[srv.settings().prefix_delimiter]));
    let mut rows = srv.insight().observer.prefixes.snapshot();
    rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.requests().cmp(&a.requests())));
    j.u64("prefixes_total", rows.len() as u64);
    j.arr("prefixes");
    for r in rows.iter().take(PREFIX_ROWS) {
        j.begin_obj();
        match &r.prefix {
            PrefixName::Named(n) => {
                j.str("prefix", &escaped_key(n));
                j.str("kind", "named");
            }
            PrefixName::Other => {
                j.str("prefix", "(other)");
                j.str("kind", "other");
            }
            PrefixName::Unprefixed => {
                j.str("prefix", "(no prefix)");
                j.str("kind", "unprefixed");
            }
        }
        j.i64("items", r.items);
        j.i64("bytes", r.bytes);
        j.u64("gets", r.gets);
        j.u64("hits", r.hits);
        j.u64("misses", r.misses);
        j.u64("sets", r.sets);
        j.u64("deletes", r.deletes);
        j.u64("evictions", r.evictions);
        j.u64("expired", r.expired);
        j.u64("bytes_sent", r.bytes_sent);
        j.end_obj();
    }
    j.end_arr();
    j.end_obj();
    j.finish()
}

/// `/api/v1/keys`.
pub fn keys_json(srv: &Server) -> String {
    let now = srv.clock().now();
    let unix_now = srv.clock().unix_now().max(0) as u64;
    let delim = srv.settings().prefix_delimiter;
    let mut j = Json::new();
    begin(&mut j);
    let prefix_of = |j: &mut Json, key: &[u8]| match key_prefix(key, delim) {
        Some(p) => j.str("prefix", &escaped_key(p)),
        None => j.null("prefix"),
    };
    // -X: memcached's "no key dumps" covers larder's own listings.
    let show = srv.settings().dump_enabled;
    j.str("key_names", if show { "shown" } else { "hidden" });
    let key_of = |j: &mut Json, key: &[u8]| match show {
        true => j.str("key", &escaped_key(key)),
        false => j.null("key"),
    };
    j.arr("bigkeys");
    for b in srv.insight().observer.bigkeys.top() {
        j.begin_obj();
        key_of(&mut j, &b.key);
        prefix_of(&mut j, &b.key);
        j.u64("size", b.size);
        j.u64("age", unix_now.saturating_sub(b.stored_at));
        j.i64("ttl", if b.exptime == 0 { -1 } else { b.exptime.saturating_sub(unix_now) as i64 });
        j.end_obj();
    }
    j.end_arr();

    let hot = srv.insight().observer.hotkeys.report(unix_now, HOT_KEYS);
    j.obj("hotkeys");
    j.u64("window_s", hot.window_secs);
    j.u64("total_requests", hot.total_requests);
    j.u64("total_bytes", hot.total_bytes);
    for (name, list) in [("by_requests", &hot.by_requests), ("by_bytes", &hot.by_bytes)] {
        j.arr(name);
        for h in list.iter() {
            j.begin_obj();
            key_of(&mut j, &h.key);
            prefix_of(&mut j, &h.key);
            j.u64("count", h.count);
            j.u64("error", h.error);
            // Size and TTL from the store, without touching the item's
            // access bits, the hit counters, or a dead item (removing it
            // here would take it out of the store behind per-prefix
            // accounting's back: this thread has no departure sink).
            match srv.store().inspect(&h.key, now, |it| (it.value.len(), it.exptime)) {
                Some((size, exptime)) => {
                    j.u64("size", size as u64);
                    j.i64("ttl", if exptime == 0 { -1 } else { exptime.saturating_sub(now) as i64 });
                }
                None => {
                    j.null("size");
                    j.null("ttl");
                }
            }
            j.end_obj();
        }
        j.end_arr();
    }
    j.end_obj();
    j.end_obj();
    j.finish()
}
