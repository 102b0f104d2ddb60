//! near_bench: the two-tier cache benchmark of issue #28, modelled on the JVM
//! catalogue service (an in-process cache in front of a central cache in front
//! of a slow database).
//!
//! Several app processes (this binary re-executed with `--child`, each with
//! its own client and near cache) run Zipf(0.99) reads with a share of writes
//! over a key space, paced at a fixed total rate. Reads go through
//! get-or-load; a miss loads from a simulated backend (a small TCP service run
//! by the parent) that sleeps `--load-ms` per load. A write updates the
//! backend, then the cache. Every value carries its version (the wall-clock
//! time its write started, in ns), each key is written by one worker only (so
//! its versions are ordered), and every read and write is logged; after the
//! run the parent checks each read against the writes: a read is stale when
//! the write that superseded the version it returned was acknowledged more
//! than `--stale-bound-ms` before the read started.
//!
//! Modes:
//! - `larder`: larder alone, no near cache (get-or-load on the server's leases);
//! - `near-track`: near cache + larder, kept correct by the `track` stream
//!   (skipped with a message when the server has no `track` commands);
//! - `near-ttl`: the near cache alone (moka, as Caffeine alone would be), a
//!   TTL and no invalidation: other processes' writes are seen when the copy
//!   expires;
//! - `near-ttl-larder`: near cache (TTL only) in front of larder.
//!
//! Latency is measured from each operation's scheduled start (so a stalled
//! worker's queue counts, no coordinated omission).
//!
//! `scripts/bench-near` builds and runs it against a fresh release larder.

#[allow(dead_code)]
#[path = "../../larder-bench/src/dist.rs"]
mod dist;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dist::{Rng, Zipf};
use larder_client::{Client, Config, Invalidation, NearConfig};

const MODES: [&str; 4] = ["larder", "near-track", "near-ttl", "near-ttl-larder"];

#[derive(Clone, Debug)]
struct Opts {
    server: String,
    modes: Vec<String>,
    procs: usize,
    threads: usize,
    keys: u64,
    skew: f64,
    write_pct: f64,
    rate: f64,
    secs: f64,
    warmup: f64,
    load_ms: u64,
    write_ms: u64,
    value_bytes: usize,
    near_ttl: u64,
    server_ttl: u32,
    near_mb: u64,
    stale_bound_ms: f64,
    prefill: bool,
    // child only
    child: Option<usize>,
    backend: String,
    start_at: u64,
    out: String,
    mode: String,
}

fn usage() -> ! {
    eprintln!(
        "usage: near_bench --server HOST:PORT [--modes larder,near-track,near-ttl,near-ttl-larder] [--procs 4] [--threads 16]
       [--keys 100000] [--skew 0.99] [--write-pct 5] [--rate 10000] [--secs 20] [--warmup 5] [--load-ms 5] [--write-ms 5]
       [--value-bytes 200] [--near-ttl 30] [--server-ttl 300] [--near-mb 256] [--stale-bound-ms 10] [--prefill true]
--prefill: store every key (version 0, as the backend starts) in larder before each mode, as a shared
tier in steady state holds the key space; the per-process near caches start empty and fill during --warmup"
    );
    std::process::exit(2)
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        server: String::new(),
        modes: vec!["larder".into(), "near-track".into(), "near-ttl".into()],
        procs: 4,
        threads: 16,
        keys: 100_000,
        skew: 0.99,
        write_pct: 5.0,
        rate: 10_000.0,
        secs: 20.0,
        warmup: 5.0,
        load_ms: 5,
        write_ms: 5,
        value_bytes: 200,
        near_ttl: 30,
        server_ttl: 300,
        near_mb: 256,
        stale_bound_ms: 10.0,
        prefill: true,
        child: None,
        backend: String::new(),
        start_at: 0,
        out: String::new(),
        mode: String::new(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let Some(v) = args.get(i + 1).cloned() else { usage() };
        fn num<T: std::str::FromStr>(flag: &str, v: &str) -> T {
            v.parse().unwrap_or_else(|_| {
                eprintln!("{flag}: bad value {v:?}");
                usage()
            })
        }
        match flag {
            "--server" => o.server = v,
            "--modes" => o.modes = v.split(',').map(str::to_string).collect(),
            "--procs" => o.procs = num(flag, &v),
            "--threads" => o.threads = num(flag, &v),
            "--keys" => o.keys = num(flag, &v),
            "--skew" => o.skew = num(flag, &v),
            "--write-pct" => o.write_pct = num(flag, &v),
            "--rate" => o.rate = num(flag, &v),
            "--secs" => o.secs = num(flag, &v),
            "--warmup" => o.warmup = num(flag, &v),
            "--load-ms" => o.load_ms = num(flag, &v),
            "--write-ms" => o.write_ms = num(flag, &v),
            "--value-bytes" => o.value_bytes = num(flag, &v),
            "--near-ttl" => o.near_ttl = num(flag, &v),
            "--server-ttl" => o.server_ttl = num(flag, &v),
            "--near-mb" => o.near_mb = num(flag, &v),
            "--stale-bound-ms" => o.stale_bound_ms = num(flag, &v),
            "--prefill" => o.prefill = num(flag, &v),
            "--child" => o.child = Some(num(flag, &v)),
            "--backend" => o.backend = v,
            "--start-at" => o.start_at = num(flag, &v),
            "--out" => o.out = v,
            "--mode" => o.mode = v,
            _ => usage(),
        }
        i += 2;
    }
    if o.server.is_empty() && o.child.is_none() {
        usage()
    }
    for m in &o.modes {
        if !MODES.contains(&m.as_str()) {
            eprintln!("unknown mode {m:?}; modes: {}", MODES.join(", "));
            usage()
        }
    }
    if o.procs == 0 || o.threads == 0 || o.keys == 0 || o.rate <= 0.0 || o.value_bytes < 8 {
        usage()
    }
    o
}

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

fn sleep_until_ns(t: u64) {
    let n = now_ns();
    if t > n {
        std::thread::sleep(Duration::from_nanos(t - n));
    }
}

// ---------------------------------------------------------------- backend

/// The simulated database: versions per key, `G k` (sleeps load_ms, returns
/// the version) and `S k v` (sleeps write_ms, stores). Loads are counted.
struct Backend {
    versions: Mutex<HashMap<u64, u64>>,
    loads: AtomicU64,
}

fn serve_backend(listener: TcpListener, b: Arc<Backend>, load_ms: u64, write_ms: u64) {
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let b = b.clone();
        std::thread::spawn(move || {
            let _ = conn.set_nodelay(true);
            let mut w = conn.try_clone().unwrap();
            let mut r = BufReader::new(conn);
            let mut line = String::new();
            loop {
                line.clear();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let f: Vec<&str> = line.split_whitespace().collect();
                let reply = match f.as_slice() {
                    ["G", k] => {
                        std::thread::sleep(Duration::from_millis(load_ms));
                        b.loads.fetch_add(1, Ordering::Relaxed);
                        let k: u64 = k.parse().unwrap_or(u64::MAX);
                        format!("{}\n", b.versions.lock().unwrap().get(&k).copied().unwrap_or(0))
                    }
                    ["S", k, v] => {
                        std::thread::sleep(Duration::from_millis(write_ms));
                        let (k, v): (u64, u64) = (k.parse().unwrap_or(u64::MAX), v.parse().unwrap_or(0));
                        b.versions.lock().unwrap().insert(k, v);
                        "OK\n".to_string()
                    }
                    _ => return,
                };
                if w.write_all(reply.as_bytes()).is_err() {
                    return;
                }
            }
        });
    }
}

struct BackendConn {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl BackendConn {
    fn connect(addr: &str) -> BackendConn {
        let s = TcpStream::connect(addr).expect("connect to the backend");
        s.set_nodelay(true).unwrap();
        BackendConn { w: s.try_clone().unwrap(), r: BufReader::new(s) }
    }

    fn call(&mut self, req: String) -> Result<String, String> {
        self.w.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
        let mut line = String::new();
        self.r.read_line(&mut line).map_err(|e| e.to_string())?;
        Ok(line.trim().to_string())
    }

    fn load(&mut self, k: u64) -> Result<u64, String> {
        self.call(format!("G {k}\n"))?.parse().map_err(|_| "bad backend reply".to_string())
    }

    fn store(&mut self, k: u64, v: u64) -> Result<(), String> {
        self.call(format!("S {k} {v}\n")).map(drop)
    }
}

// ---------------------------------------------------------------- app (child)

/// What one app process reads through.
enum Tier {
    Larder(Box<Client>),
    Moka(moka::sync::Cache<u64, Arc<[u8]>>),
}

fn value_of(version: u64, len: usize) -> Vec<u8> {
    let mut v = vec![b'.'; len];
    v[..8].copy_from_slice(&version.to_le_bytes());
    v
}

fn version_of(v: &[u8]) -> u64 {
    v.get(..8).map_or(u64::MAX, |b| u64::from_le_bytes(b.try_into().unwrap()))
}

fn build_tier(o: &Opts) -> Tier {
    let near = |inv| Some(NearConfig { max_bytes: o.near_mb << 20, max_ttl: Duration::from_secs(o.near_ttl), invalidation: inv });
    let mut cfg = Config::new([o.server.clone()]);
    cfg.pool_size = o.threads;
    match o.mode.as_str() {
        "larder" => Tier::Larder(Box::new(Client::new(cfg).expect("client"))),
        "near-track" => {
            cfg.near = near(Invalidation::Tracking);
            let c = Client::new(cfg).expect("client");
            let t0 = std::time::Instant::now();
            while !c.streams_up() {
                assert!(t0.elapsed() < Duration::from_secs(5), "the invalidation stream did not come up");
                std::thread::sleep(Duration::from_millis(10));
            }
            Tier::Larder(Box::new(c))
        }
        "near-ttl-larder" => {
            cfg.near = near(Invalidation::TtlOnly);
            Tier::Larder(Box::new(Client::new(cfg).expect("client")))
        }
        "near-ttl" => Tier::Moka(
            moka::sync::Cache::builder()
                .max_capacity(o.near_mb << 20)
                .weigher(|_k: &u64, v: &Arc<[u8]>| (v.len() + 96) as u32)
                .time_to_live(Duration::from_secs(o.near_ttl))
                .build(),
        ),
        m => panic!("mode {m}"),
    }
}

/// A write made during the warm-up (kind 2).
const WARMUP_WRITE: u64 = 2;

/// One record per measured operation: kind (0 read, 1 write, 2 warm-up write), key, version
/// (returned or written), start and end (wall ns), latency from schedule (ns).
const REC: usize = 6;

fn child_main(o: Opts) {
    let me = o.child.unwrap();
    let tier = Arc::new(build_tier(&o));
    let workers = o.procs * o.threads;
    let interval_ns = (workers as f64 * 1e9 / o.rate) as u64;
    let measure_from = o.start_at + (o.warmup * 1e9) as u64;
    let end = measure_from + (o.secs * 1e9) as u64;
    let zipf = Zipf::new(o.keys, o.skew);
    let handles: Vec<_> = (0..o.threads)
        .map(|t| {
            let (o, tier, zipf) = (o.clone(), tier.clone(), zipf.clone());
            std::thread::spawn(move || {
                let wid = (me * o.threads + t) as u64;
                let mut rng = Rng::new(0x6e65_6172 ^ (wid + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let mut backend = BackendConn::connect(&o.backend);
                let mut recs: Vec<u64> = Vec::with_capacity(((o.rate / workers as f64) * o.secs * 1.1) as usize * REC);
                // Stagger the workers' schedules across one interval.
                let mut due = o.start_at + interval_ns * wid / workers as u64;
                let mut errors = 0u64;
                while due < end {
                    sleep_until_ns(due);
                    let is_write = rng.next_f64() * 100.0 < o.write_pct;
                    let mut k = zipf.sample(&mut rng) - 1;
                    if is_write {
                        // Only worker k % workers writes key k, so each key's
                        // versions are totally ordered by their writes.
                        k = k - k % workers as u64 + wid;
                        if k >= o.keys {
                            k = wid;
                        }
                    }
                    let key = format!("nb:{k}");
                    let start = now_ns();
                    let version = if is_write {
                        let v = start;
                        let stored = backend.store(k, v).and_then(|_| match &*tier {
                            Tier::Larder(c) => c.set(&key, &value_of(v, o.value_bytes), o.server_ttl).map_err(|e| e.to_string()),
                            Tier::Moka(m) => {
                                m.invalidate(&k);
                                Ok(())
                            }
                        });
                        stored.map(|_| v)
                    } else {
                        match &*tier {
                            Tier::Larder(c) => c
                                .get_or_load(&key, o.server_ttl, || backend.load(k).map(|v| value_of(v, o.value_bytes)))
                                .map(|v| version_of(&v))
                                .map_err(|e| e.to_string()),
                            Tier::Moka(m) => {
                                let mut err = None;
                                let v = m.get_with(k, || match backend.load(k) {
                                    Ok(v) => value_of(v, o.value_bytes).into(),
                                    Err(e) => {
                                        err = Some(e);
                                        Arc::from(&[][..])
                                    }
                                });
                                match err {
                                    Some(e) => {
                                        m.invalidate(&k);
                                        Err(e)
                                    }
                                    None => Ok(version_of(&v)),
                                }
                            }
                        }
                    };
                    let done = now_ns();
                    match version {
                        Ok(v) if due >= measure_from => {
                            recs.extend_from_slice(&[is_write as u64, k, v, start, done, done - due]);
                        }
                        // Warm-up writes count for the stale check (a read in
                        // the window may return a version they superseded),
                        // not for the figures.
                        Ok(v) if is_write => recs.extend_from_slice(&[WARMUP_WRITE, k, v, start, done, 0]),
                        Ok(_) => {}
                        Err(e) => {
                            errors += 1;
                            if errors <= 3 {
                                eprintln!("app {me}: {e}");
                            }
                        }
                    }
                    due += interval_ns;
                }
                (recs, errors)
            })
        })
        .collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&o.out).expect("create the output file"));
    let mut errors = 0;
    for h in handles {
        let (recs, e) = h.join().unwrap();
        errors += e;
        for x in recs {
            out.write_all(&x.to_le_bytes()).unwrap();
        }
    }
    out.flush().unwrap();
    let m = match &*tier {
        Tier::Larder(c) => c.metrics(),
        Tier::Moka(_) => Default::default(),
    };
    println!(
        "app {me}: errors={errors} near_hits={} server_hits={} misses={} loads={} invalidations={} flushes={}",
        m.near_hits, m.server_hits, m.misses, m.loads, m.invalidations, m.flushes
    );
}

// ---------------------------------------------------------------- parent

struct Row {
    mode: String,
    ops_per_s: f64,
    read_p: [f64; 3],
    svc_p50_us: f64,
    svc_p99: f64,
    write_p99: f64,
    loads_per_s: f64,
    reads: u64,
    stale: u64,
    stale_max_ms: f64,
    errors: String,
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * p / 100.0).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1e6
}

/// Does the server speak `track`? (`OK <sid>` to `track stream`.)
fn server_tracks(server: &str) -> Result<bool, String> {
    let mut s = TcpStream::connect(server).map_err(|e| format!("{server}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"track stream\r\n").map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).map_err(|e| e.to_string())?;
    let _ = s.write_all(b"quit\r\n");
    Ok(buf[..n].starts_with(b"OK "))
}

fn flush_server(server: &str) {
    let mut s = TcpStream::connect(server).expect("connect to larder");
    s.write_all(b"flush_all\r\n").unwrap();
    let mut buf = [0u8; 16];
    let _ = s.read(&mut buf);
}

/// Stores every key at version 0 in larder (pipelined, `noreply`, then a
/// round trip to know they are all in).
fn prefill(o: &Opts) {
    let mut s = TcpStream::connect(&o.server).expect("connect to larder");
    let v = value_of(0, o.value_bytes);
    let mut batch = Vec::new();
    for k in 0..o.keys {
        batch.extend_from_slice(format!("set nb:{k} 0 {} {} noreply\r\n", o.server_ttl, v.len()).as_bytes());
        batch.extend_from_slice(&v);
        batch.extend_from_slice(b"\r\n");
        if batch.len() > 1 << 20 {
            s.write_all(&batch).unwrap();
            batch.clear();
        }
    }
    batch.extend_from_slice(b"mn\r\n");
    s.write_all(&batch).unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert_eq!(line, "MN\r\n", "prefill");
}

fn run_mode(o: &Opts, mode: &str) -> Row {
    flush_server(&o.server);
    if o.prefill && mode != "near-ttl" {
        prefill(o);
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let backend_addr = listener.local_addr().unwrap().to_string();
    let backend = Arc::new(Backend { versions: Mutex::new(HashMap::new()), loads: AtomicU64::new(0) });
    {
        let (b, l, w) = (backend.clone(), o.load_ms, o.write_ms);
        std::thread::spawn(move || serve_backend(listener, b, l, w));
    }
    let dir = std::env::temp_dir().join(format!("near_bench.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let start_at = now_ns() + 1_000_000_000;
    let exe = std::env::current_exe().unwrap();
    let mut kids = Vec::new();
    for i in 0..o.procs {
        let out = dir.join(format!("{mode}.{i}"));
        let mut cmd = Command::new(&exe);
        for (f, v) in [
            ("--server", o.server.clone()),
            ("--procs", o.procs.to_string()),
            ("--threads", o.threads.to_string()),
            ("--keys", o.keys.to_string()),
            ("--skew", o.skew.to_string()),
            ("--write-pct", o.write_pct.to_string()),
            ("--rate", o.rate.to_string()),
            ("--secs", o.secs.to_string()),
            ("--warmup", o.warmup.to_string()),
            ("--value-bytes", o.value_bytes.to_string()),
            ("--near-ttl", o.near_ttl.to_string()),
            ("--server-ttl", o.server_ttl.to_string()),
            ("--near-mb", o.near_mb.to_string()),
            ("--child", i.to_string()),
            ("--backend", backend_addr.clone()),
            ("--start-at", start_at.to_string()),
            ("--out", out.display().to_string()),
            ("--mode", mode.to_string()),
        ] {
            cmd.args([f, &v]);
        }
        kids.push((cmd.stdout(Stdio::piped()).spawn().expect("spawn an app process"), out));
    }
    // Backend loads inside the measured window only.
    let from = start_at + (o.warmup * 1e9) as u64;
    sleep_until_ns(from);
    let loads0 = backend.loads.load(Ordering::Relaxed);
    sleep_until_ns(from + (o.secs * 1e9) as u64);
    let loads1 = backend.loads.load(Ordering::Relaxed);
    let mut recs: Vec<[u64; REC]> = Vec::new();
    let mut errors = Vec::new();
    for (mut kid, out) in kids {
        let mut text = String::new();
        kid.stdout.take().unwrap().read_to_string(&mut text).unwrap();
        assert!(kid.wait().unwrap().success(), "an app process failed");
        eprint!("  {mode} {text}");
        if let Some(e) = text.split_whitespace().find_map(|w| w.strip_prefix("errors=")).filter(|e| *e != "0") {
            errors.push(e.to_string());
        }
        let bytes = std::fs::read(&out).unwrap();
        let _ = std::fs::remove_file(&out);
        for c in bytes.chunks_exact(8 * REC) {
            let mut r = [0u64; REC];
            for (j, x) in r.iter_mut().enumerate() {
                *x = u64::from_le_bytes(c[j * 8..j * 8 + 8].try_into().unwrap());
            }
            recs.push(r);
        }
    }
    let _ = std::fs::remove_dir(&dir);
    // Writes per key, in version order (one writer per key).
    let mut writes: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    for r in recs.iter().filter(|r| r[0] != 0) {
        writes.entry(r[1]).or_default().push((r[2], r[4]));
    }
    for w in writes.values_mut() {
        w.sort_unstable();
    }
    let bound = (o.stale_bound_ms * 1e6) as u64;
    let (mut stale, mut stale_max) = (0u64, 0u64);
    let mut read_lat = Vec::new();
    let mut svc_lat = Vec::new();
    let mut write_lat = Vec::new();
    for r in &recs {
        if r[0] == 1 {
            write_lat.push(r[5]);
        }
        if r[0] != 0 {
            continue;
        }
        read_lat.push(r[5]);
        svc_lat.push(r[4] - r[3]);
        // The write that superseded the version this read returned.
        let Some(ws) = writes.get(&r[1]) else { continue };
        let i = ws.partition_point(|&(v, _)| v <= r[2]);
        if let Some(&(_, acked)) = ws.get(i) {
            if acked + bound < r[3] {
                stale += 1;
                stale_max = stale_max.max(r[3] - acked);
            }
        }
    }
    read_lat.sort_unstable();
    svc_lat.sort_unstable();
    write_lat.sort_unstable();
    Row {
        mode: mode.to_string(),
        ops_per_s: (read_lat.len() + write_lat.len()) as f64 / o.secs,
        read_p: [pct(&read_lat, 50.0), pct(&read_lat, 95.0), pct(&read_lat, 99.0)],
        svc_p50_us: pct(&svc_lat, 50.0) * 1e3,
        svc_p99: pct(&svc_lat, 99.0),
        write_p99: pct(&write_lat, 99.0),
        loads_per_s: (loads1 - loads0) as f64 / o.secs,
        reads: read_lat.len() as u64,
        stale,
        stale_max_ms: stale_max as f64 / 1e6,
        errors: if errors.is_empty() { "0".into() } else { errors.join("+") },
    }
}

fn main() {
    let o = parse_opts();
    if o.child.is_some() {
        return child_main(o);
    }
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for mode in &o.modes {
        if mode == "near-track" {
            match server_tracks(&o.server) {
                Ok(true) => {}
                Ok(false) => {
                    let msg = format!("near-track skipped: {} has no `track` commands (the server side of #28); the other modes ran", o.server);
                    eprintln!("{msg}");
                    skipped.push(msg);
                    continue;
                }
                Err(e) => panic!("cannot reach larder: {e}"),
            }
        }
        eprintln!("running {mode} ({} s warm-up + {} s)...", o.warmup, o.secs);
        rows.push(run_mode(&o, mode));
    }
    let cmd: Vec<String> = std::env::args().collect();
    println!("command: {}", cmd.join(" "));
    println!(
        "workload: {} app processes x {} threads, {} keys Zipf({}), {}% writes, {} ops/s offered, {} B values, backend {} ms per load / {} ms per write, near TTL {} s, larder TTL {} s; larder prefilled: {}; {} s measured after {} s warm-up; latency from each operation's scheduled start (service: from its actual start); stale = a read older than the newest write acknowledged more than {} ms before it started",
        o.procs, o.threads, o.keys, o.skew, o.write_pct, o.rate, o.value_bytes, o.load_ms, o.write_ms, o.near_ttl, o.server_ttl, o.prefill, o.secs, o.warmup, o.stale_bound_ms
    );
    println!();
    println!(
        "| mode | ops/s | read p50 ms | read p95 ms | read p99 ms | read service p50 µs | read service p99 ms | write p99 ms | backend loads/s | reads | stale reads (> {} ms) | max staleness ms | errors |",
        o.stale_bound_ms
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.0} | {:.3} | {:.3} | {:.3} | {:.1} | {:.3} | {:.3} | {:.1} | {} | {} | {:.1} | {} |",
            r.mode, r.ops_per_s, r.read_p[0], r.read_p[1], r.read_p[2], r.svc_p50_us, r.svc_p99, r.write_p99, r.loads_per_s, r.reads, r.stale, r.stale_max_ms, r.errors
        );
    }
    for s in skipped {
        println!("\n{s}");
    }
}
