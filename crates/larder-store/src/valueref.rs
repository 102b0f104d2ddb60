//! References to values stored in regular segments, read back later in
//! pieces: how a UDP reply sends a multi-get's values datagram by datagram
//! without first copying them all out of the store.
//!
//! A [`ValueRef`] names a value by where it lies: its shard, its segment's
//! id and generation, and the value's offset and length in that segment.
//! Why that is enough to know the bytes are still the ones the reader saw
//! ([`Store::copy_value`](crate::Store::copy_value) checks the generation under the shard lock):
//!
//! * Every installation of a segment draws a new generation from the
//!   pool's global counter (`Pool::next_gen`), never reused; an id freed
//!   and given to another segment (in this shard or, as a buffer, in any
//!   other) comes with a new generation.
//! * While a segment keeps its generation, bytes below its write offset
//!   change only in item headers (exptime on touch, the access time and the
//!   fetched/stale/token/base64 bits on reads and meta commands). Values
//!   are written once, when their item is appended: `set`, `append`,
//!   `prepend`, `incr`/`decr` and eviction survivors all make a new item
//!   version at a new place (a later offset or another segment) and leave
//!   the old bytes as they were.
//! * In-place compaction (an eviction that keeps survivors by moving them
//!   to the front of the victim) rewrites the segment's bytes, and gives it
//!   a new generation before the shard lock is released (`SegTable::requeue`).
//!
//! So a reference whose generation still matches reads exactly the bytes
//! it was made from, even if the item was meanwhile deleted, replaced or
//! flushed (memcached likewise sends an item it holds a reference to). A
//! reference whose segment went away reads nothing: the caller stops
//! sending that reply (for UDP, as if datagrams were lost), never sends
//! other bytes. Large objects are not referenced this way: they can be
//! pinned instead ([`Item::pin`](crate::Item::pin)).
//!
//! The check and the copy are one protocol, [`ValueRef::copy_out`], run on
//! the shard's lock from [`sync`](crate::sync); the loom model
//! `tests/loom_valueref.rs` runs it against eviction, reuse of the buffer
//! (in the same shard and in another) and compaction in place.

use crate::segment::SegTable;
use crate::sync::Mutex;
use crate::Item;

/// Where a value stored in a regular segment lies, valid while that
/// segment keeps its generation. Small and `Copy`: holding one keeps
/// nothing alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueRef {
    pub(crate) shard: u32,
    pub(crate) seg: u32,
    pub(crate) gen: u64,
    /// Offset of the value's first byte in the segment.
    pub(crate) off: u32,
    pub(crate) len: u32,
}

impl ValueRef {
    /// The value's length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Item<'_> {
    /// A reference to this value for reading it later with
    /// [`Store::copy_value`](crate::Store::copy_value), if it lies in a regular segment; `None` for
    /// a large object (pin those: [`Item::pin`]).
    #[inline]
    pub fn value_ref(&self) -> Option<ValueRef> {
        if self.seg.large {
            return None;
        }
        Some(ValueRef {
            shard: self.place.0,
            seg: self.place.1,
            gen: self.seg.gen,
            off: self.value_offset() as u32,
            len: self.value.len() as u32,
        })
    }
}

impl ValueRef {
    /// [`Store::copy_value`](crate::Store::copy_value) on the referenced shard's lock, `shard`, whose
    /// segment table `segs` finds: under one holding of the lock, the
    /// segment must still be there with the reference's generation (so no
    /// eviction, reuse or compaction has touched its bytes since) and is
    /// copied from; the lock keeps it so until the copy is done.
    pub(crate) fn copy_out<S>(&self, shard: &Mutex<S>, segs: impl Fn(&S) -> &SegTable, from: usize, dst: &mut [u8]) -> bool {
        let Some(end) = from.checked_add(dst.len()).filter(|&e| e <= self.len()) else {
            return false;
        };
        #[cfg(larder_loom)]
        if crate::sync::flaw::on(crate::sync::flaw::Flaw::CopyAfterUnlock) {
            return self.copy_after_unlock(shard, segs, from, end, dst);
        }
        let g = shard.lock().unwrap_or_else(|e| e.into_inner());
        let Some(seg) = segs(&g).find(self.seg) else {
            return false;
        };
        let start = self.off as usize;
        let same_gen = seg.gen == self.gen;
        #[cfg(larder_loom)]
        let same_gen = same_gen || crate::sync::flaw::on(crate::sync::flaw::Flaw::NoGenerationCheck);
        if !same_gen || seg.large || start + self.len() > seg.write_off {
            return false;
        }
        dst.copy_from_slice(&seg.buf[start + from..start + end]);
        true
    }

    /// The flaw [`CopyAfterUnlock`](crate::sync::flaw::Flaw::CopyAfterUnlock):
    /// the generation checked under one holding of the lock, the bytes
    /// copied under another.
    #[cfg(larder_loom)]
    fn copy_after_unlock<S>(&self, shard: &Mutex<S>, segs: impl Fn(&S) -> &SegTable, from: usize, end: usize, dst: &mut [u8]) -> bool {
        let start = self.off as usize;
        let current = {
            let g = shard.lock().unwrap_or_else(|e| e.into_inner());
            segs(&g).find(self.seg).is_some_and(|s| s.gen == self.gen && !s.large && start + self.len() <= s.write_off)
        };
        if !current {
            return false;
        }
        let g = shard.lock().unwrap_or_else(|e| e.into_inner());
        match segs(&g).find(self.seg) {
            Some(seg) if start + self.len() <= seg.write_off => {
                dst.copy_from_slice(&seg.buf[start + from..start + end]);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Lookup, Mode, Store, ValueRef};

    fn store(limit: usize) -> Store {
        Store::new(Config { memory_limit: limit, ..Config::default() }).unwrap()
    }

    fn reference(s: &Store, key: &[u8]) -> ValueRef {
        match s.get(key, 1, |i| i.value_ref()) {
            Lookup::Hit(Some(r)) => r,
            other => panic!("no reference for {key:?}: {other:?}"),
        }
    }

    fn read(s: &Store, r: &ValueRef, from: usize, n: usize) -> Option<Vec<u8>> {
        let mut dst = vec![0; n];
        s.copy_value(r, from, &mut dst).then_some(dst)
    }

    #[test]
    fn a_reference_reads_the_value_in_pieces() {
        let s = store(8 << 20);
        let value: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        s.store(Mode::Set, b"k", 7, 0, &value, 1);
        let r = reference(&s, b"k");
        assert_eq!(r.len(), 5000);
        assert_eq!(read(&s, &r, 0, 5000).unwrap(), value);
        assert_eq!(read(&s, &r, 1392, 1392).unwrap(), &value[1392..2784]);
        assert_eq!(read(&s, &r, 4999, 1).unwrap(), &value[4999..]);
        assert!(read(&s, &r, 4999, 2).is_none(), "past the value's end");
        assert!(read(&s, &r, usize::MAX, 1).is_none());
    }

    #[test]
    fn replaced_deleted_or_rewritten_values_keep_their_bytes_while_the_segment_lives() {
        let s = store(8 << 20);
        s.store(Mode::Set, b"n", 0, 0, b"10", 1);
        s.store(Mode::Set, b"k", 0, 0, b"old value", 1);
        let (rn, rk) = (reference(&s, b"n"), reference(&s, b"k"));
        // decr keeps the length ("9 "), append/set make new versions.
        s.arith(b"n", 1, false, 1);
        s.store(Mode::Append, b"k", 0, 0, b"!", 1);
        assert_eq!(read(&s, &rn, 0, 2).unwrap(), b"10", "decr wrote a new version elsewhere");
        assert_eq!(read(&s, &rk, 0, 9).unwrap(), b"old value");
        s.store(Mode::Set, b"k", 0, 0, b"new value", 1);
        s.delete(b"n", 1);
        s.touch(b"k", 1, 100);
        assert_eq!(read(&s, &rk, 0, 9).unwrap(), b"old value");
        assert_eq!(read(&s, &rn, 0, 2).unwrap(), b"10");
    }

    #[test]
    fn a_reference_to_an_evicted_segment_reads_nothing() {
        // 64 KiB segments: a few hundred values of 1 KiB evict the first ones
        // and reuse their buffers (and ids) for later writes.
        let s = store(2 << 20);
        let first = vec![b'a'; 1000];
        s.store(Mode::Set, b"first", 0, 0, &first, 1);
        let r = reference(&s, b"first");
        let mut lost = false;
        for i in 0..20_000u32 {
            let v = vec![(i % 251) as u8; 1000];
            s.store(Mode::Set, format!("k{i}").as_bytes(), 0, 0, &v, 1);
            match read(&s, &r, 0, 1000) {
                Some(b) => assert_eq!(b, first, "never other bytes"),
                None => lost = true,
            }
        }
        assert!(lost, "20 MB written into 2 MiB evicts the first segment");
        assert_eq!(s.get(b"first", 1, |_| ()), Lookup::Miss);
    }

    #[test]
    fn compaction_in_place_invalidates_references_into_the_segment() {
        let s = store(2 << 20);
        for i in 0..40u32 {
            s.store(Mode::Set, format!("k{i}").as_bytes(), 0, 0, &[i as u8; 1000], 1);
        }
        let r = reference(&s, b"k39");
        // Dead bytes in front of k39: compaction moves it to the front.
        for i in 0..39u32 {
            s.delete(format!("k{i}").as_bytes(), 1);
        }
        // Compact k39's segment as an eviction pass that keeps everything does.
        let mut g = s.shards[r.shard as usize].0.lock().unwrap();
        assert!(g.evict_keeping(r.seg, 1, &s.pool, true, &mut crate::Unreported).is_none(), "k39 survives in place");
        drop(g);
        assert_eq!(s.get(b"k39", 1, |i| i.value.to_vec()), Lookup::Hit(vec![39; 1000]));
        assert!(read(&s, &r, 0, 1000).is_none(), "moved: the old place is invalid");
        assert!(read(&s, &reference(&s, b"k39"), 0, 1000).unwrap() == vec![39; 1000]);
    }

    #[test]
    fn large_objects_are_pinned_not_referenced() {
        let s = Store::new(Config { memory_limit: 16 << 20, item_size_max: 4 << 20, ..Config::default() }).unwrap();
        s.store(Mode::Set, b"big", 0, 0, &vec![1; 2 << 20], 1);
        assert_eq!(s.get(b"big", 1, |i| (i.value_ref().is_none(), i.pin().is_some())), Lookup::Hit((true, true)));
    }
}
