//! TLS (`-Z`) over the wire with a real TLS client (rustls): plain and TLS
//! listeners side by side on one store, memcached's `stats` and `stats
//! settings` entries, `refresh_certs`, client-certificate modes, minimum
//! version, start-up errors, and large values through TLS's buffering.
//! memcached's own t/ssl_*.t files run against larder in the memcached-t
//! suite; this file covers what they do not (error paths, byte-exact
//! replies, what is counted).

mod admin_http;
mod common;

use common::tls::{certs, server_args, ClientOptions, TlsClient};
use common::{free_port, Larder};
use std::io::{Read, Write};
use std::process::Command;

/// A larder with a plain listener on the launcher's port (`-l notls:`) and
/// TLS on the returned port.
fn start(extra: &[&str]) -> (Larder, u16) {
    let tls_port = free_port();
    let mut args: Vec<String> = server_args(certs());
    args.extend(["-l".into(), "notls:127.0.0.1".into(), "-l".into(), format!("127.0.0.1:{tls_port}")]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    (Larder::start(&refs), tls_port)
}

fn stats(c: &mut common::Client, group: &str) -> Vec<(String, String)> {
    c.stats(group)
}

#[test]
fn plain_and_tls_listeners_share_one_store() {
    let (l, tls) = start(&[]);
    let mut t = TlsClient::connect(tls);
    t.expect(b"set over:tls 0 0 5\r\nhello\r\n", b"STORED\r\n");
    let mut p = l.connect();
    p.expect(b"get over:tls\r\n", b"VALUE over:tls 0 5\r\nhello\r\nEND\r\n");
    p.expect(b"set over:plain 7 0 2\r\nhi\r\n", b"STORED\r\n");
    t.expect(b"get over:plain\r\n", b"VALUE over:plain 7 2\r\nhi\r\nEND\r\n");
    // meta and binary over TLS too
    t.expect(b"mg over:plain v f\r\n", b"VA 2 f7\r\nhi\r\n");
    // (binary on its own connection: -B auto decides by the first byte)
    let mut b = TlsClient::connect(tls);
    b.send(&[0x80, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0]); // noop, opaque 9
    let reply = b.exact(24);
    assert_eq!((reply[0], reply[1], reply[15]), (0x81, 0x0a, 9));
    assert_eq!(p.stat("ssl_handshake_errors"), 0);
}

#[test]
fn a_plain_client_on_the_tls_port_is_a_handshake_error() {
    let (l, tls) = start(&[]);
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", tls)).unwrap();
    raw.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    raw.write_all(b"get foo\r\n").unwrap();
    // A TLS alert at most, then the end of the stream; never a reply.
    let mut got = Vec::new();
    raw.read_to_end(&mut got).expect("plain text on a TLS port must close the connection");
    assert!(got.len() < 16 && got.first() == Some(&21), "not a TLS alert: {got:?}");
    let mut p = l.connect();
    assert_eq!(p.stat("ssl_handshake_errors"), 1);
    p.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
}

#[test]
fn stats_have_memcacheds_tls_entries() {
    let (l, tls) = start(&[]);
    let mut p = l.connect();
    let names: Vec<String> = stats(&mut p, "").into_iter().map(|(n, _)| n).collect();
    // memcached: ssl_new_sessions only with the session cache on.
    assert!(!names.contains(&"ssl_new_sessions".to_string()));
    let at = |n: &str| names.iter().position(|x| x == n).unwrap_or_else(|| panic!("no {n}"));
    assert!(at("log_watchers") < at("ssl_handshake_errors"));
    // memcached 1.6.30+ (1.6.38's order): ssl_proto_errors between them.
    assert_eq!(at("ssl_handshake_errors") + 1, at("ssl_proto_errors"));
    assert_eq!(at("ssl_proto_errors") + 1, at("time_since_server_cert_refresh"));
    assert!(at("time_since_server_cert_refresh") < at("unexpected_napi_ids"));
    let c = certs();
    let settings = stats(&mut p, "settings");
    let got: Vec<(&str, &str)> = settings.iter().filter(|(n, _)| n.starts_with("ssl_")).map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let (crt, key) = (c.server_crt.display().to_string(), c.server_key.display().to_string());
    assert_eq!(
        got,
        vec![
            ("ssl_enabled", "yes"),
            ("ssl_chain_cert", crt.as_str()),
            ("ssl_key", key.as_str()),
            ("ssl_verify_mode", "0"),
            ("ssl_keyformat", "1"),
            ("ssl_ciphers", "NULL"),
            ("ssl_ca_cert", "NULL"),
            ("ssl_wbuf_size", "16384"),
            ("ssl_session_cache", "no"),
            ("ssl_kernel_tls", "no"),
            ("ssl_min_version", "tlsv1.2"),
        ]
    );
    drop(TlsClient::connect(tls));
    // A plain server lists them too, as memcached built with TLS does.
    let plain = Larder::start(&[]);
    let s = stats(&mut plain.connect(), "settings");
    assert!(s.contains(&("ssl_enabled".into(), "no".into())));
    assert!(s.contains(&("ssl_chain_cert".into(), "(null)".into())));
    assert!(!stats(&mut plain.connect(), "").iter().any(|(n, _)| n == "ssl_handshake_errors"));
    assert!(!stats(&mut plain.connect(), "").iter().any(|(n, _)| n == "ssl_proto_errors"));
}

/// `ssl_proto_errors` (memcached 1.6.30): an established TLS connection
/// ended by a protocol error counts once; a handshake refused before the
/// server answered counts in `ssl_handshake_errors` only (one refused
/// later, in `ssl_proto_errors`: client_certificate_modes), and a client
/// that closes its socket without close_notify, or with it, counts
/// nowhere.
#[test]
fn a_protocol_error_after_the_handshake_counts_in_ssl_proto_errors() {
    let (l, tls) = start(&[]);
    let mut p = l.connect();
    // Quiet ends first: neither counts.
    let mut c = TlsClient::connect(tls);
    c.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    drop(c);
    let mut c = TlsClient::connect(tls);
    c.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    c.reader.get_mut().conn.send_close_notify();
    c.send(b"");
    drop(c);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!((p.stat("ssl_proto_errors"), p.stat("ssl_handshake_errors")), (0, 0));

    // An application-data record that does not open (bad MAC): the server
    // answers with a fatal alert and closes; one protocol error.
    let mut c = TlsClient::connect(tls);
    c.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    let mut forged = vec![23u8, 3, 3, 0, 40];
    forged.extend([0x41u8; 40]);
    c.reader.get_mut().sock.write_all(&forged).unwrap();
    let mut rest = Vec::new();
    let _ = c.reader.get_mut().sock.read_to_end(&mut rest);
    assert!(rest.first() == Some(&23) || rest.first() == Some(&21) || rest.is_empty(), "{rest:?}");
    assert_eq!((p.stat("ssl_proto_errors"), p.stat("ssl_handshake_errors")), (1, 0));

    // A handshake failure is not a protocol error of an established
    // connection.
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", tls)).unwrap();
    raw.write_all(b"get foo\r\n").unwrap();
    let _ = raw.read_to_end(&mut Vec::new());
    assert_eq!((p.stat("ssl_proto_errors"), p.stat("ssl_handshake_errors")), (1, 1));
}

/// A larder with a plain listener on the launcher's port and TLS
/// listeners `-l 127.0.0.1:T,mtls:127.0.0.1:M,btls:127.0.0.1:B`: the ports
/// (T, M, B).
fn start_prefixed(extra: &[&str]) -> (Larder, [u16; 3], common::Stderr) {
    let ports = common::free_ports(3);
    let mut args: Vec<String> = server_args(certs());
    args.extend(["-l".into(), "notls:127.0.0.1".into(), "-l".into()]);
    args.push(format!("127.0.0.1:{},mtls:127.0.0.1:{},btls:127.0.0.1:{}", ports[0], ports[1], ports[2]));
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (l, stderr) = Larder::start_capturing_stderr(&refs);
    (l, [ports[0], ports[1], ports[2]], stderr)
}

/// Whether a TLS client with `o` is served a `version` on `port`.
fn served(port: u16, o: ClientOptions) -> bool {
    TlsClient::try_connect(port, o)
        .and_then(|mut c| {
            c.reader.get_mut().write_all(b"version\r\n")?;
            c.reader.get_mut().flush()?;
            c.try_line()
        })
        .is_ok_and(|l| l == "VERSION 1.6.18\r\n")
}

/// memcached 1.6.30's `-l` prefixes: `mtls:` requires a verified client
/// certificate on that listener, `btls:` asks for none, whatever
/// `ssl_verify_mode` says for the others.
#[test]
fn mtls_and_btls_listeners_set_their_own_client_certificate_rule() {
    let none = ClientOptions::default();
    let with = ClientOptions { client_cert: true, ..Default::default() };
    let ca = format!("ssl_ca_cert={}", certs().ca.display());
    // ssl_verify_mode 0: the plain-prefix TLS listener asks for nothing.
    let (l, [t, m, b], _) = start_prefixed(&["-o", &ca]);
    assert!(served(t, none) && served(t, with));
    assert!(!served(m, none), "mtls: served without a client certificate");
    assert!(served(m, with));
    assert!(served(b, none) && served(b, with));
    l.connect().expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    // ssl_verify_mode 2: btls: still asks for nothing.
    let (_l, [t, m, b], _) = start_prefixed(&["-o", &ca, "-o", "ssl_verify_mode=2"]);
    assert!(!served(t, none) && served(t, with));
    assert!(!served(m, none) && served(m, with));
    assert!(served(b, none));
    // mtls: without a CA: it starts (as memcached), says so, and no client
    // is served there; the other listeners work.
    let (_l, [t, m, b], stderr) = start_prefixed(&[]);
    assert!(!served(m, none) && !served(m, with));
    assert!(served(t, none) && served(b, none));
    let text = stderr.wait_for("mtls: listener without -o ssl_ca_cert", std::time::Duration::from_secs(5)).unwrap_or_else(|| stderr.text());
    assert!(text.contains("every TLS handshake on it fails"), "{text}");
    // Without -Z: memcached's messages and status (EX_OSERR).
    let port = free_port().to_string();
    for (prefix, word) in [("notls", "notls"), ("btls", "btls"), ("mtls", "otls")] {
        let (code, err) = refused(&["-p", &port, "-l", &format!("{prefix}:127.0.0.1:{port}")]);
        assert_eq!((code, err.lines().next().unwrap_or("")), (71, format!("'{word}' option is valid only when SSL is enabled").as_str()));
    }
}

/// SIGHUP reloads the TLS files as `refresh_certs` does (memcached 1.6.40):
/// new connections get the new certificate, open ones keep theirs, the
/// refresh time restarts; a broken file keeps the certificate in use and
/// is logged. (The `-Y` authfile's reload by the same signal:
/// ascii_auth.rs.)
#[test]
fn sighup_reloads_the_certificates() {
    let c = certs();
    let (crt, key, mut args) = replaceable_certs("sighup");
    let tls = free_port();
    args.extend(["-l".into(), format!("127.0.0.1:{tls}"), "-l".into(), "notls:127.0.0.1".into()]);
    let (l, stderr) = Larder::start_capturing_stderr(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let hup = || {
        let status = Command::new("kill").args(["-HUP", &l.pid().to_string()]).status().unwrap();
        assert!(status.success());
    };
    let mut old = TlsClient::connect(tls);
    let first = old.peer_certificate();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let mut p = l.connect();
    assert!(p.stat("time_since_server_cert_refresh") >= 1);

    std::fs::copy(&c.other_crt, &crt).unwrap();
    std::fs::copy(&c.other_key, &key).unwrap();
    hup();
    // The signal thread reloads asynchronously: wait for the new certificate.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut new = TlsClient::connect(tls);
    while new.peer_certificate() == first && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        new = TlsClient::connect(tls);
    }
    assert_ne!(new.peer_certificate(), first, "a connection after SIGHUP gets the new certificate");
    assert_eq!(p.stat("time_since_server_cert_refresh"), 0);
    assert_eq!(old.peer_certificate(), first);
    old.expect(b"version\r\n", b"VERSION 1.6.18\r\n");

    // A broken key: logged with memcached's words, the certificate stays.
    std::fs::write(&key, b"not a key").unwrap();
    hup();
    let text = stderr.wait_for("Could not reload TLS certificates on SIGHUP", std::time::Duration::from_secs(5)).unwrap_or_else(|| stderr.text());
    assert!(text.contains(&format!("Could not reload TLS certificates on SIGHUP: Error loading the key: {} : ", key.display())), "{text}");
    assert!(text.contains("keeping the previous certificates"), "{text}");
    let mut after = TlsClient::connect(tls);
    assert_eq!(after.peer_certificate(), new.peer_certificate());
    after.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    // A good file again: reloaded on the next signal.
    std::fs::copy(&c.server_key, &key).unwrap();
    std::fs::copy(&c.server_crt, &crt).unwrap();
    hup();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut back = TlsClient::connect(tls);
    while back.peer_certificate() != first && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        back = TlsClient::connect(tls);
    }
    assert_eq!(back.peer_certificate(), first);
}

#[test]
fn session_cache_resumes_and_counts_new_sessions() {
    let (l, tls) = start(&["-o", "ssl_session_cache"]);
    let mut p = l.connect();
    assert_eq!(p.stat("ssl_new_sessions"), 0);
    // One client config = one client-side session store: the second
    // connection offers the first one's session.
    let config = common::tls::client_config(ClientOptions { tls12_only: true, client_cert: false });
    let connect = || {
        let sock = std::net::TcpStream::connect(("127.0.0.1", tls)).unwrap();
        let conn = rustls::ClientConnection::new(config.clone(), "localhost".try_into().unwrap()).unwrap();
        let mut s = rustls::StreamOwned::new(conn, sock);
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).unwrap();
        }
        s
    };
    let first = connect();
    assert_eq!(first.conn.handshake_kind(), Some(rustls::HandshakeKind::Full));
    assert_eq!(p.stat("ssl_new_sessions"), 1);
    let second = connect();
    assert_eq!(second.conn.handshake_kind(), Some(rustls::HandshakeKind::Resumed));
    assert_eq!(p.stat("ssl_new_sessions"), 1, "a resumed session is not a new one");
    // Without the cache nothing resumes.
    let (l2, tls2) = start(&[]);
    for _ in 0..2 {
        let sock = std::net::TcpStream::connect(("127.0.0.1", tls2)).unwrap();
        let conn = rustls::ClientConnection::new(config.clone(), "localhost".try_into().unwrap()).unwrap();
        let mut s = rustls::StreamOwned::new(conn, sock);
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).unwrap();
        }
        assert_eq!(s.conn.handshake_kind(), Some(rustls::HandshakeKind::Full));
    }
    drop(l2);
}

#[test]
fn refresh_certs_swaps_the_certificate_for_new_connections() {
    let c = certs();
    let (crt, key, mut args) = replaceable_certs("refresh");
    let tls = free_port();
    args.extend(["-l".into(), "notls:127.0.0.1".into(), "-l".into(), format!("127.0.0.1:{tls}")]);
    let l = Larder::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let original = std::fs::read(&c.server_crt).unwrap();
    let mut old = TlsClient::connect(tls);
    let first = old.peer_certificate();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let mut p = l.connect();
    assert!(p.stat("time_since_server_cert_refresh") >= 1);

    std::fs::copy(&c.other_crt, &crt).unwrap();
    std::fs::copy(&c.other_key, &key).unwrap();
    old.expect(b"refresh_certs\r\n", b"OK\r\n");
    assert_eq!(p.stat("time_since_server_cert_refresh"), 0);
    let mut new = TlsClient::connect(tls);
    assert_ne!(new.peer_certificate(), first, "a new connection gets the new certificate");
    assert_eq!(old.peer_certificate(), first);
    old.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    new.expect(b"refresh_certs noreply\r\nversion\r\n", b"VERSION 1.6.18\r\n");

    // A broken file: memcached's message, and the certificate in use stays.
    std::fs::write(&key, b"not a key").unwrap();
    p.send(b"refresh_certs noreply\r\n");
    let line = p.line();
    assert!(line.starts_with(&format!("Error loading the key: {} : ", key.display())), "{line:?}");
    assert!(line.ends_with("\r\n"));
    std::fs::remove_file(&crt).unwrap();
    p.send(b"refresh_certs\r\n");
    let line = p.line();
    assert!(line.starts_with(&format!("Error loading the certificate chain: {} : ", crt.display())), "{line:?}");
    let mut after = TlsClient::connect(tls);
    assert_eq!(after.peer_certificate(), new.peer_certificate());
    after.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    drop(original);

    // Without -Z: memcached's reply, even with noreply.
    let plain = Larder::start(&[]);
    plain.connect().expect(b"refresh_certs noreply\r\n", b"Error TLS not enabled\r\n");
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let d = certs().dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Copies of the test server's certificate and key that a test may
/// overwrite (to reload them), and the `-Z` flags that use the copies.
fn replaceable_certs(name: &str) -> (std::path::PathBuf, std::path::PathBuf, Vec<String>) {
    let c = certs();
    let dir = tempdir(name);
    let (crt, key) = (dir.join("crt.pem"), dir.join("key.pem"));
    std::fs::copy(&c.server_crt, &crt).unwrap();
    std::fs::copy(&c.server_key, &key).unwrap();
    let args = vec![
        "-Z".to_string(),
        "-o".into(),
        format!("ssl_chain_cert={}", crt.display()),
        "-o".into(),
        format!("ssl_key={}", key.display()),
    ];
    (crt, key, args)
}

#[test]
fn client_certificate_modes() {
    let ca = format!("ssl_ca_cert={}", certs().ca.display());
    let none = ClientOptions::default();
    let with = ClientOptions { client_cert: true, ..Default::default() };
    // 2 and 3: a certificate is required (TLS 1.3 reports the refusal on
    // the first read).
    for mode in ["2", "3"] {
        let (l, tls) = start(&["-o", &format!("ssl_verify_mode={mode}"), "-o", &ca]);
        let mut ok = TlsClient::try_connect(tls, with).unwrap();
        ok.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
        let refused = TlsClient::try_connect(tls, none).and_then(|mut c| {
            c.reader.get_mut().write_all(b"version\r\n")?;
            c.try_line()
        });
        assert!(!matches!(refused, Ok(ref l) if l.starts_with("VERSION")), "mode {mode}: no certificate, yet served");
        // As memcached 1.6.30+: refused after the server's first flight,
        // so a protocol error, not a handshake error.
        let mut p = l.connect();
        assert_eq!((p.stat("ssl_handshake_errors"), p.stat("ssl_proto_errors")), (0, 1), "mode {mode}");
    }
    // 1: asked for, not required.
    let (_l, tls) = start(&["-o", "ssl_verify_mode=1", "-o", &ca]);
    for o in [none, with] {
        TlsClient::try_connect(tls, o).unwrap().expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    }
}

#[test]
fn minimum_version_is_enforced() {
    let (l, tls) = start(&["-o", "ssl_min_version=3"]);
    assert!(TlsClient::try_connect(tls, ClientOptions { tls12_only: true, ..Default::default() }).is_err());
    let mut c = TlsClient::connect(tls);
    assert_eq!(c.conn().protocol_version(), Some(rustls::ProtocolVersion::TLSv1_3));
    c.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    assert_eq!(l.connect().stat("ssl_handshake_errors"), 1);
    let mut p = l.connect();
    assert!(p.stats("settings").contains(&("ssl_min_version".into(), "tlsv1.3".into())));
    // TLS 1.2 still works by default
    let (_l, tls) = start(&[]);
    let mut c = TlsClient::try_connect(tls, ClientOptions { tls12_only: true, ..Default::default() }).unwrap();
    c.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
}

#[test]
fn ciphers_map_openssl_names_of_tls12_suites() {
    let (_l, tls) = start(&["-o", "ssl_ciphers=ECDHE-RSA-AES256-GCM-SHA384"]);
    let mut c = TlsClient::try_connect(tls, ClientOptions { tls12_only: true, ..Default::default() }).unwrap();
    c.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    let suite = c.conn().negotiated_cipher_suite().unwrap().suite();
    assert_eq!(suite, rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384);
}

/// larder's exit status and stderr for a command line that must not start.
fn refused(args: &[&str]) -> (i32, String) {
    let mut cmd = Command::new(common::binary());
    cmd.args(common::user_args()).args(args);
    let out = cmd.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn start_up_errors_are_memcacheds() {
    let c = certs();
    let crt = format!("ssl_chain_cert={}", c.server_crt.display());
    let key = format!("ssl_key={}", c.server_key.display());
    let port = free_port().to_string();
    let (code, err) = refused(&["-p", &port, "-Z"]);
    assert_eq!(code, 64);
    assert!(err.starts_with("Error loading the certificate chain: (null) : "), "{err}");
    let (code, err) = refused(&["-p", &port, "-Z", "-o", &crt]);
    assert_eq!(code, 64);
    assert!(err.starts_with("Error loading the key: (null) : "), "{err}");
    let (code, err) = refused(&["-p", &port, "-Z", "-o", "ssl_chain_cert=/nonexistent", "-o", &key]);
    assert_eq!(code, 64);
    assert!(err.starts_with("Error loading the certificate chain: /nonexistent : "), "{err}");
    let wrong_key = format!("ssl_key={}", c.client_key.display());
    let (code, err) = refused(&["-p", &port, "-Z", "-o", &crt, "-o", &wrong_key]);
    assert_eq!(code, 64);
    assert!(err.contains("certificate"), "{err}");
    let (code, err) = refused(&["-p", &port, "-Z", "-o", &crt, "-o", &key, "-o", "ssl_ciphers=FOO"]);
    assert_eq!(code, 64);
    assert!(err.starts_with("Error setting the provided cipher(s): FOO\n"), "{err}");
    let (_, err) = refused(&["-p", &port, "-Z", "-o", &crt, "-o", &key, "-o", "ssl_verify_mode=4"]);
    assert!(err.starts_with("Invalid ssl_verify_mode. Use help to see valid options."), "{err}");
    let (_, err) = refused(&["-p", &port, "-Z", "-o", &crt, "-o", &key, "-o", "ssl_min_version=5"]);
    assert!(err.starts_with("Invalid ssl_min_version. Use help to see valid options."), "{err}");
    let (code, err) = refused(&["-p", "0", "-Z", "-o", &crt, "-o", &key]);
    assert_eq!((code, err.as_str()), (64, "ERROR: You cannot enable SSL without a TCP port.\n"));
    let (_, err) = refused(&["-p", &port, "-l", &format!("notls:127.0.0.1:{port}")]);
    assert!(err.starts_with("'notls' option is valid only when SSL is enabled"), "{err}");
    let (code, err) = refused(&["-p", &port, "-Z", "-o", &crt, "-o", &key, "-o", "ssl_verify_mode=2"]);
    assert_eq!(code, 64);
    assert!(err.contains("needs -o ssl_ca_cert"), "{err}");
    // What rustls cannot do is said at start-up, not silently dropped.
    let (l, stderr) = Larder::start_capturing_stderr(&["-Z", "-o", &crt, "-o", &key, "-o", "ssl_kernel_tls,ssl_min_version=0", "-l", "notls:127.0.0.1"]);
    let text = stderr.wait_for("TLS 1.2 is the lowest", std::time::Duration::from_secs(5)).unwrap_or_else(|| stderr.text());
    assert!(text.contains("kernel TLS offload is not available"), "{text}");
    assert!(text.contains("no TLS 1.0 or 1.1"), "{text}");
    drop(l);
}

#[test]
fn large_values_and_pipelines_through_tls() {
    let (l, tls) = start(&["-I", "4m", "-m", "64"]);
    let mut c = TlsClient::connect(tls);
    let value: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut req = format!("set big 0 0 {}\r\n", value.len()).into_bytes();
    req.extend_from_slice(&value);
    req.extend_from_slice(b"\r\n");
    c.expect(&req, b"STORED\r\n");
    // Ten copies asked for at once: far past every output bound.
    c.send(b"get big big big big big big big big big big\r\n");
    for _ in 0..10 {
        assert_eq!(c.line(), format!("VALUE big 0 {}\r\n", value.len()));
        assert!(c.exact(value.len()) == value, "value corrupted over TLS");
        assert_eq!(c.exact(2), b"\r\n");
    }
    assert_eq!(c.line(), "END\r\n");
    // A pipeline of 2,000 small requests in one write.
    let mut req = Vec::new();
    for i in 0..1000 {
        req.extend_from_slice(format!("set p{i} 0 0 4\r\nv{:03}\r\nget p{i}\r\n", i % 1000).as_bytes());
    }
    c.send(&req);
    for i in 0..1000 {
        assert_eq!(c.line(), "STORED\r\n");
        assert_eq!(c.line(), format!("VALUE p{i} 0 4\r\n"));
        assert_eq!(c.line(), format!("v{:03}\r\n", i % 1000));
        assert_eq!(c.line(), "END\r\n");
    }
    assert_eq!(l.connect().stat("ssl_handshake_errors"), 0);
}

#[test]
fn metrics_listener_speaks_https_with_metrics_tls() {
    let mport = free_port();
    let (_l, _tls) = start(&["-o", &format!("metrics_port={mport},metrics_tls")]);
    // (TlsClient verifies the server certificate against the test CA)
    let mut c = TlsClient::connect(mport);
    c.send(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
    // Read by Content-Length: HTTP/1.1 keeps the connection open.
    let reply = admin_http::read_reply(&mut c.reader, false).unwrap();
    assert!(reply.head.starts_with("HTTP/1.1 200 OK\r\n"), "{}", reply.head);
    let body = reply.text();
    assert!(body.contains("larder_curr_connections"), "{body}");
    // Plain HTTP on it gets no page.
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", mport)).unwrap();
    raw.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    raw.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let _ = raw.read_to_end(&mut got);
    assert!(!String::from_utf8_lossy(&got).contains("200 OK"));
    // Without -Z it is refused at start-up.
    let (code, err) = refused(&["-p", &free_port().to_string(), "-o", &format!("metrics_port={mport},metrics_tls")]);
    assert_eq!(code, 64);
    assert!(err.contains("metrics_tls needs -Z"), "{err}");
}

/// OpenSSL's command-line client (`openssl s_client`, another TLS stack
/// than the rustls client of the other tests) over TLS 1.2 and 1.3, with
/// TLS 1.3 key updates both ways (`k`: the client's; `K`: the client's,
/// asking for the server's): every reply arrives, before and after.
#[test]
fn openssl_s_client_interoperates_with_key_updates() {
    let (_l, tls) = start(&[]);
    for (version, lines) in [
        ("-tls1_3", &["set k 0 0 5", "hello", "get k", "k", "get k", "K", "get k", "K", "k", "get k"][..]),
        ("-tls1_2", &["set k 0 0 5", "hello", "get k", "get k"][..]),
    ] {
        let mut child = std::process::Command::new("openssl")
            .args(["s_client", "-crlf", version, "-connect", &format!("127.0.0.1:{tls}")])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("openssl (apt-get install openssl; scripts/test does)");
        let mut stdin = child.stdin.take().unwrap();
        let gets = lines.iter().filter(|l| l.starts_with("get")).count();
        let lines: Vec<String> = lines.iter().map(|l| format!("{l}\n")).collect();
        let writer = std::thread::spawn(move || {
            // Each line once the one before has had time to be served.
            std::thread::sleep(std::time::Duration::from_millis(300));
            for l in lines {
                stdin.write_all(l.as_bytes()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            std::thread::sleep(std::time::Duration::from_millis(1000));
            // End of input: s_client closes (close_notify) and exits.
        });
        writer.join().unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("STORED"), "{version}: {text}");
        assert_eq!(text.matches("VALUE k 0 5").count(), gets, "{version}: {text}");
        if version == "-tls1_3" {
            assert_eq!(text.matches("KEYUPDATE").count(), 4, "{version}: {text}");
            assert!(text.contains("Protocol  : TLSv1.3") || text.contains("New, TLSv1.3"), "{version}: {text}");
        } else {
            assert!(text.contains("TLSv1.2"), "{version}: {text}");
        }
        assert!(!text.contains("alert"), "{version}: {text}");
    }
}
