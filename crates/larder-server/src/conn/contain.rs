//! Failure containment: a panic while serving one connection ends that
//! connection, not the server.
//!
//! A panic is a bug: bad input gets memcached's error reply, and every
//! length a client sends is checked before it is used. But one bug reachable
//! from the network must not become an outage (a 124-byte binary header once
//! stopped the whole server). So the worker runs each connection's event
//! inside [`contain`]: when it unwinds, the worker counts it
//! (`larder_conn_panics`), closes that connection and goes on serving its
//! others. What the dead connection held is given back by drop: its buffers'
//! charge to the connection budget (`conn::session`'s `Charge`, and
//! `connmem::output::Output`'s own), a value it was receiving into the store
//! (`larder_store::Landing`), the large values it had pinned for sending,
//! and a parked coalescing ticket (the worker's `close`). The store's locks
//! recover from poisoning and a store operation never leaves an item half
//! written in the index, so the data other connections read is intact.
//!
//! What is not contained: a panic in the worker's own loop outside a
//! connection's event (polling, adopting, sweeping), or in the acceptor.
//! Those stop the server (`larder: worker N panicked`), since a listener
//! that hands connections to a thread that no longer serves them is worse
//! than a restart.
//!
//! Each panic is logged once on stderr, with its backtrace the first time a
//! place panics (later panics at the same place get one line each: a
//! client that repeats a crashing request cannot flood the log with
//! backtraces).
//!
//! Tests reach a panic through [`inject_panic_on`], a hook that only Rust
//! code linking this library can arm (no flag, variable or request does),
//! and that costs one relaxed load per connection event while disarmed.

use std::backtrace::Backtrace;
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, Once};

/// Places whose backtrace was printed (bounded: past this many, every new
/// place gets the one-line form too).
const TRACED_PLACES: usize = 64;

static HOOK: Once = Once::new();
static TRACED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Install the panic hook that logs larder's threads' panics (once per
/// process; a library user's own threads keep the hook they had).
pub fn install_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            match thread.name() {
                Some(name) if name.starts_with("larder-") => log_panic(name, info),
                _ => previous(info),
            }
        }));
    });
}

fn log_panic(thread: &str, info: &PanicHookInfo<'_>) {
    let place = info.location().map_or_else(|| "an unknown place".to_string(), |l| l.to_string());
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    let first = {
        let mut traced = TRACED.lock().unwrap_or_else(|p| p.into_inner());
        let first = traced.len() < TRACED_PLACES && !traced.contains(&place);
        if first {
            traced.push(place.clone());
        }
        first
    };
    if first {
        eprintln!("larder: BUG: {thread} panicked at {place}: {message}\n{}", Backtrace::force_capture());
    } else {
        eprintln!("larder: BUG: {thread} panicked at {place}: {message} (backtrace logged before)");
    }
}

/// Run `f`; `None` if it panicked (already logged by the hook).
#[inline]
pub fn contain<R>(f: impl FnOnce() -> R) -> Option<R> {
    // Unwind safety: the caller discards what `f` was working on (the
    // connection) and everything else `f` can reach is either the worker's
    // own counters or shared state behind poison-recovering locks.
    panic::catch_unwind(AssertUnwindSafe(f)).ok()
}

static ARMED: AtomicBool = AtomicBool::new(false);
static TRIGGER: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Tests only: make the next connection event whose read buffer holds
/// `trigger` panic (after the event's work, so whatever the connection
/// holds then is what its close must give back); `None` disarms. Global to
/// the process: tests that arm it run in a process of their own.
#[doc(hidden)]
pub fn inject_panic_on(trigger: Option<&[u8]>) {
    let mut t = TRIGGER.lock().unwrap_or_else(|p| p.into_inner());
    t.clear();
    if let Some(bytes) = trigger {
        t.extend_from_slice(bytes);
    }
    ARMED.store(trigger.is_some(), Relaxed);
}

/// Panic if a test armed [`inject_panic_on`] with bytes that `seen` holds.
#[inline]
pub fn injected_panic(seen: &[u8]) {
    if ARMED.load(Relaxed) {
        check_trigger(seen);
    }
}

#[cold]
fn check_trigger(seen: &[u8]) {
    let hit = {
        let t = TRIGGER.lock().unwrap_or_else(|p| p.into_inner());
        !t.is_empty() && seen.windows(t.len()).any(|w| w == t.as_slice())
    };
    if hit {
        panic!("panic injected by a test (conn::contain::inject_panic_on)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contain_turns_a_panic_into_none_and_passes_values_through() {
        assert_eq!(contain(|| 7), Some(7));
        let caught: Option<()> = contain(|| panic!("boom"));
        assert_eq!(caught, None);
    }
}
