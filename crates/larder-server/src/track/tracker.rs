//! The tracker: subscribers, the sharded tracking table and the per-key
//! write generations that close the read/write race (module docs of
//! `track`). Shared by every worker; the server will own one.

use super::charge::QueueMemory;
use super::limits::Limits;
use super::queue::{Pushed, Queue};
use super::stats::{self, Counters, TrackStats};
use super::subscriber::{Attachment, Mode, Sub, Subscriber, Wake};
use super::sync::{lock, AtomicU32, AtomicU64, AtomicUsize, Mutex, RwLock};
use super::table::{Registered, Shard};
#[cfg(not(larder_loom))]
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::Arc;

/// Table shards (each its own lock and a 1/SHARDS share of the limit).
#[cfg(not(larder_loom))]
pub const SHARDS: usize = 16;
#[cfg(larder_loom)]
pub const SHARDS: usize = 2;
/// Write-generation slots (a key's slot: bits of its hash).
#[cfg(not(larder_loom))]
const GENS: usize = 4096;
#[cfg(larder_loom)]
const GENS: usize = 2;

/// The keyed hash of keys (std's SipHash with random keys: a client
/// cannot choose keys that share a chain or a shard). Under loom a fixed
/// key: a model must take the same path each time it is run.
#[cfg(not(larder_loom))]
type KeyHasher = RandomState;
#[cfg(larder_loom)]
type KeyHasher = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

/// What a read saw before its store lookup: hand it back to
/// [`Tracker::register_read`] after the lookup hit.
#[derive(Clone, Copy, Debug)]
pub struct ReadSnap {
    hash: u64,
    gen: u32,
}

#[cfg(test)]
impl ReadSnap {
    pub(super) fn hash_for_tests(&self) -> u64 {
        self.hash
    }
}

pub struct Tracker {
    /// Live subscribers of both modes: the one relaxed load a server
    /// without subscribers pays per write.
    active: AtomicUsize,
    /// Of those, tracking-mode (the table is looked at only if any).
    tracking: AtomicUsize,
    /// Of those, broadcast-mode.
    bcast_n: AtomicUsize,
    subs: RwLock<HashMap<u64, Arc<Sub>, KeyHasher>>,
    bcast: RwLock<Vec<Arc<Sub>>>,
    shards: Box<[Mutex<Shard>]>,
    gens: Box<[AtomicU32]>,
    hasher: KeyHasher,
    next_sid: AtomicU64,
    /// Subscribers whose overflow waits for its table entries to go.
    purges: AtomicUsize,
    limits: Limits,
    /// The subscribers' queues' bytes, charged to the connection budget.
    queue_memory: Arc<QueueMemory>,
    counters: Counters,
    /// Calls that went past the fast path (tests: none without
    /// subscribers).
    #[cfg(test)]
    pub(super) slow_calls: std::sync::atomic::AtomicU64,
}

impl Tracker {
    /// A tracker whose queues are counted but charged to no budget (tests).
    pub fn new(limits: Limits) -> Tracker {
        Tracker::charged(limits, Arc::default())
    }

    /// A tracker whose subscribers' queues are charged to `memory`
    /// (the server's: [`QueueMemory::charged_to`] its connection budget).
    pub fn charged(limits: Limits, queue_memory: Arc<QueueMemory>) -> Tracker {
        let per_shard = limits.table_bytes / SHARDS;
        Tracker {
            active: AtomicUsize::new(0),
            tracking: AtomicUsize::new(0),
            bcast_n: AtomicUsize::new(0),
            subs: RwLock::new(HashMap::with_hasher(KeyHasher::default())),
            bcast: RwLock::new(Vec::new()),
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::new(per_shard))).collect(),
            gens: (0..GENS).map(|_| AtomicU32::new(0)).collect(),
            hasher: KeyHasher::default(),
            next_sid: AtomicU64::new(0),
            purges: AtomicUsize::new(0),
            limits,
            queue_memory,
            counters: Counters::default(),
            #[cfg(test)]
            slow_calls: Default::default(),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// `stats` figures.
    pub fn stats(&self) -> TrackStats {
        let mut s = self.counters.snapshot(self.limits.table_bytes);
        s.track_queue_bytes = self.queue_memory.bytes() as u64;
        s
    }

    #[cfg(test)]
    fn slow(&self) {
        self.slow_calls.fetch_add(1, Relaxed);
    }
    #[cfg(not(test))]
    #[inline(always)]
    fn slow(&self) {}

    // ---------------------------------------------------------------------
    // Subscribers.

    /// `track stream [bcast <prefix>...]`: a new subscriber, woken through
    /// `waker` when it has output. Its sid is never reused.
    pub fn subscribe(self: &Arc<Self>, mode: Mode, waker: Option<Arc<dyn Wake>>) -> Subscriber {
        let sid = self.next_sid.fetch_add(1, Relaxed) + 1;
        let sub = Arc::new(Sub::new(sid, mode, self.limits.stream_bytes, self.queue_memory.clone(), waker));
        self.subs.write().unwrap_or_else(|e| e.into_inner()).insert(sid, sub.clone());
        if sub.tracking() {
            self.tracking.fetch_add(1, Relaxed);
        } else {
            self.bcast.write().unwrap_or_else(|e| e.into_inner()).push(sub.clone());
            self.bcast_n.fetch_add(1, Relaxed);
        }
        // Last: a writer that sees the count finds the subscriber listed.
        self.active.fetch_add(1, Release);
        stats::add(&self.counters.subscribers, 1);
        Subscriber { tracker: self.clone(), sub }
    }

    pub(super) fn unsubscribe(&self, sub: &Arc<Sub>) {
        sub.alive.store(false, Release);
        self.active.fetch_sub(1, Relaxed);
        self.subs.write().unwrap_or_else(|e| e.into_inner()).remove(&sub.sid);
        if sub.tracking() {
            self.tracking.fetch_sub(1, Relaxed);
        } else {
            self.bcast.write().unwrap_or_else(|e| e.into_inner()).retain(|s| !Arc::ptr_eq(s, sub));
            self.bcast_n.fetch_sub(1, Relaxed);
        }
        stats::sub(&self.counters.subscribers, 1);
        // Its queue's memory goes back to the budget now, not when the
        // last attachment lets go of the subscriber.
        lock(&sub.queue).close();
        if sub.needs_purge.swap(false, AcqRel) {
            self.purges.fetch_sub(1, Relaxed);
        }
        if sub.tracking() {
            self.drop_entries(sub.sid);
        }
    }

    /// `track attach <sid> [noloop]`; `None`: unknown subscriber (or its
    /// stream closed).
    pub fn attach(&self, sid: u64, noloop: bool) -> Option<Attachment> {
        let subs = self.subs.read().unwrap_or_else(|e| e.into_inner());
        let sub = subs.get(&sid).filter(|s| s.alive.load(Acquire))?.clone();
        Some(Attachment { sub, noloop })
    }

    // ---------------------------------------------------------------------
    // Reads.

    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    fn shard_of(hash: u64) -> usize {
        ((hash >> 48) as usize) % SHARDS
    }

    fn gen_of(&self, hash: u64) -> &AtomicU32 {
        &self.gens[((hash >> 32) as usize) & (GENS - 1)]
    }

    /// Before a read on a registering attachment looks `key` up in the
    /// store. Writes bump the key's generation before they look at the
    /// table; a registration whose key's generation moved since this
    /// snapshot queues `IV` at once instead of registering, because the
    /// write may have looked at the table before the registration and the
    /// value read may be the old one.
    #[inline]
    pub fn before_read(&self, key: &[u8]) -> ReadSnap {
        let hash = self.hash(key);
        ReadSnap { hash, gen: self.gen_of(hash).load(Acquire) }
    }

    /// A read on `att` returned `key` (call before its reply is written,
    /// with the snapshot taken before the lookup). Registers (key, sid);
    /// does nothing for broadcast attachments, closed streams and a
    /// subscriber whose `LOST` is still queued (the client drops every
    /// pending read when it reads `LOST`).
    pub fn register_read(&self, att: &Attachment, snap: ReadSnap, key: &[u8]) {
        let sub = &att.sub;
        if !att.registers() || sub.lost.load(Acquire) {
            return;
        }
        self.slow();
        debug_assert_eq!(snap.hash, self.hash(key), "snapshot of another key");
        let mut invalidate_now = false;
        {
            let mut shard = self.shard(Self::shard_of(snap.hash));
            let moved = self.gen_of(snap.hash).load(Relaxed) != snap.gen;
            #[cfg(larder_loom)]
            let moved = moved && !super::sync::flaw::on(super::sync::flaw::Flaw::RegisterIgnoresGeneration);
            if moved {
                invalidate_now = true;
            } else {
                let r = shard.with(|s| {
                    s.register(snap.hash, key, sub.sid, |old| {
                        stats::add(&self.counters.evictions, 1);
                        self.send_iv(old.key(), old.sids.iter(), None);
                    })
                });
                match r {
                    Registered::Added => stats::add(&self.counters.registrations, 1),
                    Registered::Already => {}
                    // Cannot be tracked (limit 0, or smaller than one
                    // entry): never tracked-but-forgotten, so invalidate.
                    Registered::TooBig => invalidate_now = true,
                }
            }
        }
        if invalidate_now {
            self.push_iv(sub, key);
        }
        self.run_purges();
    }

    // ---------------------------------------------------------------------
    // Writes.

    /// `key`'s value or lifetime changed: queue `IV key` to every
    /// subscriber tracking it (consuming their registrations) and every
    /// broadcast subscriber whose prefix matches, except `origin` (a
    /// `noloop` attachment's sid). Call after the store changed and before
    /// the writer's reply. Without subscribers: one relaxed load.
    #[inline]
    pub fn invalidate(&self, key: &[u8], origin: Option<u64>) {
        if self.active.load(Relaxed) == 0 {
            return;
        }
        self.invalidate_slow(key, origin);
    }

    #[inline(never)]
    fn invalidate_slow(&self, key: &[u8], origin: Option<u64>) {
        self.slow();
        if self.tracking.load(Relaxed) > 0 {
            let hash = self.hash(key);
            let gen = self.gen_of(hash);
            #[cfg(larder_loom)]
            let late = super::sync::flaw::on(super::sync::flaw::Flaw::BumpAfterLookup);
            #[cfg(not(larder_loom))]
            let late = false;
            if !late {
                gen.fetch_add(1, Release);
            }
            // The IVs are queued before the shard lock is let go: a second
            // write of the key that finds the entry gone must not be
            // acknowledged before the first write's IV is queued (the
            // client would read its stream after that acknowledgement and
            // still hold the old value).
            let mut shard = self.shard(Self::shard_of(hash));
            if let Some(e) = shard.with(|s| s.remove(hash, key)) {
                self.send_iv(key, e.sids.iter(), origin);
            }
            drop(shard);
            if late {
                gen.fetch_add(1, Release);
            }
        }
        if self.bcast_n.load(Relaxed) > 0 {
            let bcast = self.bcast.read().unwrap_or_else(|e| e.into_inner());
            for sub in bcast.iter() {
                if Some(sub.sid) != origin && sub.announces(key) {
                    self.push_iv(sub, key);
                }
            }
        }
        self.run_purges();
    }

    /// `flush_all`: every subscriber gets `IA` and every tracking entry
    /// goes. Without subscribers: one relaxed load.
    ///
    /// All shard locks are held (taken in index order, the only place that
    /// holds more than one) while `IA` is queued and the table cleared, so
    /// that no write can find an entry gone and be acknowledged before `IA`
    /// is queued, and no registration made after `IA` is queued (which the
    /// client may have read already) is cleared.
    pub fn invalidate_all(&self) {
        if self.active.load(Relaxed) == 0 {
            return;
        }
        self.slow();
        let mut shards: [Option<ShardGuard<'_>>; SHARDS] = std::array::from_fn(|_| None);
        for (i, g) in shards.iter_mut().enumerate() {
            *g = Some(self.shard(i));
        }
        let subs = self.subs.read().unwrap_or_else(|e| e.into_inner());
        for sub in subs.values() {
            self.push(sub, &self.counters.flushes, Queue::push_ia);
        }
        drop(subs);
        for g in shards.iter_mut().flatten() {
            g.with(|s| s.clear());
        }
        drop(shards);
        self.run_purges();
    }

    // ---------------------------------------------------------------------
    // Queues and purges.

    /// Queue `IV key` to each of `sids` but `origin`.
    fn send_iv(&self, key: &[u8], sids: impl Iterator<Item = u64>, origin: Option<u64>) {
        let subs = self.subs.read().unwrap_or_else(|e| e.into_inner());
        for sid in sids {
            if Some(sid) == origin {
                continue;
            }
            if let Some(sub) = subs.get(&sid) {
                self.push_iv(sub, key);
            }
        }
    }

    /// Queue `IV key` to `sub`.
    fn push_iv(&self, sub: &Sub, key: &[u8]) {
        self.push(sub, &self.counters.invalidations, |q| q.push_iv(key));
    }

    /// Apply `f` to `sub`'s queue, count what it did in `queued` (or as a
    /// loss), wake the owner.
    fn push(&self, sub: &Sub, queued: &std::sync::atomic::AtomicU64, f: impl FnOnce(&mut Queue) -> Pushed) {
        let mut q = lock(&sub.queue);
        match f(&mut q) {
            Pushed::Queued => stats::add(queued, 1),
            Pushed::Overflowed => {
                stats::add(&self.counters.lost, 1);
                sub.lost.store(true, Release);
                if sub.tracking() {
                    // Its entries go once no shard lock is held
                    // (`run_purges`); LOST waits for that.
                    if !sub.needs_purge.swap(true, AcqRel) {
                        self.purges.fetch_add(1, Release);
                    }
                } else {
                    q.set_purged();
                }
            }
            Pushed::Dropped => return,
        }
        drop(q);
        sub.notify();
    }

    /// Drop the table entries of every subscriber that overflowed, then
    /// let its `LOST` out. Called at the end of each slow-path call, with
    /// no lock held: a purge takes every shard lock in turn.
    fn run_purges(&self) {
        while self.purges.load(Acquire) > 0 {
            let next = {
                let subs = self.subs.read().unwrap_or_else(|e| e.into_inner());
                subs.values().find(|s| s.needs_purge.load(Relaxed)).cloned()
            };
            let Some(sub) = next else { return };
            if !sub.needs_purge.swap(false, AcqRel) {
                continue; // another thread claimed it
            }
            self.purges.fetch_sub(1, Relaxed);
            self.drop_entries(sub.sid);
            lock(&sub.queue).set_purged();
            sub.notify();
        }
    }

    /// Forget `sid` in every shard.
    fn drop_entries(&self, sid: u64) {
        for i in 0..SHARDS {
            self.shard(i).with(|s| s.drop_sid(sid));
        }
    }

    fn shard(&self, i: usize) -> ShardGuard<'_> {
        ShardGuard { shard: lock(&self.shards[i]), counters: &self.counters }
    }

    /// Recount the table from scratch and check it against the running
    /// counters (tests).
    #[cfg(test)]
    pub(super) fn audit(&self) -> (usize, usize) {
        let (mut n, mut bytes) = (0, 0);
        for s in self.shards.iter() {
            let s = lock(s);
            let (sn, sb) = s.recount();
            assert_eq!((sn, sb), (s.len(), s.bytes()), "a shard's running count is off");
            assert!(s.bytes() <= s.limit(), "a shard holds {} bytes over its limit {}", s.bytes(), s.limit());
            n += sn;
            bytes += sb;
        }
        let st = self.stats();
        assert_eq!((st.track_keys as usize, st.track_bytes as usize), (n, bytes), "stats disagree with the table");
        (n, bytes)
    }
}

/// A locked shard whose edits keep `track_keys`/`track_bytes` current.
struct ShardGuard<'a> {
    shard: super::sync::MutexGuard<'a, Shard>,
    counters: &'a Counters,
}

impl ShardGuard<'_> {
    fn with<R>(&mut self, f: impl FnOnce(&mut Shard) -> R) -> R {
        let (n0, b0) = (self.shard.len(), self.shard.bytes());
        let r = f(&mut self.shard);
        let (n1, b1) = (self.shard.len(), self.shard.bytes());
        move_gauge(&self.counters.keys, n0, n1);
        move_gauge(&self.counters.bytes, b0, b1);
        r
    }
}

fn move_gauge(g: &std::sync::atomic::AtomicU64, old: usize, new: usize) {
    if new > old {
        stats::add(g, (new - old) as u64);
    } else {
        stats::sub(g, (old - new) as u64);
    }
}
