//! `larder-sim`: replays the cache2k traces and the scan workload through
//! every policy at capacities of unique keys ÷ 4 and ÷ 10, prints a
//! markdown table of miss ratios and writes the same figures as JSON.
//!
//! ```text
//! larder-sim [--traces DIR] [--segments N] [--json PATH] [--only NAME] [--no-scan] [--cap-scale F] [--store]
//!            [--sizes SPECS [--max-requests N]]
//! ```
//!
//! `--segments N` (default 64): the segment policies get segments of
//! capacity ÷ N items, i.e. N segments — the store's own minimum count, so
//! these are the coarsest segments larder runs with.
//!
//! `--store`: also replay each trace through the real `larder_store::Store`
//! with 4000-byte values at `-m` = working set ÷ 4 and ÷ 10 (larder-bench's
//! sizing), reported as policy `larder-store -m` (capacity column: MiB).
//!
//! `--sizes 4000,50-500,500-5000,etc` (byte mode, issue 16): instead of the
//! item-count table, every trace × value-size mix × working set ÷ 4, 10, 40
//! through the byte-capacity policies (`bytes`) and the real store at the
//! same `-m`, per-key sizes as larder-bench draws them (`sizes`);
//! `--max-requests N` cuts each trace. `LARDER_SIM_STATS=1` prints the
//! store's live / dead / index / unused share of `-m` after each replay.
//! Results and commands: docs/size-aware-eviction.md.
//!
//! `--cap-scale F` (default 1): multiply the trace capacities by F, to see
//! what a given advantage in items per byte is worth in miss ratio.

#![forbid(unsafe_code)]

use larder_sim::report::{self, Row};
use larder_sim::workload::ScanWorkload;
use larder_sim::{policies, replay, replay_measured, sharded_policies, trace};
use std::path::PathBuf;

struct Args {
    traces: PathBuf,
    segments: usize,
    json: PathBuf,
    only: Option<String>,
    scan: bool,
    scale: f64,
    store: bool,
    /// Byte mode: value-size mixes (see `sizes`).
    sizes: Vec<String>,
    /// Byte mode: replay only the first N requests of each trace.
    max_requests: Option<usize>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        traces: trace::default_dir(),
        segments: 64,
        json: PathBuf::from("larder-sim.json"),
        only: None,
        scan: true,
        scale: 1.0,
        store: false,
        sizes: Vec::new(),
        max_requests: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--traces" => a.traces = val()?.into(),
            "--segments" => a.segments = val()?.parse().map_err(|e| format!("--segments: {e}"))?,
            "--json" => a.json = val()?.into(),
            "--only" => a.only = Some(val()?),
            "--no-scan" => a.scan = false,
            "--store" => a.store = true,
            "--max-requests" => a.max_requests = Some(val()?.parse().map_err(|e| format!("--max-requests: {e}"))?),
            "--sizes" => a.sizes = val()?.split(',').map(str::to_string).collect(),
            "--cap-scale" => a.scale = val()?.parse().map_err(|e| format!("--cap-scale: {e}"))?,
            "-h" | "--help" => {
                println!("larder-sim [--traces DIR] [--segments N] [--json PATH] [--only NAME] [--no-scan] [--cap-scale F] [--store] [--sizes SPECS [--max-requests N]]");
                std::process::exit(0);
            }
            f => return Err(format!("unknown flag {f}")),
        }
    }
    Ok(a)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("larder-sim: {e}");
            std::process::exit(2);
        }
    };
    // The program by its name, not by where it was built: the command goes into
    // committed results (results.json), which name no path of a build machine.
    let command: Vec<String> = std::env::args().enumerate().map(|(i, a)| if i == 0 { "larder-sim".to_string() } else { a }).collect();
    let command = command.join(" ");
    let mut rows = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&args.traces)
        .unwrap_or_else(|e| panic!("reading {}: {e}", args.traces.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".trace.xz"))
        .filter(|p| args.only.as_ref().map_or(true, |o| p.to_string_lossy().contains(o.as_str())))
        .collect();
    files.sort();
    if !args.sizes.is_empty() {
        return bytes_mode(&args, &files, &command);
    }
    for f in files {
        let t = trace::load(&f).unwrap_or_else(|e| panic!("{e}"));
        eprintln!("{}: {} requests, {} unique keys", t.name, t.keys.len(), t.unique);
        for div in [4, 10] {
            let cap = (t.unique as f64 / div as f64 * args.scale) as usize;
            let seg = (cap / args.segments).max(1);
            for mut p in policies(cap, seg).into_iter().chain(sharded_policies(cap, seg)) {
                let c = replay(&mut *p, &t.keys);
                rows.push(Row {
                    workload: t.name.clone(),
                    capacity_label: format!("÷{div}"),
                    capacity: cap,
                    seg_items: seg,
                    policy: p.name(),
                    requests: t.keys.len() as u64,
                    miss_ratio: c.miss_ratio(),
                    copies_per_request: p.copies() as f64 / (c.hits + c.misses).max(1) as f64,
                });
            }
            let c = larder_sim::opt::belady(&t.keys, cap);
            rows.push(Row {
                workload: t.name.clone(),
                capacity_label: format!("÷{div}"),
                capacity: cap,
                seg_items: seg,
                policy: "OPT (Belady)".into(),
                requests: t.keys.len() as u64,
                miss_ratio: c.miss_ratio(),
                copies_per_request: 0.0,
            });
            rows.push(Row {
                workload: t.name.clone(),
                capacity_label: format!("÷{div}"),
                capacity: cap,
                seg_items: seg,
                policy: "compulsory (unique ÷ requests)".into(),
                requests: t.keys.len() as u64,
                miss_ratio: t.unique as f64 / t.keys.len() as f64,
                copies_per_request: 0.0,
            });
            if args.store {
                let limit = larder_sim::store::memory_limit(t.unique, 4000, div);
                let c = larder_sim::store::replay(&t.keys, limit, 4000);
                eprintln!("{} ÷{div}: larder-store -m {} MiB: miss ratio {:.4}", t.name, limit >> 20, c.miss_ratio());
                rows.push(Row {
                    workload: t.name.clone(),
                    capacity_label: format!("÷{div}"),
                    capacity: cap,
                    seg_items: seg,
                    policy: "larder-store at -m (4000 B values)".into(),
                    requests: t.keys.len() as u64,
                    miss_ratio: c.miss_ratio(),
                    copies_per_request: 0.0,
                });
            }
        }
    }
    if args.scan {
        let w = ScanWorkload::default();
        for (label, scan) in [("zipf", false), ("zipf+scan", true)] {
            let reqs = w.requests(scan);
            for div in [4, 10] {
                let cap = w.hot / div;
                let seg = (cap / args.segments).max(1);
                for mut p in policies(cap, seg).into_iter().chain(sharded_policies(cap, seg)) {
                    let c = replay_measured(&mut *p, &reqs);
                    rows.push(Row {
                        workload: label.into(),
                        capacity_label: format!("÷{div}"),
                        capacity: cap,
                        seg_items: seg,
                        policy: p.name(),
                        requests: c.hits + c.misses,
                        miss_ratio: c.miss_ratio(),
                        copies_per_request: p.copies() as f64 / reqs.len() as f64,
                    });
                }
            }
        }
    }
    print!("{}", report::table(&rows));
    println!("\nItems copied by eviction per request (segment policies):\n");
    let copying: Vec<Row> = rows
        .iter()
        .filter(|r| r.policy.starts_with("seg-"))
        .map(|r| Row { miss_ratio: r.copies_per_request, ..r.clone() })
        .collect();
    print!("{}", report::table(&copying));
    std::fs::write(&args.json, report::to_json(&command, &rows)).unwrap_or_else(|e| panic!("writing {}: {e}", args.json.display()));
    eprintln!("wrote {}", args.json.display());
}

/// `--sizes`: every trace × value-size mix × working set ÷ 4, 10, 40, at
/// equal bytes (see `larder_sim::bytes`).
fn bytes_mode(args: &Args, files: &[PathBuf], command: &str) {
    use larder_sim::sizes::Sizes;
    let mut rows = Vec::new();
    for f in files {
        let mut t = trace::load(f).unwrap_or_else(|e| panic!("{e}"));
        if let Some(n) = args.max_requests {
            t.keys.truncate(n);
        }
        let mut uniq = t.keys.clone();
        uniq.sort_unstable();
        uniq.dedup();
        for spec in &args.sizes {
            let sizes = Sizes::parse(spec).unwrap_or_else(|| panic!("bad --sizes entry {spec:?}"));
            let ws: f64 = uniq.iter().map(|&k| sizes.of(k) as f64).sum();
            for div in [4, 10, 40] {
                let mb = ((ws / div as f64 / (1 << 20) as f64).round() as usize).max(2);
                let limit = mb << 20;
                for mut p in larder_sim::bytes::policies(limit as u64) {
                    let hits = t.keys.iter().filter(|&&k| p.access(k, larder_sim::bytes::KEY_BYTES + sizes.of(k) as u64)).count();
                    let miss = 1.0 - hits as f64 / t.keys.len() as f64;
                    eprintln!("{} {spec} ÷{div}: {} at {mb} MiB: miss ratio {miss:.4}", t.name, p.name());
                    rows.push(Row {
                        workload: format!("{} {spec}", t.name),
                        capacity_label: format!("÷{div}"),
                        capacity: mb,
                        seg_items: 0,
                        policy: p.name(),
                        requests: t.keys.len() as u64,
                        miss_ratio: miss,
                        copies_per_request: 0.0,
                    });
                }
                let c = larder_sim::store::replay_sized(&t.keys, limit, |k| sizes.of(k));
                eprintln!("{} {spec} ÷{div}: larder-store -m {mb}: miss ratio {:.4}", t.name, c.miss_ratio());
                rows.push(Row {
                    workload: format!("{} {spec}", t.name),
                    capacity_label: format!("÷{div}"),
                    capacity: mb,
                    seg_items: 0,
                    policy: "larder-store (segments, real overheads)".into(),
                    requests: t.keys.len() as u64,
                    miss_ratio: c.miss_ratio(),
                    copies_per_request: 0.0,
                });
            }
        }
    }
    print!("{}", report::table(&rows));
    std::fs::write(&args.json, report::to_json(command, &rows)).unwrap_or_else(|e| panic!("writing {}: {e}", args.json.display()));
}
