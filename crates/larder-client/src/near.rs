//! The near cache: values kept in process, bounded in bytes, evicted by
//! moka's TinyLFU (frequency- and size-aware, Caffeine's policy), each entry
//! living no longer than the server said the item has left (minus one second:
//! the server counts whole seconds) and no longer than the configured maximum.
//!
//! It also holds the race rule of the invalidation protocol: before a read is
//! sent, a pending token for its key is recorded; an invalidation of the key
//! (or a flush) removes it; the reply enters the cache only if its token is
//! still there. Token check and insert happen under the key's shard lock, the
//! same lock an invalidation takes, so an invalidation is never overtaken by
//! the insert of the value it invalidates.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use moka::sync::Cache;
use moka::Expiry;

use crate::metrics::{inc, Metrics};

/// A cached value, cheap to clone.
pub type Value = Arc<[u8]>;

/// Bytes counted per entry beyond its key and value (the map's own memory).
const ENTRY_OVERHEAD: usize = 96;
const SHARDS: usize = 16;

#[derive(Clone)]
struct Entry {
    value: Value,
    ttl: Duration,
}

struct PerEntryTtl;

impl Expiry<String, Entry> for PerEntryTtl {
    fn expire_after_create(&self, _k: &String, v: &Entry, _at: Instant) -> Option<Duration> {
        Some(v.ttl)
    }
    fn expire_after_update(&self, _k: &String, v: &Entry, _at: Instant, _left: Option<Duration>) -> Option<Duration> {
        Some(v.ttl)
    }
}

pub struct NearCache {
    cache: Cache<String, Entry>,
    pending: Vec<Mutex<HashMap<String, u64>>>,
    next_token: AtomicU64,
    max_ttl: Duration,
    metrics: Arc<Metrics>,
}

/// The TTL a near entry gets: the server's remaining seconds `t` (-1: none)
/// less one (the item can be up to a second closer to expiry than `t` says),
/// capped by `max`. `None`: too close to expiry to keep.
pub fn near_ttl(server_ttl: Option<i64>, max: Duration) -> Option<Duration> {
    match server_ttl {
        None | Some(-1) => Some(max),
        Some(t) if t > 1 => Some(Duration::from_secs(t as u64 - 1).min(max)),
        _ => None,
    }
}

impl NearCache {
    pub fn new(max_bytes: u64, max_ttl: Duration, metrics: Arc<Metrics>) -> NearCache {
        let cache = Cache::builder()
            .max_capacity(max_bytes)
            .weigher(|k: &String, v: &Entry| u32::try_from(k.len() + v.value.len() + ENTRY_OVERHEAD).unwrap_or(u32::MAX))
            .expire_after(PerEntryTtl)
            .build();
        NearCache {
            cache,
            pending: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            next_token: AtomicU64::new(1),
            max_ttl,
            metrics,
        }
    }

    fn shard(&self, key: &str) -> &Mutex<HashMap<String, u64>> {
        &self.pending[crate::ketama::one_at_a_time(key.as_bytes()) as usize % SHARDS]
    }

    pub fn get(&self, key: &str) -> Option<Value> {
        self.cache.get(key).map(|e| e.value)
    }

    /// Records a pending token for a read of `key` about to be sent.
    pub fn begin(&self, key: &str) -> u64 {
        let t = self.next_token.fetch_add(1, Relaxed);
        self.shard(key).lock().unwrap().insert(key.to_string(), t);
        t
    }

    /// The reply of the read that took `token` arrived: the value is cached if
    /// the token survived (no invalidation or flush since `begin`). True if cached.
    pub fn complete(&self, key: &str, token: u64, value: Value, server_ttl: Option<i64>) -> bool {
        let mut p = self.shard(key).lock().unwrap();
        if p.get(key) != Some(&token) {
            return false;
        }
        p.remove(key);
        match near_ttl(server_ttl, self.max_ttl) {
            Some(ttl) => {
                self.cache.insert(key.to_string(), Entry { value, ttl });
                true
            }
            None => false,
        }
    }

    /// The read that took `token` ended without a value to cache.
    pub fn abandon(&self, key: &str, token: u64) {
        let mut p = self.shard(key).lock().unwrap();
        if p.get(key) == Some(&token) {
            p.remove(key);
        }
    }

    /// `key` may have changed (an `IV`, or this process wrote it).
    pub fn invalidate(&self, key: &str) {
        let mut p = self.shard(key).lock().unwrap();
        p.remove(key);
        self.cache.invalidate(key);
    }

    /// Everything may have changed (`IA`, `LOST`, a stream lost): every entry
    /// and every pending token goes. All shard locks are held meanwhile, so no
    /// read whose token predates the flush can insert after it.
    pub fn flush(&self) {
        let mut guards: Vec<_> = self.pending.iter().map(|m| m.lock().unwrap()).collect();
        for g in guards.iter_mut() {
            g.clear();
        }
        self.cache.invalidate_all();
        inc(&self.metrics.flushes);
    }

    /// Bytes held (after applying pending maintenance).
    pub fn weighted_size(&self) -> u64 {
        self.cache.run_pending_tasks();
        self.cache.weighted_size()
    }

    pub fn entry_count(&self) -> u64 {
        self.cache.run_pending_tasks();
        self.cache.entry_count()
    }

    #[cfg(test)]
    pub fn pending_tokens(&self) -> usize {
        self.pending.iter().map(|m| m.lock().unwrap().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near() -> NearCache {
        NearCache::new(1 << 20, Duration::from_secs(60), Arc::new(Metrics::default()))
    }

    #[test]
    fn ttl_rule() {
        let max = Duration::from_secs(30);
        assert_eq!(near_ttl(Some(-1), max), Some(max));
        assert_eq!(near_ttl(Some(10), max), Some(Duration::from_secs(9)));
        assert_eq!(near_ttl(Some(100), max), Some(max));
        assert_eq!(near_ttl(Some(1), max), None);
    }

    #[test]
    fn invalidation_between_send_and_reply_wins() {
        let n = near();
        let t = n.begin("k");
        n.invalidate("k"); // the IV overtook the reply
        assert!(!n.complete("k", t, Arc::from(&b"old"[..]), Some(-1)));
        assert!(n.get("k").is_none());
        let t = n.begin("k");
        assert!(n.complete("k", t, Arc::from(&b"new"[..]), Some(-1)));
        assert_eq!(&*n.get("k").unwrap(), b"new");
    }

    #[test]
    fn flush_drops_entries_and_tokens() {
        let n = near();
        let t1 = n.begin("a");
        assert!(n.complete("a", t1, Arc::from(&b"1"[..]), None));
        let t2 = n.begin("b");
        n.flush();
        assert!(n.get("a").is_none());
        assert!(!n.complete("b", t2, Arc::from(&b"2"[..]), None));
        assert_eq!(n.pending_tokens(), 0);
    }

    #[test]
    fn concurrent_reads_of_one_key_keep_only_the_newest_token() {
        let n = near();
        let t1 = n.begin("k");
        let t2 = n.begin("k");
        assert!(!n.complete("k", t1, Arc::from(&b"x"[..]), None));
        assert!(n.complete("k", t2, Arc::from(&b"y"[..]), None));
    }
}
