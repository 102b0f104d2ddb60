//! The failure policy (`conn/contain.rs`): a panic while serving one
//! connection ends that connection only. The server runs in-process with one
//! worker, so the panicking connections share their worker with the ones
//! that must go on being served; the panic is injected through the
//! test-only hook `conn::contain::inject_panic_on` (process-global: this
//! file is its own test process, and its one test arms it).
//!
//! The panicking connections hold what a connection can hold: one is
//! receiving a value larger than a segment into the store (a landing,
//! charged to the connection budget), the other is a slow reader with a
//! large value pinned for sending after the value was deleted (so the pin
//! alone keeps it, charged to the budget too). After the panics, everything
//! they held is given back: the budget and the buffer figures return to
//! where they were before the two connections opened.

use larder_server::conn::contain::inject_panic_on;
use larder_server::{parse_args, Command, Shutdown};
use larder_testkit::{eventually, Client};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn settings(extra: &[&str]) -> larder_server::Settings {
    let mut args: Vec<String> = ["-p", "-1", "-U", "0", "-l", "127.0.0.1"].iter().map(|s| s.to_string()).collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    match parse_args(args) {
        Ok(Command::Run(s)) => s,
        _ => panic!("flags refused"),
    }
}

fn set(c: &mut Client, key: &str, value: &[u8]) {
    let mut req = format!("set {key} 3 0 {}\r\n", value.len()).into_bytes();
    req.extend_from_slice(value);
    req.extend_from_slice(b"\r\n");
    c.expect(&req, b"STORED\r\n");
}

fn get(c: &mut Client, key: &str, value: &[u8]) {
    let mut want = format!("VALUE {key} 3 {}\r\n", value.len()).into_bytes();
    want.extend_from_slice(value);
    want.extend_from_slice(b"\r\nEND\r\n");
    c.expect(format!("get {key}\r\n").as_bytes(), &want);
}

/// The figures that say what connections hold.
fn held(c: &mut Client) -> [u64; 4] {
    ["larder_conn_budget_used", "read_buf_bytes", "response_obj_bytes", "curr_connections"].map(|n| c.stat(n))
}

#[test]
fn a_panic_ends_its_connection_gives_back_what_it_held_and_the_worker_serves_on() {
    let prepared = larder_server::prepare(settings(&["-t", "1", "-m", "64", "-I", "32m"])).unwrap();
    let port = prepared.tcp_addrs()[0].port();
    let shutdown = Shutdown::new();
    let running = larder_server::start(prepared, shutdown.clone()).unwrap();

    let mut a = Client::connect(port);
    let small: Vec<(String, Vec<u8>)> = (0..20).map(|i| (format!("k{i}"), format!("v{i}").repeat(i + 1).into_bytes())).collect();
    for (k, v) in &small {
        set(&mut a, k, v);
    }
    // Larger than what loopback socket buffers hold, so the reader below
    // keeps part of it pinned.
    let big: Vec<u8> = (0..24_000_000u32).map(|i| (i % 253) as u8).collect();
    set(&mut a, "big", &big);
    let medium: Vec<u8> = (0..50_000u32).map(|i| (i % 241) as u8).collect();
    set(&mut a, "medium", &medium);
    // Grown buffers kept for reuse are budget too: empty the shelf's
    // growth out of the comparison by measuring after the large set.
    let before = held(&mut a);
    assert_eq!(a.stat("larder_conn_panics"), 0);

    // Landing: a value larger than a segment, a third of it sent.
    let mut landing = TcpStream::connect(("127.0.0.1", port)).unwrap();
    landing.write_all(b"set panic-now-landing 0 0 1000000\r\n").unwrap();
    landing.write_all(&vec![b'L'; 300_000]).unwrap();

    // A value smaller than a segment, half sent: it is received into the
    // read buffer, grown past its resting size and charged.
    let mut partial = TcpStream::connect(("127.0.0.1", port)).unwrap();
    partial.write_all(b"set panic-now-partial 0 0 60000\r\n").unwrap();
    partial.write_all(&vec![b'P'; 30_000]).unwrap();

    // Pins: a reader that does not read its 24 MB value, which is then
    // deleted, so only the pin keeps it; the 50 KB value before it is
    // copied into its output buffer, grown past its resting size.
    let mut reader = TcpStream::connect(("127.0.0.1", port)).unwrap();
    reader.write_all(b"get medium big panic-now-reader\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    a.expect(b"delete big\r\n", b"DELETED\r\n");

    let during = held(&mut a);
    assert!(during[0] >= before[0] + 20_000_000, "the landing and the pin are charged: {during:?} vs {before:?}");
    assert_eq!(during[3], before[3] + 3);
    assert!(during[1] >= before[1] + 40_000 && during[2] >= before[2] + 40_000, "grown buffers: {during:?} vs {before:?}");

    inject_panic_on(Some(b"panic-now"));
    // Each connection's next event panics (the hook looks at the bytes
    // its read buffer holds, processed or not).
    landing.write_all(&[b'L'; 1000]).unwrap();
    partial.write_all(&[b'P'; 1000]).unwrap();
    // (the reader's event: the socket drains enough to be writable again)
    let mut some = vec![0u8; 1 << 20];
    let mut taken = 0;
    while taken < 8 << 20 {
        match reader.read(&mut some) {
            Ok(0) | Err(_) => break,
            Ok(n) => taken += n,
        }
    }
    assert!(eventually(Duration::from_secs(10), || a.stat("larder_conn_panics") == 3), "three connections ended in a panic");
    inject_panic_on(None);

    // Both ended (the server closed them)...
    for s in [&mut landing, &mut partial, &mut reader] {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
    // ...what they held is back, the store is as it was, and the one worker
    // serves the connection it shares with them and new ones.
    assert!(eventually(Duration::from_secs(5), || held(&mut a) == before), "held {:?}, before {:?}", held(&mut a), before);
    for (k, v) in &small {
        get(&mut a, k, v);
    }
    a.expect(b"get panic-now-landing panic-now-partial\r\n", b"END\r\n");
    let mut fresh = Client::connect(port);
    set(&mut fresh, "after", b"still here");
    get(&mut fresh, "after", b"still here");

    shutdown.request();
    running.wait_and_stop().unwrap();
}
