//! Hostile TLS clients against `larder -Z -m 64 -t 2`, watching the
//! process's resident memory as tests/hostile.rs does: handshakes that never
//! finish, garbage instead of a ClientHello, TLS 1.2 renegotiation, a TLS
//! 1.3 key-update flood, and many idle established connections. Each must
//! cost bounded time and memory and leave the server and its data as they
//! were.

mod common;

use common::tls::{certs, server_args, TlsClient};
use common::{free_port, Client, Larder};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
/// Everything but the store and the connection budget: binary, heap
/// arenas, thread stacks, per-connection resting buffers and rustls state
/// of the connections a test opens.
const ALLOWANCE: u64 = 64 * MIB;

/// The server's resident set.
fn rss(l: &Larder) -> u64 {
    l.rss_bytes()
}

/// A TLS larder (plain admin listener on the launcher's port) with
/// `-o ssl_handshake_timeout=2`.
fn start() -> (Larder, u16) {
    let tls = free_port();
    let mut args = server_args(certs());
    for a in ["-m", "64", "-t", "2", "-o", "ssl_handshake_timeout=2", "-l", "notls:127.0.0.1", "-l"] {
        args.push(a.into());
    }
    args.push(format!("127.0.0.1:{tls}"));
    (Larder::start(&args.iter().map(String::as_str).collect::<Vec<_>>()), tls)
}

fn bound(c: &mut Client) -> u64 {
    64 * MIB + c.stat("larder_conn_budget_bytes") + ALLOWANCE
}

/// A value stored before the attack, read back after it over TLS.
fn store_canary(tls: u16) {
    TlsClient::connect(tls).expect(b"set canary 5 0 6\r\nstill!\r\n", b"STORED\r\n");
}

fn canary_intact(tls: u16) {
    TlsClient::connect(tls).expect(b"get canary\r\n", b"VALUE canary 5 6\r\nstill!\r\nEND\r\n");
}

/// Reads until the server closes; how long that took (panics after `limit`).
fn closed_within(s: &mut TcpStream, limit: Duration) -> Duration {
    let start = Instant::now();
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return start.elapsed(),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return start.elapsed(),
            Err(e) => panic!("not closed within {limit:?}: {e}"),
        }
    }
}

/// The first 100 bytes of a real ClientHello (made by rustls), so the
/// server sees a handshake begin and then nothing.
fn partial_client_hello() -> Vec<u8> {
    let config = common::tls::client_config(Default::default());
    let mut conn = rustls::ClientConnection::new(config, "localhost".try_into().unwrap()).unwrap();
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).unwrap();
    hello.truncate(100);
    hello
}

#[test]
fn handshakes_that_never_finish_are_closed_and_counted() {
    let (l, tls) = start();
    store_canary(tls);
    let mut admin = l.connect();
    let limit = bound(&mut admin);
    let hello = partial_client_hello();
    let mut stalled = Vec::new();
    for i in 0..300 {
        let mut s = TcpStream::connect(("127.0.0.1", tls)).unwrap();
        // Half say nothing at all, half start a ClientHello and stop.
        if i % 2 == 1 {
            s.write_all(&hello).unwrap();
        }
        stalled.push(s);
    }
    assert!(rss(&l) < limit, "RSS {} MiB over {} MiB", rss(&l) / MIB, limit / MIB);
    // Served meanwhile.
    canary_intact(tls);
    // Every one closed by the handshake timeout (2 s, swept once a second).
    for s in &mut stalled {
        let took = closed_within(s, Duration::from_secs(6));
        assert!(took <= Duration::from_secs(5), "closed after {took:?}");
    }
    assert_eq!(admin.stat("ssl_handshake_errors"), 300);
    // The plain admin connection and the canary connection remain.
    assert!(admin.stat("curr_connections") <= 3);
    canary_intact(tls);
}

#[test]
fn garbage_instead_of_a_client_hello_is_refused_at_once() {
    let (l, tls) = start();
    store_canary(tls);
    let mut admin = l.connect();
    let limit = bound(&mut admin);
    let mut rng = common::XorShift64(7);
    let mut total = 0;
    for round in 0..200 {
        let mut s = TcpStream::connect(("127.0.0.1", tls)).unwrap();
        let junk: Vec<u8> = match round % 4 {
            // random bytes
            0 => (0..65536).map(|_| rng.next_u64() as u8).collect(),
            // a handshake record header announcing a huge record
            1 => vec![0x16, 0x03, 0x01, 0xff, 0xff, 0x01, 0x00, 0xff, 0xfb],
            // a plausible record of the wrong type
            2 => [&[0x17u8, 0x03, 0x03, 0x00, 0x10][..], &[0u8; 16]].concat(),
            // memcached text
            _ => b"set k 0 0 1\r\nx\r\n".to_vec(),
        };
        // The server may close before taking all of it.
        let _ = s.write_all(&junk);
        let took = closed_within(&mut s, Duration::from_secs(5));
        assert!(took < Duration::from_secs(3), "round {round}: closed after {took:?}");
        total += 1;
    }
    assert_eq!(admin.stat("ssl_handshake_errors"), total);
    assert!(rss(&l) < limit);
    canary_intact(tls);
}

/// Handshake records carrying `msg` (a handshake message, or the start of
/// one), in fragments of at most 16,000 bytes.
fn handshake_records(msg: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for frag in msg.chunks(16_000) {
        out.extend_from_slice(&[0x16, 0x03, 0x01]);
        out.extend_from_slice(&(frag.len() as u16).to_be_bytes());
        out.extend_from_slice(frag);
    }
    out
}

/// A ClientHello header announcing `len` bytes, then `sent` bytes of it.
fn client_hello_start(len: u32, sent: usize, rng: &mut common::XorShift64) -> Vec<u8> {
    let mut msg = vec![0x01];
    msg.extend_from_slice(&len.to_be_bytes()[1..]);
    msg.extend((0..sent).map(|_| rng.next_u64() as u8));
    handshake_records(&msg)
}

/// A client may not choose how much of a handshake message the server
/// buffers: one announced past rustls's limit (64 KiB) is refused as it
/// arrives (a megabyte sent on each of 100 connections held open at once,
/// 100 MiB if it were buffered), and one just under it, sent but for its
/// last bytes, is held (about 64 KiB each) only until the handshake
/// timeout.
#[test]
fn handshake_messages_cannot_be_made_large() {
    let (l, tls) = start();
    store_canary(tls);
    let mut admin = l.connect();
    let limit = bound(&mut admin);
    let mut rng = common::XorShift64(11);
    let before = rss(&l);
    let huge = client_hello_start(0xff_ffff, 1 << 20, &mut rng);
    let mut refused = Vec::new();
    for _ in 0..100 {
        let mut s = TcpStream::connect(("127.0.0.1", tls)).unwrap();
        // The server closes before taking all of it.
        let _ = s.write_all(&huge);
        refused.push(s);
    }
    std::thread::sleep(Duration::from_millis(300));
    let grown = rss(&l).saturating_sub(before);
    assert!(grown < 16 * MIB, "RSS grew {} MiB for 100 connections sending 1 MiB handshake messages", grown / MIB);
    for s in &mut refused {
        let took = closed_within(s, Duration::from_secs(5));
        assert!(took < Duration::from_secs(2), "closed after {took:?}");
    }
    drop(refused);
    let before = rss(&l);
    let nearly = client_hello_start(0xf000, 0xf000 - 200, &mut rng);
    let mut stalled = Vec::new();
    for _ in 0..100 {
        let mut s = TcpStream::connect(("127.0.0.1", tls)).unwrap();
        s.write_all(&nearly).unwrap();
        stalled.push(s);
    }
    // Let the server read it all before measuring.
    std::thread::sleep(Duration::from_millis(300));
    let grown = rss(&l).saturating_sub(before);
    // rustls's handshake buffer and the session's buffers: ~100 KiB each.
    assert!(grown < 16 * MIB, "RSS grew {} MiB for 100 stalled 60 KiB handshake messages", grown / MIB);
    assert!(rss(&l) < limit, "RSS {} MiB over {} MiB", rss(&l) / MIB, limit / MIB);
    canary_intact(tls);
    for s in &mut stalled {
        let took = closed_within(s, Duration::from_secs(6));
        assert!(took <= Duration::from_secs(5), "closed after {took:?}");
    }
    assert_eq!(admin.stat("ssl_handshake_errors"), 200);
    canary_intact(tls);
}

#[test]
fn key_update_flood_costs_no_memory_that_stays() {
    let (l, tls) = start();
    store_canary(tls);
    let mut admin = l.connect();
    let limit = bound(&mut admin);
    let mut c = TlsClient::connect(tls);
    c.expect(b"set k 0 0 2\r\nok\r\n", b"STORED\r\n");
    let before = rss(&l);
    // 10,000 key updates, each asking the server to update its keys too,
    // with a request after every 10 (rustls refuses a long run of key
    // updates with no data between them: see the next test).
    for round in 0..1000 {
        for _ in 0..10 {
            c.conn().refresh_traffic_keys().unwrap();
        }
        c.expect(b"get k\r\n", b"VALUE k 0 2\r\nok\r\nEND\r\n");
        if round % 500 == 0 {
            assert!(rss(&l) < limit);
        }
    }
    let after = rss(&l);
    assert!(after < before + 8 * MIB, "RSS grew from {} to {} MiB", before / MIB, after / MIB);
    // Only key updates, no data: rustls ends the connection after a few.
    let mut flood = TlsClient::connect(tls);
    for _ in 0..200 {
        flood.conn().refresh_traffic_keys().unwrap();
    }
    let _ = flood.reader.get_mut().flush();
    flood.set_read_timeout(Some(Duration::from_secs(5)));
    assert!(!matches!(flood.try_line(), Ok(ref l) if !l.is_empty()), "a key-update flood got a reply");
    canary_intact(tls);
    assert!(rss(&l) < limit);
}

/// TLS 1.2 renegotiation, as `openssl s_client -tls1_2` asks for it
/// (its `R` command): refused, the connection closed at the second
/// request (rustls: a warning alert, then fatal), the server unaffected.
#[test]
fn renegotiation_is_refused() {
    let (l, tls) = start();
    store_canary(tls);
    let mut child = Command::new("openssl")
        .args(["s_client", "-tls1_2", "-connect", &format!("127.0.0.1:{tls}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl (apt-get install openssl; scripts/test does)");
    let mut stdin = child.stdin.take().unwrap();
    // `R` on a line of its own renegotiates; keep asking.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(b"version\n");
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(20));
            if stdin.write_all(b"R\n").is_err() {
                break;
            }
        }
    });
    // (s_client also ends when its stdin does, after the writer's second)
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("VERSION 1.6.18"), "{text}");
    assert!(text.contains("RENEGOTIATING"), "s_client did not try: {text}");
    assert!(text.contains("no renegotiation"), "renegotiation not refused: {text}");
    canary_intact(tls);
    let mut admin = l.connect();
    assert!(admin.stat("curr_connections") <= 2);
}

/// Established TLS connections that stay open: each holds its record
/// buffers (a receive buffer of one largest record, a send buffer of
/// `ssl_wbuf_size`), allocated once and touched only as far as its traffic
/// goes. 300 idle connections stay well under 64 KiB each (measured with
/// 1,000 Python ssl clients: about 32 KiB each, session buffers included).
#[test]
fn idle_established_connections_cost_bounded_memory() {
    let (l, tls) = start();
    let mut admin = l.connect();
    let limit = bound(&mut admin);
    let mut warm = Vec::new();
    for _ in 0..10 {
        let mut c = TlsClient::connect(tls);
        c.expect(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n");
        warm.push(c);
    }
    let before = rss(&l);
    let mut idle = Vec::new();
    for i in 0..300 {
        let mut c = TlsClient::connect(tls);
        c.expect(format!("set k{i} 0 0 1\r\nx\r\n").as_bytes(), b"STORED\r\n");
        idle.push(c);
    }
    let grown = rss(&l).saturating_sub(before);
    eprintln!("300 idle TLS connections: RSS grew {} KiB ({} KiB each)", grown / 1024, grown / 1024 / 300);
    assert!(grown < 300 * 64 * 1024, "RSS grew {} KiB for 300 idle TLS connections", grown / 1024);
    assert!(rss(&l) < limit);
    every_one_answers(&mut idle);
}

/// Every idle connection still answers.
fn every_one_answers(conns: &mut [TlsClient]) {
    for (i, c) in conns.iter_mut().enumerate() {
        c.expect(format!("get k{i}\r\n").as_bytes(), format!("VALUE k{i} 0 1\r\nx\r\nEND\r\n").as_bytes());
    }
}
