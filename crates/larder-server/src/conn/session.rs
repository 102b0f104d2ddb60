//! One client connection: its read and write buffers and the loop that turns
//! bytes into requests and replies.
//!
//! On every wake-up the session reads what the socket has, executes every
//! complete request in the buffer (pipelining), and writes all the replies
//! with one `write`. Its two buffers are lent by the worker's pool
//! (`connmem::pool`). A session whose buffers are at their resting size
//! keeps them after a wake-up, on its worker's short list of sessions
//! holding buffers (`conn::worker`, [`Session::enlist`]), so a busy
//! connection pays nothing per request to take and give them back; the
//! worker makes it give them back ([`Session::release_buffers`]) at its
//! once-a-second housekeeping, or sooner when newer sessions push it off
//! the list. Grown buffers, and those of a session that ends, go back at
//! the end of the wake-up as soon as nothing is in flight (an unfinished
//! request, a value being received, unsent replies). So an idle connection
//! holds no buffer a second or two after its last request, and nothing is
//! allocated per request. They grow only as far as one request needs (a
//! value up to `-I`, a long multi-get line), are bounded by the parser's
//! limits, and go to the shelf (`connmem::shelf`) once such a request is
//! done.
//!
//! A value too big for a store segment is not read into these buffers: once
//! its command is in, the value is received straight into the buffer that
//! becomes its large object in the store (a `larder_store::Landing`, charged
//! to the connection budget until the write adopts it), so a 128 MiB `set`
//! is neither buffered twice nor copied. Only the command and what follows
//! the value stay in the read buffer; the parser frames the two together
//! (`larder_proto::block`).
//!
//! Backpressure: when a client does not read its replies and the pending
//! output passes [`WRITE_HIGH_WATER`], the session stops executing requests
//! until the output drains, so a slow reader cannot make the server buffer
//! without bound.
//!
//! What the bytes mean is not the session's business: each request at the
//! front of the buffer goes to the connection's `wire::Conversation`, whose
//! drivers (the `-Y` gate, text with meta, binary with SASL) parse it, run
//! it through the executors and encode its reply, and return a
//! `wire::Step` that tells the session what to do with its buffers: drop
//! the request's bytes, wait for a data block (and where a large value
//! lies, to receive it aside), discard a rejected block, pause for the
//! output, park, close, or hand the socket to the logger (`watch`,
//! [`Status::Watch`]).
//!
//! A get parked by coalesced cold misses (`-o coalesce`, `stampede::coalesce`)
//! stops the session where it stands, like a paused get: the request stays
//! at the front of the read buffer (the conversation remembers the keys
//! already answered), nothing behind it runs, and the worker runs the
//! session again once the request's ticket is released.

use crate::connmem::output::Output;
use crate::connmem::pool::BufPool;
use crate::exec::Ctx;
use crate::net::registry::{ConnInfo, ConnState};
use crate::net::stream::Stream;
use crate::connmem::budget::ConnBudget;
use crate::stampede::coalesce::Ticket;
use crate::state::server::Server;
use crate::connmem::shelf::BufKind;
use crate::counters::{bump, WorkerStats};
use crate::trace::watch::{CloseReason, Reserved};
use crate::trace::WorkerTrace;
use crate::conn::worker::{Inbox, SessionWake};
use crate::wire::{Conversation, Step};
use larder_proto::block::Input;
use larder_store::{Landing, Time};
use std::io;
use std::sync::Arc;

/// Resting size of each buffer (the pool's).
pub use crate::connmem::pool::BUF_SIZE;
/// Stop producing output (between requests, between the keys of a
/// multi-get) while this much is unsent, pinned large values included
/// (`connmem::output`). So a connection that does not read holds this much
/// plus one reply: a copied value (up to a segment's size; the budget pays
/// for it) or a pinned large object (whose bytes `-m` already counts).
pub const WRITE_HIGH_WATER: usize = 64 * 1024;
/// Unprocessed input a near-cache stream may hold before the session stops
/// reading it (it may only send `mn` and `quit`).
const STREAM_INPUT_HELD: usize = 4096;
/// Bytes read per wake-up before yielding to other connections.
const READ_BUDGET: usize = 1024 * 1024;
/// Most bytes asked of one read. A large value arrives in many reads of
/// this size rather than a few that take all the socket holds: a read of
/// megabytes keeps the socket locked while it copies, the kernel answers
/// the sender from another CPU meanwhile, and on loopback its segments then
/// arrive out of order and are sent twice (`nstat`: TcpExtTCPOFOQueue,
/// TcpRetransSegs). 128 MiB sets took 1.15x memcached's time that way;
/// BENCHMARKS.md ("Large and medium values, fourth session") has the
/// figures.
const READ_MAX: usize = 64 * 1024;

/// What the worker should do with a session after an event.
#[derive(Debug, PartialEq, Eq)]
pub enum Status {
    /// Wait for the next readiness event.
    Idle,
    /// It has more work (read budget used up): run it again soon.
    Again,
    Close,
    /// Became a watcher: hand the socket to the logger ([`Session::into_watcher`]).
    Watch,
    /// Its front request is parked (`-o coalesce`, [`Session::ticket`]):
    /// leave it until the ticket is released, then [`Session::unpark`] it
    /// and run it again.
    Parked,
}

pub struct Session {
    stream: Stream,
    pub info: Arc<ConnInfo>,
    /// Fully initialised; bytes `rstart..rend` are received and unprocessed.
    /// Empty (no buffer) between wake-ups when nothing is unprocessed.
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    /// Replies, and the rest of a large value being sent (`connmem::output`).
    /// Holds no buffer between wake-ups when everything is sent.
    out: Output,
    /// Start of unsent bytes in `out`.
    wstart: usize,
    /// The reply to a rejected request, held until its data block has been
    /// swallowed (see `defer_reply`).
    deferred: Vec<u8>,
    /// What the read buffer holds past `BUF_SIZE`, charged to the
    /// connection budget (the output charges its own), and the buffer sizes
    /// last reported to it; given back when the session is dropped.
    charge: Charge,
    /// Bytes of a rejected data block still to discard.
    swallow: usize,
    /// Bytes (from `rstart`) the request being received needs in all, when
    /// the parser knows (a data block is on its way); 0 otherwise.
    need: usize,
    /// Close once the pending output is written.
    closing: bool,
    /// The protocol side: which driver serves the next request, and what
    /// a request in progress left behind (`wire::Conversation`).
    talk: Conversation,
    /// On the worker's list of sessions that hold buffers between
    /// wake-ups ([`Session::enlist`]).
    listed: bool,
    /// Relative time of the last request (for idle timeouts).
    pub last_active: Time,
    /// Relative time the connection was adopted (TLS handshake timeout).
    pub opened: Time,
    /// Requests executed since the worker last took this count (latency).
    pub served: u32,
    /// What `watch conn_close` will say when this connection ends.
    pub close_reason: CloseReason,
    /// `watch` accepted: the connection now belongs to the logger.
    watch: Option<Reserved>,
    /// The request at the front of the read buffer waits for another
    /// client's refill of a key (`-o coalesce`); nothing behind it runs.
    ticket: Option<crate::stampede::coalesce::Ticket>,
    /// The value of the request at the front, when it is received into the
    /// store's buffer instead of `rbuf` (see the module docs).
    landing: Option<Landing>,
    /// How its worker is told to run it (its inbox and token): given to a
    /// near-cache subscriber's waker if the connection subscribes.
    wake: Option<(Arc<Inbox>, usize)>,
}

/// A session's input charge to the connection budget, given back however
/// the session ends: closed, handed to the logger, or dropped by the worker
/// after a panic (`conn::contain`). The output's charge is `Output`'s own,
/// a landing's and pinned values' their own (all given back on drop).
struct Charge {
    budget: Arc<ConnBudget>,
    /// Bytes of the read buffer past `BUF_SIZE` charged.
    input: usize,
    /// The (input, output) buffer sizes last reported (`read_buf_bytes`,
    /// `response_obj_bytes`).
    bufs: (usize, usize),
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.recharge(self.input, 0);
        self.budget.resize(self.bufs, (0, 0));
    }
}

/// How a wake-up reads: what is left of its read budget, whether the
/// last read drained the socket, and whether the event said the peer
/// closed (see [`Session::on_event`]).
struct Reading {
    budget: usize,
    /// The last read took less than it was offered: the socket is empty.
    drained: bool,
    hangup: bool,
}

/// Where [`Session::serve`]'s loop goes next.
enum Flow {
    Return(Status),
    /// Round again.
    Again,
}

/// What [`Session::land`] did with a waiting value.
enum Landed {
    /// Not a large object's: it goes to the read buffer.
    No,
    /// It is being received into the store's buffer.
    Yes,
    /// It would be, but the connection budget has no room for it.
    NoRoom,
}

impl Session {
    /// `authenticated`: false when the server requires authentication
    /// (`-Y` or `-S`).
    pub fn new(stream: Stream, info: Arc<ConnInfo>, now: Time, budget: Arc<ConnBudget>, authenticated: bool) -> Session {
        Session {
            stream,
            info,
            rbuf: Vec::new(),
            rstart: 0,
            rend: 0,
            out: Output::budgeted_unbuffered(BUF_SIZE, budget.clone()).with_pins(),
            wstart: 0,
            charge: Charge { budget: budget.clone(), input: 0, bufs: (0, 0) },
            deferred: Vec::new(),
            swallow: 0,
            need: 0,
            closing: false,
            talk: Conversation::new(authenticated),
            listed: false,
            last_active: now,
            opened: now,
            served: 0,
            close_reason: CloseReason::Error,
            watch: None,
            ticket: None,
            landing: None,
            wake: None,
        }
    }

    /// How the worker runs this session when a subscriber it becomes has
    /// pushes (the session's worker inbox and token).
    pub fn set_wake(&mut self, inbox: Arc<Inbox>, token: usize) {
        self.wake = Some((inbox, token));
    }

    pub fn stream_mut(&mut self) -> &mut Stream {
        &mut self.stream
    }

    /// After [`Status::Watch`]: the socket, its registry entry, the
    /// watcher slot and the replies still unsent (those before an `mn`,
    /// which memcached writes before the watcher's `OK`), for
    /// `Logger::adopt`.
    pub fn into_watcher(mut self) -> Option<(Stream, Arc<ConnInfo>, Reserved, Vec<u8>)> {
        let r = self.watch?;
        let mut unsent = Vec::new();
        while self.out.unsent(self.wstart) > 0 {
            let mut iov = [io::IoSlice::new(&[]); 8];
            let n = self.out.slices(self.wstart, &mut iov);
            let took: usize = iov[..n].iter().map(|s| s.len()).sum();
            if took == 0 {
                break;
            }
            for s in &iov[..n] {
                unsent.extend_from_slice(s);
            }
            self.out.advance(&mut self.wstart, took);
        }
        Some((self.stream, self.info, r, unsent))
    }

    /// What releases the parked front request, if it is parked.
    pub fn ticket(&self) -> Option<&crate::stampede::coalesce::Ticket> {
        self.ticket.as_ref()
    }

    /// The connection closes while parked: the ticket, to give back.
    pub fn take_ticket(&mut self) -> Option<crate::stampede::coalesce::Ticket> {
        self.ticket.take()
    }

    /// The parked request was released: run it again on the next event.
    pub fn unpark(&mut self) {
        self.ticket = None;
        self.talk.released();
    }

    /// Replies are waiting for the socket to accept them (in the session's
    /// buffer, or encrypted inside a TLS stream).
    pub fn has_pending_output(&self) -> bool {
        self.out.unsent(self.wstart) > 0 || self.stream.wants_write()
    }

    /// A TLS handshake still under way (the worker times it out).
    pub fn is_handshaking(&self) -> bool {
        self.stream.is_handshaking()
    }

    /// Whether the connection sits between requests (idle-timeout eligible).
    pub fn is_idle(&self) -> bool {
        self.rstart == self.rend && self.out.unsent(self.wstart) == 0 && self.swallow == 0 && !self.talk.resuming() && self.ticket.is_none() && !self.talk.is_stream()
    }

    /// Handle a readiness event (or a scheduled re-run).
    ///
    /// `hangup`: the event said the peer closed (or may have: re-runs and
    /// new connections pass true). Without it, a read that did not fill
    /// the buffer is taken to have drained the socket and no second read
    /// is made to hear `EAGAIN`: with edge-triggered readiness, bytes that
    /// arrive later raise a new event. That saves a system call per
    /// request; a FIN already there when the event was raised would raise
    /// no new one, hence `hangup`.
    ///
    /// `pool`: the worker's resting buffers, lent for the wake-up and
    /// kept past it by a session that goes on with resting-size buffers
    /// (the worker then [`enlist`](Self::enlist)s it).
    // The worker's pieces are passed apart (not as one struct) so that its
    // borrows of them stay disjoint from its borrow of the session.
    #[allow(clippy::too_many_arguments)]
    pub fn on_event(&mut self, srv: &Server, ws: &WorkerStats, tr: &mut WorkerTrace, now: Time, budget: &ConnBudget, pool: &mut BufPool, hangup: bool) -> Status {
        self.borrow_buffers(pool);
        let status = self.serve(srv, ws, tr, now, budget, hangup);
        // Tests only (one relaxed load otherwise): the bytes the read
        // buffer holds, processed or not, may carry an injected panic.
        crate::conn::contain::injected_panic(&self.rbuf);
        // Resting-size buffers stay with a session that goes on (the
        // worker lists it and takes them back later: `release_buffers`);
        // grown ones, and a closing session's, go back now.
        let goes_on = matches!(status, Status::Idle | Status::Again | Status::Parked);
        if !(goes_on && self.rbuf.len() == BUF_SIZE && !self.out.oversized()) {
            self.give_back_buffers(pool, budget);
        }
        self.account(budget);
        // (no atomic operation unless the pool lent or took back a buffer)
        pool.publish();
        status
    }

    /// After a wake-up: whether the worker must put this session on its
    /// list of sessions holding buffers (it holds some, and is not on it).
    #[inline]
    pub fn enlist(&mut self) -> bool {
        if self.listed || (self.rbuf.is_empty() && !self.out.has_buffer()) {
            return false;
        }
        self.listed = true;
        true
    }

    /// Whether the session is on its worker's list ([`enlist`](Self::enlist)).
    pub fn is_listed(&self) -> bool {
        self.listed
    }

    /// Off the worker's list: give back the buffers it holds, those with
    /// nothing in flight (the others go back at the end of the wake-up
    /// that finishes with them, or with the session).
    #[inline(never)]
    pub fn release_buffers(&mut self, pool: &mut BufPool, budget: &ConnBudget) {
        self.listed = false;
        self.give_back_buffers(pool, budget);
        self.account(budget);
        pool.publish();
    }

    /// Take the buffers this wake-up may use from the pool, where the
    /// connection gave them back (a pop each when warm: no allocation).
    #[inline]
    fn borrow_buffers(&mut self, pool: &mut BufPool) {
        if self.rbuf.is_empty() {
            self.rbuf = pool.take_read();
        }
        if !self.out.has_buffer() {
            self.out.lend(pool.take_write());
        }
    }

    /// After a wake-up: give back the read buffer if everything read was
    /// processed (no request half in, no value being received aside; what
    /// waits for a paused or parked request is still in it), and the
    /// output buffer if everything produced was sent. Grown buffers go to
    /// the shelf, resting ones to the pool. A subscriber's stream, a
    /// metadump or a paused get needs no buffer while it waits: it gets one
    /// on its next wake-up before it produces anything.
    #[inline]
    fn give_back_buffers(&mut self, pool: &mut BufPool, budget: &ConnBudget) {
        if self.rstart == self.rend && self.landing.is_none() && !self.rbuf.is_empty() {
            self.rstart = 0;
            self.rend = 0;
            self.need = 0;
            let buf = std::mem::take(&mut self.rbuf);
            if buf.len() == BUF_SIZE {
                pool.give_read(buf);
            } else {
                self.shelve_read(buf, budget);
            }
        }
        // Given back only when empty: everything sent (`flush` clears it).
        match self.out.give_back() {
            Some(Ok(buf)) => pool.give_write(buf),
            Some(Err(grown)) => budget.shelve(BufKind::Write, grown),
            None => return,
        }
        self.wstart = 0;
    }

    /// A grown read buffer no longer needed: to the shelf. Its charge goes
    /// back first; the shelf charges it anew if it keeps it.
    #[inline(never)]
    fn shelve_read(&mut self, buf: Vec<u8>, budget: &ConnBudget) {
        budget.recharge(self.charge.input, 0);
        self.charge.input = 0;
        budget.shelve(BufKind::Read, buf);
    }

    /// Charge the worker's budget for what the buffers hold past their
    /// resting size now (and report their sizes). A warm session's
    /// buffers are as they were at its last wake-up: a few comparisons
    /// tell, and nothing is recharged.
    #[inline]
    fn account(&mut self, budget: &ConnBudget) {
        let unchanged = self.charge.input == 0
            && self.rbuf.len() <= BUF_SIZE
            && self.landing.is_none()
            && self.charge.bufs == (self.rbuf.len(), self.out.capacity())
            && self.out.settled();
        if !unchanged {
            self.account_changed(budget);
        }
    }

    #[inline(never)]
    fn account_changed(&mut self, budget: &ConnBudget) {
        if self.out.refusals > 0 {
            ConnBudget::count_n(&budget.write_oom, std::mem::take(&mut self.out.refusals));
        }
        self.out.settle_charge();
        let input = self.rbuf.len().saturating_sub(BUF_SIZE);
        budget.recharge(self.charge.input, input);
        self.charge.input = input;
        // A value being received into the store's buffer is input too (its
        // bytes are charged to the budget by the landing itself).
        let landing = self.landing.as_ref().map_or(0, |l| l.bytes());
        let bufs = (self.rbuf.len() + landing, self.out.capacity());
        budget.resize(self.charge.bufs, bufs);
        self.charge.bufs = bufs;
    }

    /// The request at the front is incomplete; `needed`: the bytes it needs
    /// in all, when a data block is announced. Makes room for the block at
    /// once (not step by step) — a large value's room in the store
    /// ([`land`](Self::land)) — or refuses it when the budget cannot hold
    /// it: true when it was refused and processing goes on (its bytes are
    /// swallowed as they come).
    fn await_block(&mut self, srv: &Server, needed: Option<usize>, budget: &ConnBudget) -> bool {
        let Some(total) = needed else { return false };
        if self.landing.is_none() {
            match self.land(srv, total) {
                Landed::No => {}
                Landed::Yes => return false,
                Landed::NoRoom => {
                    self.refuse_input(total, budget);
                    return true;
                }
            }
        }
        if !self.input_fits(total, budget) {
            self.refuse_input(total, budget);
            return true;
        }
        self.info.set_state(ConnState::Nread);
        self.reserve_for(total, budget);
        false
    }

    /// Receive the value of the request at the front (`total` bytes in all)
    /// into the store's buffer, if it is big enough to be a large object:
    /// what of it is already read moves there, and what follows it (part of
    /// its trailer) closes up behind the command.
    fn land(&mut self, srv: &Server, total: usize) -> Landed {
        let buf = &self.rbuf[self.rstart..self.rend];
        let shape = self.talk.waiting_shape(buf, total);
        let Some(shape) = shape.filter(|s| srv.store().lands(s.key_len, s.value)) else { return Landed::No };
        // The parsers give a shape only once its head is buffered; checked
        // again here, where it is used to slice (a head that is not all in
        // is the client's word only: a 124-byte binary header once claimed
        // 65,814 and stopped the server).
        let Some(vstart) = self.rstart.checked_add(shape.head).filter(|&v| v <= self.rend) else { return Landed::No };
        let Some(mut landing) = srv.store().landing(shape.key_len, shape.value) else { return Landed::NoRoom };
        let have = (self.rend - vstart).min(shape.value);
        landing.unfilled()[..have].copy_from_slice(&self.rbuf[vstart..vstart + have]);
        landing.advance(have);
        self.rbuf.copy_within(vstart + have..self.rend, vstart);
        self.rend -= have;
        self.need = shape.head + shape.trailer;
        self.landing = Some(landing);
        self.info.set_state(ConnState::Nread);
        Landed::Yes
    }

    /// No reply may be begun (memcached's response objects ran out under
    /// `-o read_buf_mem_limit`): as memcached, drop the unsent replies and
    /// close the connection.
    fn overflow(&mut self) {
        self.out.truncate(self.wstart);
        self.closing = true;
    }

    /// A request rejected before its data block arrived: as memcached, its
    /// reply (written from `mark` on) goes out only once the block has been
    /// read and discarded. A proxy that sees a reply before it finished
    /// sending the request takes the server for broken (twemproxy closes
    /// the connection and may eject the node).
    fn defer_reply(&mut self, mark: usize, swallow: usize) {
        if swallow > 0 && self.out.len() > mark {
            self.deferred.extend_from_slice(&self.out[mark..]);
            self.out.truncate(mark);
        }
    }

    /// Take from the budget what the read buffer needs to hold `total`
    /// bytes from `rstart` (a data block announced by its command line);
    /// false if that does not fit.
    fn input_fits(&mut self, total: usize, budget: &ConnBudget) -> bool {
        let wanted = total.max(self.rbuf.len()).saturating_sub(BUF_SIZE);
        if wanted <= self.charge.input {
            return true;
        }
        if !budget.try_take(wanted - self.charge.input) {
            return false;
        }
        self.charge.input = wanted;
        true
    }

    /// A data block that does not fit in the budget: answered as memcached
    /// answers a value it cannot allocate, and discarded as it arrives.
    fn refuse_input(&mut self, total: usize, budget: &ConnBudget) {
        ConnBudget::count(&budget.read_oom);
        let mark = self.out.len();
        self.talk.refuse_block(&self.rbuf[self.rstart..self.rend], &mut self.out.buf);
        let buffered = self.rend - self.rstart;
        self.swallow = total.saturating_sub(buffered);
        self.rstart = self.rend;
        self.defer_reply(mark, self.swallow);
    }

    fn serve(&mut self, srv: &Server, ws: &WorkerStats, tr: &mut WorkerTrace, now: Time, budget: &ConnBudget, hangup: bool) -> Status {
        let mut reading = Reading { budget: READ_BUDGET, drained: false, hangup };
        // -R: requests per wake-up before yielding to other connections.
        let mut allowance = srv.settings().reqs_per_event;
        loop {
            if self.talk.is_stream() {
                // A subscriber's pushes, as far as the output bound allows.
                let room = WRITE_HIGH_WATER.saturating_sub(self.pending_output());
                self.talk.pull_pushes(&mut self.out.buf, room);
            }
            if let Some(status) = self.write_first(ws) {
                return status;
            }
            if self.talk.pushes_waiting() {
                // The output drained below its bound and the subscriber
                // holds more (its queue is larger than the output's bound):
                // pull again. Going idle here would strand them: the
                // socket's writable edge is spent, and no new push may come
                // to wake the stream.
                continue;
            }
            // Execute what is already buffered before reading more.
            if self.rstart < self.rend || self.swallow > 0 || self.talk.streaming() {
                match self.run_buffered(srv, ws, tr, now, &mut allowance, budget) {
                    Some(Flow::Return(status)) => return status,
                    Some(Flow::Again) => continue,
                    None => {}
                }
            }
            if self.talk.is_stream() && self.rend - self.rstart >= STREAM_INPUT_HELD {
                // A subscriber that sends faster than it reads: its input
                // waits (TCP pushes back) until its pushes have gone out.
                return self.rest(ws);
            }
            match self.read_more(ws, now, &mut reading) {
                Flow::Return(status) => return status,
                Flow::Again => {}
            }
        }
    }

    /// Before any work: send what is pending, and stop here when the
    /// session is parked, closing, or waiting for the client to read.
    fn write_first(&mut self, ws: &WorkerStats) -> Option<Status> {
        if self.ticket.is_some() {
            // Parked: only the replies before it go out.
            return Some(if self.flush(ws) { Status::Parked } else { Status::Close });
        }
        if !self.flush(ws) {
            return Some(Status::Close);
        }
        if self.closing {
            return Some(if self.out.unsent(self.wstart) == 0 { Status::Close } else { Status::Idle });
        }
        if self.pending_output() >= WRITE_HIGH_WATER {
            // Wait for the client to read; the writable event resumes us.
            self.info.set_state(ConnState::Write);
            return Some(Status::Idle);
        }
        None
    }

    /// Process the buffered requests; `None` when the session should read
    /// more input next.
    fn run_buffered(&mut self, srv: &Server, ws: &WorkerStats, tr: &mut WorkerTrace, now: Time, allowance: &mut usize, budget: &ConnBudget) -> Option<Flow> {
        let before = self.rstart;
        let yielded = self.process(srv, ws, tr, now, allowance, budget);
        if self.watch.is_some() {
            // What an `mn` left unsent goes first (the rest, if the socket
            // takes less, is handed to the logger with the socket).
            let _ = self.flush(ws);
            return Some(Flow::Return(Status::Watch));
        }
        if self.rstart != before {
            self.last_active = now;
        }
        if yielded {
            bump(&ws.conn_yields, 1);
            return Some(Flow::Return(if self.flush(ws) { Status::Again } else { Status::Close }));
        }
        // Output-bound work left (a dump, the remaining keys of a paused
        // get): go round, flushing first; the bound check waits for the
        // socket. Nothing else would wake us: no input may come. A parked
        // request: go round to report it.
        let more = self.talk.streaming() || self.talk.resuming() || self.ticket.is_some();
        if self.closing || self.pending_output() >= WRITE_HIGH_WATER || more {
            return Some(Flow::Again);
        }
        None
    }

    /// Read once more from the socket, unless this wake-up's read budget is
    /// spent or the socket was drained.
    fn read_more(&mut self, ws: &WorkerStats, now: Time, reading: &mut Reading) -> Flow {
        if reading.budget == 0 {
            bump(&ws.conn_yields, 1);
            return Flow::Return(if self.flush(ws) { Status::Again } else { Status::Close });
        }
        if reading.drained && !reading.hangup {
            return Flow::Return(self.rest(ws));
        }
        let offered = self.read_room();
        match self.fill() {
            Ok(0) => {
                // The peer closed, or only half-closed its side (`nc -q`, a
                // shell's `printf ... | nc`): as memcached, which answers
                // what it read before it reads the end, the replies already
                // produced go out (as far as the socket takes them now)
                // before the connection closes.
                self.close_reason = CloseReason::Normal;
                self.flush(ws);
                Flow::Return(Status::Close)
            }
            Ok(n) => {
                bump(&ws.bytes_read, n as u64);
                reading.drained = n < offered;
                reading.budget = reading.budget.saturating_sub(n);
                self.last_active = now;
                self.info.touch(now);
                Flow::Again
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Flow::Return(self.rest(ws)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Flow::Again,
            Err(_) => Flow::Return(Status::Close),
        }
    }

    /// Nothing more to read now: send what is pending and wait.
    fn rest(&mut self, ws: &WorkerStats) -> Status {
        if !self.flush(ws) {
            return Status::Close;
        }
        Status::Idle
    }

    fn pending_output(&self) -> usize {
        self.out.unsent(self.wstart)
    }

    /// Move unprocessed bytes to the front of the read buffer.
    fn compact(&mut self) {
        if self.rstart > 0 {
            self.rbuf.copy_within(self.rstart..self.rend, 0);
            self.rend -= self.rstart;
            self.rstart = 0;
        }
    }

    /// Make the read buffer able to hold `total` bytes of one request.
    ///
    /// A bigger buffer comes from the shelf of grown buffers when it has
    /// one (`connmem::shelf`), else is allocated at its exact size and zeroed
    /// by the allocator (fresh pages, no memset pass), and only the
    /// unprocessed bytes move into it — not a `resize`, which would copy and
    /// then memset.
    fn reserve_for(&mut self, total: usize, budget: &ConnBudget) {
        self.need = total;
        if self.rstart + total > self.rbuf.len() {
            if total > self.rbuf.len() {
                let mut grown = budget.unshelve(BufKind::Read, total).unwrap_or_else(|| vec![0u8; total]);
                grown[..self.rend - self.rstart].copy_from_slice(&self.rbuf[self.rstart..self.rend]);
                self.rbuf = grown;
                self.rend -= self.rstart;
                self.rstart = 0;
            } else {
                self.compact();
            }
        }
    }

    /// How many bytes the next `fill` will offer the socket (after it
    /// makes room): a read that returns fewer drained it.
    fn read_room(&mut self) -> usize {
        if let Some(landing) = self.landing.as_mut().filter(|l| !l.is_complete()) {
            return landing.unfilled().len().min(READ_MAX);
        }
        self.prepare_fill();
        (self.rbuf.len() - self.rend).min(READ_MAX)
    }

    /// Read once into free space (the rest of a value being received into
    /// the store's buffer, or the read buffer), making room first.
    fn fill(&mut self) -> io::Result<usize> {
        if let Some(landing) = self.landing.as_mut().filter(|l| !l.is_complete()) {
            let room = landing.unfilled();
            let cap = room.len().min(READ_MAX);
            let n = self.stream.read(&mut room[..cap])?;
            landing.advance(n);
            return Ok(n);
        }
        self.prepare_fill();
        let end = self.rbuf.len().min(self.rend + READ_MAX);
        let n = self.stream.read(&mut self.rbuf[self.rend..end])?;
        self.rend += n;
        Ok(n)
    }

    /// Make room in the read buffer for the next read.
    fn prepare_fill(&mut self) {
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
            self.need = 0;
        }
        if self.rbuf.len() - self.rend < BUF_SIZE / 4 {
            self.compact();
            // A data block of known size has its room already (`reserve_for`):
            // its last few bytes must not grow (reallocate) a 128 MiB buffer.
            let has_room = self.need != 0 && self.rend < self.rstart + self.need && self.rstart + self.need <= self.rbuf.len();
            if self.rbuf.len() - self.rend < BUF_SIZE / 4 && !has_room {
                // An unfinished line or block that fills the buffer: grow.
                // The parser bounds how far (line limits, -I).
                let grown = self.rbuf.len() + BUF_SIZE;
                self.rbuf.resize(grown, 0);
            }
        }
    }

    /// Execute the complete requests in the read buffer, at most `allowance`
    /// of them; true if it stopped because the allowance ran out.
    fn process(&mut self, srv: &Server, ws: &WorkerStats, tr: &mut WorkerTrace, now: Time, allowance: &mut usize, budget: &ConnBudget) -> bool {
        self.info.set_state(ConnState::ParseCmd);
        // Set again below if the request at the front is still incomplete.
        self.need = 0;
        loop {
            if !self.discard_swallowed() {
                break;
            }
            let streaming = self.talk.streaming();
            if !streaming && (self.rstart == self.rend || self.pending_output() > WRITE_HIGH_WATER) {
                break;
            }
            if *allowance == 0 {
                return true;
            }
            if !streaming && self.landing.as_ref().is_some_and(|l| !l.is_complete()) {
                // Its value is still arriving (`stats conns`: conn_nread).
                self.info.set_state(ConnState::Nread);
                break;
            }
            // What the next request may produce before it pauses.
            self.out.pause_at = self.wstart + WRITE_HIGH_WATER;
            // The front request's value, if received aside: the request
            // consumes it (or, still missing its trailer, gives it back).
            let landed = self.landing.take();
            let input = Input { buf: &self.rbuf[self.rstart..self.rend], aside: landed.as_ref().map(|l| l.value()) };
            let pipelined = self.pending_output() > 0;
            let mut cx = Ctx::new(srv, ws, tr, self.info.fd, now).landed(landed.as_ref());
            let step = self.talk.step(&mut cx, input, &mut self.out, pipelined);
            let ticket = cx.ticket.take();
            drop(cx);
            if !self.follow(step, ticket, landed, allowance, srv, budget) {
                break;
            }
        }
        if self.rstart == self.rend && self.swallow == 0 {
            self.info.set_state(ConnState::Waiting);
        }
        false
    }

    /// Discard what is left of a rejected data block, then send the reply
    /// held back for it; false while some of it has yet to arrive.
    fn discard_swallowed(&mut self) -> bool {
        if self.swallow == 0 {
            return true;
        }
        let n = self.swallow.min(self.rend - self.rstart);
        self.rstart += n;
        self.swallow -= n;
        if self.swallow > 0 {
            self.info.set_state(ConnState::Swallow);
            return false;
        }
        // The rejected data block is all in: now its reply.
        self.out.extend_from_slice(&self.deferred);
        self.deferred.clear();
        true
    }

    /// Do what a driver's step asks of the session; false when processing
    /// stops for this wake-up.
    fn follow(&mut self, step: Step, ticket: Option<Ticket>, landed: Option<Landing>, allowance: &mut usize, srv: &Server, budget: &ConnBudget) -> bool {
        match step {
            Step::Ran { consumed, close } => {
                *allowance -= 1;
                self.served += 1;
                self.rstart += consumed;
                if let Some(reason) = close {
                    self.close_reason = reason;
                    self.closing = true;
                    return false;
                }
                true
            }
            Step::Streamed => {
                *allowance -= 1;
                true
            }
            Step::Blocked => false,
            Step::Paused => {
                *allowance -= 1;
                false
            }
            Step::Parked => {
                *allowance -= 1;
                self.ticket = ticket;
                false
            }
            Step::Overflow => {
                *allowance -= 1;
                self.overflow();
                false
            }
            Step::Watch { consumed, reserved } => {
                *allowance -= 1;
                self.served += 1;
                self.rstart += consumed;
                self.watch = Some(reserved);
                false
            }
            Step::Wait(needed) => {
                self.landing = landed;
                self.await_block(srv, needed, budget)
            }
            Step::Skipped { consumed, swallow, reply_from, close } => {
                self.rstart += consumed;
                self.swallow = swallow;
                if close {
                    self.closing = true;
                    return false;
                }
                self.defer_reply(reply_from, swallow);
                true
            }
            Step::Close => {
                self.closing = true;
                false
            }
            Step::Subscribe { consumed, mode } => {
                *allowance -= 1;
                self.served += 1;
                self.rstart += consumed;
                let waker = self.wake.as_ref().map(|(inbox, token)| {
                    Arc::new(SessionWake::new(inbox.clone(), *token)) as Arc<dyn crate::track::subscriber::Wake>
                });
                let sub = srv.tracker().subscribe(mode, waker);
                // The stream's pending pushes wait in its bounded queue,
                // charged to the connection budget; without this the kernel
                // would hold up to 4 MiB more per subscriber that never reads.
                // A failure leaves the kernel's default: nothing to refuse.
                let _ = self.stream.cap_send_buffer(crate::track::STREAM_SNDBUF);
                self.talk.become_stream(sub, &mut self.out.buf);
                true
            }
        }
    }

    /// Write pending output; false if the connection is broken.
    fn flush(&mut self, ws: &WorkerStats) -> bool {
        // What a TLS stream encrypted earlier goes first.
        match self.stream.send_pending() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
        while self.out.unsent(self.wstart) > 0 {
            let written = if self.out.has_pins() {
                // Large values pinned in the store go out between the
                // buffer's bytes, uncopied: one writev for the lot.
                let mut iov = [io::IoSlice::new(&[]); 8];
                let n = self.out.slices(self.wstart, &mut iov);
                self.stream.write_vectored(&iov[..n])
            } else {
                self.stream.write(&self.out.buf[self.wstart..])
            };
            match written {
                Ok(0) => return false,
                Ok(n) => {
                    self.out.advance(&mut self.wstart, n);
                    bump(&ws.bytes_written, n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
        self.out.clear();
        self.out.all_sent();
        self.wstart = 0;
        true
    }
}
