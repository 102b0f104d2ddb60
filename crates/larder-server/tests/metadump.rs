//! `lru_crawler metadump all|<classes> [prefix=<p>]`: memcached's line
//! format (1.6.43's: `OK` first, each line ending in a space), streamed
//! shard by shard, END; refused under -X as memcached does.
//! `lru_crawler mgdump` (memcached 1.6.19, with 1.6.43's `OK` first), and
//! `mn` before a dump on one connection (memcached flushes at `mn`).

mod common;

use common::{Client, Larder};
use std::collections::HashSet;

fn dump(c: &mut Client, cmd: &str) -> Vec<String> {
    c.send(format!("{cmd}\r\n").as_bytes());
    assert_eq!(c.line(), "OK\r\n", "memcached 1.6.43 begins a dump with OK");
    let mut lines = Vec::new();
    loop {
        let l = c.line();
        assert!(!l.is_empty(), "closed during metadump");
        if l == "END\r\n" {
            return lines;
        }
        assert!(l.ends_with(" \n") && !l.ends_with("\r\n"), "{l:?}");
        lines.push(l.trim_end().to_string());
    }
}

#[test]
fn metadump_lists_live_items_in_memcacheds_format() {
    let l = Larder::start(&["-t", "2"]);
    let mut c = l.connect();
    c.expect(b"set user:1 5 0 2\r\nhi\r\n", b"STORED\r\n");
    c.expect(b"set user:2 0 100 3\r\nabc\r\n", b"STORED\r\n");
    c.expect(b"set sp%\xc3\xa9 0 0 1\r\nx\r\n", b"STORED\r\n");
    c.expect(b"set sess:1 0 0 1\r\nx\r\n", b"STORED\r\n");
    c.expect(b"set gone 0 0 1\r\nx\r\n", b"STORED\r\n");
    c.expect(b"delete gone\r\n", b"DELETED\r\n");
    c.expect(b"get user:1\r\n", b"VALUE user:1 5 2\r\nhi\r\nEND\r\n");
    let lines = dump(&mut c, "lru_crawler metadump all");
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("key=sp%25%C3%A9 exp=-1 ")), "{lines:?}");
    let u1 = lines.iter().find(|l| l.starts_with("key=user%3A1 ")).expect("user:1");
    let f: Vec<&str> = u1.split(' ').collect();
    assert_eq!(f[0], "key=user%3A1");
    assert_eq!(f[1], "exp=-1");
    assert!(f[2].starts_with("la=1") && f[2].len() == 13, "{u1}");
    assert!(f[3].starts_with("cas=") && f[3] != "cas=0");
    assert_eq!(f[4], "fetch=yes");
    assert_eq!(f[5], "cls=1");
    // memcached 1.6.24: size= is the item's size as `me` gives it, then flags=.
    assert_eq!(f[6], "size=71");
    assert_eq!(f[7], "flags=5");
    let u2 = lines.iter().find(|l| l.starts_with("key=user%3A2 ")).unwrap();
    assert!(u2.contains(" fetch=no "), "{u2}");
    let exp: i64 = u2.split(' ').nth(1).unwrap()[4..].parse().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    assert!((exp - (now + 100)).abs() <= 2, "{u2}");

    // larder's prefix filter.
    let lines = dump(&mut c, "lru_crawler metadump all prefix=user");
    assert_eq!(lines.len(), 2, "{lines:?}");
    // The connection goes on serving afterwards, pipelined requests included.
    c.send(b"lru_crawler metadump 1 prefix=sess\r\nget sess:1\r\n");
    assert_eq!(c.line(), "OK\r\n");
    assert!(c.line().starts_with("key=sess%3A1 "));
    assert_eq!(c.line(), "END\r\n");
    assert_eq!(c.line(), "VALUE sess:1 0 1\r\n");
    c.line();
    assert_eq!(c.line(), "END\r\n");
    c.expect(b"lru_crawler metadump\r\n", b"ERROR\r\n");
}

#[test]
fn a_dump_of_many_segments_per_shard_lists_every_item_once() {
    // 40 MB in -m 64 (1 MiB segments, 8 shards): several dump steps per shard.
    let l = Larder::start(&["-t", "2", "-m", "64"]);
    let mut c = l.connect();
    let n = 40_000;
    let value = "v".repeat(1000);
    let mut req = Vec::new();
    for i in 0..n {
        req.extend_from_slice(format!("set big:{i:06} 0 0 1000 noreply\r\n{value}\r\n").as_bytes());
    }
    c.send(&req);
    c.expect(b"mn\r\n", b"MN\r\n");
    let curr = c.stat("curr_items") as usize;
    let lines = dump(&mut c, "lru_crawler metadump all");
    let keys: HashSet<&str> = lines.iter().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(keys.len(), lines.len(), "a key listed twice");
    assert_eq!(lines.len(), curr);
    assert!(curr > 30_000, "{curr}");
}

#[test]
fn a_large_dump_streams_every_item() {
    let l = Larder::start(&["-t", "2", "-m", "256"]);
    let mut c = l.connect();
    let n = 60_000;
    let mut req = Vec::new();
    for i in 0..n {
        req.extend_from_slice(format!("set key:{i:06} 0 0 10 noreply\r\n0123456789\r\n").as_bytes());
    }
    c.send(&req);
    c.expect(b"mn\r\n", b"MN\r\n");
    let lines = dump(&mut c, "lru_crawler metadump all");
    let keys: HashSet<&str> = lines.iter().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(keys.len(), n);
    c.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
}

#[test]
fn metadump_refused_under_x() {
    let l = Larder::start(&["-t", "1", "-X"]);
    let mut c = l.connect();
    c.expect(b"lru_crawler metadump all\r\n", b"ERROR metadump not allowed\r\n");
    // memcached 1.6.37: -X refuses stats detail as well.
    c.expect(b"stats detail on\r\n", b"CLIENT_ERROR stats detail not allowed\r\n");
    c.expect(b"stats detail dump\r\n", b"CLIENT_ERROR stats detail not allowed\r\n");
    let l = Larder::start(&["-t", "1", "-o", "no_lru_crawler"]);
    let mut c = l.connect();
    c.expect(b"lru_crawler metadump all\r\n", b"CLIENT_ERROR lru crawler disabled\r\n");
}

#[test]
fn mgdump_lists_keys_as_mg_commands() {
    let l = Larder::start(&["-t", "2"]);
    let mut c = l.connect();
    c.expect(b"set a 1 0 1\r\nA\r\n", b"STORED\r\n");
    // The key "a\r\nb", which only a base64 key (meta b flag) can carry.
    c.expect(b"ms YQ0KYg== 1 b\r\nx\r\n", b"HD\r\n");
    c.send(b"lru_crawler mgdump all\r\n");
    assert_eq!(c.line(), "OK\r\n");
    let mut lines = vec![c.line(), c.line()];
    lines.sort();
    assert_eq!(lines, ["mg YQ0KYg== b\r\n", "mg a\r\n"]);
    assert_eq!(c.line(), "EN\r\n");
    c.expect(b"lru_crawler mgdump 99999\r\n", b"BADCLASS invalid class id\r\n");
    c.expect(b"lru_crawler mgdump\r\n", b"ERROR\r\n");
    // Behind an unsent reply it is refused, as memcached refuses it ...
    c.send(b"get a\r\nlru_crawler mgdump all\r\n");
    assert_eq!(c.line(), "VALUE a 1 1\r\n");
    c.line();
    assert_eq!(c.line(), "END\r\n");
    assert_eq!(c.line(), "ERROR cannot pipeline other commands before mgdump\r\n");
    // ... but not behind mn, after which memcached writes every reply out.
    c.send(b"get a\r\nmn\r\nlru_crawler metadump all\r\n");
    assert_eq!(c.line(), "VALUE a 1 1\r\n");
    c.line();
    assert_eq!(c.line(), "END\r\n");
    assert_eq!(c.line(), "MN\r\n");
    assert_eq!(c.line(), "OK\r\n");
    assert!(c.line().starts_with("key="));
    assert!(c.line().starts_with("key="));
    assert_eq!(c.line(), "END\r\n");
    let l = Larder::start(&["-t", "1", "-X"]);
    let mut c = l.connect();
    c.expect(b"lru_crawler mgdump all\r\n", b"ERROR key dump not allowed\r\n");
}
