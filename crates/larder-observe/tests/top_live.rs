//! `larder-top` against a real memcached 1.6.18 (`/usr/bin/memcached`, or
//! `$MEMCACHED_BIN`): two refreshes, then exit. memcached answers `ERROR` to
//! `stats prefixes`, so only the `stats` panel is drawn. Skipped (with a
//! message) when no memcached binary is installed.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn top_against_memcached() {
    let bin = std::env::var("MEMCACHED_BIN").unwrap_or_else(|_| "/usr/bin/memcached".into());
    if !std::path::Path::new(&bin).exists() {
        eprintln!("skipped: no memcached at {bin}");
        return;
    }
    let port = free_port();
    let _mc = Kill(
        Command::new(&bin)
            .args(["-p", &port.to_string(), "-U", "0", "-l", "127.0.0.1", "-u", "root", "-m", "64"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start memcached"),
    );
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut c = loop {
        match TcpStream::connect(&addr) {
            Ok(c) => break c,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("memcached did not start: {e}"),
        }
    };
    c.write_all(b"set user:1 0 0 5\r\nhello\r\nget user:1\r\nget user:2\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while !got.ends_with(b"END\r\nEND\r\n") {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }

    let out = Command::new(env!("CARGO_BIN_EXE_larder-top"))
        .args(["--server", &addr, "--iterations", "2", "--interval", "0.3", "--no-clear"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "exit {:?}\nstdout:\n{text}\nstderr:\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    let screens: Vec<&str> = text.split("larder top - ").filter(|s| !s.is_empty()).collect();
    assert_eq!(screens.len(), 2, "{text}");
    assert!(screens[0].starts_with(&format!("{addr} - version 1.6.18 - uptime ")), "{text}");
    assert!(screens[0].contains("lifetime averages"), "{text}");
    assert!(screens[0].contains("hit ratio 50.0%"), "{text}");
    assert!(screens[0].contains("/ 64.0 MiB ("), "{text}");
    assert!(screens[0].contains("items 1  connections "), "{text}");
    assert!(screens[1].contains(" - rates over "), "{text}");
    // no traffic between the refreshes: no gets, so no ratio
    assert!(screens[1].contains("get/s 0  set/s 0  hit ratio -"), "{text}");
    assert!(!text.contains("PREFIX"), "memcached has no stats prefixes:\n{text}");

    // an unreachable server: exit 1 with a message
    let out = Command::new(env!("CARGO_BIN_EXE_larder-top"))
        .args(["--server", &format!("127.0.0.1:{}", free_port()), "--iterations", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect"));
}
