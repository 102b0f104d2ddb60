//! `larder-top` against a real memcached 1.6.18 (`/usr/bin/memcached`, or
//! `$MEMCACHED_BIN`): two refreshes, then exit. memcached answers `ERROR` to
//! `stats prefixes`, so only the `stats` panel is drawn. Without memcached
//! the test fails under CI and is skipped with a `SKIPPED:` message
//! elsewhere (`larder_testkit::require_or_skip`).

use larder_testkit::{free_port, Memcached};
use std::process::Command;

#[test]
fn top_against_memcached() {
    let Some(mc) = Memcached::start_or_skip(&["-m", "64"]) else { return };
    let addr = mc.addr();
    let mut c = mc.connect();
    c.expect(
        b"set user:1 0 0 5\r\nhello\r\nget user:1\r\nget user:2\r\n",
        b"STORED\r\nVALUE user:1 0 5\r\nhello\r\nEND\r\nEND\r\n",
    );

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
