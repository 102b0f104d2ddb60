//! The admin listener under clients that never finish a request: 1,000 of
//! them (each sent `GET /metrics HTTP/1.1\r\n` and nothing more) delay a
//! Prometheus scrape by less than [`MAX_DELAY_MS`], cost the server less
//! than [`RSS_BOUND`] of resident memory, and the dashboard keeps
//! answering; the limits that bound them (header and idle timeouts, the
//! connection cap, which closes the least recently used) do what
//! docs/admin-listener.md says. The figures it prints (`admin slow
//! clients: ...`) are the ones that page quotes.

mod admin_http;

use admin_http::{get, metric, read_reply};
use larder_testkit::{eventually, Larder};
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Stalled connections in the main test.
const STALLED: usize = 1000;
/// How much later than a quiet scrape a scrape may finish with them open.
const MAX_DELAY_MS: f64 = 100.0;
/// Resident memory the stalled connections may add (measured: about
/// 18.3-18.6 MiB, 19 KiB each; docs/admin-listener.md).
const RSS_BOUND: u64 = 24 << 20;

/// Milliseconds for one whole scrape on a new connection (connect to last
/// byte), and its body.
fn scrape(port: u16) -> (f64, String) {
    let t = Instant::now();
    let r = get(port, "/metrics");
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(r.status, 200, "{}", r.head);
    (ms, r.text())
}

fn percentile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((s.len() - 1) as f64 * q).round() as usize]
}

/// A connection that sent the start of a request and stops there.
fn stall(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    s
}

#[test]
fn a_thousand_stalled_connections_do_not_delay_a_scrape() {
    // A header timeout longer than the test: the stalled connections must
    // still be open while the scrapes are timed.
    let (l, mport) = Larder::start_with_admin(&["-t", "2", "-o", "metrics_header_timeout=300"]);
    let mut c = l.connect();
    for i in 0..200 {
        c.expect(format!("set user:{i} 0 0 5\r\nhello\r\n").as_bytes(), b"STORED\r\n");
    }
    // Warm: the first scrapes and pages allocate what every later one reuses.
    for _ in 0..20 {
        scrape(mport);
        assert_eq!(get(mport, "/api/v1/summary").status, 200);
    }
    let quiet: Vec<f64> = (0..20).map(|_| scrape(mport).0).collect();
    let rss_before = l.rss_bytes();

    let stalled: Vec<TcpStream> = (0..STALLED).map(|_| stall(mport)).collect();
    let open = |body: &str| metric(body, "larder_admin_connections").unwrap_or(0.0);
    assert!(
        eventually(Duration::from_secs(20), || open(&scrape(mport).1) >= (STALLED + 1) as f64),
        "the server did not take all {STALLED} connections"
    );
    let loaded: Vec<f64> = (0..20).map(|_| scrape(mport).0).collect();
    // The dashboard meanwhile: its page and its documents.
    let page = get(mport, "/");
    assert!(page.status == 200 && page.text().starts_with("<!doctype html>"), "{}", page.head);
    for path in ["/api/v1/summary", "/api/v1/prefixes", "/api/v1/keys", "/api/v1/history"] {
        let r = get(mport, path);
        assert!(r.status == 200 && r.text().contains("\"api_version\":1"), "{path}: {}", r.head);
    }
    let rss_after = l.rss_bytes();
    let (_, body) = scrape(mport);
    // Still all open: nothing timed out, nothing evicted.
    assert!(open(&body) >= (STALLED + 1) as f64, "{body}");
    assert_eq!(metric(&body, "larder_admin_connections_evicted_total"), Some(0.0));
    assert_eq!(metric(&body, "larder_admin_timeouts_total{kind=\"header\"}"), Some(0.0));

    let grown = rss_after.saturating_sub(rss_before);
    eprintln!(
        "admin slow clients: quiet scrape p50 {:.2} ms max {:.2} ms; with {STALLED} stalled connections p50 {:.2} ms max {:.2} ms; \
         RSS {:.1} MiB -> {:.1} MiB (+{:.1} MiB, {:.1} KiB per connection)",
        percentile(&quiet, 0.5),
        percentile(&quiet, 1.0),
        percentile(&loaded, 0.5),
        percentile(&loaded, 1.0),
        rss_before as f64 / 1048576.0,
        rss_after as f64 / 1048576.0,
        grown as f64 / 1048576.0,
        grown as f64 / 1024.0 / STALLED as f64,
    );
    let allowed = percentile(&quiet, 0.5) + MAX_DELAY_MS;
    assert!(percentile(&loaded, 1.0) <= allowed, "scrapes {loaded:?} against quiet {quiet:?}");
    assert!(grown <= RSS_BOUND, "{STALLED} stalled connections grew RSS by {grown} bytes (bound {RSS_BOUND})");
    drop(stalled);
}

/// Past `metrics_max_conns` a new connection closes the least recently used
/// one: stalled connections cannot lock a scraper out, and are counted.
#[test]
fn the_cap_closes_the_least_recently_used_connection() {
    let (_l, mport) = Larder::start_with_admin(&["-o", "metrics_max_conns=20,metrics_header_timeout=300"]);
    let mut first: Vec<TcpStream> = (0..10).map(|_| stall(mport)).collect();
    // Wait until those ten are accepted, so they are the oldest.
    assert!(eventually(Duration::from_secs(10), || metric(&get(mport, "/metrics").text(), "larder_admin_connections") == Some(11.0)));
    let _later: Vec<TcpStream> = (0..40).map(|_| stall(mport)).collect();
    let t = Instant::now();
    let r = get(mport, "/metrics");
    assert_eq!(r.status, 200);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let body = r.text();
    let evicted = metric(&body, "larder_admin_connections_evicted_total").unwrap();
    // 10 + 40 stalled and the scrape through a cap of 20 (evicted
    // connections leave the gauge when their task is dropped, just after).
    assert!(evicted >= 31.0, "{body}");
    assert!(metric(&body, "larder_admin_connections").unwrap() <= 25.0, "{body}");
    // The oldest went first: each of the first ten was closed.
    for s in &mut first {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 64];
        assert!(matches!(s.read(&mut b), Ok(0) | Err(_)), "an old stalled connection is still open");
    }
}

/// A request head that does not arrive within `metrics_header_timeout`
/// ends its connection; a kept-alive connection serves several requests and
/// ends after `metrics_idle_timeout` without one; both are counted.
#[test]
fn header_and_idle_timeouts() {
    let (_l, mport) = Larder::start_with_admin(&["-o", "metrics_header_timeout=1,metrics_idle_timeout=2"]);
    let t = Instant::now();
    let mut s = stall(mport);
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut b = [0u8; 64];
    assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(4), "{took:?}");
    // A connection that says nothing at all ends the same way.
    let t = Instant::now();
    let mut mute = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    mute.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(matches!(mute.read(&mut b), Ok(0) | Err(_)));
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());

    // Keep-alive: three requests on one connection, with a pause longer
    // than the header timeout between them (idle is not a slow head).
    let conn = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = BufReader::new(conn.try_clone().unwrap());
    for (i, path) in ["/metrics", "/api/v1/summary", "/dashboard.js"].iter().enumerate() {
        if i == 2 {
            std::thread::sleep(Duration::from_millis(1500));
        }
        (&conn).write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n").as_bytes()).unwrap();
        let reply = read_reply(&mut r, false).unwrap();
        assert_eq!(reply.status, 200, "{path}: {}", reply.head);
        assert!(!reply.body.is_empty());
        assert_ne!(reply.header("connection"), Some("close"), "{}", reply.head);
    }
    // HEAD: the head, no body.
    (&conn).write_all(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n").unwrap();
    let head = read_reply(&mut r, true).unwrap();
    assert_eq!(head.status, 200);
    assert!(head.header("content-length").is_some_and(|n| n != "0"), "{}", head.head);
    // Then idle: closed after about 2 s.
    let t = Instant::now();
    let mut rest = Vec::new();
    let _ = r.read_to_end(&mut rest);
    assert!(rest.is_empty(), "HEAD sent a body: {}", String::from_utf8_lossy(&rest));
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(5), "{took:?}");

    // With Connection: close, one response and the end.
    let plain = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    (&plain).write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut r = BufReader::new(plain);
    let once = read_reply(&mut r, false).unwrap();
    assert_eq!((once.status, once.header("connection")), (200, Some("close")), "{}", once.head);
    let t = Instant::now();
    assert_eq!(r.read(&mut b).unwrap_or(0), 0);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    let body = get(mport, "/metrics").text();
    assert!(metric(&body, "larder_admin_timeouts_total{kind=\"header\"}").unwrap() >= 2.0, "{body}");
    assert!(metric(&body, "larder_admin_timeouts_total{kind=\"idle\"}").unwrap() >= 1.0, "{body}");
}

/// HTTP/1.1 keeps a connection open by default: two requests without any
/// `Connection` header (as Prometheus's Go client sends them) are both
/// answered on one connection, and neither response announces a close.
/// HTTP/1.0 without `keep-alive` still gets one response and the end.
#[test]
fn http_1_1_keeps_the_connection_without_a_connection_header() {
    let (_l, mport) = Larder::start_with_admin(&[]);
    let accepted = |body: &str| metric(body, "larder_admin_connections_accepted_total").unwrap();
    let before = accepted(&get(mport, "/metrics").text());
    let conn = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = BufReader::new(conn.try_clone().unwrap());
    for path in ["/metrics", "/api/v1/summary"] {
        (&conn).write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).unwrap();
        let reply = read_reply(&mut r, false).unwrap_or_else(|e| panic!("{path} on a kept connection: {e}"));
        assert_eq!(reply.status, 200, "{path}: {}", reply.head);
        assert!(!reply.body.is_empty(), "{path}");
        assert_eq!(reply.header("connection"), None, "{path}: {}", reply.head);
    }
    // The two requests above came over one accepted connection (the
    // scrape just made is the other).
    assert_eq!(accepted(&get(mport, "/metrics").text()), before + 2.0);

    let old = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    old.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    (&old).write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut r = BufReader::new(old);
    assert_eq!(read_reply(&mut r, false).unwrap().status, 200);
    let t = Instant::now();
    let mut b = [0u8; 16];
    assert_eq!(r.read(&mut b).unwrap_or(0), 0);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}
