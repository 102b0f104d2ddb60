//! Hostile clients against `larder -m 64 -t 2`: each test is a way to make a
//! server buffer what a client chooses, run over the wire, watching the
//! process's resident memory. The server must stay up, keep every stored
//! value, serve a normal client meanwhile, and stay within `-m` plus its
//! connection budget plus a fixed allowance (code, stacks, the index,
//! per-connection resting buffers).
//!
//! The cases are issue 12's (one 2 KB multi-get of a 1 MB value a thousand
//! times, slow readers, idle connections after large values, stalled
//! partial values) and a few more of the same kind.

mod common;

use common::{Client, Larder};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
/// Everything but the store and the connection budget: binary, heap
/// arenas, thread stacks, resting buffers of the connections a test opens.
const ALLOWANCE: u64 = 48 * MIB;

/// The server's resident set.
fn rss(l: &Larder) -> u64 {
    l.rss_bytes()
}

/// The highest RSS seen over `d`, sampled every 50 ms.
fn peak_rss_over(l: &Larder, d: Duration) -> u64 {
    let end = Instant::now() + d;
    let mut peak = 0;
    while Instant::now() < end {
        peak = peak.max(rss(l));
        std::thread::sleep(Duration::from_millis(50));
    }
    peak
}

fn raw(l: &Larder) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", l.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// A normal client still gets what it stored.
fn served(l: &Larder, key: &str, value: &[u8]) {
    let mut c = l.connect();
    let mut req = format!("set {key} 0 0 {}\r\n", value.len()).into_bytes();
    req.extend_from_slice(value);
    req.extend_from_slice(b"\r\n");
    c.expect(&req, b"STORED\r\n");
    let mut want = format!("VALUE {key} 0 {}\r\n", value.len()).into_bytes();
    want.extend_from_slice(value);
    want.extend_from_slice(b"\r\nEND\r\n");
    c.expect(format!("get {key}\r\n").as_bytes(), &want);
}

fn set_value(c: &mut Client, key: &str, len: usize, byte: u8) {
    let mut req = format!("set {key} 0 0 {len}\r\n").into_bytes();
    req.extend(std::iter::repeat_n(byte, len));
    req.extend_from_slice(b"\r\n");
    c.expect(&req, b"STORED\r\n");
}

/// `-m 64` + the connection budget + the allowance.
fn bound(c: &mut Client) -> u64 {
    64 * MIB + c.stat("larder_conn_budget_bytes") + ALLOWANCE
}

/// Polls `f` for up to 3 s until it holds (a connection settles its
/// buffers at the end of its event, just after its client got the reply).
fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

#[test]
fn one_multiget_of_a_large_value_a_thousand_times_is_bounded() {
    let l = Larder::start(&["-m", "64", "-t", "2"]);
    let mut c = l.connect();
    set_value(&mut c, "k", 1_000_000, b'v');
    let limit = bound(&mut c);
    // 1000 and 3000 copies of one 1 MB value asked for in one request, never read.
    let mut hogs = Vec::new();
    for n in [1000, 3000] {
        let mut s = raw(&l);
        let mut req = b"get".to_vec();
        for _ in 0..n {
            req.extend_from_slice(b" k");
        }
        req.extend_from_slice(b"\r\n");
        s.write_all(&req).unwrap();
        hogs.push(s);
    }
    let peak = peak_rss_over(&l, Duration::from_secs(2));
    assert!(peak < limit, "RSS {} MiB over the bound {} MiB", peak / MIB, limit / MIB);
    served(&l, "normal", b"still here");
    // The hog that does read gets every copy, intact.
    let mut s = hogs.remove(0);
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 20];
    let want = 1000 * (b"VALUE k 0 1000000\r\n".len() + 1_000_000 + 2) + 5;
    while got < want {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {got} of {want} bytes");
        got += n;
    }
    assert_eq!(got, want);
    assert!(l.connect().stat("curr_items") >= 2);
}

#[test]
fn slow_readers_hold_a_bounded_reply_each() {
    let l = Larder::start(&["-m", "64", "-t", "2"]);
    let mut c = l.connect();
    set_value(&mut c, "k", 100_000, b'r');
    let limit = bound(&mut c);
    let mut readers = Vec::new();
    let pipeline: Vec<u8> = b"get k\r\n".repeat(20_000);
    for _ in 0..100 {
        let mut s = raw(&l);
        s.set_nonblocking(true).unwrap();
        // As much of the pipeline as the socket takes; the rest is the
        // client's problem, as with memcached.
        let _ = s.write(&pipeline);
        readers.push(s);
    }
    let peak = peak_rss_over(&l, Duration::from_secs(2));
    assert!(peak < limit, "RSS {} MiB over the bound {} MiB", peak / MIB, limit / MIB);
    served(&l, "normal", b"served");
    let out = c.stat("response_obj_bytes");
    assert!(out <= 100 * 300 * 1024, "output buffers {out} bytes for 100 connections");
}

#[test]
fn idle_connections_give_their_large_buffers_back() {
    let l = Larder::start(&["-m", "64", "-t", "2"]);
    let mut c = l.connect();
    let before = rss(&l);
    let mut conns = Vec::new();
    for i in 0..300 {
        let mut k = l.connect();
        set_value(&mut k, &format!("v{i}"), 250_000, b'i');
        k.send(format!("get v{i}\r\n").as_bytes());
        assert_eq!(k.line(), format!("VALUE v{i} 0 250000\r\n"));
        k.exact(250_000 + 2);
        assert_eq!(k.line(), "END\r\n");
        conns.push(k);
    }
    // Buffers shrink at the end of each connection's last event.
    let small = eventually(|| c.stat("read_buf_bytes") + c.stat("response_obj_bytes") <= 301 * 2 * 16 * 1024);
    let held = c.stat("read_buf_bytes") + c.stat("response_obj_bytes");
    assert!(small, "{held} bytes of buffers held by 301 idle connections");
    assert!(eventually(|| c.stat("larder_conn_budget_used") == 0));
    // ...and the memory goes back to the system: 300 x 250 KB values went
    // through (75 MB of buffers); what stays is the items themselves and
    // the resting buffers.
    let items = 300 * 250_000;
    let after = rss(&l);
    assert!(
        after < before + items + 301 * 2 * 16 * 1024 + 16 * MIB,
        "RSS {} MiB after, {} MiB before",
        after / MIB,
        before / MIB
    );
    drop(conns);
    assert!(eventually(|| rss(&l) < before + items + 16 * MIB), "RSS {} MiB after closing", rss(&l) / MIB);
}

#[test]
fn stalled_partial_values_stay_within_the_budget() {
    let l = Larder::start(&["-m", "64", "-t", "2"]);
    let mut c = l.connect();
    set_value(&mut c, "keep", 1000, b'k');
    let limit = bound(&mut c);
    let budget = c.stat("larder_conn_budget_bytes");
    let mut stalled = Vec::new();
    for i in 0..180 {
        let mut s = raw(&l);
        let mut req = format!("set p{i} 0 0 1000000\r\n").into_bytes();
        req.extend(std::iter::repeat_n(b'p', 999_990));
        s.write_all(&req).unwrap();
        stalled.push(s);
    }
    let peak = peak_rss_over(&l, Duration::from_secs(2));
    assert!(peak < limit, "RSS {} MiB over the bound {} MiB", peak / MIB, limit / MIB);
    assert!(c.stat("larder_conn_budget_used") <= budget);
    assert!(c.stat("read_buf_oom") > 0, "180 MB of partial values fit a {} MiB budget?", budget / MIB);
    served(&l, "normal", b"ok");
    c.expect(b"get keep\r\n", &[b"VALUE keep 0 1000\r\n".as_slice(), &[b'k'; 1000], b"\r\nEND\r\n"].concat());
    // A refused set hears why once its data has arrived, and the
    // connection goes on.
    let refused = stalled.iter_mut().find_map(|s| {
        s.write_all(b"0123456789\r\n").unwrap();
        s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).ok()?;
        let line = String::from_utf8_lossy(&buf[..n]).to_string();
        line.starts_with("SERVER_ERROR out of memory storing object").then_some(())
    });
    assert!(refused.is_some(), "no stalled set was refused");
}

#[test]
fn a_value_that_does_not_fit_the_budget_gets_memcacheds_error() {
    // 16 MiB budget (the floor is one -I item and a reply head: 1 MiB + 64 KiB).
    let l = Larder::start(&["-m", "64", "-t", "2", "-o", "read_buf_mem_limit=16"]);
    let mut c = l.connect();
    set_value(&mut c, "big", 1_000_000, b'b');
    assert_eq!(c.stat("larder_conn_budget_bytes"), 16 * MIB);
    // 40 connections each ask for the value 30 times and do not read:
    // some must be refused rather than buffer 1.2 GB.
    let mut hogs = Vec::new();
    for _ in 0..40 {
        let mut s = raw(&l);
        s.write_all(&b"get big\r\n".repeat(30)).unwrap();
        hogs.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(c.stat("larder_conn_budget_used") <= 16 * MIB);
    served(&l, "normal", b"ok");
    // Each hog's first reply is the value or the out-of-memory error.
    for s in hogs.iter_mut().take(5) {
        let mut head = [0u8; 20];
        s.read_exact(&mut head).unwrap();
        assert!(
            head.starts_with(b"VALUE big 0 1000000") || head.starts_with(b"SERVER_ERROR out of"),
            "{:?}",
            String::from_utf8_lossy(&head)
        );
    }
}
