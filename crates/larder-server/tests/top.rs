//! `larder top --server host:port --iterations 1` against a running larder.

mod common;

use common::{binary, Larder};
use std::process::Command;

#[test]
fn top_shows_one_screen_and_exits_0() {
    let l = Larder::start(&["-t", "1"]);
    let mut c = l.connect();
    c.expect(b"set user:1 0 0 1\r\na\r\n", b"STORED\r\n");
    c.expect(b"get user:1\r\n", b"VALUE user:1 0 1\r\na\r\nEND\r\n");
    let server = format!("127.0.0.1:{}", l.port);
    let out = Command::new(binary())
        .args(["top", "--server", &server, "--iterations", "1", "--no-clear"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("hit ratio"), "{text}");
    assert!(text.contains("user"), "{text}");
}

#[test]
fn top_reports_an_unreachable_server() {
    let port = common::free_port();
    let out = Command::new(binary())
        .args(["top", "--server", &format!("127.0.0.1:{port}"), "--iterations", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}
