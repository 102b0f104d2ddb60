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
fn eventually(f: impl FnMut() -> bool) -> bool {
    common::eventually(Duration::from_secs(3), f)
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
    // Buffers shrink at the end of each connection's last event; a few
    // grown ones are kept for reuse (`connmem::shelf`: at most 4 of each
    // kind), counted apart and charged to the budget.
    // Free buffers: on the shelf (charged to the budget) and, resting-size
    // ones, in the workers' pools (`connmem::pool`, not charged).
    let kept = |c: &mut Client| c.stat("read_buf_bytes_free") + c.stat("larder_write_buf_bytes_free");
    let shelved = |c: &mut Client| kept(c) - c.stat("larder_buf_pool_bytes");
    let in_conns = |c: &mut Client| c.stat("read_buf_bytes") + c.stat("response_obj_bytes") - kept(c);
    // Idle connections hold no buffer at all now; `c` may hold its two
    // while it asks.
    let small = eventually(|| in_conns(&mut c) <= 2 * 16 * 1024);
    let held = in_conns(&mut c);
    assert!(small, "{held} bytes of buffers held by 301 idle connections");
    let shelf = shelved(&mut c);
    assert!(shelf <= 8 * 260_000, "{shelf} bytes of buffers kept for reuse");
    assert!(c.stat("larder_buf_pool_bytes") <= 2 * 2 * 16 * 16 * 1024, "at most 16 resting buffers of each kind per worker");
    assert!(eventually(|| c.stat("larder_conn_budget_used") == shelved(&mut c)));
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

/// Minor page faults the process has taken (`/proc/PID/stat`, field 10).
fn minor_faults(l: &Larder) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", l.pid())).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split(' ').nth(7).unwrap().parse().unwrap()
}

/// Medium values (256 KiB: stored in a segment at `-m 1024`, so they pass
/// through the connection's buffers rather than being received in place)
/// set and read over and over reuse grown buffers instead of mapping fresh
/// ones each time: that faulted about 64 pages per set and as many per get
/// (`connmem::shelf`).
#[test]
fn medium_values_reuse_grown_buffers() {
    const LEN: usize = 256 * 1024;
    let l = Larder::start(&["-m", "1024", "-t", "2"]);
    let mut c = l.connect();
    let round = |c: &mut Client, i: usize| {
        let byte = b'a' + (i % 26) as u8;
        set_value(c, "medium", LEN, byte);
        c.send(b"get medium\r\n");
        assert_eq!(c.line(), format!("VALUE medium 0 {LEN}\r\n"));
        assert!(c.exact(LEN + 2)[..LEN].iter().all(|&b| b == byte));
        assert_eq!(c.line(), "END\r\n");
    };
    // The store's first segments fault in as they are first written.
    for i in 0..40 {
        round(&mut c, i);
    }
    let before = minor_faults(&l);
    for i in 0..200 {
        round(&mut c, i);
    }
    let faults = minor_faults(&l) - before;
    assert!(faults < 2_000, "{faults} page faults for 200 sets and gets of 256 KiB");
    assert!(eventually(|| c.stat("read_buf_bytes_free") >= LEN as u64));
    assert!(c.stat("larder_write_buf_bytes_free") >= LEN as u64);
}

/// Eight clients on two workers set and read values of many sizes that
/// pass through grown buffers, at once: every value reads back as written
/// (a buffer taken from the shelf holds old bytes past what is received),
/// and once they are done the budget holds exactly the shelf's buffers,
/// at most 4 of each kind (a race in the shelf's accounting would leave it
/// off, or refuse values as out of memory).
#[test]
fn many_clients_share_the_shelf_without_mixing_bytes_or_leaking_budget() {
    let l = Larder::start(&["-m", "1024", "-t", "2"]);
    let port = l.port;
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(port);
                let mut rng = t * 7919 + 17;
                for round in 0..60u64 {
                    rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let len = 20_000 + (rng >> 33) as usize % 1_000_000;
                    let byte = b'a' + ((t + round) % 26) as u8;
                    let key = format!("shelf{t}");
                    set_value(&mut c, &key, len, byte);
                    c.send(format!("get {key}\r\n").as_bytes());
                    assert_eq!(c.line(), format!("VALUE {key} 0 {len}\r\n"));
                    let got = c.exact(len + 2);
                    assert!(got[..len].iter().all(|&b| b == byte), "client {t} round {round}: other bytes in a {len}-byte value");
                    assert_eq!(c.line(), "END\r\n");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = l.connect();
    // Kept on the shelf (charged), apart from the pools' resting buffers.
    let kept = |c: &mut Client| c.stat("read_buf_bytes_free") + c.stat("larder_write_buf_bytes_free") - c.stat("larder_buf_pool_bytes");
    assert!(eventually(|| c.stat("larder_conn_budget_used") == kept(&mut c)), "budget used {} with {} kept", c.stat("larder_conn_budget_used"), kept(&mut c));
    assert!(kept(&mut c) <= 8 * 2 * MIB, "{} bytes kept", kept(&mut c));
    assert_eq!(c.stat("read_buf_oom") + c.stat("response_obj_oom"), 0);
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

/// Reads one `VALUE key 0 len` reply of `len` copies of `byte` (then what
/// follows it up to `END`, when `end`) from a connection that stalled.
fn read_value(s: &mut TcpStream, key: &str, len: usize, byte: u8) {
    let head = format!("VALUE {key} 0 {len}\r\n");
    let mut got = vec![0u8; head.len() + len + 2];
    s.read_exact(&mut got).unwrap();
    assert_eq!(&got[..head.len()], head.as_bytes(), "reply to a stalled get of {key}");
    assert!(got[head.len()..head.len() + len].iter().all(|&b| b == byte), "{key}: bytes changed under the reader");
    assert_eq!(&got[head.len() + len..], b"\r\n");
}

/// Large values (bigger than a segment) go out pinned in the store, not
/// copied. Hundreds of connections ask for the same and different ones and
/// never read; then the values are overwritten, deleted and replaced by as
/// many new ones. Each pinned value the store lets go of stays counted —
/// moved to the connection budget when it has room (`spills`), else left
/// in `-m` — so memory stays within the bound, the new sets still succeed
/// (evicting), a stalled reader that finally reads gets the bytes it asked
/// for though its key now holds something else, and the bytes are given
/// back when the readers leave.
fn readers_that_never_read(extra: &[&str], spills: bool) {
    let mut args = vec!["-m", "64", "-t", "2", "-I", "4m"];
    args.extend_from_slice(extra);
    let l = Larder::start(&args);
    let mut c = l.connect();
    const LEN: usize = 3 << 20;
    for (i, byte) in (b'a'..b'e').enumerate() {
        set_value(&mut c, &format!("big{i}"), LEN, byte);
    }
    let limit = bound(&mut c);
    let mut hogs = Vec::new();
    for n in 0..200 {
        let mut s = raw(&l);
        // Half ask for one value many times (each value has its askers),
        // half for all of them at once.
        let req = if n % 2 == 0 {
            format!("get big{}\r\n", n / 2 % 4).repeat(50)
        } else {
            "get big0 big1 big2 big3\r\n".to_string()
        };
        s.write_all(req.as_bytes()).unwrap();
        hogs.push(s);
    }
    let peak = peak_rss_over(&l, Duration::from_secs(2));
    assert!(peak < limit, "RSS {} MiB over the bound {} MiB", peak / MIB, limit / MIB);
    // The store lets go of every pinned value, and needs the memory back.
    // (New values are half as large, so that their data blocks fit the
    // small budget next to a value moved there.)
    const NEW: usize = LEN / 2;
    for i in 0..4 {
        if i % 2 == 0 {
            c.expect(format!("delete big{i}\r\n").as_bytes(), b"DELETED\r\n");
        } else {
            set_value(&mut c, &format!("big{i}"), NEW, b'z');
        }
    }
    for i in 0..32 {
        set_value(&mut c, &format!("new{i}"), NEW, b'n');
    }
    let peak = peak_rss_over(&l, Duration::from_secs(1));
    assert!(peak < limit, "after replacing them: RSS {} MiB over the bound {} MiB", peak / MIB, limit / MIB);
    served(&l, "normal", b"still served");
    // A stalled reader gets the value as it was when it asked.
    read_value(&mut hogs[2], "big1", LEN, b'b');
    read_value(&mut hogs[3], "big0", LEN, b'a');
    read_value(&mut hogs[3], "big1", LEN, b'b');
    // With nothing else stored, the old versions the readers still pin are
    // counted in `-m` or the budget, and given back once the readers go.
    // (Some keys were evicted by the sets above: NOT_FOUND is fine.)
    let keys = (0..32).map(|i| format!("new{i}")).chain(["big1".into(), "big3".into()]);
    for key in keys {
        c.send(format!("delete {key}\r\n").as_bytes());
        let reply = c.line();
        let reply = reply.trim_end();
        assert!(reply == "DELETED" || reply == "NOT_FOUND", "delete {key}: {reply}");
    }
    assert_eq!(c.stat("curr_items"), 1, "only `normal` left");
    let counted = |c: &mut Client| (c.stat("larder_memory_used"), c.stat("larder_conn_budget_used"));
    let (memory, budget) = counted(&mut c);
    let pinned = 4 * LEN as u64;
    assert!(memory + budget >= pinned, "pinned values not counted: {memory} + {budget} bytes");
    if spills {
        assert!(budget >= pinned, "pinned values let go of were not moved to the budget: {budget} bytes");
    } else {
        assert!(memory >= 3 * LEN as u64, "pinned values left -m though the budget had no room: {memory} bytes");
    }
    drop(hogs);
    let released = eventually(|| {
        let (m, b) = counted(&mut l.connect());
        m + b + pinned <= memory + budget
    });
    assert!(released, "pinned bytes not given back: {:?} of {memory} + {budget}", counted(&mut l.connect()));
    assert!(rss(&l) < limit);
}

#[test]
fn readers_that_never_read_pin_large_values_counted_in_the_budget() {
    readers_that_never_read(&[], true);
}

/// A budget too small for more than one pinned value: the rest stay in `-m`.
#[test]
fn readers_that_never_read_pin_large_values_counted_in_the_memory_limit() {
    readers_that_never_read(&["-o", "read_buf_mem_limit=5"], false);
}
