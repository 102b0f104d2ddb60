//! Loom model: the connection budget's charge and release
//! (`connmem/budget.rs`: the real `ConnBudget`, its shelf and its `PinSpill`
//! side).
//!
//! Property checked, over every interleaving of a session that asks for
//! room and gives it back, a session that keeps a grown buffer on the shelf
//! and takes it back, and the store moving a pinned object's charge to the
//! budget and back:
//!
//! * `used` never exceeds the limit and never goes below zero (a usize
//!   below zero wraps far past the limit), seen from every thread after
//!   each of its steps;
//! * everything charged is released: at the end `used` is exactly what the
//!   shelf still holds, and zero once that is taken back.
//!
//! Broken variants that must fail: `CheckThenTake` (room checked, then
//! added, in two steps) and `GaugeLoadStore` (a release that moves the
//! gauge by a load and a store).
#![cfg(larder_loom)]

mod loom_support;

use larder_server::connmem::budget::ConnBudget;
use larder_server::connmem::shelf::BufKind;
use larder_server::sync::flaw::Flaw;
use larder_store::PinSpill;
use loom::thread;
use std::sync::Arc;

const LIMIT: usize = 10;

fn within(b: &ConnBudget) {
    let used = b.used();
    assert!(used <= LIMIT, "the budget's used ({used}) passed its limit or went below zero");
}

fn model() {
    let budget = Arc::new(ConnBudget::new(LIMIT));
    // A session receiving a value asks for room first, and gives it all
    // back when its buffer shrinks.
    let session = {
        let b = budget.clone();
        thread::spawn(move || {
            if b.try_take(6) {
                within(&b);
                b.recharge(6, 0);
            }
            within(&b);
        })
    };
    // A session that shrinks keeps its grown buffer on the shelf (charged
    // while there), and takes it back when it grows again.
    let shelving = {
        let b = budget.clone();
        thread::spawn(move || {
            b.shelve(BufKind::Read, vec![0; 3]);
            within(&b);
            if let Some(buf) = b.unshelve(BufKind::Read, 1) {
                assert_eq!(buf.len(), 3);
            }
            within(&b);
        })
    };
    // The store lets go of a large object a reply still sends: its charge
    // moves here while there is room, and back when the last pin drops.
    let spill = {
        let b = budget.clone();
        thread::spawn(move || {
            let s: &dyn PinSpill = &*b;
            if s.try_take(5) {
                within(&b);
                s.give_back(5);
            }
            within(&b);
        })
    };
    for t in [session, shelving, spill] {
        t.join().unwrap();
    }
    let (read, write) = budget.shelved_bytes();
    assert_eq!(budget.used(), read + write, "the budget's used is not what the shelf still holds: not everything charged was released");
    if let Some(buf) = budget.unshelve(BufKind::Read, 1) {
        assert_eq!(buf.len(), 3);
    }
    assert_eq!((budget.used(), budget.shelved_bytes()), (0, (0, 0)), "the budget's used is not zero: not everything charged was released");
}

#[test]
fn budget_stays_within_limit_and_balances() {
    loom_support::explore("budget: charge/release", model);
}

#[test]
fn caught_check_then_take() {
    loom_support::catches("budget: charge/release", Flaw::CheckThenTake, "passed its limit", model);
}

#[test]
fn caught_gauge_load_store() {
    loom_support::catches("budget: charge/release", Flaw::GaugeLoadStore, "the budget's used", model);
}
