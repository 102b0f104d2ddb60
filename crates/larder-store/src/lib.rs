//! larder-store: the storage engine (segments, index, expiry, eviction, CAS).
//!
//! No I/O and no wire bytes: the server converts protocol requests into calls
//! on [`Store`]. All time is passed in by the caller as [`Time`] (seconds on
//! the server's clock), so tests drive the store with a fake clock.
//!
//! `Store` is `Send + Sync`; worker threads call it directly. There is no
//! global lock on the request path.
//!
//! # Where things are
//!
//! The public face is [`ops`](crate::ops): every operation on [`Store`],
//! each request operation written once on [`Reporting`] (the store with a
//! caller's departure sink) and offered plain on `Store` with
//! [`Unreported`] as the sink. The modules it calls:
//!
//! * This file: [`Store`] and its request bodies (lookup, the write path,
//!   making room, evicting one segment), and the public value types
//!   ([`Item`], [`Lookup`], [`Mode`], [`Write`], [`StoreResult`],
//!   [`Stats`], [`Config`]).
//! * Core types of the interface: [`departures`](crate::departures) (the
//!   [`Departures`] sink and what it is told), [`charge`](crate::charge)
//!   (what a write or delete [`Charge`]d).
//! * Request bodies beyond get/set: [`conditional`](crate::conditional)
//!   (delete and incr/decr with a CAS; [`arith`](crate::arith) parses and
//!   formats the numbers), [`meta`](crate::meta) (meta gets, invalidation,
//!   grace).
//! * One shard and its parts: [`shard`](crate::shard), [`index`](crate::index),
//!   [`segment`](crate::segment), [`item`](crate::item) (the header bytes),
//!   [`ttl`](crate::ttl), [`written`](crate::written), [`hash`](crate::hash).
//! * Memory and eviction: [`pool`](crate::pool), [`evict`](crate::evict)
//!   (with `evict_tests`), [`ghost`](crate::ghost), [`large`](crate::large)
//!   (large objects, pins, [`Landing`]s).
//! * Reading for observability and replies: [`dump`](crate::dump) (shard
//!   walks for metadump), [`valueref`](crate::valueref) ([`ValueRef`]).
//! * Warm restart: [`snapshot`](crate::snapshot), [`crc32c`](crate::crc32c).
//! * [`sync`](crate::sync): the locks and atomics, swapped for loom's under
//!   `--cfg larder_loom`; `loom_model` (those builds only) hands the loom
//!   models the internals they drive.
//!
//! # Architecture
//!
//! Keys are hashed with a randomly keyed SipHash ([`hash`](crate::hash)).
//! The hash picks one of N shards (a power of two: up to 16 for
//! concurrency, fewer for small memory limits, more — up to 256 — for very
//! large ones so that no shard's index grows huge); each shard is a `Mutex` around its own index, its own
//! segments and its own open segments, one per TTL class in use
//! ([`shard`](crate::shard), [`ttl`](crate::ttl)). The global
//! [`pool`](crate::pool) holds the memory budget, spare segment buffers and
//! the generation counter; its lock is taken only when a shard needs a fresh
//! segment, i.e. once per segment's worth of writes. When the budget is
//! exhausted a shard evicts a whole segment chosen by the
//! [`evict`](crate::evict) policy (segment S3-FIFO: items that earned it
//! are copied to a main-queue segment, the rest die): from itself, or from
//! another shard it can `try_lock` (never a blocking second lock, so no
//! deadlock). A large object that finds no room that way (the shards that
//! could give it some are busy) is retried after making room with no lock
//! held, waiting for one shard at a time. Readers copy
//! out inside the `read` callback under the shard lock, so no segment can be
//! recycled under them; a large object's value may instead be pinned
//! ([`Item::pin`], [`large`](crate::large)) and outlive its place in the
//! store, still counted. A value in a regular segment may instead be named
//! by a [`ValueRef`] and copied out later, a piece at a time, as long as
//! its segment keeps its generation ([`valueref`](crate::valueref)).
//!
//! # Item layout (bytes in a segment)
//!
//! Items are packed back to back from offset 0 of a segment, no alignment,
//! no per-item allocation. All integers little-endian:
//!
//! ```text
//! offset  size   field
//! 0       1      control: bits 0-1 = value-length width - 1 (1..4 bytes),
//!                bit 2 = client flags present, bit 3 = fetched,
//!                bit 4 = stale, bit 5 = win token sent (meta protocol),
//!                bit 6 = key sent base64 (meta `b`), bit 7 = explicit
//!                CAS (meta `E`, or moved by eviction; such items use
//!                w >= 2, so 0xC0 alone is a one-byte pad, see below)
//! 1       1      key length (1..=250)
//! 2       w      value length (w = 1..4 bytes, smallest that fits)
//! 2+w     4      exptime (absolute server time, 0 = never; touch patches it)
//! 6+w     2      last access (server seconds mod 65536; fetches patch it)
//! 8+w     4      client flags, present only when non-zero
//! ..      8      explicit CAS, present only with bit 7
//! ..      klen   key
//! ..      vlen   value
//! ```
//!
//! Header: 9 bytes for values < 256 bytes without flags (10 up to 64 KiB,
//! +4 with flags). There is no next pointer and normally no CAS field: the
//! CAS of an item is `(segment generation << 24) | offset`, unique because every
//! segment installation draws a new generation from a global counter and an
//! offset within a generation is written once. CAS never repeats, so a CAS
//! can never be reused by a later mutation of the same key; and for every
//! key it only grows, like memcached's: a new version normally lands after
//! the old one (later in the same open segment, or in a newer one), and
//! when it would land in an older open segment — its key changed TTL class
//! — it stores a fresh CAS (a new generation) in the 8-byte field. Touch/gat
//! patch only the exptime and keep the CAS, as memcached does. An item that
//! eviction moves to another place (see [`evict`](crate::evict)) takes its
//! CAS along in an 8-byte field, so moving is invisible to clients.
//!
//! An item larger than a segment is a *large object*: a buffer of exactly
//! its size holding the same layout at offset 0, tracked like a segment
//! (it has an id, a generation and a place in the FIFO) and counted against
//! the memory limit. Its CAS is the (generation, offset) of a one-byte pad
//! (0xC0) appended to the shard's open segment at that moment, which keeps
//! CAS values growing; segment walks step over pads.
//!
//! # Index slot layout
//!
//! Each shard's index is a table of 64-byte buckets of eight 8-byte slots
//! ([`index`](crate::index)); a key has two candidate buckets (the second
//! derived from the first and the tag, as in partial-key cuckoo hashing) and
//! is inserted into the emptier one, moving entries aside when both are full. A slot (bit 63 most significant):
//!
//! ```text
//! 63..48  tag: the hash's top 16 bits, compared before reading any key
//! 47..28  segment id within the shard (1..2^20-1; 0 never used, so an
//!         occupied slot is never 0 and 0 means empty)
//! 27..4   byte offset of the item in the segment (segments <= 16 MiB)
//! 3..0    saturating access counter (for frequency-aware eviction)
//! ```
//!
//! A table has any number of buckets. It grows by a quarter at 31/32 load
//! (or when an insert finds no room even after cuckoo moves), and shrinks
//! to 85% load when a shard evicting finds it under ~57%; its bytes are
//! reserved from the same budget as segments (it evicts segments of its
//! shard to grow). Per item that is 8.2-10.3 bytes of index.
//!
//! # Expiry, flush, eviction
//!
//! Items are appended to the open segment of their TTL class, so items
//! that expire around the same time share segments ([`ttl`](crate::ttl)). A
//! segment records the latest expiry of anything written or touched in it;
//! once that has passed, the whole segment is free. Such segments are taken
//! before any live data whenever memory is needed, and
//! [`Store::reclaim_expired`] (the server's workers call it once a second)
//! frees them without waiting for pressure. Reads also check expiry lazily
//! (`now >= exptime`, exptime != 0) and remove the item. `flush_all` records (sequence, time) in one atomic word; each shard
//! applies it on its next operation once due, by remembering the highest
//! segment generation it holds (all items in segments up to that generation
//! are flushed) and closing its open segments: no per-item work. Evicting a
//! segment walks its items, moves those the policy keeps, unlinks the other
//! ones still indexed and counts them as evicted, reclaimed (expired) or
//! flushed; a segment whose last live item is deleted or replaced is freed
//! at once.

// Only `large` (shareable large objects) needs `unsafe`; it says why.
#![deny(unsafe_code)]

mod arith;
mod charge;
mod conditional;
mod crc32c;
mod departures;
mod dump;
mod evict;
#[cfg(test)]
mod evict_tests;
mod ghost;
mod hash;
mod index;
mod item;
#[allow(unsafe_code)]
mod large;
mod meta;
mod ops;
mod pool;
mod segment;
mod shard;
mod snapshot;
mod sync;
mod ttl;
mod valueref;
mod written;

pub use conditional::{ArithOutcome, DeleteOutcome};
pub use meta::{MetaGet, MetaItem, WriteOptions};
pub use snapshot::{LoadReport, SaveReport, SnapshotClock, SnapshotError, FORMAT_VERSION as SNAPSHOT_FORMAT_VERSION, MAGIC as SNAPSHOT_MAGIC};
pub use charge::{item_bytes, Charge};
pub use departures::{DepartedItem, Departure, Departures, Unreported};
pub use dump::DumpItem;
pub use ops::Reporting;
pub use large::{landing_room, Landing, PinSpill, Pinned};
pub use valueref::ValueRef;
use large::SegBuf;
use segment::Segment;
use evict::{EvictionPolicy, Want, MAX_COPYING_EVICTIONS};
use hash::KeyHasher;
use index::{Index, Loc, MAX_SEGMENT_SIZE};
use pool::Pool;
use shard::{Env, Found, Published, Shard, Why};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use sync::{Mutex, MutexGuard};

/// The crate's internals the loom models (`tests/loom_*.rs`) drive; only
/// `--cfg larder_loom` builds have it.
#[cfg(larder_loom)]
#[doc(hidden)]
pub mod loom_model;

/// Buckets of a shard's index at start-up (64 bytes each).
const INITIAL_BUCKETS: usize = 16;
/// Most shards (independent locks).
const MAX_SHARDS: usize = 256;
/// Shards wanted for concurrency alone; more only to keep each shard's
/// index (re-hashed under its lock when it resizes) to about
/// `SEGMENTS_PER_SHARD` segments' worth of items.
const CONCURRENCY_SHARDS: usize = 16;
const SEGMENTS_PER_SHARD: usize = 256;
/// Fewer segments than this (limits under 4 MiB): one shard. Every shard
/// keeps an open segment for new writes and one for eviction survivors,
/// each half full on average; at -m 2 with 4 shards those were 8 of the 31
/// segments, and live data filled 0.85 of the limit against 0.94 with one
/// shard (larder-sim --sizes, LARDER_SIM_STATS=1). More shards above it:
/// at -m 7 one to four shards missed more on orm-busy (0.277 against 0.267
/// with 8), whose small queues, rounded up per shard, are bigger.
const ONE_SHARD_BELOW: usize = 64;
/// Bytes of the memory limit per ghost entry at most (4 bytes: 0.2% of the
/// limit; the table starts at 1/4 of that and grows with use, see ghost.rs). With 4000-byte values that remembers about twice as many keys as
/// the cache holds, as S3-FIFO's ghost wants; with small values fewer.
const GHOST_BYTES: usize = 2048;
/// Smallest segment accepted.
const MIN_SEGMENT_SIZE: usize = 1024;
/// Segments wanted at least (see `with_policy`).
const MIN_SEGMENTS: usize = 1024;
/// Smallest segment chosen automatically for small memory limits.
const SMALL_SEGMENT_SIZE: usize = 64 << 10;

/// Keeps each shard's lock on its own cache lines.
#[repr(align(128))]
struct Padded<T>(T);

/// The cache.
pub struct Store {
    shards: Box<[Padded<Mutex<Shard>>]>,
    /// Per shard: what it publishes for victim choice.
    published: Vec<Arc<Published>>,
    pool: Pool,
    hasher: KeyHasher,
    policy: Box<dyn EvictionPolicy>,
    /// Pending/last flush_all: sequence << 32 | at.
    flush: AtomicU64,
    flush_lock: Mutex<()>,
    segment_size: usize,
    item_size_max: usize,
    evict: bool,
}

/// A locked shard and its number.
struct Locked<'a> {
    n: usize,
    g: MutexGuard<'a, Shard>,
}

/// What a storage command writes: the item as the client sent it (the
/// store's own decisions, such as the CAS, come later).
#[derive(Clone, Copy, Debug)]
pub struct Write<'a> {
    pub mode: Mode,
    pub key: &'a [u8],
    pub flags: u32,
    /// Store time (0: never).
    pub exptime: Time,
    pub value: &'a [u8],
    /// The [`Landing`] `value` was received into, if it was: a `set`,
    /// `add`, `replace` or `cas` that makes a large object adopts it
    /// instead of copying the value (see [`large`](crate::large)).
    pub landed: Option<&'a Landing>,
}

/// The new version of an item that [`Store::reserve_version`] makes room
/// for: its expiry, which picks the TTL class, and what decides its CAS.
#[derive(Clone, Copy)]
struct NewVersion<'a> {
    exptime: Time,
    /// A segment of the shard not to evict meanwhile (the old version's,
    /// whose bytes an append still copies; 0 = none).
    protect: u32,
    /// The replaced version's CAS: the new one must exceed it, so when the
    /// CAS derived from the new place would not, an explicit one is stored.
    old_cas: Option<u64>,
    /// A CAS the client chose (meta `E`), stored as given.
    new_cas: Option<u64>,
    /// A received value to adopt as the new item's large object.
    landed: Option<&'a Landing>,
}

/// How [`Store::evict_one`] evicts.
#[derive(Clone, Copy)]
struct EvictHow {
    /// Release the victim's bytes rather than keep its buffer as a spare.
    discard: bool,
    /// Let no item survive, whatever the policy.
    plain: bool,
}

impl Store {
    /// A store evicting with `policy` (tests compare policies).
    pub(crate) fn with_policy(config: Config, policy: Box<dyn EvictionPolicy>) -> Result<Store, ConfigError> {
        let Config { memory_limit, item_size_max, segment_size, evict } = config;
        if !(MIN_SEGMENT_SIZE..=MAX_SEGMENT_SIZE).contains(&segment_size) {
            return Err(ConfigError(format!(
                "segment size must be between {MIN_SEGMENT_SIZE} and {MAX_SEGMENT_SIZE} bytes, got {segment_size}"
            )));
        }
        if item_size_max == 0 || item_size_max > u32::MAX as usize {
            return Err(ConfigError(format!("item size max must be between 1 and {} bytes", u32::MAX)));
        }
        // Limits under 1 GiB get smaller segments (down to 64 KiB) so that
        // about 1024 fit: eviction then drops a small fraction of the cache
        // at a time, as memcached does item by item, and the partly filled
        // open segments (two or more per shard) stay a small part of
        // memory: at -m 256, 1 MiB segments left small items (50-500 B)
        // 0.911 of the limit, 256 KiB ones 0.933 (larder-bench memory-small).
        let mut segment_size = segment_size;
        while segment_size > SMALL_SEGMENT_SIZE && memory_limit / segment_size < MIN_SEGMENTS {
            segment_size /= 2;
        }
        let segments = memory_limit / segment_size;
        let nshards = if segments < ONE_SHARD_BELOW { 1 } else { (segments / 8).clamp(1, CONCURRENCY_SHARDS) };
        let nshards = nshards.max((segments / SEGMENTS_PER_SHARD).min(MAX_SHARDS));
        let nshards = 1 << (usize::BITS - 1 - nshards.leading_zeros());
        // The ghost filters: at most one 4-byte entry per GHOST_BYTES of
        // the limit, a power of two per shard, allocated small on a shard's
        // first eviction from its small queue, grown as it is hit (ghost.rs).
        let ghost_entries = (memory_limit / nshards / GHOST_BYTES).next_power_of_two().max(64);
        let index_bytes = nshards * Index::bytes_for(INITIAL_BUCKETS);
        if memory_limit < segment_size + index_bytes {
            return Err(ConfigError(format!(
                "memory limit {memory_limit} too small: need at least {} bytes",
                segment_size + index_bytes
            )));
        }
        let pool = Pool::new(memory_limit, segment_size);
        pool.force_reserve(index_bytes);
        let hasher = KeyHasher::new();
        let published: Vec<Arc<Published>> = (0..nshards).map(|_| Arc::default()).collect();
        // Open segments per shard (one per TTL class in use, see `ttl`):
        // one per 8 segments a shard gets, so that their partly filled
        // buffers stay a small part of memory.
        let max_open = (segments / nshards / 8).clamp(1, ttl::TTL_CLASSES);
        let shards = published
            .iter()
            .enumerate()
            .map(|(number, o)| {
                let mut sh = Shard::new(INITIAL_BUCKETS, hasher.clone(), o.clone());
                sh.number = number as u32;
                sh.set_ghost(ghost_entries);
                sh.max_open = max_open;
                Padded(Mutex::new(sh))
            })
            .collect();
        Ok(Store {
            shards,
            published,
            pool,
            hasher,
            policy,
            flush: AtomicU64::new(0),
            flush_lock: Mutex::new(()),
            segment_size,
            item_size_max,
            evict,
        })
    }

    fn env(&self, now: Time) -> Env<'_> {
        Env { pool: &self.pool, now, evict: self.evict, policy: &*self.policy }
    }

    fn lock(&self, h: u64, now: Time) -> Locked<'_> {
        let n = hash::shard(h, self.shards.len());
        let mut g = self.shards[n].0.lock().unwrap_or_else(|e| e.into_inner());
        g.apply_flush(self.flush.load(Ordering::Acquire), now, &self.pool);
        Locked { n, g }
    }

    /// A lookup that counts as an access (`get`, `gat`, `touch`), setting
    /// the expiry when `touch` is given.
    pub(crate) fn fetch<R>(
        &self,
        key: &[u8],
        now: Time,
        touch: Option<Time>,
        d: &mut dyn Departures,
        read: impl FnOnce(&Item<'_>) -> R,
    ) -> Lookup<R> {
        let h = self.hasher.hash(key);
        let mut l = self.lock(h, now);
        match l.g.lookup(h, key, now, &self.pool, d) {
            Found::Live(pos, loc) => {
                l.g.index.bump(pos);
                let bytes = l.g.item_bytes_mut(loc);
                item::set_fetched(bytes);
                item::set_atime(bytes, now);
                if let Some(e) = touch {
                    l.g.set_exptime(loc, e);
                }
                Lookup::Hit(read(&l.g.item(loc)))
            }
            Found::Miss => Lookup::Miss,
            Found::Expired => Lookup::Expired,
            Found::Flushed => Lookup::Flushed,
        }
    }

    /// The body of [`Reporting::write`]: the write, with what a successful
    /// write charged and released.
    pub(crate) fn write_to(&self, w: &Write<'_>, now: Time, opts: &WriteOptions, d: &mut dyn Departures) -> (StoreResult, Charge) {
        let mut large = 0;
        let mut charge = Charge::default();
        let mut result = self.store_once(w, now, opts, &mut large, &mut charge, d);
        // A large object found no room while its shard was locked. Making
        // room there only try-locks other shards (waiting for one while
        // holding another could deadlock), so a shard that is merely busy —
        // a reader copying out a 128 MiB value holds its lock that long —
        // made the store fail although eviction could serve it. Make the
        // room holding no lock, waiting for one shard at a time, and try
        // again (a few times: other writers may take the room first).
        for _ in 0..3 {
            if result != StoreResult::OutOfMemory || large == 0 || !self.evict {
                break;
            }
            if !self.make_room(self.hasher.hash(w.key), large, now, d) {
                break;
            }
            large = 0;
            result = self.store_once(w, now, opts, &mut large, &mut charge, d);
        }
        (result, charge)
    }

    /// One attempt of [`write_to`](Self::write_to) under the key's
    /// shard lock. On `OutOfMemory` for want of a large object's bytes,
    /// `large` is set to how many.
    fn store_once(&self, w: &Write<'_>, now: Time, opts: &WriteOptions, large: &mut usize, charge: &mut Charge, d: &mut dyn Departures) -> StoreResult {
        let Write { mode, key, flags, exptime, value, landed } = *w;
        let WriteOptions { cas, stale_if_older, key_binary, new_cas } = *opts;
        let h = self.hasher.hash(key);
        let mut l = self.lock(h, now);
        let old = match l.g.lookup(h, key, now, &self.pool, d) {
            Found::Live(pos, loc) => Some((pos, loc)),
            _ => None,
        };
        if key.is_empty()
            || key.len() > item::MAX_KEY_LEN
            || item::memcached_item_size(key.len(), value.len(), flags) > self.item_size_max
        {
            // memcached drops the old value of a failed set, never serving stale data.
            if let (Mode::Set, Some((pos, loc))) = (mode, old) {
                l.g.unlink(pos, loc, Why::Dropped, &self.pool, d);
            }
            return StoreResult::TooLarge;
        }
        // Meta state the new item inherits when stored as stale.
        let mut stale_state: Option<(Time, bool)> = None;
        match (cas, old) {
            (Some(_), None) => return StoreResult::NotFound,
            (Some(c), Some((_, loc))) if l.g.cas(loc) != c => {
                if stale_if_older && c < l.g.cas(loc) {
                    let oh = l.g.header(loc);
                    stale_state = Some((oh.exptime, oh.token_sent));
                } else {
                    return StoreResult::Exists;
                }
            }
            _ => {}
        }
        let exptime = stale_state.map_or(exptime, |(e, _)| e);
        match (mode, old) {
            (Mode::Add, Some((pos, _))) => {
                l.g.index.bump(pos);
                return StoreResult::NotStored;
            }
            (Mode::Replace | Mode::Append | Mode::Prepend, None) => return StoreResult::NotStored,
            (Mode::Cas(_), None) => return StoreResult::NotFound,
            (Mode::Cas(c), Some((_, loc))) if l.g.cas(loc) != c => return StoreResult::Exists,
            _ => {}
        }
        let concat = matches!(mode, Mode::Append | Mode::Prepend);
        let old_loc = old.map(|(_, loc)| loc);
        let (flags, exptime, vlen, old_val) = match (concat, old_loc) {
            (true, Some(loc)) => {
                let oh = l.g.header(loc);
                let vlen = oh.vlen + value.len();
                if vlen > u32::MAX as usize || item::memcached_item_size(key.len(), vlen, oh.flags) > self.item_size_max {
                    return StoreResult::NotStored; // memcached: the bigger item cannot be allocated
                }
                (oh.flags, oh.exptime, vlen, Some((loc.seg, loc.off as usize + oh.val_off(), oh.vlen)))
            }
            _ => (flags, exptime, value.len(), None),
        };
        let protect = old_val.map_or(0, |(seg, _, _)| seg);
        let old_cas = old_loc.map(|o| l.g.cas(o));
        let size = |cas| item::item_len_cas(key.len(), vlen, flags, cas);
        // A value received straight into a large object's buffer becomes
        // the item in place (whole-value writes only; an append copies).
        let landed = landed.filter(|ld| {
            let head = size(Some(0)) - vlen; // the longest this item's header and key can be
            !concat && ld.adoptable_for(value) && size(Some(0)) > self.segment_size && head <= ld.room()
        });
        let v = NewVersion { exptime, protect, old_cas, new_cas, landed };
        let Some((loc, new_cas)) = self.reserve_version(&mut l, now, v, size, d) else {
            // With the bigger form (explicit CAS): enough either way.
            let want = landed.map_or(size(Some(0)), |ld| ld.bytes());
            if want > self.segment_size {
                *large = want;
            }
            if mode == Mode::Set {
                // Looked up again: eviction may have moved the old item.
                if let Found::Live(pos, old) = l.g.lookup(h, key, now, &self.pool, d) {
                    l.g.unlink(pos, old, Why::Dropped, &self.pool, d);
                }
            }
            return StoreResult::OutOfMemory;
        };
        let size = size(new_cas);
        let voff = item::encode_cas(l.g.item_bytes_mut(loc), key, vlen, flags, exptime, now, new_cas);
        if let Some((_, token_sent)) = stale_state {
            item::set_meta_state(l.g.item_bytes_mut(loc), true, token_sent);
        }
        if key_binary {
            item::set_key_binary(l.g.item_bytes_mut(loc), true);
        }
        let vstart = loc.off as usize + voff;
        match (mode, old_val) {
            (Mode::Append, Some((seg, off, n))) => {
                l.g.segs.copy(seg, off, loc.seg, vstart, n);
                l.g.item_bytes_mut(loc)[voff + n..].copy_from_slice(value);
            }
            (Mode::Prepend, Some((seg, off, n))) => {
                l.g.segs.copy(seg, off, loc.seg, vstart + value.len(), n);
                l.g.item_bytes_mut(loc)[voff..voff + value.len()].copy_from_slice(value);
            }
            // Received in place: the value is already behind the header.
            _ if landed.is_some() => {}
            _ => l.g.item_bytes_mut(loc)[voff..].copy_from_slice(value),
        }
        if !l.g.commit(h, loc, old_loc, true, &self.env(now), d) {
            return StoreResult::OutOfMemory;
        }
        *charge = Charge { written: size as u64, released: l.g.last_replaced };
        StoreResult::Stored(l.g.cas(loc))
    }

    pub(crate) fn unlink_key(&self, key: &[u8], now: Time, why: Why, d: &mut dyn Departures) -> bool {
        let h = self.hasher.hash(key);
        let mut l = self.lock(h, now);
        match l.g.lookup(h, key, now, &self.pool, d) {
            Found::Live(pos, loc) => {
                l.g.unlink(pos, loc, why, &self.pool, d);
                true
            }
            _ => false,
        }
    }

    fn apply_flush_everywhere(&self, word: u64, now: Time) {
        for s in self.shards.iter() {
            let mut g = s.0.lock().unwrap_or_else(|e| e.into_inner());
            g.apply_flush(word, now, &self.pool);
        }
    }

    pub(crate) fn reclaim_expired_to(&self, now: Time, part: usize, parts: usize, d: &mut dyn Departures) -> usize {
        let flush = self.flush.load(Ordering::Acquire);
        let mut freed = 0;
        for (n, sh) in self.shards.iter().enumerate().skip(part).step_by(parts.max(1)) {
            let flush_due = flush >> 32 != 0 && now >= flush as u32;
            if !flush_due && self.published[n].free_at.load(Ordering::Relaxed) > now {
                continue;
            }
            let mut g = sh.0.lock().unwrap_or_else(|e| e.into_inner());
            g.apply_flush(flush, now, &self.pool);
            let flush_settled = g.flush_settled(now);
            while let Some(id) = evict::reclaimable_in_background(&*g, now, flush_settled) {
                let seg = g.evict_segment(id, now, d);
                self.pool.give_back(seg.buf, seg.large);
                freed += 1;
            }
            g.publish_free_at();
        }
        freed
    }

    /// Space for a new version `v` of an item, in the open segment of its
    /// TTL class (see [`ttl`]), and the explicit CAS it stores (see
    /// [`NewVersion`]). `size(cas)`: the item's bytes with that CAS field.
    fn reserve_version(
        &self,
        l: &mut Locked<'_>,
        now: Time,
        v: NewVersion<'_>,
        size: impl Fn(Option<u64>) -> usize,
        d: &mut dyn Departures,
    ) -> Option<(Loc, Option<u64>)> {
        let NewVersion { exptime, protect, old_cas, new_cas, landed } = v;
        let slot = l.g.open_slot(exptime, now, &self.pool);
        let cas = new_cas.or_else(|| {
            let old = old_cas?;
            l.g.needs_fresh_cas(slot, size(None), old).then(|| self.pool.next_gen() << 24)
        });
        let loc = match landed {
            Some(ld) => self.reserve_landed(l, ld, size(cas), protect, now, slot, d)?,
            None => self.reserve(l, size(cas), protect, now, slot, d)?,
        };
        Some((loc, cas))
    }

    /// [`reserve`](Self::reserve) for an item of `size` bytes whose value
    /// arrived in `ld`: `-m` makes room for the landing's bytes (evicting as
    /// for any large object), the shard adopts its buffer, and the item
    /// goes where its header ends right at the value. The room in front of
    /// it is padding that segment walkers step over.
    #[allow(clippy::too_many_arguments)]
    fn reserve_landed(&self, l: &mut Locked<'_>, ld: &Landing, size: usize, protect: u32, now: Time, slot: usize, d: &mut dyn Departures) -> Option<Loc> {
        let value_len = ld.value().len();
        let head = size - value_len;
        debug_assert!(head <= ld.room());
        if !self.acquire_room(l, ld.bytes(), protect, now, d) {
            return None;
        }
        let loc = l.g.install(ld.adopt(), self.pool.next_gen(), true, slot, &self.pool);
        let item_off = ld.room() - head;
        l.g.item_bytes_mut(loc)[..item_off].fill(item::PAD);
        Some(Loc { seg: loc.seg, off: item_off as u32 })
    }

    /// Space for an item of `size` bytes in the locked shard: in the open
    /// segment of `slot` (a TTL class), a fresh segment, or a large object.
    /// `protect` (a segment id of this shard, 0 = none) is not evicted
    /// meanwhile.
    fn reserve(&self, l: &mut Locked<'_>, size: usize, protect: u32, now: Time, slot: usize, d: &mut dyn Departures) -> Option<Loc> {
        let exhausted = !self.evict && self.pool.exhausted();
        if size <= self.segment_size && !exhausted {
            if let Some(loc) = l.g.append(size, slot) {
                return Some(loc);
            }
        }
        let large = (size > self.segment_size).then_some(size);
        let Some(buf) = self.acquire(l, large, protect, now, d) else {
            if !self.evict {
                self.pool.set_exhausted(true);
            }
            return None;
        };
        self.pool.set_exhausted(false);
        if large.is_some() {
            return Some(l.g.install(buf, self.pool.next_gen(), true, slot, &self.pool));
        }
        l.g.install(buf, self.pool.next_gen(), false, slot, &self.pool);
        Some(l.g.append(size, slot).expect("fits in a fresh segment"))
    }

    /// A buffer for a regular segment (`large == None`) or a large object,
    /// evicting segments while the budget is exhausted.
    fn acquire(&self, l: &mut Locked<'_>, large: Option<usize>, protect: u32, now: Time, d: &mut dyn Departures) -> Option<SegBuf> {
        if large.is_some_and(|n| n > self.pool.limit()) {
            return None;
        }
        self.acquire_with(l, large.is_some(), protect, now, d, || match large {
            None => self.pool.segment().map(SegBuf::from),
            Some(n) => self.pool.large(n),
        })
    }

    /// `n` bytes of `-m` reserved for a buffer that already exists (a
    /// [`Landing`]), evicting segments while the budget is exhausted.
    fn acquire_room(&self, l: &mut Locked<'_>, n: usize, protect: u32, now: Time, d: &mut dyn Departures) -> bool {
        n <= self.pool.limit() && self.acquire_with(l, true, protect, now, d, || self.pool.reserve_large(n).then_some(())).is_some()
    }

    /// What `get` gives once it gives something and the shard has a free
    /// segment id, evicting (`discard`: releasing the victims' bytes rather
    /// than keeping a spare buffer) until then.
    fn acquire_with<T>(&self, l: &mut Locked<'_>, discard: bool, protect: u32, now: Time, d: &mut dyn Departures, mut get: impl FnMut() -> Option<T>) -> Option<T> {
        let mut idle = 0;
        let mut evictions = 0;
        let mut order = Vec::with_capacity(self.shards.len());
        for _ in 0..100_000 {
            if l.g.segs.has_free_id() {
                if let Some(got) = get() {
                    return Some(got);
                }
            }
            let plain = evictions >= MAX_COPYING_EVICTIONS;
            let me = l.n;
            if self.evict_one(Some(&mut *l), me, protect, now, EvictHow { discard, plain }, &mut order, d) {
                idle = 0;
                evictions += 1;
                continue;
            }
            idle += 1;
            if idle > 8 {
                return None;
            }
            std::thread::yield_now();
        }
        None
    }

    /// Room for a large object of `n` bytes, made while holding no shard
    /// lock: evicts (blocking on one shard's lock at a time, which cannot
    /// deadlock) until the budget has `n` bytes free. The caller then takes
    /// its own lock and reserves them, unless someone else did first.
    fn make_room(&self, h: u64, n: usize, now: Time, d: &mut dyn Departures) -> bool {
        if n > self.pool.limit() {
            return false;
        }
        let me = hash::shard(h, self.shards.len());
        let mut order = Vec::with_capacity(self.shards.len());
        for evictions in 0..100_000 {
            if self.pool.has_room(n) {
                return true;
            }
            let plain = evictions >= MAX_COPYING_EVICTIONS;
            if !self.evict_one(None, me, 0, now, EvictHow { discard: true, plain }, &mut order, d) {
                return false;
            }
        }
        false
    }

    /// Evicts one segment. With the requesting shard locked (`l`): from it,
    /// or from a shard that can be locked without waiting; without
    /// (`None`, shard number `me`): from any shard, waiting for its lock.
    /// `protect` as in [`reserve`](Self::reserve); `how`: see [`EvictHow`].
    /// Whether anything was freed (or, when survivors were compacted into
    /// the victim, made room).
    #[allow(clippy::too_many_arguments)] // where to evict, what to spare, how, and who hears of it
    fn evict_one(
        &self,
        mut l: Option<&mut Locked<'_>>,
        me: usize,
        protect: u32,
        now: Time,
        how: EvictHow,
        order: &mut Vec<usize>,
        d: &mut dyn Departures,
    ) -> bool {
        let EvictHow { discard, plain } = how;
        let oldest: Vec<u64> = self.published.iter().map(|p| p.oldest.load(Ordering::Relaxed)).collect();
        // Out of segment ids in this shard: only its own segments help.
        let own_only = l.as_ref().is_some_and(|l| !l.g.segs.has_free_id());
        let locked = l.is_some();
        self.policy.shard_order(me, &oldest, discard, order);
        let flush = self.flush.load(Ordering::Acquire);
        let second = if self.evict { Want::Evict } else { Want::Reclaim };
        let keep = !plain && self.policy.keeps_survivors();
        let env = self.env(now);
        let evict = |g: &mut Shard, id: u32, want: Want, protect: u32, d: &mut dyn Departures| {
            let seg = match want {
                Want::Compact => g.evict_keeping(id, now, &self.pool, true, d),
                Want::Evict if keep => g.evict_keeping(id, now, &self.pool, false, d),
                _ => Some(g.evict_segment(id, now, d)),
            };
            if want == Want::Evict {
                g.maybe_shrink_index(&env, protect, d);
            }
            seg
        };
        // Compaction copies, so it counts against the copying evictions.
        let wants: &[Want] = if plain { &[Want::Free, second] } else { &[Want::Free, Want::Compact, second] };
        for &want in wants {
            for &v in order.iter() {
                if own_only && v != me {
                    continue;
                }
                // Shards known to hold no free segment yet are skipped
                // without touching their lock.
                if want == Want::Free && self.published[v].free_at.load(Ordering::Relaxed) > now {
                    continue;
                }
                let mut other;
                let (g, protect): (&mut Shard, u32) = match l.as_deref_mut() {
                    Some(own) if v == me => (&mut own.g, protect),
                    _ => {
                        // Never a blocking second lock (`sync::lock_other`).
                        let Some(g) = sync::lock_other(&self.shards[v].0, locked) else { continue };
                        other = g;
                        other.apply_flush(flush, now, &self.pool);
                        (&mut other, 0)
                    }
                };
                let seg = match self.policy.pick(g, protect, now, want) {
                    Some(id) => evict(g, id, want, protect, d),
                    None => {
                        if want == Want::Free {
                            g.publish_free_at();
                        }
                        continue;
                    }
                };
                // None: survivors were compacted into the victim, which
                // stays as the open main segment; the next victim's
                // survivors fill its free room.
                if let Some(seg) = seg {
                    if discard {
                        self.pool.discard(seg.buf);
                    } else {
                        self.pool.give_back(seg.buf, seg.large);
                    }
                }
                return true;
            }
        }
        false
    }
}

/// Seconds on the server's clock (memcached's "rel_time": seconds since the
/// process started, plus a small offset). An expiry of 0 means "never";
/// otherwise an item is expired once `now >= exptime`.
pub type Time = u32;

/// Store configuration, fixed at start-up except the memory limit.
#[derive(Clone, Debug)]
pub struct Config {
    /// `-m` in bytes: bounds item data, headers and the index together.
    pub memory_limit: usize,
    /// `-I`: largest item (key + value + overhead) accepted.
    pub item_size_max: usize,
    /// Segment size in bytes (default 1 MiB). A maximum: when fewer than
    /// 1024 segments fit in `memory_limit`, the store halves it (not below
    /// 64 KiB) until they do; `Stats::segment_size` reports the size used.
    pub segment_size: usize,
    /// false with `-M`: return [`StoreResult::OutOfMemory`] instead of evicting.
    pub evict: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            memory_limit: 64 << 20,
            item_size_max: 1 << 20,
            segment_size: 1 << 20,
            evict: true,
        }
    }
}

/// Why a configuration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

/// A stored item as seen by a reader, valid only inside the read callback.
#[derive(Debug)]
pub struct Item<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
    /// Opaque 32-bit client flags, returned untouched.
    pub flags: u32,
    /// Unique per mutation.
    pub cas: u64,
    /// 0 = never.
    pub exptime: Time,
    /// The segment (or large object) holding the item, and its (shard,
    /// segment id): what [`Item::pin`] and [`Item::value_ref`] need, worked
    /// out only when they are called.
    pub(crate) seg: &'a Segment,
    pub(crate) place: (u32, u32),
}

impl Item<'_> {
    /// For a value stored as a large object: a reference that keeps the
    /// value's bytes alive and unchanged after the read callback returns
    /// (and after the item is replaced, deleted or evicted), so a reply can
    /// send them without copying. The bytes stay counted against the memory
    /// limit until the last pin drops. `None` for values in regular
    /// segments: copy those inside the callback.
    pub fn pin(&self) -> Option<Pinned> {
        if !self.seg.large {
            return None;
        }
        self.seg.buf.pin(self.value_offset())
    }

    /// Where the value starts in its segment's buffer.
    pub(crate) fn value_offset(&self) -> usize {
        self.value.as_ptr() as usize - self.seg.buf.as_ptr() as usize
    }
}

/// Outcome of a lookup; the miss kinds feed `get_expired`/`get_flushed`.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<R> {
    Hit(R),
    Miss,
    /// Present but expired (now removed).
    Expired,
    /// Present but invalidated by `flush_all` (now removed).
    Flushed,
}

/// How a write treats an existing item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    /// Store only if the item's CAS equals this.
    Cas(u64),
}

/// Outcome of a write.
#[derive(Debug, PartialEq, Eq)]
pub enum StoreResult {
    /// Stored; the new item's CAS.
    Stored(u64),
    /// add on an existing key, replace/append/prepend on a missing one.
    NotStored,
    /// cas: the item changed since the client read it.
    Exists,
    /// cas: no such item.
    NotFound,
    /// The item exceeds `item_size_max` (or a segment cannot hold it).
    TooLarge,
    /// No memory and eviction is off (`-M`), or nothing could be evicted.
    OutOfMemory,
}

/// Outcome of incr/decr.
#[derive(Debug, PartialEq, Eq)]
pub enum ArithResult {
    /// The new value.
    Value(u64),
    NotFound,
    NonNumeric,
    OutOfMemory,
}

/// Store-wide figures for `stats`.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Items in the index, including expired or flushed ones nobody has
    /// looked up yet (as memcached counts them).
    pub curr_items: u64,
    /// Items linked: every successful store, and incr/decr when the value
    /// grows (memcached rewrites shorter or equal values in place).
    pub total_items: u64,
    /// Bytes used by live items (headers + keys + values).
    pub bytes: u64,
    /// Live, unexpired items dropped to make room.
    pub evictions: u64,
    /// Expired items removed (found expired by a lookup, or reclaimed with
    /// their segment).
    pub reclaimed: u64,
    /// Of `reclaimed`, those never fetched.
    pub expired_unfetched: u64,
    /// Of `evictions`, those never fetched.
    pub evicted_unfetched: u64,
    /// Segments compacted: their live items moved, their dead bytes freed
    /// (before any live data is evicted).
    pub compactions: u64,
    pub limit_maxbytes: u64,
    /// Regular segment buffers allocated: in shards plus spares.
    pub segments_total: u64,
    /// Bytes of `memory_used` in the buffer kept from the last freed large
    /// value received in place, for the next one (0 or one buffer).
    pub large_spare_bytes: u64,
    /// Regular segments held by shards.
    pub segments_used: u64,
    /// Size of a regular segment (may be below `Config::segment_size` for
    /// small memory limits).
    pub segment_size: u64,
    /// Bytes held by dead (overwritten/deleted/expired) items not yet reclaimed.
    pub bytes_dead: u64,
    /// Index tables (both while one resizes) and the ghost filters (see
    /// `evict`), counted in `memory_used`.
    pub index_bytes: u64,
    pub index_slots: u64,
    pub index_used: u64,
    /// Large objects (items bigger than a segment) and their bytes; counted
    /// in `memory_used`, not in `segments_*`.
    pub large_objects: u64,
    pub large_bytes: u64,
    /// `large_bytes` with each object rounded up to whole 4 KiB pages (what
    /// the allocator hands out for it): a steadier measure of the memory
    /// they take, which does not move when a key is a byte longer.
    pub large_pages_bytes: u64,
    /// All bytes reserved from `limit_maxbytes`: segments (in use and spare),
    /// large objects, index tables.
    pub memory_used: u64,
    /// Number of shards (independent locks).
    pub shards: u64,
    /// When the oldest live item was written (kept per region of a segment,
    /// see written.rs: never later than the item's write, at most as early
    /// as a neighbouring region's); `None` with nothing stored.
    pub oldest_born: Option<Time>,
    /// Of `evictions`, items that had an expiry time.
    pub evicted_nonzero: u64,
    /// The most recent eviction: (when, seconds its item had gone unaccessed).
    pub last_eviction: Option<(Time, Time)>,
}

