//! Deletes: `delete` (text), `md` (meta, with `C` and `I`), `DELETE` and
//! `DELETEQ` (binary, with a CAS).
//!
//! A delete of any kind ends the key's grace round, so the next expiry
//! starts a new one at once. Under `-C`, keys hidden by the flush second
//! are not found. `md … I` (invalidate) keeps the item, marked stale: to
//! the per-prefix accounting that is a possible resize (the stale copy may
//! store its CAS), not a removal.

use super::Ctx;
use crate::counters::bump;
use larder_store::{DeleteOutcome, Time};

/// `md … I`: mark stale instead of removing.
#[derive(Clone, Copy, Debug)]
pub struct Invalidate {
    /// `T`: the stale item's new expiry (server time).
    pub exptime: Option<Time>,
    /// `E`: the CAS the stale item gets.
    pub new_cas: Option<u64>,
}

/// Delete `key`, only if its CAS is `cas` when one is given.
pub fn delete(cx: &mut Ctx<'_>, key: &[u8], cas: Option<u64>, invalidate: Option<Invalidate>) -> DeleteOutcome {
    let srv = cx.srv;
    let now = cx.now;
    srv.note_write(key);
    crate::trace::watch::fetch_first(cx.trace(), &mut cx.store(), key, now);
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
