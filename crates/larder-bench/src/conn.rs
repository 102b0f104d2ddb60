//! One client connection: its buffers, the requests in flight, and the state machine that
//! turns reply frames into completed requests.
//!
//! Requests are encoded straight into the connection's write buffer and remembered in a
//! queue of [`Pending`] entries (kind, number of keys, intended send time). Replies are read
//! into a read buffer and cut into frames by the codec; frames are matched to the oldest
//! pending request (memcached answers in order). A `get` of k keys completes on `END`,
//! counting one hit per `VALUE`. Buffers and the queue are reused, so a steady-state request
//! allocates nothing.

use std::collections::VecDeque;
use std::io::ErrorKind;

use crate::tls::Stream;

use crate::codec::{self, Frame};
use crate::dist::Rng;
use crate::stats::Stats;
use crate::workload::{KeySource, OpKind, Workload};

/// A request sent and not yet answered.
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    pub kind: OpKind,
    pub nkeys: u32,
    /// Intended send time (open loop) or actual send time (closed loop), ns.
    pub start_ns: u64,
}

/// Which completions count: those whose send time falls in `[start, end)`.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub start: u64,
    pub end: u64,
}

pub struct Conn {
    pub stream: Stream,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    pub writable: bool,
    pub pending: VecDeque<Pending>,
    /// VALUE frames seen so far for the oldest pending request.
    cur_hits: u32,
    rng: Rng,
    verify_counter: u32,
    /// Sequential key source: next key and end of this connection's range.
    seq_next: u64,
    seq_end: u64,
    /// Open loop: intended time of the next request.
    pub next_send_ns: u64,
    pub dead: bool,
}

impl Conn {
    pub fn new(stream: Stream, seed: u64, seq: (u64, u64)) -> Conn {
        Conn {
            stream,
            rbuf: vec![0; 64 * 1024],
            rstart: 0,
            rend: 0,
            wbuf: Vec::with_capacity(16 * 1024),
            wpos: 0,
            writable: true,
            pending: VecDeque::with_capacity(64),
            cur_hits: 0,
            rng: Rng::new(seed),
            verify_counter: 0,
            seq_next: seq.0,
            seq_end: seq.1,
            next_send_ns: 0,
            dead: false,
        }
    }

    /// Whether a sequential connection has sent all its keys.
    pub fn exhausted(&self, w: &Workload) -> bool {
        matches!(w.keys, KeySource::Sequential { .. }) && self.seq_next >= self.seq_end
    }

    pub fn has_output(&self) -> bool {
        self.wpos < self.wbuf.len() || self.stream.wants_write()
    }

    /// Encodes one more request with the given start time; false if there is nothing to send.
    #[inline]
    pub fn issue(&mut self, w: &Workload, start_ns: u64) -> bool {
        let kind = w.mix.pick(&mut self.rng);
        let want = if kind == OpKind::MultiGet { w.multiget_keys.max(1) as u64 } else { 1 };
        let (first, n) = match &w.keys {
            KeySource::Sequential { .. } => {
                if self.seq_next >= self.seq_end {
                    return false;
                }
                let n = want.min(self.seq_end - self.seq_next);
                let first = self.seq_next;
                self.seq_next += n;
                (first, n)
            }
            KeySource::Random(d) => (d.sample(&mut self.rng), want),
        };
        let out = &mut self.wbuf;
        match kind {
            OpKind::Get => codec::encode_get(out, w, std::iter::once(first)),
            OpKind::MultiGet => match &w.keys {
                KeySource::Sequential { .. } => codec::encode_get(out, w, first..first + n),
                KeySource::Random(d) => {
                    let rng = &mut self.rng;
                    codec::encode_get(out, w, std::iter::once(first).chain((1..n).map(|_| d.sample(rng))))
                }
            },
            OpKind::Set => {
                let len = w.sizes.sample(&mut self.rng);
                codec::encode_set(out, w, first, len)
            }
            OpKind::MetaSet => {
                let len = w.sizes.sample(&mut self.rng);
                codec::encode_ms(out, w, first, len)
            }
            OpKind::MetaGet => codec::encode_mg(out, w, first),
            OpKind::Delete => codec::encode_delete(out, w, first),
            OpKind::Incr => codec::encode_incr(out, w, first),
            OpKind::SetCounter => codec::encode_set_counter(out, w, first),
        }
        self.pending.push_back(Pending { kind, nkeys: n as u32, start_ns });
        true
    }

    /// Writes as much buffered output as the socket takes. Err on a broken connection.
    pub fn flush(&mut self) -> std::io::Result<()> {
        while self.wpos < self.wbuf.len() {
            match self.stream.write(&self.wbuf[self.wpos..]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.wpos += n;
                    if self.wpos < self.wbuf.len() {
                        // short write: the socket buffer is full; wait for a writable event.
                        self.writable = false;
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.writable = false;
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.wbuf.clear();
        self.wpos = 0;
        // TLS: the records of what was just written.
        match self.stream.send_pending() {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                self.writable = false;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Reads everything available and completes the requests it answers.
    /// `clock` gives the current time in ns (called once per read).
    pub fn on_readable(&mut self, w: &Workload, win: &Window, st: &mut Stats, clock: impl Fn() -> u64) {
        loop {
            if self.rstart == self.rend {
                self.rstart = 0;
                self.rend = 0;
            }
            if self.rend == self.rbuf.len() {
                if self.rstart > 0 {
                    self.rbuf.copy_within(self.rstart..self.rend, 0);
                    self.rend -= self.rstart;
                    self.rstart = 0;
                } else {
                    let n = self.rbuf.len() * 2;
                    self.rbuf.resize(n, 0);
                }
            }
            let space = self.rbuf.len() - self.rend;
            match self.stream.read(&mut self.rbuf[self.rend..]) {
                Ok(0) => {
                    st.conn_errors += 1;
                    self.dead = true;
                    return;
                }
                Ok(n) => {
                    self.rend += n;
                    self.process(w, clock(), win, st);
                    if self.dead || n < space {
                        // A short read drained the socket; edge-triggered epoll reports new data.
                        return;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    st.conn_errors += 1;
                    self.dead = true;
                    return;
                }
            }
        }
    }

    /// Consumes complete frames from the read buffer.
    fn process(&mut self, w: &Workload, now: u64, win: &Window, st: &mut Stats) {
        loop {
            let buf = &self.rbuf[self.rstart..self.rend];
            let (frame, used) = match codec::parse_frame(buf) {
                Ok(Some(x)) => x,
                Ok(None) => return,
                Err(_) => {
                    st.protocol_errors += 1;
                    self.dead = true;
                    return;
                }
            };
            let Some(front) = self.pending.front().copied() else {
                st.protocol_errors += 1;
                self.dead = true;
                return;
            };
            // (hits, misses, error) when the front request is complete
            let done: Option<(u32, u32, bool)> = match (front.kind, frame) {
                (OpKind::Get | OpKind::MultiGet | OpKind::MetaGet, Frame::Value { key, data }) => {
                    self.cur_hits += 1;
                    let (key, data) = (&buf[key], &buf[data]);
                    if front.start_ns >= win.start && front.start_ns < win.end {
                        st.hit_key_bytes += key.len() as u64;
                        st.hit_value_bytes += data.len() as u64;
                    }
                    if w.verify_every > 0 {
                        self.verify_counter += 1;
                        if self.verify_counter >= w.verify_every {
                            self.verify_counter = 0;
                            st.verified += 1;
                            if key.is_empty() || !w.values.verify(key, data) {
                                st.corrupt += 1;
                            }
                        }
                    }
                    if front.kind == OpKind::MetaGet {
                        Some((1, 0, false))
                    } else if self.cur_hits > front.nkeys {
                        st.protocol_errors += 1;
                        self.dead = true;
                        return;
                    } else {
                        None
                    }
                }
                (OpKind::Get | OpKind::MultiGet, Frame::End) => Some((self.cur_hits, front.nkeys - self.cur_hits, false)),
                (OpKind::MetaGet, Frame::MetaMiss) => Some((0, 1, false)),
                (OpKind::Set | OpKind::MetaSet | OpKind::SetCounter, Frame::Stored | Frame::MetaHd) => Some((0, 0, false)),
                (OpKind::Delete, Frame::Deleted | Frame::NotFound) => Some((0, 0, false)),
                (OpKind::Incr, Frame::Number(_) | Frame::NotFound) => Some((0, 0, false)),
                (_, Frame::Error | Frame::NotStored | Frame::MetaFail | Frame::Exists) => Some((0, 0, true)),
                _ => {
                    st.protocol_errors += 1;
                    self.dead = true;
                    return;
                }
            };
            self.rstart += used;
            if let Some((hits, misses, error)) = done {
                self.pending.pop_front();
                self.cur_hits = 0;
                if error {
                    st.errors += 1;
                }
                if front.start_ns >= win.start && front.start_ns < win.end {
                    st.ops += 1;
                    st.keys += front.nkeys as u64;
                    if front.kind.is_read() {
                        st.hits += hits as u64;
                        st.misses += misses as u64;
                    }
                    st.record_latency(now.saturating_sub(front.start_ns));
                }
            }
        }
    }
}
