//! Executing one parsed text-protocol request against the store.
//!
//! This is where protocol meets storage: a [`Request`] borrowed from the read
//! buffer is carried out on [`Store`](larder_store::Store) and its reply
//! encoded straight into the connection's write buffer. Nothing here
//! allocates on the paths of get/set/delete/incr/touch.

use crate::observe::Obs;
use crate::server::Server;
use crate::stats::{bump, WorkerStats};
use larder_proto::{reply, text, Parsed, Request, StoreCommand};
use larder_store::{ArithResult, Lookup, Mode, StoreResult, Time};

/// What the connection should do after a request.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    Continue,
    /// `quit`, or an error after which memcached closes the connection.
    Close,
}

/// Execute `req`, appending its reply (if any) to `out`.
pub fn execute(srv: &Server, ws: &WorkerStats, obs: &mut Obs, req: Request<'_>, now: Time, out: &mut Vec<u8>) -> After {
    match req {
        Request::Get { keys, cas } => {
            for key in keys {
                get_one(srv, ws, obs, key, now, cas, None, out);
            }
            out.extend_from_slice(reply::END);
        }
        Request::Gat { exptime, keys, cas } => {
            let exp = srv.clock.expiry(exptime);
            for key in keys {
                get_one(srv, ws, obs, key, now, cas, Some(exp), out);
            }
            out.extend_from_slice(reply::END);
        }
        Request::Store { command, key, flags, exptime, data, noreply } => {
            let exp = srv.clock.expiry(exptime);
            let line = store(srv, ws, obs, command, key, flags, exp, data, now);
            if !noreply {
                out.extend_from_slice(line);
            }
        }
        Request::Delete { key, noreply } => {
            srv.note_write(key);
            crate::logger::fetch_first(srv, key, now);
            let removed = srv.store.delete(key, now);
            obs.deleted(key, removed);
            let line = if removed {
                bump(&ws.delete_hits, 1);
                reply::DELETED
            } else {
                bump(&ws.delete_misses, 1);
                reply::NOT_FOUND
            };
            if !noreply {
                out.extend_from_slice(line);
            }
        }
        Request::Arith { key, incr, delta, noreply } => {
            let (hits, misses) = if incr { (&ws.incr_hits, &ws.incr_misses) } else { (&ws.decr_hits, &ws.decr_misses) };
            crate::logger::fetch_first(srv, key, now);
            let result = srv.store.arith(key, now, incr, delta);
            if let ArithResult::Value(_) = result {
                obs.resized(key);
            }
            if noreply {
                // Count, but say nothing.
                if let ArithResult::Value(_) = result { bump(hits, 1) } else if result == ArithResult::NotFound { bump(misses, 1) }
                return After::Continue;
            }
            match result {
                ArithResult::Value(v) => {
                    bump(hits, 1);
                    reply::number(out, v);
                }
                ArithResult::NotFound => {
                    bump(misses, 1);
                    out.extend_from_slice(reply::NOT_FOUND);
                }
                ArithResult::NonNumeric => {
                    reply::line(out, "CLIENT_ERROR cannot increment or decrement non-numeric value")
                }
                ArithResult::OutOfMemory => reply::line(out, "SERVER_ERROR out of memory"),
            }
        }
        Request::Touch { key, exptime, noreply } => {
            bump(&ws.cmd_touch, 1);
            let exp = srv.clock.expiry(exptime);
            let found = srv.store.get_and_touch(key, now, exp, |item| {
                (larder_store::item_bytes(key.len(), item.value.len(), item.flags), item.value.len())
            });
            crate::logger::fetched(srv, key, &found, |h| Some(h.1));
            let line = if let Lookup::Hit((bytes, _)) = found {
                obs.touched(key, bytes, now, exp);
                bump(&ws.touch_hits, 1);
                reply::TOUCHED
            } else {
                bump(&ws.touch_misses, 1);
                reply::NOT_FOUND
            };
            if !noreply {
                out.extend_from_slice(line);
            }
        }
        Request::FlushAll { delay, noreply } => {
            if !srv.settings.flush_enabled {
                // memcached refuses even under noreply.
                reply::line(out, "CLIENT_ERROR flush_all not allowed");
                return After::Continue;
            }
            bump(&ws.cmd_flush, 1);
            // memcached: with a delay, items stored up to one second before
            // the deadline are invalid once it passes.
            let at = if delay > 0 { srv.clock.expiry(delay).saturating_sub(1) } else { now };
            srv.flush_all(now, at);
            if !noreply {
                out.extend_from_slice(reply::OK);
            }
        }
        Request::Version => {
            out.extend_from_slice(b"VERSION ");
            out.extend_from_slice(crate::stats::VERSION.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        Request::Verbosity { level, noreply } => {
            srv.set_verbosity(level);
            if !noreply {
                out.extend_from_slice(reply::OK);
            }
        }
        Request::Quit => return After::Close,
        Request::Stats { args } => crate::report::stats(srv, args, now, out),
        Request::Shutdown { graceful: _ } => {
            if !srv.settings.enable_shutdown {
                reply::line(out, "ERROR: shutdown not enabled");
            } else {
                srv.request_shutdown();
                return After::Close;
            }
        }
        Request::CacheMemlimit { megabytes, noreply } => {
            if megabytes < 8 {
                reply::line(out, "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m");
            } else if megabytes > 1_000_000_000 {
                reply::line(out, "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes");
            } else {
                let line = match srv.store.set_memory_limit((megabytes as usize) << 20) {
                    Ok(()) => reply::OK,
                    Err(_) => b"SERVER_ERROR cannot change memory limit\r\n".as_slice(),
                };
                if !noreply {
                    out.extend_from_slice(line);
                }
            }
        }
        Request::DebugTime { offset } => {
            if srv.settings.debug_time {
                srv.clock.shift(offset);
                out.extend_from_slice(reply::OK);
            } else {
                out.extend_from_slice(reply::ERROR);
            }
        }
        Request::Meta(meta) => crate::metaexec::execute(srv, ws, obs, &meta, now, out),
        #[allow(unreachable_patterns)]
        _ => out.extend_from_slice(reply::ERROR),
    }
    After::Continue
}

/// One key of a get/gets/gat/gats.
#[allow(clippy::too_many_arguments)]
fn get_one(srv: &Server, ws: &WorkerStats, obs: &mut Obs, key: &[u8], now: Time, cas: bool, touch: Option<Time>, out: &mut Vec<u8>) {
    bump(&ws.cmd_get, 1);
    let cas_enabled = srv.settings.cas_enabled;
    // Returns (value length, item bytes) for the observer.
    let write = |item: &larder_store::Item<'_>| {
        let cas_value = if cas_enabled { item.cas } else { 0 };
        reply::value(out, key, item.flags, item.value, cas.then_some(cas_value));
        (item.value.len(), larder_store::item_bytes(key.len(), item.value.len(), item.flags))
    };
    let grace = if touch.is_none() { srv.settings.grace.for_key(key) } else { 0 };
    let found = if srv.in_nocas_flush_second(now) {
        Lookup::Flushed
    } else if grace > 0 {
        graced_get(srv, ws, key, now, grace, cas, out)
    } else {
        match touch {
            None => srv.store.get(key, now, write),
            Some(exp) => srv.store.get_and_touch(key, now, exp, write),
        }
    };
    crate::logger::fetched(srv, key, &found, |h| Some(h.0));
    if let Lookup::Hit((vlen, bytes)) = found {
        obs.get(key, Some(vlen), now);
        if let Some(exp) = touch {
            obs.touched(key, bytes, now, exp);
        }
    } else {
        obs.get(key, None, now);
    }
    match (found, touch.is_some()) {
        (Lookup::Hit(_), false) => bump(&ws.get_hits, 1),
        (Lookup::Hit(_), true) => {
            bump(&ws.cmd_touch, 1);
            bump(&ws.touch_hits, 1);
        }
        (miss, false) => {
            bump(&ws.get_misses, 1);
            match miss {
                Lookup::Expired => bump(&ws.get_expired, 1),
                Lookup::Flushed => bump(&ws.get_flushed, 1),
                _ => {}
            }
        }
        (_, true) => {
            bump(&ws.cmd_touch, 1);
            bump(&ws.touch_misses, 1);
        }
    }
}

/// A get under grace mode: an expired value in grace is served, except to
/// the one getter chosen to refill it, who is told it missed.
fn graced_get(srv: &Server, ws: &WorkerStats, key: &[u8], now: Time, grace: Time, cas: bool, out: &mut Vec<u8>) -> Lookup<(usize, u64)> {
    let cas_enabled = srv.settings.cas_enabled;
    let mark = out.len();
    let found = srv.store.get_graced(key, now, grace, |item| {
        let cas_value = if cas_enabled { item.cas } else { 0 };
        reply::value(out, key, item.flags, item.value, cas.then_some(cas_value));
        (item.value.len(), larder_store::item_bytes(key.len(), item.value.len(), item.flags))
    });
    match found {
        Lookup::Hit((sizes, false)) => Lookup::Hit(sizes),
        Lookup::Hit((sizes, true)) => match srv.winners.on_stale_read(key, now, srv.settings.grace.lease) {
            crate::grace::Verdict::Serve => {
                bump(&ws.grace_hits, 1);
                Lookup::Hit(sizes)
            }
            verdict => {
                // This getter refills: withdraw the value written above.
                out.truncate(mark);
                bump(&ws.grace_wins, 1);
                if verdict == crate::grace::Verdict::WinAfterTimeout {
                    bump(&ws.grace_winner_timeouts, 1);
                }
                Lookup::Expired
            }
        },
        Lookup::Miss => Lookup::Miss,
        Lookup::Expired => Lookup::Expired,
        Lookup::Flushed => Lookup::Flushed,
    }
}

/// A storage command; returns the reply line.
#[allow(clippy::too_many_arguments)]
fn store(
    srv: &Server,
    ws: &WorkerStats,
    obs: &mut Obs,
    command: StoreCommand,
    key: &[u8],
    flags: u32,
    exptime: Time,
    data: &[u8],
    now: Time,
) -> &'static [u8] {
    let mode = match command {
        StoreCommand::Set => Mode::Set,
        StoreCommand::Add => Mode::Add,
        StoreCommand::Replace => Mode::Replace,
        StoreCommand::Append => Mode::Append,
        StoreCommand::Prepend => Mode::Prepend,
        StoreCommand::Cas(unique) => Mode::Cas(unique),
    };
    let prior = crate::logger::before_store(srv, key, now, mode);
    let result = srv.store.store(mode, key, flags, exptime, data, now);
    crate::logger::after_store(srv, key, prior, crate::logger::store_cmd(mode, false), &result, exptime, data.len(), now);
    if let StoreResult::Stored(_) = result {
        srv.note_write(key);
        obs.stored(key, now, exptime);
    } else {
        obs.set_failed(key);
    }
    if !matches!(result, StoreResult::TooLarge | StoreResult::OutOfMemory) {
        bump(&ws.cmd_set, 1);
    }
    if let Mode::Cas(_) = mode {
        match result {
            StoreResult::Stored(_) => bump(&ws.cas_hits, 1),
            StoreResult::Exists => bump(&ws.cas_badval, 1),
            StoreResult::NotFound => bump(&ws.cas_misses, 1),
            _ => {}
        }
    }
    match result {
        StoreResult::Stored(_) => reply::STORED,
        StoreResult::NotStored => reply::NOT_STORED,
        StoreResult::Exists => reply::EXISTS,
        StoreResult::NotFound => reply::NOT_FOUND,
        StoreResult::TooLarge => {
            bump(&ws.store_too_large, 1);
            forget_on_failed_set(srv, mode, key, now);
            b"SERVER_ERROR object too large for cache\r\n"
        }
        StoreResult::OutOfMemory => {
            bump(&ws.store_no_memory, 1);
            forget_on_failed_set(srv, mode, key, now);
            b"SERVER_ERROR out of memory storing object\r\n"
        }
    }
}

/// memcached drops the old value when a `set` fails for lack of room, so a
/// client never reads back data it just tried to overwrite.
pub fn forget_on_failed_set(srv: &Server, mode: Mode, key: &[u8], now: Time) {
    if mode == Mode::Set {
        // reported to the departure hook (per-prefix bytes stay exact)
        srv.store.drop_after_failed_set(key, now);
    }
}

/// What to do with the bytes at the front of a buffer after parsing.
pub enum Step<'a> {
    /// Execute this request, then drop `consumed` bytes.
    Run(Request<'a>, usize),
    /// A rejected request already answered: drop `consumed`, then discard
    /// `swallow` more bytes as they arrive.
    Skip { consumed: usize, swallow: usize },
    /// Wait for more bytes (`needed`: total the buffer must hold, if known).
    Wait(Option<usize>),
    Close,
}

/// Turn a parse outcome into a [`Step`], answering rejected requests the way
/// memcached does (including what it does for a too-large `set`).
pub fn triage<'a>(srv: &Server, ws: &WorkerStats, parsed: Parsed<'a>, now: Time, out: &mut Vec<u8>) -> Step<'a> {
    match parsed {
        Parsed::Request { request, consumed } => Step::Run(request, consumed),
        Parsed::Incomplete { needed } => Step::Wait(needed),
        Parsed::Error { error, consumed, swallow } => {
            // memcached without -A refuses every shutdown line the same way.
            let error = if error == text::INVALID_SHUTDOWN && !srv.settings.enable_shutdown {
                "ERROR: shutdown not enabled"
            } else {
                error
            };
            reply::line(out, error);
            Step::Skip { consumed, swallow }
        }
        Parsed::Silent { consumed, swallow } => Step::Skip { consumed, swallow },
        Parsed::TooLarge { command, key, noreply, consumed, swallow } => {
            bump(&ws.store_too_large, 1);
            crate::logger::rejected_store(srv, key, crate::logger::text_cmd(command), now);
            if command == StoreCommand::Set {
                forget_on_failed_set(srv, Mode::Set, key, now);
            }
            if !noreply {
                reply::line(out, text::TOO_LARGE);
            }
            Step::Skip { consumed, swallow }
        }
        Parsed::Close => Step::Close,
    }
}
