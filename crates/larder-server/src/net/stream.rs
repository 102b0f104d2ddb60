//! One stream type for every client connection, TCP or Unix-domain, so
//! sessions and the `watch` logger handle both alike.

use mio::event::Source;
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};
use std::io::{self, Read, Write};

/// A TCP or Unix-domain stream.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
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
        }
    }

    /// Change the readiness this stream is registered for.
    pub fn reregister(&mut self, registry: &Registry, token: Token, write: bool) -> io::Result<()> {
        let interest = if write { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
        match self {
            Stream::Tcp(s) => s.reregister(registry, token, interest),
            Stream::Unix(s) => s.reregister(registry, token, interest),
        }
    }

    pub fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(registry),
            Stream::Unix(s) => s.deregister(registry),
        }
    }
}

