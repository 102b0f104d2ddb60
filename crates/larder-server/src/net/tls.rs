//! A TLS connection over a non-blocking TCP socket (`-Z`), made to look like
//! the plain socket to the session: `read` gives plaintext, `write` takes
//! plaintext, both say `WouldBlock` exactly when the socket does.
//!
//! rustls does the handshake (its unbuffered API, driven here); once it is
//! done, rustls hands over the traffic secrets and larder's own record
//! layer ([`tls_record`](crate::net::tls_record)) seals and opens records
//! in two buffers this type owns, sized once, so a warm connection
//! allocates nothing per request. What arrives after the handshake besides
//! data (alerts, key updates, renegotiation attempts) is handled in
//! [`tls_traffic`](crate::net::tls_traffic).
//!
//! Two properties the session relies on:
//!
//! * a `read` that returns fewer bytes than offered has drained the socket
//!   (it read until `WouldBlock` or end of stream, or a socket read came
//!   back short), as a plain socket read would; with edge-triggered
//!   readiness the session then waits for the next event instead of
//!   reading again to hear `EAGAIN`;
//! * encrypted output that the socket did not take stays in the send
//!   buffer, bounded by `-o ssl_wbuf_size` (at least one full record);
//!   [`TlsStream::wants_write`] tells the worker to wait for write
//!   readiness, and `write` accepts no new plaintext until that is sent,
//!   so a client that does not read cannot make the server buffer more.

use crate::net::tls_record::{content, Fatal, Keys, RecordLayer, HEADER, MAX_PLAINTEXT, MAX_RECORD};
use crate::net::tls_traffic::{
    alert, key_update, queue_record, renegotiation, send_key_update, Reply, Stop, Traffic, ALERT_FATAL, ALERT_WARNING,
    CLOSE_NOTIFY, MAX_EMPTY_RECORDS, MAX_KEY_UPDATES, NO_RENEGOTIATION,
};
use mio::net::TcpStream;
use rustls::server::UnbufferedServerConnection;
use rustls::unbuffered::{ConnectionState, EncodeError};
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The TLS counters of `stats` (memcached's names), shared by every
/// connection and the listener that made them.
#[derive(Default, Debug)]
pub struct TlsCounters {
    /// Handshakes that failed before the server answered (a bad
    /// ClientHello, a refused version, the peer gone), and handshakes
    /// larder ended (`ssl_handshake_timeout`).
    pub handshake_errors: AtomicU64,
    /// Sessions the server-side cache stored (`-o ssl_session_cache`).
    pub new_sessions: AtomicU64,
    /// memcached 1.6.30's `ssl_proto_errors`, a fatal error of its
    /// SSL_read or SSL_write: a connection ended by a TLS protocol error
    /// after the server's first handshake flight, which memcached sends
    /// from its SSL_accept at accept time, so the rest of the handshake
    /// runs in SSL_read: a refused client certificate (`mtls:`,
    /// `ssl_verify_mode` 2 and 3), a fatal alert from the client or the
    /// client leaving during the handshake; on an established connection a
    /// record that does not open or is out of place, a fatal alert. An end
    /// of an established connection without close_notify is not one
    /// (memcached skips that case too).
    pub proto_errors: AtomicU64,
}

/// The receive buffer's size once the handshake is done: one record of
/// the largest size either version allows.
const RX_TRAFFIC: usize = MAX_RECORD;
/// The receive buffer's size when a handshake starts (a ClientHello fits).
const RX_HANDSHAKE_START: usize = 4096;
/// How far the receive buffer may grow during the handshake: rustls's
/// limit on a handshake message (64 KiB), split into records, and one
/// record more. A message rustls would refuse fails here first, or there.
const RX_HANDSHAKE_MAX: usize = 0x10000 + 8 * HEADER + MAX_RECORD;
/// Room in the send buffer kept free of data for records we must be able
/// to send whatever the client leaves unread: a key update reply and an
/// alert (each a few dozen bytes).
const TX_RESERVE: usize = 128;
/// The send buffer holds at least one full record and the reserve.
const TX_MIN: usize = HEADER + 8 + MAX_PLAINTEXT + 1 + 16 + TX_RESERVE;

enum Phase {
    Handshake(Box<UnbufferedServerConnection>),
    Traffic(Box<Traffic>),
    /// Ended by an error (an alert was sent or received).
    Dead,
}

pub struct TlsStream {
    sock: TcpStream,
    phase: Phase,
    /// Received bytes: `rx[rstart..rend]` not yet opened.
    rx: Vec<u8>,
    rstart: usize,
    rend: usize,
    /// Records to send: `tx[tstart..tend]`.
    tx: Vec<u8>,
    tstart: usize,
    tend: usize,
    /// Bound on the send buffer (`-o ssl_wbuf_size`, at least [`TX_MIN`]).
    tx_cap: usize,
    /// The peer closed its side (end of stream seen).
    eof: bool,
    /// A failure was already counted (a handshake error counts once).
    failed: bool,
    /// Our first handshake flight is encoded: a failure from here on is a
    /// protocol error, not a handshake error (see [`TlsCounters`]).
    answered: bool,
    counters: Arc<TlsCounters>,
}

fn would_block() -> io::Error {
    io::ErrorKind::WouldBlock.into()
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// What one pass over the handshake state machine came to.
enum Step {
    Continue,
    Blocked,
    Ready,
    Failed(rustls::Error),
    PeerClosed,
}

impl TlsStream {
    /// `wbuf_size`: `-o ssl_wbuf_size`, the bound on output held.
    pub fn new(sock: TcpStream, conn: UnbufferedServerConnection, counters: Arc<TlsCounters>, wbuf_size: usize) -> TlsStream {
        TlsStream {
            sock,
            phase: Phase::Handshake(Box::new(conn)),
            rx: vec![0; RX_HANDSHAKE_START],
            rstart: 0,
            rend: 0,
            tx: Vec::new(),
            tstart: 0,
            tend: 0,
            tx_cap: wbuf_size.max(TX_MIN),
            eof: false,
            failed: false,
            answered: false,
            counters,
        }
    }

    pub fn socket(&mut self) -> &mut TcpStream {
        &mut self.sock
    }

    pub fn tcp(&self) -> &TcpStream {
        &self.sock
    }

    /// The handshake has not finished yet (the worker times it out).
    pub fn is_handshaking(&self) -> bool {
        matches!(self.phase, Phase::Handshake(_))
    }

    /// Lower the records sent per key of an established connection (tests:
    /// the suite's confidentiality limit without 2^24 records).
    pub fn limit_records_per_key(&mut self, n: u64) {
        if let Phase::Traffic(t) = &mut self.phase {
            t.layer.limit_records_per_key(n);
        }
    }

    /// Encrypted bytes are waiting for the socket.
    pub fn wants_write(&self) -> bool {
        self.tstart < self.tend
    }

    /// The server closes the connection. A handshake that never completed
    /// and was not counted when it failed (it timed out) counts in
    /// `ssl_handshake_errors`; an established connection gets a
    /// close_notify first if the socket takes it (as memcached's
    /// SSL_shutdown), so the client sees an orderly end rather than a
    /// truncation (OpenSSL clients answer that with an alert into a
    /// closed socket).
    pub fn abandon(&mut self) {
        match &mut self.phase {
            // The server ends it (larder's handshake timeout, a shutdown):
            // a handshake error whatever was sent.
            Phase::Handshake(_) if !self.failed => {
                self.failed = true;
                self.counters.handshake_errors.fetch_add(1, Relaxed);
            }
            // After the peer's close_notify too: TLS 1.2 wants one back.
            Phase::Traffic(t) if !self.eof && !t.sent_close => {
                t.sent_close = true;
                if queue_record(t, &mut self.tx, &mut self.tstart, &mut self.tend, content::ALERT, &[ALERT_WARNING, CLOSE_NOTIFY]).is_ok() {
                    let _ = self.send_pending();
                }
            }
            _ => {}
        }
    }

    /// The handshake fails on the peer's side (what it sent, or its
    /// leaving): counted once, as memcached counts it (see
    /// [`TlsCounters`]): a handshake error before our first flight, a
    /// protocol error after it.
    fn count_failure(&mut self) {
        if !self.failed && self.is_handshaking() {
            self.failed = true;
            let counter = if self.answered { &self.counters.proto_errors } else { &self.counters.handshake_errors };
            counter.fetch_add(1, Relaxed);
        }
    }

    /// Send what the send buffer holds; `WouldBlock` if the socket took
    /// less.
    pub fn send_pending(&mut self) -> io::Result<()> {
        while self.tstart < self.tend {
            match self.sock.write(&self.tx[self.tstart..self.tend]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.tstart += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if e.kind() != io::ErrorKind::WouldBlock {
                        self.count_failure();
                    }
                    return Err(e);
                }
            }
        }
        self.tstart = 0;
        self.tend = 0;
        if let Phase::Traffic(t) = &mut self.phase {
            // Our key update is out: a new request gets a new one.
            t.key_update_unsent = false;
        }
        Ok(())
    }

    /// Send what can go now; a full socket is not an error here.
    fn send_some(&mut self) -> io::Result<()> {
        match self.send_pending() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            r => r,
        }
    }

    /// Read from the socket into the receive buffer's free room: Ok(true)
    /// if the read came back short (the socket is drained) or the stream
    /// ended.
    fn fill(&mut self) -> io::Result<bool> {
        if self.rstart > 0 {
            self.rx.copy_within(self.rstart..self.rend, 0);
            self.rend -= self.rstart;
            self.rstart = 0;
        }
        let room = &mut self.rx[self.rend..];
        let offered = room.len();
        if offered == 0 {
            // Not reached: a whole record is opened before the next read,
            // and the handshake grows the buffer or fails. A read into no
            // room would look like end of stream.
            return Err(invalid("TLS receive buffer full"));
        }
        loop {
            match self.sock.read(room) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(true);
                }
                Ok(n) => {
                    self.rend += n;
                    return Ok(n < offered);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Plaintext into `buf`. Fewer bytes than `buf` holds only when the
    /// socket is drained (or ended); `Ok(0)`: the peer closed.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut socket_empty = false;
        while self.is_handshaking() {
            socket_empty = match self.fill() {
                Ok(short) => short,
                Err(e) => {
                    if e.kind() != io::ErrorKind::WouldBlock {
                        self.count_failure();
                    }
                    return Err(e);
                }
            };
            let ready = self.handshake();
            self.send_some()?;
            if ready? {
                break;
            }
            if self.eof {
                self.count_failure();
                return Ok(0);
            }
            if socket_empty {
                return Err(would_block());
            }
        }
        self.read_traffic(buf, socket_empty)
    }

    /// Run rustls's handshake over what the receive buffer holds: Ok(true)
    /// once it is done and the record layer has taken over.
    fn handshake(&mut self) -> io::Result<bool> {
        let mut early = Vec::new();
        let step = loop {
            let Phase::Handshake(conn) = &mut self.phase else { return Ok(true) };
            let status = conn.process_tls_records(&mut self.rx[..self.rend]);
            let discard = status.discard;
            let step = match status.state {
                Err(e) => Step::Failed(e),
                Ok(ConnectionState::ReadTraffic(mut r)) => {
                    let mut step = Step::Continue;
                    while let Some(record) = r.next_record() {
                        match record {
                            Ok(record) => early.extend_from_slice(record.payload),
                            Err(e) => {
                                step = Step::Failed(e);
                                break;
                            }
                        }
                    }
                    step
                }
                Ok(ConnectionState::EncodeTlsData(mut e)) => loop {
                    match e.encode(&mut self.tx[self.tend..]) {
                        Ok(n) => {
                            self.tend += n;
                            self.answered = true;
                            break Step::Continue;
                        }
                        // Our own handshake flight (certificates): sized by
                        // the server's configuration, not by the client.
                        Err(EncodeError::InsufficientSize(s)) => self.tx.resize(self.tend + s.required_size, 0),
                        Err(e) => break Step::Failed(rustls::Error::General(e.to_string())),
                    }
                },
                Ok(ConnectionState::TransmitTlsData(t)) => {
                    t.done();
                    Step::Continue
                }
                Ok(ConnectionState::BlockedHandshake) => Step::Blocked,
                // TLS 1.3 lets the server send before the client's Finished
                // arrives; the handshake is done only once it has.
                Ok(ConnectionState::WriteTraffic(_)) => Step::Ready,
                Ok(ConnectionState::PeerClosed) | Ok(ConnectionState::Closed) => Step::PeerClosed,
                Ok(_) => Step::Failed(rustls::Error::General("early data".into())),
            };
            self.rx.copy_within(discard..self.rend, 0);
            self.rend -= discard;
            match step {
                Step::Continue => continue,
                Step::Ready if conn.is_handshaking() => break Step::Blocked,
                step => break step,
            }
        };
        match step {
            Step::Ready => self.establish(early).map(|()| true),
            Step::Blocked => {
                if !early.is_empty() {
                    // rustls hands over data only once the handshake is done.
                    return self.fail_handshake(rustls::Error::General("data before the handshake finished".into()));
                }
                if self.rend == self.rx.len() {
                    // A handshake message larger than the buffer: grow it,
                    // up to rustls's own bound.
                    if self.rx.len() >= RX_HANDSHAKE_MAX {
                        return self.fail_handshake(rustls::Error::General("handshake message too large".into()));
                    }
                    self.rx.resize((self.rx.len() * 2).min(RX_HANDSHAKE_MAX), 0);
                }
                Ok(false)
            }
            Step::PeerClosed => {
                self.count_failure();
                self.eof = true;
                Ok(false)
            }
            Step::Failed(e) => self.fail_handshake(e),
            Step::Continue => unreachable!("the loop continues"),
        }
    }

    /// The handshake failed: send the alert rustls queued for it, count it.
    fn fail_handshake(&mut self, e: rustls::Error) -> io::Result<bool> {
        self.count_failure();
        if let Phase::Handshake(conn) = &mut self.phase {
            // After an error rustls still gives out what it queued (its
            // alert) before repeating the error. It is given the same
            // buffer: its handshake reassembly may point into it (an empty
            // one makes it panic).
            for _ in 0..4 {
                match conn.process_tls_records(&mut self.rx[..self.rend]).state {
                    Ok(ConnectionState::EncodeTlsData(mut d)) => {
                        let mut alert = [0u8; 64];
                        if let Ok(n) = d.encode(&mut alert) {
                            if self.tx.len() < self.tend + n {
                                self.tx.resize(self.tend + n, 0);
                            }
                            self.tx[self.tend..self.tend + n].copy_from_slice(&alert[..n]);
                            self.tend += n;
                        }
                    }
                    Ok(ConnectionState::TransmitTlsData(t)) => t.done(),
                    _ => break,
                }
            }
        }
        let _ = self.send_pending();
        self.phase = Phase::Dead;
        Err(io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// The handshake is done: take the secrets from rustls and size the
    /// buffers for traffic, once.
    fn establish(&mut self, early: Vec<u8>) -> io::Result<()> {
        let Phase::Handshake(conn) = std::mem::replace(&mut self.phase, Phase::Dead) else { return Ok(()) };
        let (secrets, kernel) = match conn.dangerous_into_kernel_connection() {
            Ok(k) => k,
            Err(e) => {
                self.failed = true;
                self.counters.handshake_errors.fetch_add(1, Relaxed);
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        };
        let keys = RecordLayer::new(kernel.protocol_version(), kernel.negotiated_cipher_suite(), &secrets.tx.1)
            .and_then(|layer| Ok((Keys::new(secrets.rx.0, &secrets.rx.1)?, Keys::new(secrets.tx.0, &secrets.tx.1)?, layer)));
        let Ok((rx, tx, layer)) = keys else { return Err(invalid("TLS suite without a record layer")) };
        // What is left is at most one unfinished record (rustls took every
        // whole one); a longer rest announced a record over the limit.
        if self.rend > RX_TRAFFIC {
            return Err(invalid("TLS record over the size limit"));
        }
        // New zeroed buffers (calloc), not grown ones: the allocator's fresh
        // memory is zero already, so a connection's resident memory is the
        // pages its traffic touches, not the buffers' full size.
        if self.rx.len() != RX_TRAFFIC {
            let mut rx = vec![0u8; RX_TRAFFIC];
            rx[..self.rend].copy_from_slice(&self.rx[..self.rend]);
            self.rx = rx;
        }
        if self.tx.len() < self.tx_cap {
            let mut tx = vec![0u8; self.tx_cap];
            tx[..self.tend].copy_from_slice(&self.tx[..self.tend]);
            self.tx = tx;
        }
        self.phase = Phase::Traffic(Box::new(Traffic::new(layer, rx, tx, kernel, early)));
        Ok(())
    }

    /// Plaintext of an established connection into `buf`.
    fn read_traffic(&mut self, buf: &mut [u8], mut socket_empty: bool) -> io::Result<usize> {
        let mut got = 0;
        loop {
            let Phase::Traffic(t) = &mut self.phase else { return Err(invalid("TLS connection failed")) };
            if !t.early.is_empty() {
                let n = t.early.len().min(buf.len() - got);
                buf[got..got + n].copy_from_slice(&t.early[..n]);
                t.early.drain(..n);
                got += n;
                if t.early.is_empty() {
                    t.early = Vec::new();
                }
            }
            let (start, end) = t.plain;
            let n = (end - start).min(buf.len() - got);
            buf[got..got + n].copy_from_slice(&self.rx[start..start + n]);
            t.plain.0 += n;
            got += n;
            if got == buf.len() || t.peer_closed {
                return Ok(got);
            }
            match self.next_record() {
                Ok(true) => continue,
                Ok(false) => {}
                Err(stop) => return Err(self.stop(stop)),
            }
            if self.eof {
                // Ended without close_notify: as a plain socket's end.
                return Ok(got);
            }
            if socket_empty {
                // The last socket read gave less than it was offered: the
                // socket is empty, and edge-triggered readiness will say
                // when it is not. Asking again would only hear EAGAIN: a
                // system call per request for nothing (the plain path
                // avoids it too).
                return if got > 0 { Ok(got) } else { Err(would_block()) };
            }
            match self.fill() {
                Ok(short) => socket_empty = short,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return if got > 0 { Ok(got) } else { Err(e) },
                Err(e) => return if got > 0 { Ok(got) } else { Err(e) },
            }
        }
    }

    /// The connection ends on a protocol error (`ssl_proto_errors`): our
    /// alert out if the socket takes it, and every later call fails.
    fn stop(&mut self, stop: Stop) -> io::Error {
        self.counters.proto_errors.fetch_add(1, Relaxed);
        let why = match stop {
            Stop::Alert(f) => {
                if let Phase::Traffic(t) = &mut self.phase {
                    let _ = queue_record(t, &mut self.tx, &mut self.tstart, &mut self.tend, content::ALERT, &[ALERT_FATAL, f as u8]);
                    let _ = self.send_pending();
                }
                format!("TLS: sent fatal alert {f:?}")
            }
            Stop::PeerAlert(d) => format!("TLS: peer sent fatal alert {d}"),
        };
        self.phase = Phase::Dead;
        invalid(&why)
    }

    /// Open the next whole record in the receive buffer, if there is one,
    /// and act on it: Ok(false) if more bytes are needed first.
    fn next_record(&mut self) -> Result<bool, Stop> {
        let Phase::Traffic(t) = &mut self.phase else { return Err(Stop::Alert(Fatal::UnexpectedMessage)) };
        let Some(len) = t.layer.record_len(&self.rx[self.rstart..self.rend])? else { return Ok(false) };
        if self.rend - self.rstart < len {
            return Ok(false);
        }
        let at = self.rstart;
        let opened = t.layer.open(&mut t.rx, &mut self.rx[at..at + len])?;
        self.rstart += len;
        let (start, end) = (at + opened.start, at + opened.end);
        if t.skip_handshake > 0 && opened.typ != content::HANDSHAKE {
            // A handshake message is not interleaved with other records.
            return Err(Fatal::UnexpectedMessage.into());
        }
        match opened.typ {
            content::APPLICATION_DATA => {
                if start == end {
                    t.empty_left = t.empty_left.checked_sub(1).ok_or(Fatal::UnexpectedMessage)?;
                } else {
                    t.empty_left = MAX_EMPTY_RECORDS;
                    t.key_updates_left = MAX_KEY_UPDATES;
                }
                t.plain = (start, end);
            }
            content::ALERT => alert(t, &self.rx[start..end])?,
            content::HANDSHAKE => {
                let mut reply = Reply::None;
                if t.layer.is_tls13() {
                    key_update(t, &self.rx[start..end], &mut reply)?;
                } else {
                    renegotiation(t, &self.rx[start..end], &mut reply)?;
                }
                match reply {
                    Reply::None => {}
                    Reply::KeyUpdate => send_key_update(t, &mut self.tx, &mut self.tstart, &mut self.tend)?,
                    Reply::NoRenegotiation => {
                        queue_record(t, &mut self.tx, &mut self.tstart, &mut self.tend, content::ALERT, &[ALERT_WARNING, NO_RENEGOTIATION])?
                    }
                }
                self.send_some().map_err(|_| Stop::Alert(Fatal::Exhausted))?;
            }
            _ => return Err(Fatal::UnexpectedMessage.into()),
        }
        Ok(true)
    }

    /// Encrypt (part of) `buf` and send it. Accepts nothing (`WouldBlock`)
    /// while earlier records are still unsent.
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.send_pending()?;
        let t = match &mut self.phase {
            Phase::Handshake(_) => return Err(would_block()),
            Phase::Dead => return Err(io::ErrorKind::BrokenPipe.into()),
            Phase::Traffic(t) => t,
        };
        if t.sent_close {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        // The send buffer is empty here (send_pending emptied it).
        let room = self.tx.len() - TX_RESERVE;
        let (prefix, overhead) = (t.layer.prefix(), t.layer.overhead());
        let mut taken = 0;
        while taken < buf.len() {
            if t.layer.tx_exhausted(&t.tx) {
                if t.layer.is_tls13() {
                    send_key_update(t, &mut self.tx, &mut self.tstart, &mut self.tend).map_err(|_| invalid("TLS send buffer full"))?;
                } else {
                    // TLS 1.2 cannot renew its keys: end before the suite's
                    // limit, as rustls does.
                    t.sent_close = true;
                    let _ = queue_record(t, &mut self.tx, &mut self.tstart, &mut self.tend, content::ALERT, &[ALERT_WARNING, CLOSE_NOTIFY]);
                    let _ = self.send_pending();
                    return Err(invalid("TLS 1.2 record limit of the cipher suite reached"));
                }
            }
            let free = room.saturating_sub(self.tend + overhead);
            let chunk = (buf.len() - taken).min(MAX_PLAINTEXT).min(free);
            // Records are not cut small to fill the last bytes of the buffer.
            if chunk == 0 || (taken > 0 && chunk < (buf.len() - taken).min(MAX_PLAINTEXT)) {
                break;
            }
            let at = self.tend;
            self.tx[at + prefix..at + prefix + chunk].copy_from_slice(&buf[taken..taken + chunk]);
            let n = t.layer.seal(&mut t.tx, content::APPLICATION_DATA, &mut self.tx[at..], chunk).map_err(|_| invalid("TLS sequence numbers used up"))?;
            self.tend += n;
            taken += chunk;
        }
        self.send_some()?;
        Ok(taken)
    }
}
