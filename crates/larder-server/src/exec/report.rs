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
use crate::state::stats::{rusage, stat_f64, VERSION};
use larder_proto::reply::{self, stat_str, stat_u64};
use larder_store::Time;
use std::io::Write;

pub fn stats(srv: &Server, args: &[u8], now: Time, out: &mut Vec<u8>) {
    let mut words = args.split(|&b| b == b' ').filter(|w| !w.is_empty());
    match words.next() {
        None => general(srv, out),
        Some(b"settings") => settings(srv, out),
        Some(b"items") => items(srv, now, out),
        Some(b"slabs") => slabs(srv, out),
        Some(b"sizes") => {
            stat_str(out, "sizes_status", "disabled");
        }
        Some(b"conns") => conns(srv, now, out),
        Some(b"larder") => larder(srv, out),
        Some(b"cachedump") => {
            let args: Vec<&[u8]> = words.collect();
            cachedump(srv, &args, now, out);
            return;
        }
        Some(b"reset") => {
            srv.reset_stats();
            out.extend_from_slice(reply::RESET);
            return;
        }
        Some(b"detail") => {
            // memcached looks at the word after `detail` only.
            match words.next() {
                Some(b"dump") => srv.observer.prefixes.render_detail_dump(out),
                Some(w @ (b"on" | b"off")) => {
                    srv.observer.prefixes.set_detail(w == b"on");
                    out.extend_from_slice(reply::OK);
                }
                _ => reply::line(out, "CLIENT_ERROR usage: stats detail on|off|dump"),
            }
            return;
        }
        Some(w @ (b"prefixes" | b"hotkeys" | b"bigkeys")) if words.next().is_none() => {
            srv.observer.render_stats(&[w], srv.clock.unix_now().max(0) as u64, out);
            return;
        }
        Some(_) => {
            out.extend_from_slice(reply::ERROR);
            return;
        }
    }
    out.extend_from_slice(reply::END);
}

/// Largest `stats cachedump` reply, as memcached (2 MB, `END` included).
const CACHEDUMP_MAX: usize = 2 * 1024 * 1024;

/// `stats cachedump <class> <limit>`: memcached's checks and replies, one
/// `ITEM <key> [<value bytes> b; <unix expiry, 0 = never> s]` line per item
/// of class 1 (larder's one class; other classes are empty), at most
/// `limit` (0: as many as fit in 2 MB). memcached lists its cold LRU, newest
/// first; larder walks the shards, oldest segments first, one shard lock
/// at a time.
fn cachedump(srv: &Server, args: &[&[u8]], now: Time, out: &mut Vec<u8>) {
    if !srv.settings.dump_enabled {
        reply::line(out, "CLIENT_ERROR stats cachedump not allowed");
        return;
    }
    if args.len() < 2 {
        reply::line(out, "CLIENT_ERROR bad command line");
        return;
    }
    let number = |w: &[u8]| std::str::from_utf8(w).ok().and_then(|s| s.parse::<u32>().ok());
    let (Some(class), Some(limit)) = (number(args[0]), number(args[1])) else {
        reply::line(out, "CLIENT_ERROR bad command line format");
        return;
    };
    if class >= 64 {
        reply::line(out, "CLIENT_ERROR Illegal slab id");
        return;
    }
    let start = out.len();
    let to_unix = srv.clock.unix_now() - now as i64;
    let mut shown = 0u32;
    let mut full = false;
    let mut shard = 0;
    let mut after = 0;
    while class == 1 && !full && (limit == 0 || shown < limit) {
        let step = srv.store.for_each_item_in_shard_from(shard, now, after, 4, |key, it| {
            if full || it.key_binary || (limit != 0 && shown >= limit) {
                return;
            }
            let expiry = if it.exptime == 0 { 0 } else { (it.exptime as i64 + to_unix).max(0) };
            // Written in place; taken back if it would pass the cap.
            let before = out.len();
            out.extend_from_slice(b"ITEM ");
            out.extend_from_slice(key);
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
            None if shard + 1 < srv.store.shard_count() => (shard, after) = (shard + 1, 0),
            None => break,
        }
    }
    out.extend_from_slice(reply::END);
}

fn general(srv: &Server, out: &mut Vec<u8>) {
    let t = srv.stats.totals();
    let (total_conns, rejected) = srv.stats.conn_totals();
    let st = srv.store_stats();
    let (user, system) = rusage();
    let c = &srv.stats.conns;
    use std::sync::atomic::Ordering::Relaxed;
    // memcached 1.6.18's names in memcached's order, so exporters and
    // dashboards find what they expect. Figures of memcached subsystems that
    // larder does not have (libevent, response objects, the slab mover, the
    // LRU crawler and maintainer, the logger) are reported as what they are
    // for larder: none, zero.
    stat_u64(out, "pid", std::process::id() as u64);
    stat_u64(out, "uptime", srv.clock.uptime());
    stat_u64(out, "time", srv.clock.unix_now() as u64);
    stat_str(out, "version", VERSION);
    stat_str(out, "libevent", "none");
    stat_u64(out, "pointer_size", (std::mem::size_of::<usize>() * 8) as u64);
    stat_f64(out, "rusage_user", user);
    stat_f64(out, "rusage_system", system);
    stat_u64(out, "max_connections", srv.settings.max_connections as u64);
    stat_u64(out, "curr_connections", c.curr_connections.load(Relaxed));
    stat_u64(out, "total_connections", total_conns);
    if srv.settings.maxconns_fast {
        stat_u64(out, "rejected_connections", rejected);
    }
    stat_u64(out, "connection_structures", c.connection_structures.load(Relaxed));
    for name in ["response_obj_oom", "response_obj_count", "response_obj_bytes", "read_buf_count", "read_buf_bytes", "read_buf_bytes_free", "read_buf_oom"] {
        stat_u64(out, name, 0);
    }
    stat_u64(out, "reserved_fds", srv.reserved_fds() as u64);
    stat_u64(out, "cmd_get", t.cmd_get);
    stat_u64(out, "cmd_set", t.cmd_set);
    stat_u64(out, "cmd_flush", t.cmd_flush);
    stat_u64(out, "cmd_touch", t.cmd_touch);
    stat_u64(out, "cmd_meta", t.cmd_meta);
    stat_u64(out, "get_hits", t.get_hits);
    stat_u64(out, "get_misses", t.get_misses);
    stat_u64(out, "get_expired", t.get_expired);
    stat_u64(out, "get_flushed", t.get_flushed);
    stat_u64(out, "delete_misses", t.delete_misses);
    stat_u64(out, "delete_hits", t.delete_hits);
    stat_u64(out, "incr_misses", t.incr_misses);
    stat_u64(out, "incr_hits", t.incr_hits);
    stat_u64(out, "decr_misses", t.decr_misses);
    stat_u64(out, "decr_hits", t.decr_hits);
    stat_u64(out, "cas_misses", t.cas_misses);
    stat_u64(out, "cas_hits", t.cas_hits);
    stat_u64(out, "cas_badval", t.cas_badval);
    stat_u64(out, "touch_hits", t.touch_hits);
    stat_u64(out, "touch_misses", t.touch_misses);
    stat_u64(out, "store_too_large", t.store_too_large);
    stat_u64(out, "store_no_memory", t.store_no_memory);
    stat_u64(out, "auth_cmds", 0);
    stat_u64(out, "auth_errors", 0);
    if srv.settings.idle_timeout > 0 {
        stat_u64(out, "idle_kicks", t.idle_kicks);
    }
    stat_u64(out, "bytes_read", t.bytes_read);
    stat_u64(out, "bytes_written", t.bytes_written);
    stat_u64(out, "limit_maxbytes", st.limit_maxbytes);
    stat_u64(out, "accepting_conns", 1);
    stat_u64(out, "listen_disabled_num", 0);
    stat_u64(out, "time_in_listen_disabled_us", 0);
    stat_u64(out, "threads", srv.settings.threads as u64);
    stat_u64(out, "conn_yields", t.conn_yields);
    stat_u64(out, "hash_power_level", st.index_slots.max(1).ilog2() as u64);
    stat_u64(out, "hash_bytes", st.index_bytes);
    stat_u64(out, "hash_is_expanding", 0);
    for name in [
        "slab_reassign_rescues", "slab_reassign_chunk_rescues", "slab_reassign_evictions_nomem",
        "slab_reassign_inline_reclaim", "slab_reassign_busy_items", "slab_reassign_busy_deletes",
        "slab_reassign_running", "slabs_moved",
    ] {
        stat_u64(out, name, 0);
    }
    if srv.settings.lru_crawler {
        stat_u64(out, "lru_crawler_running", 0);
        stat_u64(out, "lru_crawler_starts", 0);
    }
    if srv.settings.lru_maintainer {
        stat_u64(out, "lru_maintainer_juggles", 0);
    }
    stat_u64(out, "malloc_fails", 0);
    let [dropped, written, skipped, sent, watchers] = srv.log.stats();
    stat_u64(out, "log_worker_dropped", dropped);
    stat_u64(out, "log_worker_written", written);
    stat_u64(out, "log_watcher_skipped", skipped);
    stat_u64(out, "log_watcher_sent", sent);
    stat_u64(out, "log_watchers", watchers);
    stat_u64(out, "unexpected_napi_ids", 0);
    stat_u64(out, "round_robin_fallback", 0);
    stat_u64(out, "bytes", st.bytes);
    stat_u64(out, "curr_items", st.curr_items);
    stat_u64(out, "total_items", st.total_items);
    // memcached's free pages waiting for a slab class: larder's spare segments.
    stat_u64(out, "slab_global_page_pool", st.segments_total.saturating_sub(st.segments_used));
    stat_u64(out, "expired_unfetched", st.expired_unfetched);
    stat_u64(out, "evicted_unfetched", st.evicted_unfetched);
    if srv.settings.lru_maintainer {
        stat_u64(out, "evicted_active", 0);
    }
    stat_u64(out, "evictions", st.evictions);
    stat_u64(out, "reclaimed", st.reclaimed);
    for name in ["crawler_reclaimed", "crawler_items_checked", "lrutail_reflocked"] {
        stat_u64(out, name, 0);
    }
    if srv.settings.lru_maintainer {
        for name in ["moves_to_cold", "moves_to_warm", "moves_within_lru", "direct_reclaims", "lru_bumps_dropped"] {
            stat_u64(out, name, 0);
        }
    }
}

/// `stats larder`: larder's own figures. Kept out of the plain `stats`
/// reply so that it has exactly memcached 1.6.18's fields (tools and
/// memcached's t/stats.t count them).
fn larder(srv: &Server, out: &mut Vec<u8>) {
    let t = srv.stats.totals();
    let st = srv.store_stats();
    stat_str(out, "larder_version", env!("CARGO_PKG_VERSION"));
    stat_u64(out, "larder_segment_size", st.segment_size);
    stat_u64(out, "larder_segments_total", st.segments_total);
    stat_u64(out, "larder_segments_used", st.segments_used);
    stat_u64(out, "larder_segments_free", st.segments_total.saturating_sub(st.segments_used));
    stat_u64(out, "larder_large_objects", st.large_objects);
    stat_u64(out, "larder_memory_used", st.memory_used);
    stat_u64(out, "larder_bytes_dead", st.bytes_dead);
    stat_u64(out, "larder_compactions", st.compactions);
    stat_u64(out, "larder_index_bytes", st.index_bytes);
    stat_u64(out, "larder_index_slots", st.index_slots);
    stat_u64(out, "larder_index_used", st.index_used);
    if srv.settings.grace.enabled() {
        stat_u64(out, "larder_grace_hits", t.grace_hits);
        stat_u64(out, "larder_grace_wins", t.grace_wins);
        stat_u64(out, "larder_grace_winner_timeouts", t.grace_winner_timeouts);
    }
    #[cfg(feature = "alloc-count")]
    stat_u64(out, "larder_allocations", crate::alloc_count::allocations());
}

fn settings(srv: &Server, out: &mut Vec<u8>) {
    let s = &srv.settings;
    let st = srv.store_stats();
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    stat_u64(out, "maxbytes", st.limit_maxbytes);
    stat_u64(out, "maxconns", s.max_connections as u64);
    // signed, as memcached prints them (-1: any free port)
    stat_str(out, "tcpport", &if s.unix_socket.is_some() { 0 } else { s.port }.to_string());
    stat_str(out, "udpport", &if s.unix_socket.is_some() { 0 } else { s.udp_port }.to_string());
    let inter = if s.listen.is_empty() { "NULL".to_string() } else { s.listen.join(",") };
    stat_str(out, "inter", &inter);
    stat_u64(out, "verbosity", srv.verbosity() as u64);
    stat_u64(out, "oldest", 0);
    stat_str(out, "evictions", if s.evictions { "on" } else { "off" });
    stat_str(out, "domain_socket", s.unix_socket.as_deref().unwrap_or("NULL"));
    stat_str(out, "umask", &format!("{:o}", s.unix_mask));
    stat_str(out, "shutdown_command", yes_no(s.enable_shutdown));
    stat_u64(out, "num_threads", s.threads as u64);
    stat_u64(out, "num_threads_per_udp", s.threads as u64);
    stat_str(out, "stat_key_prefix", &(s.prefix_delimiter as char).to_string());
    stat_str(out, "detail_enabled", yes_no(srv.observer.prefixes.detail_enabled()));
    stat_u64(out, "reqs_per_event", s.reqs_per_event as u64);
    stat_str(out, "cas_enabled", yes_no(s.cas_enabled));
    stat_u64(out, "tcp_backlog", s.backlog as u64);
    stat_str(out, "binding_protocol", s.protocol.stats_name());
    stat_str(out, "auth_enabled_sasl", "no");
    stat_str(out, "auth_enabled_ascii", "no");
    stat_u64(out, "item_size_max", s.item_size_max as u64);
    stat_str(out, "maxconns_fast", yes_no(s.maxconns_fast));
    stat_str(out, "flush_enabled", yes_no(s.flush_enabled));
    stat_str(out, "dump_enabled", yes_no(s.dump_enabled));
    stat_u64(out, "idle_timeout", s.idle_timeout as u64);
    stat_u64(out, "watcher_logbuf_size", s.watcher_logbuf_size as u64);
    stat_u64(out, "worker_logbuf_size", s.worker_logbuf_size as u64);
}

fn items(srv: &Server, now: Time, out: &mut Vec<u8>) {
    let st = srv.store_stats();
    if st.curr_items == 0 {
        return;
    }
    stat_u64(out, "items:1:number", st.curr_items);
    // memcached: seconds since the LRU tail item was last accessed. Here:
    // since the oldest live data was written (segments are evicted oldest
    // first, so it is as close to "what goes next" as the store knows).
    let age = st.oldest_born.map_or(0, |born| now.saturating_sub(born));
    stat_u64(out, "items:1:age", age as u64);
    stat_u64(out, "items:1:mem_requested", st.bytes);
    stat_u64(out, "items:1:evicted", st.evictions);
    stat_u64(out, "items:1:evicted_nonzero", st.evicted_nonzero);
    // memcached: how long the latest evicted item had gone unaccessed.
    stat_u64(out, "items:1:evicted_time", st.last_eviction.map_or(0, |(_, idle)| idle as u64));
    stat_u64(out, "items:1:outofmemory", 0);
    stat_u64(out, "items:1:tailrepairs", 0);
    stat_u64(out, "items:1:reclaimed", st.reclaimed);
    stat_u64(out, "items:1:expired_unfetched", st.expired_unfetched);
    stat_u64(out, "items:1:evicted_unfetched", st.evicted_unfetched);
    // memcached prints these whatever its LRU mode; larder has no LRU
    // crawler (expired segments are swept whole) and no tail locks: 0, as
    // in the general `stats`. The segmented-LRU fields (number_hot, ...,
    // moves_to_cold, hits_to_*) are left out, as memcached leaves them out
    // when its LRU is not segmented.
    for name in ["items:1:crawler_reclaimed", "items:1:crawler_items_checked", "items:1:lrutail_reflocked"] {
        stat_u64(out, name, 0);
    }
}

fn slabs(srv: &Server, out: &mut Vec<u8>) {
    let st = srv.store_stats();
    let t = srv.stats.totals();
    if st.segments_used > 0 {
        stat_u64(out, "1:chunk_size", st.segment_size);
        stat_u64(out, "1:chunks_per_page", 1);
        stat_u64(out, "1:total_pages", st.segments_used);
        stat_u64(out, "1:total_chunks", st.segments_used);
        stat_u64(out, "1:used_chunks", st.segments_used);
        stat_u64(out, "1:free_chunks", 0);
        stat_u64(out, "1:free_chunks_end", 0);
        stat_u64(out, "1:get_hits", t.get_hits);
        stat_u64(out, "1:cmd_set", t.cmd_set);
        stat_u64(out, "1:delete_hits", t.delete_hits);
        stat_u64(out, "1:incr_hits", t.incr_hits);
        stat_u64(out, "1:decr_hits", t.decr_hits);
        stat_u64(out, "1:cas_hits", t.cas_hits);
        stat_u64(out, "1:cas_badval", t.cas_badval);
        stat_u64(out, "1:touch_hits", t.touch_hits);
    }
    stat_u64(out, "active_slabs", if st.segments_used > 0 { 1 } else { 0 });
    // memcached: the bytes of slab pages it has malloc'd. Here: every byte
    // taken from -m (segments in use and spare, the index, large objects in
    // whole pages), which grows with the data and shrinks when a lowered
    // `cache_memlimit` lets the store hand buffers back. Pages, because
    // memcached's figure does not move when an item is replaced by one a
    // byte longer (t/issue_14.t checks that), and neither does the memory.
    stat_u64(out, "total_malloced", st.memory_used - st.large_bytes + st.large_pages_bytes);
}

fn conns(srv: &Server, now: Time, out: &mut Vec<u8>) {
    for info in srv.registry.snapshot() {
        let prefix = info.fd.to_string();
        stat_str(out, &format!("{prefix}:addr"), &info.addr);
        if let Some(l) = &info.listen_addr {
            stat_str(out, &format!("{prefix}:listen_addr"), l);
        }
        stat_str(out, &format!("{prefix}:state"), info.state().name());
        stat_u64(out, &format!("{prefix}:secs_since_last_cmd"), now.saturating_sub(info.last_cmd()) as u64);
    }
}
