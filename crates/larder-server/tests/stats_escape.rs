//! Issue 12, item 6: keys that may hold any byte (binary-protocol keys,
//! meta keys sent base64 with `b`) must not be able to forge lines in
//! another client's `stats prefixes`, `stats hotkeys`, `stats bigkeys`,
//! `stats cachedump` or `stats detail dump` reply. Every key and prefix in
//! those listings is percent-encoded (larder_observe::escape): printable
//! ASCII only, no space, `%` itself escaped.

mod common;

use common::{Client, Larder};

/// The payload a hostile client hides in its keys.
const FORGE: &[u8] = b"\r\nSTAT forged 1\r\nEND\r\n";

/// A key stored over the binary protocol: the payload in the prefix (so it
/// reaches the prefix listings too), a space and a `%` after the delimiter.
fn binary_key() -> Vec<u8> {
    [&b"bin"[..], FORGE, b":k 1%"].concat()
}

/// A key stored with meta `ms <base64> b`.
fn meta_key() -> Vec<u8> {
    [&b"meta"[..], FORGE, b":k2"].concat()
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Percent-decoding (the inverse of the listings' escaping).
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// One binary-protocol request: 24-byte header (magic 0x80), extras, key,
/// value; returns the response's status and body.
fn binary(c: &mut Client, opcode: u8, extras: &[u8], key: &[u8], value: &[u8]) -> (u16, Vec<u8>) {
    c.send(&common::binary::request(opcode, extras, key, value, 0x1234, 0));
    let h = c.exact(24);
    assert_eq!(h[0], 0x81, "response magic: {h:?}");
    assert_eq!(h[1], opcode);
    let status = u16::from_be_bytes([h[6], h[7]]);
    let body = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
    (status, c.exact(body))
}

/// The whole reply to `cmd`, read up to the `MN` of a pipelined `mn` (so
/// a forged `END` cannot cut it short), as text.
fn whole_reply(c: &mut Client, cmd: &str) -> String {
    c.send(format!("{cmd}\r\nmn\r\n").as_bytes());
    let got = c.read_until(b"MN\r\n");
    let reply = &got[..got.len() - 4];
    assert!(reply.is_ascii(), "{cmd}: non-ASCII bytes in {:?}", String::from_utf8_lossy(reply));
    String::from_utf8(reply.to_vec()).unwrap()
}

/// The lines of a listing: ends with `\r\n`, no bare `\r` or `\n`, exactly
/// one `END`, the last line; no forged line. Returns the lines before `END`.
fn lines(cmd: &str, reply: &str) -> Vec<String> {
    assert!(reply.ends_with("END\r\n"), "{cmd}: {reply:?}");
    let body = &reply[..reply.len() - 2];
    let lines: Vec<&str> = body.split("\r\n").collect();
    for l in &lines {
        assert!(!l.contains('\r') && !l.contains('\n'), "{cmd}: bare CR/LF in {l:?} of {reply:?}");
        assert!(l.bytes().all(|b| (0x20..0x7f).contains(&b)), "{cmd}: control byte in {l:?}");
        assert!(!l.contains("STAT forged"), "{cmd}: forged line {l:?} in {reply:?}");
    }
    assert_eq!(lines.iter().filter(|l| **l == "END").count(), 1, "{cmd}: {reply:?}");
    assert_eq!(*lines.last().unwrap(), "END");
    lines[..lines.len() - 1].iter().map(|l| l.to_string()).collect()
}

/// `STAT <name> <value>` lines: both words non-empty, no other space.
/// Returns the pairs.
fn stat_pairs(cmd: &str, reply: &str) -> Vec<(String, String)> {
    lines(cmd, reply)
        .iter()
        .map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            assert!(parts.len() == 3 && parts[0] == "STAT" && !parts[1].is_empty() && !parts[2].is_empty(), "{cmd}: malformed {l:?}");
            (parts[1].to_string(), parts[2].to_string())
        })
        .collect()
}

/// A server holding a binary-protocol key and a meta `b` key that both
/// carry [`FORGE`] (stored, then read twice so they are hot), and an
/// ordinary key; `stats detail` on. Returns the server and an admin
/// connection.
fn hostile_server() -> (Larder, Client) {
    let l = Larder::start(&["-t", "2", "-o", "bigkeys_min_size=100"]);
    let mut admin = l.connect();
    admin.expect(b"stats detail on\r\n", b"OK\r\n");

    let value = vec![b'v'; 500];
    // Binary protocol SET (opcode 0x01, extras: flags, exptime), then two
    // GETs (opcode 0x00) so the key is hot.
    let mut bin = l.connect();
    let bkey = binary_key();
    let extras = [0u8, 0, 0, 7, 0, 0, 0, 0];
    assert_eq!(binary(&mut bin, 0x01, &extras, &bkey, &value).0, 0, "binary set");
    for _ in 0..2 {
        let (status, body) = binary(&mut bin, 0x00, &[], &bkey, &[]);
        assert_eq!(status, 0, "binary get");
        assert_eq!(&body[4..], &value[..]);
    }
    // Meta with a base64 key.
    let mut meta = l.connect();
    let mkey = base64(&meta_key());
    meta.send(format!("ms {mkey} {} b\r\n", value.len()).as_bytes());
    meta.send(&value);
    meta.send(b"\r\n");
    assert_eq!(meta.line(), "HD\r\n");
    for _ in 0..2 {
        meta.send(format!("mg {mkey} b v\r\n").as_bytes());
        assert_eq!(meta.line(), format!("VA {}\r\n", value.len()));
        assert_eq!(meta.exact(value.len() + 2).len(), value.len() + 2);
    }
    // An ordinary key beside them, printed as memcached prints it.
    admin.expect(b"set user:1 0 0 200\r\n", &[]);
    admin.send(&[b'u'; 200]);
    admin.expect(b"\r\n", b"STORED\r\n");
    admin.expect(b"get user:1\r\n", &[&b"VALUE user:1 0 200\r\n"[..], &[b'u'; 200], b"\r\nEND\r\n"].concat());
    (l, admin)
}

fn prefix_of(key: &[u8]) -> Vec<u8> {
    key[..key.iter().position(|&b| b == b':').unwrap()].to_vec()
}

#[test]
fn stats_prefixes_escapes_prefixes() {
    let (_l, mut admin) = hostile_server();
    let (bkey, mkey) = (binary_key(), meta_key());
    let (bprefix, mprefix) = (&prefix_of(&bkey)[..], &prefix_of(&mkey)[..]);
    // stats prefixes: both hostile prefixes listed, escaped, decodable.
    let cmd = "stats prefixes";
    let pairs = stat_pairs(cmd, &whole_reply(&mut admin, cmd));
    let rows: Vec<Vec<u8>> = pairs
        .iter()
        .filter_map(|(n, _)| n.strip_prefix("prefix:")?.strip_suffix(":items"))
        .map(unescape)
        .collect();
    for p in [bprefix, mprefix, b"user"] {
        assert!(rows.iter().any(|r| r == p), "{cmd}: prefix {:?} missing from {pairs:?}", String::from_utf8_lossy(p));
    }
    assert!(pairs.iter().any(|(n, v)| n == "prefix:user:items" && v == "1"), "{pairs:?}");
    // The connection is still in step: the next reply is the right one.
    admin.expect(b"version\r\n", b"VERSION ");
}

#[test]
fn stats_hotkeys_escapes_keys() {
    let (_l, mut admin) = hostile_server();
    let (bkey, mkey) = (binary_key(), meta_key());

    // stats hotkeys: the keys come back escaped and decode to the originals.
    let cmd = "stats hotkeys";
    let pairs = stat_pairs(cmd, &whole_reply(&mut admin, cmd));
    let keys: Vec<Vec<u8>> = pairs.iter().filter(|(n, _)| n.ends_with(":key")).map(|(_, v)| unescape(v)).collect();
    for k in [&bkey[..], &mkey, b"user:1"] {
        assert!(keys.iter().any(|r| r == k), "{cmd}: key {:?} missing from {pairs:?}", String::from_utf8_lossy(k));
    }
    assert!(pairs.iter().any(|(n, v)| n.starts_with("hotkey:requests:") && n.ends_with(":key") && v == "user:1"), "{pairs:?}");
}

#[test]
fn stats_bigkeys_escapes_keys_and_prefixes() {
    let (_l, mut admin) = hostile_server();
    let (bkey, mkey) = (binary_key(), meta_key());
    let (bprefix, mprefix) = (&prefix_of(&bkey)[..], &prefix_of(&mkey)[..]);

    // stats bigkeys: keys and prefixes.
    let cmd = "stats bigkeys";
    let pairs = stat_pairs(cmd, &whole_reply(&mut admin, cmd));
    let keys: Vec<Vec<u8>> = pairs.iter().filter(|(n, _)| n.ends_with(":key")).map(|(_, v)| unescape(v)).collect();
    let prefixes: Vec<Vec<u8>> = pairs.iter().filter(|(n, _)| n.ends_with(":prefix")).map(|(_, v)| unescape(v)).collect();
    for (k, p) in [(&bkey[..], bprefix), (&mkey[..], mprefix), (b"user:1", b"user")] {
        assert!(keys.iter().any(|r| r == k), "{cmd}: key {:?} missing from {pairs:?}", String::from_utf8_lossy(k));
        assert!(prefixes.iter().any(|r| r == p), "{cmd}: prefix {:?} missing from {pairs:?}", String::from_utf8_lossy(p));
    }
    assert_eq!(pairs.iter().find(|(n, _)| n == "bigkeys_tracked").map(|(_, v)| v.as_str()), Some("3"), "{pairs:?}");
}

#[test]
fn stats_cachedump_escapes_binary_protocol_keys() {
    let (_l, mut admin) = hostile_server();
    let bkey = binary_key();

    // stats cachedump: the binary-protocol key is listed escaped; the meta
    // `b` key is skipped, as memcached skips ITEM_KEY_BINARY items.
    let cmd = "stats cachedump 1 0";
    let items = lines(cmd, &whole_reply(&mut admin, cmd));
    let mut keys = Vec::new();
    for l in &items {
        let parts: Vec<&str> = l.split(' ').collect();
        assert!(
            parts.len() == 6
                && parts[0] == "ITEM"
                && parts[2].strip_prefix('[').is_some_and(|n| n.parse::<u64>().is_ok())
                && parts[3] == "b;"
                && parts[4].parse::<u64>().is_ok()
                && parts[5] == "s]",
            "{cmd}: malformed {l:?}"
        );
        keys.push(unescape(parts[1]));
    }
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(keys.contains(&bkey) && keys.contains(&b"user:1".to_vec()), "{items:?}");
    assert!(items.contains(&"ITEM user:1 [200 b; 0 s]".to_string()), "{items:?}");
}

#[test]
fn stats_detail_dump_escapes_prefixes() {
    let (_l, mut admin) = hostile_server();
    let (bkey, mkey) = (binary_key(), meta_key());
    let (bprefix, mprefix) = (&prefix_of(&bkey)[..], &prefix_of(&mkey)[..]);

    // stats detail dump: `PREFIX <prefix> get <n> hit <n> set <n> del <n>`.
    let cmd = "stats detail dump";
    let rows = lines(cmd, &whole_reply(&mut admin, cmd));
    let mut names = Vec::new();
    for l in &rows {
        let parts: Vec<&str> = l.split(' ').collect();
        assert!(
            parts.len() == 10
                && parts[0] == "PREFIX"
                && [(2, "get"), (4, "hit"), (6, "set"), (8, "del")].iter().all(|&(i, w)| parts[i] == w)
                && [3, 5, 7, 9].iter().all(|&i| parts[i].parse::<u64>().is_ok()),
            "{cmd}: malformed {l:?}"
        );
        names.push(unescape(parts[1]));
    }
    for p in [bprefix, mprefix, b"user"] {
        assert!(names.iter().any(|r| r == p), "{cmd}: prefix {:?} missing from {rows:?}", String::from_utf8_lossy(p));
    }
    assert!(rows.contains(&"PREFIX user get 1 hit 1 set 1 del 0".to_string()), "{rows:?}");
}
