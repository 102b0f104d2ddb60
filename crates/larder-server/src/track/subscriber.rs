//! A subscriber as the tracker shares it ([`Sub`]: sid, mode, queue,
//! wake-up), the handle its stream connection owns ([`Subscriber`]: drains
//! the queue, answers `mn`, unsubscribes on drop) and the handle a data
//! connection holds after `track attach` ([`Attachment`]).

use super::charge::QueueMemory;
use super::queue::Queue;
use super::sync::{lock, AtomicBool, Mutex};
use super::tracker::Tracker;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::Arc;

/// How a subscriber's owner is told that its queue has something to send:
/// the worker that owns the stream connection (its `mio::Waker`; the
/// worker then calls [`Subscriber::take_ready`] on its stream sessions).
pub trait Wake: Send + Sync {
    fn wake(&self);
}

impl Wake for mio::Waker {
    fn wake(&self) {
        // A failed wake (the worker's poll is gone) leaves nothing to do:
        // the worker is stopping.
        let _ = mio::Waker::wake(self);
    }
}

/// The two modes of `track stream` (docs/near-cache.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The server remembers which keys the attached connections read.
    Tracking,
    /// Every change of a key starting with one of these is announced; an
    /// empty list is every key. Build with [`Mode::broadcast`].
    Broadcast(Vec<Box<[u8]>>),
}

/// At most this many prefixes, each 1..=250 bytes.
pub const MAX_PREFIXES: usize = 16;
pub const MAX_PREFIX_LEN: usize = 250;

impl Mode {
    /// Broadcast mode for `prefixes`, checked (count and lengths).
    pub fn broadcast<P: AsRef<[u8]>>(prefixes: &[P]) -> Result<Mode, &'static str> {
        if prefixes.len() > MAX_PREFIXES {
            return Err("too many prefixes");
        }
        let mut v = Vec::with_capacity(prefixes.len());
        for p in prefixes {
            let p = p.as_ref();
            if p.is_empty() || p.len() > MAX_PREFIX_LEN {
                return Err("bad prefix length");
            }
            v.push(Box::from(p));
        }
        Ok(Mode::Broadcast(v))
    }
}

/// What the tracker keeps of one subscriber.
pub struct Sub {
    pub(super) sid: u64,
    pub(super) mode: Mode,
    /// False once its stream closed: reads stop registering.
    pub(super) alive: AtomicBool,
    /// Mirrors the queue's `lost` (LOST queued, not yet handed out), so a
    /// registration can skip a lost subscriber without its queue lock.
    pub(super) lost: AtomicBool,
    /// Its queue overflowed and its table entries wait to be dropped.
    pub(super) needs_purge: AtomicBool,
    pub(super) queue: Mutex<Queue>,
    ready: AtomicBool,
    waker: Option<Arc<dyn Wake>>,
}

impl Sub {
    pub(super) fn new(sid: u64, mode: Mode, stream_bytes: usize, memory: Arc<QueueMemory>, waker: Option<Arc<dyn Wake>>) -> Sub {
        Sub {
            sid,
            mode,
            alive: AtomicBool::new(true),
            lost: AtomicBool::new(false),
            needs_purge: AtomicBool::new(false),
            queue: Mutex::new(Queue::charged(stream_bytes, memory)),
            ready: AtomicBool::new(false),
            waker,
        }
    }

    pub(super) fn tracking(&self) -> bool {
        self.mode == Mode::Tracking
    }

    /// Broadcast mode and `key` is under one of its prefixes.
    #[inline]
    pub(super) fn announces(&self, key: &[u8]) -> bool {
        match &self.mode {
            Mode::Broadcast(p) => p.is_empty() || p.iter().any(|p| key.starts_with(p)),
            Mode::Tracking => false,
        }
    }

    /// Something was queued: tell the owner once until it looks.
    pub(super) fn notify(&self) {
        if !self.ready.swap(true, AcqRel) {
            if let Some(w) = &self.waker {
                w.wake();
            }
        }
    }
}

/// The stream connection's handle (`track stream` answered `OK <sid>`).
/// Dropping it unsubscribes: reads stop registering, the subscriber's table
/// entries are dropped and its sid is never used again.
pub struct Subscriber {
    pub(super) tracker: Arc<Tracker>,
    pub(super) sub: Arc<Sub>,
}

impl Subscriber {
    /// The sid to answer `OK <sid>` with.
    pub fn sid(&self) -> u64 {
        self.sub.sid
    }

    /// Whether the queue may have something to send since the last call
    /// (the worker calls this when woken, then drains). Clears the flag:
    /// a push after this call wakes the owner again.
    pub fn take_ready(&self) -> bool {
        self.sub.ready.swap(false, AcqRel)
    }

    /// `mn`: queue `MN` after every push queued before it.
    pub fn push_mn(&self) {
        lock(&self.sub.queue).push_mn();
        self.sub.notify();
    }

    /// Move up to `max` bytes of whole lines to `out` (the connection's
    /// output buffer); the bytes moved. Call after [`take_ready`]
    /// (Self::take_ready), and again while it moves `max` bytes.
    pub fn drain_into(&self, out: &mut Vec<u8>, max: usize) -> usize {
        let mut q = lock(&self.sub.queue);
        let n = q.drain_into(out, max);
        // LOST handed out: reads register again (before the client can
        // have read it, since the bytes have not been written yet).
        if n > 0 && !q.lost() {
            self.sub.lost.store(false, Release);
        }
        n
    }

    /// Bytes waiting. While this is over the stream bound the driver reads
    /// no more requests from the stream connection (so `mn`s cannot pile
    /// up past the bound).
    pub fn pending_bytes(&self) -> usize {
        lock(&self.sub.queue).len()
    }

    /// Whether queued pushes can go out now (some are queued, and no
    /// `LOST` is waiting for its table entries to be dropped: that purge
    /// wakes the owner when it is done).
    pub fn drainable(&self) -> bool {
        let q = lock(&self.sub.queue);
        !q.is_empty() && !q.purge_pending()
    }

    /// Whether the stream driver should stop reading requests for now.
    pub fn over_bound(&self) -> bool {
        self.pending_bytes() > self.tracker.limits().stream_bytes
    }

    /// Capacity of the queue's buffer (tests: memory stays within bound).
    pub fn queue_capacity(&self) -> usize {
        lock(&self.sub.queue).capacity()
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.tracker.unsubscribe(&self.sub);
    }
}

/// A data connection's `track attach <sid> [noloop]`.
#[derive(Clone)]
pub struct Attachment {
    pub(super) sub: Arc<Sub>,
    pub(super) noloop: bool,
}

impl Attachment {
    pub fn sid(&self) -> u64 {
        self.sub.sid
    }

    /// What to pass as `origin` to [`Tracker::invalidate`] for a write on
    /// this connection: the sid with `noloop`, else `None`.
    #[inline]
    pub fn origin(&self) -> Option<u64> {
        self.noloop.then_some(self.sub.sid)
    }

    /// Whether reads on this connection register (tracking mode, stream
    /// still open). Check before [`Tracker::before_read`] to skip the
    /// hash for broadcast attachments.
    #[inline]
    pub fn registers(&self) -> bool {
        self.sub.tracking() && self.sub.alive.load(Relaxed)
    }

    /// Whether the subscriber's stream is still open.
    pub fn alive(&self) -> bool {
        self.sub.alive.load(Acquire)
    }
}
