//! Loom model: the near-cache tracker's read/write race (`src/track`: the
//! real `Tracker`), a read registering a key while a write of that key
//! changes the store and invalidates it.
//!
//! The reader runs as an executor will: it snapshots the key's write
//! generation (`before_read`), looks the value up in the store (a lock),
//! and registers (`register_read`). The writer changes the store (the same
//! lock), then invalidates. A third thread writes another key that shares
//! nothing with the first but the tracker's locks.
//!
//! Property checked, over every interleaving: if the reader got the old
//! value, `IV` for the key is queued on the subscriber's stream once both
//! are done (else the client would cache the old value with nothing to
//! ever invalidate it); and the table's count goes back to what it holds.
//!
//! Broken variants that must fail: `RegisterIgnoresGeneration` (the
//! registration does not compare the generation) and `BumpAfterLookup` (the
//! write bumps the generation after looking at the table).
#![cfg(larder_loom)]

mod loom_support;

use larder_server::track::sync::flaw::Flaw;
use larder_server::track::{Limits, Mode, Tracker};
use loom::sync::Mutex;
use loom::thread;
use std::sync::Arc;

const KEY: &[u8] = b"k";

fn model() {
    let t = Arc::new(Tracker::new(Limits { table_bytes: 1 << 20, stream_bytes: 1 << 16 }));
    let stream = t.subscribe(Mode::Tracking, None);
    let att = t.attach(stream.sid(), false).unwrap();
    let store = Arc::new(Mutex::new(0u32));
    let reader = {
        let (t, store) = (t.clone(), store.clone());
        thread::spawn(move || {
            let snap = t.before_read(KEY);
            let v = *store.lock().unwrap();
            t.register_read(&att, snap, KEY);
            v
        })
    };
    let writer = {
        let (t, store) = (t.clone(), store.clone());
        thread::spawn(move || {
            *store.lock().unwrap() = 1;
            t.invalidate(KEY, None);
        })
    };
    let other = {
        let t = t.clone();
        thread::spawn(move || t.invalidate(b"other", None))
    };
    let seen = reader.join().unwrap();
    writer.join().unwrap();
    other.join().unwrap();
    let mut out = Vec::new();
    stream.drain_into(&mut out, usize::MAX);
    let keys = t.stats().track_keys;
    // Unsubscribe before asserting: a failed assertion unwinds, and loom
    // cannot take the tracker's locks during that.
    drop(stream);
    if seen == 0 {
        assert!(
            out.windows(5).any(|w| w == b"IV k\r"),
            "stale: the read got the old value and no IV was queued ({:?})",
            String::from_utf8_lossy(&out)
        );
    }
    assert!(keys <= 1);
}

#[test]
fn read_write_race_always_invalidates() {
    assert!(loom_support::explore("track: read vs write", model) > 1);
}

fn catches(f: Flaw) {
    loom_support::catches("track: read vs write", f, "stale", model);
}

#[test]
fn caught_register_ignores_generation() {
    catches(Flaw::RegisterIgnoresGeneration);
}

#[test]
fn caught_bump_after_lookup() {
    catches(Flaw::BumpAfterLookup);
}
