//! memcached 1.6.18 semantics of every `Store` operation, one behaviour per test.

use larder_store::{ArithResult, Config, Lookup, Mode, Store, StoreResult};

fn store() -> Store {
    Store::new(Config { memory_limit: 8 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap()
}

fn get(s: &Store, k: &str, now: u32) -> Option<(Vec<u8>, u32, u64, u32)> {
    match s.get(k.as_bytes(), now, |i| (i.value.to_vec(), i.flags, i.cas, i.exptime)) {
        Lookup::Hit(v) => Some(v),
        _ => None,
    }
}

fn val(s: &Store, k: &str, now: u32) -> Option<Vec<u8>> {
    get(s, k, now).map(|v| v.0)
}

fn set(s: &Store, k: &str, v: &str) -> u64 {
    match s.store(Mode::Set, k.as_bytes(), 0, 0, v.as_bytes(), 1) {
        StoreResult::Stored(c) => c,
        r => panic!("{r:?}"),
    }
}

#[test]
fn set_get_flags_and_cas() {
    let s = store();
    let c1 = match s.store(Mode::Set, b"k", 0xdead_beef, 0, b"v1", 1) {
        StoreResult::Stored(c) => c,
        r => panic!("{r:?}"),
    };
    assert_eq!(get(&s, "k", 1), Some((b"v1".to_vec(), 0xdead_beef, c1, 0)));
    let c2 = set(&s, "k", "v2");
    assert_ne!(c1, c2);
    assert_eq!(get(&s, "k", 1).unwrap().1, 0, "flags replaced by set");
    assert_eq!(s.get(b"nope", 1, |_| ()), Lookup::Miss);
    // Empty value round-trips.
    set(&s, "e", "");
    assert_eq!(val(&s, "e", 1), Some(vec![]));
}

#[test]
fn add_replace() {
    let s = store();
    assert!(matches!(s.store(Mode::Replace, b"k", 0, 0, b"x", 1), StoreResult::NotStored));
    assert!(matches!(s.store(Mode::Add, b"k", 0, 0, b"a", 1), StoreResult::Stored(_)));
    assert!(matches!(s.store(Mode::Add, b"k", 0, 0, b"b", 1), StoreResult::NotStored));
    assert_eq!(val(&s, "k", 1).unwrap(), b"a");
    assert!(matches!(s.store(Mode::Replace, b"k", 0, 0, b"r", 1), StoreResult::Stored(_)));
    assert_eq!(val(&s, "k", 1).unwrap(), b"r");
    // add over an expired item succeeds
    s.store(Mode::Set, b"x", 0, 5, b"old", 1);
    assert!(matches!(s.store(Mode::Add, b"x", 0, 0, b"new", 5), StoreResult::Stored(_)));
    assert_eq!(val(&s, "x", 6).unwrap(), b"new");
}

#[test]
fn append_prepend_keep_flags_and_exptime() {
    let s = store();
    assert_eq!(s.store(Mode::Append, b"k", 0, 0, b"x", 1), StoreResult::NotStored);
    assert_eq!(s.store(Mode::Prepend, b"k", 0, 0, b"x", 1), StoreResult::NotStored);
    s.store(Mode::Set, b"k", 7, 100, b"mid", 1);
    let c0 = get(&s, "k", 1).unwrap().2;
    assert!(matches!(s.store(Mode::Append, b"k", 9, 0, b">>", 1), StoreResult::Stored(_)));
    assert!(matches!(s.store(Mode::Prepend, b"k", 9, 0, b"<<", 1), StoreResult::Stored(_)));
    let (v, f, c, e) = get(&s, "k", 1).unwrap();
    assert_eq!(v, b"<<mid>>");
    assert_eq!((f, e), (7, 100));
    assert_ne!(c, c0);
    assert_eq!(s.get(b"k", 100, |_| ()), Lookup::Expired);
}

#[test]
fn cas_outcomes() {
    let s = store();
    assert_eq!(s.store(Mode::Cas(1), b"k", 0, 0, b"x", 1), StoreResult::NotFound);
    let c = set(&s, "k", "a");
    assert_eq!(s.store(Mode::Cas(c + 1), b"k", 0, 0, b"x", 1), StoreResult::Exists);
    assert_eq!(s.store(Mode::Cas(0), b"k", 0, 0, b"x", 1), StoreResult::Exists);
    let c2 = match s.store(Mode::Cas(c), b"k", 3, 0, b"b", 1) {
        StoreResult::Stored(c2) => c2,
        r => panic!("{r:?}"),
    };
    assert_ne!(c, c2);
    assert_eq!(s.store(Mode::Cas(c), b"k", 0, 0, b"x", 1), StoreResult::Exists, "old cas is stale");
    assert_eq!(get(&s, "k", 1).unwrap(), (b"b".to_vec(), 3, c2, 0));
    // cas on an expired item: NOT_FOUND
    s.store(Mode::Set, b"t", 0, 10, b"v", 1);
    let ct = get(&s, "t", 1).unwrap().2;
    assert_eq!(s.store(Mode::Cas(ct), b"t", 0, 0, b"w", 10), StoreResult::NotFound);
}

#[test]
fn touch_and_gat_keep_cas() {
    let s = store();
    s.store(Mode::Set, b"k", 0, 10, b"v", 1);
    let c = get(&s, "k", 1).unwrap().2;
    assert!(s.touch(b"k", 2, 20));
    assert!(!s.touch(b"none", 2, 20));
    assert_eq!(get(&s, "k", 15).unwrap().2, c);
    let r = s.get_and_touch(b"k", 16, 0, |i| (i.cas, i.exptime));
    assert_eq!(r, Lookup::Hit((c, 0)));
    assert!(get(&s, "k", 1000).is_some(), "never expires after gat 0");
    assert_eq!(s.get_and_touch(b"none", 1, 0, |_| ()), Lookup::Miss);
}

#[test]
fn expiry_is_lazy_and_reported_once() {
    let s = store();
    s.store(Mode::Set, b"k", 0, 10, b"v", 1);
    assert!(get(&s, "k", 9).is_some());
    assert_eq!(s.get(b"k", 10, |_| ()), Lookup::Expired);
    assert_eq!(s.get(b"k", 10, |_| ()), Lookup::Miss);
    let st = s.stats();
    assert_eq!(st.curr_items, 0);
    assert_eq!(st.reclaimed, 1);
    assert!(!s.touch(b"k", 11, 0));
    s.store(Mode::Set, b"k", 0, 10, b"v", 1);
    assert!(!s.delete(b"k", 10), "expired item is not deleted");
    assert!(!s.touch(b"k", 10, 0));
}

#[test]
fn delete() {
    let s = store();
    set(&s, "k", "v");
    assert!(s.delete(b"k", 1));
    assert!(!s.delete(b"k", 1));
    assert_eq!(val(&s, "k", 1), None);
    assert_eq!(s.stats().curr_items, 0);
    assert_eq!(s.stats().bytes, 0);
}

#[test]
fn incrdecr_like_memcached_t_incrdecr() {
    let s = store();
    set(&s, "bug21", "9223372036854775807");
    assert_eq!(s.arith(b"bug21", 1, true, 1), ArithResult::Value(9223372036854775808));
    assert_eq!(s.arith(b"bug21", 1, true, 1), ArithResult::Value(9223372036854775809));
    assert_eq!(s.arith(b"bug21", 1, false, 1), ArithResult::Value(9223372036854775808));
    set(&s, "num", "1");
    assert_eq!(s.arith(b"num", 1, true, 1), ArithResult::Value(2));
    assert_eq!(val(&s, "num", 1).unwrap(), b"2");
    assert_eq!(s.arith(b"num", 1, true, 8), ArithResult::Value(10));
    assert_eq!(val(&s, "num", 1).unwrap(), b"10");
    assert_eq!(s.arith(b"num", 1, false, 1), ArithResult::Value(9));
    // memcached rewrites in place: the length stays, padded with spaces.
    assert_eq!(val(&s, "num", 1).unwrap(), b"9 ");
    assert_eq!(s.arith(b"num", 1, false, 9), ArithResult::Value(0));
    assert_eq!(s.arith(b"num", 1, false, 5), ArithResult::Value(0));
    assert_eq!(val(&s, "num", 1).unwrap(), b"0 ");
    set(&s, "num", "4294967296");
    assert_eq!(s.arith(b"num", 1, true, 1), ArithResult::Value(4294967297));
    set(&s, "num", "18446744073709551615");
    assert_eq!(s.arith(b"num", 1, true, 1), ArithResult::Value(0));
    assert_eq!(val(&s, "num", 1).unwrap(), b"0                   ");
    assert_eq!(s.arith(b"bogus", 1, false, 5), ArithResult::NotFound);
    set(&s, "bigincr", "0");
    assert_eq!(s.arith(b"bigincr", 1, true, 18446744073709551610), ArithResult::Value(18446744073709551610));
    set(&s, "text", "hi");
    assert_eq!(s.arith(b"text", 1, true, 1), ArithResult::NonNumeric);
    set(&s, "empty", "");
    assert_eq!(s.arith(b"empty", 1, true, 1), ArithResult::NonNumeric);
}

#[test]
fn incr_keeps_flags_exptime_changes_cas() {
    let s = store();
    s.store(Mode::Set, b"n", 42, 50, b"5", 1);
    let c = get(&s, "n", 1).unwrap().2;
    assert_eq!(s.arith(b"n", 1, true, 1), ArithResult::Value(6));
    let (v, f, c2, e) = get(&s, "n", 1).unwrap();
    assert_eq!((v.as_slice(), f, e), (&b"6"[..], 42, 50));
    assert_ne!(c, c2);
    assert_eq!(s.arith(b"n", 50, true, 1), ArithResult::NotFound, "expired");
}

#[test]
fn total_items_counts_links() {
    let s = store();
    set(&s, "a", "1");
    set(&s, "a", "2");
    s.store(Mode::Append, b"a", 0, 0, b"0", 1);
    assert_eq!(s.stats().total_items, 3);
    s.arith(b"a", 1, true, 1); // 20 -> 21 in place: no new link
    assert_eq!(s.stats().total_items, 3);
    set(&s, "b", "9");
    s.arith(b"b", 1, true, 1); // 9 -> 10 grows: new item
    assert_eq!(s.stats().total_items, 5);
    assert_eq!(s.stats().curr_items, 2);
}

#[test]
fn too_large() {
    let s = Store::new(Config { memory_limit: 8 << 20, item_size_max: 1024, segment_size: 64 << 10, evict: true }).unwrap();
    // memcached's own size formula: 48 + key + 1 + value + 2 + 8 (+4 with flags).
    let fits = vec![b'x'; 1024 - 48 - 1 - 1 - 2 - 8];
    assert!(matches!(s.store(Mode::Set, b"k", 0, 0, &fits, 1), StoreResult::Stored(_)));
    assert_eq!(s.store(Mode::Set, b"k", 1, 0, &fits, 1), StoreResult::TooLarge);
    // A failed set removes the old value.
    assert_eq!(val(&s, "k", 1), None);
    set(&s, "k", "v");
    assert_eq!(s.store(Mode::Add, b"k", 0, 0, &[0; 2000], 1), StoreResult::TooLarge);
    assert_eq!(val(&s, "k", 1).unwrap(), b"v", "only set drops the old value");
    // Append past the limit: NOT_STORED, value intact.
    assert_eq!(s.store(Mode::Append, b"k", 0, 0, &fits, 1), StoreResult::NotStored);
    assert_eq!(val(&s, "k", 1).unwrap(), b"v");
    assert_eq!(s.store(Mode::Set, &[b'k'; 251], 0, 0, b"v", 1), StoreResult::TooLarge);
}

#[test]
fn flush_all_now_and_delayed() {
    let s = store();
    set(&s, "a", "1");
    set(&s, "b", "2");
    s.flush_all(5, 5);
    assert_eq!(s.get(b"a", 5, |_| ()), Lookup::Flushed);
    assert_eq!(s.get(b"a", 5, |_| ()), Lookup::Miss);
    assert_eq!(s.arith(b"b", 5, true, 1), ArithResult::NotFound);
    set(&s, "c", "3");
    assert_eq!(val(&s, "c", 6).unwrap(), b"3", "stored after the flush");
    // Delayed: items stored before `at` die once now >= at.
    s.flush_all(10, 20);
    s.store(Mode::Set, b"d", 0, 0, b"4", 15);
    assert!(val(&s, "c", 19).is_some());
    assert!(val(&s, "d", 19).is_some());
    assert_eq!(s.get(b"c", 20, |_| ()), Lookup::Flushed);
    assert_eq!(s.get(b"d", 21, |_| ()), Lookup::Flushed);
    s.store(Mode::Set, b"e", 0, 0, b"5", 21);
    assert_eq!(val(&s, "e", 22).unwrap(), b"5");
    // A later flush_all replaces a pending one.
    s.flush_all(30, 40);
    s.flush_all(31, 50);
    assert!(val(&s, "e", 45).is_some());
    assert_eq!(s.get(b"e", 50, |_| ()), Lookup::Flushed);
}

#[test]
fn cas_never_repeats_for_a_key() {
    let s = store();
    let mut seen = std::collections::HashSet::new();
    for i in 0..20_000 {
        let c = match s.store(Mode::Set, b"k", 0, 0, format!("{i}").as_bytes(), 1) {
            StoreResult::Stored(c) => c,
            r => panic!("{r:?}"),
        };
        assert!(c != 0 && seen.insert(c), "cas {c} repeated");
        if i % 1000 == 0 {
            s.flush_all(1, 1);
        }
    }
}

#[test]
fn config_validation_and_memlimit() {
    assert!(Store::new(Config { segment_size: 100, ..Config::default() }).is_err());
    assert!(Store::new(Config { memory_limit: 1000, ..Config::default() }).is_err());
    let s = store();
    assert!(s.set_memory_limit(100).is_err());
    s.set_memory_limit(16 << 20).unwrap();
    assert_eq!(s.stats().limit_maxbytes, 16 << 20);
}

#[test]
fn store_is_send_sync() {
    fn assert<T: Send + Sync>() {}
    assert::<Store>();
}

#[test]
fn shard_count_scales_with_the_limit() {
    let shards = |m: usize| Store::new(Config { memory_limit: m, ..Config::default() }).unwrap().stats().shards;
    assert_eq!(shards(3 << 20), 1); // 48 segments of 64 KiB: one shard (open segments' overhead)
    assert_eq!(shards(4 << 20), 8); // 64 segments of 64 KiB
    assert_eq!(shards(64 << 20), 16); // 1024 segments of 64 KiB
    assert_eq!(shards(1 << 30), 16);
    assert_eq!(shards(64 << 30), 256);
    assert_eq!(shards(1 << 40), 256);
}

#[test]
fn cas_grows_across_large_and_small_versions() {
    let s = Store::new(Config { memory_limit: 8 << 20, item_size_max: 1 << 20, segment_size: 64 << 10, evict: true }).unwrap();
    let mut last = 0;
    for i in 0..50 {
        let v = if i % 3 == 0 { vec![b'L'; 100_000] } else { vec![b's'; 10] };
        let StoreResult::Stored(c) = s.store(Mode::Set, b"k", 0, 0, &v, 1) else { panic!() };
        assert!(c > last, "version {i}: cas {c} after {last}");
        last = c;
        assert_eq!(s.get(b"k", 1, |i| (i.cas, i.value.len())), Lookup::Hit((c, v.len())));
    }
    // Pad bytes left by large objects are stepped over by eviction walks.
    for i in 0..2000 {
        s.store(Mode::Set, format!("f{i}").as_bytes(), 0, 0, &[b'x'; 5000], 1);
    }
    assert!(s.stats().evictions > 0);
}
