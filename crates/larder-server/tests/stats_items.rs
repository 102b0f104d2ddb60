//! `stats items`: `age` (seconds since the oldest live data was written),
//! `evicted`, `evicted_nonzero` (evicted items that had an expiry time) and
//! `evicted_time` (how long the latest evicted item had gone unaccessed),
//! which dashboards read as the cache's eviction age. The clock is moved
//! with `debugtime` (enabled by `-o debugtime`).

mod common;

use common::{Client, Larder};
use std::collections::HashMap;

fn items(c: &mut Client) -> HashMap<String, u64> {
    c.stats("items").into_iter().map(|(k, v)| (k, v.parse().unwrap())).collect()
}

fn fill(c: &mut Client, prefix: &str, n: usize, exptime: u32, value: &[u8]) {
    let mut req = Vec::new();
    for i in 0..n {
        req.extend_from_slice(format!("set {prefix}{i} 0 {exptime} {} noreply\r\n", value.len()).as_bytes());
        req.extend_from_slice(value);
        req.extend_from_slice(b"\r\n");
    }
    c.send(&req);
    c.expect(b"mn\r\n", b"MN\r\n");
}

#[test]
fn age_and_eviction_age_follow_the_clock() {
    let l = Larder::start(&["-m", "64", "-t", "1", "-o", "debugtime"]);
    let mut c = l.connect();
    c.expect(b"stats items\r\n", b"END\r\n");

    let value = vec![b'o'; 1000];
    // 20 MB that expire in an hour (a nonzero exptime, and a TTL class of
    // their own: the segments they fill hold nothing else)...
    fill(&mut c, "old", 20_000, 3600, &value);
    let s = items(&mut c);
    assert_eq!(s["items:1:number"], 20_000);
    assert!(s["items:1:age"] <= 1, "{s:?}");
    assert_eq!(s["items:1:evicted"], 0);
    assert_eq!(s["items:1:evicted_time"], 0);

    c.expect(b"debugtime 100\r\n", b"OK\r\n");
    let age = items(&mut c)["items:1:age"];
    assert!((100..=102).contains(&age), "age {age}");

    // ... then, 100 s later, 50 MB that never expire: into -m 64 only by
    // evicting the oldest data, which is the unread `old` items.
    fill(&mut c, "new", 50_000, 0, &value);
    let s = items(&mut c);
    let evicted = s["items:1:evicted"];
    assert!(evicted > 1000, "{s:?}");
    assert_eq!(s["items:1:evicted_nonzero"], evicted, "only `old` items (with an exptime) went: {s:?}");
    assert!((100..=103).contains(&s["items:1:evicted_time"]), "idle since written: {s:?}");
    assert_eq!(c.stat("evictions"), evicted);
    // Some `old` items remain: they are still the oldest data.
    assert!(evicted < 20_000, "{s:?}");
    assert!((100..=103).contains(&s["items:1:age"]), "{s:?}");

    // Once every `old` item is gone, the oldest data is the `new` items.
    for i in 0..20_000 {
        c.send(format!("delete old{i} noreply\r\n").as_bytes());
    }
    c.expect(b"mn\r\n", b"MN\r\n");
    c.expect(b"debugtime 30\r\n", b"OK\r\n");
    let s = items(&mut c);
    assert!((30..=33).contains(&s["items:1:age"]), "{s:?}");
}

/// `stats slabs` `total_malloced` follows the memory taken from `-m`,
/// large objects included (it counted only regular segments, so 64 KiB
/// values at `-m 3` left it flat), and falls when deletes under a lowered
/// `cache_memlimit` hand buffers back, as memcached's t/dyn-maxbytes.t
/// expects.
#[test]
fn total_malloced_follows_the_memory_in_use() {
    let l = Larder::start(&["-m", "3", "-t", "1"]);
    let mut c = l.connect();
    let malloced = |c: &mut Client| -> u64 {
        c.stats("slabs").into_iter().find(|(k, _)| k == "total_malloced").map(|(_, v)| v.parse().unwrap()).unwrap_or(0)
    };
    let value = vec![b'B'; 66560];
    fill(&mut c, "key", 20, 0, &value);
    let before = malloced(&mut c);
    assert!(before >= 20 * 66560, "{before}");
    c.expect(b"cache_memlimit 16\r\n", b"OK\r\n");
    fill(&mut c, "more", 150, 0, &value);
    let full = malloced(&mut c);
    assert!(full >= before + 150 * 66560, "{before} -> {full}");
    // memcached refuses less than 8 MB (MEMLIMIT_TOO_SMALL)
    c.expect(b"cache_memlimit 8\r\n", b"OK\r\n");
    for i in 0..150 {
        c.send(format!("delete more{i} noreply\r\n").as_bytes());
    }
    c.expect(b"mn\r\n", b"MN\r\n");
    let after = malloced(&mut c);
    assert!(after < full - 100 * 66560, "{full} -> {after}");
}

/// `stats cachedump <class> <limit>` with memcached's replies, and the
/// split between `stats` (memcached's fields only) and `stats larder`.
#[test]
fn cachedump_and_stats_larder() {
    let l = Larder::start(&["-t", "1"]);
    let mut c = l.connect();
    c.expect(b"set foo 0 0 6\r\nfooval\r\n", b"STORED\r\n");
    c.expect(b"set bar 5 0 3\r\nabc\r\n", b"STORED\r\n");
    // (shard by shard: the order of keys in different shards depends on
    // the hash seed)
    let dump = |c: &mut Client, cmd: &[u8]| -> Vec<String> {
        c.send(cmd);
        let mut lines = Vec::new();
        loop {
            let line = c.line();
            if line == "END\r\n" {
                return lines;
            }
            lines.push(line);
        }
    };
    let mut all = dump(&mut c, b"stats cachedump 1 100\r\n");
    all.sort();
    assert_eq!(all, ["ITEM bar [3 b; 0 s]\r\n", "ITEM foo [6 b; 0 s]\r\n"]);
    let one = dump(&mut c, b"stats cachedump 1 1\r\n");
    assert!(one.len() == 1 && all.contains(&one[0]), "{one:?}");
    c.expect(b"stats cachedump 2 0\r\n", b"END\r\n");
    c.expect(b"stats cachedump 1\r\n", b"CLIENT_ERROR bad command line\r\n");
    c.expect(b"stats cachedump x 1\r\n", b"CLIENT_ERROR bad command line format\r\n");
    c.expect(b"stats cachedump 64 1\r\n", b"CLIENT_ERROR Illegal slab id\r\n");
    // an absolute unix expiry
    c.expect(b"set ttl 0 1000 1\r\nx\r\n", b"STORED\r\n");
    let lines = dump(&mut c, b"stats cachedump 1 0\r\n");
    let ttl = lines.iter().find(|l| l.starts_with("ITEM ttl ")).expect("ttl listed");
    let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let expiry: u64 = ttl.trim_end().trim_start_matches("ITEM ttl [1 b; ").trim_end_matches(" s]").parse().unwrap();
    assert!((unix + 995..=unix + 1002).contains(&expiry), "{ttl} vs now {unix}");

    let general = c.stats("");
    assert!(general.iter().all(|(k, _)| !k.starts_with("larder_")), "{general:?}");
    let ours = c.stats("larder");
    assert!(ours.iter().any(|(k, v)| k == "larder_version" && v == env!("CARGO_PKG_VERSION")), "{ours:?}");
    assert!(ours.iter().all(|(k, _)| k.starts_with("larder_")), "{ours:?}");

    let l = Larder::start(&["-t", "1", "-X"]);
    l.connect().expect(b"stats cachedump 1 1\r\n", b"CLIENT_ERROR stats cachedump not allowed\r\n");
}

/// `stats slabs` counts chunks as memcached does, one per item, whatever
/// shards (and so segments) the keys fall in: memcached's t/issue_29.t
/// stores two empty items and wants `1:used_chunks` 1 then 2. Pages are
/// segments; a chunk is an item of the mean size.
#[test]
fn used_chunks_counts_items() {
    let l = Larder::start(&["-t", "2"]);
    let mut c = l.connect();
    let slabs = |c: &mut Client| -> HashMap<String, u64> {
        c.stats("slabs").into_iter().filter_map(|(k, v)| Some((k, v.parse().ok()?))).collect()
    };
    for n in 1..=40u64 {
        c.expect(format!("set k{n} 0 0 0\r\n\r\n").as_bytes(), b"STORED\r\n");
        assert_eq!(slabs(&mut c)["1:used_chunks"], n);
    }
    fill(&mut c, "v", 500, 0, &[b'x'; 300]);
    let s = slabs(&mut c);
    assert_eq!(s["1:used_chunks"], 540);
    assert_eq!(s["1:total_chunks"], s["1:chunks_per_page"] * s["1:total_pages"]);
    assert_eq!(s["1:free_chunks"], s["1:total_chunks"] - 540);
    assert!((200..400).contains(&s["1:chunk_size"]), "mean item size: {s:?}");
}
