//! Protocol drivers: how a connection speaks, from bytes to executor calls
//! and back to reply bytes. Nothing here decides what a command does (that
//! is `exec/`), and nothing here owns a socket or a buffer (that is
//! `conn/`).
//!
//! A connection's [`Conversation`] hands each request at the front of its
//! input to one driver, chosen by what the connection may say now:
//!
//! * [`gate`]: `-Y`'s handshake, all a connection may say before it has
//!   authenticated; no command of any protocol gets past it.
//! * [`text`]: memcached's ASCII protocol, with the meta commands
//!   ([`meta`]) on the same connections, and the two commands that take a
//!   connection over: `lru_crawler metadump` ([`metadump`], streamed) and
//!   `watch` (handed to the logger).
//! * [`binary`]: the binary protocol, with `-S`'s SASL gate (the parser
//!   decides which requests an unauthenticated connection may make).
//!
//! * [`track`]: near-cache invalidation: `track` commands on a text
//!   connection, and a subscriber's stream once it is one.
//!
//! Each driver's `step` consumes at most one request and says what the
//! session should do next ([`Step`]). A UDP datagram is served by the same
//! drivers through a [`Conversation::datagram`], which neither parks, nor
//! counts replies against the connection, nor lets a command take over.

pub mod binary;
pub mod gate;
pub mod meta;
pub mod metadump;
pub mod text;
pub mod track;

use crate::connmem::output::Output;
use crate::auth::sasl::ConnAuth;
use crate::exec::{Ctx, Parking};
use crate::config::Protocol;
use crate::trace::watch::{CloseReason, Reserved};
use larder_proto::block::{Input, Shape};

/// What the session does after a driver's step. The request's bytes are
/// still in the session's buffer; only `consumed` tells it to drop them.
// Made per request and moved, never stored.
#[derive(Debug)]
pub enum Step {
    /// A request ran (or the handshake answered one): drop `consumed`
    /// bytes. `close`: the connection ends once its replies are out, for
    /// that reason.
    Ran { consumed: usize, close: Option<CloseReason> },
    /// A rejected request, already answered from `reply_from` on in the
    /// output: drop `consumed` bytes, then discard `swallow` more as they
    /// arrive, holding that reply back until they have (memcached answers
    /// a rejected data block only once it is read). `close`: then close.
    Skipped { consumed: usize, swallow: usize, reply_from: usize, close: bool },
    /// The request is incomplete; `needed`: the bytes it needs in all,
    /// when its command announced a data block.
    Wait(Option<usize>),
    /// A multi-key get stopped for the output to drain; the same request
    /// runs again (from where it stopped) once it has.
    Paused,
    /// A get waits for another client's refill (`-o coalesce`): the
    /// context's ticket says when it may run again.
    Parked,
    /// A metadump step went out (or the dump ended).
    Streamed,
    /// A metadump waits for the output to drain.
    Blocked,
    /// No reply may be begun (memcached's response objects ran out):
    /// memcached drops the unsent replies and closes.
    Overflow,
    /// `watch` was accepted: drop `consumed` bytes and hand the
    /// connection to the logger.
    Watch { consumed: usize, reserved: Reserved },
    /// Hostile or broken input: close without a reply.
    Close,
    /// `track stream`: drop `consumed` bytes, subscribe in `mode`, and
    /// hand the subscriber to [`Conversation::become_stream`] (the session
    /// knows how its worker is woken).
    Subscribe { consumed: usize, mode: crate::track::subscriber::Mode },
}

/// Which protocol a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    Undecided,
    Text,
    Binary,
}

/// One connection's side of the protocol: which protocol it speaks,
/// whether it has authenticated, and what a request in progress left
/// behind (a paused get's answered keys, a metadump's position).
pub struct Conversation {
    wire: Wire,
    /// Whether it authenticated (`-Y`'s handshake or `-S`'s SASL; always
    /// true without them) and its SASL conversation.
    auth: ConnAuth,
    /// Keys of the multi-key get at the front of the input already answered
    /// before it paused for the output to drain (or parked).
    resume: usize,
    /// An `lru_crawler metadump` in progress.
    dump: Option<metadump::Dump>,
    /// The front request was parked and released: its first read answers
    /// what it finds.
    retry: bool,
    /// A UDP datagram's: no parking, no response accounting, no takeover.
    datagram: bool,
    /// `track attach`: this connection's reads register for a subscriber.
    attachment: Option<crate::track::subscriber::Attachment>,
    /// `track stream`: the connection is a subscriber's push stream.
    stream: Option<crate::track::subscriber::Subscriber>,
    /// The last request run was `mn`, which memcached follows with an
    /// immediate write of every reply so far: what is unsent behind it
    /// does not count as pipelined (`mn` then metadump or `watch` runs).
    after_mn: bool,
}

impl Conversation {
    /// A stream connection's. `authenticated`: false when the server
    /// requires authentication (`-Y` or `-S`).
    pub fn new(authenticated: bool) -> Conversation {
        Conversation { wire: Wire::Undecided, auth: ConnAuth::new(!authenticated), resume: 0, dump: None, retry: false, datagram: false, attachment: None, stream: None, after_mn: false }
    }

    /// One UDP datagram's (memcached decides text or binary per datagram,
    /// by its first byte).
    pub fn datagram() -> Conversation {
        Conversation { datagram: true, ..Conversation::new(true) }
    }

    /// Work that needs no input: a metadump being streamed.
    pub fn streaming(&self) -> bool {
        self.dump.is_some()
    }

    /// A request in progress: a paused get's remaining keys.
    pub fn resuming(&self) -> bool {
        self.resume > 0
    }

    /// The connection is a near-cache subscriber's push stream.
    pub fn is_stream(&self) -> bool {
        self.stream.is_some()
    }

    /// After [`Step::Subscribe`]: the connection becomes `sub`'s stream,
    /// answered `OK <sid>`.
    pub fn become_stream(&mut self, sub: crate::track::subscriber::Subscriber, out: &mut Vec<u8>) {
        track::subscribed(&sub, out);
        self.stream = Some(sub);
    }

    /// A stream's queued pushes, at most `room` bytes, into `out`.
    pub fn pull_pushes(&mut self, out: &mut Vec<u8>, room: usize) {
        if let Some(sub) = &self.stream {
            track::pull(sub, out, room);
        }
    }

    /// A stream whose subscriber has pushes that can go out now.
    #[inline]
    pub fn pushes_waiting(&self) -> bool {
        self.stream.as_ref().is_some_and(|sub| sub.drainable())
    }

    /// The parked front request was released: run it again.
    pub fn released(&mut self) {
        self.retry = true;
    }

    /// Consume at most one request from `input` (a metadump step first, if
    /// one is under way), writing its reply to `out`. `pipelined`: replies
    /// of earlier requests are still unsent (metadump and `watch` refuse
    /// to start behind them, as memcached does).
    // Inlined into its two callers (the session's loop and UDP's): a call
    // per request otherwise (~25 instructions of a get's ~3,800).
    #[inline(always)]
    pub fn step(&mut self, cx: &mut Ctx<'_>, input: Input<'_>, out: &mut Output, pipelined: bool) -> Step {
        // One test for the rare states (a dump, a stream, not yet
        // authenticated), so an ordinary request pays one branch for them.
        if self.dump.is_some() || self.stream.is_some() || !self.auth.authenticated() {
            if let Some(step) = self.step_special(cx, input.buf, out) {
                return step;
            }
        }
        if self.wire == Wire::Undecided {
            self.wire = self.decide(cx, input.buf);
        }
        if !self.datagram {
            // The descriptor tells connections apart while they are open.
            let conn = cx.fd as u32;
            cx.parking = if self.retry { Parking::Retry(conn) } else { Parking::Allowed(conn) };
        }
        // The attachment is lent to the request (a `track attach` in it
        // replaces it) and kept again after.
        cx.track = self.attachment.take();
        let step = match self.wire {
            Wire::Binary => binary::step(self, cx, input, out),
            _ => text::step(self, cx, input, out, pipelined),
        };
        self.attachment = cx.track.take();
        if matches!(step, Step::Ran { .. } | Step::Paused | Step::Parked) {
            self.retry = false;
        }
        step
    }

    /// A metadump under way, a subscriber's stream, or `-Y`'s gate: the
    /// step, or `None` when the request goes to the protocol's driver after
    /// all (`-S`'s gate is the binary parser's).
    fn step_special(&mut self, cx: &mut Ctx<'_>, buf: &[u8], out: &mut Output) -> Option<Step> {
        if self.dump.is_some() {
            return Some(metadump::step(&mut self.dump, cx, out));
        }
        if let Some(sub) = &self.stream {
            return Some(track::stream_step(sub, buf, out));
        }
        if cx.srv.access().credentials.is_some() {
            return Some(gate::step(cx, buf, &mut self.auth, out));
        }
        None
    }

    /// memcached's choice: by the flag, or under `-B auto` by the first byte.
    fn decide(&self, cx: &Ctx<'_>, buf: &[u8]) -> Wire {
        match cx.srv.settings().protocol {
            Protocol::Ascii => Wire::Text,
            Protocol::Binary => Wire::Binary,
            Protocol::Auto if buf.first().is_some_and(|&b| larder_proto::binary::is_binary(b)) => Wire::Binary,
            Protocol::Auto => Wire::Text,
        }
    }

    /// Begin a reply (memcached's response object); false when none may
    /// be (see [`Step::Overflow`]). A datagram's replies are bounded by the
    /// datagram, not counted.
    fn begin_reply(&self, out: &mut Output) -> bool {
        self.datagram || out.start_response()
    }

    /// The front request is waiting for a data block of `total` bytes in
    /// all: where its value lies, if the parser can tell yet (a large value
    /// is received straight into the store).
    pub fn waiting_shape(&self, buf: &[u8], total: usize) -> Option<Shape> {
        match self.wire {
            Wire::Binary => larder_proto::binary::waiting_shape(buf, total),
            _ => larder_proto::text::waiting_shape(buf, total),
        }
    }

    /// The front request's data block cannot be buffered (the connection
    /// budget is spent): answer as memcached answers a value it cannot
    /// allocate. `front`: the request's bytes buffered so far.
    pub fn refuse_block(&self, front: &[u8], out: &mut Vec<u8>) {
        match self.wire {
            Wire::Binary => binary::refuse_block(front, out),
            _ => larder_proto::reply::line(out, larder_proto::reply::OUT_OF_MEMORY_STORING),
        }
    }
}
