//! The `stampede` scenario: many clients read one hot key with a short TTL; whoever is told
//! to recompute it "calls the database" (a 200 ms sleep, counted) and stores the result. It
//! measures how many backend calls each expiry costs and what the readers wait, for four ways
//! of protecting (or not) the backend:
//!
//! | mode | server | what each client does |
//! |---|---|---|
//! | `mc-plain` | memcached | `get`; on a miss recompute and `set` (everyone who misses recomputes) |
//! | `mc-lock` | memcached | `get`; on a miss `add lock:<key> 0 5 1`: the winner re-checks with `get`, recomputes, `set`s, `delete`s the lock; losers sleep 50 ms and start over |
//! | `larder-meta` | larder | `mg <key> v t c N5 R2`; `W` → recompute and `ms <key> <len> T2`; a value (with or without `Z`) is used at once; `Z` with the empty vivified value → sleep 50 ms and start over |
//! | `larder-grace` | larder `-o grace=30s` | the `mc-plain` client, unchanged: the server hands the first getter after expiry a miss and everyone else the old value |
//! | `larder-coalesce` | larder `-o grace=30s,coalesce=2s` | the `mc-plain` client, unchanged: besides grace, other gets of an *absent* key wait for the first getter's `set` |
//!
//! `--cold` measures the other stampede: the key is absent when the clients start (a restart,
//! a first deploy) and again after a `flush_all` half way through; values never expire, so
//! each of those two moments is one round.
//!
//! Why these choices:
//! - The key is set once before the clients start (the cold-start stampede is not what is
//!   measured; grace mode cannot help a key that was never stored).
//! - Each client thinks 10 ms between reads, so 200 clients make ~20k reads/s: a read-heavy
//!   hot key, not a throughput test.
//! - `R2` on a 2-second TTL: server clocks tick in whole seconds and `R` wins when the TTL
//!   left is *below* the threshold, so `R1` could only fire once the item is already expired;
//!   with `R2` the refresh is handed out at the first read after one clock tick, i.e. about
//!   every second, before any reader sees a miss. The price: the winner has only until the
//!   next clock tick (at most 1 s) to store the new value; a winner held up longer lets the
//!   item expire and the `N` path hands out a second `W` (two backend calls). The `W` winner recomputes synchronously
//!   (it gets the old value but, like meta-memcache's recache path, treats the win as a miss),
//!   so its read costs 200 ms like every other mode's winner. `N5` is the lease: if the key
//!   does expire, the vivified placeholder lives 5 s (the same as grace mode's default
//!   `grace_lease` and the lock's TTL).
//! - Losers that must wait (mc-lock losers, meta `Z` on an empty placeholder) sleep 50 ms per
//!   retry, a short fixed wait (meta-memcache's lease policy waits longer and backs off).
//!
//! Latency is measured per read attempt: from its start until the client has a usable value,
//! including retries, sleeps and its own recompute. "hit p99" is the same client's latency for
//! attempts whose first request returned a usable value: the plain-hit baseline of that run.
//!
//! Backend calls are grouped into refresh rounds: a call that starts within 0.5 s (a quarter
//! of the TTL) of the first call of the current round belongs to it, otherwise it opens a new
//! round. Successive expiries are at least ~1 s apart (whole-second clocks), so a round is one
//! expiry (or one `R` refresh). The goal is 1 backend call per round.
//!
//! Errors: any unexpected reply line, an I/O error or timeout (2 s per request), or an
//! attempt that has no value after 10 s. The client reconnects after an error.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::server::{self, Server, ServerSpec};

/// The four client/server combinations compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    McPlain,
    McLock,
    LarderMeta,
    LarderGrace,
    LarderCoalesce,
}

impl Mode {
    pub const ALL: [Mode; 5] = [Mode::McPlain, Mode::McLock, Mode::LarderMeta, Mode::LarderGrace, Mode::LarderCoalesce];

    pub fn name(self) -> &'static str {
        match self {
            Mode::McPlain => "mc-plain",
            Mode::McLock => "mc-lock",
            Mode::LarderMeta => "larder-meta",
            Mode::LarderGrace => "larder-grace",
            Mode::LarderCoalesce => "larder-coalesce",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }

    pub fn is_larder(self) -> bool {
        matches!(self, Mode::LarderMeta | Mode::LarderGrace | Mode::LarderCoalesce)
    }

    /// Extra server flags for this mode.
    pub fn server_args(self) -> Vec<String> {
        match self {
            Mode::LarderGrace => vec!["-o".into(), "grace=30s".into()],
            Mode::LarderCoalesce => vec!["-o".into(), "grace=30s,coalesce=2s".into()],
            _ => Vec::new(),
        }
    }

    fn title(self) -> &'static str {
        match self {
            Mode::McPlain => "memcached, plain get/set clients",
            Mode::McLock => "memcached, client-side lock (add lock key; losers sleep 50 ms and retry)",
            Mode::LarderMeta => "larder, meta protocol (mg N5 R2: W recomputes, Z uses the value or waits 50 ms)",
            Mode::LarderGrace => "larder -o grace=30s, plain get/set clients",
            Mode::LarderCoalesce => "larder -o grace=30s,coalesce=2s, plain get/set clients",
        }
    }
}

/// The constants of the scenario; the tests shorten `duration` and `clients`.
#[derive(Clone, Debug)]
pub struct Config {
    pub clients: usize,
    pub duration: Duration,
    pub key: String,
    pub ttl: u32,
    pub recompute: Duration,
    pub think: Duration,
    pub retry_wait: Duration,
    pub lock_ttl: u32,
    pub lease_ttl: u32,
    pub recache_secs: u32,
    pub value_size: usize,
    pub request_timeout: Duration,
    pub attempt_timeout: Duration,
    /// Cold start: the key is absent at the start and flushed half way
    /// through; values never expire.
    pub cold: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            clients: 50,
            duration: Duration::from_secs(60),
            key: "stampede:hot".into(),
            ttl: 2,
            recompute: Duration::from_millis(200),
            think: Duration::from_millis(10),
            retry_wait: Duration::from_millis(50),
            lock_ttl: 5,
            lease_ttl: 5,
            recache_secs: 2,
            value_size: 100,
            request_timeout: Duration::from_secs(2),
            attempt_timeout: Duration::from_secs(10),
            cold: false,
        }
    }
}

impl Config {
    /// The TTL clients store values with: none in a cold-start run, where
    /// only the start and the flush make the key absent.
    pub fn value_ttl(&self) -> u32 {
        if self.cold {
            0
        } else {
            self.ttl
        }
    }

    /// Backend calls this close to the first of a round belong to it.
    fn round_window(&self) -> f64 {
        if self.cold {
            0.5
        } else {
            self.ttl as f64 / 4.0
        }
    }
}

/// What one mode × client count produced.
#[derive(Debug)]
pub struct Outcome {
    pub mode: Mode,
    pub clients: usize,
    pub elapsed: f64,
    pub backend_calls: u64,
    /// Backend calls in each refresh round, in order.
    pub rounds: Vec<usize>,
    /// Start of every backend call, seconds since the backend was created (sorted).
    pub call_times: Vec<f64>,
    pub reads: u64,
    pub retries: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub latency: Histogram<u64>,
    pub hit_latency: Histogram<u64>,
    /// The server's CPU over the run (% of one core).
    pub server_cpu: f64,
    /// Everything else on the machine meanwhile (% of one core): other people's work, noise.
    pub other_cpu: f64,
    /// When the run started (UTC, HH:MM:SS), to line it up with other activity.
    pub started: String,
}

impl Outcome {
    pub fn calls_per_round(&self) -> f64 {
        if self.rounds.is_empty() {
            f64::NAN
        } else {
            self.backend_calls as f64 / self.rounds.len() as f64
        }
    }

    pub fn max_round(&self) -> usize {
        self.rounds.iter().copied().max().unwrap_or(0)
    }

    fn ms(h: &Histogram<u64>, q: f64) -> f64 {
        if h.is_empty() {
            f64::NAN
        } else if q >= 1.0 {
            h.max() as f64 / 1000.0
        } else {
            h.value_at_quantile(q) as f64 / 1000.0
        }
    }

    pub fn p50_ms(&self) -> f64 {
        Self::ms(&self.latency, 0.5)
    }
    pub fn p99_ms(&self) -> f64 {
        Self::ms(&self.latency, 0.99)
    }
    pub fn p999_ms(&self) -> f64 {
        Self::ms(&self.latency, 0.999)
    }
    /// Attempts that took 50 ms or more (they waited for a recompute, their own or another's).
    pub fn slow_reads(&self) -> u64 {
        self.latency.count_between(50_000, u64::MAX)
    }
    pub fn max_ms(&self) -> f64 {
        Self::ms(&self.latency, 1.0)
    }
    pub fn hit_p99_ms(&self) -> f64 {
        Self::ms(&self.hit_latency, 0.99)
    }

    /// The call times of the rounds with more than one call (diagnostics, at most 5 rounds).
    pub fn crowded_rounds(&self) -> String {
        let mut out = Vec::new();
        let mut i = 0;
        for &n in &self.rounds {
            if n > 1 && out.len() < 5 {
                let t: Vec<String> = self.call_times[i..i + n].iter().map(|t| format!("{t:.3}")).collect();
                out.push(format!("[{}]", t.join(" ")));
            }
            i += n;
        }
        out.join(" ")
    }

    pub fn to_text(&self) -> String {
        let crowded = if self.max_round() > 1 { format!("; crowded rounds at s {}", self.crowded_rounds()) } else { String::new() };
        let text = format!(
            "{} x{} ({:.1} s): {} backend calls in {} rounds ({:.2}/round, max {}), reads {}, retries {}, p50 {:.2} ms p99 {:.2} ms p99.9 {:.2} ms max {:.1} ms, {} reads >= 50 ms (hit p99 {:.2} ms), errors {}{}; server cpu {:.0}%, other processes {:.0}% of a core",
            self.mode.name(),
            self.clients,
            self.elapsed,
            self.backend_calls,
            self.rounds.len(),
            self.calls_per_round(),
            self.max_round(),
            self.reads,
            self.retries,
            self.p50_ms(),
            self.p99_ms(),
            self.p999_ms(),
            self.max_ms(),
            self.slow_reads(),
            self.hit_p99_ms(),
            self.errors,
            self.first_error.as_ref().map(|e| format!(" (first: {e})")).unwrap_or_default(),
            self.server_cpu,
            self.other_cpu
        );
        text + &crowded
    }
}

/// Groups sorted call start times into rounds: a call within `window` seconds of the first
/// call of the current round joins it. Returns the number of calls in each round.
pub fn rounds(times: &[f64], window: f64) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let mut start = f64::NEG_INFINITY;
    for &t in times {
        if t - start <= window {
            *out.last_mut().unwrap() += 1;
        } else {
            start = t;
            out.push(1);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The wire: one blocking connection and the handful of commands the clients use.

/// A `mg` reply, reduced to what the client decides on.
#[derive(Debug, PartialEq, Eq)]
pub struct Mg {
    /// `EN`: no item (only without `N`).
    pub miss: bool,
    pub value: Vec<u8>,
    /// `W`: this client refills.
    pub win: bool,
    /// `Z`: someone else already won.
    pub z: bool,
}

pub struct Conn<S: Read + Write> {
    r: BufReader<S>,
    line: String,
}

fn bad(what: &str, line: &str) -> String {
    format!("{what}: unexpected reply {:?}", line.trim_end())
}

impl Conn<TcpStream> {
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<Conn<TcpStream>, String> {
        let s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect: {e}"))?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        s.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        Ok(Conn::new(s))
    }
}

impl<S: Read + Write> Conn<S> {
    pub fn new(s: S) -> Conn<S> {
        Conn { r: BufReader::new(s), line: String::new() }
    }

    fn send(&mut self, b: &[u8]) -> Result<(), String> {
        self.r.get_mut().write_all(b).map_err(|e| format!("write: {e}"))
    }

    fn read_line(&mut self) -> Result<&str, String> {
        self.line.clear();
        match self.r.read_line(&mut self.line) {
            Ok(0) => Err("connection closed".into()),
            Ok(_) if self.line.ends_with("\r\n") => Ok(&self.line),
            Ok(_) => Err(format!("truncated line {:?}", self.line)),
            Err(e) => Err(format!("read: {e}")),
        }
    }

    /// `len` bytes of data and the `\r\n` after them.
    fn read_data(&mut self, len: usize) -> Result<Vec<u8>, String> {
        let mut v = vec![0u8; len + 2];
        self.r.read_exact(&mut v).map_err(|e| format!("read data: {e}"))?;
        if !v.ends_with(b"\r\n") {
            return Err("data block not terminated by \\r\\n".into());
        }
        v.truncate(len);
        Ok(v)
    }

    /// `get key`: the value, or None on a miss.
    pub fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, String> {
        self.send(format!("get {key}\r\n").as_bytes())?;
        let line = self.read_line()?.to_string();
        if line == "END\r\n" {
            return Ok(None);
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 4 || f[0] != "VALUE" || f[1] != key {
            return Err(bad("get", &line));
        }
        let len: usize = f[3].parse().map_err(|_| bad("get", &line))?;
        let v = self.read_data(len)?;
        let end = self.read_line()?;
        if end != "END\r\n" {
            return Err(bad("get (END)", end));
        }
        Ok(Some(v))
    }

    fn storage(&mut self, cmd: &str, key: &str, ttl: u32, value: &[u8]) -> Result<bool, String> {
        let mut b = format!("{cmd} {key} 0 {ttl} {}\r\n", value.len()).into_bytes();
        b.extend_from_slice(value);
        b.extend_from_slice(b"\r\n");
        self.send(&b)?;
        match self.read_line()? {
            "STORED\r\n" => Ok(true),
            "NOT_STORED\r\n" => Ok(false),
            other => Err(bad(cmd, other)),
        }
    }

    pub fn set(&mut self, key: &str, ttl: u32, value: &[u8]) -> Result<(), String> {
        if self.storage("set", key, ttl, value)? {
            Ok(())
        } else {
            Err("set: NOT_STORED".into())
        }
    }

    /// `add`: true if stored (we hold the lock).
    pub fn add(&mut self, key: &str, ttl: u32, value: &[u8]) -> Result<bool, String> {
        self.storage("add", key, ttl, value)
    }

    pub fn flush_all(&mut self) -> Result<(), String> {
        self.send(b"flush_all\r\n")?;
        match self.read_line()? {
            "OK\r\n" => Ok(()),
            other => Err(bad("flush_all", other)),
        }
    }

    pub fn delete(&mut self, key: &str) -> Result<(), String> {
        self.send(format!("delete {key}\r\n").as_bytes())?;
        match self.read_line()? {
            "DELETED\r\n" | "NOT_FOUND\r\n" => Ok(()),
            other => Err(bad("delete", other)),
        }
    }

    /// `mg key v t c N<lease> R<recache>`.
    pub fn mg(&mut self, key: &str, lease: u32, recache: u32) -> Result<Mg, String> {
        self.send(format!("mg {key} v t c N{lease} R{recache}\r\n").as_bytes())?;
        let line = self.read_line()?.to_string();
        if line == "EN\r\n" {
            return Ok(Mg { miss: true, value: Vec::new(), win: false, z: false });
        }
        let mut f = line.split_whitespace();
        if f.next() != Some("VA") {
            return Err(bad("mg", &line));
        }
        let len: usize = f.next().and_then(|l| l.parse().ok()).ok_or_else(|| bad("mg", &line))?;
        let (mut win, mut z) = (false, false);
        for flag in f {
            match flag {
                "W" => win = true,
                "Z" => z = true,
                _ => {}
            }
        }
        let value = self.read_data(len)?;
        Ok(Mg { miss: false, value, win, z })
    }

    /// `ms key <len> T<ttl>`.
    pub fn ms(&mut self, key: &str, ttl: u32, value: &[u8]) -> Result<(), String> {
        let mut b = format!("ms {key} {} T{ttl}\r\n", value.len()).into_bytes();
        b.extend_from_slice(value);
        b.extend_from_slice(b"\r\n");
        self.send(&b)?;
        match self.read_line()? {
            "HD\r\n" => Ok(()),
            other => Err(bad("ms", other)),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The clients.

/// The "database": every call sleeps for the recompute time and is counted.
pub struct Backend {
    t0: Instant,
    recompute: Duration,
    value_size: usize,
    calls: Mutex<Vec<f64>>,
}

impl Backend {
    pub fn new(recompute: Duration, value_size: usize) -> Backend {
        Backend { t0: Instant::now(), recompute, value_size, calls: Mutex::new(Vec::new()) }
    }

    /// One backend call: returns the fresh value.
    pub fn call(&self) -> Vec<u8> {
        let at = self.t0.elapsed().as_secs_f64();
        let n = {
            let mut c = self.calls.lock().unwrap();
            c.push(at);
            c.len()
        };
        std::thread::sleep(self.recompute);
        self.value(n as u64)
    }

    /// A value of the configured size (never empty, so an empty value means "placeholder").
    pub fn value(&self, generation: u64) -> Vec<u8> {
        let mut v = format!("gen {generation} ").into_bytes();
        v.resize(self.value_size.max(v.len()), b'x');
        v
    }

    pub fn calls(&self) -> Vec<f64> {
        let mut c = self.calls.lock().unwrap().clone();
        c.sort_by(|a, b| a.total_cmp(b));
        c
    }
}

/// How one read attempt ended.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Attempt {
    /// The first request returned a usable value.
    pub immediate: bool,
    /// This client called the backend.
    pub recomputed: bool,
    /// Sleeps before trying again.
    pub retries: u32,
}

/// One read attempt in `mode`: returns once the client has a usable value.
pub fn attempt<S: Read + Write>(mode: Mode, c: &mut Conn<S>, cfg: &Config, backend: &Backend) -> Result<Attempt, String> {
    let started = Instant::now();
    let mut a = Attempt::default();
    let key = cfg.key.as_str();
    loop {
        if started.elapsed() > cfg.attempt_timeout {
            return Err(format!("no value after {:?} ({} retries)", cfg.attempt_timeout, a.retries));
        }
        let first = a.retries == 0;
        match mode {
            Mode::McPlain | Mode::LarderGrace | Mode::LarderCoalesce => {
                if c.get(key)?.is_some() {
                    a.immediate = first;
                    return Ok(a);
                }
                let v = backend.call();
                c.set(key, cfg.value_ttl(), &v)?;
                a.recomputed = true;
                return Ok(a);
            }
            Mode::McLock => {
                if c.get(key)?.is_some() {
                    a.immediate = first;
                    return Ok(a);
                }
                let lock = format!("lock:{key}");
                if c.add(&lock, cfg.lock_ttl, b"1")? {
                    // Someone may have refilled between our miss and our lock.
                    if c.get(key)?.is_none() {
                        let v = backend.call();
                        c.set(key, cfg.value_ttl(), &v)?;
                        a.recomputed = true;
                    }
                    c.delete(&lock)?;
                    return Ok(a);
                }
                std::thread::sleep(cfg.retry_wait);
                a.retries += 1;
            }
            Mode::LarderMeta => {
                let r = c.mg(key, cfg.lease_ttl, cfg.recache_secs)?;
                if r.win || r.miss {
                    let v = backend.call();
                    c.ms(key, cfg.value_ttl(), &v)?;
                    a.recomputed = true;
                    return Ok(a);
                }
                if !r.value.is_empty() {
                    a.immediate = first;
                    return Ok(a);
                }
                // Z on the empty placeholder: the winner is still recomputing.
                std::thread::sleep(cfg.retry_wait);
                a.retries += 1;
            }
        }
    }
}

#[derive(Default)]
struct ClientTotals {
    reads: u64,
    retries: u64,
    errors: u64,
    first_error: Option<String>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram bounds")
}

/// Runs `cfg.clients` client threads against `addr` for `cfg.duration`.
pub fn run_clients(addr: SocketAddr, mode: Mode, cfg: &Config) -> Result<Outcome, String> {
    let backend = Arc::new(Backend::new(cfg.recompute, cfg.value_size));
    // The key exists before the clients start (see the module docs),
    // except in a cold-start run.
    if !cfg.cold {
        let mut c = Conn::connect(addr, cfg.request_timeout)?;
        let v = backend.value(0);
        match mode {
            Mode::LarderMeta => c.ms(&cfg.key, cfg.ttl, &v)?,
            _ => c.set(&cfg.key, cfg.ttl, &v)?,
        }
        c.delete(&format!("lock:{}", cfg.key))?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let mut handles = Vec::new();
    for i in 0..cfg.clients {
        let (backend, stop, cfg) = (backend.clone(), stop.clone(), cfg.clone());
        let h = std::thread::Builder::new()
            .name(format!("stampede-{i}"))
            .stack_size(256 * 1024)
            .spawn(move || {
                let mut lat = histogram();
                let mut hit = histogram();
                let mut t = ClientTotals::default();
                // Spread the clients over one think time so they do not read in lockstep.
                std::thread::sleep(cfg.think.mul_f64(i as f64 / cfg.clients as f64));
                let mut conn: Option<Conn<TcpStream>> = None;
                while !stop.load(Ordering::Relaxed) {
                    let c = match conn.as_mut() {
                        Some(c) => c,
                        None => match Conn::connect(addr, cfg.request_timeout) {
                            Ok(c) => conn.insert(c),
                            Err(e) => {
                                t.errors += 1;
                                t.first_error.get_or_insert(e);
                                std::thread::sleep(Duration::from_millis(10));
                                continue;
                            }
                        },
                    };
                    let start = Instant::now();
                    match attempt(mode, c, &cfg, &backend) {
                        Ok(a) => {
                            let us = (start.elapsed().as_micros() as u64).max(1);
                            lat.saturating_record(us);
                            if a.immediate {
                                hit.saturating_record(us);
                            }
                            t.reads += 1;
                            t.retries += a.retries as u64;
                        }
                        Err(e) => {
                            t.errors += 1;
                            t.first_error.get_or_insert(e);
                            conn = None;
                        }
                    }
                    std::thread::sleep(cfg.think);
                }
                (lat, hit, t)
            })
            .map_err(|e| format!("spawning client thread: {e}"))?;
        handles.push(h);
    }
    if cfg.cold {
        // The second cold start: everything flushed half way through.
        std::thread::sleep(cfg.duration / 2);
        let mut c = Conn::connect(addr, cfg.request_timeout)?;
        c.flush_all()?;
        std::thread::sleep(cfg.duration - cfg.duration / 2);
    } else {
        std::thread::sleep(cfg.duration);
    }
    stop.store(true, Ordering::Relaxed);
    let mut latency = histogram();
    let mut hit_latency = histogram();
    let mut tot = ClientTotals::default();
    for h in handles {
        let (l, hl, t) = h.join().map_err(|_| "a client thread panicked".to_string())?;
        latency.add(&l).map_err(|e| e.to_string())?;
        hit_latency.add(&hl).map_err(|e| e.to_string())?;
        tot.reads += t.reads;
        tot.retries += t.retries;
        tot.errors += t.errors;
        if tot.first_error.is_none() {
            tot.first_error = t.first_error;
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let call_times = backend.calls();
    let window = cfg.round_window();
    Ok(Outcome {
        mode,
        clients: cfg.clients,
        elapsed,
        backend_calls: call_times.len() as u64,
        rounds: rounds(&call_times, window),
        call_times,
        reads: tot.reads,
        retries: tot.retries,
        errors: tot.errors,
        first_error: tot.first_error,
        latency,
        hit_latency,
        server_cpu: f64::NAN,
        other_cpu: f64::NAN,
        started: String::new(),
    })
}

/// Starts the mode's server (fresh, pinned to `server_cpu`), runs the clients, stops it.
pub fn run_mode(mode: Mode, binary: &str, server_cpu: &str, cfg: &Config) -> Result<Outcome, String> {
    let spec = ServerSpec {
        name: if mode.is_larder() { "larder".into() } else { "memcached".into() },
        binary: binary.to_string(),
        threads: 1,
        memory_mb: 64,
        port: server::free_port(),
        cpus: server_cpu.to_string(),
        extra_args: mode.server_args(),
    };
    let srv = Server::start(&spec)?;
    let started = utc_now();
    let (server_meter, own_meter, machine) = (server::CpuMeter::start(srv.pid()), server::CpuMeter::start(std::process::id()), server::MachineMeter::start());
    let out = run_clients(srv.addr, mode, cfg);
    let (server_cpu, own_cpu, busy) = (server_meter.finish(), own_meter.finish(), machine.finish());
    srv.stop();
    out.map(|o| Outcome { server_cpu, other_cpu: (busy - server_cpu - own_cpu).max(0.0), started, ..o })
}

/// The time of day, UTC, HH:MM:SS.
fn utc_now() -> String {
    let s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) % 86400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

// ---------------------------------------------------------------------------------------
// The command and its report.

/// The server command line of a mode, for the report.
fn server_line(mode: Mode, binary: &str, server_cpu: &str) -> String {
    ServerSpec {
        name: String::new(),
        binary: binary.to_string(),
        threads: 1,
        memory_mb: 64,
        port: 0,
        cpus: server_cpu.to_string(),
        extra_args: mode.server_args(),
    }
    .command_line()
    .replace("-p 0 ", "-p <free port> ")
}

fn f2(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "n/a".into()
    }
}

/// How a stampede run was made, for its report: what reproduces it and
/// what may have disturbed it.
pub struct RunInfo<'a> {
    /// The `larder-bench stampede …` command line.
    pub cmdline: &'a str,
    /// When it started (UTC).
    pub started: &'a str,
    /// The machine's load before and after.
    pub load: (&'a str, &'a str),
    /// Each mode's server command line.
    pub servers: &'a [(Mode, String)],
    /// A warning to print at the top (empty: none).
    pub note: &'a str,
}

/// The headings of the sections `larder-bench stampede` writes.
pub const HEADING: &str = "## Stampede";
pub const COLD_HEADING: &str = "## Stampede: cold start";

/// The `## Stampede` (or, with `cfg.cold`, the cold-start) section of BENCHMARKS.md.
pub fn markdown(results: &[Outcome], cfg: &Config, run: &RunInfo<'_>) -> String {
    let RunInfo { cmdline, started, load, servers, note } = *run;
    let mut s = String::new();
    s.push_str(if cfg.cold { COLD_HEADING } else { HEADING });
    s.push_str("\n\n");
    if !note.is_empty() {
        s.push_str(&format!("> **{note}**\n\n"));
    }
    if cfg.cold {
        s.push_str(&format!(
            "One hot key, read by N clients (blocking connections, one thread each, {think} ms think \
time between reads), **absent when the clients start** (a restart, a first deploy) **and again \
after a `flush_all`** sent half way through the run. A client told to recompute \"calls the \
database\" (sleeps {rc} ms; every call counted) and stores the value without expiry, so the run \
has exactly two cold starts. Each mode runs {dur} s against a freshly started server (`-t 1`, \
pinned to CPU 0; the clients are pinned to CPU 1). Generated by `larder-bench stampede --cold`:\n\n```\n{cmdline}\n```\n\n",
            think = cfg.think.as_millis(),
            rc = cfg.recompute.as_millis(),
            dur = cfg.duration.as_secs_f64(),
        ));
    } else {
    s.push_str(&format!(
        "One hot key with a {ttl} s TTL, read by N clients (blocking connections, one thread each, \
{think} ms think time between reads). A client told to recompute \"calls the database\" \
(sleeps {rc} ms; every call counted) and stores the value with a {ttl} s TTL. The key is stored \
once before the clients start. Each mode runs {dur} s against a freshly started server \
(`-t 1`, pinned to CPU 0; the clients are pinned to CPU 1). Generated by `larder-bench stampede`:\n\n```\n{cmdline}\n```\n\n",
        ttl = cfg.ttl,
        think = cfg.think.as_millis(),
        rc = cfg.recompute.as_millis(),
        dur = cfg.duration.as_secs_f64(),
    ));
    }
    s.push_str("| mode | what the client does |\n|---|---|\n");
    for m in Mode::ALL {
        let what = match m {
            Mode::McPlain => "`get`; on a miss recompute and `set` — everyone who misses recomputes",
            Mode::McLock => "`get`; on a miss `add lock:<key> 0 5 1`; the winner re-checks with `get`, recomputes, `set`s and `delete`s the lock; losers sleep 50 ms and start over",
            Mode::LarderMeta => "`mg <key> v t c N5 R2`; on `W` recompute (synchronously, like meta-memcache's recache) and `ms <key> <len> T2`; a non-empty value, `Z` or not, is used at once; `Z` with the empty vivified placeholder: sleep 50 ms and start over",
            Mode::LarderGrace => "the `mc-plain` client unchanged; the server (`-o grace=30s`, lease 5 s) gives the first getter after expiry a miss and everyone else the old value",
            Mode::LarderCoalesce => "the `mc-plain` client unchanged; the server (`-o grace=30s,coalesce=2s`) does what larder-grace does, and besides gives the first getter of an *absent* key a miss and holds the others' gets (up to 2 s) until its `set` arrives",
        };
        s.push_str(&format!("| {} | {what} |\n", m.name()));
    }
    s.push_str("\nServers:\n\n");
    for (m, line) in servers {
        s.push_str(&format!("- {}: `{line}`\n", m.name()));
    }
    s.push_str(if cfg.cold {
        "\nColumns: *rounds* are cold starts (backend calls grouped: a call within 0.5 s of the \
first call of the current round belongs to it; the run has two); *calls/round*"
    } else {
        "\nColumns: *rounds* are refresh rounds (backend calls grouped: a call within 0.5 s of \
the first call of the current round belongs to it; one round = one expiry, or one early `R` \
refresh for larder-meta); *calls/round*"
    });
    s.push_str(
        " is the goal figure (1 = no stampede); *latency* is per read \
attempt, from its start until the client has a usable value, including waits, retries and its \
own recompute; *hit p99* is the p99 of attempts whose first request returned a value — the \
plain-hit baseline of the same run; *reads ≥ 50 ms* counts the attempts that waited for a \
recompute (their own or another client's): with a 10 ms think time a client makes ~100 reads/s, \
so the few hundred slow reads per minute of a stampede stay below the 1% that p99 can see; \
p99.9, max and this count show them; *retries* are 50 ms sleeps; *errors* are unexpected replies, \
I/O errors, 2 s request timeouts or attempts without a value after 10 s; *other processes' CPU* \
is the machine's busy time minus the server's and the clients' during the run, in % of one core \
(200 = both cores busy with other people's work): the noise behind the latency figures.\n\n",
    );
    s.push_str("| mode | clients | backend calls | rounds | calls/round | max calls in a round | reads | reads ≥ 50 ms | retries | p50 (ms) | p99 (ms) | p99.9 (ms) | max (ms) | hit p99 (ms) | errors | server CPU (%) | other processes' CPU (%) | started (UTC) |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for r in results {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {} |\n",
            r.mode.name(),
            r.clients,
            r.backend_calls,
            r.rounds.len(),
            f2(r.calls_per_round()),
            r.max_round(),
            r.reads,
            r.slow_reads(),
            r.retries,
            f2(r.p50_ms()),
            f2(r.p99_ms()),
            f2(r.p999_ms()),
            f2(r.max_ms()),
            f2(r.hit_p99_ms()),
            r.errors,
            r.server_cpu,
            r.other_cpu,
            r.started
        ));
    }
    let (nproc, model, kernel, _) = server::machine();
    s.push_str(&format!(
        "\nMachine: {nproc} CPUs ({model}), kernel {kernel}; started {started}; load average before / after: {} / {}.\n",
        load.0, load.1
    ));
    s
}

/// Replaces the section that starts with the line `heading` (up to the next `## ` heading)
/// in `doc` with `section`, or appends it.
pub fn splice_section(doc: &str, heading: &str, section: &str) -> String {
    let section = section.trim_end_matches('\n');
    let lines: Vec<&str> = doc.lines().collect();
    let Some(start) = lines.iter().position(|l| l.trim_end() == heading) else {
        let mut out = doc.trim_end_matches('\n').to_string();
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(section);
        out.push('\n');
        return out;
    };
    let mut in_code = false;
    let mut end = lines.len();
    for (i, l) in lines.iter().enumerate().skip(start + 1) {
        if l.starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && l.starts_with("## ") {
            end = i;
            break;
        }
    }
    let mut out = lines[..start].join("\n");
    if start > 0 {
        out.push('\n');
    }
    out.push_str(section);
    out.push('\n');
    if end < lines.len() {
        out.push('\n');
        out.push_str(&lines[end..].join("\n"));
        out.push('\n');
    }
    out
}

/// The section of an existing file under `heading`, if any (so `compare` keeps it).
pub fn existing_section(doc: &str, heading: &str) -> Option<String> {
    let lines: Vec<&str> = doc.lines().collect();
    let start = lines.iter().position(|l| l.trim_end() == heading)?;
    let mut in_code = false;
    let mut end = lines.len();
    for (i, l) in lines.iter().enumerate().skip(start + 1) {
        if l.starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && l.starts_with("## ") {
            end = i;
            break;
        }
    }
    Some(lines[start..end].join("\n"))
}

pub const USAGE: &str = "\
  larder-bench stampede [--memcached BIN] [--larder BIN] [--clients 50,200] [--duration 60]
                        [--modes mc-plain,mc-lock,larder-meta,larder-grace,larder-coalesce]
                        [--cold] [--out BENCHMARKS.md] [--smoke] [--server-cpu 0] [--gen-cpu 1]
                        [--note TEXT]
";

/// `larder-bench stampede`.
pub fn cmd(argv: &[String]) -> Result<i32, String> {
    let a = crate::args::Args::parse(argv)?;
    let smoke = a.flag("smoke");
    let memcached = a.str("memcached").unwrap_or_else(|| "/usr/bin/memcached".into());
    let larder = a.str("larder");
    let mut cfg = Config { cold: a.flag("cold"), ..Config::default() };
    let clients: Vec<usize> = match a.str("clients") {
        Some(s) => s.split(',').map(|c| c.trim().parse().map_err(|_| format!("--clients: bad number {c:?}"))).collect::<Result<_, _>>()?,
        None if smoke => vec![20],
        None => vec![50, 200],
    };
    cfg.duration = Duration::from_secs_f64(a.seconds("duration")?.unwrap_or(if smoke { 5.0 } else { 60.0 }));
    let mut modes: Vec<Mode> = match a.str("modes") {
        Some(s) => s.split(',').map(|m| Mode::parse(m.trim()).ok_or_else(|| format!("--modes: unknown mode {m:?}"))).collect::<Result<_, _>>()?,
        None => Mode::ALL.to_vec(),
    };
    if larder.is_none() {
        if modes.iter().any(|m| m.is_larder()) {
            eprintln!("larder-bench stampede: no --larder binary: larder modes skipped");
        }
        modes.retain(|m| !m.is_larder());
    }
    let out = a.str("out");
    let note = a.str("note").unwrap_or_default();
    // Pinning needs two CPUs.
    let two = server::machine().0 >= 2;
    let server_cpu = a.str("server-cpu").unwrap_or_else(|| if two { "0".into() } else { String::new() });
    let gen_cpu = a.str("gen-cpu").unwrap_or_else(|| if two { "1".into() } else { String::new() });
    a.check_unused()?;
    if !gen_cpu.is_empty() {
        server::pin_self(&gen_cpu)?;
    }
    let started = std::process::Command::new("date").arg("-u").arg("+%Y-%m-%d %H:%M UTC").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
    let load_before = server::machine().3;
    let mut results = Vec::new();
    let mut servers = Vec::new();
    for &m in &modes {
        let bin = if m.is_larder() { larder.clone().unwrap() } else { memcached.clone() };
        servers.push((m, server_line(m, &bin, &server_cpu)));
    }
    for &n in &clients {
        for &m in &modes {
            let bin = if m.is_larder() { larder.as_deref().unwrap() } else { memcached.as_str() };
            let c = Config { clients: n, ..cfg.clone() };
            eprintln!("stampede: {} ({}), {n} clients, {:.0} s ...", m.name(), m.title(), c.duration.as_secs_f64());
            let r = run_mode(m, bin, &server_cpu, &c)?;
            eprintln!("  {}", r.to_text());
            results.push(r);
        }
    }
    let load_after = server::machine().3;
    let cmdline = format!("larder-bench {}", std::iter::once("stampede").chain(argv.iter().map(String::as_str)).map(crate::shell_quote).collect::<Vec<_>>().join(" "));
    let run = RunInfo { cmdline: &cmdline, started: &started, load: (&load_before, &load_after), servers: &servers, note: &note };
    let md = markdown(&results, &cfg, &run);
    if let Some(path) = out {
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        let heading = if cfg.cold { COLD_HEADING } else { HEADING };
        std::fs::write(&path, splice_section(&old, heading, &md)).map_err(|e| format!("{path}: {e}"))?;
        eprintln!("wrote the {} section of {path}", heading.trim_start_matches("## "));
    } else {
        print!("{md}");
    }
    let bad: Vec<&Outcome> = results.iter().filter(|r| r.errors > 0 || r.reads == 0).collect();
    for r in &bad {
        eprintln!("PROBLEM: {}", r.to_text());
    }
    Ok(if bad.is_empty() { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_group_calls_within_the_window() {
        assert_eq!(rounds(&[], 0.5), Vec::<usize>::new());
        assert_eq!(rounds(&[1.0, 1.1, 1.49, 1.51, 3.0, 5.0, 5.2], 0.5), vec![3, 1, 1, 2]);
    }

    #[test]
    fn splice_replaces_or_appends_the_section() {
        let doc = "# t\n\n## A\na\n\n## Stampede\nold\n```\n## not a heading\n```\n\n## B\nb\n";
        let out = splice_section(doc, "## Stampede", "## Stampede\nnew\n");
        assert_eq!(out, "# t\n\n## A\na\n\n## Stampede\nnew\n\n## B\nb\n");
        let out2 = splice_section("# t\n\n## A\na\n", "## Stampede", "## Stampede\nnew\n");
        assert_eq!(out2, "# t\n\n## A\na\n\n## Stampede\nnew\n");
        assert_eq!(existing_section(doc, HEADING).unwrap(), "## Stampede\nold\n```\n## not a heading\n```\n");
        assert_eq!(existing_section("# t\n", HEADING), None);
    }

    /// A fake server: canned replies in, requests recorded.
    struct Fake {
        input: std::io::Cursor<Vec<u8>>,
        sent: Vec<u8>,
    }

    impl Read for Fake {
        fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(b)
        }
    }

    impl Write for Fake {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.sent.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn fake(replies: &str) -> Conn<Fake> {
        Conn::new(Fake { input: std::io::Cursor::new(replies.as_bytes().to_vec()), sent: Vec::new() })
    }

    fn quick() -> Config {
        Config { recompute: Duration::from_millis(1), retry_wait: Duration::from_millis(1), key: "k".into(), value_size: 3, ..Config::default() }
    }

    #[test]
    fn meta_client_waits_on_an_empty_z_and_recomputes_on_w() {
        let cfg = quick();
        let b = Backend::new(cfg.recompute, cfg.value_size);
        // Z on the placeholder twice, then the value.
        let mut c = fake("VA 0 t5 c1 Z\r\n\r\nVA 0 t5 c1 Z\r\n\r\nVA 3 t2 c2\r\nabc\r\n");
        assert_eq!(attempt(Mode::LarderMeta, &mut c, &cfg, &b).unwrap(), Attempt { immediate: false, recomputed: false, retries: 2 });
        // Z with the old value: used at once.
        let mut c = fake("VA 3 t1 c2 Z\r\nabc\r\n");
        assert_eq!(attempt(Mode::LarderMeta, &mut c, &cfg, &b).unwrap(), Attempt { immediate: true, recomputed: false, retries: 0 });
        // W (recache win on a hit): recompute and ms.
        let mut c = fake("VA 3 t1 c2 W\r\nabc\r\nHD\r\n");
        assert_eq!(attempt(Mode::LarderMeta, &mut c, &cfg, &b).unwrap(), Attempt { immediate: false, recomputed: true, retries: 0 });
        let sent = String::from_utf8(c.r.get_ref().sent.clone()).unwrap();
        assert_eq!(sent, "mg k v t c N5 R2\r\nms k 6 T2\r\ngen 1 \r\n");
        assert_eq!(b.calls().len(), 1);
        // Garbage is an error.
        let mut c = fake("SERVER_ERROR nope\r\n");
        assert!(attempt(Mode::LarderMeta, &mut c, &cfg, &b).is_err());
    }

    #[test]
    fn lock_client_waits_for_the_lock_holder_and_rechecks_after_winning() {
        let cfg = quick();
        let b = Backend::new(cfg.recompute, cfg.value_size);
        // miss, lock taken, (sleep) miss, lock won, still a miss: recompute, set, unlock.
        let mut c = fake("END\r\nNOT_STORED\r\nEND\r\nSTORED\r\nEND\r\nSTORED\r\nDELETED\r\n");
        assert_eq!(attempt(Mode::McLock, &mut c, &cfg, &b).unwrap(), Attempt { immediate: false, recomputed: true, retries: 1 });
        let sent = String::from_utf8(c.r.get_ref().sent.clone()).unwrap();
        assert_eq!(sent, "get k\r\nadd lock:k 0 5 1\r\n1\r\nget k\r\nadd lock:k 0 5 1\r\n1\r\nget k\r\nset k 0 2 6\r\ngen 1 \r\ndelete lock:k\r\n");
        // Won the lock but someone refilled meanwhile: no backend call.
        let mut c = fake("END\r\nSTORED\r\nVALUE k 0 3\r\nabc\r\nEND\r\nDELETED\r\n");
        assert_eq!(attempt(Mode::McLock, &mut c, &cfg, &b).unwrap(), Attempt { immediate: false, recomputed: false, retries: 0 });
        assert_eq!(b.calls().len(), 1);
    }

    #[test]
    fn plain_client_recomputes_on_every_miss() {
        let cfg = quick();
        let b = Backend::new(cfg.recompute, cfg.value_size);
        let mut c = fake("VALUE k 0 3\r\nabc\r\nEND\r\nEND\r\nSTORED\r\n");
        assert_eq!(attempt(Mode::McPlain, &mut c, &cfg, &b).unwrap(), Attempt { immediate: true, recomputed: false, retries: 0 });
        assert_eq!(attempt(Mode::LarderGrace, &mut c, &cfg, &b).unwrap(), Attempt { immediate: false, recomputed: true, retries: 0 });
        let mut c = fake("VALUE other 0 3\r\nabc\r\nEND\r\n");
        assert!(attempt(Mode::McPlain, &mut c, &cfg, &b).is_err(), "a value for another key is an error");
    }

    // Against the real servers, 6 s each with 20 clients (they run in parallel). The larder
    // binary is $LARDER or the one cargo built for this profile (`cargo test --workspace`
    // builds it; see larder_testkit::larder_binary); memcached is $MEMCACHED or
    // /usr/bin/memcached. Without one, the test fails under CI and prints SKIPPED elsewhere
    // (larder_testkit::require_or_skip).

    fn larder_bin() -> Option<String> {
        if let Ok(p) = std::env::var("LARDER") {
            return Some(p);
        }
        larder_testkit::find_larder_binary().map(|p| p.to_string_lossy().into_owned())
    }

    fn memcached_bin() -> Option<String> {
        let p = std::env::var("MEMCACHED").unwrap_or_else(|_| "/usr/bin/memcached".into());
        std::path::Path::new(&p).exists().then_some(p)
    }

    fn real(mode: Mode) -> Option<Outcome> {
        real_with(mode, false)
    }

    fn real_with(mode: Mode, cold: bool) -> Option<Outcome> {
        let bin = if mode.is_larder() {
            larder_testkit::require_or_skip(larder_bin(), "the larder binary ($LARDER, or cargo's for this profile)", larder_testkit::larder::LARDER_BUILD)
        } else {
            larder_testkit::require_or_skip(memcached_bin(), "memcached ($MEMCACHED or /usr/bin/memcached)", "apt-get install memcached (scripts/test installs it)")
        };
        let bin = bin?;
        let cfg = Config { clients: 20, duration: Duration::from_secs(6), cold, ..Config::default() };
        let r = run_mode(mode, &bin, "", &cfg).unwrap();
        eprintln!("{}", r.to_text());
        assert_eq!(r.errors, 0, "{}", r.to_text());
        assert!(r.reads > 1000, "{}", r.to_text());
        Some(r)
    }

    #[test]
    fn grace_client_against_larder_calls_the_backend_once_per_expiry() {
        if let Some(r) = real(Mode::LarderGrace) {
            // 6 s with a 2 s TTL (1-2 s of life on whole-second clocks) + 0.2 s recompute.
            assert!(r.rounds.len() >= 2, "{}", r.to_text());
            assert!(r.rounds.iter().all(|&n| n == 1), "{:?}: {}", r.rounds, r.to_text());
        }
    }

    #[test]
    fn meta_client_against_larder_calls_the_backend_once_per_refresh() {
        if let Some(r) = real(Mode::LarderMeta) {
            assert!(r.rounds.len() >= 3, "{}", r.to_text());
            assert!(r.rounds.iter().all(|&n| n == 1), "{:?}: {}", r.rounds, r.to_text());
        }
    }

    #[test]
    fn lock_client_against_memcached_calls_the_backend_once_per_expiry() {
        if let Some(r) = real(Mode::McLock) {
            assert!(r.rounds.len() >= 2, "{}", r.to_text());
            assert!(r.rounds.iter().all(|&n| n == 1), "{:?}: {}", r.rounds, r.to_text());
            assert!(r.retries > 0, "losers waited: {}", r.to_text());
        }
    }

    #[test]
    fn plain_clients_against_memcached_stampede() {
        if let Some(r) = real(Mode::McPlain) {
            assert!(r.rounds.len() >= 2, "{}", r.to_text());
            assert!(r.calls_per_round() > 5.0, "20 clients reading every 10 ms all miss during a 200 ms recompute: {}", r.to_text());
        }
    }

    #[test]
    fn coalescing_larder_calls_the_backend_once_per_cold_start() {
        if let Some(r) = real_with(Mode::LarderCoalesce, true) {
            // The start and the flush half way through: two cold starts.
            assert_eq!(r.rounds, vec![1, 1], "{}", r.to_text());
            // Waiters are answered by the refill, not by the 2 s window.
            assert!(r.max_ms() < 1000.0, "{}", r.to_text());
        }
    }

    #[test]
    fn plain_clients_against_memcached_stampede_on_a_cold_start() {
        if let Some(r) = real_with(Mode::McPlain, true) {
            assert_eq!(r.rounds.len(), 2, "{}", r.to_text());
            assert!(r.calls_per_round() > 5.0, "20 clients all miss a cold key during a 200 ms recompute: {}", r.to_text());
        }
    }
}
