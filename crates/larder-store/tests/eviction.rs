//! Memory limit, eviction, `-M` (no eviction), large objects, memlimit changes.

use larder_store::{Config, Lookup, Mode, Stats, Store, StoreResult};
use larder_testkit::XorShift64;

fn check_budget(st: &Stats) {
    let seg = st.segments_used * st.segment_size + st.index_bytes + st.large_bytes;
    assert!(seg <= st.limit_maxbytes, "segments+index {seg} > limit {}", st.limit_maxbytes);
    assert!(st.memory_used <= st.limit_maxbytes, "{st:?}");
    assert!(st.bytes <= st.memory_used);
}

fn value(i: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut x = XorShift64(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    while v.len() < len {
        v.push(x.next_u64() as u8);
    }
    v
}

#[test]
fn writing_three_times_the_limit_stays_within_it() {
    let limit = 4 << 20;
    let s = Store::new(Config { memory_limit: limit, segment_size: 64 << 10, ..Config::default() }).unwrap();
    let vlen = 200;
    let n = 3 * limit as u64 / vlen as u64;
    for i in 0..n {
        let r = s.store(Mode::Set, format!("key:{i}").as_bytes(), 0, 0, &value(i, vlen), 1);
        assert!(matches!(r, StoreResult::Stored(_)), "{i}: {r:?}");
        if i % 5000 == 0 {
            check_budget(&s.stats());
        }
    }
    let st = s.stats();
    check_budget(&st);
    assert!(st.evictions > 0);
    assert_eq!(st.total_items, n);
    assert_eq!(st.curr_items + st.evictions, n, "{st:?}");
    // The most recent writes survive, and anything found is exact.
    for i in n - 1000..n {
        let got = s.get(format!("key:{i}").as_bytes(), 1, |it| it.value.to_vec());
        assert_eq!(got, Lookup::Hit(value(i, vlen)), "recent key {i}");
    }
    let mut hits = 0;
    for i in 0..n {
        if let Lookup::Hit(v) = s.get(format!("key:{i}").as_bytes(), 1, |it| it.value.to_vec()) {
            assert_eq!(v, value(i, vlen));
            hits += 1;
        }
    }
    // Most of the memory holds live data.
    assert!(hits as usize * (vlen + 16) > limit / 2, "hits {hits}");
}

#[test]
fn no_evict_returns_out_of_memory() {
    let limit = 2 << 20;
    let s = Store::new(Config { memory_limit: limit, segment_size: 64 << 10, evict: false, ..Config::default() }).unwrap();
    let mut stored = 0u64;
    let mut oom = false;
    for i in 0..100_000u64 {
        match s.store(Mode::Set, format!("key:{i}").as_bytes(), 0, 0, &value(i, 100), 1) {
            StoreResult::Stored(_) => stored += 1,
            StoreResult::OutOfMemory => {
                oom = true;
                break;
            }
            r => panic!("{r:?}"),
        }
    }
    assert!(oom);
    let st = s.stats();
    check_budget(&st);
    assert_eq!(st.evictions, 0);
    assert_eq!(st.curr_items, stored);
    for i in 0..stored {
        assert_eq!(s.get(format!("key:{i}").as_bytes(), 1, |it| it.value.to_vec()), Lookup::Hit(value(i, 100)));
    }
    // Deleting frees room again.
    for i in 0..stored / 2 {
        assert!(s.delete(format!("key:{i}").as_bytes(), 1));
    }
    assert!(matches!(s.store(Mode::Set, b"again", 0, 0, &[1; 100], 1), StoreResult::Stored(_)));
}

#[test]
fn no_evict_reclaims_expired_and_flushed() {
    let s = Store::new(Config { memory_limit: 2 << 20, segment_size: 64 << 10, evict: false, ..Config::default() }).unwrap();
    let mut i = 0u64;
    while let StoreResult::Stored(_) = s.store(Mode::Set, format!("k{i}").as_bytes(), 0, 10, &[7; 100], 1) {
        i += 1;
    }
    // Everything expired at 10: the space is reusable (not quite all of it:
    // the index grows while old and new entries coexist, and the segments
    // that were open hold a mix).
    for j in 0..i * 3 / 4 {
        let r = s.store(Mode::Set, format!("n{j}").as_bytes(), 0, 0, &[8; 100], 10);
        assert!(matches!(r, StoreResult::Stored(_)), "{j} of {i}: {r:?} {:?}", s.stats());
    }
    assert_eq!(s.stats().evictions, 0);
    assert!(s.stats().reclaimed > 0);
    s.flush_all(11, 11);
    for j in 0..i * 3 / 4 {
        let r = s.store(Mode::Set, format!("m{j}").as_bytes(), 0, 0, &[9; 100], 11);
        assert!(matches!(r, StoreResult::Stored(_)), "{j}: {r:?}");
    }
}

#[test]
fn large_values_round_trip_and_are_accounted() {
    let item_max = 48 << 20;
    let s = Store::new(Config { memory_limit: 2 * item_max, item_size_max: item_max, segment_size: 1 << 20, evict: true }).unwrap();
    let v5 = value(5, 5 << 20);
    let v40 = value(40, 40 << 20);
    assert!(matches!(s.store(Mode::Set, b"five", 3, 0, &v5, 1), StoreResult::Stored(_)));
    assert!(matches!(s.store(Mode::Set, b"forty", 0, 0, &v40, 1), StoreResult::Stored(_)));
    assert_eq!(s.get(b"five", 1, |i| i.value == &v5[..] && i.flags == 3), Lookup::Hit(true));
    assert_eq!(s.get(b"forty", 1, |i| i.value == &v40[..]), Lookup::Hit(true));
    let st = s.stats();
    assert_eq!(st.large_objects, 2);
    assert!(st.large_bytes >= (45 << 20) as u64);
    assert!(st.bytes >= (45 << 20) as u64);
    check_budget(&st);
    // Append to a large value.
    assert!(matches!(s.store(Mode::Append, b"five", 0, 0, b"tail", 1), StoreResult::Stored(_)));
    assert_eq!(s.get(b"five", 1, |i| i.value.len() == v5.len() + 4 && i.value.ends_with(b"tail") && i.value.starts_with(&v5[..1000])), Lookup::Hit(true));
    // Deleting frees the memory at once.
    assert!(s.delete(b"forty", 1));
    let st = s.stats();
    assert_eq!(st.large_objects, 1);
    assert!(st.memory_used < (10 << 20) as u64, "{st:?}");
    // Filling past the limit with large values evicts the oldest ones.
    for i in 0..6u64 {
        let r = s.store(Mode::Set, format!("big{i}").as_bytes(), 0, 0, &value(i, 40 << 20), 1);
        assert!(matches!(r, StoreResult::Stored(_)), "{r:?}");
        check_budget(&s.stats());
    }
    assert!(s.stats().evictions >= 3);
    assert_eq!(s.get(b"big5", 1, |i| i.value == &value(5, 40 << 20)[..]), Lookup::Hit(true));
}

#[test]
fn shrinking_the_limit_evicts_down() {
    let s = Store::new(Config { memory_limit: 8 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap();
    for i in 0..60_000u64 {
        s.store(Mode::Set, format!("key:{i}").as_bytes(), 0, 0, &value(i, 100), 1);
    }
    assert!(s.stats().memory_used > 6 << 20);
    s.set_memory_limit(4 << 20).unwrap();
    for i in 0..40_000u64 {
        s.store(Mode::Set, format!("new:{i}").as_bytes(), 0, 0, &value(i, 100), 1);
    }
    let st = s.stats();
    check_budget(&st);
    s.set_memory_limit(16 << 20).unwrap();
    for i in 0..100_000u64 {
        s.store(Mode::Set, format!("more:{i}").as_bytes(), 0, 0, &value(i, 100), 1);
    }
    let st = s.stats();
    check_budget(&st);
    assert!(st.memory_used > 12 << 20, "grew into the new limit: {st:?}");
}

#[test]
fn fully_expired_segments_go_before_live_ones() {
    let limit = 4 << 20;
    let s = Store::new(Config { memory_limit: limit, segment_size: 64 << 10, ..Config::default() }).unwrap();
    let per = limit as u64 / 3 / 220;
    // Oldest: never expires. Then: expires at 100.
    for i in 0..per {
        s.store(Mode::Set, format!("keep:{i}").as_bytes(), 0, 0, &value(i, 200), 1);
    }
    for i in 0..per {
        s.store(Mode::Set, format!("temp:{i}").as_bytes(), 0, 100, &value(i, 200), 1);
    }
    assert_eq!(s.stats().evictions, 0);
    // At 100, new writes reuse the expired segments, not the oldest live ones.
    for i in 0..per {
        let r = s.store(Mode::Set, format!("new:{i}").as_bytes(), 0, 0, &value(i, 200), 100);
        assert!(matches!(r, StoreResult::Stored(_)));
    }
    let st = s.stats();
    check_budget(&st);
    assert_eq!(st.evictions, 0, "{st:?}");
    assert!(st.reclaimed > 0, "{st:?}");
    for i in 0..per {
        assert_eq!(s.get(format!("keep:{i}").as_bytes(), 100, |it| it.value.to_vec()), Lookup::Hit(value(i, 200)));
    }
}

#[test]
fn small_limits_get_small_segments_and_evict_item_by_item() {
    // memcached's t/issue_22.t: -m 3, 65 KiB values; once full, each new
    // item evicts exactly one old one.
    let s = Store::new(Config { memory_limit: 3 << 20, ..Config::default() }).unwrap();
    assert_eq!(s.stats().segment_size, 64 << 10);
    let v = vec![b'B'; 66560];
    for k in 0..60 {
        assert!(matches!(s.store(Mode::Set, format!("key{k}").as_bytes(), 0, 0, &v, 1), StoreResult::Stored(_)));
    }
    let before = s.stats().evictions;
    assert!(before > 0);
    for k in 60..100 {
        assert!(matches!(s.store(Mode::Set, format!("key{k}").as_bytes(), 0, 0, &v, 1), StoreResult::Stored(_)));
    }
    assert_eq!(s.stats().evictions - before, 40);
    check_budget(&s.stats());
    // About 1024 segments: 64 KiB at the default 64 MiB, 256 KiB at 256
    // MiB, the full 1 MiB from 1 GiB up.
    let s = Store::new(Config::default()).unwrap();
    assert_eq!(s.stats().segment_size, 64 << 10);
    let s = Store::new(Config { memory_limit: 256 << 20, ..Config::default() }).unwrap();
    assert_eq!(s.stats().segment_size, 256 << 10);
    let s = Store::new(Config { memory_limit: 1 << 30, ..Config::default() }).unwrap();
    assert_eq!(s.stats().segment_size, 1 << 20);
}

/// `Stats::oldest_born` (`stats items` `age`): items that survive an
/// eviction are moved to a main-queue segment, which takes on their older
/// write time, so the age keeps counting from when they were written; once
/// they are gone, the oldest data is the next writes.
#[test]
fn survivors_keep_their_write_time() {
    // Enough hot items that the main queue makes up most segments and its
    // own segments get evicted, their survivors moving into younger ones.
    const HOT: u64 = 14_000;
    let limit = 4 << 20;
    let s = Store::new(Config { memory_limit: limit, segment_size: 64 << 10, ..Config::default() }).unwrap();
    assert_eq!(s.stats().oldest_born, None);
    for i in 0..HOT {
        s.store(Mode::Set, format!("hot:{i}").as_bytes(), 0, 0, &value(i, 200), 10);
    }
    assert_eq!(s.stats().oldest_born, Some(10));
    // Read once: each earns one pass through an eviction.
    for i in 0..HOT {
        assert!(matches!(s.get(format!("hot:{i}").as_bytes(), 11, |_| ()), Lookup::Hit(())));
    }
    // Six times the limit in new items, written at t = 50..60, the hot
    // items read again now and then: their segments are evicted and the
    // survivors kept. (Whether a moved item brings its write time into a
    // younger segment is checked by shard.rs's
    // `moved_items_bring_their_write_time`; here the main queue stays too
    // small for its own segments to be evicted.)
    let n = 6 * limit as u64 / 200;
    for i in 0..n {
        s.store(Mode::Set, format!("new:{i}").as_bytes(), 0, 0, &value(i, 200), 50 + (i * 10 / n) as u32);
        if i % (n / 24) == 0 {
            for k in 0..HOT {
                s.get(format!("hot:{k}").as_bytes(), 50, |_| ());
            }
        }
    }
    let st = s.stats();
    assert!(st.evictions > 0, "{st:?}");
    let survivors = (0..HOT).filter(|i| matches!(s.get(format!("hot:{i}").as_bytes(), 60, |_| ()), Lookup::Hit(()))).count();
    assert!(survivors > 0, "some hot items were kept");
    assert_eq!(st.oldest_born, Some(10), "{survivors} survivors written at 10: {st:?}");
    assert_eq!(st.evicted_nonzero, 0, "nothing had an exptime");
    let (when, idle) = st.last_eviction.expect("evictions happened");
    assert!((50..=60).contains(&when), "{when}");
    assert!(idle <= 10, "the last evicted item was a new one, idle {idle}");
    for i in 0..HOT {
        s.delete(format!("hot:{i}").as_bytes(), 60);
    }
    let born = s.stats().oldest_born.unwrap();
    assert!(born >= 50, "{born}");
}
