//! [`Reporting`]: the store's calls made on behalf of a caller who follows
//! departures — the server's worker, whose per-prefix accounting and
//! `watch evictions` lines must hear of every item that leaves the store on
//! its own.
//!
//! A departure happens inside a store call, under a shard's lock, and may
//! be in another shard than the key's (eviction makes room anywhere). So
//! the caller's sink ([`Departures`]) travels down with the call instead of
//! living in a hook installed at start-up, and the departures of a call go
//! to whoever made it. The store's plain methods (`Store::get`, …) are the
//! same calls with [`Unreported`](crate::Unreported) as the sink; each pair
//! shares one body (the `*_to` functions of the modules that define the
//! operation), so the two can never differ in anything but reporting.

use crate::meta::{MetaGet, MetaItem, WriteOptions};
use crate::shard::Why;
use crate::{ArithOutcome, Charge, DeleteOutcome, Departures, Item, Lookup, Store, StoreResult, Time, Write};

/// incr/decr's arguments: see [`Store::arith_charged`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArithArgs {
    pub incr: bool,
    pub delta: u64,
    pub cas: Option<u64>,
    pub new_cas: Option<u64>,
}

/// `md … I`'s arguments: see [`Store::invalidate_charged`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Invalidate {
    pub cas: Option<u64>,
    pub exptime: Option<Time>,
    pub new_cas: Option<u64>,
}

/// The store, with a caller's departure sink: see the module docs. Made
/// by [`Store::reporting`], typically for one request (a sink usually
/// borrows the caller's accounting; a closure `&mut FnMut` is a sink too).
pub struct Reporting<'a, D: Departures> {
    store: &'a Store,
    d: D,
}

impl Store {
    /// The calls below, reporting departures to `d`.
    #[inline]
    pub fn reporting<D: Departures>(&self, d: D) -> Reporting<'_, D> {
        Reporting { store: self, d }
    }
}

impl<D: Departures> Reporting<'_, D> {
    /// [`Store::get`].
    #[inline]
    pub fn get<R>(&mut self, key: &[u8], now: Time, read: impl FnOnce(&Item<'_>) -> R) -> Lookup<R> {
        self.store.fetch(key, now, None, &mut self.d, read)
    }

    /// [`Store::get_and_touch`].
    #[inline]
    pub fn get_and_touch<R>(&mut self, key: &[u8], now: Time, exptime: Time, read: impl FnOnce(&Item<'_>) -> R) -> Lookup<R> {
        self.store.fetch(key, now, Some(exptime), &mut self.d, read)
    }

    /// [`Store::touch`].
    #[inline]
    pub fn touch(&mut self, key: &[u8], now: Time, exptime: Time) -> bool {
        self.store.fetch(key, now, Some(exptime), &mut self.d, |_| ()) == Lookup::Hit(())
    }

    /// [`Store::get_graced`].
    #[inline]
    pub fn get_graced<R>(&mut self, key: &[u8], now: Time, grace: Time, read: impl FnOnce(&Item<'_>, bool) -> R) -> Lookup<R> {
        self.store.get_graced_to(key, now, grace, &mut self.d, read)
    }

    /// [`Store::meta_get`].
    #[inline]
    pub fn meta_get<R>(&mut self, key: &[u8], now: Time, opts: &MetaGet, read: impl FnOnce(&MetaItem<'_>) -> R) -> Lookup<R> {
        self.store.meta_get_to(key, now, opts, &mut self.d, read)
    }

    /// [`Store::peek`].
    #[inline]
    pub fn peek<R>(&mut self, key: &[u8], now: Time, read: impl FnOnce(&Item<'_>) -> R) -> Lookup<R> {
        self.store.peek_to(key, now, &mut self.d, read)
    }

    /// [`Store::write`].
    #[inline]
    pub fn write(&mut self, w: &Write<'_>, now: Time, opts: &WriteOptions) -> (StoreResult, Charge) {
        self.store.store_charged(w, now, opts, &mut self.d)
    }

    /// [`Store::drop_after_failed_set`].
    #[inline]
    pub fn drop_after_failed_set(&mut self, key: &[u8], now: Time) -> bool {
        self.store.unlink_key(key, now, Why::Dropped, &mut self.d)
    }

    /// [`Store::delete_charged`].
    #[inline]
    pub fn delete_charged(&mut self, key: &[u8], now: Time, cas: Option<u64>) -> (DeleteOutcome, Charge) {
        self.store.delete_to(key, now, cas, &mut self.d)
    }

    /// [`Store::invalidate_charged`].
    #[inline]
    pub fn invalidate_charged(
        &mut self,
        key: &[u8],
        now: Time,
        cas: Option<u64>,
        exptime: Option<Time>,
        new_cas: Option<u64>,
    ) -> (DeleteOutcome, Charge) {
        self.store.invalidate_to(key, now, Invalidate { cas, exptime, new_cas }, &mut self.d)
    }

    /// [`Store::arith_charged`].
    #[inline]
    pub fn arith_charged(
        &mut self,
        key: &[u8],
        now: Time,
        incr: bool,
        delta: u64,
        cas: Option<u64>,
        new_cas: Option<u64>,
    ) -> (ArithOutcome, Charge) {
        self.store.arith_to(key, now, ArithArgs { incr, delta, cas, new_cas }, &mut self.d)
    }

    /// [`Store::reclaim_expired`].
    #[inline]
    pub fn reclaim_expired(&mut self, now: Time, part: usize, parts: usize) -> usize {
        self.store.reclaim_expired_to(now, part, parts, &mut self.d)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Departure, Mode, Store, Unreported};

    /// Departures go to the sink of the call that caused them, and the
    /// plain methods report nothing.
    #[test]
    fn each_call_reports_to_its_own_sink() {
        let s = Store::new(Config { memory_limit: 4 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap();
        s.store(Mode::Set, b"a", 0, 5, b"v", 1);
        s.store(Mode::Set, b"b", 0, 5, b"v", 1);
        let (mut first, mut second) = (Vec::new(), Vec::new());
        let mut one = |k: &[u8], _: u64, why: Departure, _: &crate::DepartedItem| first.push((k.to_vec(), why));
        assert_eq!(s.reporting(&mut one).get(b"a", 6, |_| ()), crate::Lookup::Expired);
        let mut two = |k: &[u8], _: u64, why: Departure, _: &crate::DepartedItem| second.push((k.to_vec(), why));
        assert!(!s.reporting(&mut two).touch(b"b", 6, 0));
        assert_eq!(first, vec![(b"a".to_vec(), Departure::Expired)]);
        assert_eq!(second, vec![(b"b".to_vec(), Departure::Expired)]);
        // Unreported: the same call, nobody told.
        s.store(Mode::Set, b"c", 0, 5, b"v", 1);
        assert_eq!(s.reporting(Unreported).get(b"c", 6, |_| ()), crate::Lookup::Expired);
    }
}
