//! In-process version of larder-bench's memory-efficiency scenarios: writes
//! distinct keys (24 bytes) with uniform value sizes totalling 3x the limit,
//! reads every key back and prints the share of the limit their key and
//! value bytes fill (utilization), with the store's own accounting.
//! `cargo run --release -p larder-store --example fill -- <limit MiB> <min value> <max value>`

use larder_store::{Config, Lookup, Mode, Store};

fn main() {
    let a: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let (mb, lo, hi) = (a[0], a[1], a[2]);
    let limit = mb << 20;
    let s = Store::new(Config { memory_limit: limit, ..Config::default() }).unwrap();
    let mean = (lo + hi) as f64 / 2.0;
    let n = (3.0 * limit as f64 / (24.0 + mean)).ceil() as u64;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut sizes = Vec::with_capacity(n as usize);
    let value = vec![b'v'; hi];
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = lo + (x % (hi - lo + 1) as u64) as usize;
        sizes.push(len);
        s.store(Mode::Set, format!("key:{i:020}").as_bytes(), 0, 0, &value[..len], 1);
    }
    let mut kept = 0usize;
    for i in 0..n {
        if let Lookup::Hit(()) = s.get(format!("key:{i:020}").as_bytes(), 2, |_| ()) {
            kept += 24 + sizes[i as usize];
        }
    }
    let st = s.stats();
    println!(
        "utilization {:.4} items {} live {:.4} dead {:.4} index {:.4} segs {} of {} seg_size {} unused {:.4} evictions {} compactions {} slots {} used {} shards {}",
        kept as f64 / limit as f64,
        st.curr_items,
        st.bytes as f64 / limit as f64,
        st.bytes_dead as f64 / limit as f64,
        st.index_bytes as f64 / limit as f64,
        st.segments_used,
        st.segments_total,
        st.segment_size,
        (limit as f64 - st.memory_used as f64) / limit as f64,
        st.evictions,
        st.compactions,
        st.index_slots,
        st.index_used,
        st.shards,
    );
}
