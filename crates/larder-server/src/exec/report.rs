//! The `stats` replies: general, `settings`, `items`, `slabs`, `sizes`,
//! `conns`, `cachedump`, `reset`, in memcached 1.6.18's names and order,
//! and `stats larder` (larder's own figures, kept out of the general reply
//! so that it has exactly memcached's fields).
//!
//! Also larder-observe's: `stats detail on|off|dump` (memcached's),
//! `stats prefixes`, `stats hotkeys`, `stats bigkeys`.
//!
//! larder has no slab classes; `stats items` and `stats slabs` describe the
//! whole store as one class (id 1) so tools that parse them keep working.

use crate::state::server::Server;
use crate::counters::{rusage, stat_f64, VERSION};
use larder_proto::reply::{self, stat_str, stat_u64};
use larder_store::Time;
use std::borrow::Cow;
use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;

/// A group of `STAT name value` figures, typed: rendered as text `stats`,
/// as binary `stat` packets and as Prometheus samples, never re-parsed.
#[derive(Default)]
pub struct Snapshot {
    pub stats: Vec<(Cow<'static, str>, Value)>,
}

/// One figure's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U64(u64),
    /// Printed with six decimals, as memcached prints rusage.
    F64(f64),
    Str(String),
}

impl Snapshot {
    fn u64(&mut self, name: impl Into<Cow<'static, str>>, v: u64) {
        self.stats.push((name.into(), Value::U64(v)));
    }

    fn f64(&mut self, name: impl Into<Cow<'static, str>>, v: f64) {
        self.stats.push((name.into(), Value::F64(v)));
    }

    fn str(&mut self, name: impl Into<Cow<'static, str>>, v: &str) {
        self.stats.push((name.into(), Value::Str(v.to_string())));
    }

    /// `STAT name value` lines (without the closing `END`).
    pub fn write_text(&self, out: &mut Vec<u8>) {
        for (name, v) in &self.stats {
            match v {
                Value::U64(n) => stat_u64(out, name, *n),
                Value::F64(f) => stat_f64(out, name, *f),
                Value::Str(t) => stat_str(out, name, t),
            }
        }
    }

    /// Each value as the text `stats` shows it (for binary `stat` packets).
    pub fn for_each_text(&self, mut f: impl FnMut(&str, &[u8])) {
        let mut buf = Vec::new();
        for (name, v) in &self.stats {
            buf.clear();
            match v {
                Value::U64(n) => larder_proto::reply::push_u64(&mut buf, *n),
                Value::F64(x) => buf.extend_from_slice(format!("{x:.6}").as_bytes()),
                Value::Str(t) => buf.extend_from_slice(t.as_bytes()),
            }
            f(name, &buf);
        }
    }
}

/// The `STAT` groups (`stats`, `stats settings`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    General,
    Settings,
    Items,
    Slabs,
    Sizes,
    Conns,
    Larder,
}

impl Group {
    /// The group `stats <word>` names (`None`: no word).
    pub fn named(word: Option<&[u8]>) -> Option<Group> {
        Some(match word {
            None => Group::General,
            Some(b"settings") => Group::Settings,
            Some(b"items") => Group::Items,
            Some(b"slabs") => Group::Slabs,
            Some(b"sizes") => Group::Sizes,
            Some(b"conns") => Group::Conns,
            Some(b"larder") => Group::Larder,
            Some(_) => return None,
        })
    }
}

/// The figures of one group.
pub fn snapshot(srv: &Server, group: Group, now: Time) -> Snapshot {
    let mut s = Snapshot::default();
    match group {
        Group::General => general(srv, &mut s),
        Group::Settings => settings(srv, &mut s),
        Group::Items => items(srv, now, &mut s),
        Group::Slabs => slabs(srv, &mut s),
        Group::Sizes => s.str("sizes_status", "disabled"),
        Group::Conns => conns(srv, now, &mut s),
        Group::Larder => larder(srv, &mut s),
    }
    s
}

/// Answer text `stats [args]`.
pub fn stats(srv: &Server, args: &[u8], now: Time, out: &mut Vec<u8>) {
    let mut words = args.split(|&b| b == b' ').filter(|w| !w.is_empty());
    match words.next() {
        Some(b"cachedump") => {
            let args: Vec<&[u8]> = words.collect();
            cachedump(srv, &args, now, out);
        }
        Some(b"reset") => {
            srv.reset_stats();
            out.extend_from_slice(reply::RESET);
        }
        // memcached 1.6.37: -X (no dumping) refuses stats detail too.
        Some(b"detail") if !srv.settings().dump_enabled => reply::line(out, "CLIENT_ERROR stats detail not allowed"),
        Some(b"detail") => {
            // memcached looks at the word after `detail` only.
            match words.next() {
                Some(b"dump") => srv.insight().observer.prefixes.render_detail_dump(out),
                Some(w @ (b"on" | b"off")) => {
                    srv.insight().observer.prefixes.set_detail(w == b"on");
                    out.extend_from_slice(reply::OK);
                }
                _ => reply::line(out, reply::STATS_DETAIL_USAGE),
            }
        }
        Some(w @ (b"prefixes" | b"hotkeys" | b"bigkeys")) if words.next().is_none() => {
            let unix_now = srv.clock().unix_now().max(0) as u64;
            // -X (no key dumps): the key lists keep their figures and
            // prefixes but name no key.
            let (o, delim) = (&srv.insight().observer, srv.settings().prefix_delimiter);
            match w {
                b"bigkeys" if !srv.settings().dump_enabled => o.bigkeys.render_hiding_keys(out, unix_now, delim, |_, _| true),
                b"hotkeys" if !srv.settings().dump_enabled => o.hotkeys.render_hiding_keys(out, unix_now, o.cfg.hotkeys_listed, delim),
                _ => {
                    o.render_stats(&[w], unix_now, out);
                }
            }
        }
        word => match Group::named(word) {
            Some(group) => {
                snapshot(srv, group, now).write_text(out);
                out.extend_from_slice(reply::END);
            }
            None => out.extend_from_slice(reply::ERROR),
        },
    }
}

/// Largest `stats cachedump` reply, as memcached (2 MB, `END` included).
const CACHEDUMP_MAX: usize = 2 * 1024 * 1024;

/// `stats cachedump <class> <limit>`: memcached's checks and replies, one
/// `ITEM <key> [<value bytes> b; <unix expiry, 0 = never> s]` line per item
/// of class 1 (larder's one class; other classes are empty), at most
/// `limit` (0: as many as fit in 2 MB). memcached lists its cold LRU, newest
/// first; larder walks the shards, oldest segments first, one shard lock
/// at a time.
///
/// Keys (issue 12, item 6). memcached 1.6.18's `item_cachedump` (items.c)
/// skips items stored with a meta `b` (base64) key (`ITEM_KEY_BINARY`) and
/// prints every other key raw with `%s` (cut at a NUL byte). A
/// binary-protocol key is not flagged `ITEM_KEY_BINARY` and may hold any
/// byte, so there a key holding `\r\nEND\r\n` forges lines in the dump.
/// larder skips the meta `b` items as memcached does and prints every
/// other key escaped with `larder_observe::escape::escape_key` (printable
/// ASCII, no space, `%XX` for any other byte and for `%`): identical to
/// memcached for ASCII keys without `%`, one safe word for the rest.
fn cachedump(srv: &Server, args: &[&[u8]], now: Time, out: &mut Vec<u8>) {
    if !srv.settings().dump_enabled {
        reply::line(out, reply::CACHEDUMP_NOT_ALLOWED);
        return;
    }
    if args.len() < 2 {
        reply::line(out, reply::BAD_COMMAND_LINE);
        return;
    }
    let number = |w: &[u8]| std::str::from_utf8(w).ok().and_then(|s| s.parse::<u32>().ok());
    let (Some(class), Some(limit)) = (number(args[0]), number(args[1])) else {
        reply::line(out, reply::BAD_FORMAT);
        return;
    };
    if class >= 64 {
        reply::line(out, reply::ILLEGAL_SLAB_ID);
        return;
    }
    let start = out.len();
    let to_unix = srv.clock().unix_now() - now as i64;
    let mut shown = 0u32;
    let mut full = false;
    let mut shard = 0;
    let mut after = 0;
    while class == 1 && !full && (limit == 0 || shown < limit) {
        let step = srv.store().for_each_item_in_shard_from(shard, now, after, 4, |key, it| {
            if full || it.key_binary || (limit != 0 && shown >= limit) {
                return;
            }
            let expiry = if it.exptime == 0 { 0 } else { (it.exptime as i64 + to_unix).max(0) };
            // Written in place; taken back if it would pass the cap.
            let before = out.len();
            out.extend_from_slice(b"ITEM ");
            larder_observe::escape::escape_key(out, key);
            let _ = write!(out, " [{} b; {} s]\r\n", it.value_len, expiry);
            if out.len() - start + 5 > CACHEDUMP_MAX {
                out.truncate(before);
                full = true;
                return;
            }
            shown += 1;
        });
        match step {
            Some((_, last)) => after = last,
            None if shard + 1 < srv.store().shard_count() => (shard, after) = (shard + 1, 0),
            None => break,
        }
    }
    out.extend_from_slice(reply::END);
}

fn general(srv: &Server, s: &mut Snapshot) {
    let t = srv.counters().totals();
    let (total_conns, rejected) = srv.counters().conn_totals();
    let st = srv.store_stats();
    let (user, system) = rusage();
    let c = &srv.counters().conns;
    use std::sync::atomic::Ordering::Relaxed;
    // memcached 1.6.18's names in memcached's order, so exporters and
    // dashboards find what they expect. Figures of memcached subsystems that
    // larder does not have (libevent, response objects, the slab mover, the
    // LRU crawler and maintainer, the logger) are reported as what they are
    // for larder: none, zero.
    s.u64("pid", std::process::id() as u64);
    s.u64("uptime", srv.clock().uptime());
    s.u64("time", srv.clock().unix_now() as u64);
    s.str("version", VERSION);
    s.str("libevent", "none");
    s.u64("pointer_size", (std::mem::size_of::<usize>() * 8) as u64);
    s.f64("rusage_user", user);
    s.f64("rusage_system", system);
    s.u64("max_connections", srv.settings().max_connections as u64);
    s.u64("curr_connections", c.curr_connections.load(Relaxed));
    s.u64("total_connections", total_conns);
    if srv.settings().maxconns_fast {
        s.u64("rejected_connections", rejected);
    }
    s.u64("connection_structures", c.connection_structures.load(Relaxed));
    // memcached's connection-buffer figures, for larder's buffers: output
    // buffers are its "response objects", input buffers its read buffers
    // (one per connection, and grown ones kept for reuse: `connmem::shelf`).
    let (read_bytes, write_bytes) = srv.conns().budget.buffer_bytes();
    let read_free = srv.conns().budget.free_bytes().0 as u64;
    let (read_bytes, write_bytes) = (read_bytes as u64, write_bytes as u64);
    let read_oom = srv.conns().budget.read_oom.load(Relaxed);
    let write_oom = srv.conns().budget.write_oom.load(Relaxed);
    s.u64("response_obj_oom", write_oom);
    s.u64("response_obj_count", c.curr_connections.load(Relaxed));
    s.u64("response_obj_bytes", write_bytes);
    s.u64("read_buf_count", c.curr_connections.load(Relaxed));
    s.u64("read_buf_bytes", read_bytes);
    s.u64("read_buf_bytes_free", read_free);
    s.u64("read_buf_oom", read_oom);
    s.u64("reserved_fds", srv.reserved_fds() as u64);
    s.u64("cmd_get", t.cmd_get);
    s.u64("cmd_set", t.cmd_set);
    s.u64("cmd_flush", t.cmd_flush);
    s.u64("cmd_touch", t.cmd_touch);
    s.u64("cmd_meta", t.cmd_meta);
    s.u64("get_hits", t.get_hits);
    s.u64("get_misses", t.get_misses);
    s.u64("get_expired", t.get_expired);
    s.u64("get_flushed", t.get_flushed);
    s.u64("delete_misses", t.delete_misses);
    s.u64("delete_hits", t.delete_hits);
    s.u64("incr_misses", t.incr_misses);
    s.u64("incr_hits", t.incr_hits);
    s.u64("decr_misses", t.decr_misses);
    s.u64("decr_hits", t.decr_hits);
    s.u64("cas_misses", t.cas_misses);
    s.u64("cas_hits", t.cas_hits);
    s.u64("cas_badval", t.cas_badval);
    s.u64("touch_hits", t.touch_hits);
    s.u64("touch_misses", t.touch_misses);
    s.u64("store_too_large", t.store_too_large);
    s.u64("store_no_memory", t.store_no_memory);
    s.u64("auth_cmds", t.auth_cmds);
    s.u64("auth_errors", t.auth_errors);
    if srv.settings().idle_timeout > 0 {
        s.u64("idle_kicks", t.idle_kicks);
    }
    s.u64("bytes_read", t.bytes_read);
    s.u64("bytes_written", t.bytes_written);
    s.u64("limit_maxbytes", st.limit_maxbytes);
    s.u64("accepting_conns", 1);
    s.u64("listen_disabled_num", 0);
    s.u64("time_in_listen_disabled_us", 0);
    s.u64("threads", srv.settings().threads as u64);
    s.u64("conn_yields", t.conn_yields);
    // memcached's table starts at 2^16 buckets (-o hashpower default) and
    // only grows; larder's index starts small and grows with the items.
    s.u64("hash_power_level", st.index_slots.max(1).ilog2().max(16) as u64);
    s.u64("hash_bytes", st.index_bytes);
    s.u64("hash_is_expanding", 0);
    for name in [
        // memcached 1.6.34 renamed slab_reassign_evictions_nomem to
        // slab_reassign_busy_nomem and moved it after busy_deletes.
        "slab_reassign_rescues", "slab_reassign_chunk_rescues", "slab_reassign_inline_reclaim",
        "slab_reassign_busy_items", "slab_reassign_busy_deletes", "slab_reassign_busy_nomem",
    ] {
        s.u64(name, 0);
    }
    // memcached 1.6.40: why the slab mover last found a page busy; "none"
    // until it has (larder has no slab mover).
    s.str("slab_reassign_last_busy_status", "none");
    s.u64("slab_reassign_running", 0);
    s.u64("slabs_moved", 0);
    if srv.settings().lru_crawler {
        s.u64("lru_crawler_running", 0);
        s.u64("lru_crawler_starts", 0);
    }
    if srv.settings().lru_maintainer {
        s.u64("lru_maintainer_juggles", 0);
    }
    s.u64("malloc_fails", 0);
    let [dropped, written, skipped, sent, watchers] = srv.insight().log.stats();
    s.u64("log_worker_dropped", dropped);
    s.u64("log_worker_written", written);
    s.u64("log_watcher_skipped", skipped);
    s.u64("log_watcher_sent", sent);
    s.u64("log_watchers", watchers);
    if let Some(tls) = &srv.access().tls {
        // memcached's TLS figures, in its place for them.
        if tls.settings.session_cache {
            s.u64("ssl_new_sessions", tls.counters.new_sessions.load(std::sync::atomic::Ordering::Relaxed));
        }
        s.u64("ssl_handshake_errors", tls.counters.handshake_errors.load(std::sync::atomic::Ordering::Relaxed));
        // memcached 1.6.30 and later, between these two.
        s.u64("ssl_proto_errors", tls.counters.proto_errors.load(std::sync::atomic::Ordering::Relaxed));
        s.u64("time_since_server_cert_refresh", tls.seconds_since_refresh(srv.clock().now()) as u64);
    }
    s.u64("unexpected_napi_ids", 0);
    s.u64("round_robin_fallback", 0);
    s.u64("bytes", st.bytes);
    s.u64("curr_items", st.curr_items);
    s.u64("total_items", st.total_items);
    // memcached's free pages waiting for a slab class: larder's spare segments.
    s.u64("slab_global_page_pool", st.segments_total.saturating_sub(st.segments_used));
    s.u64("expired_unfetched", st.expired_unfetched);
    s.u64("evicted_unfetched", st.evicted_unfetched);
    if srv.settings().lru_maintainer {
        s.u64("evicted_active", 0);
    }
    s.u64("evictions", st.evictions);
    s.u64("reclaimed", st.reclaimed);
    for name in ["crawler_reclaimed", "crawler_items_checked", "lrutail_reflocked"] {
        s.u64(name, 0);
    }
    if srv.settings().lru_maintainer {
        for name in ["moves_to_cold", "moves_to_warm", "moves_within_lru", "direct_reclaims", "lru_bumps_dropped"] {
            s.u64(name, 0);
        }
    }
}

/// `stats larder`: larder's own figures. Kept out of the plain `stats`
/// reply so that it has exactly memcached 1.6.18's fields (tools and
/// memcached's t/stats.t count them).
fn larder(srv: &Server, s: &mut Snapshot) {
    let t = srv.counters().totals();
    let st = srv.store_stats();
    s.str("larder_version", env!("CARGO_PKG_VERSION"));
    for (name, value) in srv.tracker().stats().pairs() {
        s.u64(name, value);
    }
    s.u64("larder_segment_size", st.segment_size);
    s.u64("larder_segments_total", st.segments_total);
    s.u64("larder_segments_used", st.segments_used);
    s.u64("larder_segments_free", st.segments_total.saturating_sub(st.segments_used));
    s.u64("larder_large_objects", st.large_objects);
    s.u64("larder_large_spare_bytes", st.large_spare_bytes);
    s.u64("larder_memory_used", st.memory_used);
    s.u64("larder_bytes_dead", st.bytes_dead);
    s.u64("larder_compactions", st.compactions);
    s.u64("larder_index_bytes", st.index_bytes);
    s.u64("larder_index_slots", st.index_slots);
    s.u64("larder_index_used", st.index_used);
    if srv.settings().memory_file.is_some() {
        let r = &srv.insight().restart;
        s.u64("larder_restart_loaded", r.loaded as u64);
        s.u64("larder_restart_items_loaded", r.items_loaded);
        s.u64("larder_restart_items_expired", r.items_expired);
        s.u64("larder_restart_items_skipped", r.items_skipped);
        s.f64("larder_restart_load_seconds", r.load_seconds);
        s.u64("larder_restart_file_bytes", r.file_bytes);
    }
    s.u64("larder_conn_budget_bytes", srv.conns().budget.limit() as u64);
    s.u64("larder_conn_budget_used", srv.conns().budget.used() as u64);
    // Connections ended by a bug (a panic) instead of the server (conn::contain).
    s.u64("larder_conn_panics", srv.counters().conns.conn_panics.load(Relaxed));
    // Output buffers kept for reuse (`connmem::shelf`); the input ones are
    // memcached's `read_buf_bytes_free`.
    s.u64("larder_write_buf_bytes_free", srv.conns().budget.free_bytes().1 as u64);
    // Of the free buffers, input and output: the resting-size ones in the
    // workers' pools (`connmem::pool`), not charged to the budget (the rest
    // are on the shelf, and charged).
    let (pool_read, pool_write) = srv.conns().budget.pooled_bytes();
    s.u64("larder_buf_pool_bytes", (pool_read + pool_write) as u64);
    if srv.settings().udp_port != 0 {
        // UDP replies stopped short: a value went away while being sent,
        // or more than 65,535 datagrams were needed (conn/udp.rs).
        s.u64("larder_udp_replies_cut", t.udp_replies_cut);
    }
    if srv.settings().grace.enabled() {
        s.u64("larder_grace_hits", t.grace_hits);
        s.u64("larder_grace_wins", t.grace_wins);
        s.u64("larder_grace_winner_timeouts", t.grace_winner_timeouts);
    }
    if srv.stampede().coalescer.enabled() {
        let c = &srv.stampede().coalescer.stats;
        s.u64("larder_coalesce_parked", srv.stampede().coalescer.parked_now() as u64);
        s.u64("larder_coalesce_waits", c.waits.load(Relaxed));
        s.u64("larder_coalesce_wins", c.wins.load(Relaxed));
        s.u64("larder_coalesce_released", c.released.load(Relaxed));
        s.u64("larder_coalesce_timeouts", c.timeouts.load(Relaxed));
        s.u64("larder_coalesce_overflows", c.overflows.load(Relaxed));
    }
    #[cfg(feature = "alloc-count")]
    s.u64("larder_allocations", crate::alloc_count::allocations());
}

fn settings(srv: &Server, out: &mut Snapshot) {
    let s = &srv.settings();
    let st = srv.store_stats();
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    out.u64("maxbytes", st.limit_maxbytes);
    out.u64("maxconns", s.max_connections as u64);
    // signed, as memcached prints them (-1: any free port)
    out.str("tcpport", &if s.unix_socket.is_some() { 0 } else { s.port }.to_string());
    out.str("udpport", &if s.unix_socket.is_some() { 0 } else { s.udp_port }.to_string());
    let inter = if s.listen.is_empty() { "NULL".to_string() } else { s.listen.join(",") };
    out.str("inter", &inter);
    out.u64("verbosity", srv.verbosity() as u64);
    out.u64("oldest", 0);
    out.str("evictions", if s.evictions { "on" } else { "off" });
    out.str("domain_socket", s.unix_socket.as_deref().unwrap_or("NULL"));
    out.str("umask", &format!("{:o}", s.unix_mask));
    out.str("shutdown_command", yes_no(s.enable_shutdown));
    // memcached 1.6.38's names, in its order. The slab, LRU and extstore
    // settings describe machinery larder does not have (no slab classes,
    // no slab mover, no segmented LRU, no extstore): where larder has an
    // answer it is given (slab_reassign no, lru_segmented no, its hash);
    // the pure tuning values are memcached's defaults, which the tuning
    // commands accept and leave as they are (docs/differences.md).
    out.str("growth_factor", "1.25");
    out.u64("chunk_size", 48);
    out.u64("num_threads", s.threads as u64);
    out.u64("num_threads_per_udp", s.threads as u64);
    out.str("stat_key_prefix", &(s.prefix_delimiter as char).to_string());
    out.str("detail_enabled", yes_no(srv.insight().observer.prefixes.detail_enabled()));
    out.u64("reqs_per_event", s.reqs_per_event as u64);
    out.str("cas_enabled", yes_no(s.cas_enabled));
    out.u64("tcp_backlog", s.backlog as u64);
    out.str("binding_protocol", s.protocol.stats_name());
    out.str("auth_enabled_sasl", yes_no(s.sasl));
    // memcached names the file here (not "yes").
    out.str("auth_enabled_ascii", srv.access().credentials.as_ref().map_or("no", |c| c.path()));
    out.u64("item_size_max", s.item_size_max as u64);
    out.str("maxconns_fast", yes_no(s.maxconns_fast));
    out.u64("hashpower_init", 0);
    out.str("slab_reassign", "no");
    out.u64("slab_automove", 0);
    out.str("slab_automove_ratio", "0.80");
    out.u64("slab_automove_window", 10);
    out.u64("slab_chunk_max", 524_288);
    out.str("lru_crawler", yes_no(s.lru_crawler));
    out.u64("lru_crawler_sleep", 100);
    out.u64("lru_crawler_tocrawl", 0);
    out.u64("tail_repair_time", 0);
    out.str("flush_enabled", yes_no(s.flush_enabled));
    out.str("dump_enabled", yes_no(s.dump_enabled));
    // larder's keyed SipHash-1-3 (larder-store's hash.rs), not murmur3.
    out.str("hash_algorithm", "siphash13");
    // As memcached: off under -o no_lru_maintainer (which also drops its stats).
    out.str("lru_maintainer_thread", yes_no(s.lru_maintainer));
    out.str("lru_segmented", "no");
    out.u64("hot_lru_pct", 20);
    out.u64("warm_lru_pct", 40);
    out.str("hot_max_factor", "0.20");
    out.str("warm_max_factor", "2.00");
    out.str("temp_lru", "no");
    out.u64("temporary_ttl", 61);
    out.u64("idle_timeout", s.idle_timeout as u64);
    out.u64("watcher_logbuf_size", s.watcher_logbuf_size as u64);
    out.u64("worker_logbuf_size", s.worker_logbuf_size as u64);
    out.u64("read_buf_mem_limit", s.read_buf_mem_limit as u64);
    out.str("track_sizes", "no");
    out.str("inline_ascii_response", "no");
    // memcached built with extstore (Debian's) lists its defaults even
    // without -o ext_path; larder has no extstore.
    out.u64("ext_item_size", 512);
    out.u64("ext_item_age", u64::from(u32::MAX));
    out.u64("ext_low_ttl", 0);
    out.u64("ext_recache_rate", 2000);
    out.u64("ext_wbuf_size", 4 << 20);
    out.u64("ext_compact_under", 0);
    out.u64("ext_drop_under", 0);
    out.u64("ext_max_sleep", 1_000_000);
    out.str("ext_max_frag", "0.80");
    out.str("slab_automove_freeratio", "0.010");
    out.str("ext_drop_unread", "no");
    // memcached (built with TLS, as Debian's is) lists these whether or
    // not -Z is on.
    let t = &s.tls;
    out.str("ssl_enabled", yes_no(t.enabled));
    out.str("ssl_chain_cert", t.chain_cert.as_deref().unwrap_or("(null)"));
    out.str("ssl_key", t.key.as_deref().unwrap_or("(null)"));
    out.u64("ssl_verify_mode", t.verify_mode as u64);
    out.str("ssl_keyformat", &t.keyformat.to_string());
    out.str("ssl_ciphers", t.ciphers.as_deref().unwrap_or("NULL"));
    out.str("ssl_ca_cert", t.ca_cert.as_deref().unwrap_or("NULL"));
    out.u64("ssl_wbuf_size", t.wbuf_size as u64);
    out.str("ssl_session_cache", yes_no(t.session_cache));
    out.str("ssl_kernel_tls", yes_no(t.kernel_tls));
    out.str("ssl_min_version", t.min_version_text());
    out.str("proxy_enabled", "no");
    out.str("proxy_uring_enabled", "no");
    out.str("num_napi_ids", "(null)");
    out.str("memory_file", s.memory_file.as_deref().unwrap_or("(null)"));
    // memcached 1.6.22: bytes of client flags kept per item (larder: 32 bits).
    out.u64("client_flags_size", 4);
}

fn items(srv: &Server, now: Time, s: &mut Snapshot) {
    let st = srv.store_stats();
    if st.curr_items == 0 {
        return;
    }
    s.u64("items:1:number", st.curr_items);
    // memcached: seconds since the LRU tail item was last accessed. Here:
    // since the oldest live data was written (segments are evicted oldest
    // first, so it is as close to "what goes next" as the store knows).
    let age = st.oldest_born.map_or(0, |born| now.saturating_sub(born));
    s.u64("items:1:age", age as u64);
    s.u64("items:1:mem_requested", st.bytes);
    s.u64("items:1:evicted", st.evictions);
    s.u64("items:1:evicted_nonzero", st.evicted_nonzero);
    // memcached: how long the latest evicted item had gone unaccessed.
    s.u64("items:1:evicted_time", st.last_eviction.map_or(0, |(_, idle)| idle as u64));
    s.u64("items:1:outofmemory", 0);
    s.u64("items:1:tailrepairs", 0);
    s.u64("items:1:reclaimed", st.reclaimed);
    s.u64("items:1:expired_unfetched", st.expired_unfetched);
    s.u64("items:1:evicted_unfetched", st.evicted_unfetched);
    // memcached prints these whatever its LRU mode; larder has no LRU
    // crawler (expired segments are swept whole) and no tail locks: 0, as
    // in the general `stats`. The segmented-LRU fields (number_hot, ...,
    // moves_to_cold, hits_to_*) are left out, as memcached leaves them out
    // when its LRU is not segmented.
    for name in ["items:1:crawler_reclaimed", "items:1:crawler_items_checked", "items:1:lrutail_reflocked"] {
        s.u64(name, 0);
    }
}

fn slabs(srv: &Server, s: &mut Snapshot) {
    let st = srv.store_stats();
    let t = srv.counters().totals();
    if st.segments_used > 0 {
        // A page is a segment; a chunk is one item of the mean size of the
        // items in pages (large objects live outside them), so used_chunks
        // counts items as memcached's does (t/issue_29.t) and the fill
        // ratio used/total means what it means there.
        let items = st.curr_items.saturating_sub(st.large_objects);
        let chunk = (st.bytes.saturating_sub(st.large_bytes) / items.max(1)).clamp(1, st.segment_size.max(1));
        let per_page = st.segment_size / chunk;
        let total = per_page * st.segments_used;
        s.u64("1:chunk_size", chunk);
        s.u64("1:chunks_per_page", per_page);
        s.u64("1:total_pages", st.segments_used);
        s.u64("1:total_chunks", total);
        s.u64("1:used_chunks", items);
        s.u64("1:free_chunks", total.saturating_sub(items));
        s.u64("1:free_chunks_end", 0);
        s.u64("1:get_hits", t.get_hits);
        s.u64("1:cmd_set", t.cmd_set);
        s.u64("1:delete_hits", t.delete_hits);
        s.u64("1:incr_hits", t.incr_hits);
        s.u64("1:decr_hits", t.decr_hits);
        s.u64("1:cas_hits", t.cas_hits);
        s.u64("1:cas_badval", t.cas_badval);
        s.u64("1:touch_hits", t.touch_hits);
    }
    s.u64("active_slabs", if st.segments_used > 0 { 1 } else { 0 });
    // memcached: the bytes of slab pages it has malloc'd. Here: every byte
    // taken from -m (segments in use and spare, the index, large objects in
    // whole pages), which grows with the data and shrinks when a lowered
    // `cache_memlimit` lets the store hand buffers back. Pages, because
    // memcached's figure does not move when an item is replaced by one a
    // byte longer (t/issue_14.t checks that), and neither does the memory.
    s.u64("total_malloced", st.memory_used - st.large_bytes + st.large_pages_bytes);
}

fn conns(srv: &Server, now: Time, s: &mut Snapshot) {
    for info in srv.conns().registry.snapshot() {
        let prefix = info.fd.to_string();
        s.str(format!("{prefix}:addr"), &info.addr);
        if let Some(l) = &info.listen_addr {
            s.str(format!("{prefix}:listen_addr"), l);
        }
        s.str(format!("{prefix}:state"), info.state().name());
        s.u64(format!("{prefix}:secs_since_last_cmd"), now.saturating_sub(info.last_cmd()) as u64);
    }
}
