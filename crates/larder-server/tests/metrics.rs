//! `-o metrics_port`: the admin listener answers `GET /metrics` with every
//! general stat, per-prefix series, the latency histogram and memory by
//! category; the scrape is read back by prometheus_client's parser
//! (tests/observe/test_live_scrape.py) with a Python that has
//! prometheus_client and pytest (tests/.work/venv, or $LARDER_PYTHON). Without
//! one, that parse fails under CI and is skipped with a `SKIPPED:` message
//! elsewhere (`larder_testkit::require_or_skip`).

mod admin_http;
mod common;

use common::{require_or_skip, Larder};
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

/// The whole response (head, blank line, body) of `GET path`, read by its
/// `Content-Length` (HTTP/1.1 keeps the connection open).
fn http_get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let r = admin_http::read_reply(&mut std::io::BufReader::new(s), false).unwrap();
    format!("{}\r\n{}", r.head, r.text())
}


fn python() -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let candidates = [std::env::var("LARDER_PYTHON").ok(), Some(root.join("tests/.work/venv/bin/python").display().to_string()), Some("python3".into())];
    candidates.into_iter().flatten().find(|p| {
        Command::new(p).args(["-c", "import prometheus_client, pytest"]).output().is_ok_and(|o| o.status.success())
    })
}

#[test]
fn metrics_endpoint_serves_a_parseable_scrape() {
    let (l, mport) = Larder::start_with_admin(&["-t", "2"]);
    let mut c = l.connect();
    for (k, v) in [("user:1", "a"), ("user:2", "bb"), ("sess:1", "ccc")] {
        c.expect(format!("set {k} 0 0 {}\r\n{v}\r\n", v.len()).as_bytes(), b"STORED\r\n");
    }
    c.expect(b"get user:1\r\n", b"VALUE user:1 0 1\r\na\r\nEND\r\n");
    c.expect(b"get user:2\r\n", b"VALUE user:2 0 2\r\nbb\r\nEND\r\n");
    c.expect(b"get nope:1\r\n", b"END\r\n");

    let reply = http_get(mport, "/metrics");
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert!(body.contains("larder_cmd_get_total 3\n"), "{body}");
    assert!(body.contains("larder_memory_bytes{category=\"items\"}"), "{body}");
    assert!(body.contains("larder_prefix_items{prefix=\"user\"} 2\n"), "{body}");
    assert!(body.contains("larder_request_duration_seconds_count"), "{body}");
    assert!(http_get(mport, "/other").starts_with("HTTP/1.1 404"));

    let file = std::env::temp_dir().join(format!("larder-scrape-{}.txt", std::process::id()));
    std::fs::write(&file, body).unwrap();
    let python = require_or_skip(
        python(),
        "a Python with prometheus_client and pytest (tests/.work/venv/bin/python, $LARDER_PYTHON or python3) to parse the scrape",
        "scripts/test creates tests/.work/venv from tests/requirements.txt",
    );
    if let Some(py) = python {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let out = Command::new(py)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/observe/test_live_scrape.py"])
            .current_dir(&root)
            .env("LARDER_OBSERVE_SCRAPE", &file)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("4 passed"), "{text}");
    }
    let _ = std::fs::remove_file(&file);
}

#[test]
fn metrics_is_off_by_default() {
    let l = Larder::start(&["-t", "1"]);
    let mut c = l.connect();
    c.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    // Nothing listens on the suggested default port by our doing: the
    // listener exists only with -o metrics_port.
    let settings = c.stats("settings");
    assert!(settings.iter().all(|(n, _)| !n.contains("metrics")));
}
