//! memcached's UDP framing (`-U <port>`).
//!
//! Every datagram starts with an 8-byte frame header: request id, sequence
//! number, total datagrams, reserved (big-endian u16 each). A request must
//! fit in one datagram; the reply is cut into datagrams of at most
//! [`MAX_DATAGRAM`] bytes, each with the request id, its sequence number and
//! the total count. Requests spanning several datagrams are dropped, as
//! memcached drops them.
//!
//! The reply is built datagram by datagram. Producing it
//! ([`Output::with_refs`]) leaves its values in the store: the output holds
//! the reply lines and, per value, a reference (or a pin, for a large
//! object), which is enough to know the total length the frame header
//! needs. Each datagram then copies its share of the values from the store
//! ([`Output::read_next`]). A value whose segment was reused meanwhile
//! (evicted, compacted) stops the reply there: the client sees datagrams
//! missing, as when the network drops them, never other bytes; counted in
//! `stats larder` as `larder_udp_replies_cut`. So a reply holds its lines,
//! one entry per value and one datagram, whatever its values add up to.

use crate::connmem::output::{Output, ReadPos};
use crate::exec::Ctx;
use crate::wire::{Conversation, Step};
use larder_proto::block::Input;
use crate::trace::WorkerTrace;
use crate::state::server::Server;
use crate::counters::{bump, WorkerStats};
use larder_store::Time;
use mio::net::UdpSocket;
use std::io::ErrorKind;
use std::net::SocketAddr;

const HEADER: usize = 8;
/// memcached's UDP_MAX_PAYLOAD_SIZE: a datagram including its header.
const MAX_DATAGRAM: usize = 1400;
/// Reply bytes per datagram (memcached's UDP_DATA_SIZE).
const CHUNK: usize = MAX_DATAGRAM - HEADER;

/// A request datagram's frame header (the payload follows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Echoed in every datagram of the reply.
    pub request_id: [u8; 2],
    pub sequence: u16,
    /// Datagrams in the request: always 1 here (see [`frame`]).
    pub total: u16,
    /// The request bytes after the header (text or binary, decided by
    /// their first byte).
    pub payload: &'a [u8],
}

/// The frame of a received datagram, or `None` for one that is dropped
/// unanswered: shorter than the header, or one of several datagrams of a
/// request (memcached serves only requests that fit one). Pure, for the
/// fuzz target (`fuzz/fuzz_targets/udp_frame.rs`).
pub fn frame(datagram: &[u8]) -> Option<Frame<'_>> {
    let (header, payload) = (datagram.get(..HEADER)?, &datagram[HEADER..]);
    let total = u16::from_be_bytes([header[4], header[5]]);
    if total != 1 {
        return None;
    }
    let request_id = [header[0], header[1]];
    Some(Frame { request_id, sequence: u16::from_be_bytes([header[2], header[3]]), total, payload })
}

pub struct UdpHandler {
    socket: UdpSocket,
    rbuf: Vec<u8>,
    out: Output,
    datagram: Vec<u8>,
}

impl UdpHandler {
    /// Replies are charged to the connection `budget` like a TCP
    /// connection's output: their lines and value references (values
    /// themselves are read from the store a datagram at a time).
    pub fn new(socket: UdpSocket, budget: std::sync::Arc<crate::connmem::budget::ConnBudget>) -> UdpHandler {
        UdpHandler {
            socket,
            rbuf: vec![0; 65536],
            out: Output::budgeted(16384, budget).with_refs(),
            datagram: Vec::with_capacity(MAX_DATAGRAM),
        }
    }

    pub fn on_readable(&mut self, srv: &Server, ws: &WorkerStats, tr: &mut WorkerTrace, now: Time) {
        // `watch` lines name the UDP socket as the client (memcached's cfd).
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.socket);
        loop {
            let (n, peer) = match self.socket.recv_from(&mut self.rbuf) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            bump(&ws.bytes_read, n as u64);
            let Some(Frame { request_id, .. }) = frame(&self.rbuf[..n]) else { continue };
            self.out.clear();
            self.serve_datagram(srv, ws, tr, fd, now, n);
            self.send_reply(request_id, peer, srv, ws);
        }
    }

    /// Run the requests of the datagram in `rbuf[..n]` through the same
    /// drivers a connection uses, replies into `out`. A request that is not
    /// whole in it, or one after which memcached would close a connection,
    /// ends the datagram.
    fn serve_datagram(&mut self, srv: &Server, ws: &WorkerStats, tr: &mut WorkerTrace, fd: i32, now: Time, n: usize) {
        let mut talk = Conversation::datagram();
        let mut pos = HEADER;
        while pos < n {
            let mut cx = Ctx::new(srv, ws, tr, fd, now);
            match talk.step(&mut cx, Input::new(&self.rbuf[pos..n]), &mut self.out, false) {
                // Closing requests (`quit`) end nothing: there is no
                // connection; the rest of the datagram still runs.
                Step::Ran { consumed, .. } => pos += consumed,
                Step::Skipped { consumed, swallow, close, .. } => {
                    pos += consumed + swallow;
                    if close {
                        break;
                    }
                }
                _ => break,
            }
        }
    }

    fn send_reply(&mut self, request_id: [u8; 2], peer: SocketAddr, srv: &Server, ws: &WorkerStats) {
        // The references' queue may have grown: charge it while it is held.
        self.out.settle_charge();
        self.send_datagrams(request_id, peer, srv, ws);
        // Give a large reply's buffers back to the budget.
        self.out.clear();
        self.out.all_sent();
        if self.out.oversized() {
            self.out.shrink();
        }
    }

    fn send_datagrams(&mut self, request_id: [u8; 2], peer: SocketAddr, srv: &Server, ws: &WorkerStats) {
        let len = self.out.stream_len();
        if len == 0 {
            return;
        }
        let count = len.div_ceil(CHUNK);
        if count > u16::MAX as usize {
            // The header cannot say how many datagrams follow: memcached
            // says 65,535 and lets the sequence number wrap, which no client
            // can put back together. Nothing is sent (see README, UDP).
            bump(&ws.udp_replies_cut, 1);
            return;
        }
        let mut pos = ReadPos::default();
        for seq in 0..count {
            self.datagram.clear();
            self.datagram.extend_from_slice(&request_id);
            self.datagram.extend_from_slice(&(seq as u16).to_be_bytes());
            self.datagram.extend_from_slice(&(count as u16).to_be_bytes());
            self.datagram.extend_from_slice(&[0, 0]);
            if self.out.read_next(&mut pos, &mut self.datagram, CHUNK, srv.store()).is_err() {
                // A value's segment was reused since the reply was made:
                // the rest of it is not sent (the client sees datagrams
                // missing), rather than other bytes.
                bump(&ws.udp_replies_cut, 1);
                return;
            }
            // UDP is best effort: a full socket buffer drops the datagram.
            if let Ok(n) = self.socket.send_to(&self.datagram, peer) {
                bump(&ws.bytes_written, n as u64);
            }
        }
    }
}
