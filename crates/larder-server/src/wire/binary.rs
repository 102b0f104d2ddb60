//! The binary protocol's front end.
//!
//! The binary protocol is memcached's older framing (deprecated upstream but
//! still spoken by some clients and by memcached's UDP tests). Replies echo
//! the request's raw opcode and opaque; quiet opcodes stay silent on success
//! (quiet gets: on a miss); errors are always sent. See
//! `larder_proto::binary` for the per-opcode contract this follows. Under
//! `-S` the SASL commands come here too ([`sasl`]); which requests an
//! unauthenticated connection may make is the parser's decision
//! (`binary::parse_sasl`).
//!
//! [`step`] is the binary driver: one request from the front of the input
//! to its reply.

use crate::connmem::output::Output;
use crate::exec::{self, After, Ctx};
use larder_observe::watch::StoreCmd;
use larder_proto::binary::{self, BinParsed, BinRequest, Command, Extras, ResponseHead, SaslRequest, Status};
use larder_proto::block::Input;
use larder_store::{DeleteOutcome, Mode, StoreResult, WriteOptions};
use crate::trace::watch::CloseReason;
use crate::wire::{Conversation, Step};

/// The binary driver: parse the request at the front of `input` (under
/// `-S`, as the connection's SASL state allows), run it and encode its
/// reply. The request goes from the parser's result straight to its
/// executor (as in the text driver): no intermediate enum, so no copy of
/// the request per command.
pub fn step(conv: &mut Conversation, cx: &mut Ctx<'_>, input: Input<'_>, out: &mut Output) -> Step {
    let sasl = (cx.srv.settings().sasl && !conv.datagram).then(|| conv.auth.authenticated());
    match binary::parse_input(input, &cx.srv.conns().limits, sasl) {
        BinParsed::Request { request, consumed } => {
            if !conv.begin_reply(out) {
                return Step::Overflow;
            }
            let quit = request.opcode.command() == Command::Quit;
            match execute(cx, &request, out) {
                // Same request again once released.
                After::Parked(_) => Step::Parked,
                After::Close if quit => Step::Ran { consumed, close: Some(CloseReason::Normal) },
                After::Close => Step::Ran { consumed, close: Some(CloseReason::Error) },
                _ => Step::Ran { consumed, close: None },
            }
        }
        BinParsed::Sasl { request, consumed } => {
            if !conv.begin_reply(out) {
                return Step::Overflow;
            }
            sasl_reply(cx, &mut conv.auth, &request, out);
            Step::Ran { consumed, close: None }
        }
        BinParsed::Incomplete { needed } => Step::Wait(needed),
        BinParsed::Error { response_status, opcode, opaque, consumed, swallow, close, unlink_key } => {
            let mark = out.len();
            // Only a too-large set names its key (memcached 1.6.18 crashes
            // logging a too-large binary store: see trace/watch.rs; larder
            // logs it like the text one).
            match (unlink_key, response_status) {
                (Some(key), _) => exec::store::refuse_too_large(cx, key, StoreCmd::Set),
                (None, Status::TooLarge) => crate::counters::bump(&cx.ws.store_too_large, 1),
                (None, _) => {}
            }
            binary::status_only(out, opcode, response_status, opaque);
            Step::Skipped { consumed, swallow, reply_from: mark, close }
        }
        BinParsed::Close => Step::Close,
    }
}

/// A data block the connection budget cannot hold: memcached's reply to a
/// value it cannot allocate, echoing the request's opcode and opaque (when
/// its header is all in).
pub fn refuse_block(front: &[u8], out: &mut Vec<u8>) {
    if let Some((opcode, opaque)) = binary::opcode_and_opaque(front) {
        binary::error_message(out, opcode, Status::OutOfMemory, opaque, binary::OOM_ITEM);
    }
}

fn execute(cx: &mut Ctx<'_>, req: &BinRequest<'_>, out: &mut Output) -> After {
    let op = req.opcode;
    let quiet = op.quiet();
    let cas_arg = (req.cas != 0).then_some(req.cas);
    match op.command() {
        Command::Get | Command::Gat => {
            let touch = match req.extras {
                Extras::Touch { exptime } => Some(cx.expiry(exptime as i64)),
                _ => None,
            };
            let read = exec::read::read(cx, req.key, touch, |item, cas| {
                let head = |out: &mut Output| {
                    binary::get_hit_header(out, op, req.opaque, cas, item.flags, req.key, item.value.len());
                    true
                };
                out.send_value(item, head, b"");
            });
            let hit = read == exec::read::Read::Hit;
            if read == exec::read::Read::Parked {
                // Runs again once released; its reply is begun again then.
                out.forget_responses(1);
                return After::Parked(0);
            }
            if out.take_refused() {
                binary::error_message(out, op, Status::OutOfMemory, req.opaque, b"out of memory writing get response");
            } else if !hit && !quiet {
                binary::get_miss(out, op, req.opaque, req.key);
            }
        }
        Command::Touch => {
            let exp = match req.extras {
                Extras::Touch { exptime } => cx.expiry(exptime as i64),
                _ => 0,
            };
            match exec::touch::touch(cx, req.key, exp) {
                Some(t) => binary::touch_hit(out, req.opaque, t.cas, t.flags),
                None => binary::get_miss(out, op, req.opaque, req.key),
            }
        }
        Command::Set | Command::Add | Command::Replace | Command::Append | Command::Prepend => store(cx, req, out),
        Command::Delete => match exec::delete::delete(cx, exec::delete::Via::Binary, req.key, cas_arg, None) {
            DeleteOutcome::Deleted if quiet => {}
            DeleteOutcome::Deleted => binary::success(out, op, req.opaque, 0),
            DeleteOutcome::NotFound => binary::status_only(out, op, Status::KeyNotFound, req.opaque),
            DeleteOutcome::Exists => binary::status_only(out, op, Status::KeyExists, req.opaque),
        },
        Command::Increment | Command::Decrement => arith(cx, req, out),
        Command::Quit => {
            if !quiet {
                binary::success(out, op, req.opaque, 0);
            }
            return After::Close;
        }
        Command::Flush => {
            let delay = match req.extras {
                Extras::Flush { exptime } => exptime as i64,
                _ => 0,
            };
            match exec::flush::flush_all(cx, delay) {
                Err(exec::flush::NotAllowed) => binary::status_only(out, op, Status::AuthError, req.opaque),
                Ok(()) if quiet => {}
                Ok(()) => binary::success(out, op, req.opaque, 0),
            }
        }
        Command::Noop => binary::success(out, op, req.opaque, 0),
        Command::Version => binary::version(out, req.opaque, crate::counters::VERSION.as_bytes()),
        Command::Stat => stat(cx, req, out),
    }
    After::Continue
}

/// `SASL_LIST_MECHS` / `SASL_AUTH` / `SASL_STEP`: run by `auth::sasl` for
/// the connection's `auth`, encoded as memcached does (cas 0, the request's
/// opcode and opaque).
fn sasl_reply(cx: &mut Ctx<'_>, auth: &mut crate::auth::sasl::ConnAuth, req: &SaslRequest<'_>, out: &mut Output) {
    use crate::auth::sasl::SaslReply;
    let (status, body): (Status, &[u8]) = match crate::auth::sasl::sasl(cx.srv.access().sasl, cx.srv.settings().verbose > 0, cx.ws, auth, req) {
        SaslReply::Mechanisms(list) => (Status::Success, list),
        SaslReply::Authenticated => (Status::Success, b"Authenticated"),
        SaslReply::Continue(challenge) => (Status::AuthContinue, challenge),
        SaslReply::Failed => (Status::AuthError, Status::AuthError.message()),
    };
    binary::response(out, ResponseHead::new(req.opcode, status, req.opaque, 0), &[], &[], body);
}

fn store(cx: &mut Ctx<'_>, req: &BinRequest<'_>, out: &mut Output) {
    let op = req.opcode;
    let (flags, exptime) = match req.extras {
        Extras::Store { flags, exptime } => (flags, cx.expiry(exptime as i64)),
        _ => (0, 0),
    };
    // A non-zero CAS makes set/add/replace a compare-and-swap, and
    // append/prepend conditional on it.
    let mode = match (op.command(), req.cas) {
        (Command::Set | Command::Add | Command::Replace, c) if c != 0 => Mode::Cas(c),
        (Command::Set, _) => Mode::Set,
        (Command::Add, _) => Mode::Add,
        (Command::Replace, _) => Mode::Replace,
        (Command::Append, _) => Mode::Append,
        _ => Mode::Prepend,
    };
    let cas = (req.cas != 0 && matches!(mode, Mode::Append | Mode::Prepend)).then_some(req.cas);
    let write = exec::store::Write {
        mode,
        key: req.key,
        flags,
        exptime,
        data: req.value,
        opts: WriteOptions { cas, ..WriteOptions::default() },
    };
    let status = match exec::store::store(cx, &write) {
        StoreResult::Stored(cas) => {
            if !op.quiet() {
                binary::success(out, op, req.opaque, cx.visible_cas(cas));
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
        StoreResult::TooLarge => Status::TooLarge,
        StoreResult::OutOfMemory => {
            return binary::error_message(out, op, Status::OutOfMemory, req.opaque, binary::OOM_ITEM);
        }
    };
    binary::status_only(out, op, status, req.opaque);
}

fn arith(cx: &mut Ctx<'_>, req: &BinRequest<'_>, out: &mut Output) {
    use exec::arith::Counted;
    let op = req.opcode;
    let Extras::Arith { delta, initial, exptime } = req.extras else {
        return binary::status_only(out, op, Status::InvalidArguments, req.opaque);
    };
    let a = exec::arith::Arith {
        key: req.key,
        incr: op.command() == Command::Increment,
        delta,
        cas: (req.cas != 0).then_some(req.cas),
        new_cas: None,
        touch: None,
        create: initial.map(|v| (v, cx.expiry(exptime as i64))),
        key_binary: false,
    };
    match exec::arith::arith(cx, &a) {
        Counted::Value { value, cas, .. } | Counted::Created { value, cas, .. } => {
            if !op.quiet() {
                binary::incr_result(out, op, req.opaque, cas, value);
            }
        }
        Counted::NotFound => binary::status_only(out, op, Status::KeyNotFound, req.opaque),
        Counted::Exists => binary::status_only(out, op, Status::KeyExists, req.opaque),
        Counted::NonNumeric => binary::status_only(out, op, Status::NonNumeric, req.opaque),
        Counted::OutOfMemory => binary::error_message(out, op, Status::OutOfMemory, req.opaque, binary::OOM_INCR),
        Counted::CreateOutOfMemory => {
            binary::error_message(out, op, Status::OutOfMemory, req.opaque, binary::OOM_NEW_ITEM)
        }
        Counted::CreateNotStored => binary::status_only(out, op, Status::NotStored, req.opaque),
    }
}

/// `stat [group]`: the text report, re-framed as binary stat packets.
fn stat(cx: &mut Ctx<'_>, req: &BinRequest<'_>, out: &mut Output) {
    let srv = cx.srv;
    let group = req.key;
    if group.starts_with(b"reset") {
        exec::admin::reset_stats(cx);
        binary::stat_end(out, req.opaque);
        return;
    }
    // memcached compares the bytes after `detail` with " on", " off" and
    // " dump" as prefixes, and answers anything else "not found".
    if let Some(sub) = group.strip_prefix(b"detail") {
        if sub.starts_with(b" dump") {
            let mut dump = Vec::new();
            srv.insight().observer.prefixes.render_detail_dump(&mut dump);
            binary::stat(out, req.opaque, b"detailed", &dump);
        } else if sub.starts_with(b" on") || sub.starts_with(b" off") {
            srv.insight().observer.prefixes.set_detail(sub.starts_with(b" on"));
        } else {
            binary::status_only(out, req.opcode, Status::KeyNotFound, req.opaque);
            return;
        }
        binary::stat_end(out, req.opaque);
        return;
    }
    let word = (!group.is_empty()).then_some(group);
    let Some(group) = crate::exec::report::Group::named(word) else {
        binary::status_only(out, req.opcode, Status::KeyNotFound, req.opaque);
        return;
    };
    crate::exec::report::snapshot(srv, group, cx.now)
        .for_each_text(|name, value| binary::stat(out, req.opaque, name.as_bytes(), value));
    binary::stat_end(out, req.opaque);
}
