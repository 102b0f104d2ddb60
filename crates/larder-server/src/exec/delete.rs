//! Deletes: `delete` (text), `md` (meta, with `C` and `I`), `DELETE` and
//! `DELETEQ` (binary, with a CAS).
//!
//! A delete of any kind ends the key's grace round, so the next expiry
//! starts a new one at once. Under `-C`, keys hidden by the flush second
//! are not found. `md … I` (invalidate) keeps the item, marked stale: to
//! the per-prefix accounting that is a possible resize (the stale copy may
//! store its CAS), not a removal. `md … x` (memcached 1.6.27) empties the
//! value and keeps the item ([`empty_value`]).

use super::Ctx;
use crate::counters::bump;
use larder_observe::watch::DeleteCmd;
use larder_store::{DeleteOutcome, Mode, StoreResult, Time, WriteOptions};

/// Which protocol's delete this is: memcached's `watch deletions` logs text
/// `delete` and meta `md` (each by name), never a binary delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Text,
    Meta,
    Binary,
}

impl Via {
    fn logged_as(self) -> Option<DeleteCmd> {
        match self {
            Via::Text => Some(DeleteCmd::Delete),
            Via::Meta => Some(DeleteCmd::Md),
            Via::Binary => None,
        }
    }
}

/// `md … I`: mark stale instead of removing.
#[derive(Clone, Copy, Debug)]
pub struct Invalidate {
    /// `T`: the stale item's new expiry (server time).
    pub exptime: Option<Time>,
    /// `E`: the CAS the stale item gets.
    pub new_cas: Option<u64>,
}

/// Delete `key`, only if its CAS is `cas` when one is given.
pub fn delete(cx: &mut Ctx<'_>, via: Via, key: &[u8], cas: Option<u64>, invalidate: Option<Invalidate>) -> DeleteOutcome {
    let srv = cx.srv;
    let now = cx.now;
    srv.note_write(key);
    let prior = crate::trace::watch::before_delete(cx.trace(), &mut cx.store(), key, now);
    let (outcome, charge) = if cx.in_flush_second() {
        (DeleteOutcome::NotFound, larder_store::Charge::default())
    } else if let Some(inv) = invalidate {
        cx.store().invalidate_charged(key, now, cas, inv.exptime, inv.new_cas)
    } else {
        cx.store().delete_charged(key, now, cas)
    };
    let deleted = outcome == DeleteOutcome::Deleted;
    if deleted {
        cx.track_changed(key);
        // An invalidated item stays: memcached logs no deletion for it.
        if let (None, Some(cmd)) = (invalidate, via.logged_as()) {
            crate::trace::watch::after_delete(cx.trace(), key, cmd, prior);
        }
    }
    if invalidate.is_some() && deleted {
        cx.obs.resized(key, charge);
    }
    cx.obs.deleted(key, (deleted && invalidate.is_none()).then_some(charge.released));
    match outcome {
        DeleteOutcome::Deleted => bump(&cx.ws.delete_hits, 1),
        DeleteOutcome::NotFound => bump(&cx.ws.delete_misses, 1),
        // A CAS mismatch found the item: neither a hit nor a miss.
        DeleteOutcome::Exists => {}
    }
    outcome
}

/// `md … x`: what the emptied item becomes.
#[derive(Clone, Copy, Debug)]
pub struct Emptied {
    /// `F`: its client flags (0 when absent).
    pub flags: u32,
    /// `T`: its expiry (server time; 0 never), whatever the old one was.
    pub exptime: Time,
    /// `E`: its CAS; without it, the old item's CAS stays.
    pub new_cas: Option<u64>,
}

/// `md … x` (memcached 1.6.27): replace the item, if it exists (and its CAS
/// is `cas` when one is given), by an empty value with `to`'s flags and
/// expiry; then, with `invalidate` (`I`), mark it stale as [`delete`] does.
/// Counted as a delete hit (without `I`) or miss, like memcached.
///
/// Built from the store's writes: the item's CAS is read, then the empty
/// value is written only over that very version (a CAS store), so a write
/// that lands in between is not lost; the read is retried then.
pub fn empty_value(cx: &mut Ctx<'_>, key: &[u8], cas: Option<u64>, to: Emptied, invalidate: Option<Invalidate>) -> DeleteOutcome {
    cx.srv.note_write(key);
    let mut outcome = DeleteOutcome::NotFound;
    // Each retry means another client wrote the key meanwhile; three
    // in a row is a key under a write storm, answered as a CAS conflict.
    for _ in 0..3 {
        let Some((current, _)) = super::read::peek(cx, key) else {
            outcome = DeleteOutcome::NotFound;
            break;
        };
        if cas.is_some_and(|c| c != current) {
            outcome = DeleteOutcome::Exists;
            break;
        }
        let write = super::store::Write {
            mode: Mode::Cas(current),
            key,
            flags: to.flags,
            exptime: to.exptime,
            data: b"",
            opts: WriteOptions { new_cas: Some(to.new_cas.unwrap_or(current)), ..WriteOptions::default() },
        };
        outcome = match super::store::apply(cx, &write) {
            StoreResult::Stored(_) => DeleteOutcome::Deleted,
            StoreResult::NotFound => DeleteOutcome::NotFound,
            StoreResult::Exists => {
                outcome = DeleteOutcome::Exists;
                continue;
            }
            // No memory for even an empty item: nothing changed; the
            // client hears of a conflict and may retry.
            _ => DeleteOutcome::Exists,
        };
        break;
    }
    match outcome {
        DeleteOutcome::Deleted if invalidate.is_some() => return delete(cx, Via::Meta, key, None, invalidate),
        DeleteOutcome::Deleted => {
            bump(&cx.ws.delete_hits, 1);
            // memcached logs the emptied item that replaced the old one.
            cx.trace().log.deleted(key, DeleteCmd::Md, 0);
        }
        DeleteOutcome::NotFound => bump(&cx.ws.delete_misses, 1),
        DeleteOutcome::Exists => {}
    }
    outcome
}
