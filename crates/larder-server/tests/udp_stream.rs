//! UDP replies built datagram by datagram (conn/udp.rs, issue 12): the
//! bytes match memcached 1.6.18's for the same datagrams, a hostile
//! multi-get does not make the server copy its values into memory, and
//! values overwritten or evicted while a reply is on its way never put
//! other bytes into it.
//!
//! Framing: larder numbers the datagrams of a whole reply (one request id,
//! sequence 0..total-1, as protocol.txt describes). memcached 1.6.18 frames
//! each key's response object separately (the sequence restarts at 0 for
//! every key of a multi-get), so for multi-key replies the tests compare
//! the reassembled bytes (memcached's in arrival order, on loopback with a
//! receive buffer big enough to lose nothing), and for single-key replies
//! the datagrams themselves, headers included.

mod common;

use common::{binary, free_port, Larder, Memcached};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Reply bytes per datagram (1400 with the 8-byte header).
const CHUNK: usize = 1392;

/// A client socket whose receive buffer holds a large reply whole.
fn client_socket() -> UdpSocket {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let want: libc::c_int = 256 << 20;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: `fd` is an open socket owned by `sock`; the option value
        // is a live c_int of the size passed.
        let r = unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, opt, (&want as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) };
        if r == 0 {
            break; // SO_RCVBUFFORCE needs root; SO_RCVBUF is capped by rmem_max
        }
    }
    sock
}

/// Sends one request datagram (request id `rid`) and collects the reply's
/// datagrams until none has come for `quiet`.
fn exchange(port: u16, rid: u16, req: &[u8], quiet: Duration) -> Vec<Vec<u8>> {
    let sock = client_socket();
    let mut frame = rid.to_be_bytes().to_vec();
    frame.extend_from_slice(&[0, 0, 0, 1, 0, 0]);
    frame.extend_from_slice(req);
    sock.send_to(&frame, ("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(quiet)).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    while let Ok(n) = sock.recv(&mut buf) {
        assert_eq!(&buf[..2], &rid.to_be_bytes(), "request id echoed");
        got.push(buf[..n].to_vec());
    }
    got
}

fn header(d: &[u8]) -> (usize, usize) {
    (u16::from_be_bytes([d[2], d[3]]) as usize, u16::from_be_bytes([d[4], d[5]]) as usize)
}

/// larder's datagrams put back together, checking the framing: one
/// total for all, every sequence number once, full datagrams but the last.
fn reassemble_larder(dgs: &[Vec<u8>]) -> Vec<u8> {
    let total = header(&dgs[0]).1;
    assert_eq!(dgs.len(), total, "every datagram arrived, none more");
    let mut parts: Vec<(usize, &[u8])> = dgs.iter().map(|d| (header(d).0, &d[8..])).collect();
    assert!(dgs.iter().all(|d| header(d).1 == total && d[6..8] == [0, 0]));
    parts.sort_by_key(|p| p.0);
    for (i, (seq, p)) in parts.iter().enumerate() {
        assert_eq!(*seq, i, "sequence numbers 0..total");
        assert!(i + 1 == total || p.len() == CHUNK, "only the last datagram is short");
    }
    parts.into_iter().flat_map(|(_, p)| p.iter().copied()).collect()
}

/// memcached's datagrams in arrival order (one framing per key: see the
/// module documentation), skipping the empty ones it sends for misses.
fn reassemble_memcached(dgs: &[Vec<u8>]) -> Vec<u8> {
    dgs.iter().flat_map(|d| d[8..].iter().copied()).collect()
}

/// A binary reply stream with every packet's CAS zeroed (each server has
/// its own CAS values).
fn without_cas(mut b: Vec<u8>) -> Vec<u8> {
    let mut at = 0;
    while at + 24 <= b.len() {
        let body = u32::from_be_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        b[at + 16..at + 24].fill(0);
        at += 24 + body;
    }
    assert_eq!(at, b.len(), "whole packets");
    b
}

/// Both servers with the same flags and data; larder's UDP port and
/// memcached's (None: memcached is not installed and skipping is allowed).
struct Pair {
    larder: Larder,
    lport: u16,
    memcached: Option<(Memcached, u16)>,
}

impl Pair {
    fn start(flags: &[&str]) -> Pair {
        let lport = free_port();
        let mut args = vec!["-U".to_string(), lport.to_string()];
        args.extend(flags.iter().map(|s| s.to_string()));
        let larder = Larder::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let mport = free_port();
        let mut margs = vec!["-U".to_string(), mport.to_string()];
        margs.extend(flags.iter().map(|s| s.to_string()));
        let memcached = Memcached::start_or_skip(&margs.iter().map(String::as_str).collect::<Vec<_>>()).map(|m| (m, mport));
        Pair { larder, lport, memcached }
    }

    /// Sends `bytes` over TCP to both, expecting `reply` from each.
    fn tcp_both(&self, bytes: &[u8], reply: &[u8]) {
        let mut ports = vec![self.larder.port];
        ports.extend(self.memcached.as_ref().map(|(m, _)| m.port));
        for port in ports {
            let mut c = common::Client::connect(port);
            c.send(bytes);
            assert_eq!(c.exact(reply.len()), reply);
        }
    }
}

fn set(key: &str, value: &[u8]) -> Vec<u8> {
    let mut r = format!("set {key} 5 0 {}\r\n", value.len()).into_bytes();
    r.extend_from_slice(value);
    r.extend_from_slice(b"\r\n");
    r
}

/// A value of `len` bytes that says which key and version it is, and has
/// different bytes at every offset (so a piece from the wrong place shows).
fn self_checking(key: &str, version: u64, len: usize) -> Vec<u8> {
    let tag = format!("<{key}:{version}:{len}>");
    let mut v = Vec::with_capacity(len);
    let mut i = 0u64;
    while v.len() < len {
        v.extend_from_slice(tag.as_bytes());
        v.extend_from_slice(format!("{i:08}|").as_bytes());
        i += 1;
    }
    v.truncate(len);
    v
}

/// The text reply a single `get` of `key` holding `value` (flags 5) gets.
fn value_reply(key: &str, value: &[u8]) -> Vec<u8> {
    let mut r = format!("VALUE {key} 5 {}\r\n", value.len()).into_bytes();
    r.extend_from_slice(value);
    r.extend_from_slice(b"\r\n");
    r
}

#[test]
fn udp_replies_match_memcached_for_the_same_datagrams() {
    // -m 64: larder's segments are 64 KiB, so 50 KB values lie in segments
    // (referenced) and 2 MiB ones are large objects (pinned).
    let pair = Pair::start(&["-m", "64", "-I", "4m", "-t", "2"]);
    let mut data = Vec::new();
    let small = b"abc".to_vec();
    data.extend(set("small", &small));
    let mut multi_want = Vec::new();
    let mut keys = Vec::new();
    for i in 0..20 {
        let key = format!("k{i}");
        let v = self_checking(&key, 1, 50_000);
        data.extend(set(&key, &v));
        multi_want.extend(value_reply(&key, &v));
        keys.push(key);
    }
    multi_want.extend_from_slice(b"END\r\n");
    // A reply of exactly two datagrams, and one whose value ends exactly
    // at a datagram's end.
    let edge_len = 2 * CHUNK - "VALUE edge 5 2752\r\n".len() - 2 - 5;
    let edge = self_checking("edge", 1, edge_len);
    assert_eq!(value_reply("edge", &edge).len() + 5, 2 * CHUNK);
    data.extend(set("edge", &edge));
    let cut_len = CHUNK - "VALUE cut 5 1370\r\n".len();
    let cut = self_checking("cut", 1, cut_len);
    data.extend(set("cut", &cut));
    let big = self_checking("big", 1, 2 << 20);
    data.extend(set("big", &big));
    let stored = b"STORED\r\n".repeat(24);
    pair.tcp_both(&data, &stored);

    let getk = |key: &str| binary::request(0x0c, &[], key.as_bytes(), &[], 0xAB, 0);
    let mut bin_multi = Vec::new();
    for key in ["k3", "nope", "big"] {
        bin_multi.extend(binary::request(0x0d, &[], key.as_bytes(), &[], 7, 0)); // GETKQ
    }
    bin_multi.extend(binary::request(0x0a, &[], &[], &[], 8, 0)); // NOOP
    let multi_get = format!("get {}\r\n", keys.join(" "));
    // (request, single key: compare datagrams whole, expected text)
    let cases: Vec<(Vec<u8>, bool, Option<Vec<u8>>)> = vec![
        (b"get small\r\n".to_vec(), true, Some([value_reply("small", &small), b"END\r\n".to_vec()].concat())),
        (b"get nope\r\n".to_vec(), true, Some(b"END\r\n".to_vec())),
        (b"get edge\r\n".to_vec(), true, Some([value_reply("edge", &edge), b"END\r\n".to_vec()].concat())),
        (b"get cut\r\n".to_vec(), true, Some([value_reply("cut", &cut), b"END\r\n".to_vec()].concat())),
        (b"get big\r\n".to_vec(), true, Some([value_reply("big", &big), b"END\r\n".to_vec()].concat())),
        (getk("k7"), true, None),
        (getk("nope"), true, None),
        (getk("big"), true, None),
        (multi_get.into_bytes(), false, Some(multi_want)),
        (b"get k1 nope big k1 edge\r\n".to_vec(), false, None),
        (bin_multi, false, None),
    ];
    let quiet = Duration::from_millis(300);
    for (i, (req, single, want)) in cases.iter().enumerate() {
        let what = String::from_utf8_lossy(&req[..req.len().min(40)]).into_owned();
        let rid = 0x4100 + i as u16;
        let ours = exchange(pair.lport, rid, req, quiet);
        let bytes = reassemble_larder(&ours);
        if let Some(w) = want {
            assert!(bytes == *w, "{what}: larder's reply is not the expected one");
        }
        let Some((_, mport)) = &pair.memcached else { continue };
        let theirs = exchange(*mport, rid, req, quiet);
        if *single {
            // Same datagrams: same frame headers and sizes, and (below)
            // the same bytes in them.
            assert_eq!(ours.len(), theirs.len(), "{what}: datagram count");
            for (n, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                assert!(a[..8] == b[..8] && a.len() == b.len(), "{what}: datagram {n}'s frame differs");
            }
        }
        let binary = req[0] == 0x80;
        let norm = |b: Vec<u8>| if binary { without_cas(b) } else { b };
        assert!(norm(bytes) == norm(reassemble_memcached(&theirs)), "{what}: replies differ");
    }
}

/// What the server's memory and answers do while one datagram asks for
/// `copies` × 100 KB; returns the peak RSS growth over the RSS before.
fn hostile_multi_get(l: &Larder, port: u16, copies: usize) -> (u64, Vec<Vec<u8>>) {
    let value = self_checking("k", 1, 100_000);
    let mut c = l.connect();
    c.expect(&set("k", &value), b"STORED\r\n");
    c.expect(b"set other 0 0 2\r\nok\r\n", b"STORED\r\n");
    let before = l.rss_bytes();
    // A TCP client is served meanwhile.
    let stop = Arc::new(AtomicBool::new(false));
    let port_tcp = l.port;
    let served = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut c = common::Client::connect(port_tcp);
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) || n == 0 {
                c.expect(b"get other\r\n", b"VALUE other 0 2\r\nok\r\nEND\r\n");
                n += 1;
            }
            n
        })
    };
    let req = format!("get{}\r\n", " k".repeat(copies));
    assert!(req.len() + 8 <= 65507, "one datagram");
    let dgs = exchange(port, 0x7777, req.as_bytes(), Duration::from_millis(1000));
    stop.store(true, Ordering::Relaxed);
    assert!(served.join().unwrap() > 0);
    let peak = l.peak_rss_bytes();
    (peak.saturating_sub(before), dgs)
}

/// The hostile case: one datagram naming a 100 KB value hundreds
/// or thousands of times. The reply's values are not copied into memory:
/// the peak RSS grows by far less than the reply (a copying server grows
/// by the reply, up to the connection budget: 64 MiB here).
#[test]
fn a_hostile_udp_multi_get_does_not_copy_its_values() {
    let port = free_port();
    let port_s = port.to_string();
    let l = Larder::start(&["-m", "64", "-U", &port_s, "-t", "2"]);
    // 600 × 100 KB = 60 MB: 43,113 datagrams, within the 16-bit count.
    let copies = 600;
    let (growth, dgs) = hostile_multi_get(&l, port, copies);
    let reply = [value_reply("k", &self_checking("k", 1, 100_000)).repeat(copies), b"END\r\n".to_vec()].concat();
    let total = reply.len().div_ceil(CHUNK);
    eprintln!("{copies} copies: peak RSS +{growth} bytes for a {} byte reply", reply.len());
    assert!(growth < 16 << 20, "peak RSS grew by {growth} bytes for a {} byte reply", reply.len());
    // Whatever arrived (a receive buffer may drop some) is the right bytes
    // at the right place.
    assert!(dgs.len() > total / 2, "{} of {total} datagrams arrived", dgs.len());
    for d in &dgs {
        let (seq, count) = header(d);
        assert_eq!(count, total);
        assert!(d[8..] == reply[seq * CHUNK..(seq * CHUNK + CHUNK).min(reply.len())], "datagram {seq}");
    }

    // 10,000 copies: about 1 GB, more than 65,535 datagrams can say.
    // Nothing is sent (docs/memory.md), memory stays put, the server serves.
    let mut c = l.connect();
    let cut_before = c.stat("larder_udp_replies_cut");
    let (growth, dgs) = hostile_multi_get(&l, port, 10_000);
    assert!(dgs.is_empty(), "a reply of more than 65,535 datagrams is not sent");
    eprintln!("10000 copies: peak RSS +{growth} bytes");
    assert!(growth < 16 << 20, "peak RSS grew by {growth} bytes");
    assert_eq!(c.stat("larder_udp_replies_cut"), cut_before + 1);
    assert!(l.rss_bytes() < (64 + 64 + 32) << 20, "RSS within -m + budget + an allowance");
}

/// Parses a text multi-get reply; checks every value is one written for
/// its key (self-checking); false if it does not parse.
fn reply_is_sound(reply: &[u8]) -> bool {
    let mut rest = reply;
    loop {
        if rest == b"END\r\n" {
            return true;
        }
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else { return false };
        let line = std::str::from_utf8(&rest[..eol]).unwrap_or("");
        let parts: Vec<&str> = line.split(' ').collect();
        let [ "VALUE", key, _flags, len ] = parts[..] else { return false };
        let Ok(len) = len.parse::<usize>() else { return false };
        let body = &rest[eol + 2..];
        if body.len() < len + 2 || &body[len..len + 2] != b"\r\n" {
            return false;
        }
        let value = &body[..len];
        // "<key:version:len>..."
        let tag_end = value.iter().position(|&b| b == b'>').unwrap_or(0);
        let tag = std::str::from_utf8(&value[..=tag_end]).unwrap_or("");
        let fields: Vec<&str> = tag.trim_start_matches('<').trim_end_matches('>').split(':').collect();
        let [k, version, vlen] = fields[..] else { return false };
        if k != key || vlen.parse::<usize>() != Ok(len) {
            return false;
        }
        let Ok(version) = version.parse::<u64>() else { return false };
        if value != self_checking(key, version, len) {
            return false;
        }
        rest = &body[len + 2..];
    }
}

/// Keys rewritten with values of other lengths and evicted (small -m,
/// filler writes) while UDP multi-gets of them run: every reply that
/// arrives whole parses and holds, for each key, a value written for it.
/// Replies whose values went away mid-send stop short (counted).
#[test]
fn values_overwritten_or_evicted_mid_reply_never_send_other_bytes() {
    let port = free_port();
    let port_s = port.to_string();
    // -m 8: 128 segments of 64 KiB, turned over many times a second here.
    let l = Larder::start(&["-m", "4", "-U", &port_s, "-t", "2"]);
    let keys: Vec<String> = (0..20).map(|i| format!("key{i}")).collect();
    let stop = Arc::new(AtomicBool::new(false));
    // Two writers, each rewriting every key and writing filler.
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let (stop, keys, tport) = (stop.clone(), keys.clone(), l.port);
            std::thread::spawn(move || {
                let mut c = common::Client::connect(tport);
                let mut version = w;
                while !stop.load(Ordering::Relaxed) {
                    version += 2;
                    let mut batch = Vec::new();
                    for (i, key) in keys.iter().enumerate() {
                        let len = 1000 + ((version as usize * 7919 + i * 104_729) % 50_000);
                        batch.extend(set(key, &self_checking(key, version, len)));
                    }
                    // Filler: evicts segments, the keys' among them.
                    for f in 0..8 {
                        batch.extend(set(&format!("fill{}", (version * 8 + f) % 1000), &[b'f'; 40_000]));
                    }
                    c.send(&batch);
                    assert_eq!(c.exact(8 * 28), b"STORED\r\n".repeat(28));
                }
                version / 2
            })
        })
        .collect();
    // Each key once (~500 KB), or four times: a reply of ~2 MB, ~1,500
    // datagrams, long enough on the wire for the writers to reuse
    // segments under it.
    let once = format!("get {}\r\n", keys.join(" "));
    let four = format!("get {}\r\n", vec![keys.join(" "); 4].join(" "));
    let (mut whole, mut short) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(8);
    let mut rid = 0u16;
    while Instant::now() < deadline {
        rid = rid.wrapping_add(1);
        let req = if rid.is_multiple_of(2) { &once } else { &four };
        let dgs = exchange(port, rid, req.as_bytes(), Duration::from_millis(100));
        let Some(first) = dgs.first() else {
            short += 1;
            continue;
        };
        let total = header(first).1;
        if dgs.len() < total {
            short += 1;
            // Whatever came is still framed as one reply.
            assert!(dgs.iter().all(|d| header(d).1 == total));
            continue;
        }
        let bytes = reassemble_larder(&dgs);
        assert!(reply_is_sound(&bytes), "reply {rid} holds bytes not written for its keys");
        whole += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let versions: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    let cut = l.connect().stat("larder_udp_replies_cut");
    eprintln!("{whole} whole replies, {short} short ({cut} cut by the server), {versions} versions written");
    assert!(whole >= 5, "replies arrive whole: {whole}");
    assert!(versions > 10, "the keys were rewritten meanwhile: {versions} times");
}
