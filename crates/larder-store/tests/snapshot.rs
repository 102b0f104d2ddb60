//! Warm-restart snapshots through the public API: what a store saves is
//! what a fresh store serves after loading (value, flags, CAS, remaining
//! TTL, byte for byte), items that expired "while down" are gone, CAS keeps
//! growing after the restart, and a snapshot that is truncated, has any
//! byte flipped, is foreign or from a future format is refused with the
//! store left empty.

use larder_store::{
    Config, DeleteOutcome, Lookup, MetaGet, Mode, SnapshotClock, SnapshotError, Store, StoreResult, Write, WriteOptions,
    SNAPSHOT_FORMAT_VERSION,
};
use larder_testkit::values::{check_value, make_value};
use larder_testkit::XorShift64;
use std::collections::BTreeMap;

/// The meta-protocol write and invalidate these tests were written with,
/// as calls of the store's one write and one invalidate.
trait MetaForms {
    #[allow(clippy::too_many_arguments)]
    fn meta_store(&self, mode: Mode, key: &[u8], flags: u32, exptime: u32, value: &[u8], now: u32, opts: &WriteOptions) -> StoreResult;
    fn invalidate(&self, key: &[u8], now: u32, cas: Option<u64>, exptime: Option<u32>, new_cas: Option<u64>) -> DeleteOutcome;
}

impl MetaForms for Store {
    fn meta_store(&self, mode: Mode, key: &[u8], flags: u32, exptime: u32, value: &[u8], now: u32, opts: &WriteOptions) -> StoreResult {
        self.write(&Write { mode, key, flags, exptime, value, landed: None }, now, opts).0
    }

    fn invalidate(&self, key: &[u8], now: u32, cas: Option<u64>, exptime: Option<u32>, new_cas: Option<u64>) -> DeleteOutcome {
        self.invalidate_charged(key, now, cas, exptime, new_cas).0
    }
}

const MIB: usize = 1 << 20;

/// (value, flags, cas, exptime) as the source store serves it.
type Model = BTreeMap<Vec<u8>, (Vec<u8>, u32, u64, u32)>;

const SAVE: SnapshotClock = SnapshotClock { now: 1000, unix_now: 1_700_000_000 };
/// The restart: 50 s later on the wall clock, a fresh store clock.
const LOAD: SnapshotClock = SnapshotClock { now: 2, unix_now: 1_700_000_050 };

fn store(mem: usize, item_max: usize) -> Store {
    Store::new(Config { memory_limit: mem, item_size_max: item_max, ..Config::default() }).unwrap()
}

fn read(s: &Store, key: &[u8], now: u32) -> Option<(Vec<u8>, u32, u64, u32)> {
    match s.get(key, now, |it| (it.value.to_vec(), it.flags, it.cas, it.exptime)) {
        Lookup::Hit(x) => Some(x),
        _ => None,
    }
}

/// A store with small, medium and large (over a segment) values, flags,
/// TTLs (some expiring before `LOAD`), explicit CAS, replaced and deleted
/// keys; and what it serves at `SAVE.now`.
fn populated() -> (Store, Model) {
    let s = store(64 * MIB, 8 * MIB);
    let now = SAVE.now;
    let mut rng = XorShift64(0x5eed);
    let mut v = Vec::new();
    for i in 0..3000u32 {
        let len = match i % 10 {
            0..=5 => rng.below(200) as usize,
            6..=8 => 200 + rng.below(20_000) as usize,
            _ => 20_000 + rng.below(200_000) as usize,
        };
        make_value(&mut v, i, 1, len.max(40));
        let flags = if i % 3 == 0 { 0 } else { rng.next_u64() as u32 };
        // 0: never; 30 s: expires while down; 1000 s: survives.
        let exp = match i % 4 {
            0 | 1 => 0,
            2 => now + 30,
            _ => now + 1000,
        };
        let key = format!("key:{i}");
        assert!(matches!(s.store(Mode::Set, key.as_bytes(), flags, exp, &v, now), StoreResult::Stored(_)));
    }
    // Large objects (> 1 MiB segments) up to the 8 MiB item size.
    for (i, len) in [(10_000u32, MIB + 1), (10_001, 3 * MIB + 17), (10_002, 8 * MIB - 4096)] {
        make_value(&mut v, i, 7, len);
        let key = format!("big:{i}");
        assert!(matches!(s.store(Mode::Set, key.as_bytes(), 0xdead_beef, 0, &v, now), StoreResult::Stored(_)));
    }
    // A client-chosen CAS (meta E), a replaced key, a deleted key, and an
    // item already expired at save time.
    let opts = WriteOptions { new_cas: Some(777_777), ..WriteOptions::default() };
    assert_eq!(s.meta_store(Mode::Set, b"chosen", 5, 0, b"cas was chosen", now, &opts), StoreResult::Stored(777_777));
    s.store(Mode::Set, b"key:1", 1, 0, b"replaced value", now);
    s.store(Mode::Append, b"key:1", 0, 0, b"+appended", now);
    s.delete(b"key:2", now);
    s.store(Mode::Set, b"gone", 0, now - 1, b"expired before the save", now - 5);
    let mut model = Model::new();
    let keys: Vec<Vec<u8>> = (0..3000)
        .map(|i| format!("key:{i}").into_bytes())
        .chain((10_000..10_003).map(|i| format!("big:{i}").into_bytes()))
        .chain([b"chosen".to_vec(), b"gone".to_vec()])
        .collect();
    for k in keys {
        if let Some(x) = read(&s, &k, now) {
            model.insert(k, x);
        }
    }
    assert!(!model.contains_key(b"key:2".as_slice()) && !model.contains_key(b"gone".as_slice()));
    (s, model)
}

fn save(s: &Store) -> Vec<u8> {
    let mut out = Vec::new();
    let rep = s.save_snapshot(&mut out, SAVE, "9.9.9-test").unwrap();
    assert_eq!(rep.bytes as usize, out.len());
    out
}

#[test]
fn everything_survives_byte_for_byte() {
    let (src, model) = populated();
    let file = save(&src);
    let dst = store(64 * MIB, 8 * MIB);
    let rep = dst.load_snapshot(file.as_slice(), LOAD).unwrap();
    assert_eq!(rep.writer_version, "9.9.9-test");
    assert_eq!(rep.format_version, SNAPSHOT_FORMAT_VERSION);
    assert_eq!(rep.saved_at, SAVE.unix_now);
    assert_eq!(rep.records as usize, model.len());
    let mut expired = 0;
    for (k, (value, flags, cas, exp)) in &model {
        let got = read(&dst, k, LOAD.now);
        if *exp != 0 && *exp <= SAVE.now + 50 {
            assert_eq!(got, None, "{} expired while down", String::from_utf8_lossy(k));
            expired += 1;
            continue;
        }
        let (v2, f2, c2, e2) = got.unwrap_or_else(|| panic!("{} lost", String::from_utf8_lossy(k)));
        assert!(v2 == *value, "{} value differs", String::from_utf8_lossy(k));
        if let Some(id) = k.strip_prefix(b"key:").or_else(|| k.strip_prefix(b"big:")) {
            if k != b"key:1" {
                let id: u32 = std::str::from_utf8(id).unwrap().parse().unwrap();
                check_value(id, &v2).unwrap();
            }
        }
        assert_eq!((f2, c2), (*flags, *cas));
        // Remaining TTL: 1000 s at save, 50 s passed.
        let want = if *exp == 0 { 0 } else { exp - SAVE.now - 50 + LOAD.now };
        assert_eq!(e2, want);
    }
    assert_eq!(rep.expired, expired);
    assert_eq!(rep.items as usize, model.len() - expired as usize);
    assert!(expired > 500);
    assert_eq!(read(&dst, b"key:2", LOAD.now), None);
    assert_eq!(dst.stats().curr_items, rep.items);
}

#[test]
fn cas_keeps_growing_after_a_restart() {
    let (src, model) = populated();
    let file = save(&src);
    let dst = store(64 * MIB, 8 * MIB);
    dst.load_snapshot(file.as_slice(), LOAD).unwrap();
    let max = model.values().map(|x| x.2).max().unwrap();
    // `cas` with the CAS a client read before the restart still works.
    let (_, _, cas3, _) = model[b"key:3".as_slice()];
    let StoreResult::Stored(c) = dst.store(Mode::Cas(cas3), b"key:3", 0, 0, b"new", LOAD.now) else { panic!("cas failed") };
    assert!(c > max, "{c} <= {max}");
    // New keys and new versions of old keys get CAS values above every
    // restored one.
    for i in 0..2000 {
        let StoreResult::Stored(c) = dst.store(Mode::Set, format!("new:{i}").as_bytes(), 0, 0, b"x", LOAD.now) else { panic!() };
        assert!(c > max);
        let StoreResult::Stored(c) = dst.store(Mode::Set, format!("key:{i}").as_bytes(), 0, 0, b"y", LOAD.now) else { panic!() };
        assert!(c > max);
    }
}

#[test]
fn meta_state_survives() {
    let s = store(16 * MIB, MIB);
    s.store(Mode::Set, b"fetched", 0, 0, b"v", 10);
    s.store(Mode::Set, b"untouched", 0, 0, b"v", 10);
    s.get(b"fetched", 10, |_| ());
    let opts = WriteOptions { key_binary: true, ..WriteOptions::default() };
    s.meta_store(Mode::Set, b"bin", 0, 0, b"v", 10, &opts);
    // Invalidate: stale, and the first reader wins the refill.
    s.invalidate(b"bin", 10, None, None, None);
    let mut out = Vec::new();
    s.save_snapshot(&mut out, SnapshotClock { now: 10, unix_now: 5000 }, "t").unwrap();
    let d = store(16 * MIB, MIB);
    d.load_snapshot(out.as_slice(), SnapshotClock { now: 2, unix_now: 5001 }).unwrap();
    let peek = MetaGet { bump: false, ..MetaGet::default() };
    let state = |k: &[u8]| match d.meta_get(k, 2, &peek, |m| (m.fetched_before, m.stale, m.key_binary)) {
        Lookup::Hit(x) => x,
        _ => panic!("missing"),
    };
    assert_eq!(state(b"fetched"), (true, false, false));
    assert_eq!(state(b"untouched"), (false, false, false));
    assert_eq!(state(b"bin"), (false, true, true));
}

/// What a refused load must leave: an empty store.
fn refused(file: &[u8]) -> SnapshotError {
    let dst = store(64 * MIB, 8 * MIB);
    let err = dst.load_snapshot(file, LOAD).expect_err("a bad snapshot was accepted");
    assert_eq!(read(&dst, b"key:0", LOAD.now), None);
    assert_eq!(read(&dst, b"big:10000", LOAD.now), None);
    assert_eq!(live_items(&dst), 0, "items from a refused snapshot are servable");
    err
}

/// Items a reader could get (`curr_items` also counts flushed ones not yet
/// looked up, as memcached does).
fn live_items(s: &Store) -> usize {
    (0..s.shard_count()).map(|sh| s.for_each_item_in_shard(sh, LOAD.now, |_, _| {})).sum()
}

#[test]
fn truncated_snapshots_are_refused() {
    let (src, _) = populated();
    let file = save(&src);
    let mut cuts: Vec<usize> = vec![0, 1, 7, 8, 15, 16, 63, 64, 65, 80, 1000, file.len() / 2, file.len() - 37, file.len() - 36, file.len() - 5, file.len() - 1];
    let mut rng = XorShift64(7);
    cuts.extend((0..40).map(|_| rng.below(file.len() as u64) as usize));
    for cut in cuts {
        let e = refused(&file[..cut]);
        assert!(matches!(e, SnapshotError::Damaged(_) | SnapshotError::Foreign), "cut {cut}: {e}");
    }
    // Bytes after the end block.
    let mut longer = file.clone();
    longer.push(0);
    assert!(matches!(refused(&longer), SnapshotError::Damaged(_)));
}

#[test]
fn any_flipped_byte_is_refused() {
    // A small snapshot: every byte is tried.
    let s = store(8 * MIB, MIB);
    for i in 0..40u32 {
        s.store(Mode::Set, format!("key:{i}").as_bytes(), i, if i % 2 == 0 { 0 } else { 5000 }, &vec![b'a' + (i % 26) as u8; i as usize * 7], 1000);
    }
    let mut file = Vec::new();
    s.save_snapshot(&mut file, SAVE, "t").unwrap();
    for at in 0..file.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = file.clone();
            bad[at] ^= flip;
            let dst = store(8 * MIB, MIB);
            assert!(dst.load_snapshot(bad.as_slice(), LOAD).is_err(), "flip {flip:#x} at {at} of {} accepted", file.len());
            assert_eq!(live_items(&dst), 0);
        }
    }
    // And in a big one, at random places (large values included).
    let (src, _) = populated();
    let file = save(&src);
    let mut rng = XorShift64(99);
    for _ in 0..30 {
        let mut bad = file.clone();
        let at = rng.below(file.len() as u64) as usize;
        bad[at] ^= 1 << rng.below(8);
        refused(&bad);
    }
}

#[test]
fn foreign_and_future_files_are_refused() {
    assert!(matches!(refused(b""), SnapshotError::Foreign));
    assert!(matches!(refused(b"Tmain\nKmaxbytes 67108864\n"), SnapshotError::Foreign));
    assert!(matches!(refused(&[0u8; 4096]), SnapshotError::Foreign));
    let (src, _) = populated();
    let mut file = save(&src);
    file[8..12].copy_from_slice(&(SNAPSHOT_FORMAT_VERSION + 1).to_le_bytes());
    match refused(&file) {
        SnapshotError::Future { version, writer } => {
            assert_eq!((version, writer.as_str()), (SNAPSHOT_FORMAT_VERSION + 1, "9.9.9-test"));
        }
        e => panic!("{e}"),
    }
}

#[test]
fn a_smaller_store_loads_what_fits_and_nothing_wrong() {
    let (src, model) = populated();
    let file = save(&src);
    // A quarter of the memory; evictions make room while loading.
    let dst = store(16 * MIB, 8 * MIB);
    let rep = dst.load_snapshot(file.as_slice(), LOAD).unwrap();
    let mut hits = 0;
    for (k, (value, flags, cas, _)) in &model {
        if let Some((v, f, c, _)) = read(&dst, k, LOAD.now) {
            assert!(v == *value && f == *flags && c == *cas, "{} differs", String::from_utf8_lossy(k));
            hits += 1;
        }
    }
    assert!(hits > 100 && (hits as u64) < rep.items, "hits {hits}, {rep:?}");
    // A smaller -I skips what no longer fits, and nothing else.
    let dst = store(64 * MIB, 2 * MIB);
    let rep = dst.load_snapshot(file.as_slice(), LOAD).unwrap();
    assert_eq!(rep.too_large, 2);
    assert_eq!(read(&dst, b"big:10001", LOAD.now), None);
    assert!(read(&dst, b"big:10000", LOAD.now).is_some());
}

#[test]
fn flushed_items_are_not_saved() {
    let s = store(8 * MIB, MIB);
    s.store(Mode::Set, b"a", 0, 0, b"1", 10);
    s.flush_all(10, 10);
    s.store(Mode::Set, b"b", 0, 0, b"2", 10);
    let mut out = Vec::new();
    let rep = s.save_snapshot(&mut out, SnapshotClock { now: 10, unix_now: 100 }, "t").unwrap();
    assert_eq!(rep.items, 1);
    let d = store(8 * MIB, MIB);
    d.load_snapshot(out.as_slice(), SnapshotClock { now: 2, unix_now: 101 }).unwrap();
    assert_eq!(read(&d, b"a", 2), None);
    assert_eq!(read(&d, b"b", 2).map(|x| x.0), Some(b"2".to_vec()));
}

/// Format 2 keeps each item's access count: after a restart the items that
/// were read survive a scan of new one-hit items, as they would have
/// without the restart, instead of dying with the never-read ones.
#[test]
fn the_hot_set_survives_a_scan_after_a_restart() {
    let s = store(16 * MIB, MIB);
    let v = vec![b'v'; 1000];
    for i in 0..4000 {
        s.store(Mode::Set, format!("hot:{i}").as_bytes(), 0, 0, &v, 10);
        s.store(Mode::Set, format!("cold:{i}").as_bytes(), 0, 0, &v, 10);
    }
    for i in 0..4000 {
        for _ in 0..2 {
            s.get(format!("hot:{i}").as_bytes(), 10, |_| ());
        }
    }
    let mut out = Vec::new();
    s.save_snapshot(&mut out, SnapshotClock { now: 10, unix_now: 5000 }, "t").unwrap();
    let d = store(16 * MIB, MIB);
    d.load_snapshot(out.as_slice(), SnapshotClock { now: 2, unix_now: 5001 }).unwrap();
    for i in 0..12000 {
        d.store(Mode::Set, format!("scan:{i}").as_bytes(), 0, 0, &v, 2);
    }
    let peek = MetaGet { bump: false, ..MetaGet::default() };
    let alive = |prefix: &str| (0..4000).filter(|i| matches!(d.meta_get(format!("{prefix}:{i}").as_bytes(), 2, &peek, |_| ()), Lookup::Hit(_))).count();
    let (hot, cold) = (alive("hot"), alive("cold"));
    assert!(hot > 3000 && cold < hot / 4, "after the scan: {hot} hot and {cold} cold items of 4000 each");
}
