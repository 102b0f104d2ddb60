//! One stream type for every client connection, TCP, TLS over TCP or
//! Unix-domain, so sessions and the `watch` logger handle them alike.

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use crate::net::tls::TlsStream;
use std::io::{self, IoSlice, Read, Write};

/// A TCP, TLS or Unix-domain stream.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// Boxed: a TLS stream (rustls state, buffer bookkeeping) is over a
    /// kilobyte, plain streams a word.
    Tls(Box<TlsStream>),
}

impl Stream {
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }

    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    /// Write from several buffers in order (one `writev` on plain
    /// sockets; a TLS stream takes the first non-empty one, as `Write`'s
    /// default does).
    pub fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
            Stream::Tls(s) => match bufs.iter().find(|b| !b.is_empty()) {
                Some(b) => s.write(b),
                None => Ok(0),
            },
        }
    }

    /// Output the stream itself holds (TLS records the socket did not
    /// take); the session's own buffer is separate.
    pub fn wants_write(&self) -> bool {
        match self {
            Stream::Tls(s) => s.wants_write(),
            _ => false,
        }
    }

    /// Send what the stream holds; `WouldBlock` if it could not all go.
    pub fn send_pending(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => s.send_pending(),
            _ => Ok(()),
        }
    }

    /// The connection closes: a TLS handshake it had not finished counts
    /// as failed (`ssl_handshake_errors`).
    pub fn abandon(&mut self) {
        if let Stream::Tls(s) = self {
            s.abandon();
        }
    }

    /// A TLS handshake is still under way.
    pub fn is_handshaking(&self) -> bool {
        match self {
            Stream::Tls(s) => s.is_handshaking(),
            _ => false,
        }
    }

    /// Register for reads only; write readiness is asked for only while
    /// output is pending (see `Worker::sync_interest`): with edge-triggered
    /// write interest always on, every ACK from the client would wake the
    /// worker for nothing.
    pub fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        let interest = Interest::READABLE;
        match self {
            Stream::Tcp(s) => s.register(registry, token, interest),
            Stream::Unix(s) => s.register(registry, token, interest),
            Stream::Tls(t) => { let s = t.socket(); s.register(registry, token, interest) }
        }
    }

    /// Register for reads and writes (the `watch` logger's streams).
    pub fn register_both(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        self.register(registry, token)?;
        self.reregister(registry, token, true)
    }

    /// Change the readiness this stream is registered for.
    pub fn reregister(&mut self, registry: &Registry, token: Token, write: bool) -> io::Result<()> {
        let interest = if write { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
        match self {
            Stream::Tcp(s) => s.reregister(registry, token, interest),
            Stream::Unix(s) => s.reregister(registry, token, interest),
            Stream::Tls(t) => { let s = t.socket(); s.reregister(registry, token, interest) }
        }
    }

    pub fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(registry),
            Stream::Unix(s) => s.deregister(registry),
            Stream::Tls(t) => { let s = t.socket(); s.deregister(registry) }
        }
    }
}

