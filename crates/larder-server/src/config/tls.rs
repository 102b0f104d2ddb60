//! TLS settings (`-Z`, `-o ssl_*`) and the server's TLS context: the
//! rustls configuration every new TLS connection starts from, rebuilt by
//! `refresh_certs`.
//!
//! memcached's options map onto rustls as follows (docs/security.md, "TLS"):
//!
//! * `ssl_chain_cert`, `ssl_key`, `ssl_keyformat` (1 = PEM, 2 = DER, as
//!   OpenSSL's `SSL_FILETYPE_*`): the server's certificate chain and key;
//! * `ssl_verify_mode` 0 (none), 1 (ask for a client certificate, verify
//!   it if sent), 2 and 3 (require one; TLS has no renegotiation here, so
//!   "verify once" is 2), against `ssl_ca_cert`; a `btls:` listener uses 0
//!   and an `mtls:` one 2 whatever the option says (`listen_mode`), so the
//!   context keeps one configuration per rule, each with its own session
//!   cache (a session made where no certificate was asked for must not
//!   resume where one is required);
//! * `ssl_min_version` 2 (TLS 1.2) or 3 (TLS 1.3); 0 and 1 (TLS 1.0/1.1)
//!   are accepted with a warning: rustls has no TLS 1.0/1.1, so 1.2 is the
//!   floor;
//! * `ssl_ciphers`: a `:`-separated list of OpenSSL names of TLS 1.2 suites
//!   that rustls has (as OpenSSL's cipher list, TLS 1.3's suites are not
//!   affected); keywords such as `HIGH` are refused at start-up;
//! * `ssl_session_cache`: rustls's in-memory session store (session IDs,
//!   TLS 1.3 stateful tickets), counted in `ssl_new_sessions`;
//! * `ssl_wbuf_size`: the bound on TLS output held per connection;
//! * `ssl_kernel_tls`: accepted with a warning; records are encrypted in
//!   user space by larder's own record layer (`net::tls_record`), the
//!   structure kernel TLS would plug into (rustls's handshake, then the
//!   traffic secrets handed over), but this kernel has no `tls` ULP.

use crate::config::listen_mode::PeerRule;
use crate::net::tls::TlsCounters;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, StoresServerSessions, WebPkiClientVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme, SupportedCipherSuite};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, RwLock};

/// Sessions the server-side cache holds (`-o ssl_session_cache`).
const SESSION_CACHE_ENTRIES: usize = 1024;

/// `-Z` and the `ssl_*` options, as `stats settings` reports them.
#[derive(Clone, Debug)]
pub struct TlsSettings {
    pub enabled: bool,
    pub chain_cert: Option<String>,
    pub key: Option<String>,
    /// OpenSSL's SSL_FILETYPE_*: 1 PEM, 2 ASN1 (DER).
    pub keyformat: i64,
    pub verify_mode: u8,
    pub ciphers: Option<String>,
    pub ca_cert: Option<String>,
    pub wbuf_size: usize,
    pub session_cache: bool,
    pub kernel_tls: bool,
    /// 0..=3: TLS 1.0, 1.1, 1.2, 1.3.
    pub min_version: u8,
    /// larder's own `-o ssl_handshake_timeout=S`: a connection whose
    /// handshake has not finished after this long is closed (memcached
    /// has no limit; a client that never finishes would hold a connection
    /// slot for good).
    pub handshake_timeout: u32,
    /// larder's own `-o metrics_tls`: the admin listener (`metrics_port`)
    /// speaks HTTPS with these settings.
    pub metrics: bool,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            enabled: false,
            chain_cert: None,
            key: None,
            keyformat: 1,
            verify_mode: 0,
            ciphers: None,
            ca_cert: None,
            wbuf_size: 16 * 1024,
            session_cache: false,
            kernel_tls: false,
            min_version: 2,
            handshake_timeout: 10,
            metrics: false,
        }
    }
}

impl TlsSettings {
    /// `stats settings`' `ssl_min_version`.
    pub fn min_version_text(&self) -> &'static str {
        ["tlsv1.0", "tlsv1.1", "tlsv1.2", "tlsv1.3"][self.min_version.min(3) as usize]
    }

    /// One `-o` option; Ok(false) if `name` is not a TLS option. Errors
    /// carry memcached's messages.
    pub fn parse_option(&mut self, name: &str, value: Option<&str>, warnings: &mut Vec<String>) -> Result<bool, String> {
        let need = |v: Option<&str>| v.map(str::to_string).ok_or_else(|| format!("Missing {name} argument"));
        match name {
            "ssl_chain_cert" => self.chain_cert = Some(need(value)?),
            "ssl_key" => self.key = Some(need(value)?),
            "ssl_ca_cert" => self.ca_cert = Some(need(value)?),
            "ssl_ciphers" => self.ciphers = Some(need(value)?),
            "ssl_keyformat" => {
                let v = need(value)?;
                self.keyformat = v.parse().map_err(|_| format!("could not parse argument to {name}"))?;
            }
            "ssl_verify_mode" => {
                let v = need(value)?;
                let n: i64 = v.parse().map_err(|_| format!("could not parse argument to {name}"))?;
                if !(0..=3).contains(&n) {
                    return Err("Invalid ssl_verify_mode. Use help to see valid options.".into());
                }
                self.verify_mode = n as u8;
            }
            "ssl_wbuf_size" => {
                let v = need(value)?;
                let kib: u32 = v.parse().map_err(|_| format!("could not parse argument to {name}"))?;
                self.wbuf_size = kib as usize * 1024;
            }
            "ssl_session_cache" => self.session_cache = true,
            "metrics_tls" => self.metrics = true,
            "ssl_handshake_timeout" => {
                let v = need(value)?;
                self.handshake_timeout = v.parse().ok().filter(|&n| n > 0).ok_or_else(|| format!("could not parse argument to {name}"))?;
            }
            "ssl_kernel_tls" => {
                self.kernel_tls = true;
                warnings.push("-o ssl_kernel_tls: kernel TLS offload is not available in larder; records are encrypted in user space".into());
            }
            "ssl_min_version" => {
                let v = need(value)?;
                let n: i64 = v.parse().map_err(|_| format!("could not parse argument to {name}"))?;
                if !(0..=3).contains(&n) {
                    return Err("Invalid ssl_min_version. Use help to see valid options.".into());
                }
                if n < 2 {
                    warnings.push(format!(
                        "-o ssl_min_version={n}: larder's TLS (rustls) has no TLS 1.0 or 1.1; TLS 1.2 is the lowest version accepted"
                    ));
                }
                self.min_version = n as u8;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// OpenSSL's names for the TLS 1.2 suites rustls (ring) has.
const OPENSSL_TLS12_NAMES: &[(&str, &str)] = &[
    ("ECDHE-ECDSA-AES128-GCM-SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-ECDSA-AES256-GCM-SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-ECDSA-CHACHA20-POLY1305", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
    ("ECDHE-RSA-AES128-GCM-SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    ("ECDHE-RSA-CHACHA20-POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
];

/// The crypto provider with `ssl_ciphers` applied; memcached's message
/// when the list names nothing usable.
fn provider(s: &TlsSettings) -> Result<CryptoProvider, String> {
    let mut p = rustls::crypto::ring::default_provider();
    if let Some(list) = &s.ciphers {
        let mut wanted: Vec<&str> = Vec::new();
        for name in list.split([':', ',', ' ']).filter(|n| !n.is_empty()) {
            match OPENSSL_TLS12_NAMES.iter().find(|(o, _)| o.eq_ignore_ascii_case(name)) {
                Some((_, r)) => wanted.push(r),
                None => {
                    return Err(format!(
                        "Error setting the provided cipher(s): {list}\nlarder: ssl_ciphers takes OpenSSL names of TLS 1.2 suites, of these: {}",
                        OPENSSL_TLS12_NAMES.iter().map(|(o, _)| *o).collect::<Vec<_>>().join(":")
                    ))
                }
            }
        }
        let keep = |cs: &SupportedCipherSuite| match cs {
            SupportedCipherSuite::Tls13(_) => true,
            SupportedCipherSuite::Tls12(_) => wanted.iter().any(|w| format!("{:?}", cs.suite()) == *w),
        };
        p.cipher_suites.retain(keep);
        if !p.cipher_suites.iter().any(|c| matches!(c, SupportedCipherSuite::Tls12(_))) {
            return Err(format!("Error setting the provided cipher(s): {list}"));
        }
    }
    Ok(p)
}

fn read_file(path: &Option<String>) -> Result<Vec<u8>, String> {
    let shown = path.as_deref().unwrap_or("(null)");
    match path {
        None => Err(format!("{shown} : no file given")),
        Some(p) => std::fs::read(p).map_err(|e| format!("{shown} : {e}")),
    }
}

/// The server's certificate chain (PEM) and key; memcached's messages.
fn load_identity(s: &TlsSettings) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let chain_path = s.chain_cert.as_deref().unwrap_or("(null)");
    let pem = read_file(&s.chain_cert).map_err(|e| format!("Error loading the certificate chain: {e}"))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("Error loading the certificate chain: {chain_path} : {e}"))?;
    if certs.is_empty() {
        return Err(format!("Error loading the certificate chain: {chain_path} : no certificate found"));
    }
    let key_path = s.key.as_deref().unwrap_or("(null)");
    let raw = read_file(&s.key).map_err(|e| format!("Error loading the key: {e}"))?;
    let key = match s.keyformat {
        1 => PrivateKeyDer::from_pem_slice(&raw).map_err(|e| format!("Error loading the key: {key_path} : {e}"))?,
        2 => PrivateKeyDer::try_from(raw).map_err(|e| format!("Error loading the key: {key_path} : {e}"))?,
        _ => return Err(format!("Error loading the key: {key_path} : bad ssl filetype (ssl_keyformat: 1 PEM or 2 DER)")),
    };
    Ok((certs, key))
}

/// Counts the sessions the cache stores (`ssl_new_sessions`).
#[derive(Debug)]
struct CountingCache {
    inner: Arc<ServerSessionMemoryCache>,
    counters: Arc<TlsCounters>,
}

impl StoresServerSessions for CountingCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let stored = self.inner.put(key, value);
        if stored {
            self.counters.new_sessions.fetch_add(1, Relaxed);
        }
        stored
    }
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.get(key)
    }
    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.take(key)
    }
    fn can_cache(&self) -> bool {
        true
    }
}

/// An `mtls:` listener's verifier when no `ssl_ca_cert` is given: a client
/// certificate is required and none can be verified, so every handshake
/// fails, as memcached's (OpenSSL verifies against an empty store; it has
/// no default CA paths).
#[derive(Debug)]
struct NoTrustAnchors(WebPkiSupportedAlgorithms);

impl ClientCertVerifier for NoTrustAnchors {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }
    fn verify_client_cert(&self, _: &CertificateDer<'_>, _: &[CertificateDer<'_>], _: UnixTime) -> Result<ClientCertVerified, rustls::Error> {
        Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer))
    }
    fn verify_tls12_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer))
    }
    fn verify_tls13_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer))
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// Build the rustls configuration from the settings (start-up and
/// `refresh_certs`): reads the certificate, key and CA files again.
pub fn build_config(s: &TlsSettings, counters: &Arc<TlsCounters>) -> Result<ServerConfig, String> {
    build_config_for(s, counters, PeerRule::Global)
}

/// The configuration of the listeners with one client-certificate rule.
pub fn build_config_for(s: &TlsSettings, counters: &Arc<TlsCounters>, rule: PeerRule) -> Result<ServerConfig, String> {
    let provider = Arc::new(provider(s)?);
    let (certs, key) = load_identity(s)?;
    let versions: &[&rustls::SupportedProtocolVersion] =
        if s.min_version >= 3 { &[&rustls::version::TLS13] } else { &[&rustls::version::TLS12, &rustls::version::TLS13] };
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| format!("TLS configuration: {e}"))?;
    let verify_mode = rule.verify_mode(s.verify_mode);
    let builder = if verify_mode == 0 {
        builder.with_no_client_auth()
    } else {
        let Some(ca) = &s.ca_cert else {
            if rule == PeerRule::Required {
                // The start-up warning said so (config::parse_args).
                let verifier = NoTrustAnchors(provider.signature_verification_algorithms);
                return finish(builder.with_client_cert_verifier(Arc::new(verifier)), certs, key, s, counters);
            }
            return Err(format!("ssl_verify_mode={} needs -o ssl_ca_cert (the CA client certificates are verified against)", s.verify_mode));
        };
        let pem = read_file(&s.ca_cert).map_err(|e| format!("Error loading the CA certificate: {e}"))?;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("Error loading the CA certificate: {ca} : {e}"))?;
            roots.add(cert).map_err(|e| format!("Error loading the CA certificate: {ca} : {e}"))?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        let verifier = if verify_mode == 1 { verifier.allow_unauthenticated() } else { verifier };
        let verifier = verifier.build().map_err(|e| format!("Error loading the CA certificate: {ca} : {e}"))?;
        builder.with_client_cert_verifier(verifier)
    };
    finish(builder, certs, key, s, counters)
}

/// The server's identity and session settings on a configuration whose
/// client-certificate rule is chosen.
fn finish(
    builder: rustls::ConfigBuilder<ServerConfig, rustls::server::WantsServerCert>,
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    s: &TlsSettings,
    counters: &Arc<TlsCounters>,
) -> Result<ServerConfig, String> {
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("Error validating the certificate: {e}"))?;
    // After the handshake larder does the record layer itself
    // (net::tls_record), with the traffic secrets rustls hands over.
    config.enable_secret_extraction = true;
    if s.session_cache {
        config.session_storage = Arc::new(CountingCache { inner: ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES), counters: counters.clone() });
        // One ticket per connection is enough to resume once.
        config.send_tls13_tickets = 1;
    } else {
        config.session_storage = Arc::new(NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
    }
    Ok(config)
}

/// One configuration per client-certificate rule, indexed as
/// [`PeerRule::ALL`].
type Configs = [Arc<ServerConfig>; 3];

fn build_all(s: &TlsSettings, counters: &Arc<TlsCounters>) -> Result<Configs, String> {
    let [g, n, r] = PeerRule::ALL.map(|rule| build_config_for(s, counters, rule).map(Arc::new));
    Ok([g?, n?, r?])
}

fn index(rule: PeerRule) -> usize {
    match rule {
        PeerRule::Global => 0,
        PeerRule::NoPeer => 1,
        PeerRule::Required => 2,
    }
}

/// What every TLS listener shares: the current configurations and the
/// counters of `stats`.
pub struct TlsContext {
    pub settings: TlsSettings,
    config: RwLock<Configs>,
    pub counters: Arc<TlsCounters>,
    /// Relative time (`Clock::now`) of the last successful (re)load.
    last_refresh: AtomicU32,
}

impl TlsContext {
    /// Load everything at start-up; the error is memcached's message.
    pub fn new(settings: &TlsSettings, now: u32) -> Result<TlsContext, String> {
        let counters = Arc::new(TlsCounters::default());
        let config = build_all(settings, &counters)?;
        Ok(TlsContext {
            settings: settings.clone(),
            config: RwLock::new(config),
            counters,
            last_refresh: AtomicU32::new(now),
        })
    }

    /// The configuration a new connection on a listener with `rule`
    /// starts from.
    pub fn config(&self, rule: PeerRule) -> Arc<ServerConfig> {
        self.config.read().unwrap_or_else(|e| e.into_inner())[index(rule)].clone()
    }

    /// `refresh_certs` and SIGHUP (the one reload of both): read the files
    /// again. On error every old configuration stays (memcached keeps its
    /// context) and the error is memcached's message; connections already
    /// open keep theirs. `time_since_server_cert_refresh` restarts only on
    /// success.
    pub fn refresh(&self, now: u32) -> Result<(), String> {
        let config = build_all(&self.settings, &self.counters)?;
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config;
        self.last_refresh.store(now, Relaxed);
        Ok(())
    }

    pub fn seconds_since_refresh(&self, now: u32) -> u32 {
        now.saturating_sub(self.last_refresh.load(Relaxed))
    }

    /// A new server side of a client connection: rustls's unbuffered API,
    /// for the handshake only (`net::tls`).
    pub fn accept_unbuffered(&self, rule: PeerRule) -> Result<rustls::server::UnbufferedServerConnection, rustls::Error> {
        rustls::server::UnbufferedServerConnection::new(self.config(rule))
    }

    /// A new server side of an admin (HTTPS) connection, rustls all the
    /// way; its per-connection output bound is `ssl_wbuf_size` (at least
    /// one full record).
    pub fn accept(&self) -> Result<rustls::ServerConnection, rustls::Error> {
        let mut conn = rustls::ServerConnection::new(self.config(PeerRule::Global))?;
        conn.set_buffer_limit(Some(self.settings.wbuf_size.max(16 * 1024 + 512)));
        Ok(conn)
    }
}
