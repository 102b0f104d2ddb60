//! Per-prefix accounting: items, bytes and traffic by key prefix, always on,
//! cheap, and bounded.
//!
//! # What is counted
//!
//! The prefix of a key is the bytes before the first delimiter byte (`-D`,
//! default `:`), as in memcached's `stats detail`. A key that starts with the
//! delimiter has the empty prefix; a key without the delimiter has no prefix
//! (memcached does not count it in `stats detail`; larder counts it in the
//! `unprefixed` row of `stats prefixes`).
//!
//! For every prefix: `items` and `bytes` currently stored (bytes = whatever
//! size the store charges for the item: key + value + header, as the caller
//! passes it), and since the last `stats reset`: `gets`, `hits`, `misses`,
//! `sets`, `deletes`, `evictions`, `expired`, `bytes_sent`. Separately, the
//! four memcached `stats detail` counters (`get hit set del`), which count
//! only while `stats detail on` is in effect, with memcached's semantics
//! (`set` and `del` count attempts, `del` of a missing key included).
//!
//! # Design: a shared prefix registry + per-worker counters
//!
//! * **Registry.** A fixed-capacity table maps a prefix to a slot number: an
//!   open-addressing array of `AtomicU64` entries (`(slot + 1) << 32 | low
//!   32 bits of the prefix hash`) of at least twice the slot capacity,
//!   probed linearly and read without any lock. Slot names live inline in
//!   fixed atomic words (250 bytes max), written only while the slot is
//!   unreachable. Changes (a new prefix, a slot given back) take the
//!   registry mutex; lookups never do once the table is full (an atomic
//!   `full` flag sends unknown prefixes straight to `other`).
//! * **Counters.** Each worker thread owns a [`PrefixWorker`] holding its own
//!   array of counters per slot (`AtomicU64`, written only by the owner with
//!   a plain load + store, i.e. no locked instruction, no shared cache line).
//!   The reporter sums all workers' arrays. `items` and `bytes` are wrapping
//!   signed deltas, so an item stored by worker A and deleted by worker B
//!   nets to zero in the sum: the totals are exact.
//! * **Hot path cost.** One relaxed-acquire load of the registry epoch, a
//!   scan for the delimiter (8 bytes a step), one hash of the prefix,
//!   usually one probe and a word-wise name compare (no `memcmp`/`memcpy`
//!   calls); 2-4 counter updates in the worker's own memory. No allocation,
//!   no lock, no shared writes. About 20-30 ns with the key in cache
//!   (`examples/hotpath.rs` on the shared 2-core dev VM).
//! * **Per-worker prefix cache.** Prefixes of up to 16 bytes (most real
//!   ones) skip the hash, the probe and the name compare when they hit a
//!   small direct-mapped cache in the [`PrefixWorker`] (prefix bytes and
//!   length -> slot; 256 entries, 6 KiB), which costs one multiply and a
//!   compare of two words (about 10 ns less per call). It caches only
//!   tracked slots (never `other`: an unknown prefix may get a slot later),
//!   and it is emptied whenever the worker acknowledges a new registry
//!   epoch. A slot's prefix only changes after it was unlinked, which bumps
//!   the epoch, and is freed only after every worker has acknowledged that
//!   epoch; so a cached slot is used exactly when a lock-free probe could
//!   still have found it (by a call that started before the
//!   acknowledgement), which is the race the grace period below already
//!   covers.
//!
//! # The bound, exactness, and the `other` row
//!
//! At most `max_prefixes` prefixes have their own row at any time; all
//! others are folded into the `other` row. Tracked rows are **exact**
//! (items, bytes, every counter since the row was assigned), `other` is exact
//! as an aggregate, and all rows together (tracked + `other` + `unprefixed`)
//! equal the store's totals. Memory is fixed at creation whatever the key
//! stream: [`PrefixStats::memory_bound`] gives it, [`PrefixStats::heap_bytes`]
//! the current use; a million random prefixes cannot grow it.
//!
//! Exactness is what constrains which prefixes get rows: with no per-item
//! state, an item must be un-counted from the row it was counted into, so
//! the prefix-to-row mapping may only change for a prefix that has **no
//! items anywhere**. Hence:
//!
//! * **Admission.** While slots are free, a new prefix takes one on first
//!   sight (first come). When the table is full, new prefixes go to `other`.
//! * **Giving slots back** ([`PrefixStats::maintain`], to be called about
//!   once a second). When prefixes are being turned away (`other` sees
//!   traffic), slots whose prefix holds no items and saw no traffic since
//!   the previous `maintain` (typically one-off prefixes whose items expired
//!   or were evicted) are unlinked (at most 1/8 of the table per call); the
//!   largest (items/bytes) and busiest (any traffic) prefixes are never
//!   given back. An unlinked slot is freed only after a grace period in
//!   which every worker has started a new call (quiescent-state based
//!   reclamation: each call acknowledges the registry epoch; idle workers
//!   should call [`PrefixWorker::quiesce`] before blocking), so no in-flight
//!   call can still be counting into it; if one did store an item for it
//!   meanwhile, or its prefix comes back first, the slot is simply linked
//!   again. Its traffic counts are folded into `other`.
//! * **Promotion out of `other`.** A prefix in `other` may take a freed slot
//!   only if `other` provably holds none of its items: each worker counts
//!   the items in `other` per cell of 2048 prefix-hash cells, and the cell
//!   of the prefix must sum to zero (a collision can only delay a
//!   promotion, never break exactness). Promotions are allowed only after a
//!   grace period following the reopening of the table, so that every
//!   lock-free routing to `other` made under the old state is counted.
//!
//! The trade-off: a prefix that accumulated long-lived items in `other`
//! while the table was full stays in `other` until those items are gone.
//! Size `max_prefixes` above the number of real prefixes (the default,
//! 1024, covers typical deployments with tens to hundreds) and `other` stays
//! empty; the machinery above only matters under prefix floods.
//!
//! # `stats detail dump` (memcached's format)
//!
//! ```text
//! PREFIX <prefix> get <n> hit <n> set <n> del <n>\r\n
//! ...
//! END\r\n
//! ```
//!
//! `<prefix>` is escaped by [`crate::escape::escape_key`] (printable ASCII,
//! no space, `%XX` for anything else and for `%`): identical to memcached's
//! line for every ASCII prefix without `%`, and a binary-protocol or meta
//! `b` key cannot forge lines through it (memcached prints it raw).
//!
//! One line per tracked prefix with any detail activity since the last
//! `stats reset`, sorted by prefix bytes (memcached prints in hash-table
//! order, which clients cannot rely on). Untracked prefixes (the `other`
//! fold) are not listed. Unlike memcached, larder's server may also feed meta
//! commands (`mg`, `ms`, `md`) into the detail counters.
//!
//! # `stats prefixes` (larder's table)
//!
//! `STAT` lines, so every `stats` parser reads it, one group per row,
//! rows sorted by `bytes` descending, then the fold rows, then a summary:
//!
//! ```text
//! STAT prefix:<prefix>:items <n>
//! STAT prefix:<prefix>:bytes <n>
//! STAT prefix:<prefix>:gets <n>
//! STAT prefix:<prefix>:hits <n>
//! STAT prefix:<prefix>:misses <n>
//! STAT prefix:<prefix>:sets <n>
//! STAT prefix:<prefix>:deletes <n>
//! STAT prefix:<prefix>:evictions <n>
//! STAT prefix:<prefix>:expired <n>
//! STAT prefix:<prefix>:bytes_sent <n>
//! ...                                   (next prefix)
//! STAT other:items <n>                  (same ten fields, untracked prefixes)
//! ...
//! STAT unprefixed:items <n>             (same ten fields, keys without delimiter)
//! ...
//! STAT prefixes_tracked <n>
//! STAT prefixes_limit <n>
//! END
//! ```
//!
//! `<prefix>` is escaped as in `stats detail dump` ([`crate::escape`]), so
//! a stat name is one printable word; decode it with
//! [`crate::escape::unescape`]. The stat name of a row is split at its
//! **last** `:` into row and field
//! (field names contain no `:`; a prefix never contains the delimiter, and
//! may contain `:` only when the delimiter is something else). Rows whose
//! every field is zero are omitted. `items`/`bytes` are never reset;
//! the traffic fields restart from zero at `stats reset`.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::escape::escape_key;
use crate::prometheus::{Exposition, MetricType};
use crate::util::{find_byte, hash_bytes, partial_word, push_u64, stat_i64, word};

/// Default number of prefixes tracked individually.
pub const DEFAULT_MAX_PREFIXES: usize = 1024;
/// Longest prefix possible (memcached's key length limit).
pub const MAX_PREFIX_LEN: usize = 250;

const ITEMS: usize = 0;
const BYTES: usize = 1;
/// (unused: gets = hits + misses; kept so that traffic counters start here)
const GETS: usize = 2;
const HITS: usize = 3;
const MISSES: usize = 4;
const SETS: usize = 5;
const DELETES: usize = 6;
const EVICTIONS: usize = 7;
const EXPIRED: usize = 8;
const BYTES_SENT: usize = 9;
const D_GET: usize = 10;
const D_HIT: usize = 11;
const D_SET: usize = 12;
const D_DEL: usize = 13;
const NCOUNTERS: usize = 14;

/// Slot of the `other` row (untracked prefixes).
const OTHER: usize = 0;
/// Slot of the `unprefixed` row (keys without the delimiter).
const UNPREFIXED: usize = 1;
const FIRST_NAMED: usize = 2;

const NAME_WORDS: usize = 32;
/// Cells of the per-worker "items in `other`" counts.
const CELLS: usize = 2048;
/// Promotions refused in a row (cell not clear) before lookups stop taking
/// the registry lock until the next `maintain`.
const DENIALS_BEFORE_CLOSE: u32 = 64;
/// Slots unlinked by one `maintain` at most.
const MAX_RETIRING: usize = 32;
/// `maintain` calls a grace period may take before it is given up.
const PENDING_MAX_MAINTAINS: u32 = 5;

/// Configuration: memcached's `-D` delimiter and the number of prefixes
/// tracked individually.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixConfig {
    pub delimiter: u8,
    pub max_prefixes: usize,
}

impl Default for PrefixConfig {
    fn default() -> Self {
        PrefixConfig { delimiter: b':', max_prefixes: DEFAULT_MAX_PREFIXES }
    }
}

type SlotCounters = [AtomicU64; NCOUNTERS];

struct Counters {
    slots: Box<[SlotCounters]>,
    /// Items in `other` by prefix-hash cell (wrapping signed).
    cells: Box<[AtomicU64]>,
    /// The last registry epoch this worker acknowledged.
    seen: AtomicU64,
    in_use: AtomicBool,
}

struct SlotName {
    len: AtomicU32,
    words: [AtomicU64; NAME_WORDS],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    Live,
    Retiring,
}

/// Registry state changed only under its mutex.
struct Registry {
    state: Vec<SlotState>,
    /// Raw counter sums when the slot was assigned (all counters) or at the
    /// last reset (traffic counters).
    base: Vec<[u64; NCOUNTERS]>,
    /// Free slots (popped from the end: lowest numbers first).
    free: Vec<usize>,
    retiring: Vec<usize>,
    /// Epoch whose grace period must pass before freeing `retiring` and
    /// allowing promotions.
    pending: Option<u64>,
    promotions_ok: bool,
    denials: u32,
    /// Counts of freed slots folded into `other` (traffic since the last
    /// reset; items and bytes a racing call left behind).
    other_extra: [u64; NCOUNTERS],
    /// Items folded into `other` by cell (added to the workers' cells).
    cell_extra: Vec<u64>,
    /// `maintain` calls the pending grace period has lasted.
    pending_age: u32,
    /// A grace period given up on (a worker neither calls nor quiesces):
    /// nothing is reopened until it completes.
    stalled: Option<u64>,
    /// Event count of each slot at the previous `maintain` (idle detection).
    last_events: Vec<u64>,
    live: usize,
    name_bytes: usize,
    given_back: u64,
}

struct Shared {
    cfg: PrefixConfig,
    index: Box<[AtomicU64]>,
    mask: usize,
    names: Box<[SlotName]>,
    full: AtomicBool,
    epoch: AtomicU64,
    detail: AtomicBool,
    reg: Mutex<Registry>,
    workers: Mutex<Vec<Arc<Counters>>>,
}

/// The shared half: registry, settings, reports. Cheap to clone (an `Arc`);
/// `Send + Sync`.
#[derive(Clone)]
pub struct PrefixStats {
    shared: Arc<Shared>,
}

/// One worker thread's counters. Create one per thread that reports events
/// ([`PrefixStats::worker`]); the methods take `&mut self`, so each handle is
/// written by one thread at a time. Dropping it keeps its counts (they are
/// part of the totals) and lets the next [`PrefixStats::worker`] call reuse
/// its memory.
pub struct PrefixWorker {
    shared: Arc<Shared>,
    counters: Arc<Counters>,
    epoch: u64,
    /// Recent prefixes of up to 16 bytes and their (tracked) slots: see
    /// "Per-worker prefix cache" in the module docs.
    cache: Box<[CacheEntry]>,
}

/// Entries of a [`PrefixWorker`]'s prefix cache (a power of two).
const CACHE_ENTRIES: usize = 256;

/// A prefix of up to 16 bytes as two zero-padded words and its length, and
/// its slot (0, which is `other`'s and never cached, marks a free entry).
#[derive(Clone, Copy, Default)]
struct CacheEntry {
    w0: u64,
    w1: u64,
    len: u32,
    slot: u32,
}

#[inline]
fn cache_index(w0: u64, w1: u64, len: usize) -> usize {
    let x = (w0 ^ w1.rotate_left(29) ^ len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 56) as usize & (CACHE_ENTRIES - 1)
}

/// Which row a [`PrefixRow`] is.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum PrefixName {
    /// A tracked prefix (the bytes before the delimiter).
    Named(Vec<u8>),
    /// Prefixes without a row of their own.
    #[default]
    Other,
    /// Keys without the delimiter.
    Unprefixed,
}

/// One row of a [`PrefixStats::snapshot`]: merged over all workers, traffic
/// counters relative to the last [`PrefixStats::reset`] (or to when the
/// prefix got its row, if later).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrefixRow {
    pub prefix: PrefixName,
    pub items: i64,
    pub bytes: i64,
    pub gets: u64,
    pub hits: u64,
    pub misses: u64,
    pub sets: u64,
    pub deletes: u64,
    pub evictions: u64,
    pub expired: u64,
    pub bytes_sent: u64,
    /// memcached `stats detail` counters: get, hit, set, del.
    pub detail: [u64; 4],
}

impl PrefixRow {
    fn is_zero(&self) -> bool {
        self.items == 0
            && self.bytes == 0
            && self.gets == 0
            && self.hits == 0
            && self.misses == 0
            && self.sets == 0
            && self.deletes == 0
            && self.evictions == 0
            && self.expired == 0
            && self.bytes_sent == 0
    }

    /// Requests seen for the prefix (gets + sets + deletes).
    pub fn requests(&self) -> u64 {
        self.gets + self.sets + self.deletes
    }

    fn fields(&self) -> [(&'static str, i64); 10] {
        [
            ("items", self.items),
            ("bytes", self.bytes),
            ("gets", self.gets as i64),
            ("hits", self.hits as i64),
            ("misses", self.misses as i64),
            ("sets", self.sets as i64),
            ("deletes", self.deletes as i64),
            ("evictions", self.evictions as i64),
            ("expired", self.expired as i64),
            ("bytes_sent", self.bytes_sent as i64),
        ]
    }
}


fn new_counters(nslots: usize) -> Arc<Counters> {
    let slots: Vec<SlotCounters> = (0..nslots).map(|_| std::array::from_fn(|_| AtomicU64::new(0))).collect();
    Arc::new(Counters {
        slots: slots.into_boxed_slice(),
        cells: (0..CELLS).map(|_| AtomicU64::new(0)).collect(),
        seen: AtomicU64::new(0),
        in_use: AtomicBool::new(true),
    })
}

#[inline]
fn cell_of(h: u64) -> usize {
    (h >> 40) as usize & (CELLS - 1)
}

/// Events (not bytes) counted in a raw counter row: for idle detection.
fn events(r: &[u64; NCOUNTERS]) -> u64 {
    [HITS, MISSES, SETS, DELETES, EVICTIONS, EXPIRED, D_SET, D_DEL].iter().fold(0u64, |a, &i| a.wrapping_add(r[i]))
}

impl PrefixStats {
    /// A registry for `cfg.max_prefixes` prefixes (at least 1).
    pub fn new(cfg: PrefixConfig) -> Self {
        let max = cfg.max_prefixes.clamp(1, (u32::MAX / 4) as usize);
        let cfg = PrefixConfig { max_prefixes: max, ..cfg };
        let nslots = max + FIRST_NAMED;
        let cap = (max * 2).next_power_of_two().max(16);
        let mut state = vec![SlotState::Free; nslots];
        state[OTHER] = SlotState::Live;
        state[UNPREFIXED] = SlotState::Live;
        PrefixStats {
            shared: Arc::new(Shared {
                cfg,
                index: (0..cap).map(|_| AtomicU64::new(0)).collect(),
                mask: cap - 1,
                names: (0..nslots)
                    .map(|_| SlotName { len: AtomicU32::new(0), words: std::array::from_fn(|_| AtomicU64::new(0)) })
                    .collect(),
                full: AtomicBool::new(false),
                epoch: AtomicU64::new(0),
                detail: AtomicBool::new(false),
                reg: Mutex::new(Registry {
                    state,
                    base: vec![[0; NCOUNTERS]; nslots],
                    free: (FIRST_NAMED..nslots).rev().collect(),
                    retiring: Vec::new(),
                    pending: None,
                    promotions_ok: true,
                    denials: 0,
                    other_extra: [0; NCOUNTERS],
                    cell_extra: vec![0; CELLS],
                    pending_age: 0,
                    stalled: None,
                    last_events: vec![0; nslots],
                    live: 0,
                    name_bytes: 0,
                    given_back: 0,
                }),
                workers: Mutex::new(Vec::new()),
            }),
        }
    }

    pub fn config(&self) -> PrefixConfig {
        self.shared.cfg
    }

    /// A counter set for one worker thread (reuses a dropped worker's).
    pub fn worker(&self) -> PrefixWorker {
        let mut workers = self.shared.workers.lock().unwrap();
        let epoch = self.shared.epoch.load(Ordering::Acquire);
        let counters = match workers
            .iter()
            .find(|c| c.in_use.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok())
        {
            Some(c) => c.clone(),
            None => {
                let c = new_counters(self.shared.names.len());
                workers.push(c.clone());
                c
            }
        };
        counters.seen.store(epoch, Ordering::Release);
        PrefixWorker {
            shared: self.shared.clone(),
            counters,
            epoch,
            cache: vec![CacheEntry::default(); CACHE_ENTRIES].into_boxed_slice(),
        }
    }

    /// `stats detail on|off`.
    pub fn set_detail(&self, on: bool) {
        self.shared.detail.store(on, Ordering::Relaxed);
    }

    /// Whether `stats detail on` is in effect (`STAT detail_enabled`).
    pub fn detail_enabled(&self) -> bool {
        self.shared.detail.load(Ordering::Relaxed)
    }

    /// `stats reset`: traffic and detail counters restart from zero
    /// (items and bytes are state, not traffic, and are kept).
    pub fn reset(&self) {
        let mut reg = self.shared.reg.lock().unwrap();
        let raw = self.shared.raw_all();
        for (b, r) in reg.base.iter_mut().zip(raw.iter()) {
            b[GETS..].copy_from_slice(&r[GETS..]);
        }
        for v in reg.other_extra[GETS..].iter_mut() {
            *v = 0;
        }
    }

    /// Number of prefixes with their own row.
    pub fn tracked(&self) -> usize {
        self.shared.reg.lock().unwrap().live
    }

    /// How many slots have been given back to the pool so far.
    pub fn given_back(&self) -> u64 {
        self.shared.reg.lock().unwrap().given_back
    }

    /// Housekeeping, about once a second (from a timer or the stats
    /// thread): completes grace periods, frees slots, and, when prefixes
    /// are being turned away, unlinks tracked prefixes that hold nothing
    /// and were idle since the previous call. See the module docs. Cost:
    /// O(workers x max_prefixes) counter loads.
    pub fn maintain(&self) {
        let sh = &*self.shared;
        let mut guard = sh.reg.lock().unwrap();
        let reg = &mut *guard;
        if reg.pending.is_some() {
            sh.try_complete(reg);
        }
        if let Some(e) = reg.pending {
            reg.pending_age += 1;
            if reg.pending_age >= PENDING_MAX_MAINTAINS {
                // give up: every retiring slot goes back in the index (its
                // prefix was sent nowhere else meanwhile), and lookups stop
                // taking the lock until that epoch is acknowledged
                for s in std::mem::take(&mut reg.retiring) {
                    reg.state[s] = SlotState::Live;
                    sh.link(s, hash_bytes(&sh.name(s)));
                }
                reg.pending = None;
                reg.stalled = Some(e);
                sh.full.store(true, Ordering::Release);
            }
        }
        if let Some(e) = reg.stalled {
            if sh.grace_done(e) {
                reg.stalled = None;
                reg.promotions_ok = true;
            }
        }
        let raw = sh.raw_all();
        let other_busy = events(&raw[OTHER]) != reg.last_events[OTHER];
        if reg.pending.is_none() && reg.stalled.is_none() && other_busy {
            let limit = (sh.cfg.max_prefixes / 8).clamp(4, MAX_RETIRING);
            let victims: Vec<usize> = (FIRST_NAMED..raw.len())
                .filter(|&s| {
                    let (r, b) = (&raw[s], &reg.base[s]);
                    reg.state[s] == SlotState::Live
                        && r[ITEMS] == b[ITEMS]
                        && r[BYTES] == b[BYTES]
                        && events(r) == reg.last_events[s]
                })
                .take(limit)
                .collect();
            let closed_with_room = !reg.free.is_empty() && sh.full.load(Ordering::Relaxed);
            if !victims.is_empty() || closed_with_room {
                // Misses take the lock again (so a retiring prefix that
                // comes back is linked again, never sent to `other`) ...
                sh.full.store(false, Ordering::Release);
                reg.promotions_ok = false;
                for s in victims {
                    sh.unlink(s);
                    reg.state[s] = SlotState::Retiring;
                    reg.retiring.push(s);
                }
                // ... and nothing is freed or promoted before every worker
                // has acknowledged this epoch.
                let e = sh.epoch.fetch_add(1, Ordering::AcqRel) + 1;
                reg.pending = Some(e);
                reg.pending_age = 0;
            }
        }
        for (s, r) in raw.iter().enumerate() {
            reg.last_events[s] = events(r);
        }
    }

    /// All rows with any activity: tracked prefixes (in slot order), then
    /// `other`, then `unprefixed`. Merged over workers, relative to the last
    /// reset. O(workers x max_prefixes); takes no lock a worker takes on
    /// its fast path.
    pub fn snapshot(&self) -> Vec<PrefixRow> {
        let sh = &*self.shared;
        let reg = sh.reg.lock().unwrap();
        let raw = sh.raw_all();
        let mut rows = Vec::with_capacity(reg.live + 2);
        let order = (FIRST_NAMED..raw.len()).chain([OTHER, UNPREFIXED]);
        for s in order {
            if reg.state[s] == SlotState::Free {
                continue;
            }
            let (r, b) = (&raw[s], &reg.base[s]);
            let extra = if s == OTHER { reg.other_extra } else { [0; NCOUNTERS] };
            let d = |i: usize| r[i].wrapping_sub(b[i]).wrapping_add(extra[i]);
            let prefix = match s {
                OTHER => PrefixName::Other,
                UNPREFIXED => PrefixName::Unprefixed,
                _ => PrefixName::Named(sh.name(s)),
            };
            let row = PrefixRow {
                prefix,
                items: d(ITEMS) as i64,
                bytes: d(BYTES) as i64,
                // (gets are not counted: every get is a hit or a miss)
                gets: d(HITS).wrapping_add(d(MISSES)),
                hits: d(HITS),
                misses: d(MISSES),
                sets: d(SETS),
                deletes: d(DELETES),
                evictions: d(EVICTIONS),
                expired: d(EXPIRED),
                bytes_sent: d(BYTES_SENT),
                detail: [d(D_GET), d(D_HIT), d(D_SET), d(D_DEL)],
            };
            if !row.is_zero() || row.detail.iter().any(|&v| v != 0) {
                rows.push(row);
            }
        }
        rows
    }


    /// The row of one prefix (`None` if untracked or never seen).
    pub fn row(&self, prefix: &[u8]) -> Option<PrefixRow> {
        self.snapshot().into_iter().find(|r| matches!(&r.prefix, PrefixName::Named(n) if n == prefix))
    }

    /// memcached's `stats detail dump` reply, `END\r\n` included.
    pub fn render_detail_dump(&self, out: &mut Vec<u8>) {
        let mut rows: Vec<PrefixRow> = self
            .snapshot()
            .into_iter()
            .filter(|r| matches!(r.prefix, PrefixName::Named(_)) && r.detail.iter().any(|&v| v != 0))
            .collect();
        rows.sort_by(|a, b| a.prefix.cmp(&b.prefix));
        for r in &rows {
            if let PrefixName::Named(n) = &r.prefix {
                out.extend_from_slice(b"PREFIX ");
                escape_key(out, n);
                out.extend_from_slice(b" get ");
                push_u64(out, r.detail[0]);
                out.extend_from_slice(b" hit ");
                push_u64(out, r.detail[1]);
                out.extend_from_slice(b" set ");
                push_u64(out, r.detail[2]);
                out.extend_from_slice(b" del ");
                push_u64(out, r.detail[3]);
                out.extend_from_slice(b"\r\n");
            }
        }
        out.extend_from_slice(b"END\r\n");
    }

    /// larder's `stats prefixes` reply (format in the module docs), `END\r\n`
    /// included.
    pub fn render_prefixes(&self, out: &mut Vec<u8>) {
        let rows = self.snapshot();
        let mut named: Vec<&PrefixRow> = rows.iter().filter(|r| matches!(r.prefix, PrefixName::Named(_))).collect();
        named.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.prefix.cmp(&b.prefix)));
        let folds = rows.iter().filter(|r| !matches!(r.prefix, PrefixName::Named(_)));
        for r in named.into_iter().chain(folds) {
            if r.is_zero() {
                continue;
            }
            let head: Vec<u8> = match &r.prefix {
                PrefixName::Named(n) => {
                    let mut h = b"prefix:".to_vec();
                    escape_key(&mut h, n);
                    h.push(b':');
                    h
                }
                PrefixName::Other => b"other:".to_vec(),
                PrefixName::Unprefixed => b"unprefixed:".to_vec(),
            };
            for (f, v) in r.fields() {
                stat_i64(out, &[&head, f.as_bytes()], v);
            }
        }
        stat_i64(out, &[b"prefixes_tracked"], self.tracked() as i64);
        stat_i64(out, &[b"prefixes_limit"], self.shared.cfg.max_prefixes as i64);
        out.extend_from_slice(b"END\r\n");
    }

    /// Per-prefix Prometheus series, bounded: the `top` prefixes by bytes
    /// stored get their own `prefix` label, the rest are summed into
    /// `prefix="#other"` (which also holds the `other` fold), keys without
    /// delimiter are `prefix="#unprefixed"`. A real prefix's label is the
    /// prefix escaped as in `stats prefixes` ([`crate::escape::escape_key`]:
    /// printable ASCII, distinct prefixes get distinct labels, where a lossy
    /// UTF-8 conversion would merge them into duplicate series), with a
    /// leading `#` written `%23` so no prefix can pose as `#other` or
    /// `#unprefixed`; the exposition then escapes `\` and `"` as the text
    /// format requires.
    pub fn write_prometheus(&self, e: &mut Exposition, top: usize) {
        let rows = self.snapshot();
        let mut named: Vec<&PrefixRow> = rows.iter().filter(|r| matches!(r.prefix, PrefixName::Named(_))).collect();
        named.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.prefix.cmp(&b.prefix)));
        let mut other = PrefixRow { prefix: PrefixName::Other, ..Default::default() };
        let mut unprefixed = PrefixRow { prefix: PrefixName::Unprefixed, ..Default::default() };
        let mut shown: Vec<(String, &PrefixRow)> = Vec::new();
        for (i, r) in named.iter().enumerate() {
            if i < top {
                if let PrefixName::Named(n) = &r.prefix {
                    shown.push((prefix_label(n), r));
                }
            } else {
                add_row(&mut other, r);
            }
        }
        for r in &rows {
            match r.prefix {
                PrefixName::Other => add_row(&mut other, r),
                PrefixName::Unprefixed => add_row(&mut unprefixed, r),
                _ => {}
            }
        }
        let other_name = "#other".to_string();
        let unprefixed_name = "#unprefixed".to_string();
        shown.push((other_name, &other));
        shown.push((unprefixed_name, &unprefixed));
        let families: [(&str, &str, MetricType, usize); 10] = [
            ("larder_prefix_items", "Items currently stored, by key prefix.", MetricType::Gauge, 0),
            ("larder_prefix_bytes", "Bytes currently stored (key + value + overhead), by key prefix.", MetricType::Gauge, 1),
            ("larder_prefix_gets_total", "Key lookups, by key prefix.", MetricType::Counter, 2),
            ("larder_prefix_hits_total", "Key lookups that found the item, by key prefix.", MetricType::Counter, 3),
            ("larder_prefix_misses_total", "Key lookups that missed, by key prefix.", MetricType::Counter, 4),
            ("larder_prefix_sets_total", "Items stored, by key prefix.", MetricType::Counter, 5),
            ("larder_prefix_deletes_total", "Items deleted, by key prefix.", MetricType::Counter, 6),
            ("larder_prefix_evictions_total", "Items evicted, by key prefix.", MetricType::Counter, 7),
            ("larder_prefix_expired_total", "Items reclaimed after expiry, by key prefix.", MetricType::Counter, 8),
            ("larder_prefix_bytes_sent_total", "Value bytes sent to clients, by key prefix.", MetricType::Counter, 9),
        ];
        for (name, help, ty, field) in families {
            e.family(name, help, ty);
            for (label, r) in &shown {
                let v = r.fields()[field].1;
                e.sample(name, &[("prefix", label)], v as f64);
            }
        }
    }

    /// Heap bytes used by the registry and every worker's counters.
    pub fn heap_bytes(&self) -> usize {
        let sh = &*self.shared;
        let reg = sh.reg.lock().unwrap();
        let workers = sh.workers.lock().unwrap();
        sh.fixed_bytes()
            + reg.free.capacity() * 8
            + reg.retiring.capacity() * 8
            + workers.capacity() * std::mem::size_of::<Arc<Counters>>()
            + workers.len() * sh.per_worker_bytes()
    }

    /// The most [`heap_bytes`](Self::heap_bytes) can ever be with `workers`
    /// worker handles alive at once, whatever keys are seen.
    pub fn memory_bound(&self, workers: usize) -> usize {
        let sh = &*self.shared;
        sh.fixed_bytes()
            + 2 * sh.names.len() * 8
            + workers.next_power_of_two().max(4) * std::mem::size_of::<Arc<Counters>>()
            + workers * sh.per_worker_bytes()
    }
}

/// The `prefix` label of a named prefix (see [`PrefixStats::write_prometheus`]).
fn prefix_label(prefix: &[u8]) -> String {
    let label = crate::escape::escaped_key(prefix);
    match label.strip_prefix('#') {
        Some(rest) => format!("%23{rest}"),
        None => label,
    }
}

fn add_row(acc: &mut PrefixRow, r: &PrefixRow) {
    acc.items += r.items;
    acc.bytes += r.bytes;
    acc.gets += r.gets;
    acc.hits += r.hits;
    acc.misses += r.misses;
    acc.sets += r.sets;
    acc.deletes += r.deletes;
    acc.evictions += r.evictions;
    acc.expired += r.expired;
    acc.bytes_sent += r.bytes_sent;
}

impl Shared {
    fn fixed_bytes(&self) -> usize {
        let n = self.names.len();
        self.index.len() * 8
            + n * std::mem::size_of::<SlotName>()
            + n * (std::mem::size_of::<SlotState>() + std::mem::size_of::<[u64; NCOUNTERS]>() + 8)
            + CELLS * 8
    }

    fn per_worker_bytes(&self) -> usize {
        self.names.len() * std::mem::size_of::<SlotCounters>()
            + CELLS * 8
            + std::mem::size_of::<Counters>()
            + CACHE_ENTRIES * std::mem::size_of::<CacheEntry>()
    }

    /// Raw sums over all workers, every slot.
    fn raw_all(&self) -> Vec<[u64; NCOUNTERS]> {
        let mut sums = vec![[0u64; NCOUNTERS]; self.names.len()];
        for w in self.workers.lock().unwrap().iter() {
            for (sum, c) in sums.iter_mut().zip(w.slots.iter()) {
                for (v, a) in sum.iter_mut().zip(c.iter()) {
                    *v = v.wrapping_add(a.load(Ordering::Relaxed));
                }
            }
        }
        sums
    }

    fn raw_slot(&self, s: usize) -> [u64; NCOUNTERS] {
        let mut sum = [0u64; NCOUNTERS];
        for w in self.workers.lock().unwrap().iter() {
            for (v, a) in sum.iter_mut().zip(w.slots[s].iter()) {
                *v = v.wrapping_add(a.load(Ordering::Relaxed));
            }
        }
        sum
    }

    /// Items of `other` in `cell`, over all workers.
    fn cell_items(&self, reg: &Registry, cell: usize) -> i64 {
        self.workers
            .lock()
            .unwrap()
            .iter()
            .fold(reg.cell_extra[cell], |a, w| a.wrapping_add(w.cells[cell].load(Ordering::Relaxed))) as i64
    }

    /// Ends the pending grace period if every worker has acknowledged it:
    /// retiring slots are freed, their counts folded into `other` (with
    /// their cell, should a racing call have left an item in one), and
    /// promotions are allowed again.
    fn try_complete(&self, reg: &mut Registry) {
        let Some(e) = reg.pending else { return };
        if !self.grace_done(e) {
            return;
        }
        for s in std::mem::take(&mut reg.retiring) {
            let r = self.raw_slot(s);
            let b = reg.base[s];
            for i in 0..NCOUNTERS {
                reg.other_extra[i] = reg.other_extra[i].wrapping_add(r[i].wrapping_sub(b[i]));
            }
            let items = r[ITEMS].wrapping_sub(b[ITEMS]);
            if items != 0 {
                let cell = cell_of(hash_bytes(&self.name(s)));
                reg.cell_extra[cell] = reg.cell_extra[cell].wrapping_add(items);
            }
            reg.state[s] = SlotState::Free;
            reg.free.push(s);
            reg.live -= 1;
            reg.name_bytes -= self.names[s].len.load(Ordering::Relaxed) as usize;
            reg.given_back += 1;
        }
        reg.free.sort_unstable_by(|a, b| b.cmp(a));
        reg.pending = None;
        reg.promotions_ok = true;
        reg.denials = 0;
    }

    /// Every worker in use has acknowledged epoch `e`.
    fn grace_done(&self, e: u64) -> bool {
        self.workers
            .lock()
            .unwrap()
            .iter()
            .all(|w| !w.in_use.load(Ordering::Acquire) || w.seen.load(Ordering::Acquire) >= e)
    }

    fn name(&self, s: usize) -> Vec<u8> {
        let n = &self.names[s];
        let len = n.len.load(Ordering::Acquire) as usize;
        let mut v = Vec::with_capacity(len + 8);
        for w in n.words.iter().take(len.div_ceil(8)) {
            v.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        v.truncate(len);
        v
    }

    #[inline]
    fn name_eq(&self, s: usize, p: &[u8]) -> bool {
        let n = &self.names[s];
        if n.len.load(Ordering::Relaxed) as usize != p.len() {
            return false;
        }
        n.words.iter().zip(p.chunks(8)).all(|(w, chunk)| w.load(Ordering::Relaxed) == partial_word(chunk))
    }

    /// Writes the name of an unreachable slot (under the registry lock).
    fn set_name(&self, s: usize, p: &[u8]) {
        let n = &self.names[s];
        for (w, chunk) in n.words.iter().zip(p.chunks(8)) {
            w.store(partial_word(chunk), Ordering::Relaxed);
        }
        n.len.store(p.len() as u32, Ordering::Release);
    }

    /// The slot of prefix `p` (hash `h`) if linked.
    #[inline]
    fn probe(&self, p: &[u8], h: u64) -> Option<usize> {
        let tag = h & 0xffff_ffff;
        let mut i = h as usize & self.mask;
        loop {
            let e = self.index[i].load(Ordering::Acquire);
            if e == 0 {
                return None;
            }
            if e & 0xffff_ffff == tag {
                let s = (e >> 32) as usize - 1;
                if self.name_eq(s, p) {
                    return Some(s);
                }
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Adds slot `s` (hash `h`) to the index (under the registry lock).
    fn link(&self, s: usize, h: u64) {
        let mut i = h as usize & self.mask;
        while self.index[i].load(Ordering::Relaxed) != 0 {
            i = (i + 1) & self.mask;
        }
        self.index[i].store(((s as u64 + 1) << 32) | (h & 0xffff_ffff), Ordering::Release);
    }

    /// Removes slot `s` from the index (under the registry lock, with
    /// `full` false: a reader that misses an entry while it moves takes the
    /// lock and probes again). Backward-shift deletion: no tombstones.
    fn unlink(&self, s: usize) {
        let h = hash_bytes(&self.name(s));
        let mut i = h as usize & self.mask;
        loop {
            let e = self.index[i].load(Ordering::Relaxed);
            assert!(e != 0, "unlink of a slot not in the index");
            if (e >> 32) as usize == s + 1 {
                break;
            }
            i = (i + 1) & self.mask;
        }
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let e = self.index[j].load(Ordering::Relaxed);
            if e == 0 {
                break;
            }
            let home = e as usize & self.mask;
            // e may move to the hole at i unless its home lies cyclically in (i, j]
            let stays = if i <= j { i < home && home <= j } else { i < home || home <= j };
            if !stays {
                self.index[i].store(e, Ordering::Release);
                i = j;
            }
        }
        self.index[i].store(0, Ordering::Release);
    }

    /// Slow path of a lookup miss, under the registry lock.
    #[cold]
    fn insert(&self, p: &[u8], h: u64, cell: usize) -> usize {
        let mut guard = self.reg.lock().unwrap();
        let reg = &mut *guard;
        if let Some(s) = self.probe(p, h) {
            return s;
        }
        if reg.pending.is_some() {
            self.try_complete(reg);
        }
        if let Some(k) = reg.retiring.iter().position(|&s| self.name_eq(s, p)) {
            // Its prefix is back before the slot was freed. While a slot is
            // retiring `full` stays false, so the prefix was sent nowhere
            // else: linking the slot again is exact.
            let s = reg.retiring.swap_remove(k);
            reg.state[s] = SlotState::Live;
            self.link(s, h);
            return s;
        }
        if reg.promotions_ok && !self.full.load(Ordering::Relaxed) {
            match reg.free.last() {
                Some(&s) if self.cell_items(reg, cell) == 0 => {
                    reg.free.pop();
                    reg.base[s] = self.raw_slot(s);
                    reg.state[s] = SlotState::Live;
                    reg.live += 1;
                    reg.name_bytes += p.len();
                    self.set_name(s, p);
                    self.link(s, h);
                    reg.denials = 0;
                    if reg.free.is_empty() {
                        self.full.store(true, Ordering::Release);
                    }
                    return s;
                }
                Some(_) => {
                    reg.denials += 1;
                    if reg.denials >= DENIALS_BEFORE_CLOSE {
                        self.full.store(true, Ordering::Release);
                    }
                }
                None => self.full.store(true, Ordering::Release),
            }
        }
        OTHER
    }
}

impl PrefixWorker {
    /// The slot of `key`'s row and, for `other`, the cell of its prefix.
    #[inline(always)]
    fn slot_of(&mut self, key: &[u8]) -> (usize, usize) {
        let e = self.shared.epoch.load(Ordering::Acquire);
        if e != self.epoch {
            self.ack(e);
        }
        match find_byte(key, self.shared.cfg.delimiter) {
            Some(i) => self.prefix_slot(&key[..i]),
            None => (UNPREFIXED, 0),
        }
    }

    /// [`slot_of`](Self::slot_of) for prefix `p`: from the cache, else
    /// from the registry.
    #[inline(never)]
    fn prefix_slot(&mut self, p: &[u8]) -> (usize, usize) {
        let i = p.len();
        if i > 16 {
            return self.lookup(p);
        }
        let (w0, w1) = if i <= 8 { (partial_word(p), 0) } else { (word(&p[..8]), partial_word(&p[8..])) };
        let ci = cache_index(w0, w1, i);
        let c = self.cache[ci];
        if c.w0 == w0 && c.w1 == w1 && c.len == i as u32 && c.slot != 0 {
            // a tracked slot: its cell is never used
            return (c.slot as usize, 0);
        }
        let (s, cell) = self.lookup(p);
        if s >= FIRST_NAMED {
            self.cache[ci] = CacheEntry { w0, w1, len: i as u32, slot: s as u32 };
        }
        (s, cell)
    }

    /// The slot (and `other` cell) of prefix `p`, from the registry.
    #[inline]
    fn lookup(&mut self, p: &[u8]) -> (usize, usize) {
        let h = hash_bytes(p);
        let cell = cell_of(h);
        let s = match self.shared.probe(p, h) {
            Some(s) => s,
            // `full` is set after the links made before it: having seen it,
            // probe again, or a prefix linked just then could be missed.
            None if self.shared.full.load(Ordering::Acquire) => self.shared.probe(p, h).unwrap_or(OTHER),
            None => self.shared.insert(p, h, cell),
        };
        (s, cell)
    }

    #[cold]
    fn ack(&mut self, e: u64) {
        self.cache.fill(CacheEntry::default());
        self.epoch = e;
        self.counters.seen.store(e, Ordering::Release);
    }

    /// Acknowledges registry changes without reporting an event. Call it
    /// when the worker goes idle (e.g. before blocking in `epoll_wait`), so
    /// that an idle worker does not hold back [`PrefixStats::maintain`].
    #[inline]
    pub fn quiesce(&mut self) {
        let e = self.shared.epoch.load(Ordering::Acquire);
        if e != self.epoch {
            self.ack(e);
        }
    }

    #[inline]
    fn add(&self, slot: usize, i: usize, delta: u64) {
        let c = &self.counters.slots[slot][i];
        // Single writer: a plain load + store, no locked instruction.
        c.store(c.load(Ordering::Relaxed).wrapping_add(delta), Ordering::Relaxed);
    }

    #[inline]
    fn items(&self, slot: usize, cell: usize, delta: u64) {
        self.add(slot, ITEMS, delta);
        if slot == OTHER {
            let c = &self.counters.cells[cell];
            c.store(c.load(Ordering::Relaxed).wrapping_add(delta), Ordering::Relaxed);
        }
    }

    #[inline]
    fn detail(&self) -> bool {
        self.shared.detail.load(Ordering::Relaxed)
    }

    /// A key lookup (`get`/`gets`/`gat`/`mg`..., once per key):
    /// `bytes_sent` is the value bytes sent back (0 on a miss).
    #[inline]
    pub fn on_get(&mut self, key: &[u8], hit: bool, bytes_sent: u64) {
        let (s, _) = self.slot_of(key);
        if hit {
            self.add(s, HITS, 1);
            self.add(s, BYTES_SENT, bytes_sent);
        } else {
            self.add(s, MISSES, 1);
        }
        if self.detail() {
            self.add(s, D_GET, 1);
            if hit {
                self.add(s, D_HIT, 1);
            }
        }
    }

    /// An item was stored under `key`, charging `new_item_bytes`; it replaced
    /// an item of `old_item_bytes` (`None`: the key was not stored before).
    /// Also for append/prepend/incr/decr that change the size.
    #[inline]
    pub fn on_set(&mut self, key: &[u8], new_item_bytes: u64, old_item_bytes: Option<u64>) {
        let (s, cell) = self.slot_of(key);
        self.add(s, SETS, 1);
        match old_item_bytes {
            None => self.items(s, cell, 1),
            Some(old) => self.add(s, BYTES, old.wrapping_neg()),
        }
        self.add(s, BYTES, new_item_bytes);
        if self.detail() {
            self.add(s, D_SET, 1);
        }
    }

    /// An item came back with a warm restart (the server's `-e`): it joins
    /// its prefix's items and bytes, and counts as no command.
    pub fn on_restored(&mut self, key: &[u8], item_bytes: u64) {
        let (s, cell) = self.slot_of(key);
        self.items(s, cell, 1);
        self.add(s, BYTES, item_bytes);
    }

    /// An item changed size without a storage command (incr/decr rewrote
    /// it): only `bytes` moves; memcached's `stats detail` does not count
    /// incr/decr.
    #[inline]
    pub fn on_resize(&mut self, key: &[u8], new_item_bytes: u64, old_item_bytes: u64) {
        if new_item_bytes != old_item_bytes {
            let (s, _) = self.slot_of(key);
            self.add(s, BYTES, new_item_bytes.wrapping_sub(old_item_bytes));
        }
    }

    /// A storage command that stored nothing (NOT_STORED, EXISTS, too
    /// large, ...): memcached's `stats detail` counts it as a `set`.
    #[inline]
    pub fn on_set_failed(&mut self, key: &[u8]) {
        if self.detail() {
            let (s, _) = self.slot_of(key);
            self.add(s, D_SET, 1);
        }
    }

    /// A `delete`: `item_bytes` is the size of the item removed, `None` when
    /// the key was not found (memcached's detail `del` counts both).
    #[inline]
    pub fn on_delete(&mut self, key: &[u8], item_bytes: Option<u64>) {
        let (s, cell) = self.slot_of(key);
        if let Some(b) = item_bytes {
            self.add(s, DELETES, 1);
            self.remove(s, cell, b);
        }
        if self.detail() {
            self.add(s, D_DEL, 1);
        }
    }

    /// An item left without a delete, eviction or expiry (a failed `set`
    /// dropped it): only `items` and `bytes` move.
    #[inline]
    pub fn on_drop(&mut self, key: &[u8], item_bytes: u64) {
        let (s, cell) = self.slot_of(key);
        self.remove(s, cell, item_bytes);
    }

    /// The store evicted an item.
    #[inline]
    pub fn on_evict(&mut self, key: &[u8], item_bytes: u64) {
        let (s, cell) = self.slot_of(key);
        self.add(s, EVICTIONS, 1);
        self.remove(s, cell, item_bytes);
    }

    /// The store reclaimed an expired (or flushed) item.
    #[inline]
    pub fn on_expire(&mut self, key: &[u8], item_bytes: u64) {
        let (s, cell) = self.slot_of(key);
        self.add(s, EXPIRED, 1);
        self.remove(s, cell, item_bytes);
    }

    #[inline]
    fn remove(&self, s: usize, cell: usize, bytes: u64) {
        self.items(s, cell, u64::MAX); // -1
        self.add(s, BYTES, bytes.wrapping_neg());
    }

    /// The shared half.
    pub fn stats(&self) -> PrefixStats {
        PrefixStats { shared: self.shared.clone() }
    }
}

impl Drop for PrefixWorker {
    fn drop(&mut self) {
        self.counters.in_use.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use larder_testkit::XorShift64;

    fn named<'a>(rows: &'a [PrefixRow], p: &str) -> &'a PrefixRow {
        rows.iter().find(|r| r.prefix == PrefixName::Named(p.as_bytes().to_vec())).unwrap()
    }

    #[test]
    fn three_prefixes_exact_then_delete_and_evict() {
        let st = PrefixStats::new(PrefixConfig::default());
        let mut a = st.worker();
        let mut b = st.worker();
        // user: 3 items of 100 bytes, item: 2 of 10_000, sess: 5 of 48
        for i in 0..3 {
            a.on_set(format!("user:{i}").as_bytes(), 100, None);
        }
        for i in 0..2 {
            b.on_set(format!("item:{i}").as_bytes(), 10_000, None);
        }
        for i in 0..5 {
            a.on_set(format!("sess:{i}").as_bytes(), 48, None);
        }
        let rows = st.snapshot();
        assert_eq!((named(&rows, "user").items, named(&rows, "user").bytes), (3, 300));
        assert_eq!((named(&rows, "item").items, named(&rows, "item").bytes), (2, 20_000));
        assert_eq!((named(&rows, "sess").items, named(&rows, "sess").bytes), (5, 240));
        // overwrite one user item with a bigger one (worker b), delete one
        // (worker b: deleted by another worker than the one that stored it),
        // evict one item:, expire one sess:
        b.on_set(b"user:0", 150, Some(100));
        b.on_delete(b"user:1", Some(100));
        a.on_delete(b"user:404", None);
        a.on_evict(b"item:0", 10_000);
        b.on_expire(b"sess:4", 48);
        let rows = st.snapshot();
        let u = named(&rows, "user");
        assert_eq!((u.items, u.bytes, u.sets, u.deletes), (2, 250, 4, 1));
        let it = named(&rows, "item");
        assert_eq!((it.items, it.bytes, it.evictions), (1, 10_000, 1));
        let s = named(&rows, "sess");
        assert_eq!((s.items, s.bytes, s.expired), (4, 192, 1));
        assert_eq!(rows.len(), 3);
    }

    #[test]
    fn gets_hits_bytes_sent_and_reset() {
        let st = PrefixStats::new(PrefixConfig::default());
        let mut w = st.worker();
        w.on_set(b"a:1", 60, None);
        w.on_get(b"a:1", true, 10);
        w.on_get(b"a:1", true, 10);
        w.on_get(b"a:2", false, 0);
        let r = st.row(b"a").unwrap();
        assert_eq!((r.gets, r.hits, r.misses, r.bytes_sent), (3, 2, 1, 20));
        st.reset();
        let r = st.row(b"a").unwrap();
        assert_eq!((r.items, r.bytes, r.gets, r.hits, r.sets), (1, 60, 0, 0, 0));
        w.on_get(b"a:1", true, 10);
        assert_eq!(st.row(b"a").unwrap().gets, 1);
    }

    #[test]
    fn unprefixed_and_empty_prefix() {
        let st = PrefixStats::new(PrefixConfig::default());
        let mut w = st.worker();
        w.on_set(b"plain", 10, None);
        w.on_set(b":e", 20, None);
        let rows = st.snapshot();
        assert_eq!(named(&rows, "").bytes, 20);
        let u = rows.iter().find(|r| r.prefix == PrefixName::Unprefixed).unwrap();
        assert_eq!((u.items, u.bytes), (1, 10));
    }

    #[test]
    fn other_delimiter() {
        let st = PrefixStats::new(PrefixConfig { delimiter: b'/', max_prefixes: 8 });
        let mut w = st.worker();
        w.on_set(b"a:b/c", 1, None);
        assert_eq!(st.row(b"a:b").unwrap().items, 1);
    }

    /// The session of memcached's t/stats-detail.t, and the bytes memcached
    /// 1.6.18 answered to the same traffic (recorded by hand against
    /// `/usr/bin/memcached`).
    #[test]
    fn detail_dump_matches_memcached() {
        let st = PrefixStats::new(PrefixConfig::default());
        let mut w = st.worker();
        let dump = |st: &PrefixStats| {
            let mut v = Vec::new();
            st.render_detail_dump(&mut v);
            String::from_utf8(v).unwrap()
        };
        assert_eq!(dump(&st), "END\r\n");
        st.set_detail(true);
        w.on_set(b"foo:123", 70, None);
        assert_eq!(dump(&st), "PREFIX foo get 0 hit 0 set 1 del 0\r\nEND\r\n");
        w.on_get(b"foo:123", true, 6);
        assert_eq!(dump(&st), "PREFIX foo get 1 hit 1 set 1 del 0\r\nEND\r\n");
        w.on_get(b"foo:124", false, 0);
        assert_eq!(dump(&st), "PREFIX foo get 2 hit 1 set 1 del 0\r\nEND\r\n");
        w.on_delete(b"foo:125", None);
        assert_eq!(dump(&st), "PREFIX foo get 2 hit 1 set 1 del 1\r\nEND\r\n");
        st.reset();
        assert_eq!(dump(&st), "END\r\n");
        w.on_get(b"foo:123", true, 6);
        assert_eq!(dump(&st), "PREFIX foo get 1 hit 1 set 0 del 0\r\nEND\r\n");
        st.set_detail(false);
        w.on_get(b"foo:124", false, 0);
        w.on_get(b"foo:123", true, 6);
        assert_eq!(dump(&st), "PREFIX foo get 1 hit 1 set 0 del 0\r\nEND\r\n");

        // A second session, recorded from memcached 1.6.18: the empty
        // prefix prints with two spaces; keys without ':' are not counted;
        // a failed delete counts.
        let st = PrefixStats::new(PrefixConfig::default());
        let mut w = st.worker();
        st.set_detail(true);
        w.on_set(b"foo:1", 1, None);
        w.on_set(b"foo:2", 1, None);
        w.on_set(b"bar", 1, None);
        w.on_get(b"foo:1", true, 3);
        w.on_get(b"foo:9", false, 0);
        w.on_get(b"bar", true, 1);
        w.on_delete(b"foo:2", Some(1));
        w.on_delete(b"nope:1", None);
        w.on_set(b":e", 1, None);
        w.on_get(b":e", true, 1);
        assert_eq!(
            dump(&st),
            "PREFIX  get 1 hit 1 set 1 del 0\r\n\
             PREFIX foo get 2 hit 1 set 2 del 1\r\n\
             PREFIX nope get 0 hit 0 set 0 del 1\r\n\
             END\r\n"
        );
    }

    #[test]
    fn prefixes_table_format() {
        let st = PrefixStats::new(PrefixConfig { delimiter: b':', max_prefixes: 2 });
        let mut w = st.worker();
        w.on_set(b"small:1", 10, None);
        w.on_set(b"big:1", 1000, None);
        w.on_get(b"big:1", true, 900);
        w.on_set(b"third:1", 5, None); // table full: folded into other
        w.on_set(b"nodelim", 7, None);
        let mut v = Vec::new();
        st.render_prefixes(&mut v);
        let text = String::from_utf8(v).unwrap();
        let expected = "\
STAT prefix:big:items 1\r\nSTAT prefix:big:bytes 1000\r\nSTAT prefix:big:gets 1\r\nSTAT prefix:big:hits 1\r\n\
STAT prefix:big:misses 0\r\nSTAT prefix:big:sets 1\r\nSTAT prefix:big:deletes 0\r\nSTAT prefix:big:evictions 0\r\n\
STAT prefix:big:expired 0\r\nSTAT prefix:big:bytes_sent 900\r\n\
STAT prefix:small:items 1\r\nSTAT prefix:small:bytes 10\r\nSTAT prefix:small:gets 0\r\nSTAT prefix:small:hits 0\r\n\
STAT prefix:small:misses 0\r\nSTAT prefix:small:sets 1\r\nSTAT prefix:small:deletes 0\r\nSTAT prefix:small:evictions 0\r\n\
STAT prefix:small:expired 0\r\nSTAT prefix:small:bytes_sent 0\r\n\
STAT other:items 1\r\nSTAT other:bytes 5\r\nSTAT other:gets 0\r\nSTAT other:hits 0\r\nSTAT other:misses 0\r\n\
STAT other:sets 1\r\nSTAT other:deletes 0\r\nSTAT other:evictions 0\r\nSTAT other:expired 0\r\nSTAT other:bytes_sent 0\r\n\
STAT unprefixed:items 1\r\nSTAT unprefixed:bytes 7\r\nSTAT unprefixed:gets 0\r\nSTAT unprefixed:hits 0\r\n\
STAT unprefixed:misses 0\r\nSTAT unprefixed:sets 1\r\nSTAT unprefixed:deletes 0\r\nSTAT unprefixed:evictions 0\r\n\
STAT unprefixed:expired 0\r\nSTAT unprefixed:bytes_sent 0\r\n\
STAT prefixes_tracked 2\r\nSTAT prefixes_limit 2\r\nEND\r\n";
        assert_eq!(text, expected);
        // the fold keeps later operations on the untracked prefix consistent
        w.on_delete(b"third:1", Some(5));
        let rows = st.snapshot();
        assert!(rows.iter().all(|r| r.prefix != PrefixName::Other || r.items == 0));
    }

    #[test]
    fn million_random_prefixes_stay_bounded() {
        let cfg = PrefixConfig { delimiter: b':', max_prefixes: 1024 };
        let st = PrefixStats::new(cfg);
        let mut w1 = st.worker();
        let mut w2 = st.worker();
        // a few real prefixes first, then a million random ones
        w1.on_set(b"user:1", 100, None);
        w1.on_set(b"item:1", 200, None);
        let mut r = XorShift64(0x1234_5678);
        let mut key = Vec::with_capacity(64);
        let mut total_bytes = 300i64;
        for i in 0..1_000_000u64 {
            let x = r.next_u64();
            key.clear();
            key.extend_from_slice(format!("{x:016x}{i}:k").as_bytes());
            let w = if i % 2 == 0 { &mut w1 } else { &mut w2 };
            w.on_set(&key, 50, None);
            total_bytes += 50;
            if i % 100_000 == 0 {
                st.maintain();
            }
        }
        let bound = st.memory_bound(2);
        let used = st.heap_bytes();
        assert!(used <= bound, "{used} > {bound}");
        assert!(bound < 1 << 20, "bound {bound}");
        assert_eq!(st.tracked(), 1024);
        let rows = st.snapshot();
        assert_eq!(rows.len(), 1024 + 1);
        assert_eq!(named(&rows, "user").bytes, 100);
        assert_eq!(rows.iter().map(|r| r.bytes).sum::<i64>(), total_bytes);
        assert_eq!(rows.iter().map(|r| r.items).sum::<i64>(), 1_000_002);
    }

    #[test]
    fn concurrent_workers_sum_exactly() {
        let st = PrefixStats::new(PrefixConfig { delimiter: b':', max_prefixes: 64 });
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let mut w = st.worker();
                std::thread::spawn(move || {
                    for i in 0..20_000u32 {
                        let key = format!("p{}:{}", i % 100, t);
                        w.on_set(key.as_bytes(), 10, None);
                        w.on_get(key.as_bytes(), true, 3);
                        if (i / 100) % 2 == 0 {
                            w.on_delete(key.as_bytes(), Some(10));
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let rows = st.snapshot();
        assert_eq!(st.tracked(), 64);
        assert_eq!(rows.iter().map(|r| r.items).sum::<i64>(), 4 * 10_000);
        assert_eq!(rows.iter().map(|r| r.bytes).sum::<i64>(), 4 * 100_000);
        for r in &rows {
            if let PrefixName::Named(_) = r.prefix {
                // each tracked prefix: 4 threads x 200 sets, half deleted
                assert_eq!((r.sets, r.items), (800, 400));
            }
        }
    }

    fn other(rows: &[PrefixRow]) -> (i64, i64) {
        rows.iter().find(|r| r.prefix == PrefixName::Other).map(|r| (r.items, r.bytes)).unwrap_or((0, 0))
    }

    #[test]
    fn idle_empty_prefixes_give_way_to_new_ones() {
        let st = PrefixStats::new(PrefixConfig { delimiter: b':', max_prefixes: 8 });
        let mut w = st.worker();
        for i in 0..8 {
            w.on_set(format!("junk{i}:1").as_bytes(), 10, None);
        }
        assert_eq!(st.tracked(), 8);
        // a real prefix arrives while the table is full: other
        w.on_set(b"user:1", 100, None);
        assert_eq!(other(&st.snapshot()), (1, 100));
        // the junk expires
        for i in 0..8 {
            w.on_expire(format!("junk{i}:1").as_bytes(), 10);
        }
        st.maintain(); // junk was busy during this period: kept
        assert_eq!(st.given_back(), 0);
        w.on_get(b"user:1", true, 5); // traffic turned away
        w.on_get(b"sess:1", false, 0);
        st.maintain(); // junk idle and empty: 4 slots unlinked, grace period starts
        assert_eq!(st.given_back(), 0);
        // the worker's next call acknowledges the epoch; its lookup of an
        // untracked prefix ends the grace period (4 slots freed), and sess:
        // has no items in other, so it takes one at once
        w.on_get(b"sess:1", false, 0);
        assert_eq!(st.given_back(), 4);
        assert_eq!(st.tracked(), 5);
        st.maintain();
        w.on_set(b"sess:1", 48, None);
        let rows = st.snapshot();
        let sess = named(&rows, "sess");
        assert_eq!((sess.items, sess.bytes, sess.sets, sess.gets), (1, 48, 1, 1));
        // user: has an item in other: stays there, exactly
        w.on_set(b"user:2", 100, None);
        assert!(st.row(b"user").is_none());
        assert_eq!(other(&st.snapshot()), (2, 200));
        // once its items are gone it can take a slot
        w.on_delete(b"user:1", Some(100));
        w.on_delete(b"user:2", Some(100));
        assert_eq!(other(&st.snapshot()), (0, 0));
        w.on_set(b"user:3", 70, None);
        let rows = st.snapshot();
        assert_eq!((named(&rows, "user").items, named(&rows, "user").bytes), (1, 70));
        assert_eq!(other(&rows), (0, 0));
        // traffic of the freed junk slots stays in the totals (in other)
        let sets: u64 = rows.iter().map(|r| r.sets).sum();
        assert_eq!(sets, 8 + 1 + 1 + 1 + 1);
    }

    #[test]
    fn retiring_prefix_that_comes_back_keeps_its_slot() {
        let st = PrefixStats::new(PrefixConfig { delimiter: b':', max_prefixes: 4 });
        let mut w = st.worker();
        let mut idle = st.worker(); // never calls: holds the grace period
        for p in ["a", "b", "c", "d"] {
            w.on_set(format!("{p}:1").as_bytes(), 10, None);
            w.on_delete(format!("{p}:1").as_bytes(), Some(10));
        }
        st.maintain();
        w.on_get(b"x:1", false, 0);
        st.maintain(); // a..d unlinked, grace pending on `idle`
        assert!(st.snapshot().iter().any(|r| r.prefix == PrefixName::Named(b"a".to_vec())));
        w.on_set(b"a:2", 33, None); // a comes back: linked again
        w.on_set(b"x:2", 5, None); // other: no promotions before the grace period
        st.maintain();
        assert_eq!(st.given_back(), 0);
        idle.quiesce();
        st.maintain(); // b, c, d freed; a kept
        assert_eq!(st.given_back(), 3);
        let rows = st.snapshot();
        let a = named(&rows, "a");
        assert_eq!((a.items, a.bytes, a.sets, a.deletes), (1, 33, 2, 1));
        assert_eq!(other(&rows), (1, 5));
    }

    #[test]
    fn cached_prefix_does_not_follow_its_slot_to_a_new_prefix() {
        let st = PrefixStats::new(PrefixConfig { delimiter: b':', max_prefixes: 2 });
        let mut w = st.worker();
        let mut v = st.worker();
        for p in ["a", "b"] {
            // a and b get slots, and w caches them
            w.on_set(format!("{p}:1").as_bytes(), 10, None);
            w.on_delete(format!("{p}:1").as_bytes(), Some(10));
            w.on_get(format!("{p}:1").as_bytes(), false, 0);
        }
        st.maintain();
        v.on_get(b"x:1", false, 0); // turned away: other is busy
        st.maintain(); // a and b unlinked, grace period pending
        v.on_get(b"x:1", false, 0); // v acknowledges
        w.on_get(b"x:1", false, 0); // w acknowledges; a and b freed, x takes a's old slot
        assert_eq!(st.given_back(), 2);
        for _ in 0..3 {
            w.on_get(b"a:1", true, 7); // a must not count into x's row
        }
        let rows = st.snapshot();
        let x = named(&rows, "x");
        assert_eq!((x.gets, x.hits), (1, 0));
        let a = named(&rows, "a");
        assert_eq!((a.gets, a.hits, a.bytes_sent), (3, 3, 21));
    }

    #[test]
    fn stalled_grace_period_is_given_up() {
        let st = PrefixStats::new(PrefixConfig { delimiter: b':', max_prefixes: 4 });
        let mut w = st.worker();
        let _idle = st.worker();
        for p in ["a", "b", "c", "d"] {
            w.on_set(format!("{p}:1").as_bytes(), 10, None);
            w.on_delete(format!("{p}:1").as_bytes(), Some(10));
        }
        st.maintain();
        for _ in 0..10 {
            w.on_get(b"x:1", false, 0);
            st.maintain();
        }
        assert_eq!(st.given_back(), 0);
        assert_eq!(st.tracked(), 4);
        // lookups are back on the lock-free path and counts are intact
        w.on_set(b"b:9", 1, None);
        assert_eq!(st.row(b"b").unwrap().items, 1);
    }

    #[test]
    fn exact_under_concurrent_churn_and_maintenance() {
        use std::collections::HashMap;
        use std::sync::atomic::AtomicBool;
        let st = PrefixStats::new(PrefixConfig { delimiter: b':', max_prefixes: 16 });
        let stop = Arc::new(AtomicBool::new(false));
        let maint = {
            let st = st.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    st.maintain();
                    std::thread::sleep(std::time::Duration::from_micros(300));
                }
            })
        };
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let mut w = st.worker();
                std::thread::spawn(move || {
                    let mut live: HashMap<Vec<u8>, u64> = HashMap::new();
                    let mut r = XorShift64(0x9E37_79B9_7F4A_7C15u64 ^ (t + 1));
                    for round in 0..6u64 {
                        // each round uses its own 12 prefixes, then deletes everything
                        for i in 0..6000 {
                            if i % 500 == 0 {
                                std::thread::sleep(std::time::Duration::from_millis(1));
                            }
                            let x = r.next_u64();
                            let key = format!("p{}:{}:{}", round * 12 + x % 12, t, (x >> 8) % 50).into_bytes();
                            let size = 10 + (x >> 20) % 90;
                            match (x >> 40) % 4 {
                                0 | 1 => {
                                    let old = live.insert(key.clone(), size);
                                    w.on_set(&key, size, old);
                                }
                                2 => {
                                    let old = live.remove(&key);
                                    w.on_delete(&key, old);
                                }
                                _ => {
                                    let hit = live.get(&key).copied();
                                    w.on_get(&key, hit.is_some(), hit.unwrap_or(0));
                                }
                            }
                        }
                        if round < 5 {
                            for (k, v) in live.drain() {
                                w.on_evict(&k, v);
                            }
                        }
                        w.quiesce();
                    }
                    w.quiesce();
                    live
                })
            })
            .collect();
        let mut truth: HashMap<Vec<u8>, (i64, i64)> = HashMap::new();
        for th in threads {
            for (k, v) in th.join().unwrap() {
                let p = key_prefix(&k);
                let e = truth.entry(p).or_default();
                e.0 += 1;
                e.1 += v as i64;
            }
        }
        stop.store(true, Ordering::Relaxed);
        maint.join().unwrap();
        st.maintain();
        let rows = st.snapshot();
        let mut untracked = (0i64, 0i64);
        for (p, (items, bytes)) in &truth {
            match rows.iter().find(|r| r.prefix == PrefixName::Named(p.clone())) {
                Some(r) => assert_eq!((r.items, r.bytes), (*items, *bytes), "{}", String::from_utf8_lossy(p)),
                None => {
                    untracked.0 += items;
                    untracked.1 += bytes;
                }
            }
        }
        for r in &rows {
            if let PrefixName::Named(p) = &r.prefix {
                if !truth.contains_key(p) {
                    assert_eq!((r.items, r.bytes), (0, 0), "{}", String::from_utf8_lossy(p));
                }
            }
        }
        assert_eq!(other(&rows), untracked);
        assert!(st.given_back() > 0, "no slot was ever given back");
        assert!(st.tracked() <= 16);
    }

    fn key_prefix(k: &[u8]) -> Vec<u8> {
        k[..k.iter().position(|&b| b == b':').unwrap()].to_vec()
    }

    #[test]
    fn restored_items_count_as_items_not_sets() {
        let st = PrefixStats::new(PrefixConfig::default());
        let mut w = st.worker();
        w.on_restored(b"a:1", 50);
        w.on_restored(b"a:2", 70);
        let r = st.row(b"a").unwrap();
        assert_eq!((r.items, r.bytes, r.sets), (2, 120, 0));
        w.on_delete(b"a:1", Some(50));
        assert_eq!((st.row(b"a").unwrap().items, st.row(b"a").unwrap().bytes), (1, 70));
    }

    #[test]
    fn dropped_worker_keeps_counts_and_is_reused() {
        let st = PrefixStats::new(PrefixConfig::default());
        {
            let mut w = st.worker();
            w.on_set(b"a:1", 5, None);
        }
        let before = st.heap_bytes();
        let mut w = st.worker();
        assert_eq!(st.heap_bytes(), before);
        w.on_delete(b"a:1", Some(5));
        assert_eq!(st.row(b"a").unwrap().items, 0);
    }
}
