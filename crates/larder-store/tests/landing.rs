//! Large values received in place (`Landing`): a write adopts the buffer
//! its value arrived in instead of copying it, and every byte stays
//! counted — in the connection budget (the pin spill) while it arrives, in
//! `-m` once adopted, back in the budget when a refused write drops it.
//! The adopted item must then behave as any large object: read, pinned,
//! walked by dumps and snapshots, evicted and replaced.

use larder_store::{Config, Lookup, Mode, PinSpill, SnapshotClock, Store, StoreResult, Unreported, Write, WriteOptions};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

const MIB: usize = 1 << 20;
/// What `received` keeps in front of a value.
const ROOM: usize = 24 + 250;

/// A connection budget of `limit` bytes.
struct Budget {
    used: AtomicUsize,
    limit: usize,
}

impl PinSpill for Budget {
    fn try_take(&self, n: usize) -> bool {
        self.used.fetch_update(Relaxed, Relaxed, |u| (u + n <= self.limit).then_some(u + n)).is_ok()
    }
    fn give_back(&self, n: usize) {
        self.used.fetch_sub(n, Relaxed);
    }
}

fn store_with_budget(memory: usize, budget: usize) -> (Store, Arc<Budget>) {
    let store = Store::new(Config { memory_limit: memory, item_size_max: 1 << 30, segment_size: MIB, evict: true }).unwrap();
    let b = Arc::new(Budget { used: AtomicUsize::new(0), limit: budget });
    store.set_pin_spill(b.clone());
    (store, b)
}

/// A landing filled with `len` bytes of a pattern seeded by `seed`, in
/// uneven pieces as a socket would deliver them.
fn received(store: &Store, len: usize, seed: u8) -> larder_store::Landing {
    // Room for any key the tests use.
    let mut ld = store.landing(250, len).expect("room in the budget");
    let mut i = 0usize;
    let mut piece = 1000;
    while !ld.is_complete() {
        let room = ld.unfilled();
        let n = piece.min(room.len());
        for (j, b) in room[..n].iter_mut().enumerate() {
            *b = pattern(seed, i + j);
        }
        ld.advance(n);
        i += n;
        piece = piece * 3 % 70_001 + 1;
    }
    assert!(ld.unfilled().is_empty());
    ld
}

fn pattern(seed: u8, i: usize) -> u8 {
    (i % 251) as u8 ^ seed
}

fn write(store: &Store, mode: Mode, key: &[u8], flags: u32, ld: &larder_store::Landing) -> StoreResult {
    let w = Write { mode, key, flags, exptime: 0, value: ld.value(), landed: Some(ld) };
    store.reporting(Unreported).write(&w, 1, &WriteOptions::default()).0
}

fn value_of(store: &Store, key: &[u8]) -> Option<(Vec<u8>, u32)> {
    match store.get(key, 1, |i| (i.value.to_vec(), i.flags)) {
        Lookup::Hit(v) => Some(v),
        _ => None,
    }
}

#[test]
fn an_adopted_value_is_read_back_and_its_bytes_move_from_the_budget_to_the_memory_limit() {
    let (store, budget) = store_with_budget(64 * MIB, 32 * MIB);
    let len = 5 * MIB + 123;
    let ld = received(&store, len, 7);
    assert_eq!(budget.used.load(Relaxed), ROOM + len, "charged to the budget while it arrives");
    let before = store.stats().memory_used;
    assert!(matches!(write(&store, Mode::Set, b"big", 42, &ld), StoreResult::Stored(_)));
    assert_eq!(budget.used.load(Relaxed), 0, "adopted: the budget is free");
    assert_eq!(store.stats().memory_used - before, (ROOM + len) as u64, "and -m counts it");
    drop(ld);
    let (v, flags) = value_of(&store, b"big").unwrap();
    assert_eq!(flags, 42);
    assert_eq!(v.len(), len);
    assert!(v.iter().enumerate().all(|(i, &b)| b == pattern(7, i)));
    // A pin reads the same bytes without copying.
    let pinned = match store.get(b"big", 1, |i| i.pin()) {
        Lookup::Hit(p) => p.expect("a large object pins"),
        _ => panic!("miss"),
    };
    assert_eq!(&pinned[..], &v[..]);
    // Header patches (touch) while pinned leave the value alone.
    assert!(store.touch(b"big", 2, 100));
    assert_eq!(&pinned[..], &value_of(&store, b"big").unwrap().0[..]);
    drop(pinned);
    assert!(store.delete(b"big", 2));
    let after = store.stats();
    assert_eq!(after.large_spare_bytes, (ROOM + len) as u64, "its buffer is kept for the next landing");
    assert_eq!(after.memory_used - after.large_spare_bytes, before, "and nothing else is held");
}

/// The address of a landing's value: the same address means the same buffer.
fn value_addr(ld: &larder_store::Landing) -> usize {
    ld.value().as_ptr() as usize
}

#[test]
fn a_freed_landing_buffer_is_reused_by_the_next_landing_of_about_its_size() {
    let (store, budget) = store_with_budget(64 * MIB, 32 * MIB);
    let len = 4 * MIB;
    let first = received(&store, len, 1);
    let first_addr = value_addr(&first);
    assert!(matches!(write(&store, Mode::Set, b"k", 0, &first), StoreResult::Stored(_)));
    drop(first);
    // The second arrives while the first is stored: a fresh buffer.
    let second = received(&store, len, 2);
    let second_addr = value_addr(&second);
    assert_ne!(second_addr, first_addr);
    assert!(matches!(write(&store, Mode::Set, b"k", 0, &second), StoreResult::Stored(_)));
    drop(second);
    let s = store.stats();
    assert_eq!(s.large_spare_bytes, (ROOM + len) as u64, "the replaced value's buffer is kept");
    // The third takes it: its charge moves from -m to the budget.
    let third = received(&store, len, 3);
    assert_eq!(value_addr(&third), first_addr, "the first buffer, reused");
    assert_eq!(budget.used.load(Relaxed), ROOM + len);
    let t = store.stats();
    assert_eq!((t.large_spare_bytes, t.memory_used), (0, s.memory_used - (ROOM + len) as u64));
    assert!(matches!(write(&store, Mode::Set, b"k", 0, &third), StoreResult::Stored(_)));
    drop(third);
    let (v, _) = value_of(&store, b"k").unwrap();
    assert!(v.len() == len && v.iter().enumerate().all(|(i, &b)| b == pattern(3, i)), "the new bytes, none of the old");
    assert_eq!(budget.used.load(Relaxed), 0);

    // A value a little smaller fits the kept buffer: the extra bytes are
    // padding in front of the item, and dumps, snapshots and reads step
    // over them.
    let smaller = received(&store, len - 1000, 4);
    assert_eq!(value_addr(&smaller), second_addr + 1000, "the second buffer, 1000 bytes more room");
    assert!(matches!(write(&store, Mode::Set, b"s", 0, &smaller), StoreResult::Stored(_)));
    assert_eq!(store.stats().memory_used, t.memory_used + (ROOM + len) as u64, "charged the whole buffer");
    drop(smaller);
    let (v, _) = value_of(&store, b"s").unwrap();
    assert!(v.len() == len - 1000 && v.iter().enumerate().all(|(i, &b)| b == pattern(4, i)));
    let mut keys = Vec::new();
    for shard in 0..store.shard_count() {
        store.for_each_item_in_shard(shard, 1, |key, _| keys.push(key.to_vec()));
    }
    keys.sort();
    assert_eq!(keys, vec![b"k".to_vec(), b"s".to_vec()]);
    let mut snap = Vec::new();
    store.save_snapshot(&mut snap, SnapshotClock { now: 1, unix_now: 1_700_000_000 }, "test").unwrap();
    let (restored, _) = store_with_budget(64 * MIB, 32 * MIB);
    restored.load_snapshot(&snap[..], SnapshotClock { now: 1, unix_now: 1_700_000_001 }).unwrap();
    assert_eq!(value_of(&restored, b"s").unwrap().0, v);

    // Much bigger or much smaller values do not take it, and it goes: the
    // client's sizes changed, so it would only sit in -m beside theirs.
    for other in [2 * len, len / 2, len + 1] {
        let ld = received(&store, len, 5);
        assert!(matches!(write(&store, Mode::Set, b"a", 0, &ld), StoreResult::Stored(_)));
        drop(ld);
        assert!(store.delete(b"a", 5));
        let kept = store.stats();
        assert_eq!(kept.large_spare_bytes, (ROOM + len) as u64);
        let _landing = received(&store, other, 6);
        let s = store.stats();
        assert_eq!(s.large_spare_bytes, 0, "{other} bytes: released");
        assert_eq!(s.memory_used, kept.memory_used - (ROOM + len) as u64, "{other} bytes: -m has it back");
    }
}

#[test]
fn the_kept_buffer_gives_way_before_live_items_are_evicted() {
    let (store, _budget) = store_with_budget(16 * MIB, 32 * MIB);
    let big = |seed| {
        let ld = received(&store, 6 * MIB, seed);
        assert!(matches!(write(&store, Mode::Set, b"big", 0, &ld), StoreResult::Stored(_)));
    };
    big(1);
    big(2);
    assert_eq!(store.stats().large_spare_bytes, (ROOM + 6 * MIB) as u64);
    // About 8 MiB of small items: they need the kept buffer's memory.
    let value = vec![b'v'; 1000];
    for i in 0..8000u32 {
        let key = format!("small:{i}");
        assert!(matches!(store.store(Mode::Set, key.as_bytes(), 0, 0, &value, 1), StoreResult::Stored(_)), "{i}");
    }
    let s = store.stats();
    assert_eq!(s.large_spare_bytes, 0, "released");
    assert_eq!(s.evictions, 0, "nothing live was evicted for it");
    assert!(value_of(&store, b"big").is_some());
    assert!((0..8000u32).all(|i| value_of(&store, format!("small:{i}").as_bytes()).is_some()));
    assert!(s.memory_used as usize <= 16 * MIB);
}

#[test]
fn a_refused_write_gives_the_landing_back_to_the_budget_and_keeps_the_old_value() {
    let (store, budget) = store_with_budget(64 * MIB, 32 * MIB);
    let first = received(&store, 3 * MIB, 1);
    assert!(matches!(write(&store, Mode::Set, b"k", 0, &first), StoreResult::Stored(_)));
    drop(first);
    let used = store.stats().memory_used;
    let second = received(&store, 3 * MIB, 2);
    assert_eq!(write(&store, Mode::Add, b"k", 0, &second), StoreResult::NotStored);
    assert_eq!(store.stats().memory_used, used, "nothing adopted");
    assert_eq!(budget.used.load(Relaxed), ROOM + 3 * MIB);
    drop(second);
    assert_eq!(budget.used.load(Relaxed), 0, "dropped: given back");
    let (v, _) = value_of(&store, b"k").unwrap();
    assert!(v.iter().enumerate().all(|(i, &b)| b == pattern(1, i)), "the old value stays");
}

#[test]
fn an_append_from_a_landing_copies_and_a_landing_is_adopted_only_once() {
    let (store, budget) = store_with_budget(64 * MIB, 32 * MIB);
    assert!(matches!(store.store(Mode::Set, b"k", 0, 0, b"head:", 1), StoreResult::Stored(_)));
    let ld = received(&store, 2 * MIB, 3);
    assert!(matches!(write(&store, Mode::Append, b"k", 0, &ld), StoreResult::Stored(_)));
    assert_eq!(budget.used.load(Relaxed), ROOM + 2 * MIB, "copied, not adopted");
    // The same landing for two keys: the first adopts it, the second copies.
    assert!(matches!(write(&store, Mode::Set, b"a", 0, &ld), StoreResult::Stored(_)));
    assert_eq!(budget.used.load(Relaxed), 0);
    assert!(matches!(write(&store, Mode::Set, b"b", 0, &ld), StoreResult::Stored(_)));
    drop(ld);
    let (k, _) = value_of(&store, b"k").unwrap();
    assert_eq!(&k[..5], b"head:");
    assert!(k[5..].iter().enumerate().all(|(i, &b)| b == pattern(3, i)));
    for key in [&b"a"[..], b"b"] {
        let (v, _) = value_of(&store, key).unwrap();
        assert!(v.iter().enumerate().all(|(i, &b)| b == pattern(3, i)), "{key:?}");
    }
    // A write whose value is not the landing's bytes never adopts it.
    let other = received(&store, 2 * MIB, 4);
    let copy = other.value().to_vec();
    let w = Write { mode: Mode::Set, key: b"c", flags: 0, exptime: 0, value: &copy, landed: Some(&other) };
    assert!(matches!(store.reporting(Unreported).write(&w, 1, &WriteOptions::default()).0, StoreResult::Stored(_)));
    assert_eq!(budget.used.load(Relaxed), ROOM + 2 * MIB);
}

#[test]
fn adopted_items_are_found_by_dumps_and_survive_a_snapshot() {
    let (store, _budget) = store_with_budget(64 * MIB, 32 * MIB);
    for (n, key) in [&b"x"[..], &[b'y'; 250][..]].into_iter().enumerate() {
        let ld = received(&store, 2 * MIB + n, n as u8);
        // Client flags and a long key change the header's length, so the
        // padding in front of the item.
        assert!(matches!(write(&store, Mode::Set, key, n as u32 * 99, &ld), StoreResult::Stored(_)));
    }
    let mut seen = Vec::new();
    for shard in 0..store.shard_count() {
        store.for_each_item_in_shard(shard, 1, |key, _| seen.push(key.to_vec()));
    }
    seen.sort();
    assert_eq!(seen, vec![b"x".to_vec(), vec![b'y'; 250]]);
    let mut snap = Vec::new();
    store.save_snapshot(&mut snap, SnapshotClock { now: 1, unix_now: 1_700_000_000 }, "test").unwrap();
    let (restored, _) = store_with_budget(64 * MIB, 32 * MIB);
    restored.load_snapshot(&snap[..], SnapshotClock { now: 1, unix_now: 1_700_000_001 }).unwrap();
    for (n, key) in [&b"x"[..], &[b'y'; 250][..]].into_iter().enumerate() {
        let (v, flags) = value_of(&restored, key).unwrap();
        assert_eq!((v.len(), flags), (2 * MIB + n, n as u32 * 99));
        assert!(v.iter().enumerate().all(|(i, &b)| b == pattern(n as u8, i)));
    }
}

#[test]
fn adoption_evicts_to_make_room_and_fails_cleanly_when_it_cannot() {
    let (store, budget) = store_with_budget(16 * MIB, 64 * MIB);
    for i in 0..3u8 {
        let ld = received(&store, 6 * MIB, i);
        assert!(matches!(write(&store, Mode::Set, &[b'k', i], 0, &ld), StoreResult::Stored(_)), "{i}");
    }
    assert!(store.stats().memory_used as usize <= 16 * MIB, "within -m: older ones evicted");
    assert!(value_of(&store, b"k\x02").is_some());
    // Bigger than -m: out of memory, and the budget gets everything back.
    let huge = received(&store, 20 * MIB, 9);
    assert_eq!(write(&store, Mode::Set, b"h", 0, &huge), StoreResult::OutOfMemory);
    drop(huge);
    assert_eq!(budget.used.load(Relaxed), 0);
    // No room in the budget: no landing.
    assert!(store.landing(1, 65 * MIB).is_none());
    assert_eq!(larder_store::landing_room(250), ROOM);
}
