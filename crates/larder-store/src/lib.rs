//! larder-store: the storage engine (segments, index, expiry, eviction, CAS).
//!
//! No I/O and no wire bytes: the server converts protocol requests into calls
//! on [`Store`]. All time is passed in by the caller as [`Time`] (seconds on
//! the server's clock), so tests drive the store with a fake clock.
//!
//! `Store` is `Send + Sync`; worker threads call it directly. There is no
//! global lock on the request path.

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
    /// Segment size in bytes (default 1 MiB).
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
    pub curr_items: u64,
    pub total_items: u64,
    /// Bytes used by live items (headers + keys + values).
    pub bytes: u64,
    pub evictions: u64,
    /// Expired items whose memory was reclaimed.
    pub reclaimed: u64,
    pub expired_unfetched: u64,
    pub evicted_unfetched: u64,
    pub limit_maxbytes: u64,
    pub segments_total: u64,
    pub segments_used: u64,
    pub segment_size: u64,
    /// Bytes held by dead (overwritten/deleted/expired) items not yet reclaimed.
    pub bytes_dead: u64,
    pub index_bytes: u64,
    pub index_slots: u64,
    pub index_used: u64,
}

/// The cache.
pub struct Store {
    _private: (),
}

impl Store {
    pub fn new(config: Config) -> Result<Store, ConfigError> {
        let _ = config;
        todo!()
    }

    /// Look a key up; `read` runs while the item is guaranteed stable.
    pub fn get<R>(&self, key: &[u8], now: Time, read: impl FnOnce(&Item<'_>) -> R) -> Lookup<R> {
        let _ = (key, now, read);
        todo!()
    }

    /// Look a key up and set its expiry (`gat`); `read` sees the new expiry.
    pub fn get_and_touch<R>(
        &self,
        key: &[u8],
        now: Time,
        exptime: Time,
        read: impl FnOnce(&Item<'_>) -> R,
    ) -> Lookup<R> {
        let _ = (key, now, exptime, read);
        todo!()
    }

    /// Write an item according to `mode`.
    pub fn store(
        &self,
        mode: Mode,
        key: &[u8],
        flags: u32,
        exptime: Time,
        value: &[u8],
        now: Time,
    ) -> StoreResult {
        let _ = (mode, key, flags, exptime, value, now);
        todo!()
    }

    /// Remove a key; whether a live item was removed.
    pub fn delete(&self, key: &[u8], now: Time) -> bool {
        let _ = (key, now);
        todo!()
    }

    /// Set a live item's expiry; whether it existed.
    pub fn touch(&self, key: &[u8], now: Time, exptime: Time) -> bool {
        let _ = (key, now, exptime);
        todo!()
    }

    /// incr (wrapping at 2^64) or decr (stopping at 0) a decimal value.
    pub fn arith(&self, key: &[u8], now: Time, incr: bool, delta: u64) -> ArithResult {
        let _ = (key, now, incr, delta);
        todo!()
    }

    /// Invalidate every item stored before `at` once `now >= at`
    /// (`at <= now`: at once).
    pub fn flush_all(&self, now: Time, at: Time) {
        let _ = (now, at);
        todo!()
    }

    /// Change the memory limit at run time (`cache_memlimit`).
    pub fn set_memory_limit(&self, bytes: usize) -> Result<(), ConfigError> {
        let _ = bytes;
        todo!()
    }

    pub fn stats(&self) -> Stats {
        todo!()
    }
}
