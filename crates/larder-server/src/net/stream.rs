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

    /// Fix the kernel's send buffer of this connection at `bytes` (Linux
    /// doubles the figure for its bookkeeping), turning off its automatic
    /// growth (up to `net.ipv4.tcp_wmem`'s maximum, 4 MiB by default).
    /// For connections whose pending output the server bounds itself (a
    /// near-cache stream): a peer that never reads then holds a little
    /// kernel memory, and the rest waits in the server's bounded, charged
    /// queue instead.
    pub fn cap_send_buffer(&self, bytes: usize) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let fd = match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(t) => t.tcp().as_raw_fd(),
        };
        let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fd` is this stream's socket, open while `self` is
        // borrowed; the option value points at a live c_int on the stack
        // and its exact size is passed; the call reads nothing else.
        let r = unsafe {
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &v as *const libc::c_int as *const libc::c_void, std::mem::size_of::<libc::c_int>() as libc::socklen_t)
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sndbuf(s: &TcpStream) -> libc::c_int {
        use std::os::fd::AsRawFd;
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: an open socket, a live c_int and its size as the buffer.
        let r = unsafe { libc::getsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, &mut v as *mut libc::c_int as *mut libc::c_void, &mut len) };
        assert_eq!(r, 0);
        v
    }

    #[test]
    fn caps_the_kernel_send_buffer() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let stream = Stream::Tcp(TcpStream::from_std(server));
        stream.cap_send_buffer(64 << 10).unwrap();
        let Stream::Tcp(s) = &stream else { unreachable!() };
        // Linux reports twice what was set.
        assert_eq!(sndbuf(s), 2 * (64 << 10));
        drop(client);
    }
}

