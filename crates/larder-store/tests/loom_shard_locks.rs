//! Loom model: the lock-ordering protocol of eviction across shards
//! (`sync::lock_other`, which `Store::evict_one` calls for every shard but
//! the one it holds; the pool's leaf locks taken inside, as eviction does).
//!
//! Property checked: threads that each hold their own shard's lock while
//! evicting from other shards, beside a thread that holds no lock and
//! waits for one shard at a time (`Store::make_room`), never deadlock, in
//! any interleaving: a thread holding a lock only ever *tries* another
//! (and picks another victim when it is busy). loom reports a deadlock
//! when every thread waits; it also checks the mutual exclusion of each
//! shard (the counts add up at the end).
//!
//! Broken variant that must fail: `BlockingSecondLock` (a thread holding
//! its shard waits for another's lock, as a plain `lock()` there would).
#![cfg(larder_loom)]

mod loom_support;

use larder_store::loom_model::{lock_other, Flaw, Mutex, Pool};
use loom::thread;
use std::sync::Arc;

const SEGMENT: usize = 16;

/// What eviction does inside a shard: hands one segment's buffer through
/// the pool (its leaf lock, taken while shard locks are held).
fn evict_in(shard: &mut usize, pool: &Pool) {
    *shard += 1;
    if let Some(buf) = pool.segment() {
        pool.give_back(buf.into(), false);
    }
}

fn model() {
    let shards: Arc<[Mutex<usize>; 3]> = Arc::new([Mutex::new(0), Mutex::new(0), Mutex::new(0)]);
    let pool = Arc::new(Pool::new(4 * SEGMENT, SEGMENT));
    // Two writers, each evicting while holding its own shard: from another
    // shard if it can get one without waiting, else from its own.
    let workers: Vec<_> = [(0usize, [1usize, 2]), (1, [0, 2])]
        .into_iter()
        .map(|(me, victims)| {
            let (shards, pool) = (shards.clone(), pool.clone());
            thread::spawn(move || {
                let mut own = shards[me].lock().unwrap();
                for v in victims {
                    if let Some(mut other) = lock_other(&shards[v], true) {
                        evict_in(&mut other, &pool);
                        return;
                    }
                }
                evict_in(&mut own, &pool);
            })
        })
        .collect();
    // A large write making room with no lock held: one shard at a time.
    let room = {
        let (shards, pool) = (shards.clone(), pool.clone());
        thread::spawn(move || {
            for v in [2, 0] {
                let mut g = lock_other(&shards[v], false).expect("holding none, it waits");
                evict_in(&mut g, &pool);
            }
        })
    };
    for w in workers {
        w.join().unwrap();
    }
    room.join().unwrap();
    let total: usize = shards.iter().map(|s| *s.lock().unwrap()).sum();
    assert_eq!(total, 4, "an eviction was lost: the shard locks did not exclude each other");
}

#[test]
fn shard_locks_never_deadlock() {
    loom_support::explore("shard locks: eviction's second lock", model);
}

#[test]
fn caught_blocking_second_lock() {
    loom_support::catches("shard locks: eviction's second lock", Flaw::BlockingSecondLock, "deadlock", model);
}
