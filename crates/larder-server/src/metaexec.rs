//! Executing meta-protocol requests (`mg ms md ma mn me`) against the store.
//!
//! Parsing and reply encoding live in `larder_proto::meta`; the store
//! decides winners, staleness and CAS under its shard lock
//! (`Store::meta_get`, `invalidate`, `meta_store`, `arith_meta`). This module
//! maps one onto the other and keeps the counters.

use crate::observe::Obs;
use crate::server::Server;
use crate::stats::{bump, WorkerStats};
use larder_proto::meta::{self, MaItem, MaOutcome, MeItem, MetaCommand, MetaRequest, MetaStatus, MgItem};
use larder_proto::{reply, StoreCommand};
use larder_store::{ArithOutcome, DeleteOutcome, Lookup, MetaGet, Mode, StoreResult, Time, WriteOptions};

pub fn execute(srv: &Server, ws: &WorkerStats, obs: &mut Obs, req: &MetaRequest<'_>, now: Time, out: &mut Vec<u8>) {
    bump(&ws.cmd_meta, 1);
    match req.command {
        MetaCommand::Get => get(srv, ws, obs, req, now, out),
        MetaCommand::Set => set(srv, ws, obs, req, now, out),
        MetaCommand::Delete => delete(srv, ws, obs, req, now, out),
        MetaCommand::Arith => arith(srv, ws, obs, req, now, out),
        MetaCommand::Noop => meta::mn(out),
        MetaCommand::Debug => debug(srv, req, now, out),
    }
}

/// Seconds left before `exptime` (`None`: never expires).
fn ttl(exptime: Time, now: Time) -> Option<i64> {
    (exptime != 0).then(|| exptime as i64 - now as i64)
}

fn get(srv: &Server, ws: &WorkerStats, obs: &mut Obs, req: &MetaRequest<'_>, now: Time, out: &mut Vec<u8>) {
    let f = &req.flags;
    let opts = MetaGet {
        bump: !f.has(b'u'),
        touch: f.ttl.map(|t| srv.clock.expiry(t as i64)),
        vivify: f.vivify_ttl.map(|t| srv.clock.expiry(t as i64)),
        recache_before: f.recache_ttl.map(|t| srv.clock.expiry(t as i64)),
        key_binary: req.key_binary(),
        new_cas: f.new_cas,
    };
    bump(&ws.cmd_get, 1);
    if opts.touch.is_some() {
        bump(&ws.cmd_touch, 1);
    }
    let cas_enabled = srv.settings.cas_enabled;
    let found = srv.store.meta_get(req.key(), now, &opts, |m| {
        let item = MgItem {
            value: m.item.value,
            client_flags: m.item.flags,
            cas: if cas_enabled { m.item.cas } else { 0 },
            ttl: if m.created { None } else { ttl(m.exptime_before, now) },
            ttl_after: ttl(m.item.exptime, now),
            last_access: m.last_access as u64,
            fetched: m.fetched_before,
            // memcached echoes a hit's key as the item stored it.
            key_binary: m.key_binary,
            created: m.created,
            token_sent: m.token_sent_before,
            stale: m.stale,
            won: m.won,
        };
        meta::mg_hit(out, req, &item);
        (m.created, m.item.value.len(), m.size)
    });
    // A vivified item (N) was a miss.
    crate::logger::fetched(srv, req.key(), &found, |h| (!h.0).then_some(h.1));
    match found {
        Lookup::Hit((created, vlen, bytes)) => {
            if created {
                // Vivified on miss (N): a miss, and a new item.
                obs.get(req.key(), None, now);
                obs.created(req.key(), bytes, now, opts.vivify.unwrap_or(0));
            } else {
                obs.get(req.key(), Some(vlen), now);
                if let Some(exp) = opts.touch {
                    obs.touched(req.key(), bytes, now, exp);
                }
            }
            if created {
                bump(&ws.get_misses, 1);
            } else {
                bump(&ws.get_hits, 1);
                if opts.touch.is_some() {
                    bump(&ws.touch_hits, 1);
                }
            }
        }
        miss => {
            obs.get(req.key(), None, now);
            bump(&ws.get_misses, 1);
            match miss {
                Lookup::Expired => bump(&ws.get_expired, 1),
                Lookup::Flushed => bump(&ws.get_flushed, 1),
                _ => {}
            }
            if opts.touch.is_some() {
                bump(&ws.touch_misses, 1);
            }
            meta::mg_miss(out, req);
        }
    }
}

fn set(srv: &Server, ws: &WorkerStats, obs: &mut Obs, req: &MetaRequest<'_>, now: Time, out: &mut Vec<u8>) {
    let f = &req.flags;
    let exptime = f.ttl.map_or(0, |t| srv.clock.expiry(t as i64));
    let invalidate = f.has(b'I');
    // memcached: C makes set/replace a CAS store; append/prepend compare the
    // CAS themselves; add ignores it. With I, an older CAS stores stale.
    let (mode, cas) = match req.store_mode() {
        StoreCommand::Cas(c) if invalidate => (Mode::Set, Some(c)),
        StoreCommand::Cas(c) => (Mode::Cas(c), None),
        StoreCommand::Set => (Mode::Set, None),
        StoreCommand::Add => (Mode::Add, None),
        StoreCommand::Replace => (Mode::Replace, None),
        StoreCommand::Append => (Mode::Append, f.cas),
        StoreCommand::Prepend => (Mode::Prepend, f.cas),
    };
    let key = req.key();
    let prior = crate::logger::before_store(srv, key, now, mode);
    let result =
        srv.store.meta_store(mode, key, f.client_flags, exptime, req.data, now, &WriteOptions {
            cas,
            stale_if_older: invalidate,
            key_binary: req.key_binary(),
            new_cas: f.new_cas,
        });
    let cmd = crate::logger::store_cmd(mode, cas.is_some());
    crate::logger::after_store(srv, key, prior, cmd, &result, exptime, req.data.len(), now);
    bump(&ws.cmd_set, 1);
    if let StoreResult::Stored(_) = result {
        obs.stored(key, now, exptime);
    } else {
        obs.set_failed(key);
    }
    if f.cas.is_some() {
        match result {
            StoreResult::Stored(_) => bump(&ws.cas_hits, 1),
            StoreResult::Exists => bump(&ws.cas_badval, 1),
            StoreResult::NotFound => bump(&ws.cas_misses, 1),
            _ => {}
        }
    }
    let (status, cas) = match result {
        StoreResult::Stored(cas) => {
            srv.note_write(key);
            (MetaStatus::Hd, if srv.settings.cas_enabled { cas } else { 0 })
        }
        StoreResult::NotStored => (MetaStatus::Ns, 0),
        StoreResult::Exists => (MetaStatus::Ex, 0),
        StoreResult::NotFound => (MetaStatus::Nf, 0),
        StoreResult::TooLarge => {
            bump(&ws.store_too_large, 1);
            reply::line(out, larder_proto::text::TOO_LARGE);
            return;
        }
        StoreResult::OutOfMemory => {
            bump(&ws.store_no_memory, 1);
            crate::exec::forget_on_failed_set(srv, Mode::Set, key, now);
            reply::line(out, "SERVER_ERROR out of memory storing object");
            return;
        }
    };
    meta::ms(out, req, status, cas);
}

fn delete(srv: &Server, ws: &WorkerStats, obs: &mut Obs, req: &MetaRequest<'_>, now: Time, out: &mut Vec<u8>) {
    let f = &req.flags;
    let key = req.key();
    let invalidate = f.has(b'I');
    crate::logger::fetch_first(srv, key, now);
    let outcome = if invalidate {
        srv.store.invalidate(key, now, f.cas, f.ttl.map(|t| srv.clock.expiry(t as i64)), f.new_cas)
    } else {
        srv.store.delete_if(key, now, f.cas)
    };
    // md I marks the item stale and keeps it, as a copy in a new place
    // (which may store its CAS): not a removal, maybe a resize.
    if invalidate && outcome == DeleteOutcome::Deleted {
        obs.resized(key);
    }
    obs.deleted(key, outcome == DeleteOutcome::Deleted && !invalidate);
    let status = match outcome {
        DeleteOutcome::Deleted => {
            srv.note_write(key);
            bump(&ws.delete_hits, 1);
            MetaStatus::Hd
        }
        DeleteOutcome::NotFound => {
            bump(&ws.delete_misses, 1);
            MetaStatus::Nf
        }
        DeleteOutcome::Exists => {
            bump(&ws.delete_misses, 1);
            MetaStatus::Ex
        }
    };
    meta::md(out, req, status);
}

fn arith(srv: &Server, ws: &WorkerStats, obs: &mut Obs, req: &MetaRequest<'_>, now: Time, out: &mut Vec<u8>) {
    let f = &req.flags;
    let incr = req.incr();
    let key = req.key();
    let (hits, misses) = if incr { (&ws.incr_hits, &ws.incr_misses) } else { (&ws.decr_hits, &ws.decr_misses) };
    crate::logger::fetch_first(srv, key, now);
    let outcome = match srv.store.arith_meta(key, now, incr, f.delta, f.cas, f.new_cas) {
        ArithOutcome::Value { value, cas, exptime } => {
            obs.resized(key);
            bump(hits, 1);
            let mut after = exptime;
            if let Some(t) = f.ttl {
                after = srv.clock.expiry(t as i64);
                srv.store.touch(key, now, after);
            }
            srv.note_write(key);
            MaOutcome::Item(MaItem { value, cas, ttl: ttl(exptime, now), ttl_after: ttl(after, now), created: false })
        }
        ArithOutcome::NotFound => {
            bump(misses, 1);
            match f.vivify_ttl {
                None => MaOutcome::NotFound,
                Some(t) => {
                    let exptime = srv.clock.expiry(t as i64);
                    let mut digits = [0u8; 20];
                    let text = decimal(f.initial, &mut digits);
                    let opts = WriteOptions { new_cas: f.new_cas, key_binary: req.key_binary(), ..WriteOptions::default() };
                    let prior = crate::logger::before_store(srv, key, now, Mode::Add);
                    let result = srv.store.meta_store(Mode::Add, key, 0, exptime, text, now, &opts);
                    let cmd = larder_observe::watch::StoreCmd::Add;
                    crate::logger::after_store(srv, key, prior, cmd, &result, exptime, text.len(), now);
                    match result {
                        StoreResult::Stored(cas) => MaOutcome::Item({
                            obs.stored(key, now, exptime);
                            MaItem {
                            value: f.initial,
                            cas,
                            ttl: None,
                            ttl_after: ttl(exptime, now),
                            created: true,
                            }
                        }),
                        StoreResult::OutOfMemory => {
                            reply::line(out, "SERVER_ERROR Out of memory allocating new item");
                            return;
                        }
                        _ => MaOutcome::NotStored,
                    }
                }
            }
        }
        ArithOutcome::Exists => MaOutcome::Exists,
        ArithOutcome::NonNumeric => {
            reply::line(out, meta::NON_NUMERIC);
            return;
        }
        ArithOutcome::OutOfMemory => {
            reply::line(out, "SERVER_ERROR out of memory");
            return;
        }
    };
    meta::ma(out, req, &outcome);
}

/// `me <key>`: what the store knows about one item.
fn debug(srv: &Server, req: &MetaRequest<'_>, now: Time, out: &mut Vec<u8>) {
    let key = req.key();
    let opts = MetaGet { bump: false, ..MetaGet::default() };
    let found = srv.store.meta_get(key, now, &opts, |m| {
        let item = MeItem {
            ttl: ttl(m.item.exptime, now),
            last_access: m.last_access as u64,
            cas: m.item.cas,
            fetched: m.fetched_before,
            class: 1,
            size: larder_proto::text::item_size(key.len(), m.item.flags, m.item.value.len()) as u64,
            key_binary: m.key_binary,
        };
        meta::me(out, key, &item);
        m.item.value.len()
    });
    crate::logger::fetched(srv, key, &found, |n| Some(*n));
    if !matches!(found, Lookup::Hit(_)) {
        meta::me_miss(out);
    }
}

/// `n` in decimal, in `buf`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}
