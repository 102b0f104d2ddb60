//! Hot keys: heavy hitters by request count and by bytes sent, over a
//! sliding window, in bounded memory.
//!
//! # Algorithm: Space-Saving (Metwally, Agrawal, El Abbadi 2005)
//!
//! A summary keeps at most `m` (key, count, error) counters. A request for
//! a key that has a counter adds its weight to it. Otherwise, if a counter
//! is free the key takes it; if not, the key takes over the counter with the
//! **smallest** count `c_min`: count becomes `c_min + weight`, error becomes
//! `c_min` (the most the key could have been undercounted before). Counters
//! sit in a binary min-heap by count with a hash index from the key's 64-bit
//! hash to the counter, so every request is O(log m) with no allocation (key
//! bytes are copied into a fixed per-counter buffer of 250 bytes).
//!
//! Guarantees, for a stream of total weight `N` (requests, or bytes):
//!
//! * every counter's count is an **overestimate**: `true <= count`, and
//!   `count - error <= true` (so `count - error` is a guaranteed lower bound);
//! * `error <= c_min <= N / m`;
//! * every key whose true weight exceeds `N / m` holds a counter, so a key
//!   taking more than `1/m` of the traffic is always reported, and keys are
//!   reported in order of `count`.
//!
//! Two summaries run side by side: weight 1 per request (`requests`) and
//! weight = value bytes sent (`bytes`).
//!
//! # Sliding window: two rotating epochs
//!
//! Each worker keeps two epochs of both summaries. Every `window / 2`
//! seconds the older epoch is cleared and becomes current. A report merges
//! both epochs, so it covers between `window / 2` and `window` seconds of
//! recent traffic ([`HotKeysReport::window_secs`] says how much).
//!
//! # Concurrency and merging
//!
//! Each worker owns a [`HotKeysWorker`] (its summaries behind its own
//! mutex, uncontended except while a report copies it). A report merges
//! the `2 x workers` summaries of each kind (the mergeable-summaries rule of
//! Agarwal et al. 2012): a key's merged count is the sum of its counts where
//! present plus, for every *full* summary where it is absent, that
//! summary's `c_min` (the most it could have had there); its error is the
//! sum of its errors plus those same `c_min`s. The bound stays
//! `error <= N / m` with `N` the total weight in the window over all workers,
//! and `count - error <= true <= count` for every reported key.
//!
//! # Sampling
//!
//! Offering every request costs a lock and an O(log m) heap update (about
//! a hundred ns per summary when most requests are for cold keys, which
//! replace the minimum and sink through the heap).
//! [`HotKeys::with_sampling`]`(r)` offers each request independently with
//! probability `1/r`, with weight `r` (gaps between sampled requests are
//! drawn from the geometric distribution, so no request pattern can alias
//! with the sampler); the other requests cost one decrement. Counts become
//! unbiased estimates: the Space-Saving error above applies to the sampled
//! stream (`<= N/m`, in the same scaled units) and sampling adds a standard
//! deviation of about `sqrt(c x r)` to a key of true count `c` (for
//! `c = 60 000`, `r = 16`: about 1.6%). Heavy hitters, which is what the
//! report is for, are found just the same.
//!
//! Responses of [`EXACT_BYTES`] (64 KiB) or more are not sampled in the
//! bytes summary: each is offered with its exact size (and its request
//! still takes its chance in the requests summary). A rare read of a huge
//! value, the heaviest bytes hitter there is, is therefore never missed,
//! and the cost stays bounded by the bytes sent (at most one offer per
//! 64 KiB).
//!
//! **Adaptive sampling** ([`HotKeys::with_adaptive_sampling`], the server's
//! default through [`crate::observer::ObserverConfig`]) keeps the cost
//! bounded whatever the traffic and the estimates exact when traffic is
//! light: each worker picks `r` so as to take about
//! [`ADAPTIVE_SAMPLES_PER_SEC`] (2048) samples a second: at the first
//! sample of each new second, `r = ceil(requests in the previous second /
//! 2048)` (at least 1: below 2048 requests/s every request is offered and
//! counts are exact), and within a second `r` doubles whenever 4096
//! samples were taken, so a sudden burst costs at most that before the
//! rate catches up. `r` only changes at a sampled request, so every
//! request's chance of being sampled is fixed before it arrives and its
//! weight is the inverse of that chance: the estimates stay unbiased. The
//! error: a key with share `φ` of a worker's requests, seen at `λ`
//! requests/s for `t` seconds, has `c = φλt` requests, sampled at
//! `r ≈ λ/2048`, so its relative standard deviation is at most about
//! `sqrt(r/c) = 1/sqrt(φ x 2048 x t)`, independent of the traffic volume:
//! over half the default 60 s window (the least a report covers), 6.4% for
//! a key at the Space-Saving bound `φ = 1/m = 0.4%` (whose Space-Saving
//! error may be as large as its count), 4% at 1%, 1.3% at 10%.
//! The cost: at most about 2048 (bursts: 4096) offers a second per worker
//! instead of one per request. In a busy server an offer costs far more
//! than `examples/hotpath.rs` shows (about 100 ns per summary with
//! everything in cache): by the time it comes, its summaries have left the
//! cache and it pushes the server's own data out. larder-bench at 1.3 M
//! gets/s put 8192 offers a second at about 2% of throughput (over 1 us
//! each), hence 2048 (see BENCHMARKS.md, "Observability cost").
//!
//! Two different keys with the same 64-bit hash share a counter (reported
//! under the first one's name): probability about `m^2 / 2^64` per window.
//!
//! Memory per worker: `4 x m x (250 + 40)` bytes plus the hash indexes, fixed
//! at creation: [`HotKeys::heap_bytes`]. Default `m` = 256 (about 300 KiB
//! per worker), error bound 0.4% of the window's traffic.
//!
//! # `stats hotkeys` (format)
//!
//! ```text
//! STAT hotkeys_window <seconds covered>
//! STAT hotkeys_requests <N: requests in the window>
//! STAT hotkeys_bytes <N: bytes sent in the window>
//! STAT hotkeys_counters <m>
//! STAT hotkey:requests:<rank>:key <escaped key>
//! STAT hotkey:requests:<rank>:count <upper bound of requests>
//! STAT hotkey:requests:<rank>:error <count - error is a lower bound>
//! ...                                     (rank 1 = hottest)
//! STAT hotkey:bytes:<rank>:key <escaped key>
//! STAT hotkey:bytes:<rank>:count <upper bound of bytes sent>
//! STAT hotkey:bytes:<rank>:error <n>
//! ...
//! END
//! ```
//!
//! Keys are escaped by [`crate::escape::escape_key`] (printable ASCII, no
//! space, `%XX` for any other byte and for `%`), so a key holding any byte
//! cannot forge lines; `user:1` prints as itself.
//!
//! With the server's `-X` (memcached's "no key dumps") each `key` line is
//! replaced by the key's prefix, `STAT hotkey:<kind>:<rank>:prefix <escaped
//! prefix>` (no line when the key has no delimiter):
//! [`HotKeys::render_hiding_keys`]. Counts and errors remain.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::util::{hash_bytes, key_prefix, stat_key, stat_u64};

/// Default counters per summary.
pub const DEFAULT_COUNTERS: usize = 256;
/// Default window, seconds.
pub const DEFAULT_WINDOW_SECS: u64 = 60;
const KEY_MAX: usize = 250;

/// Key hash -> counter id: open addressing, linear probing, at most half
/// full, backward-shift deletion (no tombstones). An entry is
/// `(hash, id + 1)`, id + 1 = 0 marking a free entry.
struct IdTable {
    e: Box<[(u64, u32)]>,
    mask: usize,
}

impl IdTable {
    fn new(m: usize) -> IdTable {
        let cap = (2 * m).next_power_of_two().max(8);
        IdTable { e: vec![(0, 0); cap].into_boxed_slice(), mask: cap - 1 }
    }

    #[inline]
    fn get(&self, h: u64) -> Option<usize> {
        let mut i = h as usize & self.mask;
        loop {
            let (eh, id) = self.e[i];
            if id == 0 {
                return None;
            }
            if eh == h {
                return Some(id as usize - 1);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Adds `h` (not present) -> `id`.
    #[inline]
    fn insert(&mut self, h: u64, id: usize) {
        let mut i = h as usize & self.mask;
        while self.e[i].1 != 0 {
            i = (i + 1) & self.mask;
        }
        self.e[i] = (h, id as u32 + 1);
    }

    /// Removes `h` (present).
    #[inline]
    fn remove(&mut self, h: u64) {
        let mut i = h as usize & self.mask;
        while self.e[i].0 != h || self.e[i].1 == 0 {
            debug_assert!(self.e[i].1 != 0, "remove of an absent hash");
            i = (i + 1) & self.mask;
        }
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let (eh, id) = self.e[j];
            if id == 0 {
                break;
            }
            let home = eh as usize & self.mask;
            // j may move to the hole at i unless its home lies cyclically in (i, j]
            let stays = if i <= j { i < home && home <= j } else { i < home || home <= j };
            if !stays {
                self.e[i] = self.e[j];
                i = j;
            }
        }
        self.e[i] = (0, 0);
    }

    fn clear(&mut self) {
        self.e.fill((0, 0));
    }

    fn heap_bytes(&self) -> usize {
        self.e.len() * std::mem::size_of::<(u64, u32)>()
    }
}

/// One Space-Saving summary with `m` counters.
pub struct SpaceSaving {
    m: usize,
    keys: Box<[u8]>,
    klen: Box<[u8]>,
    hashes: Box<[u64]>,
    err: Box<[u64]>,
    /// The min-heap, in heap order: counts (inline, so sifting compares
    /// without an indirection) and the counter id at each position.
    hc: Box<[u64]>,
    hid: Box<[u32]>,
    /// position of each counter id in the heap
    hpos: Box<[u32]>,
    len: usize,
    total: u64,
    index: IdTable,
}

/// One entry of a summary or a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotKey {
    pub key: Vec<u8>,
    /// Upper bound of the key's weight.
    pub count: u64,
    /// `count - error` is a lower bound.
    pub error: u64,
}

impl SpaceSaving {
    pub fn new(m: usize) -> Self {
        let m = m.clamp(1, u32::MAX as usize / 2);
        SpaceSaving {
            m,
            keys: vec![0; m * KEY_MAX].into_boxed_slice(),
            klen: vec![0; m].into_boxed_slice(),
            hashes: vec![0; m].into_boxed_slice(),
            err: vec![0; m].into_boxed_slice(),
            hc: vec![0; m].into_boxed_slice(),
            hid: vec![0; m].into_boxed_slice(),
            hpos: vec![0; m].into_boxed_slice(),
            len: 0,
            total: 0,
            index: IdTable::new(m),
        }
    }

    /// Adds `weight` to `key` (key bytes beyond 250 are ignored).
    #[inline]
    pub fn offer(&mut self, key: &[u8], weight: u64) {
        let key = &key[..key.len().min(KEY_MAX)];
        self.offer_hashed(key, hash_bytes(key), weight);
    }

    /// [`offer`](Self::offer) of a key at most 250 bytes long whose
    /// `hash_bytes` is `h`.
    #[inline]
    fn offer_hashed(&mut self, key: &[u8], h: u64, weight: u64) {
        if weight == 0 {
            return;
        }
        self.total += weight;
        if let Some(id) = self.index.get(h) {
            let p = self.hpos[id] as usize;
            let c = self.hc[p] + weight;
            self.sift_down(p, c, id);
            return;
        }
        if self.len < self.m {
            let id = self.len;
            self.len += 1;
            self.err[id] = 0;
            self.set_key(id, key, h);
            self.sift_up(id, weight, id);
        } else {
            let id = self.hid[0] as usize;
            self.index.remove(self.hashes[id]);
            let cmin = self.hc[0];
            self.err[id] = cmin;
            self.set_key(id, key, h);
            self.sift_down(0, cmin + weight, id);
        }
    }

    fn set_key(&mut self, id: usize, key: &[u8], h: u64) {
        self.keys[id * KEY_MAX..id * KEY_MAX + key.len()].copy_from_slice(key);
        self.klen[id] = key.len() as u8;
        self.hashes[id] = h;
        self.index.insert(h, id);
    }

    fn key(&self, id: usize) -> &[u8] {
        &self.keys[id * KEY_MAX..id * KEY_MAX + self.klen[id] as usize]
    }

    #[inline]
    fn place(&mut self, i: usize, c: u64, id: usize) {
        self.hc[i] = c;
        self.hid[i] = id as u32;
        self.hpos[id] = i as u32;
    }

    /// Puts counter `id` with count `c` at heap position `i` (a hole) or
    /// above it.
    #[inline]
    fn sift_up(&mut self, mut i: usize, c: u64, id: usize) {
        while i > 0 {
            let p = (i - 1) / 2;
            if self.hc[p] <= c {
                break;
            }
            self.place(i, self.hc[p], self.hid[p] as usize);
            i = p;
        }
        self.place(i, c, id);
    }

    /// Puts counter `id` with count `c` at heap position `i` (a hole) or
    /// below it: children move up into the hole, the smaller child chosen
    /// without a branch.
    #[inline]
    fn sift_down(&mut self, mut i: usize, c: u64, id: usize) {
        let n = self.len;
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let rc = if r < n { self.hc[r] } else { u64::MAX };
            let lc = self.hc[l];
            let (m, mc) = if rc < lc { (r, rc) } else { (l, lc) };
            if mc >= c {
                break;
            }
            self.place(i, mc, self.hid[m] as usize);
            i = m;
        }
        self.place(i, c, id);
    }

    /// Forget everything (memory is kept).
    pub fn clear(&mut self) {
        self.len = 0;
        self.total = 0;
        self.index.clear();
    }

    /// Total weight offered since the last clear.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The smallest count if every counter is taken, else 0: the most an
    /// absent key can have had.
    pub fn min_if_full(&self) -> u64 {
        if self.len == self.m {
            self.hc[0]
        } else {
            0
        }
    }

    /// The counters, unordered.
    pub fn entries(&self) -> impl Iterator<Item = (u64, &[u8], u64, u64)> + '_ {
        (0..self.len).map(move |id| (self.hashes[id], self.key(id), self.hc[self.hpos[id] as usize], self.err[id]))
    }

    /// Counters sorted by count, highest first.
    pub fn top(&self, n: usize) -> Vec<HotKey> {
        let mut v: Vec<HotKey> =
            self.entries().map(|(_, k, c, e)| HotKey { key: k.to_vec(), count: c, error: e }).collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        v.truncate(n);
        v
    }

    pub fn heap_bytes(&self) -> usize {
        self.keys.len() + self.m * (1 + 8 * 3 + 4 * 2) + self.index.heap_bytes()
    }
}

struct Epoch {
    requests: SpaceSaving,
    bytes: SpaceSaving,
    start: u64,
}

struct WorkerInner {
    epochs: [Epoch; 2],
    cur: usize,
}

/// Adaptive sampling aims at this many sampled requests per second and
/// worker (see "Sampling" in the module docs).
pub const ADAPTIVE_SAMPLES_PER_SEC: u64 = 2048;

/// Responses this large or larger enter the bytes summary exactly, never
/// sampled (see "Sampling" in the module docs).
pub const EXACT_BYTES: u64 = 64 << 10;
/// The sparsest adaptive sampling: one request in this many.
const MAX_ADAPTIVE_RATE: u64 = 1 << 20;

/// Shared registry (cheap to clone).
#[derive(Clone)]
pub struct HotKeys {
    m: usize,
    half: u64,
    /// Fixed sampling rate (1 = every request), or 0: adaptive.
    sample: u64,
    workers: Arc<Mutex<Vec<Arc<Mutex<WorkerInner>>>>>,
}

/// One worker's summaries.
pub struct HotKeysWorker {
    half: u64,
    inner: Arc<Mutex<WorkerInner>>,
    /// Adaptive sampling (else `rate` stays fixed).
    adaptive: bool,
    /// Each request is sampled with probability `1 / rate` and, if it is,
    /// offered with weight `rate`; `rate` changes only when a request is
    /// sampled (so it is the rate the current gap was drawn with).
    rate: u64,
    /// `ln(1 - 1/rate)`, for the geometric gaps.
    ln_q: f64,
    /// Requests still to skip, and how many requests the current gap
    /// covers (skip + the sampled one).
    skip: u64,
    gap: u64,
    rng: u64,
    /// Adaptive: the second being counted (unix), the requests and the
    /// samples seen in it.
    sec: u64,
    sec_requests: u64,
    sec_samples: u64,
}

/// A merged report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotKeysReport {
    pub window_secs: u64,
    pub total_requests: u64,
    pub total_bytes: u64,
    pub by_requests: Vec<HotKey>,
    pub by_bytes: Vec<HotKey>,
}

impl HotKeys {
    /// `m` counters per summary, window of `window_secs` (>= 2).
    pub fn new(m: usize, window_secs: u64) -> Self {
        HotKeys { m: m.max(1), half: (window_secs / 2).max(1), sample: 1, workers: Default::default() }
    }

    /// Offer only about one request in `rate` (chosen at random, geometric
    /// gaps) with weight `rate`: see "Sampling" in the module docs.
    /// `rate` 1 (the default of [`HotKeys::new`]) offers every request;
    /// `rate` 0 samples adaptively ([`with_adaptive_sampling`](Self::with_adaptive_sampling)).
    pub fn with_sampling(mut self, rate: u64) -> Self {
        self.sample = rate;
        self
    }

    /// Every request while a worker sees fewer than
    /// [`ADAPTIVE_SAMPLES_PER_SEC`] requests a second, about that many
    /// samples a second above: see "Sampling" in the module docs.
    pub fn with_adaptive_sampling(self) -> Self {
        self.with_sampling(0)
    }

    /// Summaries for one worker thread.
    pub fn worker(&self) -> HotKeysWorker {
        let mk = || Epoch { requests: SpaceSaving::new(self.m), bytes: SpaceSaving::new(self.m), start: 0 };
        let inner = Arc::new(Mutex::new(WorkerInner { epochs: [mk(), mk()], cur: 0 }));
        let mut workers = self.workers.lock().unwrap();
        workers.push(inner.clone());
        let rng = crate::util::hash_bytes(&(workers.len() as u64).to_le_bytes()) | 1;
        let mut w = HotKeysWorker {
            half: self.half,
            inner,
            adaptive: self.sample == 0,
            rate: 0,
            ln_q: 0.0,
            skip: 0,
            gap: 0,
            rng,
            sec: 0,
            sec_requests: 0,
            sec_samples: 0,
        };
        w.set_rate(self.sample.max(1));
        w.draw();
        w
    }

    /// Merged top `n` by requests and by bytes, at unix time `now` (seconds).
    pub fn report(&self, now: u64, n: usize) -> HotKeysReport {
        let workers: Vec<_> = self.workers.lock().unwrap().clone();
        let mut req: Vec<&SpaceSaving> = Vec::new();
        let mut byt: Vec<&SpaceSaving> = Vec::new();
        let mut guards = Vec::with_capacity(workers.len());
        for w in &workers {
            let mut g = w.lock().unwrap();
            rotate(&mut g, now, self.half);
            guards.push(g);
        }
        let mut oldest = now;
        for g in &guards {
            for e in &g.epochs {
                if e.requests.total() > 0 || e.bytes.total() > 0 {
                    oldest = oldest.min(e.start);
                }
                req.push(&e.requests);
                byt.push(&e.bytes);
            }
        }
        HotKeysReport {
            window_secs: now - oldest,
            total_requests: req.iter().map(|s| s.total()).sum(),
            total_bytes: byt.iter().map(|s| s.total()).sum(),
            by_requests: merge(&req, n),
            by_bytes: merge(&byt, n),
        }
    }

    /// `stats hotkeys` reply (format in the module docs), `END\r\n`
    /// included.
    pub fn render(&self, out: &mut Vec<u8>, now: u64, n: usize) {
        self.render_opts(out, now, n, None)
    }

    /// [`HotKeys::render`] with each key's prefix (by `delimiter`) in place
    /// of its name (the server's `-X`).
    pub fn render_hiding_keys(&self, out: &mut Vec<u8>, now: u64, n: usize, delimiter: u8) {
        self.render_opts(out, now, n, Some(delimiter))
    }

    /// `hide`: the delimiter of the prefixes shown instead of the keys.
    fn render_opts(&self, out: &mut Vec<u8>, now: u64, n: usize, hide: Option<u8>) {
        let r = self.report(now, n);
        stat_u64(out, &[b"hotkeys_window"], r.window_secs);
        stat_u64(out, &[b"hotkeys_requests"], r.total_requests);
        stat_u64(out, &[b"hotkeys_bytes"], r.total_bytes);
        stat_u64(out, &[b"hotkeys_counters"], self.m as u64);
        for (kind, list) in [(&b"requests"[..], &r.by_requests), (b"bytes", &r.by_bytes)] {
            for (i, h) in list.iter().enumerate() {
                let rank = (i + 1).to_string();
                let head = [&b"hotkey:"[..], kind, b":", rank.as_bytes(), b":"].concat();
                match hide {
                    None => stat_key(out, &[&head, b"key"], &h.key),
                    Some(d) => {
                        if let Some(p) = key_prefix(&h.key, d) {
                            stat_key(out, &[&head, b"prefix"], p);
                        }
                    }
                }
                stat_u64(out, &[&head, b"count"], h.count);
                stat_u64(out, &[&head, b"error"], h.error);
            }
        }
        out.extend_from_slice(b"END\r\n");
    }

    pub fn heap_bytes(&self) -> usize {
        let workers = self.workers.lock().unwrap();
        workers
            .iter()
            .map(|w| {
                let g = w.lock().unwrap();
                g.epochs.iter().map(|e| e.requests.heap_bytes() + e.bytes.heap_bytes()).sum::<usize>()
            })
            .sum()
    }
}

fn rotate(w: &mut WorkerInner, now: u64, half: u64) {
    let cur = w.cur;
    if w.epochs[cur].start == 0 && w.epochs[cur].requests.total() == 0 && w.epochs[cur].bytes.total() == 0 {
        w.epochs[cur].start = now;
        return;
    }
    if now >= w.epochs[cur].start + 2 * half {
        // both epochs are older than the window
        for e in w.epochs.iter_mut() {
            e.requests.clear();
            e.bytes.clear();
            e.start = now;
        }
    } else if now >= w.epochs[cur].start + half {
        let next = 1 - cur;
        let e = &mut w.epochs[next];
        e.requests.clear();
        e.bytes.clear();
        e.start = now;
        w.cur = next;
    }
}

fn merge(summaries: &[&SpaceSaving], n: usize) -> Vec<HotKey> {
    // key hash -> (key, count, error, bitmask-free presence count via sum of mins)
    let mins: Vec<u64> = summaries.iter().map(|s| s.min_if_full()).collect();
    let total_min: u64 = mins.iter().sum();
    let mut acc: HashMap<u64, (Vec<u8>, u64, u64, u64)> = HashMap::new();
    for (s, &min) in summaries.iter().zip(&mins) {
        for (h, k, c, e) in s.entries() {
            let a = acc.entry(h).or_insert_with(|| (k.to_vec(), 0, 0, 0));
            a.1 += c;
            a.2 += e;
            a.3 += min; // the min of summaries where it is present
        }
    }
    let mut v: Vec<HotKey> = acc
        .into_values()
        .map(|(key, c, e, present_min)| {
            let absent = total_min - present_min;
            HotKey { key, count: c + absent, error: e + absent }
        })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
    v.truncate(n);
    v
}

impl HotKeysWorker {
    /// A request for `key` at unix time `now` (seconds) that sent
    /// `bytes_sent` value bytes (0 for a miss or a write).
    #[inline]
    pub fn on_request(&mut self, key: &[u8], bytes_sent: u64, now: u64) {
        // Large responses go into the bytes summary exactly, outside the
        // sampling: a few reads of a 10 MiB value are the heaviest bytes
        // hitter and sampling would miss them. Their cost is bounded by
        // the bytes sent (one offer per EXACT_BYTES or more).
        let exact_bytes = if bytes_sent >= EXACT_BYTES { bytes_sent } else { 0 };
        if self.skip > 0 {
            self.skip -= 1;
            if exact_bytes > 0 {
                self.offer(key, 0, exact_bytes, now);
            }
            return;
        }
        let s = self.rate;
        let bytes = if exact_bytes > 0 { exact_bytes } else { bytes_sent.saturating_mul(s) };
        self.offer(key, s, bytes, now);
        if self.adaptive {
            self.adapt(now);
        }
        self.draw();
    }

    /// Adds `requests` to the key's request count and `bytes` to its bytes
    /// (already weighted; 0: that summary is left alone), under one lock.
    #[cold]
    fn offer(&mut self, key: &[u8], requests: u64, bytes: u64, now: u64) {
        let key = &key[..key.len().min(KEY_MAX)];
        let h = hash_bytes(key);
        let mut g = self.inner.lock().unwrap();
        rotate(&mut g, now, self.half);
        let cur = g.cur;
        let e = &mut g.epochs[cur];
        if requests > 0 {
            e.requests.offer_hashed(key, h, requests);
        }
        if bytes > 0 {
            e.bytes.offer_hashed(key, h, bytes);
        }
    }

    fn set_rate(&mut self, rate: u64) {
        self.rate = rate;
        self.ln_q = (1.0 - 1.0 / rate as f64).ln();
    }

    /// The current sampling rate (1 = every request).
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// Adaptive sampling, after a sample at unix time `now`: at the first
    /// sample of a new second, the rate becomes what would have given
    /// [`ADAPTIVE_SAMPLES_PER_SEC`] samples over the previous one; within
    /// a second it doubles whenever twice that many samples were taken.
    fn adapt(&mut self, now: u64) {
        self.sec_requests += self.gap;
        self.sec_samples += 1;
        if now != self.sec {
            let secs = now.saturating_sub(self.sec).clamp(1, 60);
            let per_sec = self.sec_requests / secs;
            self.set_rate(per_sec.div_ceil(ADAPTIVE_SAMPLES_PER_SEC).clamp(1, MAX_ADAPTIVE_RATE));
            self.sec = now;
            self.sec_requests = 0;
            self.sec_samples = 0;
        } else if self.sec_samples >= 2 * ADAPTIVE_SAMPLES_PER_SEC && self.rate < MAX_ADAPTIVE_RATE {
            self.set_rate(self.rate * 2);
            self.sec_samples = 0;
        }
    }

    /// Draws the next gap: requests to skip before the next sampled one,
    /// geometric with mean `rate - 1`, so each request is sampled
    /// independently with probability `1 / rate`.
    fn draw(&mut self) {
        self.skip = if self.rate <= 1 {
            0
        } else {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let u = ((self.rng >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            (u.ln() / self.ln_q) as u64
        };
        self.gap = self.skip + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use larder_testkit::XorShift64;

    #[test]
    fn space_saving_bounds() {
        let mut s = SpaceSaving::new(16);
        let mut truth: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut r = XorShift64(3);
        for i in 0..50_000u64 {
            let x = r.next_u64();
            let key = if i % 10 == 0 { b"hot".to_vec() } else { format!("k{}", x % 1000).into_bytes() };
            s.offer(&key, 1);
            *truth.entry(key).or_default() += 1;
        }
        let n = s.total();
        assert_eq!(n, 50_000);
        for (h, k, c, e) in s.entries() {
            let t = truth[k];
            assert_eq!(h, hash_bytes(k));
            assert!(t <= c && c - e <= t, "{t} {c} {e}");
            assert!(e <= n / 16);
        }
        assert_eq!(s.top(1)[0].key, b"hot");
    }

    #[test]
    fn heap_and_index_stay_consistent() {
        let mut s = SpaceSaving::new(16);
        let mut truth: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut r = XorShift64(11);
        for round in 0..20_000u64 {
            let x = r.next_u64();
            let key = format!("k{}", x % 60).into_bytes();
            let w = 1 + (x >> 32) % 50;
            s.offer(&key, w);
            *truth.entry(key).or_default() += w;
            if round % 7 == 0 {
                for i in 1..s.len {
                    assert!(s.hc[(i - 1) / 2] <= s.hc[i]);
                }
                for i in 0..s.len {
                    assert_eq!(s.hpos[s.hid[i] as usize] as usize, i);
                }
                for id in 0..s.len {
                    assert_eq!(s.index.get(s.hashes[id]), Some(id));
                }
                assert_eq!(s.index.e.iter().filter(|e| e.1 != 0).count(), s.len);
                for (_, k, c, e) in s.entries() {
                    let t = truth[k];
                    assert!(t <= c && c - e <= t, "{t} {c} {e}");
                }
            }
            if round == 10_000 {
                s.clear();
                truth.clear();
            }
        }
        assert_eq!(s.total(), truth.values().sum::<u64>());
    }

    #[test]
    fn hammered_key_first_beside_uniform_traffic() {
        let hk = HotKeys::new(64, 60);
        let mut uniform = hk.worker();
        let mut hammer = hk.worker();
        let now = 1_000_000;
        let mut r = XorShift64(9);
        for i in 0..200_000u64 {
            let x = r.next_u64();
            // uniform traffic over 10k keys, 100-byte values
            uniform.on_request(format!("page:{}", x % 10_000).as_bytes(), 100, now + i / 20_000);
            // one client fetching one key 30 times per page, every 10 requests
            if i % 10 == 0 {
                for _ in 0..3 {
                    hammer.on_request(b"session:hot", 20, now + i / 20_000);
                }
            }
        }
        let r = hk.report(now + 10, 5);
        assert_eq!(r.by_requests[0].key, b"session:hot");
        assert_eq!(r.by_bytes[0].key, b"session:hot");
        assert_eq!(r.total_requests, 200_000 + 60_000);
        let top = &r.by_requests[0];
        assert!(top.count >= 60_000 && top.count - top.error <= 60_000);
        assert!(top.error <= r.total_requests / 64);
        let mut out = Vec::new();
        hk.render(&mut out, now + 10, 1);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("STAT hotkeys_window 10\r\nSTAT hotkeys_requests 260000\r\n"), "{text}");
        assert!(text.contains("STAT hotkey:requests:1:key session:hot\r\nSTAT hotkey:requests:1:count "));
        assert!(text.contains("STAT hotkey:bytes:1:key session:hot\r\n"));
        assert!(text.ends_with("\r\nEND\r\n"));
        // -X: the prefix instead of the key, counts kept.
        let mut out = Vec::new();
        hk.render_hiding_keys(&mut out, now + 10, 1, b':');
        let hidden = String::from_utf8(out).unwrap();
        assert!(!hidden.contains("session:hot") && !hidden.contains(":key "), "{hidden}");
        assert!(hidden.contains("STAT hotkey:requests:1:prefix session\r\nSTAT hotkey:requests:1:count "), "{hidden}");
        assert_eq!(hidden.lines().count(), text.lines().count());
    }

    /// Four reads of a 10 MiB value among 400 000 small ones, sampled 1 in
    /// 1000: the big value's bytes are exact and it tops the bytes list.
    #[test]
    fn large_responses_are_never_sampled_out() {
        let hk = HotKeys::new(64, 60).with_sampling(1000);
        let mut w = hk.worker();
        for i in 0..400_000u64 {
            w.on_request(format!("page:{}", i % 1000).as_bytes(), 100, 100);
            if i % 100_000 == 50_000 {
                w.on_request(b"item:big", 10 << 20, 100);
            }
        }
        let r = hk.report(101, 3);
        assert_eq!(r.by_bytes[0].key, b"item:big");
        assert!(r.by_bytes[0].count >= 4 * (10 << 20), "{}", r.by_bytes[0].count);
        assert!(r.by_bytes[0].count - r.by_bytes[0].error <= 4 * (10 << 20));
    }

    #[test]
    fn hammered_key_first_when_sampling() {
        let hk = HotKeys::new(64, 60).with_sampling(16);
        let mut w = hk.worker();
        let mut r = XorShift64(5);
        for i in 0..400_000u64 {
            let x = r.next_u64();
            if i % 10 < 3 {
                w.on_request(b"session:hot", 20, 100);
            } else {
                w.on_request(format!("page:{}", x % 10_000).as_bytes(), 100, 100);
            }
        }
        let r = hk.report(101, 3);
        assert_eq!(r.by_requests[0].key, b"session:hot");
        let c = r.by_requests[0].count as f64;
        assert!((c - 120_000.0).abs() < 120_000.0 * 0.05, "{c}");
        let total = r.total_requests as f64;
        assert!((total - 400_000.0).abs() < 400_000.0 * 0.02, "{total}");
    }

    #[test]
    fn adaptive_sampling_is_exact_when_light_and_bounded_when_heavy() {
        // light: 2000 requests a second, every one offered, counts exact
        let hk = HotKeys::new(64, 60).with_adaptive_sampling();
        let mut w = hk.worker();
        for i in 0..20_000u64 {
            let key = if i % 10 < 3 { "session:hot".to_string() } else { format!("page:{}", i % 30) };
            w.on_request(key.as_bytes(), 10, 1000 + i / 2000);
        }
        assert_eq!(w.rate(), 1);
        let r = hk.report(1010, 1);
        assert_eq!((r.by_requests[0].key.as_slice(), r.by_requests[0].count), (&b"session:hot"[..], 6_000));
        assert_eq!(r.total_requests, 20_000);

        // heavy: 2M requests a second for 10 s: about 2048 samples a second,
        // unbiased estimates
        let hk = HotKeys::new(64, 60).with_adaptive_sampling();
        let mut w = hk.worker();
        let mut r = XorShift64(5);
        for i in 0..20_000_000u64 {
            let x = r.next_u64();
            let now = 1000 + i / 2_000_000;
            if i % 10 < 3 {
                w.on_request(b"session:hot", 20, now);
            } else {
                w.on_request(format!("page:{}", x % 10_000).as_bytes(), 100, now);
            }
        }
        assert_eq!(w.rate(), 2_000_000u64.div_ceil(ADAPTIVE_SAMPLES_PER_SEC));
        let r = hk.report(1010, 1);
        assert_eq!(r.by_requests[0].key, b"session:hot");
        let c = r.by_requests[0].count as f64;
        // 3 sd of the bound 1/sqrt(0.3 x 2048 x 10)
        assert!((c - 6_000_000.0).abs() < 6_000_000.0 * 0.04, "{c}");
        let total = r.total_requests as f64;
        assert!((total - 20_000_000.0).abs() < 20_000_000.0 * 0.01, "{total}");

        // a burst within one second: the rate doubles every 4096 samples
        let hk = HotKeys::new(64, 60).with_adaptive_sampling();
        let mut w = hk.worker();
        for _ in 0..1_000_000 {
            w.on_request(b"k", 1, 5);
        }
        assert!((64..=256).contains(&w.rate()), "{}", w.rate());
    }

    #[test]
    fn window_slides() {
        let hk = HotKeys::new(8, 10);
        let mut w = hk.worker();
        for _ in 0..100 {
            w.on_request(b"old", 1, 100);
        }
        // 5 s later: new epoch, old still counted
        w.on_request(b"new", 1, 105);
        let r = hk.report(106, 10);
        assert_eq!(r.by_requests[0].key, b"old");
        assert_eq!(r.window_secs, 6);
        // 10 s later: the epoch holding "old" is dropped
        for _ in 0..3 {
            w.on_request(b"new", 1, 111);
        }
        let r = hk.report(111, 10);
        assert_eq!(r.by_requests.len(), 1);
        assert_eq!(r.by_requests[0].key, b"new");
        assert_eq!(r.by_requests[0].count, 4);
        // long idle: all gone
        let r = hk.report(200, 10);
        assert!(r.by_requests.is_empty());
    }

    #[test]
    fn merge_of_full_summaries_keeps_bounds() {
        let a = {
            let mut s = SpaceSaving::new(2);
            for k in [b"x", b"y", b"z", b"x", b"x"] {
                s.offer(k, 1);
            }
            s
        };
        let b = {
            let mut s = SpaceSaving::new(2);
            for k in [b"y", b"y", b"w", b"v"] {
                s.offer(k, 1);
            }
            s
        };
        let m = merge(&[&a, &b], 10);
        let truth: HashMap<&[u8], u64> = [(&b"x"[..], 3), (b"y", 3), (b"z", 1), (b"w", 1), (b"v", 1)].into();
        for h in &m {
            let t = truth[&h.key[..]];
            assert!(h.count >= t && h.count - h.error <= t, "{h:?}");
            assert!(h.error <= 9 / 2);
        }
    }
}
