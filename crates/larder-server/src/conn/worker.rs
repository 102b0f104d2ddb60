//! A worker thread: its own epoll (mio `Poll`), the connections handed to it
//! by the acceptor, and its share of the UDP socket.
//!
//! Each wake-up handles every ready connection; a connection that used up its
//! read budget is run again on the next turn of the loop (after the others),
//! so one flooding client cannot starve the rest. Once a second the worker
//! closes connections idle past `-o idle_timeout`, frees its share of the
//! store's wholly expired segments (`Store::reclaim_expired`), and worker 0
//! runs the observer's housekeeping (`Observer::maintain`).
//!
//! Sessions keep the resting-size buffers the worker's pool lent them
//! (`connmem::pool`) from one wake-up to the next, so a busy connection
//! does not take them and give them back on every request. The worker
//! bounds what that costs: at most [`HOLDERS`] sessions are on its list of
//! holders (a session joining a full list pushes the longest-listed one
//! off, and it gives its buffers back), and once a second, at the
//! housekeeping, every holder gives its buffers back (one that is still
//! busy takes them again at its next wake-up). So a connection with
//! nothing in flight holds no buffer from about a second and a half after
//! its last request on (the poll timeout plus the clock's second), and at
//! most `HOLDERS` of them do meanwhile.
//!
//! The worker owns its [`WorkerTrace`] (its `ObserverWorker` and its side of
//! the `watch` log) and lends it to each request; the executors feed it,
//! and so do the store's departure reports of the calls they make. It
//! acknowledges the observer before blocking in `poll` (`quiesce`), and it
//! times requests with one clock reading per session event (see
//! `observe.rs`).

use crate::trace::observe::{Departed, Obs};
use crate::trace::WorkerTrace;
use crate::net::registry::ConnInfo;
use crate::state::server::Server;
use crate::conn::session::{Session, Status};
use crate::net::stream::Stream;
use crate::counters::bump;
use crate::conn::udp::UdpHandler;
use crate::conn::contain::contain;
use crate::connmem::pool::BufPool;
use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WAKER: Token = Token(usize::MAX);
/// Seconds a wholly expired segment stays before the once-a-second sweep
/// frees it (memory pressure frees it at once).
const RECLAIM_AFTER: u32 = 2;
const UDP_BASE: usize = usize::MAX / 2;
/// Sessions per worker that may keep resting buffers between wake-ups
/// (see the module docs): as many as the pool keeps of each kind, so idle
/// holders pin at most 16 × 2 × 16 KiB = 512 KiB per worker, and only
/// until the next housekeeping.
pub const HOLDERS: usize = crate::connmem::pool::KEEP;

/// A connection accepted for a worker.
pub struct NewConn {
    pub stream: Stream,
    pub info: Arc<ConnInfo>,
}

/// How the acceptor hands connections to a worker, and how near-cache
/// subscribers' pushes get their stream sessions run.
pub struct Inbox {
    queue: Mutex<Vec<NewConn>>,
    /// Sessions (tokens) whose subscriber has pushes to send.
    ready: Mutex<Vec<usize>>,
    waker: Arc<Waker>,
}

/// Wakes a worker for one of its sessions: a near-cache subscriber's
/// stream with pushes queued (`crate::track`). Made once per subscription.
pub struct SessionWake {
    inbox: Arc<Inbox>,
    token: usize,
}

impl SessionWake {
    pub fn new(inbox: Arc<Inbox>, token: usize) -> SessionWake {
        SessionWake { inbox, token }
    }
}

impl crate::track::subscriber::Wake for SessionWake {
    fn wake(&self) {
        self.inbox.ready.lock().unwrap_or_else(|e| e.into_inner()).push(self.token);
        let _ = self.inbox.waker.wake();
    }
}

impl Inbox {
    pub fn push(&self, conn: NewConn) {
        self.queue.lock().unwrap().push(conn);
        let _ = self.waker.wake();
    }

    /// Wake the worker without work (shutdown).
    pub fn wake(&self) {
        let _ = self.waker.wake();
    }

    /// The worker's waker, for others that need to interrupt its `poll`
    /// (released parked requests, `stampede::coalesce`).
    pub fn waker(&self) -> Arc<Waker> {
        self.waker.clone()
    }
}

pub struct Worker {
    id: usize,
    srv: Arc<Server>,
    poll: Poll,
    inbox: Arc<Inbox>,
    sessions: Vec<Option<Session>>,
    /// Per slot: registered for write readiness too.
    writable: Vec<bool>,
    free: Vec<usize>,
    udp: Vec<UdpHandler>,
    /// Sessions whose front request is parked (`-o coalesce`), and the
    /// earliest end of their windows.
    parked: Vec<Token>,
    parked_until: Option<Instant>,
    trace: WorkerTrace,
    /// Time each session event is measured from (the end of the previous).
    mark: Instant,
    /// Resting buffers lent to this worker's sessions while they have work.
    pool: BufPool,
    /// Slots of the sessions that hold buffers between wake-ups, oldest
    /// first (at most [`HOLDERS`]).
    holders: Vec<usize>,
}

impl Worker {
    /// Create a worker and the inbox the acceptor uses to reach it.
    pub fn new(id: usize, srv: Arc<Server>, udp_sockets: Vec<UdpSocket>) -> std::io::Result<(Worker, Arc<Inbox>)> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        let inbox = Arc::new(Inbox { queue: Mutex::new(Vec::new()), ready: Mutex::new(Vec::new()), waker: Arc::new(waker) });
        let mut udp = Vec::new();
        for (i, mut sock) in udp_sockets.into_iter().enumerate() {
            poll.registry().register(&mut sock, Token(UDP_BASE + i), Interest::READABLE)?;
            udp.push(UdpHandler::new(sock, srv.conns().budget.clone()));
        }
        let obs = Obs::new(&srv.insight().observer, srv.settings().observe.enabled, srv.clock().unix_now() - srv.clock().now() as i64);
        let trace = WorkerTrace { obs, log: srv.insight().log.worker_log() };
        let pool = BufPool::new(srv.conns().budget.clone());
        let worker = Worker {
            id,
            srv,
            poll,
            inbox: inbox.clone(),
            sessions: Vec::new(),
            writable: Vec::new(),
            free: Vec::new(),
            udp,
            parked: Vec::new(),
            parked_until: None,
            trace,
            mark: Instant::now(),
            pool,
            holders: Vec::with_capacity(HOLDERS),
        };
        Ok((worker, inbox))
    }

    pub fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        // Sessions to run again next turn, and this turn's copy; swapped,
        // never re-created, so a yielding connection costs no allocation.
        let mut again: Vec<Token> = Vec::new();
        let mut rerun: Vec<Token> = Vec::new();
        let mut last_sweep = self.srv.clock().now();
        let srv = self.srv.clone();
        loop {
            let timeout = if again.is_empty() { self.parked_timeout(Duration::from_millis(500)) } else { Duration::ZERO };
            if !timeout.is_zero() {
                // About to block: let the observer's housekeeping proceed.
                self.trace.obs.quiesce();
            }
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    eprintln!("larder: worker {} poll failed: {e}", self.id);
                    return;
                }
            }
            if srv.stopping() {
                self.close_all();
                return;
            }
            let now = srv.clock().now();
            if self.trace.obs.enabled() {
                // (observe=off reads no clock for latency at all)
                self.mark = Instant::now();
            }
            std::mem::swap(&mut again, &mut rerun);
            self.dispatch(&events, now, &mut again, &mut rerun);
            for token in rerun.drain(..) {
                self.run_session(token, now, &mut again, true);
            }
            if !self.parked.is_empty() {
                // Released by a write (its writer told us) or out of time.
                let due = self.parked_until.is_some_and(|t| Instant::now() >= t);
                if srv.stampede().coalescer.take_dirty(self.id) || due {
                    self.release_parked(now, &mut again);
                }
            }
            if now != last_sweep {
                last_sweep = now;
                self.housekeep(now);
            }
        }
    }

    /// Serve this turn's readiness events: new connections, datagrams, and
    /// sessions (each once; one that ran is no longer due for a re-run).
    fn dispatch(&mut self, events: &Events, now: u32, again: &mut Vec<Token>, rerun: &mut Vec<Token>) {
        let srv = self.srv.clone();
        let ws = &srv.counters().workers[self.id];
        for event in events.iter() {
            let token = event.token();
            if token == WAKER {
                self.adopt_new(now, again);
                self.run_ready(now, again);
            } else if token.0 >= UDP_BASE {
                if let Some(h) = self.udp.get_mut(token.0 - UDP_BASE) {
                    // A panic on one datagram loses that datagram's
                    // reply only (conn::contain).
                    let trace = &mut self.trace;
                    if contain(|| h.on_readable(&srv, ws, trace, now)).is_none() {
                        srv.counters().conns.conn_panics.fetch_add(1, Relaxed);
                    }
                }
            } else {
                rerun.retain(|t| *t != token);
                // The peer's FIN (or an error) came with this event: the
                // session must read on to see it (see Session::on_event).
                let hangup = event.is_read_closed() || event.is_error();
                self.run_session(token, now, again, hangup);
            }
        }
    }

    /// Run the stream sessions whose subscribers have pushes to send (a
    /// token whose session has gone, or was reused, gets a harmless run).
    fn run_ready(&mut self, now: u32, again: &mut Vec<Token>) {
        let ready = std::mem::take(&mut *self.inbox.ready.lock().unwrap_or_else(|e| e.into_inner()));
        for token in ready {
            self.run_session(Token(token), now, again, false);
        }
    }

    /// Once a second: idle timeouts, expired segments back to the pool,
    /// the holders' buffers back to the worker's pool.
    fn housekeep(&mut self, now: u32) {
        let srv = self.srv.clone();
        self.sweep_idle(now);
        self.release_holders();
        // Expired segments go back to the pool now, not when memory runs
        // out (each worker takes its share of the shards, and hears of what
        // leaves with them). Items in grace (`-o grace`) are kept as long as
        // it lasts. And every segment for RECLAIM_AFTER seconds past its
        // expiry, or past the `flush_all` that flushed it: a client that
        // reads an item right after it expired (or one stored already
        // expired, as memcached's stats.t does) must find it expired
        // (`get_expired`), not gone (a plain miss); one read right after a
        // flush must find it flushed (`get_flushed`, stats.t again).
        let horizon = now.saturating_sub(srv.settings().grace.longest().max(RECLAIM_AFTER));
        let WorkerTrace { obs, log } = &mut self.trace;
        let d = Departed { obs, log, now };
        srv.store().reporting(d).reclaim_expired(horizon, self.id, srv.settings().threads);
        if self.id == 0 {
            srv.insight().observer.maintain();
            srv.track_due_flush(now);
        }
    }

    fn run_session(&mut self, token: Token, now: u32, again: &mut Vec<Token>, hangup: bool) {
        let srv = &*self.srv;
        let ws = &srv.counters().workers[self.id];
        let Some(Some(session)) = self.sessions.get_mut(token.0) else { return };
        let trace = &mut self.trace;
        let pool = &mut self.pool;
        let Some(status) = contain(|| session.on_event(srv, ws, trace, now, &srv.conns().budget, pool, hangup)) else {
            // A bug reached by this connection's input: it ends, the
            // others go on (conn::contain; logged by its panic hook).
            srv.counters().conns.conn_panics.fetch_add(1, Relaxed);
            session.close_reason = crate::trace::watch::CloseReason::Error;
            return self.close(token.0);
        };
        if session.served > 0 && self.trace.obs.enabled() {
            let t = Instant::now();
            self.trace.obs.latency(t.duration_since(self.mark).as_nanos() as u64, session.served);
            session.served = 0;
            self.mark = t;
        }
        match status {
            Status::Idle => {}
            Status::Again => again.push(token),
            Status::Close => return self.close(token.0),
            Status::Watch => return self.hand_to_logger(token.0),
            Status::Parked => {
                if !self.parked.contains(&token) {
                    self.parked.push(token);
                }
                if let Some(t) = session.ticket() {
                    self.parked_until = Some(self.parked_until.map_or(t.deadline, |u| u.min(t.deadline)));
                    // A write may have landed while the request was being
                    // parked: look again before the next poll.
                    if srv.stampede().coalescer.released(t, Instant::now()).is_some() {
                        srv.stampede().coalescer.mark_dirty(self.id);
                    }
                }
            }
        }
        if session.enlist() {
            self.hold(token.0);
        }
        if self.sync_interest(token.0).is_err() {
            self.close(token.0);
        }
    }

    /// `slot`'s session keeps its buffers between wake-ups: list it,
    /// making the longest-listed holder give its buffers back if the list
    /// is full (no allocation: the list's capacity is `HOLDERS`).
    fn hold(&mut self, slot: usize) {
        if self.holders.len() >= HOLDERS {
            let oldest = self.holders.remove(0);
            self.release(oldest);
        }
        self.holders.push(slot);
    }

    /// `slot`'s session, taken off the list, gives back the buffers it
    /// holds with nothing in flight.
    fn release(&mut self, slot: usize) {
        if let Some(Some(s)) = self.sessions.get_mut(slot) {
            s.release_buffers(&mut self.pool, &self.srv.conns().budget);
        }
    }

    /// Every holder gives its buffers back (housekeeping).
    fn release_holders(&mut self) {
        while let Some(slot) = self.holders.pop() {
            self.release(slot);
        }
    }

    /// A session leaves this worker: off the holders' list.
    fn unlist(&mut self, slot: usize) {
        if self.sessions.get(slot).and_then(|s| s.as_ref()).is_some_and(|s| s.is_listed()) {
            self.holders.retain(|&t| t != slot);
        }
    }

    /// Ask for write readiness exactly while a session has output the
    /// socket did not take (one epoll_ctl when that changes, which only
    /// happens to clients that read slowly).
    fn sync_interest(&mut self, slot: usize) -> std::io::Result<()> {
        let Some(Some(session)) = self.sessions.get_mut(slot) else { return Ok(()) };
        let want = session.has_pending_output();
        if self.writable.len() <= slot {
            self.writable.resize(slot + 1, false);
        }
        if self.writable[slot] != want {
            session.stream_mut().reregister(self.poll.registry(), Token(slot), want)?;
            self.writable[slot] = want;
        }
        Ok(())
    }

    fn adopt_new(&mut self, now: u32, again: &mut Vec<Token>) {
        let conns = std::mem::take(&mut *self.inbox.queue.lock().unwrap());
        for conn in conns {
            let slot = match self.free.pop() {
                Some(i) => i,
                None => {
                    self.sessions.push(None);
                    self.sessions.len() - 1
                }
            };
            let mut session = Session::new(conn.stream, conn.info, now, self.srv.conns().budget.clone(), self.srv.access().credentials.is_none() && !self.srv.settings().sasl);
            if session.stream_mut().register(self.poll.registry(), Token(slot)).is_err() {
                self.srv.conns().registry.remove(session.info.fd);
                self.srv.counters().conns.curr_connections.fetch_sub(1, Relaxed);
                self.free.push(slot);
                continue;
            }
            session.set_wake(self.inbox.clone(), slot);
            self.trace.log.conn_new(session.info.fd, &session.info.addr);
            self.sessions[slot] = Some(session);
            if let Some(w) = self.writable.get_mut(slot) {
                *w = false;
            }
            // Data may already be waiting (edge-triggered: no event will
            // say so). A session that yields goes on the worker's re-run list
            // like any other.
            self.run_session(Token(slot), now, again, true);
        }
    }

    /// `watch`: the connection leaves this worker for the logger thread
    /// (still open, still counted in curr_connections).
    fn hand_to_logger(&mut self, slot: usize) {
        self.unlist(slot);
        if let Some(mut session) = self.sessions[slot].take() {
            let _ = session.stream_mut().deregister(self.poll.registry());
            self.free.push(slot);
            if let Some((stream, info, r, unsent)) = session.into_watcher() {
                self.srv.insight().log.adopt(stream, info, r, unsent);
            }
        }
    }

    fn close(&mut self, slot: usize) {
        // (What it holds is freed with it, not given back to the pool: a
        // session closed after a panic may be in any state.)
        self.unlist(slot);
        if let Some(mut session) = self.sessions[slot].take() {
            if let Some(ticket) = session.take_ticket() {
                self.srv.stampede().coalescer.abandon(&ticket);
                self.parked.retain(|t| t.0 != slot);
            }
            // What it holds in the connection budget is given back when it
            // is dropped, at the end of this block.
            session.stream_mut().abandon();
            self.trace.log.conn_close(session.info.fd, &session.info.addr, session.close_reason);
            let _ = session.stream_mut().deregister(self.poll.registry());
            self.srv.conns().registry.remove(session.info.fd);
            self.srv.counters().conns.curr_connections.fetch_sub(1, Relaxed);
            self.free.push(slot);
        }
    }

    /// How long `poll` may block: `limit`, or less if a parked request's
    /// window ends sooner.
    fn parked_timeout(&self, limit: Duration) -> Duration {
        match self.parked_until {
            Some(t) if !self.parked.is_empty() => limit.min(t.saturating_duration_since(Instant::now())),
            _ => limit,
        }
    }

    /// Run again every parked request whose key was written, deleted or
    /// flushed, or whose window ended.
    fn release_parked(&mut self, now: u32, again: &mut Vec<Token>) {
        let at = Instant::now();
        let mut i = 0;
        while i < self.parked.len() {
            let token = self.parked[i];
            let released = match self.sessions.get_mut(token.0) {
                Some(Some(s)) => match s.ticket() {
                    Some(t) => self.srv.stampede().coalescer.released(t, at).map(|timed_out| (*t, timed_out)),
                    None => {
                        self.parked.swap_remove(i);
                        continue;
                    }
                },
                _ => {
                    self.parked.swap_remove(i);
                    continue;
                }
            };
            let Some((ticket, timed_out)) = released else {
                i += 1;
                continue;
            };
            self.parked.swap_remove(i);
            self.srv.stampede().coalescer.unpark(&ticket, timed_out);
            if let Some(Some(s)) = self.sessions.get_mut(token.0) {
                s.unpark();
            }
            // Its input may have arrived meanwhile (no event will say so):
            // run it as a re-run does.
            self.run_session(token, now, again, true);
        }
        // The earliest window among those still waiting (a re-run may have
        // parked again, with a later one).
        self.parked_until = self
            .parked
            .iter()
            .filter_map(|t| self.sessions.get(t.0)?.as_ref()?.ticket().map(|k| k.deadline))
            .min();
    }

    fn close_all(&mut self) {
        for slot in 0..self.sessions.len() {
            if let Some(s) = &mut self.sessions[slot] {
                s.close_reason = crate::trace::watch::CloseReason::Shutdown;
            }
            self.close(slot);
        }
    }

    /// Close connections idle longer than `-o idle_timeout`, and TLS
    /// connections whose handshake has taken longer than
    /// `-o ssl_handshake_timeout` (whatever `idle_timeout` says: a client
    /// that starts a handshake and never finishes it would otherwise hold
    /// its connection slot and rustls's buffers for good).
    fn sweep_idle(&mut self, now: u32) {
        let limit = self.srv.settings().idle_timeout;
        let handshake_limit = self.srv.settings().tls.handshake_timeout;
        if limit == 0 && self.srv.access().tls.is_none() {
            return;
        }
        let mut idle = Vec::new();
        for (slot, s) in self.sessions.iter().enumerate() {
            if let Some(s) = s {
                let idle_too_long = limit != 0 && s.is_idle() && now.saturating_sub(s.last_active) > limit;
                let handshake_too_long = s.is_handshaking() && now.saturating_sub(s.opened) >= handshake_limit;
                if idle_too_long || handshake_too_long {
                    idle.push(slot);
                }
            }
        }
        for slot in idle {
            if let Some(s) = &mut self.sessions[slot] {
                // (a handshake timeout counts in ssl_handshake_errors, at close)
                if !s.is_handshaking() {
                    bump(&self.srv.counters().workers[self.id].idle_kicks, 1);
                }
                s.close_reason = crate::trace::watch::CloseReason::IdleTimeout;
            }
            self.close(slot);
        }
    }
}
