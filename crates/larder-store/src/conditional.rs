//! The bodies of delete and incr/decr ([`Reporting::delete_charged`](crate::Reporting::delete_charged),
//! [`Reporting::arith_charged`](crate::Reporting::arith_charged)), with
//! their compare-and-swap form for the binary and meta protocols.
//!
//! The text protocol's `delete` and `incr` take no CAS, but memcached's
//! binary protocol (a non-zero CAS in the request header) and the meta
//! commands (`md … C<cas>`, `ma … C<cas>`) make them conditional: the
//! operation happens only if the item's current CAS equals the one given.
//! The check and the operation happen under the same shard lock, so no other
//! writer can slip in between. incr/decr also report the new item's CAS and
//! expiry, which those protocols return.

use crate::shard::{Found, Why};
use crate::{arith, item, Departures, NewVersion, Store, Time};

/// Outcome of [`Reporting::delete_charged`](crate::Reporting::delete_charged).
#[derive(Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    Deleted,
    NotFound,
    /// The item's CAS differs from the one given.
    Exists,
}

/// Outcome of [`Reporting::arith_charged`](crate::Reporting::arith_charged).
#[derive(Debug, PartialEq, Eq)]
pub enum ArithOutcome {
    /// The new value, the new item's CAS and its (unchanged) expiry.
    Value { value: u64, cas: u64, exptime: Time },
    NotFound,
    NonNumeric,
    OutOfMemory,
    /// The item's CAS differs from the one given.
    Exists,
}

/// incr/decr's arguments: see [`Reporting::arith_charged`](crate::Reporting::arith_charged).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArithArgs {
    pub incr: bool,
    pub delta: u64,
    pub cas: Option<u64>,
    pub new_cas: Option<u64>,
}

impl Store {
    pub(crate) fn delete_to(&self, key: &[u8], now: Time, cas: Option<u64>, d: &mut dyn Departures) -> (DeleteOutcome, crate::Charge) {
        let h = self.hasher.hash(key);
        let mut l = self.lock(h, now);
        match l.g.lookup(h, key, now, &self.pool, d) {
            Found::Live(pos, loc) => {
                if cas.is_some_and(|c| c != l.g.cas(loc)) {
                    return (DeleteOutcome::Exists, crate::Charge::default());
                }
                let released = l.g.header(loc).total() as u64;
                l.g.unlink(pos, loc, Why::Deleted, &self.pool, d);
                (DeleteOutcome::Deleted, crate::Charge { written: 0, released })
            }
            _ => (DeleteOutcome::NotFound, crate::Charge::default()),
        }
    }

    pub(crate) fn arith_to(&self, key: &[u8], now: Time, a: ArithArgs, d: &mut dyn Departures) -> (ArithOutcome, crate::Charge) {
        let ArithArgs { incr, delta, cas, new_cas } = a;
        let none = crate::Charge::default();
        let h = self.hasher.hash(key);
        let mut l = self.lock(h, now);
        let Found::Live(_, old) = l.g.lookup(h, key, now, &self.pool, d) else {
            return (ArithOutcome::NotFound, none);
        };
        if cas.is_some_and(|c| c != l.g.cas(old)) {
            return (ArithOutcome::Exists, none);
        }
        let oh = l.g.header(old);
        let Some(n) = arith::parse(l.g.item(old).value) else {
            return (ArithOutcome::NonNumeric, none);
        };
        let n = arith::apply(n, incr, delta);
        let mut buf = [0u8; 20];
        let digits = arith::digits(n, &mut buf);
        let vlen = arith::new_len(oh.vlen, digits.len());
        let old_cas = l.g.cas(old);
        let size = |cas| item::item_len_cas(key.len(), vlen, oh.flags, cas);
        let Some((loc, new_cas)) = self.reserve_version(&mut l, now, NewVersion { exptime: oh.exptime, protect: 0, old_cas: Some(old_cas), new_cas, landed: None }, size, d) else {
            return (ArithOutcome::OutOfMemory, none);
        };
        let size = size(new_cas);
        let bytes = l.g.item_bytes_mut(loc);
        let voff = item::encode_cas(bytes, key, vlen, oh.flags, oh.exptime, now, new_cas);
        arith::write(&mut bytes[voff..], digits);
        // memcached rewrites in place (no new link, total_items unchanged)
        // unless the value grows.
        if !l.g.commit(h, loc, Some(old), vlen != oh.vlen, &self.env(now), d) {
            return (ArithOutcome::OutOfMemory, none);
        }
        let charge = crate::Charge { written: size as u64, released: l.g.last_replaced };
        (ArithOutcome::Value { value: n, cas: l.g.cas(loc), exptime: oh.exptime }, charge)
    }
}

#[cfg(test)]
mod tests {
    use crate::ops::TestForms;
    use crate::{ArithOutcome, Config, DeleteOutcome, Lookup, Mode, Store, StoreResult};

    fn store() -> Store {
        Store::new(Config { memory_limit: 8 << 20, ..Config::default() }).unwrap()
    }

    #[test]
    fn delete_if_checks_the_cas() {
        let s = store();
        let StoreResult::Stored(cas) = s.store(Mode::Set, b"k", 0, 0, b"v", 10) else { panic!() };
        assert_eq!(s.delete_if(b"k", 10, Some(cas + 1)), DeleteOutcome::Exists);
        assert_eq!(s.get(b"k", 10, |i| i.value.to_vec()), Lookup::Hit(b"v".to_vec()));
        assert_eq!(s.delete_if(b"k", 10, Some(cas)), DeleteOutcome::Deleted);
        assert_eq!(s.delete_if(b"k", 10, None), DeleteOutcome::NotFound);
    }

    #[test]
    fn arith_if_checks_the_cas_and_reports_the_new_one() {
        let s = store();
        let StoreResult::Stored(cas) = s.store(Mode::Set, b"n", 0, 500, b"41", 10) else { panic!() };
        assert_eq!(s.arith_if(b"n", 10, true, 1, Some(cas + 7)), ArithOutcome::Exists);
        let ArithOutcome::Value { value, cas: new_cas, exptime } = s.arith_if(b"n", 10, true, 1, Some(cas)) else {
            panic!()
        };
        assert_eq!((value, exptime), (42, 500));
        assert_ne!(new_cas, cas);
        assert_eq!(s.get(b"n", 10, |i| (i.value.to_vec(), i.cas)), Lookup::Hit((b"42".to_vec(), new_cas)));
        assert_eq!(s.arith_if(b"nope", 10, true, 1, None), ArithOutcome::NotFound);
    }
}

#[cfg(test)]
mod store_if_tests {
    use crate::ops::TestForms;
    use crate::{Config, Lookup, Mode, Store, StoreResult};

    #[test]
    fn append_with_a_cas_checks_it() {
        let s = Store::new(Config { memory_limit: 8 << 20, ..Config::default() }).unwrap();
        let StoreResult::Stored(cas) = s.store(Mode::Set, b"k", 3, 0, b"ab", 10) else { panic!() };
        assert_eq!(s.store_if(Mode::Append, b"k", 0, 0, b"c", 10, Some(cas + 1)), StoreResult::Exists);
        assert_eq!(s.store_if(Mode::Append, b"nope", 0, 0, b"c", 10, Some(cas)), StoreResult::NotFound);
        assert!(matches!(s.store_if(Mode::Append, b"k", 0, 0, b"c", 10, Some(cas)), StoreResult::Stored(_)));
        assert_eq!(s.get(b"k", 10, |i| (i.value.to_vec(), i.flags)), Lookup::Hit((b"abc".to_vec(), 3)));
    }
}
