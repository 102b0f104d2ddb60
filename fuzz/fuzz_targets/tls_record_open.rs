//! Fuzz larder's TLS record layer (`larder_server::net::tls_record`) on the
//! receiving side, as `net::tls` drives it: `record_len` on the header,
//! then `open` on exactly that many bytes.
//!
//! The keys are real: once per process, an in-memory rustls handshake per
//! cipher suite (TLS 1.3: AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305;
//! TLS 1.2 ECDHE-ECDSA with the same three AEADs), whose client traffic
//! secrets seal records that the record layer then opens. The first input
//! byte picks the suite; the rest is a script of operations:
//!
//! * seal a record (length, content type, TLS 1.3 padding and plaintext
//!   from the input), maybe tamper with one bit of it, and feed it: an
//!   untouched record opens to exactly its type and plaintext, a tampered
//!   one never opens;
//! * feed raw bytes as a record: they never open (forging a tag is out of
//!   reach), and lengths are whatever the header says;
//! * open a sealed record cut or extended to a length other than its own,
//!   bypassing `record_len`, down to fewer bytes than a header (the layer
//!   must refuse, not panic);
//! * open a record twice (a replay): the second is refused.
//!
//! After any refusal the receiving keys are set back in step with the
//! sending ones, as a new connection would be, so one input explores many
//! records.
#![no_main]

use larder_server::net::tls_record::{content, Keys, RecordLayer, HEADER, MAX_PLAINTEXT, MAX_RECORD};
use libfuzzer_sys::fuzz_target;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, ConnectionTrafficSecrets, DigitallySignedStruct, ProtocolVersion, ServerConfig, ServerConnection, SignatureScheme, SupportedCipherSuite};
use std::sync::{Arc, OnceLock};

/// A throwaway self-signed P-256 certificate for the handshake (fuzzing
/// only: the client accepts any certificate).
const CERT: &[u8] = include_bytes!("../fixtures/tls-cert.pem");
const KEY: &[u8] = include_bytes!("../fixtures/tls-key.pem");

struct Suite {
    version: ProtocolVersion,
    suite: SupportedCipherSuite,
    /// The client's sending direction: what the server receives.
    seq: u64,
    secrets: ConnectionTrafficSecrets,
}

#[derive(Debug)]
struct AnyCert;

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(&self, _: &CertificateDer<'_>, _: &[CertificateDer<'_>], _: &ServerName<'_>, _: &[u8], _: UnixTime) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        vec![SignatureScheme::ECDSA_NISTP256_SHA256, SignatureScheme::ECDSA_NISTP384_SHA384]
    }
}

/// A handshake in memory offering only `suite`; the client's traffic
/// secrets.
fn handshake(suite: SupportedCipherSuite) -> Suite {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = vec![suite];
    let provider = Arc::new(provider);
    let version = suite.version();
    let cert = CertificateDer::from_pem_slice(CERT).expect("fixture certificate");
    let key = PrivateKeyDer::from_pem_slice(KEY).expect("fixture key");
    let mut server_config = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[version])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    server_config.send_tls13_tickets = 0;
    let mut client_config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[version])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert))
        .with_no_client_auth();
    client_config.enable_secret_extraction = true;
    let name = ServerName::try_from("localhost").unwrap();
    let mut client = ClientConnection::new(Arc::new(client_config), name).unwrap();
    let mut server = ServerConnection::new(Arc::new(server_config)).unwrap();
    let mut wire = Vec::new();
    for _ in 0..20 {
        if !client.is_handshaking() && !server.is_handshaking() {
            break;
        }
        wire.clear();
        while client.wants_write() {
            client.write_tls(&mut wire).unwrap();
        }
        let mut at = &wire[..];
        while !at.is_empty() {
            server.read_tls(&mut at).unwrap();
            server.process_new_packets().unwrap();
        }
        wire.clear();
        while server.wants_write() {
            server.write_tls(&mut wire).unwrap();
        }
        let mut at = &wire[..];
        while !at.is_empty() {
            client.read_tls(&mut at).unwrap();
            client.process_new_packets().unwrap();
        }
    }
    assert!(!client.is_handshaking() && !server.is_handshaking(), "handshake finished");
    assert_eq!(client.negotiated_cipher_suite(), Some(suite));
    let (seq, secrets) = client.dangerous_extract_secrets().expect("secrets").tx;
    Suite { version: version.version, suite, seq, secrets }
}

fn suites() -> &'static [Suite] {
    static SUITES: OnceLock<Vec<Suite>> = OnceLock::new();
    SUITES.get_or_init(|| {
        use rustls::crypto::ring::cipher_suite::*;
        [
            TLS13_AES_128_GCM_SHA256,
            TLS13_AES_256_GCM_SHA384,
            TLS13_CHACHA20_POLY1305_SHA256,
            TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ]
        .into_iter()
        .map(handshake)
        .collect()
    })
}

/// The fuzz input, read front to back.
struct Script<'a>(&'a [u8]);

impl<'a> Script<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte().unwrap_or(0), self.byte().unwrap_or(0)])
    }
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}

const TYPES: [u8; 4] = [content::APPLICATION_DATA, content::ALERT, content::HANDSHAKE, content::CHANGE_CIPHER_SPEC];

struct Conn<'s> {
    s: &'s Suite,
    layer: RecordLayer,
    tx: Keys,
    rx: Keys,
}

impl Conn<'_> {
    /// Receiving keys back in step with the sending ones.
    fn resync(&mut self) {
        self.rx = Keys::new(self.tx.seq(), &self.s.secrets).unwrap();
    }

    /// Seal `plain` as a record of type `typ` (TLS 1.3: with `pad` zero
    /// bytes of padding after the real type).
    fn seal(&mut self, typ: u8, plain: &[u8], pad: usize) -> Vec<u8> {
        let tls13 = self.layer.is_tls13();
        let pad = if tls13 { pad.min(MAX_PLAINTEXT - plain.len()) } else { 0 };
        let mut buf = vec![0u8; plain.len() + pad + self.layer.overhead() + 1];
        let p = self.layer.prefix();
        buf[p..p + plain.len()].copy_from_slice(plain);
        let n = if tls13 && pad > 0 {
            // Inner plaintext: content, real type, then zeros; `seal`
            // writes the last zero as "the type".
            buf[p + plain.len()] = typ;
            self.layer.seal(&mut self.tx, 0, &mut buf, plain.len() + pad).unwrap()
        } else {
            self.layer.seal(&mut self.tx, typ, &mut buf, plain.len()).unwrap()
        };
        buf.truncate(n);
        buf
    }

    /// What the stream does with received bytes `rec`: measure the record
    /// at their front and open it if it is all there. `expect`: the type
    /// and plaintext an untouched sealed record must open to; `None`: it
    /// must not open.
    fn feed(&mut self, mut rec: Vec<u8>, expect: Option<(u8, &[u8])>) {
        let n = match self.layer.record_len(&rec) {
            Ok(Some(n)) => n,
            Ok(None) => {
                assert!(rec.len() < HEADER);
                return self.resync();
            }
            Err(_) => {
                let len = usize::from(u16::from_be_bytes([rec[3], rec[4]]));
                assert!(rec[1..3] != [3, 3] || len > self.layer.max_ciphertext(), "header refused: {:?}", &rec[..HEADER]);
                return self.resync();
            }
        };
        assert_eq!(n, HEADER + usize::from(u16::from_be_bytes([rec[3], rec[4]])));
        assert!(n <= MAX_RECORD);
        if n > rec.len() {
            // Not all there yet: the stream waits (and this input ends it).
            assert!(expect.is_none(), "a whole sealed record measured as incomplete");
            return self.resync();
        }
        let whole = n == rec.len();
        match self.layer.open(&mut self.rx, &mut rec[..n]) {
            Ok(o) => {
                let (typ, plain) = expect.filter(|_| whole).unwrap_or_else(|| panic!("a record that was not sealed opened: {o:?}"));
                assert_eq!((o.typ, &rec[o.start..o.end]), (typ, plain));
                assert_eq!(self.rx.seq(), self.tx.seq());
            }
            Err(_) => {
                assert!(expect.is_none() || !whole, "an untouched sealed record was refused");
                self.resync();
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut script = Script(data);
    let Some(pick) = script.byte() else { return };
    let all = suites();
    let s = &all[usize::from(pick) % all.len()];
    let mut c = Conn {
        s,
        layer: RecordLayer::new(s.version, s.suite, &s.secrets).unwrap(),
        tx: Keys::new(s.seq, &s.secrets).unwrap(),
        rx: Keys::new(s.seq, &s.secrets).unwrap(),
    };
    let mut ops = 0;
    while let Some(op) = script.byte() {
        ops += 1;
        if ops > 64 {
            break;
        }
        match op % 4 {
            // A sealed record, perhaps with one bit flipped.
            0 | 3 => {
                let len = usize::from(script.u16()) % (MAX_PLAINTEXT + 1);
                let how = script.byte().unwrap_or(0);
                let typ = TYPES[usize::from(how % 4)];
                let pad = usize::from(how >> 2);
                let plain = script.take(len).to_vec();
                let mut rec = c.seal(typ, &plain, pad);
                let flip = script.u16();
                let tampered = op % 4 == 3;
                if tampered {
                    let bit = usize::from(flip) % (rec.len() * 8);
                    rec[bit / 8] ^= 1 << (bit % 8);
                }
                c.feed(rec, (!tampered).then_some((typ, &plain[..])));
            }
            // Raw bytes as a record.
            1 => {
                let len = usize::from(script.u16()) % (MAX_RECORD + 64);
                let raw = script.take(len).to_vec();
                c.feed(raw, None);
            }
            // A sealed record opened at a length not its own, then a
            // replay of the real one.
            _ => {
                let len = usize::from(script.byte().unwrap_or(0));
                let plain = script.take(len).to_vec();
                let rec = c.seal(content::APPLICATION_DATA, &plain, 0);
                let cut = usize::from(script.u16()) % (rec.len() + 64);
                let mut other = rec.clone();
                // Down to nothing: `open` must refuse a header cut short too.
                other.resize(cut, 0);
                if other.len() != rec.len() {
                    let mut probe = Keys::new(c.rx.seq(), &s.secrets).unwrap();
                    assert!(c.layer.open(&mut probe, &mut other).is_err(), "a record opened at {cut} bytes, sealed as {}", rec.len());
                }
                c.feed(rec.clone(), Some((content::APPLICATION_DATA, &plain)));
                let mut replay = rec;
                let mut probe = Keys::new(c.rx.seq(), &s.secrets).unwrap();
                assert!(c.layer.open(&mut probe, &mut replay).is_err(), "a replayed record opened");
            }
        }
    }
});
