//! A TLS connection over a non-blocking TCP socket (`-Z`), made to look like
//! the plain socket to the session: `read` gives plaintext, `write` takes
//! plaintext, both say `WouldBlock` exactly when the socket does.
//!
//! rustls does the protocol; this type only moves bytes between it and the
//! socket. Two properties the session relies on:
//!
//! * a `read` that returns fewer bytes than offered has drained the socket
//!   (it read until `WouldBlock` or end of stream), as a plain socket read
//!   would; with edge-triggered readiness the session then waits for the
//!   next event instead of reading again to hear `EAGAIN`;
//! * encrypted output that the socket did not take stays inside rustls,
//!   bounded by its buffer limit (`-o ssl_wbuf_size`); [`TlsStream::wants_write`]
//!   tells the worker to wait for write readiness, and `write` accepts no
//!   new plaintext until that is sent, so a client that does not read
//!   cannot make the server buffer more.
//!
//! TLS 1.3 has no renegotiation and rustls refuses TLS 1.2's; a key update
//! costs one record each way and no memory that stays.

use mio::net::TcpStream;
use rustls::ServerConnection;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The TLS counters of `stats` (memcached's names), shared by every
/// connection and the listener that made them.
#[derive(Default, Debug)]
pub struct TlsCounters {
    /// Handshakes that failed (bad ClientHello, refused version or client
    /// certificate, peer gone or timed out before finishing).
    pub handshake_errors: AtomicU64,
    /// Sessions the server-side cache stored (`-o ssl_session_cache`).
    pub new_sessions: AtomicU64,
}

pub struct TlsStream {
    sock: TcpStream,
    conn: ServerConnection,
    /// The peer closed its side (end of stream or close_notify seen).
    eof: bool,
    /// A failure was already counted (a handshake error counts once).
    failed: bool,
    /// The last socket read returned less than it was offered.
    drained: bool,
    counters: std::sync::Arc<TlsCounters>,
}

fn would_block() -> io::Error {
    io::ErrorKind::WouldBlock.into()
}

impl TlsStream {
    pub fn new(sock: TcpStream, conn: ServerConnection, counters: std::sync::Arc<TlsCounters>) -> TlsStream {
        TlsStream { sock, conn, eof: false, failed: false, drained: false, counters }
    }

    pub fn socket(&mut self) -> &mut TcpStream {
        &mut self.sock
    }

    pub fn tcp(&self) -> &TcpStream {
        &self.sock
    }

    /// The handshake has not finished yet (the worker times it out).
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Encrypted bytes are waiting for the socket.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// The server closes the connection. A handshake that never completed
    /// (timed out, or the peer left) counts as memcached's
    /// `ssl_handshake_errors`; an established connection gets a
    /// close_notify first if the socket takes it (as memcached's
    /// SSL_shutdown), so the client sees an orderly end rather than a
    /// truncation (OpenSSL clients answer that with an alert into a
    /// closed socket).
    pub fn abandon(&mut self) {
        if self.conn.is_handshaking() {
            self.count_failure();
        } else if !self.eof {
            self.conn.send_close_notify();
            let _ = self.send_pending();
        }
    }

    fn count_failure(&mut self) {
        if !self.failed && self.conn.is_handshaking() {
            self.failed = true;
            self.counters.handshake_errors.fetch_add(1, Relaxed);
        }
    }

    /// Send what rustls holds; `WouldBlock` if the socket took less.
    pub fn send_pending(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.sock) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if e.kind() != io::ErrorKind::WouldBlock {
                        self.count_failure();
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Feed what the socket has to rustls: Ok(false) at `WouldBlock`,
    /// Ok(true) when something was read (or the stream ended).
    fn pull(&mut self) -> io::Result<bool> {
        let n = loop {
            let mut probe = Probe { sock: &mut self.sock, short: false };
            let r = self.conn.read_tls(&mut probe);
            self.drained = probe.short;
            match r {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => {
                    self.count_failure();
                    return Err(e);
                }
            }
        };
        if n == 0 {
            self.eof = true;
        }
        if let Err(e) = self.conn.process_new_packets() {
            // rustls queued an alert saying why; send it if the socket takes it.
            self.count_failure();
            let _ = self.conn.write_tls(&mut self.sock);
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        if n == 0 && self.conn.is_handshaking() {
            self.count_failure();
        }
        // Handshake messages, key update replies: out at once.
        match self.send_pending() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        Ok(true)
    }

    /// Plaintext into `buf`. Fewer bytes than `buf` holds only when the
    /// socket is drained (or ended); `Ok(0)`: the peer closed.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut got = 0;
        let mut socket_empty = false;
        loop {
            match self.conn.reader().read(&mut buf[got..]) {
                Ok(0) if got < buf.len() => return Ok(got), // close_notify
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // Ended without close_notify: as a plain socket's end.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(got),
                Err(e) => return if got > 0 { Ok(got) } else { Err(e) },
            }
            if got == buf.len() {
                return Ok(got);
            }
            if self.eof {
                return Ok(got);
            }
            if socket_empty {
                // The last socket read gave less than rustls asked for: the
                // socket is empty, and edge-triggered readiness will say
                // when it is not. Asking again would only hear EAGAIN: a
                // system call per request for nothing (the plain path
                // avoids it too).
                return if got > 0 { Ok(got) } else { Err(would_block()) };
            }
            match self.pull() {
                Ok(true) => socket_empty = self.drained,
                Ok(false) => return if got > 0 { Ok(got) } else { Err(would_block()) },
                Err(e) => return if got > 0 { Ok(got) } else { Err(e) },
            }
        }
    }

    /// Encrypt (part of) `buf` and send it. Accepts nothing (`WouldBlock`)
    /// while earlier records are still unsent.
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.send_pending()?;
        if self.conn.is_handshaking() {
            return Err(would_block());
        }
        let n = self.conn.writer().write(buf)?;
        if n == 0 && !buf.is_empty() {
            return Err(would_block());
        }
        match self.send_pending() {
            Ok(()) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(n),
            Err(e) => Err(e),
        }
    }
}

/// The socket as rustls reads it, noting whether a read came back short
/// (the socket had no more).
struct Probe<'a> {
    sock: &'a mut TcpStream,
    short: bool,
}

impl Read for Probe<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.sock.read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}
