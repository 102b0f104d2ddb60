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
//! Offering every request costs a lock and an O(log m) heap update (a
//! couple of hundred ns when most requests are for cold keys, which replace
//! the minimum). [`HotKeys::with_sampling`]`(r)` offers each request
//! independently with probability `1/r`, with weight `r` (gaps between
//! sampled requests are drawn from the geometric distribution, so no
//! request pattern can alias with the sampler); the other requests cost one
//! decrement. Counts become unbiased estimates: the Space-Saving error above
//! applies to the sampled stream (`<= N/m`, in the same scaled units) and
//! sampling adds a standard deviation of about `sqrt(c x r)` to a key of
//! true count `c` (for `c = 60 000`, `r = 16`: about 1.6%). Heavy hitters,
//! which is what the report is for, are found just the same. The server's
//! default ([`crate::observer::ObserverConfig`]) samples 1 in 16.
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
//! STAT hotkey:requests:<rank>:key <key>
//! STAT hotkey:requests:<rank>:count <upper bound of requests>
//! STAT hotkey:requests:<rank>:error <count - error is a lower bound>
//! ...                                     (rank 1 = hottest)
//! STAT hotkey:bytes:<rank>:key <key>
//! STAT hotkey:bytes:<rank>:count <upper bound of bytes sent>
//! STAT hotkey:bytes:<rank>:error <n>
//! ...
//! END
//! ```

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use crate::util::{hash_bytes, stat_bytes, stat_u64};

/// Default counters per summary.
pub const DEFAULT_COUNTERS: usize = 256;
/// Default window, seconds.
pub const DEFAULT_WINDOW_SECS: u64 = 60;
const KEY_MAX: usize = 250;

#[derive(Default)]
struct IdHasher(u64);
impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!()
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}
type IdMap = HashMap<u64, u32, BuildHasherDefault<IdHasher>>;

/// One Space-Saving summary with `m` counters.
pub struct SpaceSaving {
    m: usize,
    keys: Box<[u8]>,
    klen: Box<[u8]>,
    hashes: Box<[u64]>,
    count: Box<[u64]>,
    err: Box<[u64]>,
    /// heap of counter ids, min count at the root
    heap: Box<[u32]>,
    /// position of each counter id in `heap`
    hpos: Box<[u32]>,
    len: usize,
    total: u64,
    index: IdMap,
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
        let mut index = IdMap::default();
        index.reserve(m);
        SpaceSaving {
            m,
            keys: vec![0; m * KEY_MAX].into_boxed_slice(),
            klen: vec![0; m].into_boxed_slice(),
            hashes: vec![0; m].into_boxed_slice(),
            count: vec![0; m].into_boxed_slice(),
            err: vec![0; m].into_boxed_slice(),
            heap: vec![0; m].into_boxed_slice(),
            hpos: vec![0; m].into_boxed_slice(),
            len: 0,
            total: 0,
            index,
        }
    }

    /// Adds `weight` to `key` (key bytes beyond 250 are ignored).
    #[inline]
    pub fn offer(&mut self, key: &[u8], weight: u64) {
        if weight == 0 {
            return;
        }
        let key = &key[..key.len().min(KEY_MAX)];
        let h = hash_bytes(key);
        self.total += weight;
        if let Some(&id) = self.index.get(&h) {
            let id = id as usize;
            self.count[id] += weight;
            self.sift_down(self.hpos[id] as usize);
            return;
        }
        let id;
        if self.len < self.m {
            id = self.len;
            self.len += 1;
            self.heap[id] = id as u32;
            self.hpos[id] = id as u32;
            self.count[id] = weight;
            self.err[id] = 0;
            self.set_key(id, key, h);
            self.sift_up(id);
        } else {
            id = self.heap[0] as usize;
            self.index.remove(&self.hashes[id]);
            let cmin = self.count[id];
            self.err[id] = cmin;
            self.count[id] = cmin + weight;
            self.set_key(id, key, h);
            self.sift_down(0);
        }
    }

    fn set_key(&mut self, id: usize, key: &[u8], h: u64) {
        self.keys[id * KEY_MAX..id * KEY_MAX + key.len()].copy_from_slice(key);
        self.klen[id] = key.len() as u8;
        self.hashes[id] = h;
        self.index.insert(h, id as u32);
    }

    fn key(&self, id: usize) -> &[u8] {
        &self.keys[id * KEY_MAX..id * KEY_MAX + self.klen[id] as usize]
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let p = (i - 1) / 2;
            if self.count[self.heap[i] as usize] >= self.count[self.heap[p] as usize] {
                break;
            }
            self.swap(i, p);
            i = p;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.len;
        loop {
            let l = 2 * i + 1;
            let r = l + 1;
            let mut m = i;
            if l < n && self.count[self.heap[l] as usize] < self.count[self.heap[m] as usize] {
                m = l;
            }
            if r < n && self.count[self.heap[r] as usize] < self.count[self.heap[m] as usize] {
                m = r;
            }
            if m == i {
                break;
            }
            self.swap(i, m);
            i = m;
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.hpos[self.heap[a] as usize] = a as u32;
        self.hpos[self.heap[b] as usize] = b as u32;
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
            self.count[self.heap[0] as usize]
        } else {
            0
        }
    }

    /// The counters, unordered.
    pub fn entries(&self) -> impl Iterator<Item = (u64, &[u8], u64, u64)> + '_ {
        (0..self.len).map(move |id| (self.hashes[id], self.key(id), self.count[id], self.err[id]))
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
        self.keys.len() + self.m * (1 + 8 * 3 + 4 * 2) + self.index.capacity() * 13
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

/// Shared registry (cheap to clone).
#[derive(Clone)]
pub struct HotKeys {
    m: usize,
    half: u64,
    sample: u64,
    workers: Arc<Mutex<Vec<Arc<Mutex<WorkerInner>>>>>,
}

/// One worker's summaries.
pub struct HotKeysWorker {
    half: u64,
    inner: Arc<Mutex<WorkerInner>>,
    sample: u64,
    skip: u64,
    rng: u64,
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
    /// `rate` 1 (the default of [`HotKeys::new`]) offers every request.
    pub fn with_sampling(mut self, rate: u64) -> Self {
        self.sample = rate.max(1);
        self
    }

    /// Summaries for one worker thread.
    pub fn worker(&self) -> HotKeysWorker {
        let mk = || Epoch { requests: SpaceSaving::new(self.m), bytes: SpaceSaving::new(self.m), start: 0 };
        let inner = Arc::new(Mutex::new(WorkerInner { epochs: [mk(), mk()], cur: 0 }));
        let mut workers = self.workers.lock().unwrap();
        workers.push(inner.clone());
        let rng = crate::util::hash_bytes(&(workers.len() as u64).to_le_bytes()) | 1;
        let mut w = HotKeysWorker { half: self.half, inner, sample: self.sample, skip: 0, rng };
        w.skip = w.next_skip();
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
        let r = self.report(now, n);
        stat_u64(out, &[b"hotkeys_window"], r.window_secs);
        stat_u64(out, &[b"hotkeys_requests"], r.total_requests);
        stat_u64(out, &[b"hotkeys_bytes"], r.total_bytes);
        stat_u64(out, &[b"hotkeys_counters"], self.m as u64);
        for (kind, list) in [(&b"requests"[..], &r.by_requests), (b"bytes", &r.by_bytes)] {
            for (i, h) in list.iter().enumerate() {
                let rank = (i + 1).to_string();
                let head = [&b"hotkey:"[..], kind, b":", rank.as_bytes(), b":"].concat();
                stat_bytes(out, &[&head, b"key"], &h.key);
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
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        self.skip = self.next_skip();
        self.offer(key, bytes_sent, now);
    }

    #[cold]
    fn offer(&mut self, key: &[u8], bytes_sent: u64, now: u64) {
        let s = self.sample;
        let mut g = self.inner.lock().unwrap();
        rotate(&mut g, now, self.half);
        let cur = g.cur;
        let e = &mut g.epochs[cur];
        e.requests.offer(key, s);
        if bytes_sent > 0 {
            e.bytes.offer(key, bytes_sent.saturating_mul(s));
        }
    }

    /// Requests to skip before the next sampled one: geometric with mean
    /// `sample - 1`, so each request is sampled independently with
    /// probability `1 / sample`.
    fn next_skip(&mut self) -> u64 {
        if self.sample <= 1 {
            return 0;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let u = ((self.rng >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let p = 1.0 / self.sample as f64;
        (u.ln() / (1.0 - p).ln()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_saving_bounds() {
        let mut s = SpaceSaving::new(16);
        let mut truth: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut x = 3u64;
        for i in 0..50_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
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
    fn hammered_key_first_beside_uniform_traffic() {
        let hk = HotKeys::new(64, 60);
        let mut uniform = hk.worker();
        let mut hammer = hk.worker();
        let now = 1_000_000;
        let mut x = 9u64;
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
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
    }

    #[test]
    fn hammered_key_first_when_sampling() {
        let hk = HotKeys::new(64, 60).with_sampling(16);
        let mut w = hk.worker();
        let mut x = 5u64;
        for i in 0..400_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
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
