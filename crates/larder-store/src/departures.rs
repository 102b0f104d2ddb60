//! [`Departures`]: what a caller is told about every item that leaves the
//! store without a client asking (eviction, expiry found by a lookup or
//! reclaimed with its segment, flush, the old value a failed `set` drops)
//! and every item a move grew, with its key and the bytes it was charged.
//!
//! The caller passes its own sink with each call
//! ([`Store::reporting`](crate::Store::reporting), see [`ops`](crate::ops)):
//! the departures a call causes — evictions in other shards included — go
//! to whoever made it, so the server's worker reaches its own accounting
//! and log buffer without thread-local state. The sink runs under a shard's
//! lock; it must be quick and must not call the store. It also gets the
//! item's metadata ([`DepartedItem`]: value length, expiry, last access,
//! fetched), which the server's `watch evictions` lines print. Deletes and
//! replacements are not reported (the caller knows them: [`Charge`](crate::Charge)).
//! The store's plain methods report to [`Unreported`].

/// Why an item left the store on its own — or, for `Moved`, changed size
/// without a client asking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Departure {
    Evicted,
    Expired,
    Flushed,
    /// A `set` that could not be stored (too large, out of memory) dropped
    /// the key's old value, as memcached does, so that no client reads
    /// data it just tried to overwrite. No client asked for that removal.
    Dropped,
    /// Not a departure: eviction (a survivor) or compaction moved the item
    /// and it now stores its CAS, so it grew; the hook's byte count is by
    /// how much. Byte accounting that follows sets and departures adds it,
    /// or the item's later departure would take out more than came in.
    Moved,
}

/// The metadata of an item leaving the store, as its header holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DepartedItem {
    pub value_len: usize,
    /// Absolute expiry (store time), 0 = never.
    pub exptime: crate::Time,
    pub fetched: bool,
    /// Last access, store seconds mod 65536 (see [`idle`](Self::idle)).
    atime: u16,
}

impl DepartedItem {
    /// Seconds since the last access (exact within 65535 s of `now`).
    pub fn idle(&self, now: crate::Time) -> u32 {
        (now as u16).wrapping_sub(self.atime) as u32
    }
}

/// Told about items that leave the store on their own: see the module docs.
pub trait Departures {
    /// `key` left (or, for [`Departure::Moved`], grew) by `bytes`.
    fn departed(&mut self, key: &[u8], bytes: u64, why: Departure, item: &DepartedItem);
}

/// The sink of callers that do not follow departures (tests, tools, the
/// store's plain methods).
pub struct Unreported;

impl Departures for Unreported {
    #[inline]
    fn departed(&mut self, _: &[u8], _: u64, _: Departure, _: &DepartedItem) {}
}

/// Any closure taking what [`Departures::departed`] takes is a sink.
impl<F: FnMut(&[u8], u64, Departure, &DepartedItem)> Departures for F {
    #[inline]
    fn departed(&mut self, key: &[u8], bytes: u64, why: Departure, item: &DepartedItem) {
        self(key, bytes, why, item)
    }
}

/// Called from `Shard::account_dead` for an item (header `h`) that left
/// without a client asking.
#[inline]
pub(crate) fn report(d: &mut dyn Departures, key: &[u8], h: &crate::item::Header, why: Departure) {
    d.departed(key, h.total() as u64, why, &departed(h));
}

fn departed(h: &crate::item::Header) -> DepartedItem {
    DepartedItem { value_len: h.vlen, exptime: h.exptime, fetched: h.fetched, atime: h.atime }
}

/// Called from `Shard::keep_moved` when a moved item (header `h`) grew by
/// `grew` bytes.
#[inline]
pub(crate) fn report_growth(d: &mut dyn Departures, key: &[u8], h: &crate::item::Header, grew: usize) {
    if grew > 0 {
        d.departed(key, grew as u64, Departure::Moved, &departed(h));
    }
}


#[cfg(test)]
mod tests {
    use crate::{Config, Departure, Mode, Store};

    /// What a sink saw: (key, bytes, why), one per departure.
    type Seen = Vec<(Vec<u8>, u64, Departure)>;

    #[test]
    fn departures_are_reported_with_their_size() {
        let s = Store::new(Config { memory_limit: 4 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap();
        let mut seen: Seen = Vec::new();
        let mut log = |k: &[u8], b, d, it: &crate::DepartedItem| {
            if d == Departure::Expired {
                // What the server's watch line needs: value length, expiry, idle time.
                assert_eq!((it.value_len, it.exptime, it.fetched, it.idle(6)), (1, 5, false, 5));
            }
            seen.push((k.to_vec(), b, d))
        };
        let mut r = s.reporting(&mut log);
        let set = |r: &mut crate::Reporting<'_, _>, key: &[u8], exptime, value: &[u8]| {
            let w = crate::Write { mode: Mode::Set, key, flags: 0, exptime, value, landed: None };
            r.write(&w, 1, &crate::WriteOptions::default())
        };
        set(&mut r, b"exp", 5, b"v");
        set(&mut r, b"del", 0, b"v");
        r.delete_charged(b"del", 1, None);
        set(&mut r, b"exp2", 0, b"v");
        set(&mut r, b"exp2", 0, b"vv"); // replaced: not reported
        assert!(matches!(r.get(b"exp", 6, |_| ()), crate::Lookup::Expired));
        assert_eq!(seen, vec![(b"exp".to_vec(), crate::item_bytes(3, 1, 0), Departure::Expired)]);
        seen.clear();
        // Fill far past the limit: evictions, each reported once, and the
        // store's bytes = stored - departed.
        let mut stored = 0u64;
        let mut log = |k: &[u8], b, d, _: &crate::DepartedItem| seen.push((k.to_vec(), b, d));
        for i in 0..20_000 {
            let k = format!("key:{i}");
            let w = crate::Write { mode: Mode::Set, key: k.as_bytes(), flags: 0, exptime: 0, value: &[b'x'; 500], landed: None };
            if let (crate::StoreResult::Stored(_), charge) = s.reporting(&mut log).write(&w, 6, &crate::WriteOptions::default()) {
                stored += charge.written;
            }
        }
        assert!(seen.iter().any(|x| x.2 == Departure::Evicted));
        let departed: u64 = seen.iter().filter(|x| x.2 != Departure::Moved).map(|x| x.1).sum();
        let grown: u64 = seen.iter().filter(|x| x.2 == Departure::Moved).map(|x| x.1).sum();
        let live = s.stats().bytes;
        // exp2 was stored before the loop (if it was evicted since, its
        // departure is in `departed`).
        let exp2 = crate::item_bytes(4, 2, 0);
        assert_eq!(live, stored + exp2 + grown - departed);
    }

    /// Moves (S3-FIFO survivors, compaction) grow items by their CAS field:
    /// reported, so sets + growth - departures = the store's bytes exactly.
    #[test]
    fn moves_report_growth() {
        let s = Store::new(Config { memory_limit: 4 << 20, segment_size: 64 << 10, ..Config::default() }).unwrap();
        let mut seen: Seen = Vec::new();
        let mut log = |k: &[u8], b, d, _: &crate::DepartedItem| seen.push((k.to_vec(), b, d));
        let (mut stored, mut replaced) = (0u64, 0u64);
        for i in 0..40_000u64 {
            // Hot keys (hit, so they survive eviction) and overwrites of
            // recent ones (dead bytes, so compaction).
            let k = if i % 3 == 0 { format!("hot:{}", i % 300) } else { format!("key:{}", i - i % 7) };
            let w = crate::Write { mode: Mode::Set, key: k.as_bytes(), flags: 0, exptime: 0, value: &[b'x'; 300], landed: None };
            if let (crate::StoreResult::Stored(_), charge) = s.reporting(&mut log).write(&w, 1, &crate::WriteOptions::default()) {
                stored += charge.written;
                replaced += charge.released;
            }
            s.reporting(&mut log).get(format!("hot:{}", i % 300).as_bytes(), 1, |_| ());
        }
        let moved = seen.iter().filter(|x| x.2 == Departure::Moved).count();
        assert!(moved > 0 && s.stats().compactions > 0, "moves {moved}, stats {:?}", s.stats());
        let departed: u64 = seen.iter().filter(|x| x.2 != Departure::Moved).map(|x| x.1).sum();
        let grown: u64 = seen.iter().filter(|x| x.2 == Departure::Moved).map(|x| x.1).sum();
        assert_eq!(s.stats().bytes, stored + grown - replaced - departed);
    }
}
