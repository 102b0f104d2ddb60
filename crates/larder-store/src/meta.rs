//! Meta-protocol state: stale items, win tokens, vivify-on-miss, early
//! recache and invalidation — the store half of memcached's
//! stale-while-revalidate (`mg … N/R/T`, `md … I`, `ms … I`).
//!
//! Two bits of the item header carry the state (see [`item`](crate::item)):
//! *stale* (the value is known to be out of date but may still be served)
//! and *token sent* (one client has been told `W`: "you won, refill it";
//! everyone else sees `Z` and keeps using the old value). Decisions are made
//! under the shard lock, so exactly one caller wins per round, and nobody
//! waits: losers get the item (possibly stale) at once.
//!
//! Grace mode (for clients that speak only get/set) needs just one thing from
//! the store: [`Store::get_graced`](crate::Store::get_graced) keeps an expired value readable for a
//! while; the server decides who refills it.

use crate::shard::{Found, Why};
use crate::{item, Departures, Item, Lookup, NewVersion, Store, Time};

/// What a meta get may do besides reading.
#[derive(Clone, Copy, Debug, Default)]
pub struct MetaGet {
    /// Count the access (fetched bit, frequency); false for `u`.
    pub bump: bool,
    /// `T`: set this expiry.
    pub touch: Option<Time>,
    /// `N`: on a miss, create an empty item with this expiry and win it.
    pub vivify: Option<Time>,
    /// `R`: win if the item expires before this time (and nobody has won).
    pub recache_before: Option<Time>,
    /// The key arrived base64-encoded (remembered by an item `N` creates).
    pub key_binary: bool,
    /// `E`: the CAS of an item `N` creates.
    pub new_cas: Option<u64>,
}

/// How a meta write (`ms`) may differ from a plain store.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// `C`: write only if the item's CAS is this (`Exists` otherwise,
    /// `NotFound` without an item); allowed with every mode.
    pub cas: Option<u64>,
    /// `I` with `C`: if the given CAS is *older* (smaller) than the item's,
    /// store the value anyway but marked stale, keeping the old item's
    /// expiry and win-token state, as memcached does.
    pub stale_if_older: bool,
    /// `b`: the key arrived base64-encoded; replies re-encode it.
    pub key_binary: bool,
    /// `E`: give the new item this CAS instead of a derived one.
    pub new_cas: Option<u64>,
}

/// A meta get's view of an item.
#[derive(Debug)]
pub struct MetaItem<'a> {
    pub item: Item<'a>,
    /// The expiry before this request's touch (`item.exptime` is after).
    pub exptime_before: Time,
    /// Seconds since the previous access (`l`).
    pub last_access: Time,
    /// Whether it had been fetched before this request (`h`).
    pub fetched_before: bool,
    /// Marked stale (`X`).
    pub stale: bool,
    /// Someone had already won before this request (`Z`).
    pub token_sent_before: bool,
    /// This request won the right to refill it (`W`).
    pub won: bool,
    /// The item was created by this request's `N`.
    pub created: bool,
    /// The item's key was stored base64-encoded (meta `b`).
    pub key_binary: bool,
    /// Bytes the store charges for the item (header, key, value; its CAS
    /// field when it stores one): what per-prefix accounting adds.
    pub size: u64,
}

/// `md … I`'s arguments: see [`Reporting::invalidate_charged`](crate::Reporting::invalidate_charged).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Invalidate {
    pub cas: Option<u64>,
    pub exptime: Option<Time>,
    pub new_cas: Option<u64>,
}

impl Store {
    pub(crate) fn meta_get_to<R>(
        &self,
        key: &[u8],
        now: Time,
        opts: &MetaGet,
        d: &mut dyn Departures,
        read: impl FnOnce(&MetaItem<'_>) -> R,
    ) -> Lookup<R> {
        let h = self.hasher.hash(key);
        let mut l = self.lock(h, now);
        let (loc, created) = match l.g.lookup(h, key, now, &self.pool, d) {
            Found::Live(pos, loc) => {
                if opts.bump {
                    l.g.index.bump(pos);
                }
                (loc, false)
            }
            other => {
                let miss = match other {
                    Found::Expired => Lookup::Expired,
                    Found::Flushed => Lookup::Flushed,
                    _ => Lookup::Miss,
                };
                let Some(ttl) = opts.vivify else { return miss };
                let size = |cas| item::item_len_cas(key.len(), 0, 0, cas);
                let Some((loc, _)) = self.reserve_version(&mut l, now, NewVersion { exptime: ttl, protect: 0, old_cas: None, new_cas: opts.new_cas, landed: None }, size, d) else { return miss };
                item::encode_cas(l.g.item_bytes_mut(loc), key, 0, 0, ttl, now, opts.new_cas);
                item::set_key_binary(l.g.item_bytes_mut(loc), opts.key_binary);
                if !l.g.commit(h, loc, None, true, &self.env(now), d) {
                    return miss;
                }
                (loc, true)
            }
        };
        let before = l.g.header(loc);
        if opts.bump {
            let bytes = l.g.item_bytes_mut(loc);
            item::set_fetched(bytes);
            item::set_atime(bytes, now);
        }
        if let Some(t) = opts.touch {
            l.g.set_exptime(loc, t);
        }
        let exptime = l.g.header(loc).exptime;
        let recache = opts
            .recache_before
            .is_some_and(|r| !before.token_sent && !created && exptime != 0 && exptime < r);
        let won = created || recache || (before.stale && !before.token_sent);
        if won {
            item::set_meta_state(l.g.item_bytes_mut(loc), before.stale, true);
        }
        let view = MetaItem {
            item: l.g.item(loc),
            exptime_before: before.exptime,
            last_access: before.idle(now),
            fetched_before: before.fetched,
            stale: before.stale,
            token_sent_before: before.token_sent,
            won,
            created,
            key_binary: before.key_binary,
            size: before.total() as u64,
        };
        Lookup::Hit(read(&view))
    }

    pub(crate) fn invalidate_to(
        &self,
        key: &[u8],
        now: Time,
        inv: Invalidate,
        d: &mut dyn Departures,
    ) -> (crate::DeleteOutcome, crate::Charge) {
        use crate::{Charge, DeleteOutcome};
        let Invalidate { cas, exptime, new_cas } = inv;
        let h = self.hasher.hash(key);
        let mut l = self.lock(h, now);
        let Found::Live(_, old) = l.g.lookup(h, key, now, &self.pool, d) else {
            return (DeleteOutcome::NotFound, Charge::default());
        };
        if cas.is_some_and(|c| c != l.g.cas(old)) {
            return (DeleteOutcome::Exists, Charge::default());
        }
        // The CAS is derived from the item's place, so a new CAS means a
        // copy of the item in a new place (with `E`, one that stores it).
        let oh = l.g.header(old);
        let old_cas = l.g.cas(old);
        let size = |cas| item::item_len_cas(oh.klen, oh.vlen, oh.flags, cas);
        let new_exptime = exptime.unwrap_or(oh.exptime);
        let Some((loc, new_cas)) = self.reserve_version(&mut l, now, NewVersion { exptime: new_exptime, protect: old.seg, old_cas: Some(old_cas), new_cas, landed: None }, size, d) else {
            // No room for the copy: deleting is the safe fallback, a reader
            // then misses instead of reading a value known to be stale.
            if let Some(pos) = l.g.index.find_loc(h, old) {
                // reported as a departure: no client deleted it
                l.g.unlink(pos, old, Why::Dropped, &self.pool, d);
            }
            return (DeleteOutcome::Deleted, Charge::default());
        };
        let voff = item::encode_cas(l.g.item_bytes_mut(loc), key, oh.vlen, oh.flags, oh.exptime, now, new_cas);
        l.g.segs.copy(old.seg, old.off as usize + oh.val_off(), loc.seg, loc.off as usize + voff, oh.vlen);
        item::set_key_binary(l.g.item_bytes_mut(loc), oh.key_binary);
        item::set_meta_state(l.g.item_bytes_mut(loc), true, false);
        if let Some(e) = exptime {
            l.g.set_exptime(loc, e);
        }
        l.g.commit(h, loc, Some(old), false, &self.env(now), d);
        // The copy may be bigger (a stored CAS): the caller accounts for it.
        (DeleteOutcome::Deleted, Charge { written: l.g.header(loc).total() as u64, released: l.g.last_replaced })
    }

    pub(crate) fn get_graced_to<R>(
        &self,
        key: &[u8],
        now: Time,
        grace: Time,
        d: &mut dyn Departures,
        read: impl FnOnce(&Item<'_>, bool) -> R,
    ) -> Lookup<R> {
        let h = self.hasher.hash(key);
        let mut l = self.lock(h, now);
        match l.g.lookup_graced(h, key, now, grace, &self.pool, d) {
            (Found::Live(pos, loc), in_grace) => {
                if !in_grace {
                    l.g.index.bump(pos);
                    let bytes = l.g.item_bytes_mut(loc);
                    item::set_fetched(bytes);
                    item::set_atime(bytes, now);
                }
                Lookup::Hit(read(&l.g.item(loc), in_grace))
            }
            (Found::Expired, _) => Lookup::Expired,
            (Found::Flushed, _) => Lookup::Flushed,
            (Found::Miss, _) => Lookup::Miss,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::TestForms;
    use crate::{Config, DeleteOutcome, Mode, StoreResult};

    fn store() -> Store {
        Store::new(Config { memory_limit: 8 << 20, ..Config::default() }).unwrap()
    }

    fn flags_of(s: &Store, key: &[u8], now: Time, opts: MetaGet) -> Option<(bool, bool, bool, Vec<u8>)> {
        match s.meta_get(key, now, &opts, |m| (m.won, m.stale, m.token_sent_before, m.item.value.to_vec())) {
            Lookup::Hit(x) => Some(x),
            _ => None,
        }
    }

    #[test]
    fn vivify_gives_one_winner_and_an_empty_item_to_the_rest() {
        let s = store();
        let n = MetaGet { bump: true, vivify: Some(130), ..MetaGet::default() };
        assert_eq!(flags_of(&s, b"k", 100, n), Some((true, false, false, vec![])));
        // Later callers: no win, and they see that a token was sent (Z).
        assert_eq!(flags_of(&s, b"k", 101, n), Some((false, false, true, vec![])));
        assert_eq!(flags_of(&s, b"k", 102, n), Some((false, false, true, vec![])));
        // The winner's set clears the state.
        assert!(matches!(s.store(Mode::Set, b"k", 0, 0, b"fresh", 103), StoreResult::Stored(_)));
        assert_eq!(flags_of(&s, b"k", 103, n), Some((false, false, false, b"fresh".to_vec())));
    }

    #[test]
    fn recache_wins_once_when_the_ttl_runs_low() {
        let s = store();
        s.store(Mode::Set, b"k", 0, 200, b"v", 100);
        let r = |t| MetaGet { bump: true, recache_before: Some(t), ..MetaGet::default() };
        // 100 s left, threshold 30 s ahead: no win.
        assert!(!flags_of(&s, b"k", 100, r(130)).unwrap().0);
        // 20 s left: the first asker wins, the next does not.
        assert!(flags_of(&s, b"k", 180, r(210)).unwrap().0);
        assert_eq!(flags_of(&s, b"k", 181, r(211)), Some((false, false, true, b"v".to_vec())));
    }

    #[test]
    fn invalidate_serves_stale_to_all_and_wins_one_refill() {
        let s = store();
        let StoreResult::Stored(cas) = s.store(Mode::Set, b"k", 5, 0, b"old", 100) else { panic!() };
        assert_eq!(s.invalidate(b"k", 100, Some(cas + 1), None, None), DeleteOutcome::Exists);
        assert_eq!(s.invalidate(b"k", 100, None, Some(160), None), DeleteOutcome::Deleted);
        let got = s.get(b"k", 100, |i| (i.cas, i.exptime, i.flags));
        let Lookup::Hit((new_cas, exp, flags)) = got else { panic!() };
        assert!(new_cas > cas, "invalidation bumps the CAS");
        assert_eq!((exp, flags), (160, 5));
        let plain = MetaGet { bump: true, ..MetaGet::default() };
        assert_eq!(flags_of(&s, b"k", 101, plain), Some((true, true, false, b"old".to_vec())));
        assert_eq!(flags_of(&s, b"k", 101, plain), Some((false, true, true, b"old".to_vec())));
        // A refill with the old CAS (the one read before invalidation) is
        // stored, but stays stale: a newer writer invalidated in between.
        assert!(matches!(s.meta_store(Mode::Set, b"k", 0, 0, b"late", 102, &WriteOptions { cas: Some(cas), stale_if_older: true, ..WriteOptions::default() }), StoreResult::Stored(_)));
        assert_eq!(flags_of(&s, b"k", 102, plain), Some((false, true, true, b"late".to_vec())));
        // Without I, an old CAS is just refused.
        assert_eq!(s.meta_store(Mode::Set, b"k", 0, 0, b"x", 102, &WriteOptions { cas: Some(cas), ..WriteOptions::default() }), StoreResult::Exists);
        // A plain set makes it fresh again.
        s.store(Mode::Set, b"k", 0, 0, b"new", 103);
        assert_eq!(flags_of(&s, b"k", 103, plain), Some((false, false, false, b"new".to_vec())));
    }

    #[test]
    fn grace_keeps_an_expired_value_readable_until_replaced_or_deleted() {
        let s = store();
        s.store(Mode::Set, b"k", 0, 110, b"old", 100);
        let graced = |s: &Store, now| match s.get_graced(b"k", now, 30, |i, stale| (i.value.to_vec(), stale)) {
            Lookup::Hit(x) => Some(x),
            _ => None,
        };
        assert_eq!(graced(&s, 105), Some((b"old".to_vec(), false)));
        assert_eq!(graced(&s, 115), Some((b"old".to_vec(), true)));
        // Plain readers still see it as expired-and-gone only after grace:
        // the graced read must not have removed it.
        assert_eq!(graced(&s, 139), Some((b"old".to_vec(), true)));
        assert_eq!(graced(&s, 140), None);
        s.store(Mode::Set, b"k", 0, 110, b"old", 100);
        assert!(!s.delete(b"k", 115), "expired: delete finds nothing live");
        assert_eq!(graced(&s, 116), None, "a delete ends grace at once");
        s.store(Mode::Set, b"k", 0, 110, b"old", 100);
        s.store(Mode::Set, b"k", 0, 0, b"new", 120);
        assert_eq!(graced(&s, 121), Some((b"new".to_vec(), false)));
    }

    #[test]
    fn explicit_cas_from_e_on_every_write_path() {
        let s = store();
        let cas_of = |s: &Store| match s.get(b"k", 100, |i| i.cas) {
            Lookup::Hit(c) => c,
            _ => panic!("missing"),
        };
        let e = |c| WriteOptions { new_cas: Some(c), ..WriteOptions::default() };
        // ms E
        assert_eq!(s.meta_store(Mode::Set, b"k", 3, 0, b"12", 100, &e(777)), StoreResult::Stored(777));
        assert_eq!(cas_of(&s), 777);
        // A later write without E gets a derived CAS again, and C checks the explicit one.
        assert_eq!(s.meta_store(Mode::Set, b"k", 3, 0, b"x", 100, &WriteOptions { cas: Some(1), ..WriteOptions::default() }), StoreResult::Exists);
        assert!(matches!(s.meta_store(Mode::Set, b"k", 3, 0, b"20", 100, &WriteOptions { cas: Some(777), ..WriteOptions::default() }), StoreResult::Stored(c) if c != 777));
        // ma E
        assert!(matches!(s.arith_meta(b"k", 100, true, 1, None, Some(888)), crate::ArithOutcome::Value { value: 21, cas: 888, .. }));
        assert_eq!(cas_of(&s), 888);
        // md I E: stale, same value and flags, the given CAS
        assert_eq!(s.invalidate(b"k", 100, Some(888), None, Some(999)), DeleteOutcome::Deleted);
        assert_eq!(s.get(b"k", 100, |i| (i.value.to_vec(), i.flags, i.cas)), Lookup::Hit((b"21".to_vec(), 3, 999)));
        assert_eq!(flags_of(&s, b"k", 100, MetaGet { bump: true, ..MetaGet::default() }), Some((true, true, false, b"21".to_vec())));
        // mg N E: the vivified item carries the CAS
        let n = MetaGet { bump: true, vivify: Some(200), new_cas: Some(4242), ..MetaGet::default() };
        assert_eq!(s.meta_get(b"new", 100, &n, |m| m.item.cas), Lookup::Hit(4242));
    }

    #[test]
    fn touch_and_no_bump() {
        let s = store();
        s.store(Mode::Set, b"k", 0, 0, b"v", 100);
        let u = MetaGet { bump: false, touch: Some(500), ..MetaGet::default() };
        let fetched = |s: &Store| match s.meta_get(b"k", 100, &MetaGet::default(), |m| (m.fetched_before, m.item.exptime)) {
            Lookup::Hit(x) => x,
            _ => panic!(),
        };
        s.meta_get(b"k", 100, &u, |_| ());
        assert_eq!(fetched(&s), (false, 500));
        s.meta_get(b"k", 100, &MetaGet { bump: true, ..MetaGet::default() }, |_| ());
        assert_eq!(fetched(&s), (true, 500));
    }
}
