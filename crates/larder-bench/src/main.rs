//! larder-bench: load generator and side-by-side benchmark harness for larder and memcached.
//!
//! Subcommands:
//! - `run --server ADDR --scenario NAME [knobs]`: one scenario against a running server.
//! - `compare --memcached BIN --larder BIN --rounds 3 --out BENCHMARKS.md`: start both
//!   servers for every scenario, alternate them, write the report.
//! - `compare --smoke`: every scenario for about a second (CI); exits non-zero on errors,
//!   corruption or zero throughput.
//! - `stampede --memcached BIN --larder BIN --clients 50,200 --duration 60 --out BENCHMARKS.md`:
//!   one hot key with a short TTL under many clients, four ways of protecting the backend
//!   (see [`stampede`]); writes the `## Stampede` section, which `compare` keeps.
//! - `list`: the scenarios.

mod args;
mod codec;
mod compare;
mod conn;
mod dist;
mod driver;
mod json;
mod report;
mod scenarios;
mod server;
mod stampede;
mod stats;
mod tls;
mod trace;
mod workload;

use std::net::{SocketAddr, ToSocketAddrs};

use args::Args;
use scenarios::Kind;

const USAGE: &str = "\
usage:
  larder-bench run --server HOST:PORT [--scenario NAME] [--pid PID] [--smoke] [--json]
                   [--tls-ca CA.pem (TLS to a -Z server)] [knobs]
  larder-bench compare [--memcached BIN] [--larder BIN] [--rounds N] [--out BENCHMARKS.md]
                       [--smoke] [--scenarios a,b,...] [--server-threads 1] [--server-cpu 0]
                       [--gen-cpu 1] [--traces DIR] [--results-dir DIR] [--note TEXT] [--no-chart]
                       [--warmup S] [--duration S] [--trace-requests N] [--trace-rounds N]
                       [--server-args 'FLAGS for both servers']
  larder-bench list [--smoke]
{STAMPEDE}
knobs (run): --connections N --threads N --depth N --warmup S --duration S
  --key-space N --key-size N --keys uniform|zipf:S --values N|MIN-MAX|etc[:MAX]
  --mix get=90,set=10 (get mget set delete incr mg ms) --multiget K
  --rate OPS (open loop) --max-inflight N --verify-every N --preload true|false --seed N
  --busy-poll true|false --quantum-us US (open loop: send in bursts at most every US)
  --memory-mb N (memory and trace scenarios: the server's -m) --trace-requests N --gen-cpu CPUS
";

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let code = match argv.get(1).map(String::as_str) {
        Some("run") => cmd_run(&argv[2..]),
        Some("compare") => cmd_compare(&argv),
        Some("list") => cmd_list(&argv[2..]),
        Some("stampede") => stampede::cmd(&argv[2..]),
        Some("help") | Some("--help") | Some("-h") | None => {
            print!("{}", USAGE.replace("{STAMPEDE}", stampede::USAGE));
            Ok(0)
        }
        Some(other) => Err(format!("unknown subcommand {other:?}\n{}", USAGE.replace("{STAMPEDE}", stampede::USAGE))),
    };
    match code {
        Ok(c) => std::process::exit(c),
        Err(e) => {
            eprintln!("larder-bench: {e}");
            std::process::exit(2);
        }
    }
}

fn cmd_list(argv: &[String]) -> Result<i32, String> {
    let a = Args::parse(argv)?;
    let smoke = a.flag("smoke");
    let traces = a.str("traces").unwrap_or_else(trace::default_dir);
    a.check_unused()?;
    for s in scenarios::catalogue(smoke, &traces) {
        println!("{:24} {}", s.name, s.title);
    }
    Ok(0)
}

fn cmd_run(argv: &[String]) -> Result<i32, String> {
    let a = Args::parse(argv)?;
    let addr: SocketAddr = a
        .str("server")
        .ok_or("--server HOST:PORT is required")?
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("--server: no address")?;
    let smoke = a.flag("smoke");
    let name = a.str("scenario").unwrap_or_else(|| "get-hit".into());
    let traces = a.str("traces").unwrap_or_else(trace::default_dir);
    let mut sc = scenarios::catalogue(smoke, &traces).into_iter().find(|s| s.name == name).ok_or_else(|| format!("unknown scenario {name:?} (see `larder-bench list`)"))?;
    sc.knobs.apply(&a)?;
    let pid: Option<u32> = a.parse_num("pid")?;
    let json_only = a.flag("json");
    if let Some(m) = a.parse_num("memory-mb")? {
        sc.memory_mb = m;
    }
    if let (Some(n), Kind::Trace { max_requests, .. }) = (a.parse_num("trace-requests")?, &mut sc.kind) {
        *max_requests = n;
    }
    if let Some(cpus) = a.str("gen-cpu") {
        server::pin_self(&cpus)?;
    }
    if let Some(ca) = a.str("tls-ca") {
        tls::enable(&ca)?;
    }
    a.check_unused()?;
    if sc.knobs.rate.is_none() && sc.knobs.rate_of_peak.is_some() {
        return Err(format!("{name} is open loop: give --rate OPS (compare derives it from memcached's get-hit peak)"));
    }
    let outcome = match &sc.kind {
        Kind::Load => scenarios::run_load(addr, pid, &sc.knobs)?,
        Kind::Memory { factor } => scenarios::run_memory(addr, pid, &sc.knobs, sc.memory_mb, *factor)?,
        Kind::Trace { path, sizes, max_requests, .. } => {
            let t = trace::load(path)?;
            scenarios::run_trace(addr, pid, &t, sizes, *max_requests, sc.memory_mb)?
        }
    };
    let mut metrics = json::Obj::new();
    for (k, v) in &outcome.metrics {
        metrics = metrics.num(k, *v);
    }
    let js = json::Obj::new()
        .str("scenario", &sc.name)
        .str("server", &addr.to_string())
        .str("knobs", &sc.knobs.flags())
        .raw("summary", &outcome.summary.to_json())
        .num("server_cpu_pct", outcome.server_cpu)
        .num("gen_cpu_pct", outcome.gen_cpu)
        .num("other_cpu_pct", outcome.other_cpu)
        .raw("metrics", &metrics.build())
        .build();
    if !json_only {
        eprintln!("{}: {}", sc.name, outcome.summary.to_text());
        if outcome.server_cpu.is_finite() || outcome.gen_cpu.is_finite() {
            eprintln!("server cpu {:.1}% of a core, generator cpu {:.1}%", outcome.server_cpu, outcome.gen_cpu);
        }
        for (k, v) in &outcome.metrics {
            eprintln!("{k}: {}", report::fmt_num(*v));
        }
    }
    println!("{js}");
    let bad = outcome.summary.corrupt > 0 || outcome.summary.ops == 0 || (matches!(sc.kind, Kind::Load) && outcome.summary.errors > 0);
    Ok(if bad { 1 } else { 0 })
}

/// `a` as one shell word.
fn shell_quote(a: &str) -> String {
    if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c)) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

fn cmd_compare(argv: &[String]) -> Result<i32, String> {
    let a = Args::parse(&argv[2..])?;
    let cfg = compare::from_args(&a)?;
    a.check_unused()?;
    let started = std::process::Command::new("date").arg("-u").arg("+%Y-%m-%d %H:%M UTC").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
    let load_before = server::machine().3;
    let results = compare::run(&cfg)?;
    let cmdline = format!("larder-bench {}", argv[1..].iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "));
    if let Some(dir) = std::path::Path::new(&cfg.json_out).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&cfg.json_out, report::json(&cfg, &results)).map_err(|e| format!("{}: {e}", cfg.json_out))?;
    if let Some(png) = &cfg.chart {
        if let Err(e) = report::chart(&cfg.json_out, png) {
            eprintln!("larder-bench: no chart: {e}");
        }
    }
    let mut md = report::markdown(&cfg, &results, &cmdline, &started, &load_before);
    // The stampede sections come from `larder-bench stampede`: keep them.
    let old = std::fs::read_to_string(&cfg.out).unwrap_or_default();
    for heading in [stampede::HEADING, stampede::COLD_HEADING] {
        if let Some(section) = stampede::existing_section(&old, heading) {
            md = stampede::splice_section(&md, heading, &section);
        }
    }
    std::fs::write(&cfg.out, md).map_err(|e| format!("{}: {e}", cfg.out))?;
    eprintln!("wrote {}, {}", cfg.out, cfg.json_out);
    let problems = compare::problems(&results);
    for p in &problems {
        eprintln!("PROBLEM: {p}");
    }
    Ok(if problems.is_empty() { 0 } else { 1 })
}
