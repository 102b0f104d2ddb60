//! Measures per-item memory overhead and single-thread operation rates.
//! `cargo run --release -p larder-store --example footprint`

use larder_store::{Config, Lookup, Mode, Store};
use std::time::Instant;

fn main() {
    let limit = 1usize << 30;
    let s = Store::new(Config { memory_limit: limit, ..Config::default() }).unwrap();
    let n = 1_000_000u64;
    let (klen, vlen) = (16, 32);
    let value = vec![b'v'; vlen];
    let t = Instant::now();
    for i in 0..n {
        let key = format!("{i:016}");
        s.store(Mode::Set, key.as_bytes(), 0, 0, &value, 1);
    }
    let set_rate = n as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut hits = 0;
    for i in 0..n {
        let key = format!("{:016}", (i * 7919) % n);
        if let Lookup::Hit(l) = s.get(key.as_bytes(), 1, |it| it.value.len()) {
            hits += l;
        }
    }
    let get_rate = n as f64 / t.elapsed().as_secs_f64();
    assert_eq!(hits, n as usize * vlen);
    let st = s.stats();
    let payload = n as usize * (klen + vlen);
    let used = st.segments_used as usize * st.segment_size as usize + st.index_bytes as usize;
    println!("items {n}, key {klen} B, value {vlen} B, flags 0");
    println!("item bytes (header+key+value): {:.2} per item, header {:.2}", st.bytes as f64 / n as f64, (st.bytes as usize - payload) as f64 / n as f64);
    println!("index: {} bytes, {:.2} per item ({} of {} slots used)", st.index_bytes, st.index_bytes as f64 / n as f64, st.index_used, st.index_slots);
    println!("total overhead (segments + index - key - value): {:.2} bytes per item", (used - payload) as f64 / n as f64);
    println!("set {:.2} M/s, get {:.2} M/s (single thread, incl. key formatting)", set_rate / 1e6, get_rate / 1e6);
}
