//! Large values over TCP: 10 MiB and 128 MiB values written and read from
//! several connections at once with `set`, `get`, `gets`, `cas`, `ms` and
//! `mg`, every read verified byte for byte; the `-I` boundary answered as
//! memcached 1.6.18 answers it; and a `-I 1g` server storing a value bigger
//! than 512 MiB.
//!
//! Values are self-describing (`larder_testkit::values`: key id, version,
//! length, a pattern seeded by key and version, a checksum) and are generated
//! and verified as streams in 1 MiB chunks, so the test process holds no copy
//! of a whole value. A reader
//! regenerates the expected bytes from the header it received, so a torn
//! value (two versions mixed), a truncated or extended one, or another key's
//! is caught.
//!
//! Work is counted in operations, never in time. The tests of this file run
//! one at a time (each holds a few hundred MiB in the server).

// `is_multiple_of` is newer than the workspace MSRV (1.80).
#![allow(unknown_lints, clippy::manual_is_multiple_of)]

mod common;

use common::Larder;
use larder_testkit::values::{parse_head, ValueGen, HEAD, MIN_LEN};
use larder_testkit::XorShift64;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MIB: usize = 1 << 20;

/// Each test holds a few hundred MiB in the server: one at a time.
static HEAVY: Mutex<()> = Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// A connection with reads that wait long enough for 128 MiB transfers on
/// a busy machine (a hang still ends the test).
struct Conn {
    r: BufReader<TcpStream>,
    chunk: Vec<u8>,
    want: Vec<u8>,
}

impl Conn {
    fn new(l: &Larder) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", l.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
        s.set_nodelay(true).unwrap();
        Conn { r: BufReader::with_capacity(256 << 10, s), chunk: Vec::new(), want: Vec::new() }
    }

    fn send(&mut self, b: &[u8]) {
        self.r.get_mut().write_all(b).unwrap();
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.r.read_line(&mut l).unwrap();
        assert!(l.ends_with("\r\n"), "connection closed or partial line: {l:?}");
        l
    }

    /// Sends `line` (without `\r\n`) and the value's data block; the reply line.
    fn store(&mut self, line: &str, key: u32, version: u64, len: usize) -> String {
        let mut g = ValueGen::new(key, version, len);
        self.send(format!("{line}\r\n").as_bytes());
        while g.remaining() > 0 {
            g.next_chunk(&mut self.chunk);
            let c = std::mem::take(&mut self.chunk);
            self.send(&c);
            self.chunk = c;
        }
        self.send(b"\r\n");
        self.line()
    }

    /// Reads a `len`-byte data block and its `\r\n`, checking it is exactly
    /// one complete version written for key `key`; returns the version.
    fn read_value(&mut self, key: u32, len: usize) -> u64 {
        let mut head = [0u8; HEAD];
        assert!(len >= MIN_LEN, "key {key}: {len}-byte value is too short");
        self.r.read_exact(&mut head).unwrap();
        let (id, version, stated) = parse_head(&head).unwrap_or_else(|e| panic!("key {key}: {e}"));
        assert_eq!(id, key, "key {key} holds a value of key {id}");
        assert_eq!(stated, len, "key {key} version {version}: header length differs from the reply's");
        let mut g = ValueGen::new(key, version, len);
        let mut first = true;
        while g.remaining() > 0 {
            g.next_chunk(&mut self.want);
            let skip = if first { HEAD } else { 0 };
            first = false;
            self.chunk.resize(self.want.len() - skip, 0);
            self.r.read_exact(&mut self.chunk).unwrap();
            if self.chunk[..] != self.want[skip..] {
                let at = self.chunk.iter().zip(&self.want[skip..]).position(|(a, b)| a != b).unwrap();
                panic!("key {key} version {version}: wrong byte at offset {} (torn or corrupted)", g.pos() - self.want.len() + skip + at);
            }
        }
        let mut crlf = [0u8; 2];
        self.r.read_exact(&mut crlf).unwrap();
        assert_eq!(&crlf, b"\r\n", "key {key}: data block not followed by \\r\\n");
        version
    }

    /// `get`/`gets` of several keys: (key index, version, cas) per hit.
    fn get(&mut self, cmd: &str, keys: &[&Key]) -> Vec<(usize, u64, Option<u64>)> {
        let names: Vec<&str> = keys.iter().map(|k| k.name.as_str()).collect();
        self.send(format!("{cmd} {}\r\n", names.join(" ")).as_bytes());
        let mut hits = Vec::new();
        loop {
            let l = self.line();
            if l == "END\r\n" {
                return hits;
            }
            let w: Vec<&str> = l.trim_end().split(' ').collect();
            assert!(w[0] == "VALUE" && (w.len() == 4 || w.len() == 5), "bad reply line {l:?}");
            let k = keys.iter().find(|k| k.name == w[1]).unwrap_or_else(|| panic!("unasked key in {l:?}"));
            assert_eq!(w[2], k.flags().to_string(), "flags of {}", k.name);
            let len: usize = w[3].parse().unwrap();
            let cas = w.get(4).map(|c| c.parse().unwrap());
            assert_eq!(cas.is_some(), cmd == "gets", "cas unique only for gets: {l:?}");
            let v = self.read_value(k.id, len);
            k.check_version(v);
            hits.push((k.id as usize, v, cas));
        }
    }
}

struct Key {
    id: u32,
    name: String,
    base: usize,
    next_version: AtomicU64,
}

impl Key {
    fn new(id: u32, base: usize) -> Key {
        Key { id, name: format!("large:{id}"), base, next_version: AtomicU64::new(0) }
    }

    /// Client flags derived from the key, so a value returned under the
    /// wrong flags is caught too.
    fn flags(&self) -> u32 {
        self.id * 1000 + 7
    }

    fn version(&self) -> u64 {
        self.next_version.fetch_add(1, Ordering::SeqCst)
    }

    fn check_version(&self, v: u64) {
        assert!(v < self.next_version.load(Ordering::SeqCst), "{}: version {v} was never written", self.name);
    }

    /// Length of a new version: the nominal size plus up to 4 KiB, so
    /// versions differ in length.
    fn len(&self, r: &mut XorShift64) -> usize {
        self.base + r.below(4096) as usize
    }
}

/// Five connections at once on two 128 MiB keys and four 10 MiB keys, with
/// less memory than all versions need (so large objects are evicted while
/// others are read): a writer (`set`), a cas writer (`gets` then `cas`), a
/// reader of single keys (`get`), a reader of several keys at once (`get`
/// with three keys, `gets`), and a meta client (`ms` and `mg`). Every value
/// read is verified in full.
#[test]
fn concurrent_connections_round_trip_10mib_and_128mib_values() {
    let _heavy = heavy();
    let l = Arc::new(Larder::start(&["-m", "320", "-I", "129m", "-t", "2"]));
    let mut keys: Vec<Key> = (0..2).map(|i| Key::new(i, 128 * MIB)).collect();
    keys.extend((2..6).map(|i| Key::new(i, 10 * MIB)));
    let keys = Arc::new(keys);
    // Every key exists once before the readers start.
    let mut c = Conn::new(&l);
    let mut r = XorShift64(0x5EED);
    for k in keys.iter() {
        let len = k.len(&mut r);
        let reply = c.store(&format!("set {} {} 0 {len}", k.name, k.flags()), k.id, k.version(), len);
        assert_eq!(reply, "STORED\r\n", "{}", k.name);
    }
    let reads = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for role in 0..5u64 {
        let (l, keys, reads) = (l.clone(), keys.clone(), reads.clone());
        threads.push(std::thread::spawn(move || {
            let mut c = Conn::new(&l);
            let mut r = XorShift64(0x1234_5678 + role * 0x9E37_79B9);
            let mut pick = |i: u64| -> &Key {
                let r = r.next_u64();
                // One operation in three on a 128 MiB key.
                if i % 3 == 0 { &keys[(r % 2) as usize] } else { &keys[2 + (r % 4) as usize] }
            };
            let mut lr = XorShift64(0xFACE + role);
            match role {
                0 => {
                    for i in 0..12 {
                        let k = pick(i);
                        let len = k.len(&mut lr);
                        let reply = c.store(&format!("set {} {} 0 {len}", k.name, k.flags()), k.id, k.version(), len);
                        assert_eq!(reply, "STORED\r\n", "set {}", k.name);
                    }
                }
                1 => {
                    let (mut stored, mut raced) = (0, 0);
                    for i in 0..10 {
                        let k = pick(i);
                        let hits = c.get("gets", &[k]);
                        reads.fetch_add(hits.len() as u64, Ordering::Relaxed);
                        let Some(&(_, _, Some(cas))) = hits.first() else { continue };
                        let len = k.len(&mut lr);
                        let reply = c.store(&format!("cas {} {} 0 {len} {cas}", k.name, k.flags()), k.id, k.version(), len);
                        match reply.as_str() {
                            "STORED\r\n" => stored += 1,
                            "EXISTS\r\n" | "NOT_FOUND\r\n" => raced += 1,
                            other => panic!("cas {}: {other:?}", k.name),
                        }
                    }
                    eprintln!("cas: {stored} stored, {raced} lost a race");
                }
                2 => {
                    for i in 0..16 {
                        let k = pick(i);
                        reads.fetch_add(c.get("get", &[k]).len() as u64, Ordering::Relaxed);
                    }
                }
                3 => {
                    for i in 0..6 {
                        // One 128 MiB key and two 10 MiB keys in one request.
                        let a = pick(0);
                        let b = pick(1);
                        let d = pick(2);
                        let cmd = if i % 2 == 0 { "get" } else { "gets" };
                        reads.fetch_add(c.get(cmd, &[a, b, d]).len() as u64, Ordering::Relaxed);
                    }
                }
                _ => {
                    for i in 0..12 {
                        let k = pick(i);
                        if i % 2 == 0 {
                            let len = k.len(&mut lr);
                            let reply = c.store(&format!("ms {} {len} F{} T0 c", k.name, k.flags()), k.id, k.version(), len);
                            assert!(reply.starts_with("HD c") && reply.ends_with("\r\n"), "ms {}: {reply:?}", k.name);
                        } else {
                            c.send(format!("mg {} s v f k\r\n", k.name).as_bytes());
                            let line = c.line();
                            if line == format!("EN k{}\r\n", k.name) {
                                continue; // a miss (memcached echoes `k` on misses too)
                            }
                            let w: Vec<&str> = line.trim_end().split(' ').collect();
                            assert_eq!(w[0], "VA", "mg {}: {line:?}", k.name);
                            let len: usize = w[1].parse().unwrap();
                            assert_eq!(w[2..], [format!("s{len}"), format!("f{}", k.flags()), format!("k{}", k.name)], "{line:?}");
                            let v = c.read_value(k.id, len);
                            k.check_version(v);
                            reads.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }));
    }
    let mut panicked = None;
    for t in threads {
        if let Err(e) = t.join() {
            panicked.get_or_insert(e);
        }
    }
    if let Some(e) = panicked {
        std::panic::resume_unwind(e);
    }
    // What is left is intact, and memory stayed within -m.
    let mut c = Conn::new(&l);
    let refs: Vec<&Key> = keys.iter().collect();
    c.get("get", &refs);
    let mut s = l.connect();
    let evictions = s.stat("evictions");
    let limit = s.stat("limit_maxbytes");
    let used = s.stat("larder_memory_used");
    eprintln!("verified reads: {}, evictions {evictions}, memory used {used} of {limit}", reads.load(Ordering::Relaxed));
    assert!(used <= limit);
    assert!(evictions > 0, "the versions written exceed -m: large objects must have been evicted");
    assert!(reads.load(Ordering::Relaxed) > 0);
}

/// `-I 128m`: the largest value memcached 1.6.18 stores for key `k` with
/// flags 0 is 128 MiB - 60 bytes (item header 48, CAS 8, key and its NUL,
/// `\r\n`); one byte more is `SERVER_ERROR object too large for cache`,
/// the data block is swallowed, the connection stays usable, and — for
/// `set` and `ms`, as in memcached — the old value is dropped, while a
/// too-large `cas` or `add` leaves it.
#[test]
fn a_value_just_over_the_item_size_limit_is_refused_like_memcached() {
    let _heavy = heavy();
    let l = Larder::start(&["-m", "256", "-I", "128m"]);
    let mut c = Conn::new(&l);
    let max = 128 * MIB - 60;
    assert_eq!(c.store(&format!("set k 0 0 {max}"), 0, 1, max), "STORED\r\n");
    c.send(b"gets k\r\n");
    let line = c.line();
    let cas: u64 = line.strip_prefix(&format!("VALUE k 0 {max} ")).expect(&line).trim_end().parse().unwrap();
    assert_eq!(c.read_value(0, max), 1);
    assert_eq!(c.line(), "END\r\n");

    // Too large with cas / add: refused, the old value stays.
    let too_big = max + 1;
    assert_eq!(c.store(&format!("cas k 0 0 {too_big} {cas}"), 0, 2, too_big), "SERVER_ERROR object too large for cache\r\n");
    assert_eq!(c.store(&format!("add k 0 0 {too_big}"), 0, 3, too_big), "SERVER_ERROR object too large for cache\r\n");
    c.send(b"get k\r\n");
    assert_eq!(c.line(), format!("VALUE k 0 {max}\r\n"));
    assert_eq!(c.read_value(0, max), 1);
    assert_eq!(c.line(), "END\r\n");
    // Flags take 4 bytes of the item: `max` with flags is too large as well.
    assert_eq!(c.store(&format!("add k 1 0 {max}"), 0, 4, max), "SERVER_ERROR object too large for cache\r\n");

    // Too large with set: refused, and the old value is gone.
    assert_eq!(c.store(&format!("set k 0 0 {too_big}"), 0, 5, too_big), "SERVER_ERROR object too large for cache\r\n");
    c.send(b"get k\r\nversion\r\n");
    assert_eq!(c.line(), "END\r\n");
    assert!(c.line().starts_with("VERSION "));

    // The same through the meta protocol.
    assert_eq!(c.store("set k 0 0 100", 0, 6, 100), "STORED\r\n");
    assert_eq!(c.store(&format!("ms k {too_big} T0"), 0, 7, too_big), "SERVER_ERROR object too large for cache\r\n");
    c.send(b"mg k v\r\nmn\r\n");
    assert_eq!(c.line(), "EN\r\n");
    assert_eq!(c.line(), "MN\r\n");

    let mut s = l.connect();
    assert_eq!(s.stat("curr_items"), 0);
    assert_eq!(s.stat("total_items"), 2);
}

/// `-I 1g` (memcached's upper limit; `-m` must be at least twice it): the
/// server starts, reports it, and stores and returns a value bigger than
/// 512 MiB intact.
#[test]
fn a_1g_item_size_limit_stores_a_value_over_512_mib() {
    let _heavy = heavy();
    let l = Larder::start(&["-m", "2048", "-I", "1024m"]);
    let mut s = l.connect();
    let settings = s.stats("settings");
    let item_size_max = settings.iter().find(|(n, _)| n == "item_size_max").expect("item_size_max").1.clone();
    assert_eq!(item_size_max, "1073741824");
    let mut c = Conn::new(&l);
    let len = 512 * MIB + 1;
    assert_eq!(c.store(&format!("set huge 9 0 {len}"), 7, 1, len), "STORED\r\n");
    c.send(b"get huge\r\n");
    assert_eq!(c.line(), format!("VALUE huge 9 {len}\r\n"));
    assert_eq!(c.read_value(7, len), 1);
    assert_eq!(c.line(), "END\r\n");
}
