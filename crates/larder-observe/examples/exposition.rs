//! Prints a sample Prometheus exposition built from every writer of this
//! crate (stats, per-prefix series, latency histograms, memory gauges).
//! `tests/observe/test_prometheus.py` parses it with prometheus_client.
use larder_observe::latency::Latency;
use larder_observe::prefix::{PrefixConfig, PrefixStats};
use larder_observe::prometheus::{write_stats, Exposition, MetricType};

fn main() {
    let mut e = Exposition::new();
    write_stats(
        &mut e,
        &[
            ("pid", "4242"),
            ("uptime", "120"),
            ("version", "larder 0.1.0"),
            ("rusage_user", "0.123456"),
            ("curr_connections", "3"),
            ("cmd_get", "1000"),
            ("get_hits", "900"),
            ("get_misses", "100"),
            ("bytes", "123456"),
            ("limit_maxbytes", "67108864"),
            ("detail_enabled", "no"),
            ("libevent", "none"),
        ],
    );
    let st = PrefixStats::new(PrefixConfig { delimiter: b':', max_prefixes: 4 });
    let mut w = st.worker();
    for (i, p) in ["user", "item", "sess", "we\"ird\\pre\nfix", "x", "y"].iter().enumerate() {
        w.on_set(format!("{p}:1").as_bytes(), 100 * (i as u64 + 1), None);
        w.on_get(format!("{p}:1").as_bytes(), true, 10);
    }
    w.on_set(b"plain", 5, None);
    st.write_prometheus(&mut e, 3);

    let lat = Latency::new();
    let mut lw = lat.worker();
    for ns in [800u64, 1500, 3000, 12_000, 250_000, 2_000_000_000, 100_000_000_000] {
        lw.record(ns);
    }
    e.family("larder_request_duration_seconds", "Request handling time.", MetricType::Histogram);
    lat.snapshot().write_prometheus(&mut e, "larder_request_duration_seconds", &[("command", "get")]);
    lat.snapshot().write_prometheus(&mut e, "larder_request_duration_seconds", &[("command", "set")]);

    e.family("larder_memory_bytes", "Memory by category.", MetricType::Gauge);
    for (cat, v) in [("items", 123456.0), ("index", 65536.0), ("dead", 0.0), ("connections", 4096.0)] {
        e.sample("larder_memory_bytes", &[("category", cat)], v);
    }
    print!("{}", e.finish());
}
