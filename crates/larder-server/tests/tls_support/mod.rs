//! An in-process TLS pair for the record-layer tests (tls_record.rs,
//! tls_record_alloc.rs): larder's `net::tls::TlsStream` on one end of a
//! loopback TCP connection, a real rustls client on the other, both
//! non-blocking and driven by hand from the test's thread, so a test can
//! look at (and tamper with) every byte on the wire.

#![allow(dead_code)]

use larder_server::net::tls::{TlsCounters, TlsStream};
use larder_server::config::tls::{build_config, TlsSettings};
use rustls::client::ClientConnection;
use rustls::server::UnbufferedServerConnection;
use rustls::SupportedCipherSuite;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::common;

/// larder's server configuration with the test certificate.
pub fn server_config(tweak: impl FnOnce(&mut TlsSettings)) -> Arc<rustls::ServerConfig> {
    let c = common::tls::certs();
    let mut settings = TlsSettings {
        enabled: true,
        chain_cert: Some(c.server_crt.display().to_string()),
        key: Some(c.server_key.display().to_string()),
        ..TlsSettings::default()
    };
    tweak(&mut settings);
    Arc::new(build_config(&settings, &Default::default()).expect("larder's TLS configuration"))
}

/// A rustls client offering only `suite` (and its version).
pub fn client_config(suite: SupportedCipherSuite) -> Arc<rustls::ClientConfig> {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = vec![suite];
    let version = suite.version();
    let roots = {
        let mut r = rustls::RootCertStore::empty();
        use rustls::pki_types::pem::PemObject;
        for cert in rustls::pki_types::CertificateDer::pem_file_iter(&common::tls::certs().ca).unwrap() {
            r.add(cert.unwrap()).unwrap();
        }
        r
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// The RSA suites the test certificate can use, TLS 1.3 then TLS 1.2:
/// every AEAD larder's record layer handles (the ECDSA TLS 1.2 suites
/// differ only in the handshake's signature).
pub fn suites() -> Vec<SupportedCipherSuite> {
    use rustls::crypto::ring::cipher_suite::*;
    vec![
        TLS13_AES_128_GCM_SHA256,
        TLS13_AES_256_GCM_SHA384,
        TLS13_CHACHA20_POLY1305_SHA256,
        TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ]
}

pub struct Pair {
    pub server: TlsStream,
    pub client: ClientConnection,
    /// The client's socket (non-blocking).
    pub sock: TcpStream,
    /// The server said end of stream (`read` gave 0).
    pub server_eof: bool,
    pub counters: Arc<TlsCounters>,
}

impl Pair {
    /// Connected and handshaken with `suite`.
    pub fn new(suite: SupportedCipherSuite) -> Pair {
        let mut p = Pair::connect(server_config(|_| {}), client_config(suite));
        p.handshake();
        assert_eq!(p.client.negotiated_cipher_suite(), Some(suite));
        p
    }

    /// Connected, not yet handshaken.
    pub fn connect(server: Arc<rustls::ServerConfig>, client: Arc<rustls::ClientConfig>) -> Pair {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let sock = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (ssock, _) = listener.accept().unwrap();
        ssock.set_nonblocking(true).unwrap();
        sock.set_nonblocking(true).unwrap();
        let counters = Arc::new(TlsCounters::default());
        let conn = UnbufferedServerConnection::new(server).unwrap();
        let server = TlsStream::new(mio::net::TcpStream::from_std(ssock), conn, counters.clone(), 16 * 1024);
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut client = ClientConnection::new(client, name).unwrap();
        // The tests send a megabyte in one write.
        client.set_buffer_limit(None);
        Pair { server, client, sock, server_eof: false, counters }
    }

    pub fn handshake(&mut self) {
        let start = Instant::now();
        while self.client.is_handshaking() || self.server.is_handshaking() {
            assert!(start.elapsed() < Duration::from_secs(10), "handshake did not finish");
            self.client_flush();
            let got = self.server_read().expect("server handshake");
            assert!(got.is_empty());
            self.client_recv().expect("client handshake");
            std::thread::yield_now();
        }
    }

    /// The client's pending TLS bytes onto the socket.
    pub fn client_flush(&mut self) {
        while self.client.wants_write() {
            match self.client.write_tls(&mut self.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Let the server take some first.
                    return;
                }
                Err(e) => panic!("client write: {e}"),
            }
        }
    }

    /// The client's pending TLS bytes, taken instead of sent.
    pub fn client_wire(&mut self) -> Vec<u8> {
        let mut wire = Vec::new();
        while self.client.wants_write() {
            self.client.write_tls(&mut wire).unwrap();
        }
        wire
    }

    /// Raw bytes onto the client's socket.
    pub fn send_raw(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match self.sock.write(bytes) {
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("raw write: {e}"),
            }
        }
    }

    /// Everything the server can read now (as the session would: until a
    /// short read or `WouldBlock`); marks end of stream.
    pub fn server_read(&mut self) -> io::Result<Vec<u8>> {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match self.server.read(&mut buf) {
                Ok(0) => {
                    self.server_eof = true;
                    return Ok(got);
                }
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(got),
                Err(e) => return Err(e),
            }
        }
    }

    /// Raw bytes the server sent that have arrived.
    pub fn client_raw(&mut self) -> Vec<u8> {
        let mut raw = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            match self.sock.read(&mut buf) {
                Ok(0) => return raw,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return raw,
                Err(e) => panic!("client read: {e}"),
            }
        }
    }

    /// Feed raw server bytes to the client; the plaintext it yields.
    pub fn client_feed(&mut self, mut raw: &[u8]) -> Result<Vec<u8>, rustls::Error> {
        let mut plain = Vec::new();
        loop {
            // Plaintext out as it comes (rustls bounds what it holds).
            match self.client.reader().read_to_end(&mut plain) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("client plaintext: {e}"),
            }
            if raw.is_empty() {
                return Ok(plain);
            }
            self.client.read_tls(&mut raw).unwrap();
            self.client.process_new_packets()?;
        }
    }

    /// What the server sent, through the client.
    pub fn client_recv(&mut self) -> Result<Vec<u8>, rustls::Error> {
        let raw = self.client_raw();
        self.client_feed(&raw)
    }

    /// The client sends `data` (as one write: records of up to 16 KiB).
    pub fn client_send(&mut self, data: &[u8]) {
        self.client.writer().write_all(data).unwrap();
    }

    /// Client → server: `data` sent, the server reads until it has it all.
    pub fn send_to_server(&mut self, data: &[u8]) -> Vec<u8> {
        self.client_send(data);
        let mut got = Vec::new();
        let start = Instant::now();
        while got.len() < data.len() {
            assert!(start.elapsed() < Duration::from_secs(20), "server got {} of {} bytes", got.len(), data.len());
            self.client_flush();
            got.extend(self.server_read().expect("server read"));
        }
        got
    }

    /// Server → client: the server writes `data` (as the session does:
    /// again while it takes some, waiting on `WouldBlock`), the client
    /// reads until it has it all.
    pub fn send_to_client(&mut self, data: &[u8]) -> Vec<u8> {
        let mut sent = 0;
        let mut got = Vec::new();
        let start = Instant::now();
        while got.len() < data.len() {
            assert!(start.elapsed() < Duration::from_secs(20), "client got {} of {} bytes", got.len(), data.len());
            if sent < data.len() {
                match self.server.write(&data[sent..]) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => panic!("server write: {e}"),
                }
            } else {
                match self.server.send_pending() {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => panic!("server send: {e}"),
                }
            }
            got.extend(self.client_recv().expect("client read"));
        }
        got
    }
}

/// Poll `f` until it gives an answer (loopback delivery is not immediate
/// on a busy machine: softirqs may run later, in ksoftirqd).
pub fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The TLS records in `wire`: (content type, length) of each whole one.
pub fn records(wire: &[u8]) -> Vec<(u8, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while wire.len() >= at + 5 {
        let len = u16::from_be_bytes([wire[at + 3], wire[at + 4]]) as usize;
        if wire.len() < at + 5 + len {
            break;
        }
        out.push((wire[at], len));
        at += 5 + len;
    }
    out
}
