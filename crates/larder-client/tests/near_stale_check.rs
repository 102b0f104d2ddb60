//! The near cache's correctness checker (issue #28, "How we will know"):
//! several clients, each with its own near cache, read and write a small key
//! space concurrently against the release larder; every value carries a
//! version; afterwards a checker asserts that no read returned a version older
//! than the newest one acknowledged more than the bound before the read began,
//! and prints the measured staleness (p99.9 and max) so the bound in
//! docs/near-cache.md can be stated from a measurement.
//!
//! The run goes through every fault the issue lists, each one checked to have
//! happened (a fault that silently did not occur would make the test pass by
//! luck): the invalidation connection killed (the client's `drop_stream` hook,
//! and the connection cut by a proxy, as a network would), the subscriber's
//! buffer overflowed (a proxy stops forwarding one client's stream while a
//! writer floods it with invalidations, `-o track_stream_kb=64`, until the
//! server counts `larder_track_lost`), `flush_all`, and the server restarted warm
//! (`-e`, SIGUSR1) and cold (killed, started empty).
//!
//! Run it with
//! `cargo build --release -p larder-server &&
//!  cargo test --release -p larder-client --test near_stale_check -- --nocapture`
//! (`LARDER_STALE_BOUND_MS` overrides the bound asserted, default 100 ms).

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use larder_client::{Client, Config, Invalidation, NearConfig};
use larder_testkit::eventually;

const KEYS: u64 = 32;
/// Clients 0 and 1 talk to larder directly (the bound is measured on them
/// without any extra hop); 2 goes through a proxy that cuts its stream; 3
/// (broadcast mode, every key) through a proxy that stalls its stream.
const CLIENTS: usize = 4;
const READERS_PER_CLIENT: usize = 2;
const CUT: usize = 2;
const VICTIM: usize = 3;

fn key(k: u64) -> String {
    format!("sc:{k}")
}

// ---------------------------------------------------------------- server

/// One `larder_track_*` counter: larder reports them in `stats larder`, not in plain `stats`.
fn track_stat(c: &mut larder_testkit::Client, name: &str) -> u64 {
    let all = c.stats("larder");
    all.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name} in stats larder")).1.parse().unwrap()
}

/// larder on a fixed port (clients keep their addresses across restarts).
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(port: u16, args: &[&str]) -> Server {
        let child = Command::new(larder_testkit::larder_binary())
            .args(["-p", &port.to_string(), "-U", "0"])
            .args(larder_testkit::user_args())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start larder");
        let mut s = Server { child, port };
        let up = eventually(Duration::from_secs(20), || {
            if let Some(st) = s.child.try_wait().unwrap() {
                panic!("larder {args:?} exited at start ({st}): does it know these flags (-o track_stream_kb is part of #28)?");
            }
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "larder did not start on {port}");
        s
    }

    fn raw(&self) -> larder_testkit::Client {
        larder_testkit::Client::connect(self.port)
    }

    /// Graceful stop: SIGUSR1 saves every item to the `-e` file, then exits.
    fn stop_warm(mut self) {
        let st = Command::new("kill").args(["-USR1", &self.child.id().to_string()]).status().unwrap();
        assert!(st.success());
        let t0 = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(t0.elapsed() < Duration::from_secs(20), "larder did not exit after SIGUSR1");
            thread::sleep(Duration::from_millis(10));
        }
        std::mem::forget(self); // already reaped
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------- proxy

/// A TCP proxy in front of larder for one client: forwards bytes both ways,
/// recognises the invalidation stream by its first command (`track stream`),
/// and can cut it (as a network failure would) or stop forwarding it (the
/// client then reads nothing while the server's output for it piles up).
struct Proxy {
    port: u16,
    paused: Arc<AtomicBool>,
    streams: Registry,
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let paused = Arc::new(AtomicBool::new(false));
        let streams: Registry = Arc::default();
        let (p2, s2) = (paused.clone(), streams.clone());
        thread::spawn(move || {
            for down in l.incoming() {
                let Ok(down) = down else { continue };
                let Ok(up) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    let _ = down.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = (down.set_nodelay(true), up.set_nodelay(true));
                let is_stream = Arc::new(AtomicBool::new(false));
                let (d1, u1, d2, u2) = (down.try_clone().unwrap(), up.try_clone().unwrap(), down, up);
                let (flag, registry) = (is_stream.clone(), s2.clone());
                thread::spawn(move || pump(d1, u1, |first| {
                    if first.starts_with(b"track stream") {
                        flag.store(true, SeqCst);
                        true
                    } else {
                        false
                    }
                }, None, Some(registry)));
                let paused = p2.clone();
                thread::spawn(move || pump(u2, d2, |_| false, Some((is_stream, paused)), None));
            }
        });
        Proxy { port, paused, streams }
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Cuts every stream connection (both sides see it close).
    fn cut_streams(&self) -> usize {
        let list = std::mem::take(&mut *self.streams.lock().unwrap());
        for (a, b) in &list {
            let _ = (a.shutdown(Shutdown::Both), b.shutdown(Shutdown::Both));
        }
        list.len()
    }

    fn pause_streams(&self, on: bool) {
        self.paused.store(on, SeqCst);
    }
}

/// The stream connections a proxy has seen (client side, server side).
type Registry = Arc<Mutex<Vec<(TcpStream, TcpStream)>>>;
/// (this pair is a stream, streams are paused).
type Hold = (Arc<AtomicBool>, Arc<AtomicBool>);

/// Copies `from` to `to` until either closes, then closes both. `sniff` sees
/// the first chunk (true: this pair is a stream; it is registered so it can be
/// cut). `hold`: while the pair is a stream and the flag is set, stop reading.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    sniff: impl Fn(&[u8]) -> bool,
    hold: Option<Hold>,
    registry: Option<Registry>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut first = true;
    loop {
        if let Some((is_stream, paused)) = &hold {
            while is_stream.load(SeqCst) && paused.load(SeqCst) {
                thread::sleep(Duration::from_millis(5));
            }
        }
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if first {
            first = false;
            if sniff(&buf[..n]) {
                if let Some(r) = &registry {
                    r.lock().unwrap().push((from.try_clone().unwrap(), to.try_clone().unwrap()));
                }
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = (from.shutdown(Shutdown::Both), to.shutdown(Shutdown::Both));
}

// ---------------------------------------------------------------- the log

/// Every acknowledged write (and every event that removes values: a delete,
/// flush_all, a cold restart, logged as a version without a value) per key,
/// and every read that returned a value.
#[derive(Default)]
struct History {
    writes: Mutex<HashMap<u64, Vec<(u64, Instant)>>>,
    next_version: AtomicU64,
}

impl History {
    fn version(&self) -> u64 {
        self.next_version.fetch_add(1, SeqCst) + 1
    }

    fn acked(&self, k: u64, v: u64, at: Instant) {
        self.writes.lock().unwrap().entry(k).or_default().push((v, at));
    }

    /// A removal of every key (flush_all, cold restart), acknowledged at `at`.
    /// Called with the writers' gate held exclusively, so every version before
    /// it was applied before it and every later one after it.
    fn remove_all(&self, at: Instant) {
        let v = self.version();
        let mut w = self.writes.lock().unwrap();
        for k in 0..KEYS {
            w.entry(k).or_default().push((v, at));
        }
    }
}

struct Read_ {
    client: usize,
    phase: usize,
    key: u64,
    version: u64,
    start: Instant,
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn parse_version(v: &[u8]) -> u64 {
    std::str::from_utf8(v).ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("value without a version: {v:?}"))
}

// ---------------------------------------------------------------- the test

struct Rig {
    clients: Vec<Arc<Client>>,
    proxies: Vec<Option<Proxy>>,
}

fn flushes(rig: &Rig) -> Vec<u64> {
    rig.clients.iter().map(|c| c.metrics().flushes).collect()
}

fn all_flushed_since(rig: &Rig, before: &[u64], what: &str) {
    assert!(
        eventually(Duration::from_secs(15), || rig.clients.iter().zip(before).all(|(c, &b)| c.metrics().flushes > b)),
        "{what}: not every client flushed its near cache ({before:?} -> {:?})",
        flushes(rig)
    );
}

fn all_streams_up(rig: &Rig, what: &str) {
    assert!(eventually(Duration::from_secs(15), || rig.clients.iter().all(|c| c.streams_up())), "{what}: streams did not come back");
}

#[test]
fn no_stale_read_beyond_the_bound_through_every_fault() {
    let bound = Duration::from_millis(std::env::var("LARDER_STALE_BOUND_MS").ok().and_then(|s| s.parse().ok()).unwrap_or(100));
    let port = larder_testkit::free_port();
    let shm = if std::path::Path::new("/dev/shm").is_dir() { std::path::PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let snapshot = shm.join(format!("larder-stale-check-{}.snap", std::process::id()));
    let _ = std::fs::remove_file(&snapshot);
    let snap = snapshot.to_str().unwrap().to_string();
    let warm_args = ["-e", snap.as_str(), "-o", "track_stream_kb=64"];
    let mut server = Some(Server::start(port, &warm_args));

    // The clients: each its own near cache, pool and streams.
    let mut clients = Vec::new();
    let mut proxies = Vec::new();
    for i in 0..CLIENTS {
        let proxy = (i == CUT || i == VICTIM).then(|| Proxy::start(port));
        let addr = proxy.as_ref().map_or(format!("127.0.0.1:{port}"), |p| p.addr());
        let mut cfg = Config::new([addr]);
        cfg.pool_size = 4;
        let inv = if i == VICTIM { Invalidation::Broadcast(vec![]) } else { Invalidation::Tracking };
        cfg.near = Some(NearConfig { max_bytes: 1 << 20, max_ttl: Duration::from_secs(300), invalidation: inv });
        clients.push(Arc::new(Client::new(cfg).unwrap()));
        proxies.push(proxy);
    }
    let rig = Rig { clients, proxies };
    all_streams_up(&rig, "start");

    let hist = Arc::new(History::default());
    // Writers share it; flush_all and the restarts take it exclusively.
    let gate = Arc::new(RwLock::new(()));
    let stop = Arc::new(AtomicBool::new(false));
    let phase = Arc::new(AtomicUsize::new(0));
    let holds: Vec<Arc<AtomicBool>> = (0..CLIENTS).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let read_errors = Arc::new(AtomicU64::new(0));
    let acked_writes = Arc::new(AtomicU64::new(0));

    // One writer per client; key k is written only by writer k % CLIENTS, so
    // each key's versions are ordered by its writes.
    let mut writers = Vec::new();
    for w in 0..CLIENTS {
        let (c, hist, gate, stop, acked) = (rig.clients[w].clone(), hist.clone(), gate.clone(), stop.clone(), acked_writes.clone());
        writers.push(thread::spawn(move || {
            let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (w as u64 + 1);
            while !stop.load(SeqCst) {
                let k = (xorshift(&mut rng) % (KEYS / CLIENTS as u64)) * CLIENTS as u64 + w as u64;
                let delete = xorshift(&mut rng) % 10 == 0;
                {
                    let _g = gate.read().unwrap();
                    let v = hist.version();
                    let ok = if delete { c.delete(&key(k)).is_ok() } else { c.set(&key(k), v.to_string().as_bytes(), 0).is_ok() };
                    if ok {
                        hist.acked(k, v, Instant::now());
                        acked.fetch_add(1, SeqCst);
                    }
                }
                thread::sleep(Duration::from_micros(500 + xorshift(&mut rng) % 1000));
            }
        }));
    }
    let mut readers = Vec::new();
    for (ci, (client, hold)) in rig.clients.iter().zip(&holds).enumerate() {
        for r in 0..READERS_PER_CLIENT {
            let (c, stop, phase, hold, errs) = (client.clone(), stop.clone(), phase.clone(), hold.clone(), read_errors.clone());
            readers.push(thread::spawn(move || {
                let mut rng = 0x2545_F491_4F6C_DD1Du64 ^ ((ci * 16 + r) as u64 + 7);
                let mut seen: Vec<Read_> = Vec::new();
                while !stop.load(SeqCst) {
                    if hold.load(SeqCst) {
                        thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    let ph = phase.load(SeqCst);
                    let start = Instant::now();
                    if xorshift(&mut rng) % 10 == 0 {
                        let ks: Vec<u64> = (0..4).map(|_| xorshift(&mut rng) % KEYS).collect();
                        let names: Vec<String> = ks.iter().map(|&k| key(k)).collect();
                        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                        match c.get_multi(&refs) {
                            Ok(m) => {
                                for (name, v) in m {
                                    let k = ks[names.iter().position(|n| *n == name).unwrap()];
                                    seen.push(Read_ { client: ci, phase: ph, key: k, version: parse_version(&v), start });
                                }
                            }
                            Err(_) => {
                                errs.fetch_add(1, SeqCst);
                            }
                        }
                    } else {
                        let k = xorshift(&mut rng) % KEYS;
                        match c.get(&key(k)) {
                            Ok(Some(v)) => seen.push(Read_ { client: ci, phase: ph, key: k, version: parse_version(&v), start }),
                            Ok(None) => {}
                            Err(_) => {
                                errs.fetch_add(1, SeqCst);
                            }
                        }
                    }
                    thread::sleep(Duration::from_micros(100));
                }
                seen
            }));
        }
    }

    let steady = |ph: usize, d: Duration| {
        phase.store(ph, SeqCst);
        thread::sleep(d);
    };
    let phases = ["steady", "stream dropped (hook) and cut (proxy)", "steady", "overflow", "flush_all", "warm restart", "cold restart", "steady"];

    // 0: steady state under load
    steady(0, Duration::from_secs(3));
    let near_hits = rig.clients.iter().map(|c| c.metrics().near_hits).sum::<u64>();
    assert!(near_hits > 1000, "the near caches serve ({near_hits} near hits): otherwise nothing is tested");

    // 1: the invalidation connection killed: by the client's hook on client 0,
    // by the network (the proxy cuts it) on client CUT.
    phase.store(1, SeqCst);
    let before = flushes(&rig);
    rig.clients[0].drop_stream(0);
    assert!(rig.proxies[CUT].as_ref().unwrap().cut_streams() >= 1, "the proxy saw client {CUT}'s stream");
    assert!(eventually(Duration::from_secs(5), || rig.clients[0].metrics().flushes > before[0] && rig.clients[CUT].metrics().flushes > before[CUT]), "a killed stream flushes");
    all_streams_up(&rig, "stream killed");
    steady(1, Duration::from_secs(1));
    steady(2, Duration::from_secs(2));

    // 3: overflow. Client VICTIM (broadcast, every key) stalls as a whole
    // process would (its readers hold, its stream is not read) while a writer
    // floods it with invalidations of long keys, until the server gives up on
    // it (track_lost). Then its stream is read again and it must flush before
    // its readers resume (the barrier orders that).
    phase.store(3, SeqCst);
    let mut stats = server.as_ref().unwrap().raw();
    let lost0 = track_stat(&mut stats, "larder_track_lost");
    let victim_flushes = rig.clients[VICTIM].metrics().flushes;
    holds[VICTIM].store(true, SeqCst);
    thread::sleep(Duration::from_millis(50));
    let vp = rig.proxies[VICTIM].as_ref().unwrap();
    vp.pause_streams(true);
    {
        let mut blast = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let long = "x".repeat(230);
        let t0 = Instant::now();
        let mut n = 0u64;
        while track_stat(&mut stats, "larder_track_lost") == lost0 {
            assert!(t0.elapsed() < Duration::from_secs(120), "no overflow after {n} writes: is -o track_stream_kb honoured?");
            let mut batch = Vec::with_capacity(2000 * 260);
            for _ in 0..2000 {
                batch.extend_from_slice(format!("set blast:{long}:{} 0 0 1 noreply\r\nx\r\n", n % 100_000).as_bytes());
                n += 1;
            }
            blast.write_all(&batch).unwrap();
        }
        eprintln!("overflow after {n} flood writes ({:?})", t0.elapsed());
    }
    vp.pause_streams(false);
    rig.clients[VICTIM].sync_invalidations(Duration::from_secs(30)).expect("the victim's stream catches up");
    assert!(rig.clients[VICTIM].metrics().flushes > victim_flushes, "LOST flushed the victim's near cache");
    holds[VICTIM].store(false, SeqCst);
    steady(3, Duration::from_secs(2));

    // 4: flush_all, the writers stopped around it so its place among the versions is exact.
    phase.store(4, SeqCst);
    {
        let _g = gate.write().unwrap();
        let before = flushes(&rig);
        stats.expect(b"flush_all\r\n", b"OK\r\n");
        hist.remove_all(Instant::now());
        all_flushed_since(&rig, &before, "flush_all");
    }
    steady(4, Duration::from_secs(2));

    // 5: warm restart: SIGUSR1 saves, the same -e loads; items survive.
    phase.store(5, SeqCst);
    {
        let _g = gate.write().unwrap();
        let before = flushes(&rig);
        drop(stats);
        server.take().unwrap().stop_warm();
        server = Some(Server::start(port, &warm_args));
        let items = server.as_ref().unwrap().raw().stat("curr_items");
        assert!(items > 0, "warm restart kept no items");
        all_flushed_since(&rig, &before, "warm restart");
        all_streams_up(&rig, "warm restart");
    }
    steady(5, Duration::from_secs(3));

    // 6: cold restart: killed (nothing saved), started empty. Every value is
    // gone: logged as a removal of every key when the process is dead.
    phase.store(6, SeqCst);
    {
        let _g = gate.write().unwrap();
        let before = flushes(&rig);
        drop(server.take());
        hist.remove_all(Instant::now());
        server = Some(Server::start(port, &["-o", "track_stream_kb=64"]));
        assert_eq!(server.as_ref().unwrap().raw().stat("curr_items"), 0, "cold restart starts empty");
        all_flushed_since(&rig, &before, "cold restart");
        all_streams_up(&rig, "cold restart");
    }
    steady(6, Duration::from_secs(3));
    steady(7, Duration::from_secs(2));

    stop.store(true, SeqCst);
    for w in writers {
        w.join().unwrap();
    }
    let mut reads = Vec::new();
    for r in readers {
        reads.extend(r.join().unwrap());
    }
    let _ = std::fs::remove_file(&snapshot);

    // The checker. For each read, the write that superseded the version it
    // returned; its lag = how long before the read began that write was
    // acknowledged (0 if it was not yet, or the version is the newest).
    let mut writes = std::mem::take(&mut *hist.writes.lock().unwrap());
    for w in writes.values_mut() {
        w.sort_unstable_by_key(|&(v, _)| v);
    }
    let mut lags: Vec<Duration> = Vec::with_capacity(reads.len());
    let mut direct_lags: Vec<Duration> = Vec::new();
    let mut worst: Vec<(Duration, &Read_)> = Vec::new();
    let mut per_phase: Vec<Vec<Duration>> = vec![Vec::new(); phases.len()];
    for r in &reads {
        let lag = writes
            .get(&r.key)
            .and_then(|ws| ws.get(ws.partition_point(|&(v, _)| v <= r.version)))
            .map_or(Duration::ZERO, |&(_, acked)| r.start.saturating_duration_since(acked));
        lags.push(lag);
        if r.client < 2 {
            direct_lags.push(lag);
        }
        per_phase[r.phase].push(lag);
        if lag > bound {
            worst.push((lag, r));
        }
    }
    let summary = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        let behind = v.iter().filter(|d| !d.is_zero()).count();
        let p999 = v.get((v.len() * 999 / 1000).min(v.len().saturating_sub(1))).copied().unwrap_or_default();
        format!("{} reads, {} behind an acknowledged write, staleness p99.9 {:?}, max {:?}", v.len(), behind, p999, v.last().copied().unwrap_or_default())
    };
    eprintln!("all clients: {}", summary(&mut lags));
    eprintln!("direct clients (no proxy): {}", summary(&mut direct_lags));
    for (i, v) in per_phase.iter_mut().enumerate() {
        eprintln!("  phase {i} {:40} {}", phases[i], summary(v));
    }
    eprintln!("{} acknowledged writes, {} read errors (while the server was down)", acked_writes.load(SeqCst), read_errors.load(SeqCst));
    assert!(reads.len() > 10_000, "too few reads to mean anything: {}", reads.len());
    assert!(acked_writes.load(SeqCst) > 1000, "too few writes");
    worst.sort_by_key(|w| std::cmp::Reverse(w.0));
    assert!(
        worst.is_empty(),
        "{} reads returned a version superseded more than {bound:?} earlier; worst: {}",
        worst.len(),
        worst
            .iter()
            .take(5)
            .map(|(lag, r)| format!("client {} phase {} key {} version {} stale by {lag:?}", r.client, phases[r.phase], r.key, r.version))
            .collect::<Vec<_>>()
            .join("; ")
    );
}

/// The checker itself must catch a stale near cache: clients with a TTL and
/// no invalidation (`TtlOnly`, works on today's larder) running the same
/// reads and writes must be caught serving superseded versions. If this ever
/// passes with zero stale reads, the checker above proves nothing.
#[test]
fn the_checker_catches_a_near_cache_without_invalidation() {
    let server = Server::start(larder_testkit::free_port(), &[]);
    let clients: Vec<Arc<Client>> = (0..2)
        .map(|_| {
            let mut cfg = Config::new([format!("127.0.0.1:{}", server.port)]);
            cfg.near = Some(NearConfig { max_bytes: 1 << 20, max_ttl: Duration::from_secs(30), invalidation: Invalidation::TtlOnly });
            Arc::new(Client::new(cfg).unwrap())
        })
        .collect();
    let hist = History::default();
    let bound = Duration::from_millis(100);
    // client 0 writes, client 1 reads (and caches) the same keys.
    let mut reads = Vec::new();
    for round in 0..3 {
        for k in 0..KEYS {
            let v = hist.version();
            clients[0].set(&key(k), v.to_string().as_bytes(), 0).unwrap();
            hist.acked(k, v, Instant::now());
        }
        thread::sleep(bound * 2);
        for k in 0..KEYS {
            let start = Instant::now();
            let v = clients[1].get(&key(k)).unwrap().expect("written");
            reads.push(Read_ { client: 1, phase: round, key: k, version: parse_version(&v), start });
        }
    }
    let writes = hist.writes.lock().unwrap();
    let stale = reads
        .iter()
        .filter(|r| {
            let ws = &writes[&r.key];
            ws.get(ws.partition_point(|&(v, _)| v <= r.version)).is_some_and(|&(_, acked)| r.start.saturating_duration_since(acked) > bound)
        })
        .count();
    // Rounds 1 and 2 are served from client 1's near copies of round 0.
    assert_eq!(stale, 2 * KEYS as usize, "the checker must flag every read served from a superseded near copy");
}
