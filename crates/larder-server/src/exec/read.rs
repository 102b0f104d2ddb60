//! Reads: `get gets gat gats` (text), `GET`/`GAT` and their quiet and
//! key-echoing forms (binary), `mg` and `me` (meta).
//!
//! The rules every protocol's read follows, decided only here:
//! * Under `-C`, the second of an immediate `flush_all` hides every item
//!   ([`Ctx::in_flush_second`]).
//! * Grace mode (`-o grace`) serves an expired value to plain readers
//!   (text `get`/`gets`, binary `GET`…), except to the one reader chosen to
//!   refill it, who is told it missed. Reads that touch (`gat`) never see
//!   stale values. Meta `mg` is not graced: the meta protocol has its own,
//!   explicit stale-while-revalidate (`N`, `R`, `W`/`X`/`Z`), and a meta
//!   client must see the store's truth to use it.
//! * Coalesced cold misses (`-o coalesce`): a plain read of an absent key
//!   in grace's scope, while another client refills it, is parked instead
//!   of answered ([`Read::Parked`]); the connection runs it again when the
//!   key is written or the window ends (`stampede::coalesce`).
//! * The hit's bytes are encoded by the front end's closure under the
//!   store's shard lock (no copy); a winner's stale value is never encoded.

use super::{Ctx, Parking};
use crate::stampede::coalesce::ColdVerdict;
use crate::stampede::grace::Verdict;
use crate::counters::bump;
use larder_store::{item_bytes, Item, Lookup, MetaGet, MetaItem, Time};

/// What one key of a get-family read came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    Hit,
    /// The caller answers the miss.
    Miss,
    /// Nothing is answered: the request waits for another client's refill
    /// (`-o coalesce`; the ticket is in `cx.ticket`) and runs again.
    Parked,
}

/// One key of a get-family read; `touch`: the new expiry of a `gat`.
/// `encode` writes a hit (with the CAS the client may see).
pub fn read(cx: &mut Ctx<'_>, key: &[u8], touch: Option<Time>, encode: impl FnOnce(&Item<'_>, u64)) -> Read {
    let srv = cx.srv;
    let now = cx.now;
    let visible = |cas: u64| super::cas_shown(srv, cas);
    // (value length, item bytes) of a hit, for the observer and watch.
    let sizes = |item: &Item<'_>| (item.value.len(), item_bytes(key.len(), item.value.len(), item.flags));
    let grace = if touch.is_none() { srv.settings().grace.for_key(key) } else { 0 };
    // Coalescing covers grace's keys, for plain reads on a connection; a
    // request that already waited once answers what it finds now.
    let conn = match cx.parking {
        Parking::Allowed(conn) if grace > 0 && srv.stampede().coalescer.enabled() => Some(conn),
        Parking::Retry(conn) => {
            cx.parking = Parking::Allowed(conn);
            None
        }
        _ => None,
    };
    let seen = conn.map(|conn| (conn, srv.stampede().coalescer.before_lookup(key)));
    let snap = cx.track_before(key);
    let mut refills = false;
    let found = if cx.in_flush_second() {
        Lookup::Flushed
    } else if grace > 0 {
        let (found, winner) = graced(cx, key, grace, encode);
        refills = winner;
        found
    } else {
        let write = |item: &Item<'_>| {
            encode(item, visible(item.cas));
            sizes(item)
        };
        match touch {
            None => cx.store().get(key, now, write),
            Some(exp) => cx.store().get_and_touch(key, now, exp, write),
        }
    };
    if let (Some((conn, seen)), false, false) = (seen, refills, matches!(found, Lookup::Hit(_))) {
        if let ColdVerdict::Park(ticket) = srv.stampede().coalescer.on_miss(key, conn, seen, std::time::Instant::now()) {
            // Counted when it runs again, as the hit or miss it then is.
            cx.ticket = Some(ticket);
            return Read::Parked;
        }
    }
    bump(&cx.ws.cmd_get, 1);
    crate::trace::watch::fetched(cx.trace(), key, &found, |h| Some(h.0));
    let ws = cx.ws;
    match &found {
        Lookup::Hit((vlen, bytes)) => {
            cx.obs.get(key, Some(*vlen), now);
            if let Some(exp) = touch {
                cx.obs.touched(key, *bytes, now, exp);
            }
        }
        _ => cx.obs.get(key, None, now),
    }
    let hit = matches!(found, Lookup::Hit(_));
    if hit {
        if touch.is_some() {
            cx.track_changed(key);
        }
        cx.track_hit(snap, key);
    }
    if touch.is_some() {
        bump(&ws.cmd_touch, 1);
        bump(if hit { &ws.touch_hits } else { &ws.touch_misses }, 1);
    } else if hit {
        bump(&ws.get_hits, 1);
    } else {
        bump(&ws.get_misses, 1);
        match found {
            Lookup::Expired => bump(&ws.get_expired, 1),
            Lookup::Flushed => bump(&ws.get_flushed, 1),
            _ => {}
        }
    }
    if hit {
        Read::Hit
    } else {
        Read::Miss
    }
}

/// A read under grace mode. The stale-or-not decision and the winner
/// election happen under the shard lock, before anything is encoded, so a
/// winner's reply never carries the stale value. True with the lookup when
/// this reader was chosen to refill a value in grace.
fn graced(cx: &mut Ctx<'_>, key: &[u8], grace: Time, encode: impl FnOnce(&Item<'_>, u64)) -> (Lookup<(usize, u64)>, bool) {
    let srv = cx.srv;
    let now = cx.now;
    let mut verdict = None;
    let found = cx.store().get_graced(key, now, grace, |item, stale| {
        if stale {
            let v = srv.stampede().winners.on_stale_read(key, now, srv.settings().grace.lease);
            let serve = v == Verdict::Serve;
            verdict = Some(v);
            if !serve {
                return None;
            }
        }
        encode(item, super::cas_shown(srv, item.cas));
        Some((item.value.len(), item_bytes(key.len(), item.value.len(), item.flags)))
    });
    match verdict {
        Some(Verdict::Serve) => bump(&cx.ws.grace_hits, 1),
        Some(Verdict::WinAfterTimeout) => {
            bump(&cx.ws.grace_wins, 1);
            bump(&cx.ws.grace_winner_timeouts, 1);
        }
        Some(Verdict::Win) => bump(&cx.ws.grace_wins, 1),
        None => {}
    }
    match found {
        Lookup::Hit(Some(sizes)) => (Lookup::Hit(sizes), false),
        // This reader refills: to it the key missed (as expired).
        Lookup::Hit(None) => (Lookup::Expired, true),
        Lookup::Miss => (Lookup::Miss, false),
        Lookup::Expired => (Lookup::Expired, false),
        Lookup::Flushed => (Lookup::Flushed, false),
    }
}

/// What a meta get found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaRead {
    Hit,
    /// The key was missing and `N` created it (a miss that returns an item).
    Created,
    /// A miss; the caller answers it.
    Miss,
}

/// `mg`: a read with the meta protocol's options (see [`MetaGet`]).
/// `encode` writes the item (hit or vivified) under the shard lock, with the
/// CAS the client may see.
pub fn meta_get(cx: &mut Ctx<'_>, key: &[u8], opts: &MetaGet, encode: impl FnOnce(&MetaItem<'_>, u64)) -> MetaRead {
    let now = cx.now;
    let srv = cx.srv;
    let ws = cx.ws;
    bump(&ws.cmd_get, 1);
    if opts.touch.is_some() {
        bump(&ws.cmd_touch, 1);
    }
    let snap = cx.track_before(key);
    let found = if cx.in_flush_second() {
        Lookup::Flushed
    } else {
        cx.store().meta_get(key, now, opts, |m| {
            encode(m, super::cas_shown(srv, m.item.cas));
            (m.created, m.item.value.len(), m.size)
        })
    };
    // A vivified item (N) was a miss.
    crate::trace::watch::fetched(cx.trace(), key, &found, |h| (!h.0).then_some(h.1));
    match found {
        Lookup::Hit((true, _, bytes)) => {
            cx.obs.get(key, None, now);
            cx.obs.created(key, bytes, now, opts.vivify.unwrap_or(0));
            bump(&ws.get_misses, 1);
            // A placeholder the client is about to fill: announced, never
            // registered (it is not the value).
            cx.track_changed(key);
            MetaRead::Created
        }
        Lookup::Hit((false, vlen, bytes)) => {
            cx.obs.get(key, Some(vlen), now);
            bump(&ws.get_hits, 1);
            if let Some(exp) = opts.touch {
                cx.obs.touched(key, bytes, now, exp);
                bump(&ws.touch_hits, 1);
                cx.track_changed(key);
            }
            cx.track_hit(snap, key);
            MetaRead::Hit
        }
        miss => {
            cx.obs.get(key, None, now);
            bump(&ws.get_misses, 1);
            match miss {
                Lookup::Expired => bump(&ws.get_expired, 1),
                Lookup::Flushed => bump(&ws.get_flushed, 1),
                _ => {}
            }
            if opts.touch.is_some() {
                bump(&ws.touch_misses, 1);
            }
            MetaRead::Miss
        }
    }
}

/// `me`: what the store knows about one item, without counting an access.
/// Returns whether it was there.
pub fn inspect(cx: &mut Ctx<'_>, key: &[u8], encode: impl FnOnce(&MetaItem<'_>)) -> bool {
    let found = if cx.in_flush_second() {
        Lookup::Flushed
    } else {
        let opts = MetaGet { bump: false, ..MetaGet::default() };
        let now = cx.now;
        cx.store().meta_get(key, now, &opts, |m| {
            encode(m);
            m.item.value.len()
        })
    };
    crate::trace::watch::fetched(cx.trace(), key, &found, |n| Some(*n));
    matches!(found, Lookup::Hit(_))
}

/// A live item's CAS and value length, for commands that build on what is
/// there (`ms … s` after an append, `md … x`): no access is counted, no
/// LRU bump, nothing logged. `None` when absent (or hidden by a `-C` flush
/// second).
pub fn peek(cx: &mut Ctx<'_>, key: &[u8]) -> Option<(u64, usize)> {
    if cx.in_flush_second() {
        return None;
    }
    let opts = MetaGet { bump: false, ..MetaGet::default() };
    let now = cx.now;
    match cx.store().meta_get(key, now, &opts, |m| (m.item.cas, m.item.value.len())) {
        Lookup::Hit(found) => Some(found),
        _ => None,
    }
}
