//! Nanoseconds per hot-path call, single thread, release build:
//! `cargo run --release -p larder-observe --example hotpath`.
//! Keys: 100 prefixes, 30-byte keys, 90% gets / 10% sets. In the server the
//! key was just parsed from the request buffer, so it is in cache: the key
//! set here is small enough to stay in cache (`--cold` uses 100 000 keys,
//! which adds a cache miss per call that the server does not pay here).
use std::hint::black_box;
use std::time::Instant;

use larder_observe::observer::{Observer, ObserverConfig};

fn main() {
    let obs = Observer::new(ObserverConfig::default());
    let mut w = obs.worker();
    let every_hk = larder_observe::hotkeys::HotKeys::new(256, 60);
    let mut every = every_hk.worker();
    let sixteenth_hk = larder_observe::hotkeys::HotKeys::new(256, 60).with_sampling(16);
    let mut sixteenth = sixteenth_hk.worker();
    let nkeys = if std::env::args().any(|a| a == "--cold") { 100_000 } else { 1000 };
    let keys: Vec<Vec<u8>> =
        (0..nkeys).map(|i| format!("prefix{:03}:object:{:012}", i % 100, i * 7919 % 1_000_003).into_bytes()).collect();
    for k in &keys {
        w.on_set(k, 100, None, 1, 0);
    }
    let n = 2_000_000usize;
    let mut x = 1u64;
    let mut pick = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as usize
    };
    // larder-bench's keys: `k` + zero-padded number, no delimiter
    let plain: Vec<Vec<u8>> = (0..nkeys).map(|i| format!("k{:023}", i * 7919 % 1_000_003).into_bytes()).collect();
    let idx: Vec<usize> = (0..n).map(|_| pick() % keys.len()).collect();
    let variants = [
        ("baseline: touch the key", 5),
        ("prefix on_get", 0),
        ("prefix on_get, key without delimiter (larder-bench)", 8),
        ("hotkeys on_request, every request", 6),
        ("hotkeys on_request, sampled 1/16", 7),
        ("hotkeys on_request, adaptive (default) at 500k req/s", 1),
        ("bigkeys on_store (small)", 2),
        ("latency record", 3),
        ("observer web mix (90% get, 10% set, latency)", 4),
    ];
    // `--only TEXT`: just the variants whose name contains TEXT (profiling)
    let args: Vec<String> = std::env::args().collect();
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).cloned();
    let runs = |name: &str| match only.as_deref() {
        Some(o) => name.contains(o),
        None => true,
    };
    // round-robin, 5 rounds, best of 5: the machine is shared
    let mut best = vec![f64::MAX; variants.len()];
    for _ in 0..5 {
        for (v, &(name, f)) in variants.iter().enumerate() {
            if !runs(name) {
                continue;
            }
            let t = Instant::now();
            for (j, &i) in idx.iter().enumerate() {
                let k = &keys[i];
                match f {
                    0 => w.prefixes.on_get(black_box(k), true, 100),
                    8 => w.prefixes.on_get(black_box(&plain[i]), true, 100),
                    // the clock as a worker serving 500 000 requests a second sees it
                    1 => w.hotkeys.on_request(black_box(k), 100, 1 + j as u64 / 500_000),
                    7 => sixteenth.on_request(black_box(k), 100, 1),
                    2 => obs.bigkeys.on_store(black_box(k), 100, 1, 0),
                    3 => w.latency.record(black_box(j as u64)),
                    5 => {
                        black_box(larder_observe::hash_bytes(black_box(&k[..8])));
                    }
                    6 => every.on_request(black_box(k), 100, 1),
                    _ => {
                        if j % 10 == 0 {
                            w.on_set(k, 100, Some(100), 1, 0);
                        } else {
                            w.on_get(k, true, 100, 1);
                        }
                        w.record_latency(j as u64 & 0xffff);
                    }
                }
            }
            best[v] = best[v].min(t.elapsed().as_nanos() as f64 / n as f64);
        }
    }
    for ((name, _), ns) in variants.iter().zip(&best).filter(|((n, _), _)| runs(n)) {
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), "{name:<48} {ns:6.1} ns/call");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "observer heap bytes: {}", obs.heap_bytes());
}
