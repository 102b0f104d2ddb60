//! The formats this crate reproduces, checked live against memcached 1.6.18
//! (`/usr/bin/memcached` or `$MEMCACHED_BIN`; without it these tests fail
//! under CI and are skipped with a `SKIPPED:` message elsewhere: see
//! `larder_testkit::require_or_skip`):
//!
//! * `stats detail dump`: the same traffic is sent to memcached and mirrored
//!   into [`PrefixStats`]; the dumps must hold the same lines (memcached
//!   prints in hash order, larder sorted, so lines are compared as sets).
//! * `lru_crawler metadump all`: every line memcached prints is parsed into
//!   its fields and re-encoded with [`metadump::write_line`]: byte-identical.
//! * `watch fetchers mutations evictions`: the same for every `item_get`,
//!   `item_store` and `eviction` line, re-encoded with [`watch`]'s encoders.

use std::time::Duration;

use larder_observe::metadump::{self, MetadumpItem};
use larder_observe::prefix::{PrefixConfig, PrefixStats};
use larder_observe::watch::{self, GetStatus, StoreCmd, StoreStatus, Timestamp};
use larder_testkit::{Memcached, XorShift64};

fn fields(line: &str) -> std::collections::HashMap<&str, &str> {
    line.split(' ').filter_map(|kv| kv.split_once('=')).collect()
}

fn decode(enc: &str) -> Vec<u8> {
    let b = enc.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&enc[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn sorted_lines(b: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(b).split_inclusive("\r\n").map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn stats_detail_dump_matches_memcached() {
    let Some(mc) = Memcached::start_or_skip(&[]) else { return };
    let mut c = mc.connect();
    let st = PrefixStats::new(PrefixConfig::default());
    let mut w = st.worker();
    assert_eq!(c.roundtrip(b"stats detail on\r\n", b"\r\n"), b"OK\r\n");
    st.set_detail(true);

    let mut stored = std::collections::HashSet::new();
    let mut r = XorShift64(12345);
    for _ in 0..600 {
        let x = r.next_u64();
        let prefix = ["user", "item", "", "sess", "a-b.c"][(x % 5) as usize];
        let key = if x % 17 == 0 { format!("nodelim{}", x % 7) } else { format!("{prefix}:{}", (x >> 8) % 20) };
        match (x >> 16) % 3 {
            0 => {
                c.roundtrip(format!("set {key} 0 0 2\r\nhi\r\n").as_bytes(), b"\r\n");
                w.on_set(key.as_bytes(), 60, stored.contains(&key).then_some(60));
                stored.insert(key);
            }
            1 => {
                let r = c.roundtrip(format!("get {key}\r\n").as_bytes(), b"END\r\n");
                let hit = r.starts_with(b"VALUE");
                assert_eq!(hit, stored.contains(&key));
                w.on_get(key.as_bytes(), hit, if hit { 2 } else { 0 });
            }
            _ => {
                let r = c.roundtrip(format!("delete {key}\r\n").as_bytes(), b"\r\n");
                let found = r == b"DELETED\r\n";
                assert_eq!(found, stored.remove(&key));
                w.on_delete(key.as_bytes(), found.then_some(60));
            }
        }
    }
    let theirs = c.roundtrip(b"stats detail dump\r\n", b"END\r\n");
    let mut ours = Vec::new();
    st.render_detail_dump(&mut ours);
    assert_eq!(sorted_lines(&theirs), sorted_lines(&ours));
    assert!(ours.starts_with(b"PREFIX  get "), "{}", String::from_utf8_lossy(&ours));

    // stats reset clears, detail off stops counting
    assert_eq!(c.roundtrip(b"stats reset\r\n", b"\r\n"), b"RESET\r\n");
    st.reset();
    assert_eq!(c.roundtrip(b"stats detail dump\r\n", b"END\r\n"), b"END\r\n");
    assert_eq!(c.roundtrip(b"stats detail off\r\n", b"\r\n"), b"OK\r\n");
    st.set_detail(false);
    c.roundtrip(b"get user:1\r\n", b"END\r\n");
    w.on_get(b"user:1", false, 0);
    let mut ours = Vec::new();
    st.render_detail_dump(&mut ours);
    assert_eq!(c.roundtrip(b"stats detail dump\r\n", b"END\r\n"), ours);
}

#[test]
fn metadump_and_watch_lines_reencode_byte_exact() {
    let Some(mc) = Memcached::start_or_skip(&["-m", "2", "-o", "watcher_logbuf_size=1024"]) else { return };
    let mut watcher = mc.connect();
    assert_eq!(watcher.roundtrip(b"watch fetchers mutations evictions\r\n", b"\r\n"), b"OK\r\n");
    let mut c = mc.connect();
    let big = vec![b'v'; 100_000];
    let mut cmds: Vec<u8> = Vec::new();
    cmds.extend_from_slice(b"set foo:1 5 0 3\r\nabc\r\nset foo:2 0 100 10\r\n0123456789\r\n");
    cmds.extend_from_slice("set sp%ace\u{e9}/x~y_z.w-v 0 0 1\r\nq\r\n".as_bytes());
    cmds.extend_from_slice(b"add foo:1 0 0 1\r\nx\r\nreplace nope 0 0 1\r\nx\r\nappend foo:1 0 0 1\r\nd\r\n");
    cmds.extend_from_slice(b"prepend foo:1 0 0 1\r\n_\r\ncas foo:2 0 0 1 999\r\nx\r\nget foo:1 foo:2 nope\r\ndelete foo:2\r\n");
    for i in 0..60 {
        // 6 MB through a 2 MB cache: evictions
        cmds.extend_from_slice(format!("set fill:{i} 0 0 {}\r\n", big.len()).as_bytes());
        cmds.extend_from_slice(&big);
        cmds.extend_from_slice(b"\r\n");
    }
    cmds.extend_from_slice(b"get foo:1\r\n");
    let r = c.roundtrip(&cmds, b"END\r\n");
    assert!(r.ends_with(b"END\r\nEND\r\n") || r.ends_with(b"END\r\n"));

    // metadump
    let dump = c.roundtrip(b"lru_crawler metadump all\r\n", b"END\r\n");
    let text = String::from_utf8(dump).unwrap();
    let mut n = 0;
    let mut ours = Vec::new();
    for line in text.strip_suffix("END\r\n").unwrap().lines() {
        let f = fields(line);
        let key = decode(f["key"]);
        let exp: i64 = f["exp"].parse().unwrap();
        let mut one = Vec::new();
        metadump::write_line(
            &mut one,
            &MetadumpItem {
                key: &key,
                exptime: (exp >= 0).then_some(exp as u64),
                last_access: f["la"].parse().unwrap(),
                cas: f["cas"].parse().unwrap(),
                fetched: f["fetch"] == "yes",
                class: f["cls"].parse().unwrap(),
                size: f["size"].parse().unwrap(),
                flags: f.get("flags").map_or(0, |v| v.parse().unwrap()),
            },
        );
        // memcached before 1.6.24 (the installed 1.6.18) prints no flags=.
        if !f.contains_key("flags") {
            let at = one.windows(7).rposition(|w| w == b" flags=").unwrap();
            one.truncate(at);
            one.push(b'\n');
        }
        ours.extend_from_slice(&one);
        n += 1;
    }
    metadump::write_end(&mut ours);
    assert_eq!(String::from_utf8(ours).unwrap(), text);
    assert!(n >= 3 && text.contains("key=sp%25ace%C3%A9%2Fx~y_z.w-v "), "{text}");

    // watch: give the logger thread a moment, then read what it sent
    std::thread::sleep(Duration::from_millis(500));
    let log = String::from_utf8(watcher.read_for(Duration::from_millis(500))).unwrap();
    let (mut gets, mut stores, mut evictions) = (0, 0, 0);
    for line in log.lines() {
        let f = fields(line);
        let (secs, usecs) = f["ts"].split_once('.').unwrap();
        let ts = Timestamp { secs: secs.parse().unwrap(), usecs: usecs.parse().unwrap() };
        let gid: u64 = f["gid"].parse().unwrap();
        let key = decode(f["key"]);
        let mut ours = Vec::new();
        match f["type"] {
            "item_get" => {
                gets += 1;
                let status = match f["status"] {
                    "found" => GetStatus::Found,
                    "not_found" => GetStatus::NotFound,
                    "flushed" => GetStatus::Flushed,
                    "expired" => GetStatus::Expired,
                    s => panic!("{s}"),
                };
                watch::item_get(&mut ours, ts, gid, &key, status, f["clsid"].parse().unwrap(), f["cfd"].parse().unwrap(), f["size"].parse().unwrap());
            }
            "item_store" => {
                stores += 1;
                let status = match f["status"] {
                    "not_stored" => StoreStatus::NotStored,
                    "stored" => StoreStatus::Stored,
                    "exists" => StoreStatus::Exists,
                    "not_found" => StoreStatus::NotFound,
                    "too_large" => StoreStatus::TooLarge,
                    "no_memory" => StoreStatus::NoMemory,
                    s => panic!("{s}"),
                };
                let cmd = match f["cmd"] {
                    "add" => StoreCmd::Add,
                    "set" => StoreCmd::Set,
                    "replace" => StoreCmd::Replace,
                    "append" => StoreCmd::Append,
                    "prepend" => StoreCmd::Prepend,
                    "cas" => StoreCmd::Cas,
                    s => panic!("{s}"),
                };
                watch::item_store(
                    &mut ours,
                    ts,
                    gid,
                    &key,
                    status,
                    cmd,
                    f["ttl"].parse().unwrap(),
                    f["clsid"].parse().unwrap(),
                    f["cfd"].parse().unwrap(),
                    f["size"].parse().unwrap(),
                );
            }
            "eviction" => {
                evictions += 1;
                watch::eviction(
                    &mut ours,
                    ts,
                    gid,
                    &key,
                    f["fetch"] == "yes",
                    f["ttl"].parse().unwrap(),
                    f["la"].parse().unwrap(),
                    f["clsid"].parse().unwrap(),
                    f["size"].parse().unwrap(),
                );
            }
            other => panic!("unexpected line type {other}: {line}"),
        }
        assert_eq!(String::from_utf8(ours).unwrap(), format!("{line}\n"));
    }
    assert!(gets > 0 && stores > 0 && evictions > 0, "gets {gets} stores {stores} evictions {evictions}\n{log}");
}
