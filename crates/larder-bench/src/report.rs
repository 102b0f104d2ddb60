//! Writes the results of `compare`: BENCHMARKS.md (one table per scenario with memcached,
//! larder and the ratio, the machine, the exact commands), a JSON file with every run, and a
//! PNG chart drawn by `scripts/bench_chart.py` (matplotlib).

use std::fmt::Write;

use crate::compare::{median, CompareConfig, ScenarioResult};
use crate::dist::{ETC_LOCATION, ETC_SCALE, ETC_SHAPE};
use crate::json::{self, Obj};
use crate::scenarios::Kind;
use crate::server;

/// (metric, label, digits) shown for each kind of scenario.
fn rows(r: &ScenarioResult) -> Vec<(&'static str, &'static str)> {
    match r.scenario.kind {
        Kind::Load if r.scenario.knobs.rate.is_some() => vec![
            ("ops_per_sec", "achieved ops/s"),
            ("p50_us", "p50 latency (us)"),
            ("p90_us", "p90 latency (us)"),
            ("p99_us", "p99 latency (us)"),
            ("p999_us", "p99.9 latency (us)"),
            ("max_us", "max latency (us)"),
            ("send_lag_p99_us", "generator send lag p99 (us; should be small)"),
            ("server_cpu_pct", "server CPU (% of a core)"),
            ("gen_cpu_pct", "generator CPU (% of a core)"),
            ("other_cpu_pct", "other processes' CPU meanwhile (% of a core; noise)"),
            ("errors", "errors"),
            ("corrupt", "corrupt values"),
        ],
        Kind::Load => {
            let mut v = vec![("ops_per_sec", "requests/s")];
            if r.scenario.knobs.mix.contains("mget") {
                v.push(("keys_per_sec", "keys/s"));
            }
            v.extend([
                ("hit_ratio", "hit ratio"),
                ("p50_us", "p50 latency (us)"),
                ("p99_us", "p99 latency (us)"),
                ("p999_us", "p99.9 latency (us)"),
                ("max_us", "max latency (us)"),
                ("server_cpu_pct", "server CPU (% of a core)"),
                ("gen_cpu_pct", "generator CPU (% of a core)"),
                ("other_cpu_pct", "other processes' CPU meanwhile (% of a core; noise)"),
                ("errors", "errors"),
                ("corrupt", "corrupt values"),
            ]);
            v
        }
        Kind::Memory { .. } => vec![
            ("items_written", "distinct items written"),
            ("items_retained", "items retained (read back)"),
            ("curr_items", "curr_items (stats, for reference)"),
            ("utilization", "utilization: retained key+value bytes / -m"),
            ("rss_mib", "server VmRSS (MiB)"),
            ("rss_over_limit", "VmRSS / -m"),
            ("set_errors", "set errors (e.g. out of memory)"),
            ("corrupt", "corrupt values"),
        ],
        Kind::Trace { .. } => vec![
            ("hit_ratio", "hit ratio"),
            ("requests", "requests replayed"),
            ("distinct_keys", "distinct keys"),
            ("working_set_mib", "working set (MiB)"),
            ("memory_mb", "-m (MiB)"),
            ("rss_mib", "server VmRSS after the replay (MiB)"),
            ("errors", "error replies (e.g. SERVER_ERROR out of memory to a set)"),
            ("corrupt", "corrupt values"),
        ],
    }
}

/// The one figure a scenario is summarised by.
fn headline(r: &ScenarioResult) -> (&'static str, &'static str) {
    match r.scenario.kind {
        Kind::Load if r.scenario.knobs.rate.is_some() => ("p999_us", "p99.9 latency (us)"),
        Kind::Load if r.scenario.knobs.mix.contains("mget") => ("keys_per_sec", "keys/s"),
        Kind::Load => ("ops_per_sec", "requests/s"),
        Kind::Memory { .. } => ("utilization", "utilization"),
        Kind::Trace { .. } => ("hit_ratio", "hit ratio"),
    }
}

pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 || (v.fract() == 0.0 && a >= 1.0) {
        let s = format!("{:.0}", v);
        // thousands separators
        let (sign, digits) = if let Some(d) = s.strip_prefix('-') { ("-", d) } else { ("", s.as_str()) };
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        format!("{sign}{out}")
    } else if a >= 10.0 {
        format!("{:.1}", v)
    } else if a >= 1.0 {
        format!("{:.2}", v)
    } else {
        format!("{:.4}", v)
    }
}

fn ratio(l: f64, m: f64) -> String {
    if l.is_finite() && m.is_finite() && m != 0.0 {
        format!("{:.2}", l / m)
    } else {
        "n/a".into()
    }
}

/// The markdown report.
pub fn markdown(cfg: &CompareConfig, results: &[ScenarioResult], argv: &str, started: &str, load_before: &str) -> String {
    let (nproc, model, kernel, load_after) = server::machine();
    let mut s = String::new();
    let has_larder = cfg.servers.iter().any(|x| x.name == "larder");
    let _ = writeln!(s, "# larder benchmarks\n");
    if let Some(note) = &cfg.preliminary_note {
        let _ = writeln!(s, "> **{note}**\n");
    }
    let _ = writeln!(s, "Generated by `larder-bench compare`; every figure below comes from that one tool, run the same way against each server on the same machine in the same run. Regenerate with:\n\n```\n{argv}\n```\n");
    let _ = writeln!(s, "## Machine\n");
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(s, "| nproc | {nproc} |\n| CPU | {model} |\n| kernel | {kernel} |\n| started | {started} |\n| load average before / after | {load_before} / {load_after} |");
    let _ = writeln!(
        s,
        "| rounds | {} (servers alternate {} every round; the figures are medians) |",
        cfg.rounds,
        cfg.servers.iter().map(|x| x.name.as_str()).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(s, "| pinning | server `taskset -c {}`, generator `taskset -c {}` |", cfg.servers[0].cpus, cfg.gen_cpu);
    if !has_larder {
        let _ = writeln!(s, "\nlarder was not part of this run (no binary given or found): its column reads n/a.");
    }
    let _ = writeln!(s, "\n## Summary\n");
    let _ = writeln!(s, "Medians over the rounds. Ratios are larder ÷ memcached: above 1 is better for throughput, utilization and hit ratio; below 1 is better for latency.\n");
    let _ = writeln!(s, "| scenario | figure | memcached | larder | larder / memcached | p99 (us) memcached | p99 (us) larder | p99 ratio | memcached's CPU (%) | generator's CPU against memcached (%) |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in results {
        let (metric, label) = headline(r);
        let (m, l) = (r.median("memcached", metric), r.median("larder", metric));
        let (pm, pl) = if matches!(r.scenario.kind, Kind::Load) { (r.median("memcached", "p99_us"), r.median("larder", "p99_us")) } else { (f64::NAN, f64::NAN) };
        let _ = writeln!(
            s,
            "| `{}` | {label} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.scenario.name,
            fmt_num(m),
            fmt_num(l),
            ratio(l, m),
            fmt_num(pm),
            fmt_num(pl),
            ratio(pl, pm),
            fmt_num(r.median("memcached", "server_cpu_pct")),
            fmt_num(r.median("memcached", "gen_cpu_pct"))
        );
    }
    let _ = writeln!(s, "\n## Method\n");
    let _ = writeln!(s, "{}", METHOD.replace("{ETC}", &format!("generalized Pareto with location θ = {ETC_LOCATION}, scale σ = {ETC_SCALE}, shape k = {ETC_SHAPE}")));
    if let Some(chart) = &cfg.chart {
        let rel = relative(chart, &cfg.out);
        let _ = writeln!(s, "## Chart\n\n![throughput and p99 per scenario]({rel})\n");
    }
    let _ = writeln!(s, "## Results\n");
    for r in results {
        let _ = writeln!(s, "### {} (`{}`)\n", r.scenario.title, r.scenario.name);
        if let Some(rate) = r.scenario.knobs.rate {
            let _ = writeln!(s, "Target rate {} requests/s (open loop; latency from the intended send time).\n", fmt_num(rate));
        }
        let nrounds = r.runs.iter().map(|(_, round, _)| *round).max().unwrap_or(0);
        if nrounds != cfg.rounds {
            let _ = writeln!(s, "{nrounds} round(s) for this scenario.\n");
        }
        let _ = writeln!(s, "| | memcached | larder | larder / memcached | memcached, each round | larder, each round |");
        let _ = writeln!(s, "|---|---:|---:|---:|---|---|");
        for (metric, label) in rows(r) {
            let m = r.median("memcached", metric);
            let l = r.median("larder", metric);
            let each = |srv: &str| r.outcomes(srv).iter().map(|o| fmt_num(o.metric(metric).unwrap_or(f64::NAN))).collect::<Vec<_>>().join(" / ");
            let _ = writeln!(s, "| {label} | {} | {} | {} | {} | {} |", fmt_num(m), fmt_num(l), ratio(l, m), each("memcached"), each("larder"));
        }
        let errors: Vec<String> = r.runs.iter().filter_map(|(srv, round, o)| o.as_ref().err().map(|e| format!("{srv} round {round}: {e}"))).collect();
        if !errors.is_empty() {
            let _ = writeln!(s, "\nFailed runs: {}", errors.join("; "));
        }
        let _ = writeln!(s, "\nCommands:\n");
        for (name, cmd) in &r.server_commands {
            let _ = writeln!(s, "- {name}: `{cmd}`");
        }
        let _ = writeln!(s, "- client: `{}`\n", r.client_command);
    }
    s
}

const METHOD: &str = "\
- **Load generator.** One event loop (mio/epoll, edge-triggered) drives all connections of a thread; \
requests are preformatted into per-connection write buffers and replies parsed in place, so a request allocates nothing. \
Every reply is parsed and matched to its request; error replies, protocol errors and connection failures are counted.
- **Closed loop** (scenarios 1-5): each connection keeps `depth` requests in flight. **Open loop** (scenario 6): requests are due at a fixed total rate, \
each connection on its own evenly spaced schedule; latency is measured from the *intended* send time, so queueing is not hidden by coordinated omission. \
A connection holds at most `--max-inflight` requests; beyond that requests wait in the generator and their wait counts in their latency. \
In the open-loop scenarios the generator busy-polls (`--busy-poll true`: epoll with a zero timeout, so its CPU reads ~100% by construction): \
on a VM an idle CPU takes tens of microseconds or more to wake, which would otherwise be counted as server latency. \
The *send lag* row (how late requests were written after their intended time) shows whether the generator kept its schedule.
- **Timing.** Warm-up, then a fixed window; requests sent in the window are counted when their reply arrives. Latency is recorded in an HDR histogram (3 significant digits); p50/p90/p99/p99.9/max are per request (a 100-key multi-get is one request).
- **CPU.** Server and generator CPU are read from `/proc/<pid>/stat` (utime + stime) at the start and end of the measurement window, in % of one core. \
A server pinned to one CPU at ~100% is saturated; a generator well below 100% is not the bottleneck.
- **Values are verified.** The value of length L for key K is a slice of a shared pseudo-random pattern at an offset hashed from K and L; \
a reader recomputes it from the key and the length in the reply, so a value of another key, a truncated value or a flipped byte is counted as corrupt. \
Timed loads verify one value in 8; memory and trace scenarios verify every value read.
- **Keys** are `k` + zero-padded index, 24 bytes. **Zipf** keys use rejection-inversion sampling with exponent s (rank 1 hottest). \
**ETC value sizes** follow Atikoglu et al., *Workload Analysis of a Large-Scale Key-Value Store* (SIGMETRICS 2012): {ETC}, clamped to 1 B .. 256 KiB (mean ≈ 344 B, median ≈ 170 B).
- **Preload.** Read scenarios first set every key of the key space (100-byte values; ETC sizes for the web mix), so gets hit.
- **Memory efficiency** (7): a fresh server with `-m 256` gets distinct 24-byte keys with uniformly distributed value sizes until 3× the limit has been written \
(count = 3 × limit ÷ (24 + mean value size)); then *every* key is read back with 100-key multi-gets: items retained is the number of keys that came back with a correct value, \
utilization is their key + value bytes ÷ the `-m` bytes. `curr_items` from `stats` is shown for reference only. VmRSS is read from `/proc/<pid>/status` after the read-back.
- **Hit ratio on traces** (8): the cache2k traces in `traces/` (keys only) are replayed as a look-aside cache: `get`; on a miss, `set`. Keys are 16 bytes. Value sizes: a fixed 4000 bytes (`trace-NAME-wsD`), or per key, drawn once from a generator seeded by the key id (the same size for a key in every run and server, unrelated to its popularity): uniform 50-500 B (`-v50-500`), uniform 500-5000 B (`-v500-5000`) or the ETC model above (`-etc`). \
The working set is the sum of the distinct keys' value sizes and `-m` is the working set ÷ 4, ÷ 10 and ÷ 40 in whole MiB (at least 2). Replay is batched: up to 100 consecutive requests with distinct keys are sent as pipelined gets, then the batch's misses are set in order.
- **Servers** are started fresh for every scenario, round and server, with identical flags (`-t`, `-m`, `-c 1024`, `-U 0`, `-l 127.0.0.1`), and stopped after it.
";

fn relative(target: &str, from_file: &str) -> String {
    let dir = std::path::Path::new(from_file).parent().map(|p| p.to_string_lossy().to_string()).unwrap_or_default();
    if !dir.is_empty() && target.starts_with(&format!("{dir}/")) {
        return target[dir.len() + 1..].to_string();
    }
    target.to_string()
}

/// Every run as JSON (medians included), for the chart and for machines.
pub fn json(cfg: &CompareConfig, results: &[ScenarioResult]) -> String {
    let scen: Vec<String> = results
        .iter()
        .map(|r| {
            let runs: Vec<String> = r
                .runs
                .iter()
                .map(|(srv, round, o)| {
                    let mut obj = Obj::new().str("server", srv).int("round", *round as u64);
                    match o {
                        Ok(o) => {
                            obj = obj.raw("summary", &o.summary.to_json()).num("server_cpu_pct", o.server_cpu).num("gen_cpu_pct", o.gen_cpu);
                            let mut m = Obj::new();
                            for (k, v) in &o.metrics {
                                m = m.num(k, *v);
                            }
                            obj = obj.raw("metrics", &m.build());
                        }
                        Err(e) => obj = obj.str("error", e),
                    }
                    obj.build()
                })
                .collect();
            let mut medians = Obj::new();
            for srv in cfg.servers.iter().map(|s| s.name.as_str()) {
                let mut m = Obj::new();
                for (metric, _) in rows(r).into_iter().chain([("ops_per_sec", ""), ("p99_us", ""), ("hit_ratio", "")]) {
                    m = m.num(metric, median(r.outcomes(srv).iter().filter_map(|o| o.metric(metric)).collect()));
                }
                medians = medians.raw(srv, &m.build());
            }
            let kind = match r.scenario.kind {
                Kind::Load if r.scenario.knobs.rate.is_some() => "open-loop",
                Kind::Load => "closed-loop",
                Kind::Memory { .. } => "memory",
                Kind::Trace { .. } => "trace",
            };
            Obj::new()
                .str("name", &r.scenario.name)
                .str("title", &r.scenario.title)
                .str("kind", kind)
                .int("memory_mb", r.scenario.memory_mb as u64)
                .str("client_command", &r.client_command)
                .raw("server_commands", &json::array(&r.server_commands.iter().map(|(n, c)| Obj::new().str("server", n).str("command", c).build()).collect::<Vec<_>>()))
                .raw("medians", &medians.build())
                .raw("runs", &json::array(&runs))
                .build()
        })
        .collect();
    let (nproc, model, kernel, load) = server::machine();
    Obj::new()
        .raw("machine", &Obj::new().int("nproc", nproc as u64).str("cpu", &model).str("kernel", &kernel).str("loadavg", &load).build())
        .int("rounds", cfg.rounds as u64)
        .raw("scenarios", &json::array(&scen))
        .build()
}

/// Runs the chart script; returns whether the PNG was written.
pub fn chart(json_path: &str, png_path: &str) -> Result<(), String> {
    let script = ["scripts/bench_chart.py", concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/bench_chart.py")]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .ok_or("scripts/bench_chart.py not found")?;
    let out = std::process::Command::new("python3").arg(script).arg(json_path).arg(png_path).output().map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        return Err(format!("chart: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}
