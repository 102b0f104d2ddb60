//! Counters: `incr decr` (text), `ma` (meta), `INCREMENT DECREMENT` and
//! their quiet forms (binary).
//!
//! One store call for all of them (`Store::arith_charged`: an optional CAS to
//! compare, an optional new CAS). Binary and meta may create a missing
//! counter with an initial value (add semantics, flags 0); meta may also set
//! the expiry of an existing one (`T`). A successful change ends the key's
//! grace round like any write.

use super::Ctx;
use crate::counters::bump;
use larder_store::{ArithOutcome, Mode, StoreResult, Time, WriteOptions};

/// One incr/decr in the store's terms.
#[derive(Clone, Copy, Debug)]
pub struct Arith<'a> {
    pub key: &'a [u8],
    pub incr: bool,
    pub delta: u64,
    /// Change only if the item's CAS is this.
    pub cas: Option<u64>,
    /// Give the changed (or created) item this CAS (meta `E`).
    pub new_cas: Option<u64>,
    /// Set this expiry after the change (meta `T`; server time).
    pub touch: Option<Time>,
    /// On a miss, create the counter with (initial value, expiry).
    pub create: Option<(u64, Time)>,
    /// The key arrived base64-encoded (meta `b`).
    pub key_binary: bool,
}

/// What an incr/decr did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// Changed: the new value and CAS; the expiry before and after.
    Value { value: u64, cas: u64, exptime_before: Time, exptime_after: Time },
    /// Missing and created with its initial value.
    Created { value: u64, cas: u64, exptime: Time },
    NotFound,
    /// The CAS did not match.
    Exists,
    NonNumeric,
    /// No room for the changed value.
    OutOfMemory,
    /// No room to create the missing counter.
    CreateOutOfMemory,
    /// The missing counter could not be created (someone else did first).
    CreateNotStored,
}

pub fn arith(cx: &mut Ctx<'_>, a: &Arith<'_>) -> Counted {
    let srv = cx.srv;
    let now = cx.now;
    let ws = cx.ws;
    let (hits, misses) = if a.incr { (&ws.incr_hits, &ws.incr_misses) } else { (&ws.decr_hits, &ws.decr_misses) };
    crate::trace::watch::fetch_first(cx.trace(), &mut cx.store(), a.key, now);
    let (outcome, charge) = if cx.in_flush_second() {
        (ArithOutcome::NotFound, larder_store::Charge::default())
    } else {
        cx.store().arith_charged(a.key, now, a.incr, a.delta, a.cas, a.new_cas)
    };
    match outcome {
        ArithOutcome::Value { value, cas, exptime } => {
            cx.obs.resized(a.key, charge);
            bump(hits, 1);
            let mut after = exptime;
            if let Some(t) = a.touch {
                after = t;
                cx.store().touch(a.key, now, t);
            }
            srv.note_write(a.key);
            cx.track_changed(a.key);
            Counted::Value { value, cas: cx.visible_cas(cas), exptime_before: exptime, exptime_after: after }
        }
        ArithOutcome::NotFound => {
            bump(misses, 1);
            match a.create {
                None => Counted::NotFound,
                Some((initial, exptime)) => create(cx, a, initial, exptime),
            }
        }
        ArithOutcome::Exists => Counted::Exists,
        ArithOutcome::NonNumeric => Counted::NonNumeric,
        ArithOutcome::OutOfMemory => Counted::OutOfMemory,
    }
}

/// Create a missing counter (add semantics: a concurrent creator wins).
fn create(cx: &mut Ctx<'_>, a: &Arith<'_>, initial: u64, exptime: Time) -> Counted {
    let srv = cx.srv;
    let now = cx.now;
    let mut digits = [0u8; 20];
    let text = decimal(initial, &mut digits);
    let opts = WriteOptions { new_cas: a.new_cas, key_binary: a.key_binary, ..WriteOptions::default() };
    let prior = crate::trace::watch::before_store(cx.trace(), &mut cx.store(), a.key, now, Mode::Add);
    let write = larder_store::Write { mode: Mode::Add, key: a.key, flags: 0, exptime, value: text, landed: None };
    let (result, charge) = cx.store().write(&write, now, &opts);
    let cmd = larder_observe::watch::StoreCmd::Add;
    crate::trace::watch::after_store(cx.trace(), a.key, prior, cmd, &result, exptime, text.len(), now);
    match result {
        StoreResult::Stored(cas) => {
            cx.obs.stored(a.key, charge, now, exptime);
            srv.note_write(a.key);
            cx.track_changed(a.key);
            Counted::Created { value: initial, cas: cx.visible_cas(cas), exptime }
        }
        StoreResult::OutOfMemory => Counted::CreateOutOfMemory,
        _ => Counted::CreateNotStored,
    }
}

/// `n` in decimal, in `buf`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn decimal_digits() {
        let mut b = [0u8; 20];
        assert_eq!(super::decimal(0, &mut b), b"0");
        assert_eq!(super::decimal(u64::MAX, &mut b), b"18446744073709551615");
    }
}
