//! The text driver: memcached's ASCII protocol, with the meta commands on
//! the same connections ([`crate::wire::meta`]): parse outcomes to executor
//! calls, and outcomes to memcached's reply lines.
//!
//! Two commands take the connection over and are started here, not by an
//! executor: `lru_crawler metadump` (streamed by [`crate::wire::metadump`])
//! and `watch`, which ends the session: once the logger accepts the
//! watcher, the worker hands the socket to the logger thread (see
//! `trace/watch.rs`) and anything pipelined behind the command is dropped,
//! as memcached ignores it.

use crate::connmem::output::Output;
use crate::exec::{self, After, Ctx};
use larder_proto::{reply, text, AdminCommand, Parsed, Request, StoreCommand};
use larder_store::{DeleteOutcome, Mode, StoreResult, WriteOptions};
use crate::trace::watch::{CloseReason, Reserved};
use crate::wire::{metadump, Conversation, Step};
use larder_proto::block::Input;

/// The text driver: parse the request at the front of `input`, run it and
/// encode its reply. `pipelined`: earlier replies are still unsent.
pub fn step(conv: &mut Conversation, cx: &mut Ctx<'_>, input: Input<'_>, out: &mut Output, pipelined: bool) -> Step {
    // memcached flushes every reply after `mn`: nothing before it is
    // pipelined as far as metadump and watch are concerned.
    let pipelined = pipelined && !conv.after_mn;
    // The request goes from the parser's result straight to its executor:
    // it is a few hundred bytes (a meta request carries its decoded key),
    // and every extra hop through another enum is a copy per request.
    let (request, consumed) = match text::parse_input(input, &cx.srv.conns().limits) {
        Parsed::Request { request, consumed } => (request, consumed),
        refused => {
            let step = refuse(cx, refused, out);
            if matches!(step, Step::Skipped { .. }) {
                conv.after_mn = false;
            }
            return step;
        }
    };
    match request {
        Request::Admin { command: AdminCommand::LruCrawler, args, .. } if !conv.datagram && dump_kind(args).is_some() => {
            let words: Vec<&[u8]> = args.split(|&b| b == b' ').filter(|w| !w.is_empty()).skip(1).collect();
            let kind = dump_kind(args).unwrap_or(metadump::Kind::Meta);
            conv.dump = metadump::start(cx.srv, kind, &words, pipelined, &mut out.buf);
            conv.after_mn = false;
            Step::Ran { consumed, close: None }
        }
        Request::Admin { command: AdminCommand::Watch, args, .. } if !conv.datagram => {
            conv.after_mn = false;
            match watch_start(cx.srv, args, pipelined, &mut out.buf) {
                Some(reserved) => Step::Watch { consumed, reserved },
                None => Step::Ran { consumed, close: None },
            }
        }
        Request::Admin { command: AdminCommand::Track, args, .. } if !conv.datagram => {
            crate::wire::track::command(conv, cx, args, consumed, out)
        }
        request => {
            if conv.resume == 0 && !conv.begin_reply(out) {
                return Step::Overflow;
            }
            let quit = matches!(request, Request::Quit);
            let mn = matches!(&request, Request::Meta(m) if m.command == larder_proto::MetaCommand::Noop);
            match execute(cx, request, out, conv.resume) {
                After::Paused(done) => {
                    // Same request again once the output drains.
                    conv.resume = done;
                    Step::Paused
                }
                After::Parked(at) => {
                    // Same request again, from that key, once released.
                    conv.resume = at;
                    Step::Parked
                }
                after => {
                    conv.resume = 0;
                    conv.after_mn = mn;
                    let close = match after {
                        After::Close if quit => Some(CloseReason::Normal),
                        After::Close => Some(CloseReason::Error),
                        _ => None,
                    };
                    Step::Ran { consumed, close }
                }
            }
        }
    }
}

/// `lru_crawler metadump ...` or `lru_crawler mgdump ...`: which dump.
fn dump_kind(args: &[u8]) -> Option<metadump::Kind> {
    match args.split(|&b| b == b' ').next() {
        Some(b"metadump") => Some(metadump::Kind::Meta),
        Some(b"mgdump") => Some(metadump::Kind::Mg),
        _ => None,
    }
}


/// Execute `req`, appending its reply (if any) to `out`. `resume`: keys of
/// a multi-key get already answered before it paused ([`After::Paused`]).
fn execute(cx: &mut Ctx<'_>, req: Request<'_>, out: &mut Output, resume: usize) -> After {
    match req {
        Request::Get { keys, cas } => return get_many(cx, keys, cas, None, out, resume),
        Request::Gat { exptime, keys, cas } => {
            let exp = cx.expiry(exptime);
            return get_many(cx, keys, cas, Some(exp), out, resume);
        }
        Request::Store { command, key, flags, exptime, data, noreply } => {
            let mode = match command {
                StoreCommand::Set => Mode::Set,
                StoreCommand::Add => Mode::Add,
                StoreCommand::Replace => Mode::Replace,
                StoreCommand::Append => Mode::Append,
                StoreCommand::Prepend => Mode::Prepend,
                StoreCommand::Cas(unique) => Mode::Cas(unique),
            };
            let write =
                exec::store::Write { mode, key, flags, exptime: cx.expiry(exptime), data, opts: WriteOptions::default() };
            let line = match exec::store::store(cx, &write) {
                StoreResult::Stored(_) => reply::STORED,
                StoreResult::NotStored => reply::NOT_STORED,
                StoreResult::Exists => reply::EXISTS,
                StoreResult::NotFound => reply::NOT_FOUND,
                StoreResult::TooLarge => reply::TOO_LARGE_LINE,
                StoreResult::OutOfMemory => reply::OUT_OF_MEMORY_STORING_LINE,
            };
            if !noreply {
                out.extend_from_slice(line);
            }
        }
        Request::Delete { key, noreply } => {
            let line = match exec::delete::delete(cx, exec::delete::Via::Text, key, None, None) {
                DeleteOutcome::Deleted => reply::DELETED,
                _ => reply::NOT_FOUND,
            };
            if !noreply {
                out.extend_from_slice(line);
            }
        }
        Request::Arith { key, incr, delta, noreply } => {
            let a = exec::arith::Arith {
                key,
                incr,
                delta,
                cas: None,
                new_cas: None,
                touch: None,
                create: None,
                key_binary: false,
            };
            let outcome = exec::arith::arith(cx, &a);
            if !noreply {
                arith_reply(outcome, out);
            }
        }
        Request::Touch { key, exptime, noreply } => {
            let exp = cx.expiry(exptime);
            let line = if exec::touch::touch(cx, key, exp).is_some() { reply::TOUCHED } else { reply::NOT_FOUND };
            if !noreply {
                out.extend_from_slice(line);
            }
        }
        Request::FlushAll { delay, noreply } => match exec::flush::flush_all(cx, delay) {
            // memcached refuses even under noreply.
            Err(exec::flush::NotAllowed) => reply::line(out, reply::FLUSH_ALL_NOT_ALLOWED),
            Ok(()) if !noreply => out.extend_from_slice(reply::OK),
            Ok(()) => {}
        },
        Request::Version => {
            reply::version(out, crate::counters::VERSION);
        }
        Request::Verbosity { level, noreply } => {
            exec::admin::verbosity(cx, level);
            if !noreply {
                out.extend_from_slice(reply::OK);
            }
        }
        Request::Quit => return After::Close,
        Request::Stats { args } => crate::exec::report::stats(cx.srv, args, cx.now, out),
        Request::Shutdown { graceful } => match exec::admin::shutdown(cx, graceful) {
            Ok(()) => return After::Close,
            Err(_) => reply::line(out, reply::SHUTDOWN_NOT_ENABLED),
        },
        Request::CacheMemlimit { megabytes, noreply } => {
            use exec::admin::MemlimitRefused;
            match exec::admin::cache_memlimit(cx, megabytes) {
                Ok(()) if !noreply => out.extend_from_slice(reply::OK),
                Ok(()) => {}
                Err(MemlimitRefused::TooSmall) => {
                    reply::line(out, reply::MEMLIMIT_TOO_SMALL)
                }
                Err(MemlimitRefused::NotMegabytes) => {
                    reply::line(out, reply::MEMLIMIT_ADJUST_FAILED)
                }
                Err(MemlimitRefused::Failed) if !noreply => reply::line(out, reply::CANNOT_CHANGE_MEMORY_LIMIT),
                Err(MemlimitRefused::Failed) => {}
            }
        }
        Request::DebugTime { offset } => {
            let ok = exec::admin::debug_time(cx, offset);
            out.extend_from_slice(if ok { reply::OK } else { reply::ERROR });
        }
        Request::Meta(meta) => crate::wire::meta::execute(cx, &meta, out),
        // `lru_crawler metadump|mgdump` and `watch` take over the
        // connection and are handled by the session before it gets here.
        // The slab/LRU tuning commands are answered as memcached answers
        // them, without effect (exec/tuning.rs); extstore is a subsystem
        // larder does not build: memcached's `ERROR` for an unknown command.
        Request::Admin { command: AdminCommand::RefreshCerts, noreply, .. } => {
            // memcached: noreply silences the OK, never the error.
            match exec::admin::refresh_certs(cx) {
                Ok(()) if !noreply => out.extend_from_slice(reply::OK),
                Ok(()) => {}
                Err(msg) => reply::line(out, &msg),
            }
        }
        Request::Admin { command, args, noreply } => {
            use exec::tuning;
            let answer = match command {
                AdminCommand::Slabs => tuning::slabs(args),
                AdminCommand::Lru => tuning::lru(args),
                AdminCommand::LruCrawler => tuning::lru_crawler(args, cx.srv.settings().lru_crawler),
                // `track` over UDP: a stream needs a connection.
                AdminCommand::Watch | AdminCommand::Extstore | AdminCommand::RefreshCerts | AdminCommand::Track => Some("ERROR"),
            };
            // memcached sends these answers as single lines, which a
            // final `noreply` silences (1.6.40 and later).
            if let (Some(line), false) = (answer, noreply) {
                reply::line(out, line);
            }
        }
    }
    After::Continue
}

/// The keys of a get/gets/gat/gats from the `resume`-th on, then `END`;
/// pauses after a key once the output should drain first (a slow reader
/// or a large value), to be run again with the count it returns.
fn get_many(
    cx: &mut Ctx<'_>,
    keys: larder_proto::text::Keys<'_>,
    cas: bool,
    touch: Option<larder_store::Time>,
    out: &mut Output,
    resume: usize,
) -> After {
    let mark = out.len();
    let mut begun = 0;
    for (i, key) in keys.enumerate().skip(resume) {
        // The first key's reply is the request's own (begun by the session).
        let room = i == 0 || out.start_response();
        if room {
            begun += 1;
            if get_one(cx, key, cas, touch, out) == exec::read::Read::Parked {
                // Nothing of this key was answered: it runs again, from here,
                // and begins its reply again then.
                out.forget_responses(1);
                return After::Parked(i);
            }
        }
        if !room || out.take_refused() {
            // No room for this reply (the connection budget, or memcached's
            // response objects): memcached drops what this get stacked up
            // (what was not sent yet) and answers only this.
            if resume == 0 {
                out.truncate(mark);
            }
            out.forget_responses(begun);
            reply::line(out, reply::OUT_OF_MEMORY_WRITING_GET);
            return After::Continue;
        }
        if out.should_pause() {
            return After::Paused(i + 1);
        }
    }
    out.extend_from_slice(reply::END);
    After::Continue
}

/// One key of a get/gets/gat/gats: the value line on a hit, nothing on a miss.
fn get_one(cx: &mut Ctx<'_>, key: &[u8], cas: bool, touch: Option<larder_store::Time>, out: &mut Output) -> exec::read::Read {
    exec::read::read(cx, key, touch, |item, visible_cas| {
        out.send_value(
            item,
            |out| {
                reply::value_head(out, key, item.flags, item.value.len(), cas.then_some(visible_cas));
                true
            },
            b"\r\n",
        );
    })
}

fn arith_reply(outcome: exec::arith::Counted, out: &mut Output) {
    use exec::arith::Counted;
    match outcome {
        Counted::Value { value, .. } | Counted::Created { value, .. } => reply::number(out, value),
        Counted::NotFound | Counted::Exists | Counted::CreateNotStored => out.extend_from_slice(reply::NOT_FOUND),
        Counted::NonNumeric => reply::line(out, reply::NON_NUMERIC),
        Counted::OutOfMemory | Counted::CreateOutOfMemory => reply::line(out, reply::OUT_OF_MEMORY),
    }
}

/// A parse that gave no request: answer it the way memcached does
/// (including what it does for a too-large `set`) and say what happens to
/// its bytes. The reply of a rejected data block is held back until the
/// block is discarded (`Step::Skipped`'s `reply_from`).
fn refuse(cx: &mut Ctx<'_>, parsed: Parsed<'_>, out: &mut Output) -> Step {
    let mark = out.len();
    let skipped = |consumed, swallow| Step::Skipped { consumed, swallow, reply_from: mark, close: false };
    match parsed {
        Parsed::Request { .. } => unreachable!("requests are run, not refused"),
        Parsed::Incomplete { needed } => Step::Wait(needed),
        Parsed::Error { error, consumed, swallow } => {
            // memcached without -A refuses every shutdown line the same way.
            let error = if error == text::INVALID_SHUTDOWN && !cx.srv.settings().enable_shutdown {
                reply::SHUTDOWN_NOT_ENABLED
            } else {
                error
            };
            reply::line(out, error);
            skipped(consumed, swallow)
        }
        Parsed::Silent { consumed, swallow } => skipped(consumed, swallow),
        Parsed::TooLarge { command, key, noreply, consumed, swallow } => {
            exec::store::refuse_too_large(cx, key, crate::trace::watch::text_cmd(command));
            if !noreply {
                reply::line(out, text::TOO_LARGE);
            }
            skipped(consumed, swallow)
        }
        Parsed::Close => Step::Close,
    }
}

/// Answer `watch <args>` as memcached does; `Some` when the connection
/// becomes a watcher (its `OK` comes from the logger thread, first on the
/// stream it takes over).
fn watch_start(srv: &crate::state::server::Server, args: &[u8], pipelined: bool, out: &mut Vec<u8>) -> Option<Reserved> {
    let words: Vec<&[u8]> = args.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
    // memcached 1.6.40 reads `watch` as a data command, without `noreply`
    // (1.6.18 to 1.6.38 silenced its errors with a last `noreply`): a
    // `noreply` is an unknown watch word, answered `ERROR`.
    let mut reply = |line: &str| larder_proto::reply::line(out, line);
    if !srv.insight().log.enabled() {
        reply(larder_proto::reply::WATCH_NOT_ALLOWED);
        return None;
    }
    if pipelined {
        reply(larder_proto::reply::WATCH_PIPELINED);
        return None;
    }
    let Some(flags) = larder_observe::watch::WatchFlags::parse(&words) else {
        reply(larder_proto::reply::UNKNOWN);
        return None;
    };
    match srv.insight().log.reserve(&flags) {
        Ok(r) => Some(r),
        Err(crate::trace::watch::Refused::TooMany) => {
            reply("WATCHER_TOO_MANY log watcher limit reached");
            None
        }
        Err(crate::trace::watch::Refused::Failed) => {
            reply("WATCHER_FAILED failed to add log watcher");
            None
        }
    }
}
