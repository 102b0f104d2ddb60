//! The near-cache invalidation driver (docs/near-cache.md): the `track`
//! commands on a text connection, and a stream connection's side once it
//! has subscribed (it may only send `mn` and `quit`; the server sends the
//! subscriber's pushes, `IV`/`IA`/`LOST`/`MN`).
//!
//! What is tracked and what is pushed is `crate::track`'s; the executors
//! register reads and announce writes through the request context
//! (`exec::Ctx::track_*`). A connection that never sends `track` costs
//! nothing here.

use crate::connmem::output::Output;
use crate::exec::Ctx;
use crate::trace::watch::CloseReason;
use crate::track::subscriber::{Mode, Subscriber};
use crate::wire::{Conversation, Step};
use larder_proto::reply;
use larder_proto::track::{self as grammar, StreamInput, TrackCommand};

/// `track <args>` (`consumed`: the request's bytes). Attaching and
/// detaching change the attachment lent to the request (`cx.track`), which
/// the conversation keeps once the step returns.
pub fn command(conv: &Conversation, cx: &mut Ctx<'_>, args: &[u8], consumed: usize, out: &mut Output) -> Step {
    if !conv.begin_reply(out) {
        return Step::Overflow;
    }
    let ran = Step::Ran { consumed, close: None };
    let parsed = grammar::parse(args);
    let mode = match parsed {
        Err(line) => {
            reply::line(out, line);
            return ran;
        }
        Ok(TrackCommand::Stream) => Mode::Tracking,
        Ok(TrackCommand::Broadcast(prefixes)) => match Mode::broadcast(&prefixes) {
            Ok(mode) => mode,
            Err(_) => {
                reply::line(out, grammar::BAD_FORMAT);
                return ran;
            }
        },
        Ok(TrackCommand::Attach { sid, noloop }) => {
            match cx.srv.tracker().attach(sid, noloop) {
                Some(att) => {
                    cx.track = Some(att);
                    out.extend_from_slice(reply::OK);
                }
                None => reply::line(out, grammar::UNKNOWN_SUBSCRIBER),
            }
            return ran;
        }
        Ok(TrackCommand::Detach) => {
            cx.track = None;
            out.extend_from_slice(reply::OK);
            return ran;
        }
    };
    Step::Subscribe { consumed, mode }
}

/// The connection is now `sub`'s stream: answer `OK <sid>`.
pub fn subscribed(sub: &Subscriber, out: &mut Vec<u8>) {
    out.extend_from_slice(b"OK ");
    reply::push_u64(out, sub.sid());
    out.extend_from_slice(b"\r\n");
}

/// What a stream connection sent: `mn` queues its barrier behind the
/// pushes already queued, `quit` closes, anything else is refused and
/// closes. While the subscriber's queue is over its bound, input waits
/// (so `mn` cannot grow it without limit).
pub fn stream_step(sub: &Subscriber, buf: &[u8], out: &mut Output) -> Step {
    if sub.over_bound() {
        return Step::Blocked;
    }
    match grammar::stream_input(buf) {
        StreamInput::Incomplete => Step::Wait(None),
        StreamInput::Mn(consumed) => {
            sub.push_mn();
            Step::Ran { consumed, close: None }
        }
        StreamInput::Quit => Step::Ran { consumed: buf.len(), close: Some(CloseReason::Normal) },
        StreamInput::Other => {
            reply::line(out, grammar::BAD_FORMAT);
            Step::Ran { consumed: buf.len(), close: Some(CloseReason::Error) }
        }
    }
}

/// Move the subscriber's queued pushes (whole lines, at most `room` bytes)
/// to the output.
pub fn pull(sub: &Subscriber, out: &mut Vec<u8>, room: usize) {
    // Looking clears the "ready" mark, so the next push wakes us again.
    sub.take_ready();
    if room > 0 && sub.pending_bytes() > 0 {
        sub.drain_into(out, room);
    }
}
