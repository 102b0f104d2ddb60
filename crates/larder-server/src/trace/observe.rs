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
//!   are reported by the store call that caused them, to the sink its
//!   caller passed ([`Departed`], built by the request context from the
//!   worker's [`Obs`] and its `watch` log): a worker's `ObserverWorker` is
//!   a plain field of its `Obs`, reached only through the parameters it is
//!   passed. Store calls made without a sink (the warm restart's load, at
//!   start-up, which is accounted for afterwards from what it loaded) are
//!   not reported.
//! * `-o observe=off` leaves the worker without an `ObserverWorker`: every
//!   call is then a single predictable branch (used to measure what the
//!   accounting costs).
//!
//! Per-prefix `items`/`bytes` follow the store exactly: every way an item
//! arrives, grows or leaves is reported (storage commands here, evictions,
//! expiries, moves and the old values failed sets drop through the store's
//! departures, reported to the worker that caused them), and the rows always sum to `stats` `curr_items`/`bytes`
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

use crate::trace::watch::WorkerLog;
use larder_observe::observer::{Observer, ObserverWorker};
use larder_store::{Charge, DepartedItem, Departure, Departures, Time};

/// The departure sink of one store call made by a worker: evictions go to
/// `watch evictions` (if anyone watches), and every departure to the
/// worker's per-prefix accounting (if on). `now`: the call's server time
/// (eviction lines print the item's TTL and idle time from it).
pub struct Departed<'a> {
    pub obs: &'a mut Obs,
    pub log: &'a WorkerLog,
    pub now: Time,
}

impl Departures for Departed<'_> {
    #[inline]
    fn departed(&mut self, key: &[u8], bytes: u64, why: Departure, item: &DepartedItem) {
        if why == Departure::Evicted {
            self.log.eviction(key, item, self.now);
        }
        self.obs.with(|w| match why {
            Departure::Evicted => w.on_evict(key, bytes),
            Departure::Expired | Departure::Flushed => w.on_expire(key, bytes),
            Departure::Dropped => w.on_drop(key, bytes),
            Departure::Moved => w.on_resize(key, bytes, 0),
        })
    }
}

/// One worker's half of the observer (`None` under `-o observe=off`).
pub struct Obs {
    worker: Option<ObserverWorker>,
    /// unix seconds = relative time + offset.
    offset: i64,
}

impl Obs {
    /// `on`: accounting enabled (the worker's half of `observer` is made
    /// only then); `unix_offset`: unix seconds minus the server's relative
    /// time.
    pub fn new(observer: &Observer, on: bool, unix_offset: i64) -> Obs {
        Obs { worker: on.then(|| observer.worker()), offset: unix_offset }
    }

    #[inline]
    fn with(&mut self, f: impl FnOnce(&mut ObserverWorker)) {
        if let Some(w) = self.worker.as_mut() {
            f(w);
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
        self.worker.is_some()
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
