//! Loom model: coalescing's park and wake (`stampede/coalesce.rs`: the real
//! `Coalescer`) against a set, a delete, a flush and the end of the window.
//!
//! The getter runs as `exec::read` and its worker as `conn::worker` do: it
//! snapshots the slot, looks the key up in the store (a lock), misses and
//! parks behind the round's winner; its worker then looks once more (a
//! write may have landed while it parked) and polls (loom's stand-in for
//! epoll and `mio::Waker`, `sync::ModelWaker`), and after each
//! poll runs again what `released` lets go, while its window is still open
//! or once its end has passed (the poll's timeout, modelled by a clock
//! thread that ends the window and so ends the poll).
//!
//! Property checked, over every interleaving: a parked getter is always
//! woken (no lost wake-up: otherwise its worker waits in `poll` forever and
//! loom reports the deadlock) when the key is written, deleted or flushed,
//! or its window ends; a getter released by a set then finds the value;
//! and every park is matched by exactly one release or timeout (the counts
//! go back to zero).
//!
//! Broken variants that must fail: `CountBeforeBump` (a writer reads the
//! parked count before bumping the generation), `DeadlineIgnored` (the
//! end of the window does not release), and the two bugs this model found
//! in the code as it was: `RoundEndsAfterBump` (a delete or flush ended
//! the round after bumping the generation: a getter whose snapshot saw the
//! bump could still park behind the ended round, and only the old winner's
//! set or the window released it) and `FlushCountRelaxed` (the server-wide
//! parked count that `on_flush` reads was counted `Relaxed`, so a flush
//! and a getter parking at that moment could each miss the other: a lost
//! wake-up on weakly ordered CPUs, where `Relaxed` and `SeqCst` differ).
#![cfg(larder_loom)]

mod loom_support;

use larder_server::stampede::coalesce::{CoalesceConfig, Coalescer, ColdVerdict};
use larder_server::sync::flaw::Flaw;
use larder_server::sync::ModelWaker;
use loom::sync::atomic::AtomicBool;
use loom::sync::Mutex;
use loom::thread;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KEY: &[u8] = b"cold";
const WINNER: u32 = 1;
const GETTER: u32 = 2;
const WORKER: usize = 0;

/// What releases the parked getter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Release {
    /// The winner's `set` (store, then `note_write`).
    Set,
    /// A `delete` (`note_write`, then the store).
    Delete,
    /// `flush_all` (the store, then `on_flush`).
    Flush,
    /// Nobody: the window ends.
    Window,
    /// The winner's `set` racing the end of the window.
    SetOrWindow,
}

fn model(release: Release) {
    let c = Arc::new(Coalescer::new(CoalesceConfig { window: Duration::from_secs(1), max_per_key: 4, max_total: 8 }, 1));
    let waker = Arc::new(ModelWaker::new());
    c.set_model_wakers(vec![waker.clone()]);
    let t0 = Instant::now();
    // The key in the store (absent: a cold miss).
    let store = Arc::new(Mutex::new(None::<u8>));
    // The poll's timeout has passed (the window is over).
    let window_over = Arc::new(AtomicBool::new(false));
    // The winner missed first and is recomputing.
    assert_eq!(c.on_miss(KEY, WINNER, c.before_lookup(KEY), t0), ColdVerdict::Miss);

    let getter = {
        let (c, store, waker, window_over) = (c.clone(), store.clone(), waker.clone(), window_over.clone());
        thread::spawn(move || {
            let seen = c.before_lookup(KEY);
            if store.lock().unwrap().is_some() {
                return; // a hit: the write came first
            }
            let ticket = match c.on_miss(KEY, GETTER, seen, t0) {
                ColdVerdict::Park(t) => t,
                ColdVerdict::Miss => return, // the round ended: this getter recomputes
            };
            // The worker, having parked it: a write may have landed meanwhile.
            if c.released(&ticket, t0).is_some() {
                c.mark_dirty(WORKER);
            }
            loop {
                let due = window_over.load(SeqCst);
                if c.take_dirty(WORKER) || due {
                    let now = if due { ticket.deadline } else { t0 };
                    if let Some(timed_out) = c.released(&ticket, now) {
                        c.unpark(&ticket, timed_out);
                        // Run again: a set that released it is visible.
                        let found = store.lock().unwrap().is_some();
                        if release == Release::Set && !timed_out {
                            assert!(found, "released by a set that its re-run does not see");
                        }
                        return;
                    }
                }
                waker.poll();
            }
        })
    };
    let other = {
        let (c, store, waker, window_over) = (c.clone(), store.clone(), waker.clone(), window_over.clone());
        thread::spawn(move || match release {
            Release::Set => {
                *store.lock().unwrap() = Some(7);
                c.on_write(KEY);
            }
            Release::Delete => {
                c.on_write(KEY);
                *store.lock().unwrap() = None;
            }
            Release::Flush => {
                *store.lock().unwrap() = None;
                c.on_flush();
            }
            Release::Window | Release::SetOrWindow => {
                window_over.store(true, SeqCst);
                waker.wake();
            }
        })
    };
    let setter = (release == Release::SetOrWindow).then(|| {
        let (c, store) = (c.clone(), store.clone());
        thread::spawn(move || {
            *store.lock().unwrap() = Some(7);
            c.on_write(KEY);
        })
    });
    getter.join().unwrap();
    other.join().unwrap();
    if let Some(s) = setter {
        s.join().unwrap();
    }
    assert_eq!(c.parked_now(), 0, "a park was not matched by one release");
    let s = &c.stats;
    assert_eq!(s.waits.load(Relaxed), s.released.load(Relaxed) + s.timeouts.load(Relaxed), "a park was not matched by one release");
}

#[test]
fn woken_by_a_set() {
    loom_support::explore("coalesce: park vs set", || model(Release::Set));
}

#[test]
fn woken_by_a_delete() {
    loom_support::explore("coalesce: park vs delete", || model(Release::Delete));
}

#[test]
fn woken_by_a_flush() {
    loom_support::explore("coalesce: park vs flush_all", || model(Release::Flush));
}

#[test]
fn woken_at_the_end_of_the_window() {
    loom_support::explore("coalesce: park vs window end", || model(Release::Window));
}

#[test]
fn woken_by_a_set_racing_the_window() {
    loom_support::explore("coalesce: park vs set and window end", || model(Release::SetOrWindow));
}

#[test]
fn caught_count_before_bump() {
    loom_support::catches("coalesce: park vs set", Flaw::CountBeforeBump, "deadlock", || model(Release::Set));
}

#[test]
fn caught_deadline_ignored() {
    loom_support::catches("coalesce: park vs window end", Flaw::DeadlineIgnored, "deadlock", || model(Release::Window));
}

#[test]
fn caught_round_ends_after_bump() {
    loom_support::catches("coalesce: park vs delete", Flaw::RoundEndsAfterBump, "deadlock", || model(Release::Delete));
    loom_support::catches("coalesce: park vs flush_all", Flaw::RoundEndsAfterBump, "deadlock", || model(Release::Flush));
}

#[test]
fn caught_flush_count_relaxed() {
    loom_support::catches("coalesce: park vs flush_all", Flaw::FlushCountRelaxed, "deadlock", || model(Release::Flush));
}
