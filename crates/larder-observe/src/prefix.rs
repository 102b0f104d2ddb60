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
//! # Design: a shared, insert-only prefix registry + per-worker counters
//!
//! * **Registry.** A fixed-capacity table maps a prefix to a slot number. It
//!   is an open-addressing array of `AtomicU64` entries (`tag << 32 | slot`)
//!   of twice the slot capacity, probed linearly, read without any lock.
//!   The prefix bytes of slot `s` live in a `OnceLock<Box<[u8]>>`, written
//!   once before the entry that points at it is published (release/acquire),
//!   so a reader never sees a half-written name. A new prefix takes a mutex
//!   (slow path, taken at most once per distinct prefix while the table has
//!   room, never again once it is full: an atomic `full` flag short-circuits).
//! * **Counters.** Each worker thread owns a [`PrefixWorker`] holding its own
//!   array of counters per slot (`AtomicU64`, written only by the owner with a
//!   plain load + store, i.e. no locked instruction, no shared cache line).
//!   The reporter sums all workers' arrays. `items` and `bytes` are kept as
//!   wrapping signed deltas, so an item stored by worker A and deleted by
//!   worker B nets to zero in the sum: the totals are exact.
//! * **Hot path cost.** One hash of the prefix bytes, usually one probe
//!   (load factor <= 1/2), one byte comparison of the prefix, 2-4 counter
//!   updates in the worker's own memory, one relaxed load of the `detail`
//!   flag. No allocation, no lock, no shared writes.
//!
//! # The bound, and the `other` row
//!
//! At most `max_prefixes` distinct prefixes get their own row; slots are
//! assigned first come, first served, and kept for the life of the process
//! (a slot's counters are what makes `items`/`bytes` exact: an item must be
//! un-counted from the row it was counted into, and with no per-item state
//! the only safe mapping is one that never changes). Every prefix seen after
//! the table is full is folded into the `other` row. So:
//!
//! * tracked rows are exact (items, bytes and all counters);
//! * `other` is exact as an aggregate of the untracked prefixes;
//! * the sum over all rows (tracked + `other` + `unprefixed`) equals the
//!   store's totals.
//!
//! The trade-off: in a workload whose first `max_prefixes` prefixes are junk
//! (say a scan of random keys right after start), the real prefixes that
//! come later land in `other`. Size `max_prefixes` above the number of real
//! prefixes (the default, 1024, covers typical deployments with tens to
//! hundreds). Memory is bounded regardless of the key stream:
//! [`PrefixStats::memory_bound`] gives the worst case, [`PrefixStats::heap_bytes`]
//! the current use; a million random prefixes cannot grow it.
//!
//! # `stats detail dump` (memcached's format)
//!
//! ```text
//! PREFIX <prefix> get <n> hit <n> set <n> del <n>\r\n
//! ...
//! END\r\n
//! ```
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
//! The stat name of a row is split at its **last** `:` into row and field
//! (field names contain no `:`; a prefix never contains the delimiter, and
//! may contain `:` only when the delimiter is something else). Rows whose
//! every field is zero are omitted. `items`/`bytes` are never reset;
//! the traffic fields restart from zero at `stats reset`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::prometheus::{Exposition, MetricType};
use crate::util::{hash_bytes, push_u64, stat_i64};

/// Default number of prefixes tracked individually.
pub const DEFAULT_MAX_PREFIXES: usize = 1024;
/// Longest prefix possible (memcached's key length limit).
pub const MAX_PREFIX_LEN: usize = 250;

const ITEMS: usize = 0;
const BYTES: usize = 1;
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
    in_use: AtomicBool,
}

struct Shared {
    cfg: PrefixConfig,
    index: Box<[AtomicU64]>,
    mask: usize,
    names: Box<[OnceLock<Box<[u8]>>]>,
    named: AtomicUsize,
    name_bytes: AtomicUsize,
    full: AtomicBool,
    insert_lock: Mutex<()>,
    workers: Mutex<Vec<Arc<Counters>>>,
    detail: AtomicBool,
    /// `stats reset` baselines, per slot (reporter side only).
    baseline: Mutex<Vec<[u64; NCOUNTERS]>>,
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
    /// The last prefix looked up and its slot (mappings never change, so
    /// this one-entry cache is always valid): saves the hash and the probe
    /// when consecutive keys share a prefix (multi-gets, skewed traffic).
    last: [u8; CACHE_LEN],
    last_len: usize,
    last_slot: usize,
}

const CACHE_LEN: usize = 48;

/// Which row a [`PrefixRow`] is.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum PrefixName {
    /// A tracked prefix (the bytes before the delimiter).
    Named(Vec<u8>),
    /// All prefixes seen after the table was full.
    #[default]
    Other,
    /// Keys without the delimiter.
    Unprefixed,
}

/// One row of a [`PrefixStats::snapshot`]: merged over all workers, traffic
/// counters relative to the last [`PrefixStats::reset`].
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
    Arc::new(Counters { slots: slots.into_boxed_slice(), in_use: AtomicBool::new(true) })
}

impl PrefixStats {
    /// A registry for `cfg.max_prefixes` prefixes (at least 1).
    pub fn new(cfg: PrefixConfig) -> Self {
        let max = cfg.max_prefixes.max(1);
        let cfg = PrefixConfig { max_prefixes: max, ..cfg };
        let cap = (max * 2).next_power_of_two().max(16);
        let index: Vec<AtomicU64> = (0..cap).map(|_| AtomicU64::new(0)).collect();
        let names: Vec<OnceLock<Box<[u8]>>> = (0..max + FIRST_NAMED).map(|_| OnceLock::new()).collect();
        PrefixStats {
            shared: Arc::new(Shared {
                cfg,
                index: index.into_boxed_slice(),
                mask: cap - 1,
                names: names.into_boxed_slice(),
                named: AtomicUsize::new(0),
                name_bytes: AtomicUsize::new(0),
                full: AtomicBool::new(false),
                insert_lock: Mutex::new(()),
                workers: Mutex::new(Vec::new()),
                detail: AtomicBool::new(false),
                baseline: Mutex::new(vec![[0; NCOUNTERS]; max + FIRST_NAMED]),
            }),
        }
    }

    pub fn config(&self) -> PrefixConfig {
        self.shared.cfg
    }

    /// A counter set for one worker thread (reuses a dropped worker's).
    pub fn worker(&self) -> PrefixWorker {
        let mut workers = self.shared.workers.lock().unwrap();
        for c in workers.iter() {
            if c.in_use.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                return PrefixWorker::new(self.shared.clone(), c.clone());
            }
        }
        let c = new_counters(self.shared.names.len());
        workers.push(c.clone());
        PrefixWorker::new(self.shared.clone(), c)
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
        let raw = self.raw();
        let mut base = self.shared.baseline.lock().unwrap();
        for (b, r) in base.iter_mut().zip(raw.iter()) {
            b[GETS..].copy_from_slice(&r[GETS..]);
        }
    }

    /// Number of prefixes with their own row.
    pub fn tracked(&self) -> usize {
        self.shared.named.load(Ordering::Acquire)
    }

    fn raw(&self) -> Vec<[u64; NCOUNTERS]> {
        let n = FIRST_NAMED + self.tracked();
        let mut sums = vec![[0u64; NCOUNTERS]; n];
        let workers = self.shared.workers.lock().unwrap();
        for w in workers.iter() {
            for (s, sum) in sums.iter_mut().enumerate() {
                for (i, v) in sum.iter_mut().enumerate() {
                    *v = v.wrapping_add(w.slots[s][i].load(Ordering::Relaxed));
                }
            }
        }
        sums
    }

    /// All rows with any activity: tracked prefixes (in slot order), then
    /// `other`, then `unprefixed`. Merged over workers, relative to the last
    /// reset. O(workers x tracked prefixes); takes no lock a worker takes.
    pub fn snapshot(&self) -> Vec<PrefixRow> {
        let raw = self.raw();
        let base = self.shared.baseline.lock().unwrap();
        let mut rows = Vec::with_capacity(raw.len());
        let order = (FIRST_NAMED..raw.len()).chain([OTHER, UNPREFIXED]);
        for s in order {
            let r = &raw[s];
            let b = &base[s];
            let d = |i: usize| r[i].wrapping_sub(b[i]);
            let prefix = match s {
                OTHER => PrefixName::Other,
                UNPREFIXED => PrefixName::Unprefixed,
                _ => match self.shared.names[s].get() {
                    Some(n) => PrefixName::Named(n.to_vec()),
                    None => continue,
                },
            };
            let row = PrefixRow {
                prefix,
                items: r[ITEMS] as i64,
                bytes: r[BYTES] as i64,
                gets: d(GETS),
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
                out.extend_from_slice(n);
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
                PrefixName::Named(n) => [&b"prefix:"[..], n, b":"].concat(),
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
    /// delimiter are `prefix="#unprefixed"` (`#` keeps them apart from real
    /// prefixes only by convention; a real prefix could start with `#`).
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
                    shown.push((String::from_utf8_lossy(n).into_owned(), r));
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
        let s = &self.shared;
        let workers = s.workers.lock().unwrap();
        let per_worker = s.names.len() * std::mem::size_of::<SlotCounters>() + std::mem::size_of::<Counters>();
        s.index.len() * 8
            + s.names.len() * std::mem::size_of::<OnceLock<Box<[u8]>>>()
            + s.name_bytes.load(Ordering::Relaxed)
            + s.names.len() * std::mem::size_of::<[u64; NCOUNTERS]>()
            + workers.capacity() * std::mem::size_of::<Arc<Counters>>()
            + workers.len() * per_worker
    }

    /// The most [`heap_bytes`](Self::heap_bytes) can ever be with `workers`
    /// worker handles alive at once, whatever keys are seen.
    pub fn memory_bound(&self, workers: usize) -> usize {
        let s = &self.shared;
        let per_worker = s.names.len() * std::mem::size_of::<SlotCounters>() + std::mem::size_of::<Counters>();
        s.index.len() * 8
            + s.names.len() * std::mem::size_of::<OnceLock<Box<[u8]>>>()
            + s.cfg.max_prefixes * MAX_PREFIX_LEN
            + s.names.len() * std::mem::size_of::<[u64; NCOUNTERS]>()
            + workers.next_power_of_two().max(4) * std::mem::size_of::<Arc<Counters>>()
            + workers * per_worker
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
    /// The slot of prefix `p`, registering it if there is room.
    #[inline]
    fn slot_of_prefix(&self, p: &[u8]) -> usize {
        let h = hash_bytes(p);
        let tag = h >> 32;
        let mut i = h as usize & self.mask;
        loop {
            let e = self.index[i].load(Ordering::Acquire);
            if e == 0 {
                break;
            }
            if e >> 32 == tag {
                let s = (e & 0xffff_ffff) as usize;
                if let Some(n) = self.names[s].get() {
                    if &n[..] == p {
                        return s;
                    }
                }
            }
            i = (i + 1) & self.mask;
        }
        if self.full.load(Ordering::Relaxed) {
            return OTHER;
        }
        self.insert(p, h)
    }

    #[cold]
    fn insert(&self, p: &[u8], h: u64) -> usize {
        let _g = self.insert_lock.lock().unwrap();
        let tag = h >> 32;
        let mut i = h as usize & self.mask;
        loop {
            let e = self.index[i].load(Ordering::Acquire);
            if e == 0 {
                break;
            }
            if e >> 32 == tag {
                let s = (e & 0xffff_ffff) as usize;
                if self.names[s].get().is_some_and(|n| &n[..] == p) {
                    return s;
                }
            }
            i = (i + 1) & self.mask;
        }
        let named = self.named.load(Ordering::Relaxed);
        if named >= self.cfg.max_prefixes {
            self.full.store(true, Ordering::Relaxed);
            return OTHER;
        }
        let s = FIRST_NAMED + named;
        let _ = self.names[s].set(p.to_vec().into_boxed_slice());
        self.name_bytes.fetch_add(p.len(), Ordering::Relaxed);
        self.index[i].store(tag << 32 | s as u64, Ordering::Release);
        self.named.store(named + 1, Ordering::Release);
        if named + 1 >= self.cfg.max_prefixes {
            self.full.store(true, Ordering::Relaxed);
        }
        s
    }
}

impl PrefixWorker {
    fn new(shared: Arc<Shared>, counters: Arc<Counters>) -> Self {
        PrefixWorker { shared, counters, last: [0; CACHE_LEN], last_len: usize::MAX, last_slot: OTHER }
    }

    #[inline]
    fn slot_of(&mut self, key: &[u8]) -> usize {
        let i = match key.iter().position(|&b| b == self.shared.cfg.delimiter) {
            Some(i) => i,
            None => return UNPREFIXED,
        };
        let p = &key[..i];
        if i == self.last_len && p == &self.last[..i] {
            return self.last_slot;
        }
        let s = self.shared.slot_of_prefix(p);
        if i <= CACHE_LEN {
            self.last[..i].copy_from_slice(p);
            self.last_len = i;
            self.last_slot = s;
        }
        s
    }

    #[inline]
    fn add(&self, slot: usize, i: usize, delta: u64) {
        let c = &self.counters.slots[slot][i];
        // Single writer: a plain load + store, no locked instruction.
        c.store(c.load(Ordering::Relaxed).wrapping_add(delta), Ordering::Relaxed);
    }

    #[inline]
    fn detail(&self) -> bool {
        self.shared.detail.load(Ordering::Relaxed)
    }

    /// A key lookup (`get`/`gets`/`gat`/`mg`..., once per key):
    /// `bytes_sent` is the value bytes sent back (0 on a miss).
    #[inline]
    pub fn on_get(&mut self, key: &[u8], hit: bool, bytes_sent: u64) {
        let s = self.slot_of(key);
        self.add(s, GETS, 1);
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
        let s = self.slot_of(key);
        self.add(s, SETS, 1);
        match old_item_bytes {
            None => self.add(s, ITEMS, 1),
            Some(old) => self.add(s, BYTES, old.wrapping_neg()),
        }
        self.add(s, BYTES, new_item_bytes);
        if self.detail() {
            self.add(s, D_SET, 1);
        }
    }

    /// A storage command that stored nothing (NOT_STORED, EXISTS, too
    /// large, ...): memcached's `stats detail` counts it as a `set`.
    #[inline]
    pub fn on_set_failed(&mut self, key: &[u8]) {
        if self.detail() {
            let s = self.slot_of(key);
            self.add(s, D_SET, 1);
        }
    }

    /// A `delete`: `item_bytes` is the size of the item removed, `None` when
    /// the key was not found (memcached's detail `del` counts both).
    #[inline]
    pub fn on_delete(&mut self, key: &[u8], item_bytes: Option<u64>) {
        let s = self.slot_of(key);
        if let Some(b) = item_bytes {
            self.add(s, DELETES, 1);
            self.remove(s, b);
        }
        if self.detail() {
            self.add(s, D_DEL, 1);
        }
    }

    /// The store evicted an item.
    #[inline]
    pub fn on_evict(&mut self, key: &[u8], item_bytes: u64) {
        let s = self.slot_of(key);
        self.add(s, EVICTIONS, 1);
        self.remove(s, item_bytes);
    }

    /// The store reclaimed an expired (or flushed) item.
    #[inline]
    pub fn on_expire(&mut self, key: &[u8], item_bytes: u64) {
        let s = self.slot_of(key);
        self.add(s, EXPIRED, 1);
        self.remove(s, item_bytes);
    }

    #[inline]
    fn remove(&self, s: usize, bytes: u64) {
        self.add(s, ITEMS, u64::MAX); // -1
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
        let mut x: u64 = 0x1234_5678;
        let mut key = Vec::with_capacity(64);
        let mut total_bytes = 300i64;
        for i in 0..1_000_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            key.clear();
            key.extend_from_slice(format!("{x:016x}{i}:k").as_bytes());
            let w = if i % 2 == 0 { &mut w1 } else { &mut w2 };
            w.on_set(&key, 50, None);
            total_bytes += 50;
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
