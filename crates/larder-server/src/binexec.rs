//! Executing binary-protocol requests against the store.
//!
//! The binary protocol is memcached's older framing (deprecated upstream but
//! still spoken by some clients and by memcached's UDP tests). Replies echo
//! the request's raw opcode and opaque; quiet opcodes stay silent on success
//! (quiet gets: on a miss); errors are always sent. See
//! `larder_proto::binary` for the per-opcode contract this follows.

use crate::exec::After;
use crate::observe::Obs;
use crate::server::Server;
use crate::stats::{bump, WorkerStats};
use larder_proto::binary::{self, BinParsed, BinRequest, Command, Extras, Status};
use larder_proto::reply::push_u64;
use larder_store::{ArithOutcome, DeleteOutcome, Lookup, Mode, StoreResult, Time};

/// What to do with the bytes at the front of a binary connection's buffer.
pub enum BinStep<'a> {
    Run(BinRequest<'a>, usize),
    Skip { consumed: usize, swallow: usize, close: bool },
    Wait(Option<usize>),
    Close,
}

/// Answer parse errors the way memcached does; pass requests through.
pub fn triage<'a>(srv: &Server, ws: &WorkerStats, parsed: BinParsed<'a>, now: Time, out: &mut Vec<u8>) -> BinStep<'a> {
    match parsed {
        BinParsed::Request { request, consumed } => BinStep::Run(request, consumed),
        BinParsed::Incomplete { needed } => BinStep::Wait(needed),
        BinParsed::Error { response_status, opcode, opaque, consumed, swallow, close, unlink_key } => {
            if let Some(key) = unlink_key {
                // Only a set names its key here (memcached 1.6.18 crashes
                // logging a too-large binary store: see logger.rs).
                crate::logger::rejected_store(srv, key, larder_observe::watch::StoreCmd::Set, now);
                srv.store.delete(key, now);
            }
            if response_status == Status::TooLarge {
                bump(&ws.store_too_large, 1);
            }
            binary::status_only(out, opcode, response_status, opaque);
            BinStep::Skip { consumed, swallow, close }
        }
        BinParsed::Close => BinStep::Close,
    }
}

pub fn execute(srv: &Server, ws: &WorkerStats, obs: &mut Obs, req: BinRequest<'_>, now: Time, out: &mut Vec<u8>) -> After {
    let op = req.opcode;
    let quiet = op.quiet();
    let cas_arg = (req.cas != 0).then_some(req.cas);
    match op.command() {
        Command::Get | Command::Gat => {
            bump(&ws.cmd_get, 1);
            let touch = match req.extras {
                Extras::Touch { exptime } => Some(srv.clock.expiry(exptime as i64)),
                _ => None,
            };
            let cas_enabled = srv.settings.cas_enabled;
            let write = |item: &larder_store::Item<'_>| {
                let cas = if cas_enabled { item.cas } else { 0 };
                binary::get_hit(out, op, req.opaque, cas, item.flags, req.key, item.value);
                (item.value.len(), larder_store::item_bytes(req.key.len(), item.value.len(), item.flags))
            };
            let found = if srv.in_nocas_flush_second(now) {
                Lookup::Flushed
            } else {
                match touch {
                    None => srv.store.get(req.key, now, write),
                    Some(exp) => srv.store.get_and_touch(req.key, now, exp, write),
                }
            };
            crate::logger::fetched(srv, req.key, &found, |h| Some(h.0));
            let hit = matches!(found, Lookup::Hit(_));
            if let Lookup::Hit((vlen, bytes)) = found {
                obs.get(req.key, Some(vlen), now);
                if let Some(exp) = touch {
                    obs.touched(req.key, bytes, now, exp);
                }
            } else {
                obs.get(req.key, None, now);
            }
            if touch.is_some() {
                bump(&ws.cmd_touch, 1);
                bump(if hit { &ws.touch_hits } else { &ws.touch_misses }, 1);
            } else {
                bump(if hit { &ws.get_hits } else { &ws.get_misses }, 1);
            }
            if !hit && !quiet {
                binary::get_miss(out, op, req.opaque, req.key);
            }
        }
        Command::Touch => {
            bump(&ws.cmd_touch, 1);
            let exp = match req.extras {
                Extras::Touch { exptime } => srv.clock.expiry(exptime as i64),
                _ => 0,
            };
            let cas_enabled = srv.settings.cas_enabled;
            let found = srv.store.get_and_touch(req.key, now, exp, |item| {
                let bytes = larder_store::item_bytes(req.key.len(), item.value.len(), item.flags);
                (item.flags, if cas_enabled { item.cas } else { 0 }, bytes, item.value.len())
            });
            crate::logger::fetched(srv, req.key, &found, |h| Some(h.3));
            match found {
                Lookup::Hit((flags, cas, bytes, _)) => {
                    obs.touched(req.key, bytes, now, exp);
                    bump(&ws.touch_hits, 1);
                    binary::touch_hit(out, req.opaque, cas, flags);
                }
                _ => {
                    bump(&ws.touch_misses, 1);
                    binary::get_miss(out, op, req.opaque, req.key);
                }
            }
        }
        Command::Set | Command::Add | Command::Replace | Command::Append | Command::Prepend => {
            store(srv, ws, obs, &req, now, out);
        }
        Command::Delete => {
            crate::logger::fetch_first(srv, req.key, now);
            let outcome = srv.store.delete_if(req.key, now, cas_arg);
            obs.deleted(req.key, outcome == DeleteOutcome::Deleted);
            let status = match outcome {
                DeleteOutcome::Deleted => {
                    bump(&ws.delete_hits, 1);
                    Status::Success
                }
                DeleteOutcome::NotFound => {
                    bump(&ws.delete_misses, 1);
                    Status::KeyNotFound
                }
                DeleteOutcome::Exists => Status::KeyExists,
            };
            if status == Status::Success {
                if !quiet {
                    binary::success(out, op, req.opaque, 0);
                }
            } else {
                binary::status_only(out, op, status, req.opaque);
            }
        }
        Command::Increment | Command::Decrement => arith(srv, ws, obs, &req, now, out),
        Command::Quit => {
            if !quiet {
                binary::success(out, op, req.opaque, 0);
            }
            return After::Close;
        }
        Command::Flush => {
            if !srv.settings.flush_enabled {
                binary::status_only(out, op, Status::AuthError, req.opaque);
            } else {
                bump(&ws.cmd_flush, 1);
                let delay = match req.extras {
                    Extras::Flush { exptime } => exptime as i64,
                    _ => 0,
                };
                let at = if delay > 0 { srv.clock.expiry(delay).saturating_sub(1) } else { now };
                srv.flush_all(now, at);
                if !quiet {
                    binary::success(out, op, req.opaque, 0);
                }
            }
        }
        Command::Noop => binary::success(out, op, req.opaque, 0),
        Command::Version => binary::version(out, req.opaque, crate::stats::VERSION.as_bytes()),
        Command::Stat => stat(srv, &req, now, out),
    }
    After::Continue
}

fn store(srv: &Server, ws: &WorkerStats, obs: &mut Obs, req: &BinRequest<'_>, now: Time, out: &mut Vec<u8>) {
    let op = req.opcode;
    let (flags, exptime) = match req.extras {
        Extras::Store { flags, exptime } => (flags, srv.clock.expiry(exptime as i64)),
        _ => (0, 0),
    };
    let command = op.command();
    // A non-zero CAS makes set/add/replace a compare-and-swap, and
    // append/prepend conditional on it.
    let mode = match (command, req.cas) {
        (Command::Set | Command::Add | Command::Replace, c) if c != 0 => Mode::Cas(c),
        (Command::Set, _) => Mode::Set,
        (Command::Add, _) => Mode::Add,
        (Command::Replace, _) => Mode::Replace,
        (Command::Append, _) => Mode::Append,
        _ => Mode::Prepend,
    };
    let cas_check = (req.cas != 0 && matches!(mode, Mode::Append | Mode::Prepend)).then_some(req.cas);
    let prior = crate::logger::before_store(srv, req.key, now, mode);
    let result = srv.store.store_if(mode, req.key, flags, exptime, req.value, now, cas_check);
    let cmd = crate::logger::store_cmd(mode, false);
    crate::logger::after_store(srv, req.key, prior, cmd, &result, exptime, req.value.len(), now);
    if let StoreResult::Stored(_) = result {
        obs.stored(req.key, now, exptime);
    } else {
        obs.set_failed(req.key);
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
    let status = match result {
        StoreResult::Stored(cas) => {
            if !op.quiet() {
                binary::success(out, op, req.opaque, if srv.settings.cas_enabled { cas } else { 0 });
            }
            return;
        }
        StoreResult::NotStored => match mode {
            Mode::Add => Status::KeyExists,
            Mode::Replace => Status::KeyNotFound,
            _ => Status::NotStored,
        },
        StoreResult::Exists => Status::KeyExists,
        StoreResult::NotFound => Status::KeyNotFound,
        StoreResult::TooLarge => {
            bump(&ws.store_too_large, 1);
            crate::exec::forget_on_failed_set(srv, mode, req.key, now);
            Status::TooLarge
        }
        StoreResult::OutOfMemory => {
            bump(&ws.store_no_memory, 1);
            crate::exec::forget_on_failed_set(srv, mode, req.key, now);
            binary::error_message(out, op, Status::OutOfMemory, req.opaque, binary::OOM_ITEM);
            return;
        }
    };
    binary::status_only(out, op, status, req.opaque);
}

fn arith(srv: &Server, ws: &WorkerStats, obs: &mut Obs, req: &BinRequest<'_>, now: Time, out: &mut Vec<u8>) {
    let op = req.opcode;
    let incr = op.command() == Command::Increment;
    let Extras::Arith { delta, initial, exptime } = req.extras else {
        binary::status_only(out, op, Status::InvalidArguments, req.opaque);
        return;
    };
    let (hits, misses) = if incr { (&ws.incr_hits, &ws.incr_misses) } else { (&ws.decr_hits, &ws.decr_misses) };
    let cas_arg = (req.cas != 0).then_some(req.cas);
    crate::logger::fetch_first(srv, req.key, now);
    match srv.store.arith_if(req.key, now, incr, delta, cas_arg) {
        ArithOutcome::Value { value, cas, .. } => {
            obs.resized(req.key);
            bump(hits, 1);
            if !op.quiet() {
                binary::incr_result(out, op, req.opaque, cas, value);
            }
        }
        ArithOutcome::NotFound => {
            bump(misses, 1);
            let Some(initial) = initial else {
                binary::status_only(out, op, Status::KeyNotFound, req.opaque);
                return;
            };
            // Create the counter with its initial value (add semantics).
            let mut digits = Vec::with_capacity(20);
            push_u64(&mut digits, initial);
            let exp = srv.clock.expiry(exptime as i64);
            let prior = crate::logger::before_store(srv, req.key, now, Mode::Add);
            let result = srv.store.store(Mode::Add, req.key, 0, exp, &digits, now);
            let cmd = larder_observe::watch::StoreCmd::Add;
            crate::logger::after_store(srv, req.key, prior, cmd, &result, exp, digits.len(), now);
            match result {
                StoreResult::Stored(cas) => {
                    obs.stored(req.key, now, exp);
                    if !op.quiet() {
                        binary::incr_result(out, op, req.opaque, cas, initial);
                    }
                }
                StoreResult::OutOfMemory => {
                    binary::error_message(out, op, Status::OutOfMemory, req.opaque, binary::OOM_NEW_ITEM)
                }
                _ => binary::status_only(out, op, Status::NotStored, req.opaque),
            }
        }
        ArithOutcome::Exists => binary::status_only(out, op, Status::KeyExists, req.opaque),
        ArithOutcome::NonNumeric => binary::status_only(out, op, Status::NonNumeric, req.opaque),
        ArithOutcome::OutOfMemory => binary::error_message(out, op, Status::OutOfMemory, req.opaque, binary::OOM_INCR),
    }
}

/// `stat [group]`: the text report, re-framed as binary stat packets.
fn stat(srv: &Server, req: &BinRequest<'_>, now: Time, out: &mut Vec<u8>) {
    let group = req.key;
    if group.starts_with(b"reset") {
        srv.reset_stats();
        binary::stat_end(out, req.opaque);
        return;
    }
    // memcached compares the bytes after `detail` with " on", " off" and
    // " dump" as prefixes, and answers anything else "not found".
    if let Some(sub) = group.strip_prefix(b"detail") {
        if sub.starts_with(b" dump") {
            let mut dump = Vec::new();
            srv.observer.prefixes.render_detail_dump(&mut dump);
            binary::stat(out, req.opaque, b"detailed", &dump);
        } else if sub.starts_with(b" on") || sub.starts_with(b" off") {
            srv.observer.prefixes.set_detail(sub.starts_with(b" on"));
        } else {
            binary::status_only(out, req.opcode, Status::KeyNotFound, req.opaque);
            return;
        }
        binary::stat_end(out, req.opaque);
        return;
    }
    let known = [&b""[..], b"settings", b"items", b"slabs", b"sizes", b"conns", b"larder"];
    if !known.contains(&group) {
        binary::status_only(out, req.opcode, Status::KeyNotFound, req.opaque);
        return;
    }
    let mut text = Vec::new();
    crate::report::stats(srv, group, now, &mut text);
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(rest) = line.strip_prefix(b"STAT ") else { continue };
        let (name, value) = match rest.iter().position(|&b| b == b' ') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &b""[..]),
        };
        binary::stat(out, req.opaque, name, value);
    }
    binary::stat_end(out, req.opaque);
}
