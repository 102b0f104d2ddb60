//! `touch` (text) and `TOUCH` (binary): set a live item's expiry.
//! (`gat` and meta `mg … T` touch as part of a read: see `read.rs`.)

use super::Ctx;
use crate::counters::bump;
use larder_store::{item_bytes, Lookup, Time};

/// What a touch found: the item's client flags and visible CAS.
#[derive(Clone, Copy, Debug)]
pub struct Touched {
    pub flags: u32,
    pub cas: u64,
}

/// Give `key` the expiry `exptime` (server time); `None` if it is not there.
pub fn touch(cx: &mut Ctx<'_>, key: &[u8], exptime: Time) -> Option<Touched> {
    let srv = cx.srv;
    let now = cx.now;
    bump(&cx.ws.cmd_touch, 1);
    let found = if cx.in_flush_second() {
        Lookup::Flushed
    } else {
        cx.store().get_and_touch(key, now, exptime, |item| {
            let touched = Touched { flags: item.flags, cas: super::cas_shown(srv, item.cas) };
            (touched, item_bytes(key.len(), item.value.len(), item.flags), item.value.len())
        })
    };
    crate::trace::watch::fetched(cx.trace(), key, &found, |h| Some(h.2));
    match found {
        Lookup::Hit((touched, bytes, _)) => {
            cx.obs.touched(key, bytes, now, exptime);
            bump(&cx.ws.touch_hits, 1);
            cx.track_changed(key);
            Some(touched)
        }
        _ => {
            bump(&cx.ws.touch_misses, 1);
            None
        }
    }
}
