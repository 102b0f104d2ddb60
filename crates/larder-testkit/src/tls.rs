//! TLS for tests: a throwaway certificate authority with a server and a
//! client certificate (made with the `openssl` command, which scripts/test
//! installs), and a blocking TLS client (rustls) with the same line-oriented
//! helpers as [`crate::Client`].

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Files of the test PKI, all PEM.
#[derive(Clone, Debug)]
pub struct Certs {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub server_crt: PathBuf,
    pub server_key: PathBuf,
    pub client_crt: PathBuf,
    pub client_key: PathBuf,
    /// A second server identity (`refresh_certs` tests swap to it).
    pub other_crt: PathBuf,
    pub other_key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("openssl (apt-get install openssl; scripts/test does): {e}"));
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Make a CA and certificates it signs in `dir`: the server's for
/// `localhost` and 127.0.0.1 (CN `cn`), a client's.
fn issue(dir: &Path, name: &str, cn: &str, san: Option<&str>) {
    let key = format!("{name}.key");
    let csr = format!("{name}.csr");
    let crt = format!("{name}.crt");
    openssl(dir, &["req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj", &format!("/CN={cn}")]);
    let ext = format!("{name}.ext");
    let text = match san {
        Some(s) => format!("subjectAltName={s}\n"),
        None => "extendedKeyUsage=clientAuth\n".to_string(),
    };
    std::fs::write(dir.join(&ext), text).unwrap();
    openssl(dir, &["x509", "-req", "-in", &csr, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", &crt, "-days", "36500", "-extfile", &ext]);
}

/// The test PKI, made once per test process.
pub fn certs() -> &'static Certs {
    static CERTS: OnceLock<Certs> = OnceLock::new();
    CERTS.get_or_init(|| {
        // Kept for the whole process (a static is never dropped): the next
        // test process sweeps it away.
        crate::scratch::sweep_dead("tls");
        let dir = std::env::temp_dir().join(format!("larder-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        openssl(&dir, &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "36500", "-subj", "/CN=larder test CA"]);
        issue(&dir, "server", "localhost", Some("DNS:localhost,IP:127.0.0.1"));
        issue(&dir, "other", "other.localhost", Some("DNS:localhost,IP:127.0.0.1"));
        issue(&dir, "client", "client", None);
        Certs {
            ca: dir.join("ca.crt"),
            server_crt: dir.join("server.crt"),
            server_key: dir.join("server.key"),
            client_crt: dir.join("client.crt"),
            client_key: dir.join("client.key"),
            other_crt: dir.join("other.crt"),
            other_key: dir.join("other.key"),
            dir,
        }
    })
}

/// The `-Z` flags for a server using [`certs`].
pub fn server_args(c: &Certs) -> Vec<String> {
    vec![
        "-Z".into(),
        "-o".into(),
        format!("ssl_chain_cert={}", c.server_crt.display()),
        "-o".into(),
        format!("ssl_key={}", c.server_key.display()),
    ]
}

/// What a TLS client offers: versions and whether it shows a certificate.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientOptions {
    /// Only TLS 1.2 (default: 1.2 and 1.3).
    pub tls12_only: bool,
    /// Present the client certificate.
    pub client_cert: bool,
}

/// A rustls client configuration trusting the test CA.
pub fn client_config(o: ClientOptions) -> Arc<rustls::ClientConfig> {
    let c = certs();
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&c.ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] =
        if o.tls12_only { &[&rustls::version::TLS12] } else { &[&rustls::version::TLS13, &rustls::version::TLS12] };
    let b = rustls::ClientConfig::builder_with_provider(provider).with_protocol_versions(versions).unwrap().with_root_certificates(roots);
    let config = if o.client_cert {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&c.client_crt).unwrap().map(Result::unwrap).collect();
        let key = PrivateKeyDer::from_pem_file(&c.client_key).unwrap();
        b.with_client_auth_cert(chain, key).unwrap()
    } else {
        b.with_no_client_auth()
    };
    Arc::new(config)
}

/// A blocking TLS connection to 127.0.0.1.
pub struct TlsClient {
    pub reader: BufReader<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>,
}

impl TlsClient {
    /// Connect and finish the handshake (panics if it fails).
    pub fn connect(port: u16) -> TlsClient {
        TlsClient::try_connect(port, ClientOptions::default()).unwrap_or_else(|e| panic!("TLS to 127.0.0.1:{port}: {e}"))
    }

    /// Connect with `o`; the handshake's error if it fails.
    pub fn try_connect(port: u16, o: ClientOptions) -> std::io::Result<TlsClient> {
        let sock = TcpStream::connect(("127.0.0.1", port))?;
        sock.set_read_timeout(Some(crate::client::READ_TIMEOUT))?;
        // A request and the records before it (key updates) go at once.
        sock.set_nodelay(true)?;
        let name = ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(client_config(o), name).map_err(std::io::Error::other)?;
        let mut stream = rustls::StreamOwned::new(conn, sock);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        // TLS 1.3: a refused client certificate shows only on the first read.
        Ok(TlsClient { reader: BufReader::new(stream) })
    }

    pub fn conn(&mut self) -> &mut rustls::ClientConnection {
        &mut self.reader.get_mut().conn
    }

    /// The server's certificate (DER) as this connection saw it.
    pub fn peer_certificate(&mut self) -> Vec<u8> {
        self.conn().peer_certificates().and_then(|c| c.first()).map(|c| c.as_ref().to_vec()).unwrap_or_default()
    }

    pub fn set_read_timeout(&mut self, t: Option<Duration>) {
        self.reader.get_ref().sock.set_read_timeout(t).unwrap();
    }

    pub fn send(&mut self, bytes: &[u8]) {
        let s = self.reader.get_mut();
        s.write_all(bytes).unwrap();
        s.flush().unwrap();
    }

    /// One reply line including `\r\n` (empty at end of stream).
    pub fn line(&mut self) -> String {
        let mut l = String::new();
        self.reader.read_line(&mut l).unwrap();
        l
    }

    /// One line, or the error that ended the connection.
    pub fn try_line(&mut self) -> std::io::Result<String> {
        let mut l = String::new();
        self.reader.read_line(&mut l)?;
        Ok(l)
    }

    pub fn exact(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.reader.read_exact(&mut v).unwrap();
        v
    }

    /// Send `req` and assert the reply is exactly `expected`.
    pub fn expect(&mut self, req: &[u8], expected: &[u8]) {
        self.send(req);
        let got = self.exact(expected.len());
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(expected), "reply to {:?}", String::from_utf8_lossy(req));
    }
}
