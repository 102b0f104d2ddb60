//! Grown connection buffers kept for the next request that needs one.
//!
//! A connection's input buffer grows to hold a value of up to a segment
//! (a `set` of 512 KiB), and its output buffer grows to hold a reply (the
//! `get` of it). Both shrink back to their resting size as soon as the
//! connection is idle, so that a thousand idle connections hold a thousand
//! small buffers. Freeing and allocating a buffer that size each request
//! costs more than the request: the allocator maps fresh pages and every
//! 4 KiB of them faults when first written (about 490 faults for a 1 MB
//! set and get, and 5.4x memcached's server CPU; BENCHMARKS.md, "Large
//! and medium values, fourth session"). memcached keeps a per-thread cache
//! of free read buffers for the same reason (`read_buf_bytes_free`).
//!
//! So a connection that shrinks puts its grown buffer here, and one that
//! must grow takes one from here first. The shelf holds a few buffers of
//! each kind, each at most [`SHELF_MAX`] bytes; what it holds is charged to
//! the connection budget like any buffer, and it empties at once when the
//! budget would otherwise refuse something (`ConnBudget::try_take`).
//! Locked only when a buffer grows past or shrinks back to its resting
//! size, never per request.

use std::sync::Mutex;

/// Largest buffer kept. Buffers grow to at most a segment's worth of value
/// (segments are 1 MiB at `-m 1024` and up, smaller below) plus the
/// command; larger ones (bigger segments) are freed as before.
pub const SHELF_MAX: usize = 2 << 20;
/// Buffers kept per kind: enough for every worker of a small server to
/// find one, few enough that the shelf holds at most 8 MiB per kind.
const SLOTS: usize = 4;

/// Which buffers a shelf slot holds: input (`Vec` of initialised bytes,
/// used by length) or output (used by capacity).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BufKind {
    Read,
    Write,
}

#[derive(Default)]
pub struct Shelf {
    read: Vec<Vec<u8>>,
    write: Vec<Vec<u8>>,
}

/// The bytes a buffer is charged for on the shelf.
pub fn size_of_kind(kind: BufKind, buf: &Vec<u8>) -> usize {
    match kind {
        BufKind::Read => buf.len(),
        BufKind::Write => buf.capacity(),
    }
}

impl Shelf {
    fn slots(&mut self, kind: BufKind) -> &mut Vec<Vec<u8>> {
        match kind {
            BufKind::Read => &mut self.read,
            BufKind::Write => &mut self.write,
        }
    }

    /// Whether a buffer of `bytes` would be kept (a free slot, not too big).
    pub fn has_room(&mut self, kind: BufKind, bytes: usize) -> bool {
        bytes <= SHELF_MAX && self.slots(kind).len() < SLOTS
    }

    pub fn put(&mut self, kind: BufKind, mut buf: Vec<u8>) {
        if kind == BufKind::Write {
            buf.clear();
        }
        self.slots(kind).push(buf);
    }

    /// The smallest kept buffer of at least `min` bytes, if any.
    pub fn take(&mut self, kind: BufKind, min: usize) -> Option<Vec<u8>> {
        let slots = self.slots(kind);
        let best = (0..slots.len()).filter(|&i| size_of_kind(kind, &slots[i]) >= min).min_by_key(|&i| size_of_kind(kind, &slots[i]))?;
        Some(slots.swap_remove(best))
    }

    /// Everything kept, emptied out (to be freed).
    pub fn drain(&mut self) -> Vec<Vec<u8>> {
        let mut all = std::mem::take(&mut self.read);
        all.append(&mut self.write);
        all
    }

    /// Bytes held of one kind (the budget keeps its own count of them).
    #[cfg(test)]
    fn bytes(&mut self, kind: BufKind) -> usize {
        self.slots(kind).iter().map(|b| size_of_kind(kind, b)).sum()
    }
}

/// The shelf behind its lock.
pub type SharedShelf = Mutex<Shelf>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_smallest_buffer_that_fits() {
        let mut s = Shelf::default();
        s.put(BufKind::Read, vec![0; 300_000]);
        s.put(BufKind::Read, vec![0; 100_000]);
        s.put(BufKind::Write, Vec::with_capacity(500_000));
        assert!(s.take(BufKind::Read, 400_000).is_none());
        assert_eq!(s.take(BufKind::Read, 50_000).unwrap().len(), 100_000);
        assert_eq!(s.bytes(BufKind::Read), 300_000);
        let w = s.take(BufKind::Write, 200_000).unwrap();
        assert!(w.capacity() >= 500_000 && w.is_empty());
        assert_eq!(s.bytes(BufKind::Write), 0);
    }

    #[test]
    fn keeps_a_few_of_each_kind_and_none_too_big() {
        let mut s = Shelf::default();
        assert!(!s.has_room(BufKind::Read, SHELF_MAX + 1));
        for _ in 0..SLOTS {
            assert!(s.has_room(BufKind::Read, 1000));
            s.put(BufKind::Read, vec![0; 1000]);
        }
        assert!(!s.has_room(BufKind::Read, 1000));
        assert!(s.has_room(BufKind::Write, 1000));
        assert_eq!(s.drain().len(), SLOTS);
        assert_eq!(s.bytes(BufKind::Read), 0);
    }
}
