//! larder-client against real larder servers (the workspace's release
//! binary, `cargo build --release -p larder-server`): placement compared
//! with pylibmc's, CRUD, multi-get, the pool's bound, single flight and
//! leases, the near cache's TTL cap and byte bound; the invalidation
//! stream's end-to-end cases; and a server without `track` (memcached).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use common::{addrs, python_with_pylibmc, start_nodes};
use larder_client::{Client, Config, Error, Invalidation, KeyHash, NearConfig};

fn near(max_bytes: u64, max_ttl: Duration, invalidation: Invalidation) -> Option<NearConfig> {
    Some(NearConfig { max_bytes, max_ttl, invalidation })
}

fn placement_matches(hash: KeyHash, name: &str) {
    let Some(py) = larder_testkit::require_or_skip(python_with_pylibmc(), "a Python with pylibmc", "scripts/test creates tests/.work/venv") else {
        return;
    };
    let nodes = start_nodes(3, &[]);
    let servers = addrs(&nodes);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pylibmc_placement.py");
    let out = std::process::Command::new(py).arg(script).arg(name).arg("1200").args(&servers).output().unwrap();
    assert!(out.status.success(), "pylibmc script failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut cfg = Config::new(servers);
    cfg.hash = hash;
    let c = Client::new(cfg).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut per_node = [0usize; 3];
    let mut n = 0;
    for line in text.lines() {
        let (key, idx) = line.split_once('\t').unwrap();
        let idx: usize = idx.parse().unwrap();
        assert_eq!(c.node_index(key), idx, "key {key:?}: libmemcached put it on node {idx}");
        per_node[idx] += 1;
        n += 1;
    }
    assert!(n > 1500, "{n} keys compared");
    assert!(per_node.iter().all(|&k| k > n / 6), "spread {per_node:?}");
    // and our own reads find every key pylibmc wrote
    for line in text.lines().take(200) {
        let key = line.split_once('\t').unwrap().0;
        assert_eq!(c.get(key).unwrap().as_deref(), Some(&b"v"[..]), "{key}");
    }
}

#[test]
fn placement_matches_libmemcached_ketama_default_hash() {
    placement_matches(KeyHash::OneAtATime, "default");
}

#[test]
fn placement_matches_libmemcached_ketama_md5_hash() {
    placement_matches(KeyHash::Md5, "md5");
}

#[test]
fn crud() {
    let nodes = start_nodes(1, &[]);
    let c = Client::new(Config::new(addrs(&nodes))).unwrap();
    assert_eq!(c.get("nope").unwrap(), None);
    c.set("a", b"one", 0).unwrap();
    assert_eq!(c.get("a").unwrap().as_deref(), Some(&b"one"[..]));
    c.set("a", b"", 0).unwrap();
    assert_eq!(c.get("a").unwrap().as_deref(), Some(&b""[..]));
    let big = vec![7u8; 300_000];
    c.set("big", &big, 0).unwrap();
    assert_eq!(c.get("big").unwrap().as_deref(), Some(&big[..]));
    assert!(c.delete("a").unwrap());
    assert!(!c.delete("a").unwrap());
    assert_eq!(c.get("a").unwrap(), None);
    assert!(matches!(c.get("has space"), Err(Error::BadKey(_))));
    c.set("short", b"x", 1).unwrap();
    thread::sleep(Duration::from_millis(2100));
    assert_eq!(c.get("short").unwrap(), None, "expired after its TTL");
    let m = c.metrics();
    assert_eq!((m.server_hits, m.misses), (3, 3), "{m:?}");
}

#[test]
fn multi_get_across_nodes() {
    let nodes = start_nodes(3, &[]);
    let c = Client::new(Config::new(addrs(&nodes))).unwrap();
    let keys: Vec<String> = (0..300).map(|i| format!("mk{i}")).collect();
    for k in keys.iter().step_by(2) {
        c.set(k, format!("val-{k}").as_bytes(), 0).unwrap();
    }
    let refs: Vec<&str> = keys.iter().map(|s| s.as_str()).collect();
    let got = c.get_multi(&refs).unwrap();
    assert_eq!(got.len(), 150);
    for (i, k) in keys.iter().enumerate() {
        match got.get(k) {
            Some(v) => assert_eq!(&v[..], format!("val-{k}").as_bytes()),
            None => assert!(i % 2 == 1, "{k} missing"),
        }
    }
    let used: std::collections::HashSet<usize> = keys.iter().map(|k| c.node_index(k)).collect();
    assert_eq!(used.len(), 3);
    // the pipelined connections are clean afterwards
    assert_eq!(c.get("mk0").unwrap().as_deref(), Some(&b"val-mk0"[..]));
}

#[test]
fn pool_is_bounded_and_reused() {
    let nodes = start_nodes(1, &[]);
    let mut cfg = Config::new(addrs(&nodes));
    cfg.pool_size = 3;
    let c = Arc::new(Client::new(cfg).unwrap());
    c.set("p", b"v", 0).unwrap();
    let hs: Vec<_> = (0..12)
        .map(|_| {
            let c = c.clone();
            thread::spawn(move || {
                for _ in 0..300 {
                    assert_eq!(c.get("p").unwrap().as_deref(), Some(&b"v"[..]));
                    assert!(c.pool_counts(0).0 <= 3);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let (open, idle) = c.pool_counts(0);
    assert!((1..=3).contains(&open) && idle == open, "open {open} idle {idle}");
    let mut raw = nodes[0].connect();
    let conns = raw.stat("curr_connections");
    assert!(conns <= 3 + 1 + 2, "server sees {conns} connections");
}

#[test]
fn single_flight_in_process_one_load() {
    let nodes = start_nodes(1, &[]);
    let c = Arc::new(Client::new(Config::new(addrs(&nodes))).unwrap());
    let loads = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Barrier::new(32));
    let hs: Vec<_> = (0..32)
        .map(|_| {
            let (c, loads, gate) = (c.clone(), loads.clone(), gate.clone());
            thread::spawn(move || {
                gate.wait();
                c.get_or_load("hot", 60, || {
                    loads.fetch_add(1, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(200));
                    Ok::<_, String>(b"loaded".to_vec())
                })
                .unwrap()
            })
        })
        .collect();
    for h in hs {
        assert_eq!(&h.join().unwrap()[..], b"loaded");
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    assert_eq!(c.metrics().loads, 1);
    assert_eq!(c.get("hot").unwrap().as_deref(), Some(&b"loaded"[..]), "the loaded value was stored");
}

#[test]
fn leases_one_load_across_clients() {
    // Four clients with their own pools and flight tables, as four processes
    // would be: only the server's lease can keep them to one load.
    let nodes = start_nodes(1, &[]);
    let loads = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Barrier::new(4 * 6));
    let mut hs = Vec::new();
    for _ in 0..4 {
        let c = Arc::new(Client::new(Config::new(addrs(&nodes))).unwrap());
        for _ in 0..6 {
            let (c, loads, gate) = (c.clone(), loads.clone(), gate.clone());
            hs.push(thread::spawn(move || {
                gate.wait();
                c.get_or_load("shared", 60, || {
                    loads.fetch_add(1, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(300));
                    Ok::<_, String>(b"once".to_vec())
                })
                .unwrap()
            }));
        }
    }
    for h in hs {
        assert_eq!(&h.join().unwrap()[..], b"once");
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1);
}

#[test]
fn a_z_waiter_gets_the_winners_value_and_a_failed_load_frees_the_lease() {
    let nodes = start_nodes(1, &[]);
    let mut raw = nodes[0].connect();
    // another "process" wins the lease
    let won = raw.roundtrip(b"mg lk v c t N30\r\n", b"\r\n\r\n");
    assert!(String::from_utf8_lossy(&won).contains(" W"), "{}", String::from_utf8_lossy(&won));
    let c = Arc::new(Client::new(Config::new(addrs(&nodes))).unwrap());
    let c2 = c.clone();
    let waiter = thread::spawn(move || c2.get_or_load("lk", 60, || Ok::<_, String>(b"mine".to_vec())).unwrap());
    thread::sleep(Duration::from_millis(150));
    raw.expect(b"ms lk 6 T60\r\ntheirs\r\n", b"HD\r\n");
    assert_eq!(&waiter.join().unwrap()[..], b"theirs");
    assert_eq!(c.metrics().loads, 0);

    let e = c.get_or_load("fails", 60, || Err::<Vec<u8>, _>("backend down")).unwrap_err();
    assert!(matches!(e, Error::Load(ref s) if s.contains("backend down")), "{e:?}");
    let t0 = Instant::now();
    let v = c.get_or_load("fails", 60, || Ok::<_, String>(b"ok".to_vec())).unwrap();
    assert_eq!(&v[..], b"ok");
    assert!(t0.elapsed() < Duration::from_secs(1), "the failed loader gave the lease back");
}

/// The lease race: another process `set`s the key while our loader runs (the
/// set lands, deterministically, between the load and the store). The store
/// is gated by the lease's CAS, so the newer value stays on the server and
/// the loaded one is returned but cached nowhere. With a plain `ms` the older
/// loaded value overwrote the newer one.
#[test]
fn a_set_between_the_load_and_the_store_wins_over_the_loaded_value() {
    let nodes = start_nodes(1, &[]);
    let c = tracked(&nodes, Invalidation::Tracking);
    let mut other = nodes[0].connect();
    let v = c
        .get_or_load("race", 60, || {
            other.expect(b"ms race 5 T60\r\nnewer\r\n", b"HD\r\n");
            Ok::<_, String>(b"older".to_vec())
        })
        .unwrap();
    assert_eq!(&v[..], b"older", "the caller gets what it loaded");
    assert_eq!(c.metrics().lease_lost, 1);
    let mut check = nodes[0].connect();
    check.expect(b"mg race v\r\n", b"VA 5\r\nnewer\r\n");
    // and the near cache holds no copy of the loaded value
    c.sync_invalidations(Duration::from_secs(5)).unwrap();
    assert_eq!(c.get("race").unwrap().as_deref(), Some(&b"newer"[..]));
    assert_eq!(c.get("race").unwrap().as_deref(), Some(&b"newer"[..]), "now from the near cache");

    // the same when we stopped waiting for an absent winner (`Z`) and loaded
    // ourselves: the winner's late store lands during our load
    let mut winner = nodes[0].connect();
    let won = winner.roundtrip(b"mg late v c t N30\r\n", b"\r\n\r\n");
    let won = String::from_utf8_lossy(&won).to_string();
    let cas = won.split(' ').find_map(|w| w.strip_prefix('c')).unwrap_or_else(|| panic!("{won}"));
    let mut cfg = Config::new(addrs(&nodes));
    cfg.lease_wait = Duration::from_millis(100);
    let c2 = Client::new(cfg).unwrap();
    let v = c2
        .get_or_load("late", 60, || {
            winner.expect(format!("ms late 6 T60 C{cas}\r\ntheirs\r\n").as_bytes(), b"HD\r\n");
            Ok::<_, String>(b"mine".to_vec())
        })
        .unwrap();
    assert_eq!(&v[..], b"mine");
    assert_eq!(c2.metrics().lease_lost, 1);
    check.expect(b"mg late v\r\n", b"VA 6\r\ntheirs\r\n");

    // no race: the loaded value is stored
    c2.get_or_load("calm", 60, || Ok::<_, String>(b"loaded".to_vec())).unwrap();
    assert_eq!(c2.metrics().lease_lost, 1);
    check.expect(b"mg calm v\r\n", b"VA 6\r\nloaded\r\n");
}

#[test]
fn near_cache_ttl_is_capped_by_the_server_and_the_maximum() {
    let nodes = start_nodes(1, &[]);
    let mut cfg = Config::new(addrs(&nodes));
    cfg.near = near(1 << 20, Duration::from_millis(1500), Invalidation::TtlOnly);
    let c = Client::new(cfg).unwrap();
    // server TTL 3 s: near copy for at most 2 s (t3 less a second)
    let mut raw = nodes[0].connect();
    raw.expect(b"set s3 0 3 1\r\na\r\n", b"STORED\r\n");
    raw.expect(b"set forever 0 0 1\r\nb\r\n", b"STORED\r\n");
    c.get("s3").unwrap();
    c.get("forever").unwrap();
    assert_eq!(c.metrics().server_hits, 2);
    c.get("s3").unwrap();
    c.get("forever").unwrap();
    assert_eq!(c.metrics().near_hits, 2);
    // the maximum (1.5 s) ends the no-TTL item's copy
    thread::sleep(Duration::from_millis(1700));
    c.get("forever").unwrap();
    assert_eq!(c.metrics().server_hits, 3, "{:?}", c.metrics());
    // refresh s3's copy from a shorter server TTL: t is now 1 or 2, so the
    // copy lives at most 1 s, less than the 1.5 s maximum
    let t0 = Instant::now();
    c.get("s3").unwrap();
    let before = c.metrics();
    while t0.elapsed() < Duration::from_millis(1100) {
        thread::sleep(Duration::from_millis(50));
    }
    let _ = c.get("s3").unwrap();
    let after = c.metrics();
    assert_eq!(after.near_hits, before.near_hits, "no near hit past the server's TTL: {after:?}");
    // and a near copy never outlives the item: gone on the server after 3 s
    thread::sleep(Duration::from_millis(1200));
    assert_eq!(c.get("s3").unwrap(), None);
}

#[test]
fn near_cache_byte_bound_and_frequency() {
    let nodes = start_nodes(1, &[]);
    let max = 64 * 1024;
    let mut cfg = Config::new(addrs(&nodes));
    cfg.near = near(max, Duration::from_secs(60), Invalidation::TtlOnly);
    let c = Client::new(cfg).unwrap();
    let val = vec![b'x'; 1000];
    for i in 0..400 {
        c.set(&format!("cold{i}"), &val, 0).unwrap();
    }
    c.set("hot", &val, 0).unwrap();
    for _ in 0..30 {
        c.get("hot").unwrap();
    }
    for i in 0..400 {
        c.get(&format!("cold{i}")).unwrap();
        c.get(&format!("cold{i}")).unwrap();
        if i % 20 == 0 {
            c.get("hot").unwrap();
        }
        assert!(c.near_bytes() <= max, "near cache holds {} bytes > {max}", c.near_bytes());
    }
    let entries = c.near_entries();
    assert!(entries > 20 && entries < 64, "{entries} entries of ~1.1 KB in 64 KiB");
    let before = c.metrics().near_hits;
    c.get("hot").unwrap();
    assert_eq!(c.metrics().near_hits, before + 1, "the frequently read key survived the scan");
}

#[test]
fn near_hit_latency() {
    let nodes = start_nodes(1, &[]);
    let mut cfg = Config::new(addrs(&nodes));
    cfg.near = near(1 << 24, Duration::from_secs(60), Invalidation::TtlOnly);
    let c = Client::new(cfg).unwrap();
    for i in 0..1000 {
        c.set(&format!("lat{i}"), &[b'v'; 100], 0).unwrap();
        c.get(&format!("lat{i}")).unwrap();
    }
    let keys: Vec<String> = (0..1000).map(|i| format!("lat{i}")).collect();
    let mut samples = Vec::with_capacity(100_000);
    for r in 0..100 {
        for k in &keys {
            let t = Instant::now();
            let v = c.get(k).unwrap();
            samples.push(t.elapsed());
            assert!(v.is_some(), "round {r}");
        }
    }
    samples.sort();
    let p50 = samples[samples.len() / 2];
    let p99 = samples[samples.len() * 99 / 100];
    let server = {
        let c2 = Client::new(Config::new(addrs(&nodes))).unwrap();
        let t = Instant::now();
        for k in &keys {
            c2.get(k).unwrap();
        }
        t.elapsed() / keys.len() as u32
    };
    eprintln!("near hit p50 {p50:?} p99 {p99:?}; server get (loopback) mean {server:?}");
    assert!(c.metrics().near_hits >= 100_000);
    assert!(p50 < Duration::from_micros(20), "near hit p50 {p50:?}");
}

#[test]
fn tracking_without_server_support_never_fills_the_near_cache() {
    // A server without `track` (memcached itself answers `ERROR`): no stream,
    // so no read may be cached (nothing would invalidate it).
    let Some(mc) = larder_testkit::Memcached::start_or_skip(&[]) else { return };
    let mut cfg = Config::new([mc.addr()]);
    cfg.near = near(1 << 20, Duration::from_secs(60), Invalidation::Tracking);
    let c = Client::new(cfg).unwrap();
    c.set("t", b"1", 0).unwrap();
    for _ in 0..5 {
        assert_eq!(c.get("t").unwrap().as_deref(), Some(&b"1"[..]));
    }
    // The stream thread has had its answer by now (it retries with backoff).
    thread::sleep(Duration::from_millis(200));
    assert!(!c.streams_up());
    assert_eq!(c.get("t").unwrap().as_deref(), Some(&b"1"[..]));
    let m = c.metrics();
    assert_eq!((m.near_hits, m.server_hits), (0, 6));
    assert_eq!(c.near_entries(), 0);
}

// ---- the invalidation stream end to end ----

fn tracked(nodes: &[larder_testkit::Larder], inv: Invalidation) -> Client {
    let mut cfg = Config::new(addrs(nodes));
    cfg.near = near(1 << 20, Duration::from_secs(300), inv);
    let c = Client::new(cfg).unwrap();
    assert!(larder_testkit::eventually(Duration::from_secs(5), || c.streams_up()), "streams subscribed");
    c
}

#[test]
fn another_writer_invalidates_the_near_copy() {
    let nodes = start_nodes(3, &[]);
    let reader = tracked(&nodes, Invalidation::Tracking);
    let writer = Client::new(Config::new(addrs(&nodes))).unwrap();
    for i in 0..50 {
        writer.set(&format!("iv{i}"), b"v1", 0).unwrap();
        reader.get(&format!("iv{i}")).unwrap();
        assert_eq!(reader.get(&format!("iv{i}")).unwrap().as_deref(), Some(&b"v1"[..]));
    }
    assert_eq!(reader.metrics().near_hits, 50);
    for i in 0..50 {
        writer.set(&format!("iv{i}"), b"v2", 0).unwrap();
    }
    reader.sync_invalidations(Duration::from_secs(5)).unwrap();
    for i in 0..50 {
        assert_eq!(reader.get(&format!("iv{i}")).unwrap().as_deref(), Some(&b"v2"[..]), "iv{i} stale");
    }
    assert!(reader.metrics().invalidations >= 50);
    writer.delete("iv0").unwrap();
    reader.sync_invalidations(Duration::from_secs(5)).unwrap();
    assert_eq!(reader.get("iv0").unwrap(), None);
}

#[test]
fn own_writes_need_no_push_and_never_leave_stale_copies() {
    let nodes = start_nodes(1, &[]);
    let c = tracked(&nodes, Invalidation::Tracking);
    c.set("own", b"1", 0).unwrap();
    c.get("own").unwrap();
    c.set("own", b"2", 0).unwrap();
    assert_eq!(c.get("own").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(c.metrics().invalidations, 0, "noloop: no push for our own write");
}

#[test]
fn flush_all_and_stream_loss_flush_the_near_cache() {
    let nodes = start_nodes(1, &[]);
    let c = tracked(&nodes, Invalidation::Tracking);
    c.set("f", b"1", 0).unwrap();
    c.get("f").unwrap();
    assert_eq!(c.near_entries(), 1);
    let mut raw = nodes[0].connect();
    raw.expect(b"flush_all\r\n", b"OK\r\n");
    c.sync_invalidations(Duration::from_secs(5)).unwrap();
    assert_eq!(c.near_entries(), 0);
    assert!(c.metrics().flushes >= 1);
    assert_eq!(c.get("f").unwrap(), None);

    c.set("f", b"2", 0).unwrap();
    c.get("f").unwrap();
    assert_eq!(c.near_entries(), 1);
    let flushes = c.metrics().flushes;
    c.drop_stream(0);
    assert!(larder_testkit::eventually(Duration::from_secs(5), || c.metrics().flushes > flushes));
    assert_eq!(c.near_entries(), 0);
    // resubscribed with a new sid; pooled connections re-attach lazily
    assert!(larder_testkit::eventually(Duration::from_secs(5), || c.streams_up()));
    c.get("f").unwrap();
    let w = Client::new(Config::new(addrs(&nodes))).unwrap();
    w.set("f", b"3", 0).unwrap();
    c.sync_invalidations(Duration::from_secs(5)).unwrap();
    assert_eq!(c.get("f").unwrap().as_deref(), Some(&b"3"[..]), "the re-attached connection registered");
}

#[test]
fn server_restart_flushes_and_resubscribes() {
    let port = larder_testkit::free_port();
    let mut server = common::OnPort::start(port);
    let mut cfg = Config::new([server.addr()]);
    cfg.near = near(1 << 20, Duration::from_secs(300), Invalidation::Tracking);
    let c = Client::new(cfg).unwrap();
    assert!(larder_testkit::eventually(Duration::from_secs(5), || c.streams_up()));
    c.set("r", b"1", 0).unwrap();
    c.get("r").unwrap();
    assert_eq!(c.near_entries(), 1);
    drop(server);
    assert!(larder_testkit::eventually(Duration::from_secs(5), || c.near_entries() == 0), "flushed when the stream closed");
    server = common::OnPort::start(port);
    assert!(larder_testkit::eventually(Duration::from_secs(10), || c.streams_up()), "resubscribed to the new process");
    assert_eq!(c.get("r").unwrap(), None, "cold restart: empty, and no stale near copy");
    drop(server);
}

#[test]
fn broadcast_mode_invalidates_by_prefix() {
    let nodes = start_nodes(1, &[]);
    let c = tracked(&nodes, Invalidation::Broadcast(vec!["user:".into()]));
    let w = Client::new(Config::new(addrs(&nodes))).unwrap();
    w.set("user:1", b"a", 0).unwrap();
    c.get("user:1").unwrap();
    assert_eq!(c.get("user:1").unwrap().as_deref(), Some(&b"a"[..]));
    w.set("user:1", b"b", 0).unwrap();
    c.sync_invalidations(Duration::from_secs(5)).unwrap();
    assert_eq!(c.get("user:1").unwrap().as_deref(), Some(&b"b"[..]));
}

#[test]
fn versioned_readers_and_writers_see_no_stale_value_after_the_barrier() {
    // Writers bump versions; after each acknowledged write and a barrier,
    // every reader's next read returns at least that version.
    let nodes = start_nodes(3, &[]);
    let readers: Vec<Arc<Client>> = (0..3).map(|_| Arc::new(tracked(&nodes, Invalidation::Tracking))).collect();
    let w = Client::new(Config::new(addrs(&nodes))).unwrap();
    for v in 0u64..200 {
        let key = format!("ver{}", v % 10);
        w.set(&key, v.to_string().as_bytes(), 0).unwrap();
        for r in &readers {
            r.sync_invalidations(Duration::from_secs(5)).unwrap();
            let got: u64 = String::from_utf8(r.get(&key).unwrap().unwrap().to_vec()).unwrap().parse().unwrap();
            assert!(got >= v, "reader saw version {got} after {v} was acknowledged");
        }
    }
}
