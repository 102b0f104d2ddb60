//! Fuzz whole sessions: bytes from clients fed through real sessions
//! (`larder_server::conn::harness`) against a real store with small limits,
//! so the parsers, the landing of large values, the budget, the executors
//! and the store are exercised together, as a connection exercises them.
//!
//! The first byte picks the server's flags; the second whether the rest is
//! one raw byte stream (odd: any protocol, any framing) or a sequence of
//! structured requests (even): text, meta and binary requests whose
//! lengths come from tables of edges (0, 1, around the segment and item
//! sizes, past 2^31 and 2^32, a binary header's maxima), sent whole, in
//! part or followed by garbage, over up to three connections that hang up
//! and reconnect. The 124-byte binary request that once stopped the server
//! is one step of that grammar (`fuzz/corpus/session/README` keeps it as a
//! seed too).
//!
//! After every input: no panic; the connection budget within its limit;
//! with every connection closed, the budget holding exactly its shelf; the
//! store within `-m` with every item it walks readable at the walked
//! length (`Harness::check`); and on a connection that speaks binary, the
//! replies framed as binary responses.
#![no_main]

use larder_server::conn::harness::Harness;
use libfuzzer_sys::fuzz_target;

/// Server flags, picked by the first byte.
const CONFIGS: [&[&str]; 4] = [
    &["-m", "2", "-I", "512k"],
    &["-m", "4", "-I", "2m"],
    &["-m", "2", "-I", "1m", "-B", "binary"],
    &["-m", "4", "-I", "2m", "-o", "read_buf_mem_limit=1"],
];

/// Reads the fuzzer's bytes as choices; runs dry as zeros.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.byte() as usize % from.len()]
    }

    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        taken
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Lengths worth claiming, given the segment and item sizes.
fn lengths(segment: u64, item: u64) -> [u64; 14] {
    [0, 1, 2, 100, 4096, segment - 1, segment, segment + 1, 2 * segment, item - 1, item, item + 1, (1 << 31) - 1, 1 << 32]
}

const KEYS: [&str; 6] = ["a", "b", "key:1", "key:2", "prefix:long:key", "x"];

fn key(c: &mut Choices) -> String {
    match c.byte() % 8 {
        6 => "k".repeat(250),
        7 => "k".repeat(251),
        i => KEYS[i as usize % KEYS.len()].to_string(),
    }
}

/// A value of `len` bytes, all of them or a part (and perhaps a bad
/// trailer), at most 3 MiB actually sent.
fn value(c: &mut Choices, len: u64, crlf: bool) -> Vec<u8> {
    let part = c.byte();
    let send = if part >= 128 { len } else { len * u64::from(part) / 128 };
    let mut v = vec![b'v'; send.min(3 << 20) as usize];
    if crlf && send == len {
        v.extend_from_slice(if part == 255 { b"xx" } else { b"\r\n" });
    }
    v
}

fn text_storage(c: &mut Choices, lens: &[u64]) -> Vec<u8> {
    let cmd = c.pick(&["set", "add", "replace", "append", "prepend", "cas"]);
    let k = key(c);
    let len = c.pick(lens);
    let len_text = if c.byte() == 0 { "-1".to_string() } else { len.to_string() };
    let cas = if cmd == "cas" { " 1" } else { "" };
    let noreply = if c.byte() % 4 == 0 { " noreply" } else { "" };
    let mut req = format!("{cmd} {k} {} {} {len_text}{cas}{noreply}\r\n", c.byte(), c.pick(&[0, 1, -1, 2_592_001])).into_bytes();
    req.extend(value(c, len, true));
    req
}

fn meta(c: &mut Choices, lens: &[u64]) -> Vec<u8> {
    let k = key(c);
    let flags = c.pick(&["", " v", " v c f t s k", " q", " T0", " I", " N30 v", " b", " MA", " ME", " C1", " E0", " x", " O123456", " S100"]);
    match c.byte() % 6 {
        0 | 1 => {
            let len = c.pick(lens);
            let mut req = format!("ms {k} {len}{flags}\r\n").into_bytes();
            req.extend(value(c, len, true));
            req
        }
        2 => format!("mg {k}{flags}\r\n").into_bytes(),
        3 => format!("md {k}{flags}\r\n").into_bytes(),
        4 => format!("ma {k}{flags}\r\n").into_bytes(),
        _ => b"mn\r\n".to_vec(),
    }
}

fn text_other(c: &mut Choices) -> Vec<u8> {
    let k = key(c);
    let line = match c.byte() % 14 {
        0 => format!("get {k}"),
        1 => format!("gets {k} a b key:1 {k}"),
        2 => format!("gat 0 {k}"),
        3 => format!("delete {k}"),
        4 => format!("incr {k} 18446744073709551615"),
        5 => format!("decr {k} 1"),
        6 => format!("touch {k} 10"),
        7 => "flush_all".into(),
        8 => "stats".into(),
        9 => c.pick(&["stats items", "stats slabs", "stats settings", "stats conns", "stats prefixes", "stats bigkeys"]).into(),
        10 => "lru_crawler metadump all".into(),
        11 => format!("cache_memlimit {}", c.pick(&[0, 1, 2, 8, 100000])),
        12 => "verbosity 1".into(),
        _ => format!("get {}", (0..c.byte()).map(|i| format!("k{i} ")).collect::<String>()),
    };
    let mut req = line.into_bytes();
    req.extend_from_slice(b"\r\n");
    req
}

fn binary(c: &mut Choices, lens: &[u64]) -> Vec<u8> {
    let opcode = c.pick(&[0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x0a, 0x0b, 0x0e, 0x0f, 0x10, 0x11, 0x1c, 0x1d, 0x20, 0x21, 0x22, 0x99]);
    let keylen: u16 = c.pick(&[0, 1, 3, 250, 251, 65_535]);
    let extlen: u8 = c.pick(&[0, 4, 8, 20, 255]);
    let body = match c.byte() % 3 {
        0 => u64::from(keylen) + u64::from(extlen) + c.pick(lens),
        1 => c.pick(lens),
        _ => u64::from(c.byte()),
    }
    .min(u64::from(u32::MAX)) as u32;
    let mut req = vec![0x80, opcode];
    req.extend_from_slice(&keylen.to_be_bytes());
    req.push(extlen);
    req.extend_from_slice(&[0, 0, 0]);
    req.extend_from_slice(&body.to_be_bytes());
    req.extend_from_slice(&c.byte().to_be_bytes().repeat(4)); // opaque
    req.extend_from_slice(&[0; 8]); // cas
    let follow = c.pick(&[0u64, 100, u64::from(body), u64::from(body).saturating_sub(1), u64::from(keylen) + u64::from(extlen)]);
    req.extend(std::iter::repeat_n(b'k', follow.min(3 << 20) as usize));
    req
}

/// A binary connection's replies are whole responses back to back (the
/// last one may be cut only if the server closed the connection).
fn binary_framing(replies: &[u8], complete: bool, closed: bool) -> Result<(), String> {
    let mut at = 0;
    while at < replies.len() {
        let rest = &replies[at..];
        if rest.len() < 24 {
            return if closed || !complete { Ok(()) } else { Err(format!("{} bytes of a header at {at}", rest.len())) };
        }
        if rest[0] != 0x81 {
            return Err(format!("magic {:#x} at {at}", rest[0]));
        }
        let keylen = u16::from_be_bytes([rest[2], rest[3]]) as usize;
        let extlen = rest[4] as usize;
        let body = u32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]) as usize;
        if keylen + extlen > body {
            return Err(format!("key {keylen} + extras {extlen} past body {body} at {at}"));
        }
        at += 24 + body;
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut c = Choices(data);
    let config = CONFIGS[c.byte() as usize % CONFIGS.len()];
    let mut h = Harness::new(config).expect("the fuzz configurations are valid");
    let segment = h.segment_size() as u64;
    let item = h.item_size_max() as u64;
    let lens = lengths(segment, item);
    let mut conns = vec![h.connect().unwrap()];
    let mut current = 0;
    if c.byte() % 2 == 1 {
        h.send(conns[0], c.0);
    } else {
        while !c.is_empty() {
            let req = match c.byte() % 10 {
                0 | 1 => text_storage(&mut c, &lens),
                2 | 3 => meta(&mut c, &lens),
                4 | 5 => binary(&mut c, &lens),
                6 => text_other(&mut c),
                7 => {
                    let n = c.byte() as usize;
                    c.bytes(n).to_vec()
                }
                8 => {
                    h.hang_up(conns[current]);
                    conns[current] = h.connect().unwrap();
                    continue;
                }
                _ => {
                    if conns.len() < 3 {
                        conns.push(h.connect().unwrap());
                    }
                    current = c.byte() as usize % conns.len();
                    continue;
                }
            };
            h.send(conns[current], &req);
        }
    }
    for &conn in &conns {
        let (replies, total) = h.replies(conn);
        if h.speaks_binary(conn) {
            let complete = total == replies.len() as u64;
            if let Err(e) = binary_framing(replies, complete, h.is_closed(conn)) {
                panic!("connection {conn}: binary replies not framed: {e}");
            }
        }
    }
    if let Err(e) = h.check() {
        panic!("after the input: {e}");
    }
    h.close_all();
    if let Err(e) = h.check() {
        panic!("with every connection closed: {e}");
    }
});
