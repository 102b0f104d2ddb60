//! Coalesced cold misses (`-o coalesce=<window>`) end to end: the first get
//! of an absent key in grace's scope misses; other plain gets of it wait,
//! without blocking anyone else, until the refill arrives, a delete or
//! `flush_all` releases them, or the window ends. Text and binary alike.
//!
//! "Still waiting" is checked by reading with a short timeout while the
//! window is long (10 s): a parked request cannot be answered before it is
//! released, so these checks do not depend on the machine's speed.

mod common;

use common::{Client, Larder};
use std::time::{Duration, Instant};

const WINDOW: &str = "grace=30s,coalesce=10s";

/// Nothing arrives for a while: the request is parked.
fn still_waiting(c: &mut Client) {
    let got = c.read_for(Duration::from_millis(300));
    assert!(got.is_empty(), "a parked request was answered: {:?}", String::from_utf8_lossy(&got));
}

#[test]
fn waiters_get_the_refill_and_their_pipelines_run_after_it() {
    let l = Larder::start(&["-t", "2", "-o", WINDOW]);
    let mut winner = l.connect();
    let mut waiters: Vec<Client> = (0..6).map(|_| l.connect()).collect();
    winner.expect(b"get page:1\r\n", b"END\r\n");
    for w in &mut waiters {
        // A hit before the parked get is answered at once; the set behind
        // it waits with it.
        w.send(b"set other 0 0 1\r\nx\r\nget other page:1 other\r\nget page:2\r\n");
        assert_eq!(w.read_until(b"STORED\r\nVALUE other 0 1\r\nx\r\n"), b"STORED\r\nVALUE other 0 1\r\nx\r\n".to_vec());
    }
    for w in &mut waiters {
        still_waiting(w);
    }
    let mut other = l.connect();
    // Other keys and other clients are served meanwhile.
    other.expect(b"set page:2 0 0 2\r\nhi\r\nget page:2\r\n", b"STORED\r\nVALUE page:2 0 2\r\nhi\r\nEND\r\n");
    let t = Instant::now();
    winner.expect(b"set page:1 0 0 5\r\nfresh\r\n", b"STORED\r\n");
    for w in &mut waiters {
        let got = w.read_until(b"END\r\nVALUE page:2 0 2\r\nhi\r\nEND\r\n");
        assert_eq!(
            String::from_utf8_lossy(&got),
            "VALUE page:1 0 5\r\nfresh\r\nVALUE other 0 1\r\nx\r\nEND\r\nVALUE page:2 0 2\r\nhi\r\nEND\r\n"
        );
    }
    assert!(t.elapsed() < Duration::from_secs(5), "released by the set, not by the window");
    assert_eq!(winner.stat("larder_coalesce_wins"), 1);
    assert_eq!(winner.stat("larder_coalesce_waits"), 6);
    assert_eq!(winner.stat("larder_coalesce_released"), 6);
    assert_eq!(winner.stat("larder_coalesce_parked"), 0);
    // Counted once each, as the hits they became.
    assert_eq!(winner.stat("get_misses"), 1);
}

#[test]
fn the_window_bounds_the_wait_then_the_next_getter_refills() {
    let l = Larder::start(&["-o", "grace=30s,coalesce=1s"]);
    let (mut a, mut b, mut c) = (l.connect(), l.connect(), l.connect());
    a.expect(b"get k\r\n", b"END\r\n");
    let t = Instant::now();
    b.expect(b"get k\r\n", b"END\r\n");
    let waited = t.elapsed();
    assert!(waited >= Duration::from_millis(900), "answered after {waited:?}, before the window ended");
    assert_eq!(a.stat("larder_coalesce_timeouts"), 1);
    // The winner never set: the round is over, the next getter refills.
    c.expect(b"get k\r\n", b"END\r\n");
    assert_eq!(a.stat("larder_coalesce_wins"), 2);
}

#[test]
fn delete_and_flush_release_waiters_with_a_miss() {
    let l = Larder::start(&["-o", WINDOW]);
    let (mut a, mut b) = (l.connect(), l.connect());
    a.expect(b"get k\r\n", b"END\r\n");
    b.send(b"get k\r\n");
    still_waiting(&mut b);
    a.expect(b"delete k\r\n", b"NOT_FOUND\r\n");
    assert_eq!(b.read_until(b"END\r\n"), b"END\r\n".to_vec());

    a.expect(b"get j\r\n", b"END\r\n");
    b.send(b"get j\r\n");
    still_waiting(&mut b);
    a.expect(b"flush_all\r\n", b"OK\r\n");
    assert_eq!(b.read_until(b"END\r\n"), b"END\r\n".to_vec());
    assert_eq!(a.stat("larder_coalesce_released"), 2);
}

#[test]
fn caps_turn_waiting_into_misses() {
    let l = Larder::start(&["-o", "grace=30s,coalesce=10s,coalesce_max_key=2"]);
    let mut a = l.connect();
    let mut parked: Vec<Client> = (0..2).map(|_| l.connect()).collect();
    a.expect(b"get k\r\n", b"END\r\n");
    for p in &mut parked {
        p.send(b"get k\r\n");
        still_waiting(p);
    }
    // A third would wait on the same key: it misses at once instead.
    let mut third = l.connect();
    third.expect(b"get k\r\n", b"END\r\n");
    assert_eq!(a.stat("larder_coalesce_overflows"), 1);
    assert_eq!(a.stat("larder_coalesce_parked"), 2);
    a.expect(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n");
    for p in &mut parked {
        assert_eq!(p.read_until(b"END\r\n"), b"VALUE k 0 1\r\nv\r\nEND\r\n".to_vec());
    }
}

#[test]
fn only_plain_gets_in_grace_scope_wait() {
    let l = Larder::start(&["-o", "grace_prefix=page:30s,coalesce=10s"]);
    let (mut a, mut b) = (l.connect(), l.connect());
    // Outside the prefix: no rounds, every getter misses.
    a.expect(b"get user:1\r\n", b"END\r\n");
    b.expect(b"get user:1\r\n", b"END\r\n");
    a.expect(b"get page:1\r\n", b"END\r\n");
    // Meta clients have their own protocol for this (N, W/Z); gat touches.
    b.expect(b"mg page:1 v\r\n", b"EN\r\n");
    b.expect(b"gat 10 page:1\r\n", b"END\r\n");
    // The refilling client itself never waits for its own refill.
    a.expect(b"get page:1\r\n", b"END\r\n");
    assert_eq!(a.stat("larder_coalesce_waits"), 0);
}

#[test]
fn a_closed_waiter_is_forgotten() {
    let l = Larder::start(&["-o", WINDOW]);
    let mut a = l.connect();
    a.expect(b"get k\r\n", b"END\r\n");
    {
        let mut b = l.connect();
        b.send(b"get k\r\n");
        still_waiting(&mut b);
        assert_eq!(a.stat("larder_coalesce_parked"), 1);
    }
    // The close is seen when the worker next looks at the connection: at
    // the latest when the set releases it.
    a.expect(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n");
    let t = Instant::now();
    while a.stat("larder_coalesce_parked") != 0 {
        assert!(t.elapsed() < Duration::from_secs(5), "the closed waiter is still counted");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A binary-protocol request header.
fn bin_get(opcode: u8, key: &[u8], opaque: u32) -> Vec<u8> {
    common::binary::request(opcode, &[], key, &[], opaque, 0)
}

#[test]
fn binary_gets_wait_too() {
    let l = Larder::start(&["-o", WINDOW]);
    let (mut a, mut b) = (l.connect(), l.connect());
    a.expect(b"get k\r\n", b"END\r\n");
    // GETK of k (parked), then NOOP: nothing until the refill.
    let mut req = bin_get(0x0c, b"k", 7);
    req.extend_from_slice(&[0x80, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0]);
    b.send(&req);
    still_waiting(&mut b);
    a.expect(b"set k 5 0 3\r\nnew\r\n", b"STORED\r\n");
    // GETK reply: 24-byte header, 4 bytes of flags, the key, the value.
    let reply = b.exact(24 + 4 + 1 + 3);
    assert_eq!(&reply[..2], &[0x81, 0x0c]);
    assert_eq!(&reply[6..8], &[0, 0], "status: success");
    assert_eq!(&reply[12..16], &7u32.to_be_bytes());
    assert_eq!(&reply[24..], b"\0\0\0\x05knew");
    let noop = b.exact(24);
    assert_eq!(&noop[..2], &[0x81, 0x0a]);
}

/// A parked connection stops reading: what its client pipelines behind the
/// parked get waits in the socket, not in the server, and all of it is
/// answered in order once the refill comes.
#[test]
fn a_parked_connection_buffers_nothing_behind_it() {
    use std::io::Write;
    let l = Larder::start(&["-o", WINDOW]);
    let mut a = l.connect();
    a.expect(b"get k\r\n", b"END\r\n");
    a.expect(b"set other 0 0 1\r\nx\r\n", b"STORED\r\n");
    let mut b = l.connect();
    b.send(b"get k\r\n");
    still_waiting(&mut b);
    let before = l.rss_bytes() / 1024;
    // As much as the sockets take, without blocking: gets of a key that hits.
    let mut w = b.stream().try_clone().unwrap();
    w.set_nonblocking(true).unwrap();
    let line = b"get other\r\n";
    let chunk: Vec<u8> = line.iter().copied().cycle().take(line.len() * 6000).collect();
    let mut sent = 0usize;
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(3) {
        match w.write(&chunk) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    w.set_nonblocking(false).unwrap();
    assert!(sent > 1 << 20, "the client could pipeline only {sent} bytes");
    let grown = (l.rss_bytes() / 1024).saturating_sub(before);
    assert!(grown < 2048, "{sent} bytes pipelined behind a parked get grew the server by {grown} KiB");
    a.expect(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n");
    // Released: the server reads again, and the last partial line can be
    // finished (before, a blocking write would have waited for it).
    let partial = sent % line.len();
    if partial != 0 {
        w.write_all(&line[partial..]).unwrap();
        sent += line.len() - partial;
    }
    assert_eq!(String::from_utf8_lossy(&b.exact(21)), "VALUE k 0 1\r\nv\r\nEND\r\n");
    let answers = sent / line.len();
    let reply = b"VALUE other 0 1\r\nx\r\nEND\r\n";
    let got = b.exact(answers * reply.len());
    assert!(got.chunks(reply.len()).all(|r| r == reply), "a pipelined reply differs");
}
