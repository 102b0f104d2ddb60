//! The admin listener is access-controlled like the cache
//! (docs/admin-listener.md): with `-o metrics_auth_file` every path needs
//! HTTP basic auth or a bearer token from the file; with `metrics_tls` and
//! `ssl_verify_mode` a verified client certificate does too; when the cache
//! port requires authentication (`-Y`, `-S`, `ssl_verify_mode` 2 or 3) the
//! server does not start with an admin listener that has no credentials,
//! unless `-o metrics_auth=none` says to serve it open.

mod admin_http;

use admin_http::{basic, get, metric, read_reply, refused, request, start, TempFile};
use larder_testkit::tls::{certs, server_args, ClientOptions, TlsClient};
use std::io::Write;
use std::time::Duration;

const TOKEN: &str = "tok-3f9a1c2e7b5d4a6f8e0c";
const CREDENTIALS: &str = "# admin\nbasic prom:s3cret pass:word\nbearer tok-3f9a1c2e7b5d4a6f8e0c\n";
/// Every path the listener serves.
const PATHS: [&str; 9] =
    ["/metrics", "/", "/index.html", "/dashboard.js", "/dashboard.css", "/favicon.svg", "/api/v1/summary", "/api/v1/keys", "/api/v1/history"];

#[test]
fn an_authenticated_cache_needs_an_authenticated_admin_listener() {
    let y = TempFile::new("admin-y", "user:pass\n");
    let tls = server_args(certs());
    let ca = format!("ssl_ca_cert={}", certs().ca.display());
    let with_tls = |extra: &[&str]| -> Vec<String> {
        let mut a = tls.clone();
        a.extend(["-o".into(), ca.clone()]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let verify2 = with_tls(&["-o", "ssl_verify_mode=2"]);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["-Y".into(), y.path().into()], "(-Y)"),
        (vec!["-S".into()], "(-S)"),
        (verify2.clone(), "(-o ssl_verify_mode)"),
        (vec!["-o".into(), "metrics_auth=required".into()], "metrics_auth=required"),
    ];
    for (args, names) in &cases {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, err) = refused(&refs);
        assert_eq!(code, 64, "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
        for hint in ["metrics_auth_file=PATH", "metrics_tls", "metrics_auth=none"] {
            assert!(err.contains(hint), "{args:?} does not mention {hint}: {err}");
        }
    }
    // Contradictions and bad files stop the start too.
    let f = TempFile::new("admin-creds", CREDENTIALS);
    let (code, err) = refused(&["-o", &format!("metrics_auth=none,metrics_auth_file={}", f.path())]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("contradicts"), "{err}");
    let bad = TempFile::new("admin-bad", "basic prom:pw\ntoken xyz\n");
    let (code, err) = refused(&["-o", &format!("metrics_auth_file={}", bad.path())]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("metrics_auth_file") && err.contains("line 2"), "{err}");
    let (code, err) = refused(&["-o", "metrics_auth_file=/nonexistent/larder-admin-creds"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("cannot read /nonexistent/larder-admin-creds"), "{err}");

    // Said explicitly, an open listener is allowed.
    let s = start(&["-Y", y.path(), "-o", "metrics_auth=none"]);
    assert_eq!(get(s.admin, "/metrics").status, 200);
    // Client certificates are credentials too.
    let mut args = with_tls(&["-o", "ssl_verify_mode=2,metrics_tls"]);
    args.extend(["-Y".into(), y.path().into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = start(&refs);
    assert!(TlsClient::try_connect(s.admin, ClientOptions { client_cert: true, ..Default::default() }).is_ok());
}

/// Every path answers 401 without credentials, with the challenges a
/// browser and Prometheus understand; basic and bearer credentials from the
/// file get through; nothing is leaked in a refusal.
#[test]
fn every_path_needs_basic_or_bearer_credentials() {
    let y = TempFile::new("admin-y2", "user:pass\n");
    let f = TempFile::new("admin-creds2", CREDENTIALS);
    let s = start(&["-Y", y.path(), "-o", &format!("metrics_auth_file={}", f.path())]);
    let mut c = larder_testkit::Client::connect(s.port);
    assert!(c.try_authenticate("user", "pass"));
    c.expect(b"set session:alice@example.com 0 0 5\r\nhello\r\n", b"STORED\r\n");
    c.expect(b"get session:alice@example.com\r\n", b"VALUE session:alice@example.com 0 5\r\nhello\r\nEND\r\n");

    let good_basic = basic("prom", "s3cret pass:word");
    let bearer = format!("Bearer {TOKEN}");
    for path in PATHS {
        let r = get(s.admin, path);
        assert_eq!(r.status, 401, "{path}: {}", r.head);
        let challenges = r.headers("www-authenticate");
        assert_eq!(challenges, ["Basic realm=\"larder admin\", charset=\"UTF-8\"", "Bearer realm=\"larder admin\""], "{path}");
        assert!(!r.text().contains("alice") && r.text().len() < 100, "{path}: {}", r.text());
        for bad in [basic("prom", "s3cret"), basic("prom", "s3cret pass:word "), basic("nobody", "s3cret pass:word"), format!("Bearer {TOKEN}x"), format!("Basic {TOKEN}"), "Bearer".into(), "garbage".into()] {
            assert_eq!(request(s.admin, path, &[("Authorization", &bad)]).status, 401, "{path} with {bad}");
        }
        for good in [&good_basic, &bearer] {
            let r = request(s.admin, path, &[("Authorization", good)]);
            assert_eq!(r.status, 200, "{path} with {good}: {}", r.head);
        }
    }
    let keys = request(s.admin, "/api/v1/keys", &[("Authorization", &bearer)]).text();
    assert!(keys.contains("\"api_version\":1"), "{keys}");
    // Two Authorization headers are not a way in.
    assert_eq!(request(s.admin, "/metrics", &[("Authorization", "Basic eA=="), ("Authorization", &bearer)]).status, 401);
    let m = request(s.admin, "/metrics", &[("Authorization", &bearer)]).text();
    assert!(metric(&m, "larder_admin_unauthorized_total").unwrap() >= (PATHS.len() * 8 + 1) as f64, "{m}");
}

/// Credentials are required whenever a file is given, cache auth or not;
/// the file is re-read when it changes (rotation without a restart), and a
/// refused new version keeps the old credentials.
#[test]
fn the_credentials_file_is_reread_when_it_changes() {
    let f = TempFile::new("admin-creds3", "basic old:password-one\n");
    let s = start(&["-o", &format!("metrics_auth_file={}", f.path())]);
    let with = |user: &str, pass: &str| request(s.admin, "/metrics", &[("Authorization", &basic(user, pass))]).status;
    assert_eq!(get(s.admin, "/metrics").status, 401);
    assert_eq!(with("old", "password-one"), 200);
    let rotated = format!("{}.new", f.path());
    std::fs::write(&rotated, "basic new:password-two\n").unwrap();
    std::fs::rename(&rotated, &f.0).unwrap();
    assert!(larder_testkit::eventually(Duration::from_secs(5), || with("new", "password-two") == 200));
    assert_eq!(with("old", "password-one"), 401);
    std::fs::write(&rotated, "basic broken\n").unwrap();
    std::fs::rename(&rotated, &f.0).unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(with("new", "password-two"), 200, "a refused file keeps the previous credentials");
}

/// `metrics_tls` with `ssl_verify_mode`: a verified client certificate
/// authenticates; without one, the file's credentials still do (mode 1),
/// and with neither the answer is 401, or 403 when only certificates are
/// accepted.
#[test]
fn client_certificates_authenticate_over_metrics_tls() {
    let ca = format!("ssl_ca_cert={}", certs().ca.display());
    let f = TempFile::new("admin-creds4", CREDENTIALS);
    let run = |extra: &str| {
        let mut args = server_args(certs());
        args.extend(["-o".into(), format!("{ca},metrics_tls,{extra}")]);
        args
    };
    let tls_get = |port: u16, cert: bool, auth: Option<&str>| -> u16 {
        let mut c = TlsClient::try_connect(port, ClientOptions { client_cert: cert, ..Default::default() }).unwrap();
        let auth = auth.map(|a| format!("Authorization: {a}\r\n")).unwrap_or_default();
        c.send(format!("GET /api/v1/keys HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n").as_bytes());
        read_reply(&mut c.reader, false).unwrap().status
    };
    // Mode 1 with a file: certificate or credentials.
    let args = run(&format!("ssl_verify_mode=1,metrics_auth_file={}", f.path()));
    let s = start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(tls_get(s.admin, true, None), 200);
    assert_eq!(tls_get(s.admin, false, None), 401);
    assert_eq!(tls_get(s.admin, false, Some(&format!("Bearer {TOKEN}"))), 200);
    drop(s);
    // Mode 1, certificates only.
    let args = run("ssl_verify_mode=1,metrics_auth=required");
    let s = start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(tls_get(s.admin, true, None), 200);
    assert_eq!(tls_get(s.admin, false, None), 403);
    drop(s);
    // Mode 2: no certificate, no connection.
    let args = run("ssl_verify_mode=2");
    let s = start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(tls_get(s.admin, true, None), 200);
    // (TLS 1.3: the client finishes its side first; the refusal shows on
    // the first write or read.)
    let refused_handshake = TlsClient::try_connect(s.admin, ClientOptions::default()).and_then(|mut c| {
        c.reader.get_mut().write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
        read_reply(&mut c.reader, false)
    });
    assert!(refused_handshake.is_err(), "{refused_handshake:?}");
}

/// The credentials file is read before `-u` drops privileges, as memcached
/// reads its files: a file only root may read serves `-u nobody`'s
/// listener, and a bad one is a start-up error (exit 64, naming it), not
/// the unprivileged start's failure (exit 71). Needs root to drop
/// privileges at all; as another user it says so and checks nothing.
#[test]
fn the_credentials_file_is_read_before_privileges_drop() {
    if !larder_testkit::launch::running_as_root() {
        eprintln!("SKIPPED: the_credentials_file_is_read_before_privileges_drop: needs root to test -u");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let f = TempFile::new("admin-root-only", CREDENTIALS);
    std::fs::set_permissions(&f.0, std::fs::Permissions::from_mode(0o600)).unwrap();
    let s = start(&["-u", "nobody", "-o", &format!("metrics_auth_file={}", f.path())]);
    // Really running as nobody, and still holding the file's credentials.
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.child.id())).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap().to_string();
    assert!(uid.split_whitespace().nth(1) == Some("65534"), "{uid}");
    assert_eq!(get(s.admin, "/metrics").status, 401);
    assert_eq!(request(s.admin, "/metrics", &[("Authorization", &basic("prom", "s3cret pass:word"))]).status, 200);
    drop(s);

    let bad = TempFile::new("admin-root-bad", "basic prom:pw\ntoken xyz\n");
    std::fs::set_permissions(&bad.0, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, err) = refused(&["-u", "nobody", "-o", &format!("metrics_auth_file={}", bad.path())]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("metrics_auth_file") && err.contains("line 2"), "{err}");
}
