//! Expiry and TTL classes: short-lived items share segments with each other,
//! not with items that never expire, so their memory comes back whole once
//! they expire — through the allocation path or `reclaim_expired` — and no
//! long-lived item is evicted while expired memory is there to take.

use larder_store::{Config, Lookup, Mode, Store, StoreResult};

const LIMIT: usize = 64 << 20;
const VALUE: usize = 200;
/// Items written in the first phase: about 75% of the limit.
const FILL: u32 = 200_000;

fn store() -> Store {
    // 64 KiB segments: 1024 segments, 16 shards of 64, so each shard may
    // keep an open segment per TTL class.
    Store::new(Config { memory_limit: LIMIT, segment_size: 64 << 10, ..Config::default() }).unwrap()
}

fn key(i: u32) -> Vec<u8> {
    format!("key:{i:020}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; VALUE];
    v[..4].copy_from_slice(&i.to_le_bytes());
    v
}

/// Writes keys `0..FILL` at time `now`, even ones expiring in 2 s and odd
/// ones never; nothing may be evicted.
fn fill_half_short(s: &Store, now: u32) {
    for i in 0..FILL {
        let exptime = if i % 2 == 0 { now + 2 } else { 0 };
        assert!(matches!(s.store(Mode::Set, &key(i), 0, exptime, &value(i), now), StoreResult::Stored(_)));
    }
    let st = s.stats();
    assert_eq!(st.evictions, 0, "the first phase fits");
    assert_eq!(st.curr_items, FILL as u64);
}

fn assert_long_lived_all_there(s: &Store, now: u32) {
    for i in (1..FILL).step_by(2) {
        assert_eq!(s.get(&key(i), now, |it| it.value.to_vec()), Lookup::Hit(value(i)), "long-lived key {i} lost");
    }
}

#[test]
fn expired_memory_is_used_before_any_long_lived_item_is_evicted() {
    let s = store();
    fill_half_short(&s, 100);
    let later = 103;
    // As much again as the short-lived half held, never expiring: it only
    // fits in memory the expired half gives back.
    for i in FILL..FILL + FILL / 2 {
        assert!(matches!(s.store(Mode::Set, &key(i), 0, 0, &value(i), later), StoreResult::Stored(_)));
    }
    let st = s.stats();
    assert_eq!(st.evictions, 0, "nothing live evicted while expired memory was available");
    assert!(st.reclaimed > 0, "the expired segments were reclaimed");
    assert!(st.reclaimed <= (FILL / 2) as u64);
    assert_long_lived_all_there(&s, later);
    for i in FILL..FILL + FILL / 2 {
        assert_eq!(s.get(&key(i), later, |it| it.value.len()), Lookup::Hit(VALUE));
    }
}

#[test]
fn reclaim_expired_frees_whole_segments_without_memory_pressure() {
    let s = store();
    fill_half_short(&s, 100);
    let before = s.stats();
    assert_eq!(s.reclaim_expired(101, 0, 1), 0, "nothing has expired yet");
    let freed = s.reclaim_expired(102, 0, 1);
    let st = s.stats();
    assert!(freed > 0);
    assert_eq!(st.reclaimed, (FILL / 2) as u64, "every short-lived item, counted once");
    assert_eq!(st.evictions, 0);
    assert_eq!(st.curr_items, (FILL / 2) as u64);
    assert_eq!(st.bytes * 2, before.bytes, "the two halves have equal sizes");
    assert_eq!(st.bytes_dead, 0, "no expired item left behind in a segment with live ones");
    assert_eq!(st.segments_used as usize + freed, before.segments_used as usize);
    assert_long_lived_all_there(&s, 102);
    // Counters stay truthful: the reclaimed items are gone for good, and a
    // second pass finds nothing.
    assert_eq!(s.get(&key(0), 102, |_| ()), Lookup::Miss);
    assert_eq!(s.reclaim_expired(200, 0, 1), 0);
    assert_eq!(s.stats().reclaimed, (FILL / 2) as u64);
}

#[test]
fn workers_share_the_shards_between_them() {
    let s = store();
    fill_half_short(&s, 100);
    let freed: usize = (0..3).map(|part| s.reclaim_expired(102, part, 3)).sum();
    assert!(freed > 0);
    assert_eq!(s.stats().reclaimed, (FILL / 2) as u64, "three parts cover every shard once");
}

#[test]
fn cas_keeps_growing_when_a_key_changes_ttl_class() {
    let s = store();
    let mut last = 0;
    // Alternate a key between classes whose open segments are of different
    // ages: each new version must still get a larger CAS (stale-set relies
    // on it), and the value must read back whole.
    for round in 0..200u32 {
        let exptime = match round % 3 {
            0 => 0,
            1 => 100 + 5,
            _ => 100 + 300,
        };
        // Other keys advance the classes' open segments unevenly.
        for j in 0..(round % 7) * 50 {
            s.store(Mode::Set, &key(1_000_000 + j), 0, exptime, &value(j), 100);
        }
        let StoreResult::Stored(cas) = s.store(Mode::Set, b"k", 0, exptime, &value(round), 100) else { panic!() };
        assert!(cas > last, "round {round}: cas {cas} after {last}");
        last = cas;
        let Lookup::Hit((v, c)) = s.get(b"k", 100, |it| (it.value.to_vec(), it.cas)) else { panic!() };
        assert_eq!((v, c), (value(round), cas));
    }
}

#[test]
fn flushed_items_wait_for_the_reclaimer_until_the_flush_is_behind_its_horizon() {
    // The server's reclaimer runs with a horizon a few seconds behind the
    // clock; a read right after `flush_all` must find the item flushed
    // (memcached's get_flushed, t/stats.t), whenever the reclaimer ran.
    let s = store();
    assert!(matches!(s.store(Mode::Set, b"a", 0, 0, b"x", 100), StoreResult::Stored(_)));
    assert!(matches!(s.store(Mode::Set, b"b", 0, 0, b"y", 100), StoreResult::Stored(_)));
    s.flush_all(103, 103);
    assert_eq!(s.reclaim_expired(101, 0, 1), 0, "the flush is newer than the horizon");
    assert_eq!(s.get(b"a", 103, |_| ()), Lookup::Flushed);
    let freed = s.reclaim_expired(103, 0, 1);
    assert!(freed > 0, "once the horizon reaches the flush, its segments go");
    assert_eq!(s.get(b"b", 104, |_| ()), Lookup::Miss);
    assert_eq!(s.stats().curr_items, 0);
}

#[test]
fn a_store_that_needs_room_takes_flushed_segments_at_once() {
    // Only the background reclaimer waits: a full store reuses flushed
    // memory in the flush's own second, evicting nothing.
    let s = store();
    let mut i = 0;
    while s.stats().evictions == 0 && i < 400_000 {
        let _ = s.store(Mode::Set, &key(i), 0, 0, &value(i), 100);
        i += 1;
    }
    let evicted = s.stats().evictions;
    s.flush_all(100, 100);
    for j in 0..FILL / 2 {
        let r = s.store(Mode::Set, &key(1_000_000 + j), 0, 0, &value(j), 100);
        assert!(matches!(r, StoreResult::Stored(_)), "{j}: {r:?}");
    }
    assert_eq!(s.stats().evictions, evicted, "flushed segments, not live ones, made the room");
}
