//! The scenario catalogue and how one scenario is run against one server.
//!
//! A scenario is a name, the load knobs (all of which `larder-bench run` also takes as
//! flags), the server's `-m`, and a kind: a timed load (closed or open loop), the memory
//! efficiency fill-and-read-back, or a trace replay. `--smoke` shrinks every scenario to about
//! a second so CI can check the harness end to end.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::args::Args;
use crate::dist::{KeyDist, SizeDist};
use crate::driver::{self, LoadConfig, Pacing};
use crate::server::{self, CpuMeter, MachineMeter};
use crate::stats::Summary;
use crate::trace;
use crate::workload::{KeySource, Mix, OpKind, Values, Workload};

/// Every knob of a timed load.
#[derive(Clone, Debug)]
pub struct Knobs {
    pub connections: usize,
    pub threads: usize,
    pub depth: usize,
    pub warmup: f64,
    pub duration: f64,
    pub key_space: u64,
    pub key_size: usize,
    pub keys: String,
    pub values: String,
    pub mix: String,
    pub multiget: usize,
    /// Open loop: requests per second in total (None = closed loop).
    pub rate: Option<f64>,
    /// Open loop in `compare`: rate as a fraction of memcached's get-hit peak.
    pub rate_of_peak: Option<f64>,
    pub max_inflight: usize,
    pub verify_every: u32,
    pub preload: bool,
    pub seed: u64,
    pub busy_poll: bool,
    /// Open loop: send in bursts at most every `quantum_us` (0 = per request).
    pub quantum_us: f64,
}

impl Default for Knobs {
    fn default() -> Knobs {
        Knobs {
            connections: 50,
            threads: 1,
            depth: 1,
            warmup: 2.0,
            duration: 10.0,
            key_space: 100_000,
            key_size: 24,
            keys: "uniform".into(),
            values: "100".into(),
            mix: "get".into(),
            multiget: 100,
            rate: None,
            rate_of_peak: None,
            max_inflight: 64,
            verify_every: 8,
            preload: true,
            seed: 1,
            busy_poll: false,
            quantum_us: 0.0,
        }
    }
}

impl Knobs {
    /// Overrides from command-line flags.
    pub fn apply(&mut self, a: &Args) -> Result<(), String> {
        macro_rules! num {
            ($flag:expr, $field:expr) => {
                if let Some(v) = a.parse_num($flag)? {
                    $field = v;
                }
            };
        }
        num!("connections", self.connections);
        num!("threads", self.threads);
        num!("depth", self.depth);
        num!("key-space", self.key_space);
        num!("key-size", self.key_size);
        num!("multiget", self.multiget);
        num!("max-inflight", self.max_inflight);
        num!("verify-every", self.verify_every);
        num!("seed", self.seed);
        if let Some(v) = a.seconds("warmup")? {
            self.warmup = v;
        }
        if let Some(v) = a.seconds("duration")? {
            self.duration = v;
        }
        if let Some(v) = a.str("keys") {
            self.keys = v;
        }
        if let Some(v) = a.str("values") {
            self.values = v;
        }
        if let Some(v) = a.str("mix") {
            self.mix = v;
        }
        if let Some(v) = a.parse_num::<f64>("rate")? {
            self.rate = Some(v);
        }
        num!("quantum-us", self.quantum_us);
        if let Some(v) = a.str("busy-poll") {
            self.busy_poll = matches!(v.as_str(), "1" | "true" | "yes");
        }
        if let Some(v) = a.str("preload") {
            self.preload = matches!(v.as_str(), "1" | "true" | "yes");
        }
        Ok(())
    }

    /// The flags that reproduce these knobs with `larder-bench run`.
    pub fn flags(&self) -> String {
        let mut s = format!(
            "--connections {} --threads {} --depth {} --warmup {} --duration {} --key-space {} --key-size {} --keys {} --values {} --mix {} --preload {}",
            self.connections, self.threads, self.depth, self.warmup, self.duration, self.key_space, self.key_size, self.keys, self.values, self.mix, self.preload
        );
        if self.mix.contains("mget") {
            s += &format!(" --multiget {}", self.multiget);
        }
        if let Some(r) = self.rate {
            s += &format!(" --rate {r:.0} --max-inflight {} --quantum-us {}", self.max_inflight, self.quantum_us);
        }
        s
    }

    pub fn workload(&self, keys: KeySource, mix: Mix, verify_every: u32) -> Result<Workload, String> {
        let sizes = SizeDist::parse(&self.values)?;
        Ok(Workload {
            key_size: self.key_size,
            keys,
            values: Values::new(sizes.max()),
            sizes,
            mix,
            multiget_keys: self.multiget,
            verify_every,
        })
    }
}

/// What a scenario does.
#[derive(Clone, Debug)]
pub enum Kind {
    /// A timed load with `knobs`.
    Load,
    /// Write distinct keys totalling `factor` × `-m`, then read every key back.
    Memory { factor: f64 },
    /// Replay a trace at `-m` = working set ÷ `divisor`, each key's value size drawn from
    /// `sizes` (see `trace::value_size`).
    Trace { path: String, divisor: usize, sizes: SizeDist, max_requests: usize },
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub title: String,
    pub kind: Kind,
    pub knobs: Knobs,
    /// The server's `-m` in MiB.
    pub memory_mb: usize,
}

/// What a scenario measured.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub summary: Summary,
    /// CPU of the server process, % of one core, over the measurement window.
    pub server_cpu: f64,
    /// CPU of the generator process, % of one core.
    pub gen_cpu: f64,
    /// CPU used by everything else on the machine meanwhile (noise), % of one core.
    pub other_cpu: f64,
    /// Scenario-specific figures (memory and trace scenarios), name → value.
    pub metrics: Vec<(String, f64)>,
}

impl Outcome {
    pub fn metric(&self, name: &str) -> Option<f64> {
        match name {
            "ops_per_sec" => Some(self.summary.ops_per_sec),
            "keys_per_sec" => Some(self.summary.keys_per_sec),
            "hit_ratio" => Some(self.summary.hit_ratio),
            "p50_us" => Some(self.summary.p50_us),
            "p90_us" => Some(self.summary.p90_us),
            "p99_us" => Some(self.summary.p99_us),
            "p999_us" => Some(self.summary.p999_us),
            "max_us" => Some(self.summary.max_us),
            "send_lag_p99_us" => Some(self.summary.send_lag_p99_us),
            "errors" => Some(self.summary.errors as f64),
            "corrupt" => Some(self.summary.corrupt as f64),
            "server_cpu_pct" => Some(self.server_cpu),
            "gen_cpu_pct" => Some(self.gen_cpu),
            "other_cpu_pct" => Some(self.other_cpu),
            _ => self.metrics.iter().find(|(k, _)| k == name).map(|(_, v)| *v),
        }
    }
}

/// The trace scenarios' value-size mixes: (name suffix, size spec, description). The fixed
/// 4000 B one keeps its original scenario names (`trace-web07-ws4`), so figures stay
/// comparable with earlier runs.
pub const TRACE_SIZE_MIXES: [(&str, &str, &str); 4] = [
    ("", "4000", "4000 B values"),
    ("-v50-500", "50-500", "values uniform 50-500 B per key"),
    ("-v500-5000", "500-5000", "values uniform 500-5000 B per key"),
    ("-etc", "etc", "ETC value sizes per key"),
];

/// Working-set divisors of the trace scenarios.
pub const TRACE_DIVISORS: [usize; 3] = [4, 10, 40];

/// All scenarios, full size or smoke size. Trace scenarios are listed for every `.xz` file in
/// `traces_dir`; their `-m` is filled in by [`with_trace_memory`] once the trace is loaded.
pub fn catalogue(smoke: bool, traces_dir: &str) -> Vec<Scenario> {
    let base = Knobs { warmup: if smoke { 0.2 } else { 2.0 }, duration: if smoke { 0.8 } else { 10.0 }, ..Knobs::default() };
    let load = |name: &str, title: &str, k: Knobs| Scenario { name: name.into(), title: title.into(), kind: Kind::Load, knobs: k, memory_mb: 1024 };
    let mut v = vec![
        load("get-hit", "1. get, all hits: 50 connections, no pipelining, 100-byte values", base.clone()),
        load("get-pipelined", "2. pipelined get: depth 16", Knobs { depth: 16, ..base.clone() }),
        load("mget-100", "3. multi-get of 100 keys per request", Knobs { mix: "mget".into(), multiget: 100, ..base.clone() }),
        load(
            "web-mix",
            "4. web mix: 90% get / 10% set, Zipf(0.99) keys, ETC value sizes",
            Knobs { mix: "get=90,set=10".into(), keys: "zipf:0.99".into(), values: "etc".into(), key_space: 200_000, ..base.clone() },
        ),
        load("set-100", "5a. set only, 100-byte values", Knobs { mix: "set".into(), preload: false, ..base.clone() }),
        load("set-4k", "5b. set only, 4 KiB values", Knobs { mix: "set".into(), values: "4096".into(), preload: false, ..base.clone() }),
        load("latency-50", "6a. latency under load: open loop at 50% of memcached's get-hit peak", Knobs { rate_of_peak: Some(0.5), busy_poll: true, ..base.clone() }),
        load("latency-80", "6b. latency under load: open loop at 80% of memcached's get-hit peak", Knobs { rate_of_peak: Some(0.8), busy_poll: true, ..base.clone() }),
    ];
    let mem_mb = if smoke { 8 } else { 256 };
    for (name, sizes, what) in [("memory-tiny", "8-40", "tiny values 8-40 B"), ("memory-small", "50-500", "small values 50-500 B"), ("memory-medium", "1k-16k", "medium values 1-16 KiB")] {
        v.push(Scenario {
            name: name.into(),
            title: format!("7. memory efficiency, -m {mem_mb}: {what}, 24-byte keys, 3x the limit written"),
            kind: Kind::Memory { factor: 3.0 },
            knobs: Knobs { values: sizes.into(), key_size: 24, connections: 4, depth: 64, verify_every: 1, preload: false, ..base.clone() },
            memory_mb: mem_mb,
        });
    }
    let mut traces: Vec<String> = std::fs::read_dir(traces_dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path().to_string_lossy().to_string()).filter(|p| p.ends_with(".xz")).collect())
        .unwrap_or_default();
    traces.sort();
    for path in traces {
        let short = path.rsplit('/').next().unwrap_or(&path).trim_end_matches(".trace.xz").trim_start_matches("cache2k-").to_string();
        for (suffix, spec, what) in TRACE_SIZE_MIXES {
            let sizes = SizeDist::parse(spec).expect("built-in size spec");
            for divisor in TRACE_DIVISORS {
                v.push(Scenario {
                    name: format!("trace-{short}{suffix}-ws{divisor}"),
                    title: format!("8. hit ratio, trace {short}, {what}, -m = working set / {divisor}"),
                    kind: Kind::Trace { path: path.clone(), divisor, sizes: sizes.clone(), max_requests: if smoke { 50_000 } else { usize::MAX } },
                    knobs: base.clone(),
                    memory_mb: 0,
                });
            }
        }
    }
    v
}

/// Fills in a trace scenario's `-m` from its loaded trace.
pub fn with_trace_memory(s: &mut Scenario, t: &trace::Trace) {
    if let Kind::Trace { divisor, ref sizes, .. } = s.kind {
        s.memory_mb = trace::memory_mb(trace::working_set(t, sizes), divisor);
    }
}

/// Sets every key of the key space (and the counters if the mix has `incr`).
pub fn preload(addr: SocketAddr, k: &Knobs) -> Result<(), String> {
    let mut jobs = vec![OpKind::Set];
    if Mix::parse(&k.mix)?.contains(OpKind::Incr) {
        jobs.push(OpKind::SetCounter);
    }
    for op in jobs {
        let w = k.workload(KeySource::Sequential { n: k.key_space }, Mix::single(op), 0)?;
        let cfg = LoadConfig {
            addr,
            connections: 8,
            threads: 1,
            pacing: Pacing::Closed { depth: 32 },
            warmup: Duration::ZERO,
            duration: Duration::from_secs(600),
            drain: Duration::from_secs(10),
            seed: k.seed,
            busy_poll: false,
            quantum_ns: 0,
        };
        let st = driver::run(&cfg, Arc::new(w))?;
        let s = st.summary();
        if s.errors > 0 || s.ops < k.key_space {
            return Err(format!("preload: {} of {} sets done, {} errors", s.ops, k.key_space, s.errors));
        }
    }
    Ok(())
}

/// Runs a timed load (closed or open loop) and measures the server's CPU during the window.
pub fn run_load(addr: SocketAddr, pid: Option<u32>, k: &Knobs) -> Result<Outcome, String> {
    if k.preload {
        preload(addr, k)?;
    }
    let keys = KeySource::Random(KeyDist::parse(&k.keys, k.key_space)?);
    let w = k.workload(keys, Mix::parse(&k.mix)?, k.verify_every)?;
    let pacing = match k.rate {
        Some(rate) => Pacing::Open { rate, max_inflight: k.max_inflight },
        None => Pacing::Closed { depth: k.depth.max(1) },
    };
    let cfg = LoadConfig {
        addr,
        connections: k.connections,
        threads: k.threads,
        pacing,
        warmup: Duration::from_secs_f64(k.warmup),
        duration: Duration::from_secs_f64(k.duration),
        drain: Duration::from_secs(2),
        seed: k.seed,
        busy_poll: k.busy_poll,
        quantum_ns: (k.quantum_us * 1000.0) as u64,
    };
    // Measure CPU over the measurement window only.
    let (warmup, duration) = (cfg.warmup, cfg.duration);
    let meter = std::thread::spawn(move || {
        std::thread::sleep(warmup + Duration::from_millis(1));
        let srv = pid.map(CpuMeter::start);
        let gen = CpuMeter::start(std::process::id());
        let all = MachineMeter::start();
        std::thread::sleep(duration);
        let (s, g, a) = (srv.map(|m| m.finish()).unwrap_or(f64::NAN), gen.finish(), all.finish());
        (s, g, (a - g - if s.is_finite() { s } else { 0.0 }).max(0.0))
    });
    let st = driver::run(&cfg, Arc::new(w))?;
    let (server_cpu, gen_cpu, other_cpu) = meter.join().map_err(|_| "cpu meter panicked")?;
    Ok(Outcome { summary: st.summary(), server_cpu, gen_cpu, other_cpu, metrics: Vec::new() })
}

/// Memory efficiency: write distinct keys totalling `factor` × `-m`, then read every key back
/// with multi-gets of 100 and count what is still there.
pub fn run_memory(addr: SocketAddr, pid: Option<u32>, k: &Knobs, memory_mb: usize, factor: f64) -> Result<Outcome, String> {
    let limit = memory_mb as f64 * 1024.0 * 1024.0;
    let sizes = SizeDist::parse(&k.values)?;
    let n = (factor * limit / (k.key_size as f64 + sizes.mean())).ceil() as u64;
    let fill = k.workload(KeySource::Sequential { n }, Mix::single(OpKind::Set), 0)?;
    let cfg = |depth| LoadConfig {
        addr,
        connections: k.connections,
        threads: 1,
        pacing: Pacing::Closed { depth },
        warmup: Duration::ZERO,
        duration: Duration::from_secs(1200),
        drain: Duration::from_secs(10),
        seed: k.seed,
        busy_poll: false,
        quantum_ns: 0,
    };
    let written = driver::run(&cfg(k.depth), Arc::new(fill))?.summary();
    let rss_after_fill = pid.and_then(server::rss_bytes).map(|b| b as f64).unwrap_or(f64::NAN);
    let curr_items = server::stats(addr).ok().and_then(|s| server::stat_u64(&s, "curr_items")).map(|v| v as f64).unwrap_or(f64::NAN);
    let read = Knobs { multiget: 100, ..k.clone() }.workload(KeySource::Sequential { n }, Mix::single(OpKind::MultiGet), 1)?;
    let back = driver::run(&cfg(4), Arc::new(read))?;
    let s = back.summary();
    let rss = pid.and_then(server::rss_bytes).map(|b| b as f64).unwrap_or(rss_after_fill);
    let mut summary = s.clone();
    summary.errors += written.errors;
    summary.corrupt += written.corrupt;
    let metrics = vec![
        ("items_written".to_string(), n as f64),
        ("set_errors".to_string(), written.errors as f64),
        ("items_retained".to_string(), s.hits as f64),
        ("curr_items".to_string(), curr_items),
        ("retained_bytes".to_string(), s.hit_bytes as f64),
        ("utilization".to_string(), s.hit_bytes as f64 / limit),
        ("rss_mib".to_string(), rss / (1024.0 * 1024.0)),
        ("rss_over_limit".to_string(), rss / limit),
        ("fill_sets_per_sec".to_string(), written.ops_per_sec),
    ];
    Ok(Outcome { summary, server_cpu: f64::NAN, gen_cpu: f64::NAN, other_cpu: f64::NAN, metrics })
}

/// Trace replay (see `trace`).
pub fn run_trace(addr: SocketAddr, pid: Option<u32>, t: &trace::Trace, sizes: &SizeDist, max_requests: usize, memory_mb: usize) -> Result<Outcome, String> {
    let r = trace::replay(addr, &t.keys, sizes, max_requests)?;
    // What the server really holds for its -m: memcached gives every slab class in use a
    // first 1 MiB page even beyond -m, which at -m 2 is several times the limit.
    let rss = pid.and_then(server::rss_bytes).map(|b| b as f64 / (1024.0 * 1024.0)).unwrap_or(f64::NAN);
    if let Some(e) = &r.first_error {
        eprintln!("trace replay: {} error replies to set, the first: {e}", r.errors);
    }
    let summary = Summary {
        hit_ratio: r.hit_ratio(),
        ops: r.requests,
        hits: r.hits,
        misses: r.misses,
        errors: r.errors,
        corrupt: r.corrupt,
        seconds: r.seconds,
        ops_per_sec: r.requests as f64 / r.seconds,
        verified: r.hits,
        // no per-request latency in a replay
        p50_us: f64::NAN,
        p90_us: f64::NAN,
        p99_us: f64::NAN,
        p999_us: f64::NAN,
        max_us: f64::NAN,
        mean_us: f64::NAN,
        send_lag_p99_us: f64::NAN,
        send_lag_max_us: f64::NAN,
        ..Summary::default()
    };
    let metrics = vec![
        ("requests".to_string(), r.requests as f64),
        ("distinct_keys".to_string(), t.distinct as f64),
        ("working_set_mib".to_string(), trace::working_set(t, sizes) / (1024.0 * 1024.0)),
        ("memory_mb".to_string(), memory_mb as f64),
        ("rss_mib".to_string(), rss),
    ];
    Ok(Outcome { summary, server_cpu: f64::NAN, gen_cpu: f64::NAN, other_cpu: f64::NAN, metrics })
}
