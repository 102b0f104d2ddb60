//! `flush_all [delay]` (text) and `FLUSH`/`FLUSHQ` (binary).

use super::Ctx;
use crate::counters::bump;

/// `flush_all` was refused (`-F`).
#[derive(Debug)]
pub struct NotAllowed;

/// Invalidate every item, now (`delay <= 0`) or `delay` from now.
pub fn flush_all(cx: &mut Ctx<'_>, delay: i64) -> Result<(), NotAllowed> {
    let srv = cx.srv;
    if !srv.settings().flush_enabled {
        return Err(NotAllowed);
    }
    bump(&cx.ws.cmd_flush, 1);
    // memcached: with a delay, items stored up to one second before the
    // deadline are invalid once it passes.
    let at = if delay > 0 { cx.expiry(delay).saturating_sub(1) } else { cx.now };
    srv.flush_all(cx.now, at);
    Ok(())
}
