//! Loom model: `ValueRef`'s generation check against segment reuse
//! (`valueref.rs`: `ValueRef::copy_out`, the protocol `Store::copy_value`
//! runs, on the real `SegTable`, `Segment` and `Pool`).
//!
//! Property checked: a reader that copies a referenced value out later, in
//! pieces (as UDP replies do, datagram by datagram), either gets exactly the
//! bytes the reference was made from or is told the segment is gone, never
//! bytes of another item, over every interleaving with
//!
//! * eviction of the segment and reuse of its buffer and of its id in the
//!   same shard (a new item written at the same offset), and reuse of the
//!   buffer by another shard under that shard's own lock;
//! * compaction in place (other bytes moved over the value, the segment
//!   requeued with a new generation before the lock is released).
//!
//! Broken variants that must fail: `NoGenerationCheck` (the copy trusts the
//! segment id) and `CopyAfterUnlock` (generation checked under one holding
//! of the shard lock, bytes copied under another).
#![cfg(larder_loom)]

mod loom_support;

use larder_store::loom_model::{copy_value, value_ref, Flaw, Pool, SegTable, Segment};
use loom::sync::Mutex;
use loom::thread;
use std::sync::Arc;

const SEGMENT: usize = 32;
const OFF: usize = 8;
const LEN: usize = 6;
const ITEM: &[u8; LEN] = b"value!";
const REUSED: &[u8; LEN] = b"reused";
const MOVED: &[u8; LEN] = b"moved!";
const OTHER: &[u8; LEN] = b"other!";

/// Writes `bytes` as an item's value at `OFF` in a fresh segment of `t`
/// (a buffer from the pool, a new generation); its id and generation.
fn write_item(t: &mut SegTable, pool: &Pool, bytes: &[u8; LEN]) -> (u32, u64) {
    let gen = pool.next_gen();
    let id = t.install(Segment::new(pool.segment().expect("room for a segment"), gen, false));
    let seg = t.get_mut(id);
    seg.buf[OFF..OFF + LEN].copy_from_slice(bytes);
    seg.write_off = OFF + LEN;
    (id, gen)
}

/// `compact`: the segment is compacted in place; else it is evicted, its
/// buffer and id reused in the same shard and a buffer taken by another.
fn model(compact: bool) {
    let pool = Arc::new(Pool::new(3 * SEGMENT, SEGMENT));
    let shard = Arc::new(Mutex::new(SegTable::new()));
    let (id, gen) = write_item(&mut shard.lock().unwrap(), &pool, ITEM);
    // Made under the lock by a `get`, as `Item::value_ref` does.
    let r = value_ref(0, id, gen, OFF as u32, LEN as u32);

    let reader = {
        let shard = shard.clone();
        thread::spawn(move || {
            // Two datagrams' worth, each copied under its own holding of the lock.
            let (mut head, mut tail) = ([0u8; 2], [0u8; LEN - 2]);
            if copy_value(&r, &shard, 0, &mut head) {
                assert_eq!(&head, &ITEM[..2], "a reference read bytes of another item");
            }
            if copy_value(&r, &shard, 2, &mut tail) {
                assert_eq!(&tail, &ITEM[2..], "a reference read bytes of another item");
            }
        })
    };
    let mut others = Vec::new();
    if compact {
        let shard = shard.clone();
        let pool = pool.clone();
        others.push(thread::spawn(move || {
            let mut t = shard.lock().unwrap();
            t.get_mut(id).buf[OFF..OFF + LEN].copy_from_slice(MOVED);
            t.requeue(id, pool.next_gen());
        }));
    } else {
        let (shard, pool2) = (shard.clone(), pool.clone());
        others.push(thread::spawn(move || {
            let seg = shard.lock().unwrap().remove(id);
            pool2.give_back(seg.buf, false);
            let (again, _) = write_item(&mut shard.lock().unwrap(), &pool2, REUSED);
            assert_eq!(again, id, "the freed id is reused");
        }));
        let pool = pool.clone();
        others.push(thread::spawn(move || {
            let other_shard = Mutex::new(SegTable::new());
            write_item(&mut other_shard.lock().unwrap(), &pool, OTHER);
        }));
    }
    reader.join().unwrap();
    for t in others {
        t.join().unwrap();
    }
}

#[test]
fn reuse_is_seen_never_read() {
    loom_support::explore("valueref: eviction and reuse", || model(false));
}

#[test]
fn compaction_is_seen_never_read() {
    loom_support::explore("valueref: compaction in place", || model(true));
}

#[test]
fn caught_no_generation_check() {
    loom_support::catches("valueref: eviction and reuse", Flaw::NoGenerationCheck, "another item", || model(false));
    loom_support::catches("valueref: compaction in place", Flaw::NoGenerationCheck, "another item", || model(true));
}

#[test]
fn caught_copy_after_unlock() {
    loom_support::catches("valueref: eviction and reuse", Flaw::CopyAfterUnlock, "another item", || model(false));
    loom_support::catches("valueref: compaction in place", Flaw::CopyAfterUnlock, "another item", || model(true));
}
