//! The side-by-side driver: for every scenario, start memcached and larder fresh with the
//! same flags, pinned to one CPU (the generator pins itself to another), run the scenario
//! against each, alternating A B A B for the given number of rounds, and hand the results to
//! the report.

use std::collections::HashMap;

use crate::args::Args;
use crate::scenarios::{self, Kind, Outcome, Scenario};
use crate::server::{self, Server, ServerSpec};
use crate::trace;

pub struct CompareConfig {
    pub servers: Vec<ServerSpec>,
    pub rounds: usize,
    pub smoke: bool,
    pub only: Option<Vec<String>>,
    pub traces_dir: String,
    pub gen_cpu: String,
    pub out: String,
    pub json_out: String,
    pub chart: Option<String>,
    pub preliminary_note: Option<String>,
    /// Overrides of the timed scenarios' warm-up and duration (seconds).
    pub warmup: Option<f64>,
    pub duration: Option<f64>,
    /// Cap on the requests replayed per trace.
    pub trace_requests: Option<usize>,
    /// Rounds for the trace scenarios (default: `rounds`); a full orm-busy replay is minutes.
    pub trace_rounds: Option<usize>,
}

/// All runs of one scenario.
pub struct ScenarioResult {
    pub scenario: Scenario,
    /// (server name, round, outcome or error)
    pub runs: Vec<(String, usize, Result<Outcome, String>)>,
    pub server_commands: Vec<(String, String)>,
    pub client_command: String,
}

impl ScenarioResult {
    /// Outcomes of one server, in round order.
    pub fn outcomes(&self, server: &str) -> Vec<&Outcome> {
        self.runs.iter().filter(|(s, _, _)| s == server).filter_map(|(_, _, r)| r.as_ref().ok()).collect()
    }

    pub fn median(&self, server: &str, metric: &str) -> f64 {
        median(self.outcomes(server).iter().filter_map(|o| o.metric(metric)).collect())
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn from_args(a: &Args) -> Result<CompareConfig, String> {
    let smoke = a.flag("smoke");
    let threads: usize = a.parse_num("server-threads")?.unwrap_or(1);
    let server_cpu = a.str("server-cpu").unwrap_or_else(|| "0".into());
    // Extra flags given to both servers alike (e.g. "-o hashpower=20").
    let extra: Vec<String> = a.str("server-args").map(|s| s.split_whitespace().map(str::to_string).collect()).unwrap_or_default();
    let mut servers = Vec::new();
    let memcached = a.str("memcached").unwrap_or_else(|| "/usr/bin/memcached".into());
    servers.push(ServerSpec { name: "memcached".into(), binary: memcached, threads, memory_mb: 0, port: 0, cpus: server_cpu.clone(), extra_args: extra.clone() });
    if let Some(l) = a.str("larder") {
        if std::path::Path::new(&l).exists() {
            servers.push(ServerSpec { name: "larder".into(), binary: l, threads, memory_mb: 0, port: 0, cpus: server_cpu.clone(), extra_args: extra });
        } else {
            eprintln!("larder-bench: {l} does not exist; running memcached only");
        }
    }
    let out = a.str("out").unwrap_or_else(|| "BENCHMARKS.md".into());
    let results_dir = a.str("results-dir").unwrap_or_else(|| "crates/larder-bench/results".into());
    Ok(CompareConfig {
        servers,
        rounds: a.parse_num("rounds")?.unwrap_or(if smoke { 1 } else { 3 }),
        smoke,
        only: a.str("scenarios").map(|s| s.split(',').map(str::to_string).collect()),
        traces_dir: a.str("traces").unwrap_or_else(trace::default_dir),
        gen_cpu: a.str("gen-cpu").unwrap_or_else(|| "1".into()),
        json_out: a.str("json-out").unwrap_or_else(|| format!("{results_dir}/results.json")),
        chart: if a.flag("no-chart") { None } else { Some(a.str("chart").unwrap_or_else(|| format!("{results_dir}/benchmarks.png"))) },
        out,
        preliminary_note: a.str("note"),
        warmup: a.seconds("warmup")?,
        duration: a.seconds("duration")?,
        trace_requests: a.parse_num("trace-requests")?,
        trace_rounds: a.parse_num("trace-rounds")?,
    })
}

/// Runs everything; returns the results (the caller writes the report).
pub fn run(cfg: &CompareConfig) -> Result<Vec<ScenarioResult>, String> {
    if !cfg.gen_cpu.is_empty() {
        if let Err(e) = server::pin_self(&cfg.gen_cpu) {
            eprintln!("larder-bench: not pinning the generator: {e}");
        }
    }
    let mut scenarios = scenarios::catalogue(cfg.smoke, &cfg.traces_dir);
    if let Some(only) = &cfg.only {
        for o in only {
            if !scenarios.iter().any(|s| &s.name == o) {
                return Err(format!("unknown scenario {o:?}"));
            }
        }
        scenarios.retain(|s| only.contains(&s.name));
    }
    for sc in scenarios.iter_mut() {
        if let Some(w) = cfg.warmup {
            sc.knobs.warmup = w;
        }
        if let Some(d) = cfg.duration {
            sc.knobs.duration = d;
        }
        if let (Some(n), Kind::Trace { max_requests, .. }) = (cfg.trace_requests, &mut sc.kind) {
            *max_requests = n;
        }
    }
    let mut traces: HashMap<String, trace::Trace> = HashMap::new();
    let mut results: Vec<ScenarioResult> = Vec::new();
    for mut sc in scenarios {
        if let Kind::Trace { path, .. } = sc.kind.clone() {
            if !traces.contains_key(&path) {
                traces.insert(path.clone(), trace::load(&path)?);
            }
            scenarios::with_trace_memory(&mut sc, &traces[&path]);
        }
        if let Some(frac) = sc.knobs.rate_of_peak {
            let peak = results.iter().find(|r| r.scenario.name == "get-hit").map(|r| r.median("memcached", "ops_per_sec")).unwrap_or(f64::NAN);
            if !peak.is_finite() || peak <= 0.0 {
                eprintln!("larder-bench: skipping {}: needs memcached's get-hit peak (run get-hit too)", sc.name);
                continue;
            }
            sc.knobs.rate = Some((peak * frac).round());
        }
        let mut res = ScenarioResult { scenario: sc.clone(), runs: Vec::new(), server_commands: Vec::new(), client_command: String::new() };
        let rounds = match sc.kind {
            Kind::Trace { .. } => cfg.trace_rounds.unwrap_or(cfg.rounds).max(1),
            _ => cfg.rounds,
        };
        for round in 1..=rounds {
            for spec in &cfg.servers {
                let mut spec = spec.clone();
                spec.memory_mb = sc.memory_mb;
                // A port picked free can be taken by someone else before the server binds it:
                // try up to three ports.
                let mut outcome = Err(String::new());
                for _ in 0..3 {
                    spec.port = server::free_port();
                    outcome = run_one(&sc, &spec, &traces);
                    match &outcome {
                        Err(e) if e.starts_with("start: ") => continue,
                        _ => break,
                    }
                }
                match &outcome {
                    Ok(o) => eprintln!("[{} round {round} {}] {}{}", sc.name, spec.name, o.summary.to_text(), extra_text(o)),
                    Err(e) => eprintln!("[{} round {round} {}] ERROR {e}", sc.name, spec.name),
                }
                if round == 1 {
                    res.server_commands.push((spec.name.clone(), spec.command_line()));
                    res.client_command = format!(
                        "{}larder-bench run --server 127.0.0.1:{} --pid <server pid> --scenario {}{} {}",
                        if cfg.gen_cpu.is_empty() { String::new() } else { format!("taskset -c {} ", cfg.gen_cpu) },
                        spec.port,
                        sc.name,
                        if cfg.smoke { " --smoke" } else { "" },
                        match sc.kind {
                            Kind::Load => sc.knobs.flags(),
                            Kind::Memory { .. } => format!("--memory-mb {} --values {} --key-size {}", sc.memory_mb, sc.knobs.values, sc.knobs.key_size),
                            Kind::Trace { max_requests, .. } if max_requests < usize::MAX => format!("--memory-mb {} --trace-requests {max_requests}", sc.memory_mb),
                            Kind::Trace { .. } => format!("--memory-mb {}", sc.memory_mb),
                        }
                    );
                }
                res.runs.push((spec.name.clone(), round, outcome));
            }
        }
        results.push(res);
    }
    Ok(results)
}

fn extra_text(o: &Outcome) -> String {
    let mut s = String::new();
    if o.server_cpu.is_finite() {
        s += &format!("  server cpu {:.0}%  generator cpu {:.0}%  others {:.0}%", o.server_cpu, o.gen_cpu, o.other_cpu);
    }
    for (k, v) in &o.metrics {
        s += &format!("  {k} {}", crate::report::fmt_num(*v));
    }
    s
}

/// Starts a fresh server, runs the scenario against it, stops it.
fn run_one(sc: &Scenario, spec: &ServerSpec, traces: &HashMap<String, trace::Trace>) -> Result<Outcome, String> {
    let srv = Server::start(spec).map_err(|e| format!("start: {e}"))?;
    let pid = Some(srv.pid());
    let r = match &sc.kind {
        Kind::Load => scenarios::run_load(srv.addr, pid, &sc.knobs),
        Kind::Memory { factor } => scenarios::run_memory(srv.addr, pid, &sc.knobs, sc.memory_mb, *factor),
        Kind::Trace { path, sizes, max_requests, .. } => scenarios::run_trace(srv.addr, pid, &traces[path], sizes, *max_requests, sc.memory_mb),
    };
    srv.stop();
    r
}

/// Problems that make a smoke run fail: a run that errored, corruption, zero throughput,
/// error replies in a timed load, nothing read back in a memory scenario.
pub fn problems(results: &[ScenarioResult]) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        for (server, round, o) in &r.runs {
            let tag = format!("{} round {round} {server}", r.scenario.name);
            match o {
                Err(e) => out.push(format!("{tag}: {e}")),
                Ok(o) => {
                    if o.summary.corrupt > 0 {
                        out.push(format!("{tag}: {} corrupt values", o.summary.corrupt));
                    }
                    if o.summary.ops == 0 {
                        out.push(format!("{tag}: zero throughput"));
                    }
                    // Error replies are a harness problem in timed loads (they should not happen);
                    // in fills and replays an occasional SERVER_ERROR out of memory is the
                    // server's behaviour, reported in the tables.
                    if matches!(r.scenario.kind, Kind::Load) && o.summary.errors > 0 {
                        out.push(format!("{tag}: {} errors", o.summary.errors));
                    }
                    if matches!(r.scenario.kind, Kind::Memory { .. }) && o.summary.verified == 0 {
                        out.push(format!("{tag}: nothing read back"));
                    }
                }
            }
        }
    }
    out
}
