//! larder-sim: a cache eviction policy simulator, to choose larder's
//! segment-granularity eviction by measurement rather than on paper.
//!
//! Every policy implements [`Policy`]: `access(key)` is one look-aside cache
//! request — a `get`, and on a miss a `set` of the same key (which the
//! policy may decline to admit). Capacity is counted in items, equal for
//! every policy, so the figures compare *policies*, not memory layouts
//! (larder-bench compares real servers at equal `-m`).
//!
//! Policies (one module each, each opening with the algorithm and its
//! trade-offs):
//!
//! | name | module | what |
//! |---|---|---|
//! | LRU, FIFO | [`basic`] | recency-only baselines |
//! | S3-FIFO | [`s3fifo`] | small/main FIFO queues + ghost (SOSP'23) |
//! | W-TinyLFU | [`tinylfu`] | Caffeine: window LRU + SLRU + count-min admission |
//! | memcached-SLRU | [`memcached`] | memcached 1.6's hot/warm/cold segmented LRU |
//! | seg-FIFO, seg-CLOCK, seg-S3-FIFO, seg-merge | [`segcache`] | larder's segment-level policies (current and candidates) |
//! | …/8sh | [`sharded`] | a segment policy split over the store's shards |
//! | OPT | [`opt`] | Belady's offline optimum: the lower bound |
//! | LRU, S3-FIFO, S3-FIFO+rent, W-TinyLFU, GDSF by bytes | [`bytes`] | item policies at a capacity in bytes, for variable value sizes ([`sizes`]) |
//!
//! Workloads: the cache2k traces ([`trace`]) replayed at capacities of
//! unique keys ÷ 4 and ÷ 10, and a synthetic hot-Zipf-plus-scan workload
//! ([`workload`]) whose hot-set hit ratio shows scan resistance. The
//! `larder-sim` binary prints a table and writes JSON ([`report`]); with
//! `--store` it also replays the traces through the real `larder_store::Store`
//! at a memory limit ([`store`]).

#![forbid(unsafe_code)]

pub mod basic;
pub mod bytes;
pub mod ghost;
pub mod list;
pub mod memcached;
pub mod opt;
pub mod report;
pub mod s3fifo;
pub mod segcache;
pub mod sharded;
pub mod sizes;
pub mod sketch;
pub mod store;
pub mod tinylfu;
pub mod trace;
pub mod util;
pub mod workload;

/// A cache eviction policy at a fixed capacity in items.
pub trait Policy {
    fn name(&self) -> String;
    /// One request: whether it hit; on a miss the key is offered for
    /// insertion (look-aside `get` then `set`).
    fn access(&mut self, key: u32) -> bool;
    fn contains(&self, key: u32) -> bool;
    /// Keys resident.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Items copied by eviction so far (segment policies' survivors).
    fn copies(&self) -> u64 {
        0
    }
}

/// The policies compared, by name, at `cap` items; `seg_items` is the
/// segment size of the segment policies.
pub fn policies(cap: usize, seg_items: usize) -> Vec<Box<dyn Policy>> {
    use segcache::{SegCache, SegKind};
    vec![
        Box::new(basic::Lru::fifo(cap)),
        Box::new(basic::Lru::lru(cap)),
        Box::new(memcached::McSlru::new(cap)),
        Box::new(s3fifo::S3Fifo::new(cap)),
        Box::new(s3fifo::S3Fifo::with_threshold(cap, 2)),
        Box::new(tinylfu::WTinyLfu::new(cap)),
        Box::new(tinylfu::WTinyLfu::adaptive(cap)),
        Box::new(SegCache::new(SegKind::Fifo, cap, seg_items)),
        Box::new(SegCache::new(SegKind::Clock, cap, seg_items)),
        Box::new(SegCache::new(SegKind::S3 { promote: 1 }, cap, seg_items)),
        Box::new(SegCache::new(SegKind::S3 { promote: 2 }, cap, seg_items)),
        Box::new(SegCache::new(SegKind::S3 { promote: 1 }, cap, seg_items).without_ghost()),
        Box::new(SegCache::new(SegKind::Merge { n: 4 }, cap, seg_items)),
    ]
}

/// The segment policies split over the store's shards (see [`sharded`]).
pub fn sharded_policies(cap: usize, seg_items: usize) -> Vec<Box<dyn Policy>> {
    use segcache::{SegCache, SegKind};
    use sharded::Sharded;
    let n = Sharded::store_shards(cap / seg_items.max(1));
    let kinds = [(SegKind::Fifo, true), (SegKind::S3 { promote: 1 }, true), (SegKind::S3 { promote: 1 }, false)];
    kinds
        .into_iter()
        .map(|(k, ghost)| {
            Box::new(Sharded::new(n, cap, move |c| {
                let p = SegCache::new(k, c, seg_items);
                Box::new(if ghost { p } else { p.without_ghost() })
            })) as Box<dyn Policy>
        })
        .collect()
}

/// Hits and misses of a replay.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    pub hits: u64,
    pub misses: u64,
}

impl Counts {
    pub fn miss_ratio(&self) -> f64 {
        self.misses as f64 / (self.hits + self.misses).max(1) as f64
    }
    pub fn hit_ratio(&self) -> f64 {
        1.0 - self.miss_ratio()
    }
}

/// Replays `keys` through `p`.
pub fn replay(p: &mut dyn Policy, keys: &[u32]) -> Counts {
    let mut c = Counts::default();
    for &k in keys {
        if p.access(k) {
            c.hits += 1;
        } else {
            c.misses += 1;
        }
    }
    c
}

/// Replays the scan workload; counts only the measured (phase-2 hot) requests.
pub fn replay_measured(p: &mut dyn Policy, reqs: &[workload::Req]) -> Counts {
    let mut c = Counts::default();
    for r in reqs {
        let hit = p.access(r.key);
        if r.measured {
            if hit {
                c.hits += 1;
            } else {
                c.misses += 1;
            }
        }
    }
    c
}

/// Test helper: "H" for a hit, "." for a miss, per request.
#[cfg(test)]
pub(crate) fn hits(p: &mut dyn Policy, keys: &[u32]) -> String {
    keys.iter().map(|&k| if p.access(k) { 'H' } else { '.' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::ScanWorkload;

    /// The scan-resistance property: a hot Zipf set keeps (most of) its hit
    /// ratio while a long scan of one-hit keys runs through the cache under
    /// S3-FIFO, W-TinyLFU and segment-level S3-FIFO; under FIFO, LRU and
    /// the segment FIFO it collapses.
    #[test]
    fn scan_resistance() {
        let w = ScanWorkload { hot: 5_000, warm: 100_000, measure: 50_000, scan_per_hot: 2, ..Default::default() };
        let cap = 1_000;
        let base = w.requests(false);
        let scan = w.requests(true);
        for mut p in policies(cap, 16) {
            let name = p.name();
            let hb = replay_measured(&mut *p, &base).hit_ratio();
            let mut p2 = policies(cap, 16).into_iter().find(|q| q.name() == name).unwrap();
            let hs = replay_measured(&mut *p2, &scan).hit_ratio();
            let kept = hs / hb;
            eprintln!("{name:24} no scan {hb:.3}  with scan {hs:.3}  kept {kept:.2}");
            match name.as_str() {
                "FIFO" | "LRU" | "seg-FIFO" => assert!(kept < 0.75, "{name}: scan should hurt ({kept:.2})"),
                "S3-FIFO" | "W-TinyLFU" | "seg-S3-FIFO" => assert!(kept > 0.9, "{name}: hot set must survive ({kept:.2})"),
                _ => {}
            }
        }
    }
}
