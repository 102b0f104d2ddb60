//! Loom model: pin, seal and release of a large object (`large.rs`, with
//! the real `Pool`, `Landing` and `SegBuf`).
//!
//! Property checked, over every interleaving of two readers that pin a large
//! value under the shard lock and read it after releasing the lock, with a
//! writer that patches the item's header, replaces the item (the store lets
//! go of the object) and receives the next large value (which reuses a freed
//! object's buffer); once with a spill that can take the charge of a pinned
//! object the store let go of, once with one that cannot (the charge stays
//! in `-m`, and the next value finds no room in the spill):
//!
//! * a pinned value's bytes are never written, freed or reused while pinned:
//!   the reader always reads exactly the bytes written, and loom finds no
//!   access to them that happens-before does not order after the pin's
//!   reads (the module's aliasing rules, announced through `sync::Region`);
//! * they are released exactly once, after the last pin drops: at the end
//!   the spill (the connection budget) is back to zero, `-m` holds only the
//!   spare buffer kept for the next landing (then nothing once that goes),
//!   and no counter ever went below zero; loom also reports a leaked `Arc`.
//!
//! Broken variants that must fail: `SealIgnored` (the store's `&mut` access
//! covers the value while it is pinned) and `SpillUnmarked` (a pinned
//! object's charge moved to the spill without saying so, so the last release
//! gives it back to `-m` a second time).
#![cfg(larder_loom)]

mod loom_support;

use larder_store::loom_model::{adopt, Flaw, Pool, PinSpill};
use loom::sync::atomic::AtomicUsize;
use loom::sync::Mutex;
use loom::thread;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

const VALUE_LEN: usize = 8;
const VALUE: u8 = 0xAB;
const NEXT_VALUE: u8 = 0xEE;
const HEADER: u8 = 0x11;
/// `-m`: room for two objects of this size (the stored one and the next).
const LIMIT: usize = 100;
const SEGMENT: usize = 64;

/// The connection budget's part: memory outside `-m` that takes a landing's
/// charge while it arrives and a pinned object's after the store lets go.
struct Spill {
    used: AtomicUsize,
    limit: usize,
}

impl PinSpill for Spill {
    fn try_take(&self, n: usize) -> bool {
        self.used.fetch_update(Relaxed, Relaxed, |u| (u + n <= self.limit).then_some(u + n)).is_ok()
    }
    fn give_back(&self, n: usize) {
        let before = self.used.fetch_sub(n, Relaxed);
        assert!(before >= n, "the spill got back more than it was charged");
    }
}

/// The budget of the spill: room for every charge, or for one object only.
#[derive(Clone, Copy)]
enum SpillRoom {
    Ample,
    OneObject,
}

fn model(spill_room: SpillRoom) {
    let object = larder_store::landing_room(1) + VALUE_LEN;
    let limit = match spill_room {
        SpillRoom::Ample => LIMIT,
        SpillRoom::OneObject => object,
    };
    let spill = Arc::new(Spill { used: AtomicUsize::new(0), limit });
    let pool = Arc::new(Pool::new(LIMIT, SEGMENT));
    pool.set_spill(spill.clone());

    // A large value arrives in place and the store adopts it, reserving its
    // bytes in `-m` first, as `Store::write` does with a landing.
    let mut landing = pool.landing(1, VALUE_LEN).expect("the spill has room");
    landing.unfilled().fill(VALUE);
    landing.advance(VALUE_LEN);
    assert_eq!(landing.bytes(), object);
    let room = landing.room();
    assert!(pool.reserve_large(landing.bytes()));
    let mut buf = adopt(&landing);
    drop(landing);
    buf[..room].fill(HEADER);
    // The shard lock and what it guards: the item's object.
    let shard = Arc::new(Mutex::new(Some(buf)));

    let readers: Vec<_> = (0..2)
        .map(|_| {
            let shard = shard.clone();
            thread::spawn(move || {
                // A `get`: pin under the lock, send after it is released;
                // the reply queue keeps its own reference.
                let pin = shard.lock().unwrap().as_ref().map(|b| b.pin(room).expect("large objects pin"));
                if let Some(pin) = pin {
                    let queued = pin.clone();
                    drop(pin);
                    assert_eq!(queued.len(), VALUE_LEN);
                    assert!(queued.iter().all(|&b| b == VALUE), "a pinned value changed under its reader");
                }
            })
        })
        .collect();
    let writer = {
        let pool = pool.clone();
        thread::spawn(move || {
            // A `set` of the same key: a fetch patches the old item's header
            // (under the lock), then the store replaces it and lets go.
            let old = {
                let mut g = shard.lock().unwrap();
                if let Some(b) = g.as_mut() {
                    b[0] ^= 1;
                }
                g.take()
            };
            if let Some(old) = old {
                pool.discard(old);
            }
            // The next large value arrives, in the freed buffer if it is free.
            if let Some(mut next) = pool.landing(1, VALUE_LEN) {
                next.unfilled().fill(NEXT_VALUE);
                next.advance(VALUE_LEN);
                assert!(next.value().iter().all(|&b| b == NEXT_VALUE));
            }
        })
    };
    for r in readers {
        r.join().unwrap();
    }
    writer.join().unwrap();

    assert_eq!(spill.used.load(Relaxed), 0, "not released exactly once: the spill kept a charge");
    assert_eq!(pool.used(), pool.spare_large_bytes(), "not released exactly once: -m holds more or less than the spare buffer");
    pool.drop_spare();
    assert_eq!(pool.used(), 0, "not released exactly once: -m kept a charge");
}

#[test]
fn pinned_values_stay_and_are_released_once() {
    loom_support::explore("large: pin/seal/release, spill with room", || model(SpillRoom::Ample));
}

#[test]
fn pinned_values_stay_in_m_when_the_spill_is_full() {
    loom_support::explore("large: pin/seal/release, spill full", || model(SpillRoom::OneObject));
}

#[test]
fn caught_seal_ignored() {
    loom_support::catches("large: pin/seal/release, spill with room", Flaw::SealIgnored, "Causality violation", || model(SpillRoom::Ample));
    loom_support::catches("large: pin/seal/release, spill full", Flaw::SealIgnored, "Causality violation", || model(SpillRoom::OneObject));
}

#[test]
fn caught_spill_unmarked() {
    loom_support::catches("large: pin/seal/release, spill with room", Flaw::SpillUnmarked, "not released exactly once", || model(SpillRoom::Ample));
}
