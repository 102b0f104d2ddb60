//! The server's side of larder-observe: one [`Obs`] per worker thread, fed
//! by the executors (text, meta, binary) with what each request did.
//!
//! * Sizes come from the store: an item's bytes are what the store charges
//!   for it (`larder_store::item_bytes`, header + key + value), and a
//!   successful store or delete returns a `larder_store::Charge` saying what
//!   it wrote and what it removed or replaced, which the executors pass
//!   here, so per-prefix `items` and `bytes` follow the store exactly for
//!   sets, replacements, appends and deletes.
//! * Times: the observer wants unix seconds; the server runs on relative
//!   [`Time`]. The offset between the two is fixed at worker start
//!   (`debugtime` shifts both alike).
//! * Items that leave the store on their own (evicted, expired, flushed)
//!   are reported by the store's departure hook ([`install_departure_hook`]),
//!   which runs inside the store call of whichever worker caused it. So the
//!   worker's `ObserverWorker` lives in a thread-local of the worker thread
//!   ([`Obs::attach`]), reachable both from the executors (through [`Obs`])
//!   and from the hook. A store call on a thread without one (none today:
//!   only workers modify the store) would go unreported.
//! * `-o observe=off` leaves the worker without an `ObserverWorker`: every
//!   call is then a single predictable branch (used to measure what the
//!   accounting costs).
//!
//! Per-prefix `items`/`bytes` follow the store exactly: every way an item
//! arrives, grows or leaves is reported (storage commands here, evictions,
//! expiries, moves and the old values failed sets drop through the store's
//! departure hook), and the rows always sum to `stats` `curr_items`/`bytes`
//! (tests/observe.rs). Differences from memcached and costs to know:
//! * meta commands (`mg ms md`) count in memcached's `stats detail` counters
//!   here; memcached counts only text and binary get/set/delete there.
//! * The big-key list takes its own lock for writes of items at least
//!   `bigkeys_min_size` (1 KiB) that are members or large enough to enter.
//!
//! Latency: a worker reads the clock once per session event (after it, the
//! previous reading is the start of the next one), and records that
//! event's elapsed time divided by the requests it executed, once per
//! request. This includes the socket read and write of that event, which is
//! what a client sees of the server; it does not include time queued in the
//! kernel before the worker woke up.

use crate::trace::watch::Logger;
use larder_observe::observer::ObserverWorker;
use larder_store::{Charge, DepartedItem, Departure, Time};
use std::cell::RefCell;
use std::sync::Arc;

std::thread_local! {
    /// This worker thread's half of the observer.
    static WORKER: RefCell<Option<ObserverWorker>> = const { RefCell::new(None) };
}

/// Run `f` on this thread's `ObserverWorker`, if it has one (and it is not
/// already in use further up this thread's stack).
#[inline]
fn with_worker(f: impl FnOnce(&mut ObserverWorker)) {
    WORKER.with(|w| {
        if let Ok(mut g) = w.try_borrow_mut() {
            if let Some(w) = g.as_mut() {
                f(w);
            }
        }
    });
}

/// Report the store's evictions, expiries and flushes to the worker whose
/// store call caused them, and evictions to `watch evictions` (trace/watch.rs).
/// `observe`: per-prefix accounting is on; `watch`: `watch` is allowed.
pub fn install_departure_hook(store: &larder_store::Store, log: &Arc<Logger>, observe: bool, watch: bool) {
    if !observe && !watch {
        return;
    }
    let log = log.clone();
    store.set_departure_hook(Some(Arc::new(move |key: &[u8], bytes: u64, why: Departure, item: &DepartedItem| {
        if why == Departure::Evicted {
            log.eviction(key, item);
        }
        if observe {
            with_worker(|w| match why {
                Departure::Evicted => w.on_evict(key, bytes),
                Departure::Expired | Departure::Flushed => w.on_expire(key, bytes),
                Departure::Dropped => w.on_drop(key, bytes),
                Departure::Moved => w.on_resize(key, bytes, 0),
            })
        }
    })));
}

pub struct Obs {
    on: bool,
    /// unix seconds = relative time + offset.
    offset: i64,
}

impl Obs {
    /// `on`: accounting enabled; `unix_offset`: unix seconds minus the
    /// server's relative time.
    pub fn new(on: bool, unix_offset: i64) -> Obs {
        Obs { on, offset: unix_offset }
    }

    /// Give the calling (worker) thread its `ObserverWorker`.
    pub fn attach(&self, observer: &larder_observe::observer::Observer) {
        if self.on {
            let w = observer.worker();
            WORKER.with(|c| *c.borrow_mut() = Some(w));
        }
    }

    #[inline]
    fn with(&self, f: impl FnOnce(&mut ObserverWorker)) {
        if self.on {
            with_worker(f);
        }
    }

    /// A store time as unix seconds.
    pub fn unix_time(&self, t: Time) -> u64 {
        self.unix(t)
    }

    #[inline]
    fn unix(&self, t: Time) -> u64 {
        (t as i64 + self.offset).max(0) as u64
    }

    #[inline]
    fn unix_exp(&self, exptime: Time) -> u64 {
        if exptime == 0 {
            0
        } else {
            self.unix(exptime)
        }
    }

    /// One key of a get-family command; `hit`: the value length sent.
    #[inline]
    pub fn get(&mut self, key: &[u8], hit: Option<usize>, now: Time) {
        let now = self.unix(now);
        self.with(|w| w.on_get(key, hit.is_some(), hit.unwrap_or(0) as u64, now));
    }

    /// A storage command stored `key` (right after the store call).
    #[inline]
    pub fn stored(&mut self, key: &[u8], charge: Charge, now: Time, exptime: Time) {
        let (now, exptime) = (self.unix(now), self.unix_exp(exptime));
        let (new, old) = (charge.written, charge.released);
        self.with(|w| w.on_set(key, new, (old != 0).then_some(old), now, exptime));
    }

    /// An item of `item_bytes` was created without a storage command
    /// (`mg ... N` vivifying a missing key).
    #[inline]
    pub fn created(&mut self, key: &[u8], item_bytes: u64, now: Time, exptime: Time) {
        let (now, exptime) = (self.unix(now), self.unix_exp(exptime));
        self.with(|w| {
            w.prefixes.on_set(key, item_bytes, None);
            w.on_touch(key, item_bytes, now, exptime);
        });
    }

    /// incr/decr changed a value (right after the store call).
    #[inline]
    pub fn resized(&mut self, key: &[u8], charge: Charge) {
        self.with(|w| w.on_resize(key, charge.written, charge.released));
    }

    /// A storage command stored nothing.
    #[inline]
    pub fn set_failed(&mut self, key: &[u8]) {
        self.with(|w| w.on_set_failed(key));
    }

    /// A delete: `removed`, the bytes of the item it removed, if any.
    #[inline]
    pub fn deleted(&mut self, key: &[u8], removed: Option<u64>) {
        self.with(|w| w.on_delete(key, removed));
    }

    /// touch/gat set a live item's expiry.
    #[inline]
    pub fn touched(&mut self, key: &[u8], item_bytes: u64, now: Time, exptime: Time) {
        let (now, exptime) = (self.unix(now), self.unix_exp(exptime));
        self.with(|w| w.on_touch(key, item_bytes, now, exptime));
    }

    /// Whether accounting is on (`-o observe=off` turns it off).
    #[inline]
    pub fn enabled(&self) -> bool {
        self.on
    }

    /// `requests` requests took `ns` together.
    #[inline]
    pub fn latency(&mut self, ns: u64, requests: u32) {
        if requests == 0 {
            return;
        }
        let each = ns / requests as u64;
        self.with(|w| w.record_latency_n(each, requests as u64));
    }

    /// The worker is about to block.
    #[inline]
    pub fn quiesce(&mut self) {
        self.with(|w| w.quiesce());
    }
}
