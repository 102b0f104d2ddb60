//! Writes: `set add replace append prepend cas` (text), `ms` (meta),
//! `SET ADD REPLACE APPEND PREPEND` and their quiet forms (binary).
//!
//! Every protocol's write is a [`Write`]: a store mode and the store's
//! [`WriteOptions`] (a CAS to compare, meta `I`/`b`/`E`). The rules, once:
//! * A failed `set` (too large, out of memory) drops the key's old value,
//!   as memcached does, so a client never reads back what it just tried to
//!   overwrite.
//! * A stored write ends the key's grace round (its winner is forgotten).
//! * `cmd_set` counts every write that reached the store, not the refused
//!   ones; `cas_*` count CAS stores (text `cas`, meta `ms … C` on a set or
//!   replace, binary stores with a CAS), not conditional appends.

use super::Ctx;
use crate::counters::bump;
use larder_observe::watch::StoreCmd;
use larder_store::{Mode, StoreResult, Time, WriteOptions};

/// One storage command in the store's terms.
pub struct Write<'a> {
    pub mode: Mode,
    pub key: &'a [u8],
    pub flags: u32,
    /// Server time (0: never).
    pub exptime: Time,
    pub data: &'a [u8],
    pub opts: WriteOptions,
}

impl Write<'_> {
    /// A compare-and-swap store (counted in `cas_*`, logged as `cmd=cas`).
    fn is_cas(&self) -> bool {
        matches!(self.mode, Mode::Cas(_)) || (matches!(self.mode, Mode::Set | Mode::Replace) && self.opts.cas.is_some())
    }
}

/// Execute a storage command.
#[inline]
pub fn store(cx: &mut Ctx<'_>, w: &Write<'_>) -> StoreResult {
    let result = apply(cx, w);
    count(cx, w, &result);
    result
}

/// `ms … MA N<ttl>` / `MP N<ttl>` (memcached 1.6.20, "autovivify"): append
/// (prepend) to the item, or, when there is none, store the data as a new
/// item with `w`'s flags and `create_exptime`. A `C` in `w.opts` is only
/// compared with an item that exists. Counted as one write.
///
/// Built from the store's own writes: append, then add on a miss; an add
/// that finds the key (another client created it in between) appends once
/// more, so the data always lands on an item.
pub fn append_or_create(cx: &mut Ctx<'_>, w: &Write<'_>, create_exptime: Time) -> StoreResult {
    debug_assert!(matches!(w.mode, Mode::Append | Mode::Prepend));
    let mut result = apply(cx, w);
    if matches!(result, StoreResult::NotStored | StoreResult::NotFound) {
        let create = Write {
            mode: Mode::Add,
            exptime: create_exptime,
            opts: WriteOptions { cas: None, ..w.opts },
            ..*w
        };
        result = apply(cx, &create);
        if result == StoreResult::NotStored {
            result = apply(cx, w);
        }
    }
    count(cx, w, &result);
    result
}

/// A write, its observers and its mutation log, without the counters (a
/// composite command counts once, [`count`]).
// Inlined into its callers (a storage command's one write, or a
// composite's two or three): a call per set otherwise.
#[inline(always)]
pub(super) fn apply(cx: &mut Ctx<'_>, w: &Write<'_>) -> StoreResult {
    let srv = cx.srv;
    let now = cx.now;
    let prior = crate::trace::watch::before_store(cx.trace(), &mut cx.store(), w.key, now, w.mode);
    let write = larder_store::Write { mode: w.mode, key: w.key, flags: w.flags, exptime: w.exptime, value: w.data, landed: cx.landed };
    let (result, charge) = cx.store().write(&write, now, &w.opts);
    let cmd = crate::trace::watch::store_cmd(w.mode, w.opts.cas.is_some());
    crate::trace::watch::after_store(cx.trace(), w.key, prior, cmd, &result, w.exptime, w.data.len(), now);
    match result {
        StoreResult::Stored(_) => {
            srv.note_write(w.key);
            cx.track_changed(w.key);
            cx.obs.stored(w.key, charge, now, w.exptime);
        }
        _ => cx.obs.set_failed(w.key),
    }
    result
}

/// The counters of one storage command whose outcome was `result`.
#[inline]
fn count(cx: &mut Ctx<'_>, w: &Write<'_>, result: &StoreResult) {
    let ws = cx.ws;
    match result {
        StoreResult::TooLarge => {
            bump(&ws.store_too_large, 1);
            drop_after_failed_set(cx, w.mode, w.key);
        }
        StoreResult::OutOfMemory => {
            bump(&ws.store_no_memory, 1);
            drop_after_failed_set(cx, w.mode, w.key);
        }
        _ => bump(&ws.cmd_set, 1),
    }
    if w.is_cas() {
        match result {
            StoreResult::Stored(_) => bump(&ws.cas_hits, 1),
            StoreResult::Exists => bump(&ws.cas_badval, 1),
            StoreResult::NotFound => bump(&ws.cas_misses, 1),
            _ => {}
        }
    }
}

/// A storage command refused before its data was read (the front end's
/// parser saw a length over `-I`): count it, log it, and drop the old value
/// of a `set` as a failed store would.
pub fn refuse_too_large(cx: &mut Ctx<'_>, key: &[u8], cmd: StoreCmd) {
    bump(&cx.ws.store_too_large, 1);
    let now = cx.now;
    crate::trace::watch::rejected_store(cx.trace(), &mut cx.store(), key, cmd, now);
    if cmd == StoreCmd::Set {
        drop_after_failed_set(cx, Mode::Set, key);
    }
}

/// memcached drops the old value when a `set` fails, so a client never
/// reads back data it just tried to overwrite. (The store already drops it
/// inside a failed set; this covers refusals before the store was asked.)
fn drop_after_failed_set(cx: &mut Ctx<'_>, mode: Mode, key: &[u8]) {
    if mode == Mode::Set {
        // reported as a departure (per-prefix bytes stay exact)
        let now = cx.now;
        cx.store().drop_after_failed_set(key, now);
        cx.srv.note_write(key);
        cx.track_changed(key);
    }
}
