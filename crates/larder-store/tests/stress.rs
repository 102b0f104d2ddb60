//! Multi-threaded stress: mixed operations on overlapping keys from several
//! threads, under memory pressure (cross-shard eviction) and with the clock
//! moving. Every value carries its key and a checksum, so a torn, mixed or
//! misdirected read is detected. Bounded in time; a deadlock shows up as the
//! test timing out, a panic inside a worker fails the test.

use larder_store::{ArithResult, Config, Lookup, Mode, Store, StoreResult};
use larder_testkit::XorShift64;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const THREADS: usize = 4;

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// key | payload | 16 hex digits of the checksum of everything before.
fn make_value(key: &[u8], seed: u64, len: usize) -> Vec<u8> {
    let mut v = key.to_vec();
    v.push(b'|');
    let mut x = XorShift64(seed | 1);
    while v.len() < len.max(key.len() + 1) {
        v.push(b'a' + x.below(26) as u8);
    }
    let sum = fnv(&v);
    v.extend_from_slice(format!("{sum:016x}").as_bytes());
    v
}

fn check_value(key: &[u8], v: &[u8]) {
    assert!(v.len() >= key.len() + 17, "short value for {:?}", String::from_utf8_lossy(key));
    let (body, sum) = v.split_at(v.len() - 16);
    assert!(body.starts_with(key) && body[key.len()] == b'|', "value of another key under {:?}", String::from_utf8_lossy(key));
    assert_eq!(std::str::from_utf8(sum).unwrap(), format!("{:016x}", fnv(body)), "torn value under {:?}", String::from_utf8_lossy(key));
}

#[test]
fn mixed_ops_under_eviction_never_tear() {
    let s = Arc::new(Store::new(Config { memory_limit: 4 << 20, item_size_max: 1 << 20, segment_size: 64 << 10, evict: true }).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let clock = Arc::new(AtomicU32::new(1));
    let ops = Arc::new(AtomicU64::new(0));
    // STRESS_MS=<n> runs longer (a soak); the default keeps the suite quick.
    let ms = std::env::var("STRESS_MS").map_or(2500, |v| v.parse().unwrap());
    let deadline = Instant::now() + Duration::from_millis(ms);
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (s, stop, clock, ops) = (s.clone(), stop.clone(), clock.clone(), ops.clone());
            std::thread::spawn(move || {
                let mut r = XorShift64(0x1234_5678 + t as u64 * 0x9E37_79B9);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let now = clock.load(Ordering::Relaxed);
                    let key = format!("key:{}", r.below(20_000)).into_bytes();
                    let len = match r.below(100) {
                        0 => 70_000 + r.below(100_000) as usize, // large object
                        1..=5 => 2_000 + r.below(20_000) as usize,
                        _ => 20 + r.below(300) as usize,
                    };
                    let exptime = if r.below(10) == 0 { now + 1 + r.below(3) as u32 } else { 0 };
                    match r.below(100) {
                        0..=39 => {
                            if let Lookup::Hit(v) = s.get(&key, now, |i| i.value.to_vec()) {
                                check_value(&key, &v);
                            }
                        }
                        40..=69 => {
                            let v = make_value(&key, r.below(u64::MAX), len);
                            let r = s.store(Mode::Set, &key, 0, exptime, &v, now);
                            assert!(matches!(r, StoreResult::Stored(_)), "{r:?}");
                        }
                        70..=74 => {
                            let v = make_value(&key, r.below(u64::MAX), len);
                            s.store(Mode::Add, &key, 0, exptime, &v, now);
                        }
                        75..=79 => {
                            let v = make_value(&key, r.below(u64::MAX), len);
                            s.store(Mode::Replace, &key, 7, exptime, &v, now);
                        }
                        80..=86 => {
                            // read-modify-write with cas
                            if let Lookup::Hit((v, cas)) = s.get(&key, now, |i| (i.value.to_vec(), i.cas)) {
                                check_value(&key, &v);
                                let nv = make_value(&key, cas, len);
                                let res = s.store(Mode::Cas(cas), &key, 0, exptime, &nv, now);
                                assert!(matches!(res, StoreResult::Stored(_) | StoreResult::Exists | StoreResult::NotFound), "{res:?}");
                            }
                        }
                        87..=90 => {
                            s.delete(&key, now);
                        }
                        91..=94 => {
                            if let Lookup::Hit(v) = s.get_and_touch(&key, now, exptime, |i| i.value.to_vec()) {
                                check_value(&key, &v);
                            }
                        }
                        95..=97 => {
                            s.touch(&key, now, 0);
                        }
                        _ => {
                            let ck = format!("ctr:{}", r.below(50));
                            match s.arith(ck.as_bytes(), now, r.below(2) == 0, r.below(1000)) {
                                ArithResult::NotFound => {
                                    s.store(Mode::Add, ck.as_bytes(), 0, 0, b"0", now);
                                }
                                ArithResult::Value(_) => {}
                                other => panic!("{other:?}"),
                            }
                        }
                    }
                    n += 1;
                    if t == 0 && n % 2000 == 0 {
                        clock.fetch_add(1, Ordering::Relaxed);
                        if n % 200_000 == 0 {
                            s.flush_all(now, now + 1);
                        }
                        if Instant::now() > deadline {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
                ops.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    // Stats and memlimit changes concurrently with the workers.
    let mut shrink = false;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        let st = s.stats();
        assert!(st.memory_used <= st.limit_maxbytes + (1 << 20), "{st:?}");
        shrink = !shrink;
        s.set_memory_limit(if shrink { 3 << 20 } else { 4 << 20 }).unwrap();
        if Instant::now() > deadline + Duration::from_secs(20) {
            panic!("workers did not stop: deadlock?");
        }
    }
    for w in workers {
        w.join().expect("worker panicked");
    }
    s.set_memory_limit(4 << 20).unwrap();
    let st = s.stats();
    eprintln!("{} ops, {st:?}", ops.load(Ordering::Relaxed));
    assert!(st.evictions > 0, "the test should exercise eviction");
    assert!(st.large_objects + st.evictions > 0);
    assert!(st.segments_used * st.segment_size + st.index_bytes + st.large_bytes <= 4 << 20, "{st:?}");
    // Everything still readable is intact.
    for k in 0..20_000 {
        let key = format!("key:{k}").into_bytes();
        if let Lookup::Hit(v) = s.get(&key, u32::MAX - 1, |i| i.value.to_vec()) {
            check_value(&key, &v);
        }
    }
}

#[test]
fn concurrent_increments_are_not_lost() {
    let s = Arc::new(Store::new(Config { memory_limit: 16 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap());
    for k in 0..8 {
        s.store(Mode::Set, format!("c{k}").as_bytes(), 0, 0, b"0", 1);
    }
    let per_thread = 20_000u64;
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    let key = format!("c{}", (i + t as u64) % 8);
                    assert!(matches!(s.arith(key.as_bytes(), 1, true, 1), ArithResult::Value(_)));
                    // Readers see some number, never garbage.
                    if let Lookup::Hit(v) = s.get(key.as_bytes(), 1, |i| i.value.to_vec()) {
                        let txt = String::from_utf8(v).unwrap();
                        txt.trim_end().parse::<u64>().unwrap();
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let total: u64 = (0..8)
        .map(|k| match s.get(format!("c{k}").as_bytes(), 1, |i| String::from_utf8(i.value.to_vec()).unwrap()) {
            Lookup::Hit(v) => v.trim_end().parse::<u64>().unwrap(),
            other => panic!("{other:?}"),
        })
        .sum();
    assert_eq!(total, per_thread * THREADS as u64);
    assert_eq!(s.stats().evictions, 0);
}
