//! The dashboard (issue 15) on the admin listener: `GET /` is a
//! self-contained page (no external URL) that uses only the versioned API,
//! `/api/v1/summary`, `/prefixes` and `/keys` are JSON whose figures match
//! `stats`, each stating `api_version` 1, `/api/v1/history` grows (the ring's cap is checked by the
//! unit tests in `admin/history.rs`: 450 samples at 2 s would take 15
//! minutes here), and a hostile key comes out escaped.

mod admin_http;
mod common;

use common::Larder;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};


/// (head, body) of `GET path`, read by its `Content-Length` (HTTP/1.1
/// keeps the connection open).
fn get(port: u16, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let r = admin_http::read_reply(&mut std::io::BufReader::new(s), false).unwrap();
    (r.head.trim_end().to_string(), r.text())
}

// ---- a minimal JSON parser (enough to check the documents' shape) ----

#[derive(Debug, Clone, PartialEq)]
enum J {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(BTreeMap<String, J>),
}

impl J {
    fn get(&self, k: &str) -> &J {
        match self {
            J::Obj(m) => m.get(k).unwrap_or_else(|| panic!("no member {k}")),
            _ => panic!("not an object looking for {k}"),
        }
    }
    fn num(&self) -> f64 {
        match self {
            J::Num(n) => *n,
            other => panic!("not a number: {other:?}"),
        }
    }
    fn arr(&self) -> &[J] {
        match self {
            J::Arr(a) => a,
            other => panic!("not an array: {other:?}"),
        }
    }
    fn str(&self) -> &str {
        match self {
            J::Str(s) => s,
            other => panic!("not a string: {other:?}"),
        }
    }
}

fn parse_json(text: &str) -> J {
    let b = text.as_bytes();
    let mut i = 0;
    let v = value(b, &mut i);
    ws(b, &mut i);
    assert_eq!(i, b.len(), "trailing bytes after the JSON document");
    v
}

fn ws(b: &[u8], i: &mut usize) {
    while *i < b.len() && b[*i].is_ascii_whitespace() {
        *i += 1;
    }
}

fn value(b: &[u8], i: &mut usize) -> J {
    ws(b, i);
    match b[*i] {
        b'{' => {
            *i += 1;
            let mut m = BTreeMap::new();
            ws(b, i);
            if b[*i] == b'}' {
                *i += 1;
                return J::Obj(m);
            }
            loop {
                ws(b, i);
                let J::Str(k) = value(b, i) else { panic!("object key not a string at {i}") };
                ws(b, i);
                assert_eq!(b[*i], b':', "expected ':' at {i}");
                *i += 1;
                let v = value(b, i);
                assert!(m.insert(k.clone(), v).is_none(), "duplicate key {k}");
                ws(b, i);
                *i += 1;
                match b[*i - 1] {
                    b',' => continue,
                    b'}' => return J::Obj(m),
                    c => panic!("expected , or }} got {:?} at {i}", c as char),
                }
            }
        }
        b'[' => {
            *i += 1;
            let mut a = Vec::new();
            ws(b, i);
            if b[*i] == b']' {
                *i += 1;
                return J::Arr(a);
            }
            loop {
                a.push(value(b, i));
                ws(b, i);
                *i += 1;
                match b[*i - 1] {
                    b',' => continue,
                    b']' => return J::Arr(a),
                    c => panic!("expected , or ] got {:?} at {i}", c as char),
                }
            }
        }
        b'"' => {
            *i += 1;
            let mut s = String::new();
            loop {
                let c = b[*i];
                *i += 1;
                match c {
                    b'"' => return J::Str(s),
                    b'\\' => {
                        let e = b[*i];
                        *i += 1;
                        match e {
                            b'"' => s.push('"'),
                            b'\\' => s.push('\\'),
                            b'/' => s.push('/'),
                            b'n' => s.push('\n'),
                            b'r' => s.push('\r'),
                            b't' => s.push('\t'),
                            b'b' => s.push('\u{8}'),
                            b'f' => s.push('\u{c}'),
                            b'u' => {
                                let h = std::str::from_utf8(&b[*i..*i + 4]).unwrap();
                                *i += 4;
                                s.push(char::from_u32(u32::from_str_radix(h, 16).unwrap()).unwrap());
                            }
                            _ => panic!("bad escape"),
                        }
                    }
                    c if c < 0x20 => panic!("raw control byte in a string"),
                    _ => {
                        // copy one UTF-8 sequence
                        let start = *i - 1;
                        let len = match c {
                            0x00..=0x7F => 1,
                            0xC0..=0xDF => 2,
                            0xE0..=0xEF => 3,
                            _ => 4,
                        };
                        *i = start + len;
                        s.push_str(std::str::from_utf8(&b[start..start + len]).unwrap());
                    }
                }
            }
        }
        b't' => {
            assert_eq!(&b[*i..*i + 4], b"true");
            *i += 4;
            J::Bool(true)
        }
        b'f' => {
            assert_eq!(&b[*i..*i + 5], b"false");
            *i += 5;
            J::Bool(false)
        }
        b'n' => {
            assert_eq!(&b[*i..*i + 4], b"null");
            *i += 4;
            J::Null
        }
        _ => {
            let start = *i;
            while *i < b.len() && matches!(b[*i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                *i += 1;
            }
            J::Num(std::str::from_utf8(&b[start..*i]).unwrap().parse().unwrap_or_else(|_| panic!("bad number at {start}")))
        }
    }
}

#[test]
fn page_is_html_and_self_contained() {
    let (_l, mport) = Larder::start_with_admin(&[]);
    let (head, body) = get(mport, "/");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("Content-Type: text/html; charset=utf-8"), "{head}");
    assert!(head.contains("Content-Security-Policy: default-src 'none'; script-src 'self'"), "{head}");
    assert!(body.starts_with("<!doctype html>"));
    assert!(body.contains("<script src=\"/dashboard.js\"></script>"));
    let (jhead, js) = get(mport, "/dashboard.js");
    assert!(jhead.contains("Content-Type: text/javascript"), "{jhead}");
    let (chead, css) = get(mport, "/dashboard.css");
    assert!(chead.contains("Content-Type: text/css"), "{chead}");
    // The icon is linked and served (no /favicon.ico 404 in the console).
    assert!(body.contains("href=\"/favicon.svg\""));
    let (ihead, icon) = get(mport, "/favicon.svg");
    assert!(ihead.contains("Content-Type: image/svg+xml") && icon.starts_with("<svg"), "{ihead}");
    for (name, text) in [("index.html", &body), ("dashboard.js", &js), ("dashboard.css", &css)] {
        for bad in ["http://", "https://", "src=\"//", "href=\"//", "url(", "@import", "@font-face"] {
            assert!(!text.contains(bad), "{name} refers to something outside the server: {bad}");
        }
    }
    // Keys reach the page as text only.
    assert!(!js.contains(".innerHTML") && !js.contains("outerHTML") && !js.contains("insertAdjacentHTML"));
    assert!(!js.contains("eval("));
    // The page uses the v1 API only; the unversioned paths are gone.
    for path in ["/api/v1/summary", "/api/v1/prefixes", "/api/v1/keys", "/api/v1/history"] {
        assert!(js.contains(&format!("\"{path}\"")), "dashboard.js does not use {path}");
        let (h, b) = get(mport, path);
        assert!(h.starts_with("HTTP/1.1 200 OK") && h.contains("Content-Type: application/json"), "{path}: {h}");
        assert_eq!(parse_json(&b).get("api_version").num(), 1.0, "{path}");
    }
    assert!(!js.contains("\"/api/stats\"") && !js.contains("\"/api/history\""));
    for gone in ["/api/stats", "/api/history", "/api/v1", "/api/v1/", "/api/v2/summary"] {
        assert!(get(mport, gone).0.starts_with("HTTP/1.1 404"), "{gone}");
    }
    // Prometheus still answers; unknown paths are 404; bounds kept.
    assert!(get(mport, "/metrics").0.starts_with("HTTP/1.1 200 OK"));
    assert!(get(mport, "/nope").0.starts_with("HTTP/1.1 404"));
    let mut s = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    let huge = format!("GET /api/v1/summary HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    let _ = s.write_all(huge.as_bytes());
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
}

#[test]
fn api_v1_matches_stats_and_escapes_keys() {
    let (l, mport) = Larder::start_with_admin(&[]);
    let mut c = l.connect();
    for i in 0..50 {
        c.expect(format!("set user:{i} 0 0 5\r\nhello\r\n").as_bytes(), b"STORED\r\n");
    }
    c.expect(format!("set sess:1 0 100 2000\r\n{}\r\n", "s".repeat(2000)).as_bytes(), b"STORED\r\n");
    // A hostile key (the text protocol allows any printable byte): big, so
    // it is a big key, and read, so it is a hot key.
    let evil = "ev</script><img_src=x_onerror=alert(1)>\"il";
    let value = "v".repeat(100_000);
    c.expect(format!("set {evil} 0 0 {}\r\n{value}\r\n", value.len()).as_bytes(), b"STORED\r\n");
    for _ in 0..20 {
        let r = c.roundtrip(format!("get {evil}\r\n").as_bytes(), b"END\r\n");
        assert!(r.starts_with(b"VALUE "));
    }
    for i in 0..30 {
        c.roundtrip(format!("get user:{} nope:{i}\r\n", i % 60).as_bytes(), b"END\r\n");
    }

    let (head, body) = get(mport, "/api/v1/summary");
    assert!(head.contains("Content-Type: application/json"), "{head}");
    let stats: BTreeMap<String, String> = c.stats("").into_iter().chain(c.stats("larder")).collect();
    let d = parse_json(&body);
    assert_eq!(d.get("api_version").num(), 1.0);
    // The summary holds no lists; they have endpoints of their own.
    for list in ["prefixes", "bigkeys", "hotkeys"] {
        assert!(!matches!(&d, J::Obj(m) if m.contains_key(list)), "summary has {list}");
    }
    let s = d.get("stats");
    for name in ["get_hits", "get_misses", "cmd_get", "cmd_set", "curr_items", "bytes", "total_items", "limit_maxbytes", "larder_segments_used", "larder_index_slots"] {
        assert_eq!(s.get(name).num(), stats[name].parse::<f64>().unwrap(), "{name}");
    }
    assert_eq!(s.get("version").str(), stats["version"]);
    let m = d.get("memory");
    assert_eq!(m.get("limit").num(), stats["limit_maxbytes"].parse::<f64>().unwrap());
    assert_eq!(m.get("items").num(), stats["bytes"].parse::<f64>().unwrap());
    assert_eq!(m.get("history").num(), 43_200.0);
    assert!(d.get("latency_us").get("count").num() >= 100.0);

    // Per prefix.
    let (_, pbody) = get(mport, "/api/v1/prefixes");
    let p = parse_json(&pbody);
    assert_eq!(p.get("api_version").num(), 1.0);
    assert_eq!(p.get("prefix_delimiter").str(), ":");
    assert!(p.get("prefixes_total").num() >= 2.0);
    let prefixes = p.get("prefixes").arr();
    // Largest first: the unprefixed hostile key (100 KB), sess (2000
    // bytes), user (50 x 5).
    let order: Vec<&str> = prefixes.iter().map(|p| p.get("prefix").str()).collect();
    assert_eq!(order[..3], ["(no prefix)", "sess", "user"], "{order:?}");
    let user = prefixes.iter().find(|p| p.get("prefix").str() == "user").expect("prefix user");
    assert_eq!(user.get("items").num(), 50.0);
    assert_eq!(user.get("sets").num(), 50.0);
    assert_eq!(user.get("hits").num(), 30.0);

    // The hostile key: the raw bytes `</script>` never appear in the body;
    // decoded, the JSON gives back the key as `stats bigkeys` prints it.
    let (_, body) = get(mport, "/api/v1/keys");
    let d = parse_json(&body);
    assert_eq!(d.get("api_version").num(), 1.0);
    assert!(!body.contains("</script>") && !body.contains("<img"), "unescaped key in {body}");
    assert!(body.contains("\\u003c/script\\u003e"));
    let big = d.get("bigkeys").arr();
    assert_eq!(big[0].get("key").str(), evil);
    assert!(big[0].get("size").num() as usize > value.len());
    assert_eq!(big[0].get("ttl").num(), -1.0);
    let hot = d.get("hotkeys").get("by_requests").arr();
    let h = hot.iter().find(|h| h.get("key").str() == evil).expect("the hostile key is hot");
    assert_eq!(h.get("size").num(), value.len() as f64);
    assert_eq!(h.get("count").num(), 20.0);
    let sess = d.get("bigkeys").arr().iter().find(|b| b.get("key").str() == "sess:1").expect("sess:1");
    assert_eq!(sess.get("prefix").str(), "sess");
    let ttl = sess.get("ttl").num();
    assert!((95.0..=100.0).contains(&ttl), "{ttl}");
}

#[test]
fn history_grows_every_two_seconds() {
    let (l, mport) = Larder::start_with_admin(&[]);
    let mut c = l.connect();
    let h0 = parse_json(&get(mport, "/api/v1/history").1);
    assert_eq!(h0.get("capacity").num(), 450.0);
    assert_eq!(h0.get("interval_ms").num(), 2000.0);
    assert_eq!(h0.get("heap_bytes").num(), 43_200.0);
    let fields = h0.get("fields").arr().len();
    assert_eq!(h0.get("fields").arr()[0].str(), "unix_ms");
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut n = 0;
    while n < 2 {
        assert!(Instant::now() < deadline, "history did not grow");
        for i in 0..100 {
            c.expect(format!("set k{i} 0 0 1\r\nx\r\n").as_bytes(), b"STORED\r\n");
        }
        std::thread::sleep(Duration::from_millis(250));
        let h = parse_json(&get(mport, "/api/v1/history").1);
        let samples = h.get("samples").arr();
        n = samples.len();
        for s in samples {
            assert_eq!(s.arr().len(), fields);
        }
    }
    let h = parse_json(&get(mport, "/api/v1/history").1);
    let samples = h.get("samples").arr();
    let t: Vec<f64> = samples.iter().map(|s| s.arr()[0].num()).collect();
    assert!(t.windows(2).all(|w| w[1] > w[0]), "{t:?}");
    assert!(samples.len() <= 450);
    // Some sets per second were seen, and /api/v1/summary carries the newest.
    let set_col = h.get("fields").arr().iter().position(|f| f.str() == "set_per_s").unwrap();
    assert!(samples.iter().any(|s| s.arr()[set_col].num() > 0.0));
    let d = parse_json(&get(mport, "/api/v1/summary").1);
    assert!(d.get("latest").arr()[0].num() >= *t.last().unwrap());
}
