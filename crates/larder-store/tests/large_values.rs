//! Large values (items bigger than a segment, stored as large objects) under
//! concurrency: 10 MiB and 128 MiB values of a few keys are overwritten,
//! compare-and-swapped, deleted and read from several threads at once, under
//! a memory limit that cannot hold them all, so large objects are evicted
//! while others are being read.
//!
//! Every value describes itself (`larder_testkit::values`): key id, version,
//! length, a pattern seeded by (key, version), and a checksum. A reader
//! regenerates the pattern from the header and compares every byte, so a
//! value that is torn (two versions mixed), truncated, extended, or another
//! key's is caught, not just one whose checksum happens to fail.
//!
//! The amount of work is fixed (operations per thread), never a duration,
//! and nothing asserts on time.

use larder_store::{Config, Lookup, Mode, Store, StoreResult};
use larder_testkit::values::{check_value, make_value};
use larder_testkit::XorShift64;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const MIB: usize = 1 << 20;

/// The tests of this file each hold several hundred MiB; run them one at a
/// time so that the test binary's peak memory stays modest.
static HEAVY: Mutex<()> = Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// One key of the test and the versions handed out for it.
struct Key {
    id: u32,
    name: Vec<u8>,
    /// Nominal size (10 or 128 MiB); each version adds up to 64 KiB so that
    /// lengths differ between versions.
    base: usize,
    next_version: AtomicU64,
}

impl Key {
    fn len(&self, r: &mut XorShift64) -> usize {
        self.base + r.below(64 << 10) as usize
    }
}

struct Shared {
    store: Store,
    keys: Vec<Key>,
    /// Reads that returned a value (all verified).
    verified: AtomicU64,
    verified_big: AtomicU64,
    stored: AtomicU64,
    /// Stores refused for lack of memory (eviction on: should not happen).
    out_of_memory: AtomicU64,
    done: AtomicBool,
    max_used: AtomicUsize,
}

impl Shared {
    fn read(&self, k: &Key, buf: &mut Vec<u8>) -> Option<(u64, u64)> {
        let got = self.store.get(&k.name, 1, |i| {
            buf.clear();
            buf.extend_from_slice(i.value);
            i.cas
        });
        match got {
            Lookup::Hit(cas) => {
                let v = check_value(k.id, buf).unwrap_or_else(|e| panic!("{e}"));
                assert!(v < k.next_version.load(Ordering::SeqCst), "key {}: version {v} never handed out", k.id);
                self.verified.fetch_add(1, Ordering::Relaxed);
                if k.base >= 128 * MIB {
                    self.verified_big.fetch_add(1, Ordering::Relaxed);
                }
                Some((v, cas))
            }
            Lookup::Miss => None,
            other => panic!("key {}: unexpected {other:?}", k.id),
        }
    }

    fn count(&self, r: &StoreResult) {
        match r {
            StoreResult::Stored(_) => {
                self.stored.fetch_add(1, Ordering::Relaxed);
            }
            StoreResult::OutOfMemory => {
                self.out_of_memory.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

/// Keys 0..n_big are 128 MiB, the rest 10 MiB.
fn keys(n_big: u32, n_mid: u32) -> Vec<Key> {
    (0..n_big + n_mid)
        .map(|id| Key {
            id,
            name: format!("large:{id}").into_bytes(),
            base: if id < n_big { 128 * MIB } else { 10 * MIB },
            next_version: AtomicU64::new(0),
        })
        .collect()
}

/// Writers overwrite (set and cas), readers read, one thread deletes, all on
/// the same few keys; memory holds about two thirds of the data.
#[test]
fn large_values_never_tear_under_concurrent_overwrites_and_eviction() {
    let _heavy = heavy();
    let limit = 400 * MIB;
    let store = Store::new(Config { memory_limit: limit, item_size_max: 1 << 30, segment_size: MIB, evict: true }).unwrap();
    // 3 × 128 MiB + 6 × 10 MiB = 444 MiB > 400 MiB.
    let shared = Arc::new(Shared {
        store,
        keys: keys(3, 6),
        verified: AtomicU64::new(0),
        verified_big: AtomicU64::new(0),
        stored: AtomicU64::new(0),
        out_of_memory: AtomicU64::new(0),
        done: AtomicBool::new(false),
        max_used: AtomicUsize::new(0),
    });

    // Every key written once, in order: the last ones evict the first.
    let mut buf = Vec::new();
    let mut r = XorShift64(0x5EED);
    for k in &shared.keys {
        let len = k.len(&mut r);
        make_value(&mut buf, k.id, k.next_version.fetch_add(1, Ordering::SeqCst), len);
        let res = shared.store.store(Mode::Set, &k.name, 0, 0, &buf, 1);
        assert!(matches!(res, StoreResult::Stored(_)), "initial set of key {}: {res:?}", k.id);
    }
    let st = shared.store.stats();
    assert!(st.evictions > 0, "the keys must not all fit: {st:?}");
    drop(buf);

    // Memory stays within the limit the whole time.
    let monitor = {
        let sh = shared.clone();
        std::thread::spawn(move || {
            while !sh.done.load(Ordering::Relaxed) {
                let st = sh.store.stats();
                assert!(st.memory_used <= st.limit_maxbytes, "over the limit: {st:?}");
                sh.max_used.fetch_max(st.memory_used as usize, Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };

    let mut threads = Vec::new();
    // Two writers: plain overwrites, and read-cas-write cycles.
    for t in 0..2u64 {
        let sh = shared.clone();
        threads.push(std::thread::spawn(move || {
            let mut r = XorShift64(0xA11CE + t * 0x9E37_79B9);
            let (mut out, mut inb) = (Vec::new(), Vec::new());
            for i in 0..24 {
                // One write in four is a 128 MiB key.
                let k = if i % 4 == 0 { &sh.keys[r.below(3) as usize] } else { &sh.keys[3 + r.below(6) as usize] };
                let len = k.len(&mut r);
                if t == 1 {
                    if let Some((_, cas)) = sh.read(k, &mut inb) {
                        make_value(&mut out, k.id, k.next_version.fetch_add(1, Ordering::SeqCst), len);
                        let res = sh.store.store(Mode::Cas(cas), &k.name, 0, 0, &out, 1);
                        assert!(
                            matches!(res, StoreResult::Stored(_) | StoreResult::Exists | StoreResult::NotFound | StoreResult::OutOfMemory),
                            "cas on key {}: {res:?}",
                            k.id
                        );
                        sh.count(&res);
                        continue;
                    }
                }
                make_value(&mut out, k.id, k.next_version.fetch_add(1, Ordering::SeqCst), len);
                let res = sh.store.store(Mode::Set, &k.name, 0, 0, &out, 1);
                assert!(matches!(res, StoreResult::Stored(_) | StoreResult::OutOfMemory), "set of key {}: {res:?}", k.id);
                sh.count(&res);
            }
        }));
    }
    // Two readers, and a reader that sometimes deletes.
    for t in 0..3u64 {
        let sh = shared.clone();
        threads.push(std::thread::spawn(move || {
            let mut r = XorShift64(0xBEEF + t * 0x9E37_79B9);
            let mut buf = Vec::new();
            for i in 0..40 {
                let k = &sh.keys[r.below(sh.keys.len() as u64) as usize];
                if t == 2 && i % 8 == 7 {
                    sh.store.delete(&k.name, 1);
                } else {
                    sh.read(k, &mut buf);
                }
            }
        }));
    }
    let mut panicked = None;
    for t in threads {
        if let Err(e) = t.join() {
            panicked.get_or_insert(e);
        }
    }
    shared.done.store(true, Ordering::Relaxed);
    monitor.join().expect("memory monitor");
    if let Some(e) = panicked {
        std::panic::resume_unwind(e);
    }

    // Whatever is left is intact.
    let mut buf = Vec::new();
    for k in &shared.keys {
        shared.read(k, &mut buf);
    }
    let st = shared.store.stats();
    eprintln!(
        "verified reads {} (128 MiB: {}), stored {}, out of memory {}, max used {} MiB, {st:?}",
        shared.verified.load(Ordering::Relaxed),
        shared.verified_big.load(Ordering::Relaxed),
        shared.stored.load(Ordering::Relaxed),
        shared.out_of_memory.load(Ordering::Relaxed),
        shared.max_used.load(Ordering::Relaxed) >> 20,
    );
    assert!(st.memory_used <= st.limit_maxbytes, "{st:?}");
    assert!(st.large_objects > 0 && st.large_bytes <= st.memory_used, "{st:?}");
    assert!(shared.verified.load(Ordering::Relaxed) > 0, "some reads must hit");
    assert_eq!(shared.out_of_memory.load(Ordering::Relaxed), 0, "eviction is on: a store must make room, not fail");
}

/// Memory given back by small items (deleted, so their segments wait as
/// spare buffers) must serve a large object: with eviction on, a 128 MiB
/// set into an otherwise empty cache cannot fail.
#[test]
fn large_value_reuses_memory_freed_by_small_items() {
    let _heavy = heavy();
    let limit = 160 * MIB;
    let store = Store::new(Config { memory_limit: limit, item_size_max: 1 << 30, segment_size: MIB, evict: true }).unwrap();
    let small = vec![b's'; 4000];
    let n = 120 * MIB / 4000;
    for i in 0..n {
        assert!(matches!(store.store(Mode::Set, format!("s:{i}").as_bytes(), 0, 0, &small, 1), StoreResult::Stored(_)));
    }
    for i in 0..n {
        store.delete(format!("s:{i}").as_bytes(), 1);
    }
    let mut v = Vec::new();
    make_value(&mut v, 1, 1, 128 * MIB);
    let res = store.store(Mode::Set, b"big", 0, 0, &v, 1);
    assert!(matches!(res, StoreResult::Stored(_)), "{res:?}, {:?}", store.stats());
    let mut got = Vec::new();
    assert!(matches!(store.get(b"big", 1, |i| got.extend_from_slice(i.value)), Lookup::Hit(())));
    assert_eq!(check_value(1, &got), Ok(1));
    let st = store.stats();
    assert!(st.memory_used <= st.limit_maxbytes, "{st:?}");
}

/// A large object evicted for another one, and values of exactly the
/// segment size and one byte more (the boundary between a segment item and
/// a large object), read back byte for byte.
#[test]
fn large_objects_at_the_segment_boundary_and_replaced_by_eviction() {
    let _heavy = heavy();
    let seg = 64 << 10;
    let store = Store::new(Config { memory_limit: 64 * MIB, item_size_max: 1 << 30, segment_size: seg, evict: true }).unwrap();
    let st = store.stats();
    let seg = st.segment_size as usize;
    let mut v = Vec::new();
    let mut got = Vec::new();
    // Around the segment size (item header and key included).
    for (id, len) in [(1, seg - 40), (2, seg - 20), (3, seg), (4, seg + 1), (5, 3 * seg + 7)] {
        make_value(&mut v, id, 0, len);
        assert!(matches!(store.store(Mode::Set, format!("b:{id}").as_bytes(), 0, 0, &v, 1), StoreResult::Stored(_)));
    }
    for (id, len) in [(1, seg - 40), (2, seg - 20), (3, seg), (4, seg + 1), (5, 3 * seg + 7)] {
        got.clear();
        assert!(matches!(store.get(format!("b:{id}").as_bytes(), 1, |i| got.extend_from_slice(i.value)), Lookup::Hit(())));
        assert_eq!(got.len(), len);
        assert_eq!(check_value(id, &got), Ok(0));
    }
    // 40 MiB values into 64 MiB: each set evicts the previous one.
    for version in 0..4 {
        make_value(&mut v, 9, version, 40 * MIB + version as usize);
        assert!(matches!(store.store(Mode::Set, b"big", 0, 0, &v, 1), StoreResult::Stored(_)));
        got.clear();
        assert!(matches!(store.get(b"big", 1, |i| got.extend_from_slice(i.value)), Lookup::Hit(())));
        assert_eq!(check_value(9, &got), Ok(version));
    }
    let st = store.stats();
    assert!(st.memory_used <= st.limit_maxbytes, "{st:?}");
}

/// A store that can only make room by evicting a large object whose shard
/// is busy — here a reader holds it inside its read callback, as while a
/// 128 MiB value is being copied out — waits for that shard instead of
/// failing with `OutOfMemory` (eviction is on). Each round uses another
/// writer key: when it happens to share the reader's shard the writer just
/// waits for its own lock, so only rounds with distinct shards test anything
/// (with 16 shards, nearly all of them).
#[test]
fn a_large_store_waits_for_a_busy_shard_instead_of_failing() {
    let _heavy = heavy();
    let store = Arc::new(Store::new(Config { memory_limit: 64 * MIB, item_size_max: 1 << 30, segment_size: MIB, evict: true }).unwrap());
    assert!(store.stats().shards > 1);
    let mut victim = Vec::new();
    make_value(&mut victim, 0, 0, 40 * MIB);
    let victim = Arc::new(victim);
    for round in 0..4u32 {
        let r = store.store(Mode::Set, b"victim", 0, 0, &victim, 1);
        assert!(matches!(r, StoreResult::Stored(_)), "round {round}: victim {r:?}");
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let store = store.clone();
            std::thread::spawn(move || {
                let got = store.get(b"victim", 1, |i| {
                    held_tx.send(()).unwrap();
                    let _ = release_rx.recv();
                    check_value(0, i.value)
                });
                assert_eq!(got, Lookup::Hit(Ok(0)));
            })
        };
        held_rx.recv().unwrap();
        // 40 + 30 MiB do not fit in 64: the victim must go.
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let writer = {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut v = Vec::new();
                make_value(&mut v, 1 + round, 0, 30 * MIB);
                let key = format!("writer:{round}");
                done_tx.send(store.store(Mode::Set, key.as_bytes(), 0, 0, &v, 1)).unwrap();
                let mut got = Vec::new();
                assert!(matches!(store.get(key.as_bytes(), 1, |i| got.extend_from_slice(i.value)), Lookup::Hit(())));
                assert_eq!(check_value(1 + round, &got), Ok(0));
                store.delete(key.as_bytes(), 1);
            })
        };
        // While the shard is held the writer must not give up. (If it is
        // still waiting after this long, release the shard: the writer must
        // then succeed. Nothing here depends on how long anything takes.)
        let early = done_rx.recv_timeout(std::time::Duration::from_millis(500));
        if let Ok(r) = &early {
            assert!(matches!(r, StoreResult::Stored(_)), "round {round}: gave up while a shard was busy: {r:?}");
        }
        release_tx.send(()).unwrap();
        holder.join().unwrap();
        let r = early.unwrap_or_else(|_| done_rx.recv().unwrap());
        assert!(matches!(r, StoreResult::Stored(_)), "round {round}: {r:?}");
        writer.join().unwrap();
    }
}
