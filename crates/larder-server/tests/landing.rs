//! Large values received in place: a value bigger than a store segment is
//! read from the socket straight into the buffer that becomes its large
//! object (`larder_store::Landing`), not into the connection's read buffer.
//!
//! * The same bytes to larder and to memcached 1.6.18 get the same replies:
//!   set, noreply, add, cas, append, `ms`/`mg`, a bad data chunk after a
//!   large value, requests pipelined behind one, values arriving in pieces.
//! * The binary protocol's SET takes the same path.
//! * Hostile clients: values announced and never finished, or abandoned
//!   halfway, hold at most the connection budget (refused beyond it with
//!   memcached's out-of-memory reply) and give it all back when they go.

mod common;

use common::{Client, Larder, Memcached};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const MIB: usize = 1 << 20;

/// A value of `len` bytes that differs per `seed`.
fn value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + i / 4093) % 251) as u8 ^ seed).collect()
}

/// `head`, `value`, then `tail`: written in several pieces with pauses, so
/// that the server sees the value arrive over several reads.
fn send_in_pieces(c: &mut Client, head: &[u8], value: &[u8], tail: &[u8]) {
    let mut all = head.to_vec();
    all.extend_from_slice(value);
    all.extend_from_slice(tail);
    let cuts = [head.len() / 2, head.len() + 10, head.len() + value.len() / 3, all.len() - tail.len() + 1, all.len()];
    let mut from = 0;
    for cut in cuts {
        let cut = cut.clamp(from, all.len());
        c.send(&all[from..cut]);
        from = cut;
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs every case against one server; returns all the bytes it answered.
fn conversation(mut c: Client) -> Vec<Vec<u8>> {
    let big = 5 * MIB;
    let (v1, v2, v3) = (value(big, 1), value(big, 2), value(big + 17, 3));
    let mut replies = Vec::new();
    let mut case = |c: &mut Client, head: &[u8], v: &[u8], tail: &[u8]| {
        send_in_pieces(c, head, v, tail);
        // `mn` ends every case: everything before its `MN` is the reply.
        c.send(b"mn\r\n");
        replies.push(c.read_until(b"MN\r\n"));
    };
    let set = |key: &str, flags: u32, v: &[u8], extra: &str| format!("set {key} {flags} 0 {}{extra}\r\n", v.len()).into_bytes();
    case(&mut c, &set("a", 3, &v1, ""), &v1, b"\r\nget a\r\n");
    // A bad chunk: refused, the old value stays, what follows is parsed.
    case(&mut c, &set("a", 0, &v2, ""), &v2, b"XYget a\r\n");
    // (`ZZ` after the chunk: a leftover line under 4 bytes is answered
    // otherwise by memcached 1.6.40+, which larder follows; docs/differences.md)
    case(&mut c, &set("a", 0, &v2, " noreply"), &v2, b"XYZZ\r\n");
    case(&mut c, &set("b", 0, &v2, " noreply"), &v2, b"\r\nget b\r\n");
    case(&mut c, format!("add b 0 0 {big}\r\n").as_bytes(), &v1, b"\r\n");
    case(&mut c, format!("add c 9 0 {}\r\n", v3.len()).as_bytes(), &v3, b"\r\nget c\r\n");
    case(&mut c, format!("cas a 0 0 {big} 987654321\r\n").as_bytes(), &v1, b"\r\n");
    case(&mut c, format!("replace nothere 0 0 {big}\r\n").as_bytes(), &v1, b"\r\n");
    case(&mut c, b"set d 0 0 1\r\nx\r\n", b"", b"");
    case(&mut c, format!("append d 0 0 {big}\r\n").as_bytes(), &v2, b"\r\nget d\r\n");
    case(&mut c, format!("ms e {big} T0 F5\r\n").as_bytes(), &v3[..big], b"\r\nmg e v f s\r\n");
    // Pipelined: the value, its trailer and the next requests in one write.
    let mut pipelined = set("f", 0, &v1, "");
    pipelined.extend_from_slice(&v1);
    pipelined.extend_from_slice(b"\r\nget f\r\ndelete f\r\nget f\r\n");
    case(&mut c, &pipelined, b"", b"");
    replies
}

#[test]
fn large_values_received_in_place_are_answered_as_memcached_answers_them() {
    let args = ["-m", "256", "-I", "32m"];
    let memcached = Memcached::start(&args);
    let larder = Larder::start(&args);
    let want = conversation(memcached.connect());
    let got = conversation(larder.connect());
    assert_eq!(want.len(), got.len());
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert!(w == g, "case {i}: memcached {:?}… larder {:?}…", String::from_utf8_lossy(&w[..w.len().min(80)]), String::from_utf8_lossy(&g[..g.len().min(80)]));
    }
    let mut c = larder.connect();
    assert!(c.stat("larder_large_objects") >= 3, "the values were stored as large objects");
    assert_eq!(c.stat("larder_conn_budget_used"), 0, "landings adopted or given back");
}

/// A binary request: header, extras, key, value.
fn binary_request(opcode: u8, extras: &[u8], key: &[u8], value: &[u8], opaque: u32) -> Vec<u8> {
    common::binary::request(opcode, extras, key, value, opaque, 0)
}

#[test]
fn a_binary_set_of_a_large_value_is_received_in_place() {
    let larder = Larder::start(&["-m", "256", "-I", "32m", "-B", "auto"]);
    let mut c = larder.connect();
    let v = value(7 * MIB + 3, 9);
    let set = binary_request(0x01, &[0, 0, 0, 42, 0, 0, 0, 0], b"bin", &v, 7);
    let (head, rest) = set.split_at(40);
    send_in_pieces(&mut c, head, rest, b"");
    let reply = c.exact(24);
    assert_eq!((reply[0], reply[1], &reply[6..8], &reply[12..16]), (0x81, 0x01, &[0u8, 0][..], &7u32.to_be_bytes()[..]), "SET: {reply:?}");
    c.send(&binary_request(0x00, &[], b"bin", &[], 8));
    let head = c.exact(24);
    assert_eq!(&head[6..8], &[0, 0], "GET status");
    let body = u32::from_be_bytes(head[8..12].try_into().unwrap()) as usize;
    let body = c.exact(body);
    assert_eq!(&body[..4], &42u32.to_be_bytes(), "flags");
    assert!(body[4..] == v[..], "the value read back");
    let mut s = Client::connect(larder.port);
    s.send(&binary_request(0x10, &[], b"larder", &[], 9));
    let mut budget_used = None;
    loop {
        let h = s.exact(24);
        let (klen, blen) = (u16::from_be_bytes([h[2], h[3]]) as usize, u32::from_be_bytes(h[8..12].try_into().unwrap()) as usize);
        let b = s.exact(blen);
        if klen == 0 {
            break;
        }
        if &b[..klen] == b"larder_conn_budget_used" {
            budget_used = Some(String::from_utf8_lossy(&b[klen..]).to_string());
        }
    }
    assert_eq!(budget_used.as_deref(), Some("0"));
}

fn raw(l: &Larder) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", l.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn eventually(f: impl FnMut() -> bool) -> bool {
    common::eventually(Duration::from_secs(5), f)
}

#[test]
fn unfinished_large_values_hold_at_most_the_budget_and_give_it_back() {
    let l = Larder::start(&["-m", "64", "-t", "2", "-I", "32m", "-o", "read_buf_mem_limit=48"]);
    let mut c = l.connect();
    let keep = value(3 * MIB, 5);
    c.expect(&[format!("set keep 0 0 {}\r\n", keep.len()).as_bytes(), &keep, b"\r\n"].concat(), b"STORED\r\n");
    let budget = c.stat("larder_conn_budget_bytes") as usize;
    assert_eq!(budget, 48 * MIB);
    // Twelve 8 MiB values announced, half sent, then silence: 96 MiB
    // asked for against a 48 MiB budget.
    let half = value(4 * MIB, 6);
    let mut stalled: Vec<TcpStream> = (0..12)
        .map(|i| {
            let mut s = raw(&l);
            s.write_all(format!("set s{i} 0 0 {}\r\n", 8 * MIB).as_bytes()).unwrap();
            s.write_all(&half).unwrap();
            s
        })
        .collect();
    assert!(eventually(|| c.stat("read_buf_oom") > 0), "some must be refused");
    let used = c.stat("larder_conn_budget_used") as usize;
    assert!(used <= budget, "budget used {used} over {budget}");
    assert!(used >= 4 * 8 * MIB, "the ones that fit are being received ({used})");
    let rss = l.rss_bytes() as usize;
    assert!(rss < 64 * MIB + budget + 48 * MIB, "RSS {} MiB", rss / MIB);
    // A normal client is served, and the stored value is intact.
    let mut want = format!("VALUE keep 0 {}\r\n", keep.len()).into_bytes();
    want.extend_from_slice(&keep);
    want.extend_from_slice(b"\r\nEND\r\n");
    c.expect(b"get keep\r\n", &want);
    // Finishing each value: those that fit are stored, the others hear
    // memcached's out-of-memory reply once their bytes are in.
    let (mut stored, mut refused) = (0, 0);
    for s in stalled.iter_mut().take(6) {
        s.write_all(&half).unwrap();
        s.write_all(b"\r\n").unwrap();
        let mut line = [0u8; 64];
        let n = s.read(&mut line).unwrap();
        match &line[..n] {
            b"STORED\r\n" => stored += 1,
            l if l.starts_with(b"SERVER_ERROR out of memory storing object") => refused += 1,
            other => panic!("{:?}", String::from_utf8_lossy(other)),
        }
    }
    assert!(stored > 0 && stored + refused == 6, "stored {stored}, refused {refused}");
    // The rest go away halfway: everything comes back to the budget.
    drop(stalled);
    assert!(eventually(|| c.stat("larder_conn_budget_used") == 0), "budget still used: {}", c.stat("larder_conn_budget_used"));
}

#[test]
fn a_large_set_holds_one_copy_of_its_value() {
    let l = Larder::start(&["-m", "512", "-I", "256m"]);
    let mut c = l.connect();
    let before = l.peak_rss_bytes() as usize;
    let v = value(120 * MIB, 4);
    send_in_pieces(&mut c, format!("set big 0 0 {}\r\n", v.len()).as_bytes(), &v, b"\r\n");
    assert_eq!(c.line(), "STORED\r\n");
    // Buffered and then copied, the value was held twice (240 MiB) at the
    // end of the set; received in place, once.
    let grew = l.peak_rss_bytes() as usize - before;
    assert!(grew < 150 * MIB, "peak RSS grew by {} MiB for a 120 MiB value", grew / MIB);
    c.send(b"get big\r\n");
    assert_eq!(c.line(), format!("VALUE big 0 {}\r\n", v.len()));
    assert!(c.exact(v.len()) == v);
    assert_eq!(c.line(), "\r\n");
    assert_eq!(c.line(), "END\r\n");
}

/// A big value set again and again under one key (and then a little
/// smaller, under another) is received into the buffer the previous one
/// was freed from: every get returns the newest bytes, never the old ones
/// the reused buffer held, and the kept buffer shows in `stats larder`.
#[test]
fn a_big_value_set_again_is_received_into_the_freed_buffer_and_reads_back_new() {
    let l = Larder::start(&["-m", "256", "-I", "64m"]);
    let mut c = l.connect();
    let len = 24 * MIB;
    let get = |c: &mut Client, key: &str, v: &[u8]| {
        c.send(format!("get {key}\r\n").as_bytes());
        assert_eq!(c.line(), format!("VALUE {key} 0 {}\r\n", v.len()));
        assert!(c.exact(v.len()) == v, "{key}: the newest value");
        assert_eq!(c.line(), "\r\n");
        assert_eq!(c.line(), "END\r\n");
    };
    for round in 0..5u8 {
        let v = value(len, round);
        send_in_pieces(&mut c, format!("set big 0 0 {len}\r\n").as_bytes(), &v, b"\r\n");
        assert_eq!(c.line(), "STORED\r\n");
        get(&mut c, "big", &v);
        let spare = c.stat("larder_large_spare_bytes") as usize;
        if round == 0 {
            assert_eq!(spare, 0, "nothing freed yet");
        } else {
            // The replaced value's buffer (value + header room) waits for the next set.
            assert!((len..len + 4096).contains(&spare), "round {round}: {spare} bytes kept");
        }
    }
    let smaller = value(len - 5000, 77);
    send_in_pieces(&mut c, format!("set other 0 0 {}\r\n", smaller.len()).as_bytes(), &smaller, b"\r\n");
    assert_eq!(c.line(), "STORED\r\n");
    assert_eq!(c.stat("larder_large_spare_bytes"), 0, "taken by the smaller value");
    get(&mut c, "other", &smaller);
    get(&mut c, "big", &value(len, 4));
    assert_eq!(c.stat("larder_conn_budget_used"), 0);
}

/// A value of exactly a segment's size (64 KiB at `-m 64`, where segments
/// are 64 KiB) makes a large object once its item header is added, so it
/// is received in place like longer ones and reuses the freed buffer:
/// before, it went through the connection's buffer and each `set` of it
/// allocated a fresh large object (an mmap and a munmap per request).
#[test]
fn a_value_of_exactly_a_segment_is_received_in_place() {
    let l = Larder::start(&["-m", "64"]);
    let mut c = l.connect();
    let len = 64 * 1024;
    for round in 0..4u8 {
        let v = value(len, round);
        send_in_pieces(&mut c, format!("set seg 0 0 {len}\r\n").as_bytes(), &v, b"\r\n");
        assert_eq!(c.line(), "STORED\r\n");
        c.send(b"get seg\r\n");
        assert_eq!(c.line(), format!("VALUE seg 0 {len}\r\n"));
        assert!(c.exact(len) == v, "round {round}: the newest value");
        assert_eq!(c.line(), "\r\n");
        assert_eq!(c.line(), "END\r\n");
        if round > 0 {
            let spare = c.stat("larder_large_spare_bytes") as usize;
            assert!((len..len + 4096).contains(&spare), "round {round}: {spare} bytes kept");
        }
    }
}
