//! `--tls-ca FILE`: every connection of `run` speaks TLS (memcached `-Z`,
//! larder `-Z`), trusting the CA in FILE. The handshake is done blocking
//! when the connection opens, outside the measured time; requests then go
//! through rustls like any TLS client's.
//!
//! One process-wide setting rather than a field threaded through every
//! scenario: a run is either all TLS or all plain.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::io::{Read, Write};
use std::net::TcpStream as StdTcp;
use std::sync::{Arc, OnceLock};

static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();

/// Make every later connection TLS, trusting the PEM CA certificate(s) in `ca`.
pub fn enable(ca: &str) -> Result<(), String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).map_err(|e| format!("--tls-ca {ca}: {e}"))? {
        roots.add(cert.map_err(|e| format!("--tls-ca {ca}: {e}"))?).map_err(|e| format!("--tls-ca {ca}: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let _ = CONFIG.set(Arc::new(config));
    Ok(())
}

/// A plain or TLS connection; non-blocking once made.
pub enum Stream {
    Plain(mio::net::TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, mio::net::TcpStream>>),
}

impl Stream {
    /// Wrap a connected blocking socket (TLS: handshake first), then make it non-blocking.
    pub fn open(s: StdTcp) -> std::io::Result<Stream> {
        let _ = s.set_nodelay(true);
        let Some(config) = CONFIG.get() else {
            s.set_nonblocking(true)?;
            return Ok(Stream::Plain(mio::net::TcpStream::from_std(s)));
        };
        let ip = s.peer_addr()?.ip();
        let mut conn = rustls::ClientConnection::new(config.clone(), ServerName::IpAddress(ip.into())).map_err(std::io::Error::other)?;
        let mut sock = s;
        while conn.is_handshaking() {
            conn.complete_io(&mut sock)?;
        }
        sock.set_nonblocking(true)?;
        Ok(Stream::Tls(Box::new(rustls::StreamOwned::new(conn, mio::net::TcpStream::from_std(sock)))))
    }

    pub fn socket(&mut self) -> &mut mio::net::TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &mut t.sock,
        }
    }

    pub fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }

    /// Plaintext in; what rustls could not send yet stays in it ([`Stream::send_pending`]).
    pub fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(t) => {
                t.send_pending()?;
                t.conn.writer().write(buf)
            }
        }
    }

    /// TLS records not yet on the socket.
    pub fn wants_write(&self) -> bool {
        matches!(self, Stream::Tls(t) if t.conn.wants_write())
    }
}

trait SendPending {
    fn send_pending(&mut self) -> std::io::Result<()>;
}

impl SendPending for rustls::StreamOwned<rustls::ClientConnection, mio::net::TcpStream> {
    fn send_pending(&mut self) -> std::io::Result<()> {
        while self.conn.wants_write() {
            self.conn.write_tls(&mut self.sock)?;
        }
        Ok(())
    }
}

impl Stream {
    /// Send what rustls holds; `WouldBlock` when the socket is full.
    pub fn send_pending(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(_) => Ok(()),
            Stream::Tls(t) => t.send_pending(),
        }
    }
}
