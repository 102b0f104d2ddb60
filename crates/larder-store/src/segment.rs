//! Segments and the per-shard segment table.
//!
//! A segment is a fixed-size buffer into which items are appended back to
//! back; it is never modified except by appending, by patching an item's
//! exptime or fetched bit, and by being recycled as a whole. A "large"
//! segment is a buffer sized exactly for one item too big for a regular
//! segment (a large object).
//!
//! Each segment carries a generation drawn from a global counter when it is
//! installed; the pair (generation, offset) names one item version forever,
//! which is where CAS values come from, and `flush_all` compares generations.
//!
//! The table maps shard-local ids (1..=MAX_SEG_ID, reused) to segments and
//! keeps them in creation (FIFO) order; ids freed out of order leave stale
//! queue entries that are skipped (their generation no longer matches).

use crate::index::MAX_SEG_ID;
use crate::large::SegBuf;
use crate::written::WriteTimes;
use crate::Time;

/// `n` bytes rounded up to whole 4 KiB pages.
fn in_pages(n: usize) -> usize {
    n.div_ceil(4096) * 4096
}
use std::collections::VecDeque;

pub struct Segment {
    /// A plain buffer, or a large object readers may pin (`large`).
    pub buf: SegBuf,
    pub gen: u64,
    /// Bytes appended so far (items occupy `0..write_off`).
    pub write_off: usize,
    /// Bytes of items still referenced by the index.
    pub live_bytes: usize,
    pub live_items: u32,
    pub large: bool,
    /// Latest exptime of any item written or touched here (`u32::MAX` once
    /// one never expires): from then on everything in it is expired.
    pub max_exp: u32,
    /// CAS of a large object's item (regular items derive theirs).
    pub cas: u64,
    /// In the main queue of segment S3-FIFO ([`evict`](crate::evict)):
    /// holds items that survived an eviction. New writes go to segments
    /// without this flag (the small queue).
    pub main: bool,
    /// When the items here were written, by region of offsets (items moved
    /// in from older segments bring their time): `stats items` `age` is the
    /// oldest among segments holding live items.
    pub times: WriteTimes,
}

/// Its place, not its bytes (readers' `Item`s show it).
impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment").field("gen", &self.gen).field("write_off", &self.write_off).field("large", &self.large).finish()
    }
}

impl Segment {
    pub fn new(buf: impl Into<SegBuf>, gen: u64, large: bool) -> Segment {
        let buf = buf.into();
        let write_off = if large { buf.len() } else { 0 };
        Segment {
            buf,
            gen,
            write_off,
            live_bytes: 0,
            live_items: 0,
            large,
            max_exp: 0,
            cas: 0,
            main: false,
            times: WriteTimes::default(),
        }
    }

    /// The write time of the oldest live item here (see [`WriteTimes`]).
    pub fn born(&self) -> Option<Time> {
        self.times.oldest_live()
    }

    pub fn free_space(&self) -> usize {
        self.buf.len() - self.write_off
    }

    /// Records that an item here now expires at `exptime` (0 = never).
    pub fn note_exptime(&mut self, exptime: u32) {
        let e = if exptime == 0 { u32::MAX } else { exptime };
        self.max_exp = self.max_exp.max(e);
    }

    /// Whether every item ever written here has expired by `now`.
    pub fn all_expired(&self, now: u32) -> bool {
        self.max_exp != u32::MAX && now >= self.max_exp
    }
}

#[derive(Default)]
pub struct SegTable {
    slots: Vec<Option<Segment>>,
    free_ids: Vec<u32>,
    fifo: VecDeque<(u32, u64)>,
    count: usize,
    large: usize,
    large_bytes: usize,
    /// `large_bytes` with each object rounded up to whole 4 KiB pages.
    large_pages_bytes: usize,
}

impl SegTable {
    pub fn new() -> SegTable {
        SegTable { slots: vec![None], ..Default::default() }
    }

    /// Whether another segment can get an id.
    pub fn has_free_id(&self) -> bool {
        !self.free_ids.is_empty() || self.slots.len() <= MAX_SEG_ID as usize
    }

    /// Adds a segment; returns its id.
    pub fn install(&mut self, seg: Segment) -> u32 {
        let gen = seg.gen;
        if seg.large {
            self.large += 1;
            self.large_bytes += seg.buf.len();
            self.large_pages_bytes += in_pages(seg.buf.len());
        }
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(seg);
                id
            }
            None => {
                assert!(self.slots.len() <= MAX_SEG_ID as usize, "segment ids exhausted");
                self.slots.push(Some(seg));
                (self.slots.len() - 1) as u32
            }
        };
        self.count += 1;
        self.fifo.push_back((id, gen));
        id
    }

    /// Gives a segment a new generation and moves it to the young end of
    /// the queue (its old queue entry goes stale and is skipped): a segment
    /// whose items were rewritten in place by compaction.
    pub fn requeue(&mut self, id: u32, gen: u64) {
        self.get_mut(id).gen = gen;
        self.fifo.push_back((id, gen));
        self.trim_fifo();
    }

    /// Removes a segment, returning it.
    pub fn remove(&mut self, id: u32) -> Segment {
        let seg = self.slots[id as usize].take().expect("removing a free segment id");
        self.free_ids.push(id);
        self.count -= 1;
        if seg.large {
            self.large -= 1;
            self.large_bytes -= seg.buf.len();
            self.large_pages_bytes -= in_pages(seg.buf.len());
        }
        self.trim_fifo();
        seg
    }

    fn is_current(&self, id: u32, gen: u64) -> bool {
        matches!(&self.slots[id as usize], Some(s) if s.gen == gen)
    }

    fn trim_fifo(&mut self) {
        while let Some(&(id, gen)) = self.fifo.front() {
            if self.is_current(id, gen) {
                break;
            }
            self.fifo.pop_front();
        }
        // Keep stale entries from piling up behind a long-lived head.
        if self.fifo.len() > 2 * self.count + 64 {
            let slots = &self.slots;
            self.fifo.retain(|&(id, gen)| matches!(&slots[id as usize], Some(s) if s.gen == gen));
        }
    }

    /// The segment with id `id`, if there is one (ids come from outside:
    /// a [`ValueRef`](crate::ValueRef) may outlive its segment).
    pub fn find(&self, id: u32) -> Option<&Segment> {
        self.slots.get(id as usize)?.as_ref()
    }

    pub fn get(&self, id: u32) -> &Segment {
        self.slots[id as usize].as_ref().expect("dangling segment id")
    }

    pub fn get_mut(&mut self, id: u32) -> &mut Segment {
        self.slots[id as usize].as_mut().expect("dangling segment id")
    }

    /// Segments in creation order, oldest first.
    pub fn oldest_first(&self) -> impl Iterator<Item = u32> + '_ {
        self.fifo.iter().filter(|&&(id, gen)| self.is_current(id, gen)).map(|&(id, _)| id)
    }

    /// Generation of the oldest segment, `u64::MAX` if none.
    pub fn oldest_gen(&self) -> u64 {
        self.fifo.iter().find(|&&(id, gen)| self.is_current(id, gen)).map_or(u64::MAX, |&(_, g)| g)
    }

    /// Number of segments (regular and large).
    pub fn count(&self) -> usize {
        self.count
    }

    pub fn large_count(&self) -> usize {
        self.large
    }

    pub fn large_bytes(&self) -> usize {
        self.large_bytes
    }

    /// [`large_bytes`](Self::large_bytes) in whole 4 KiB pages per object.
    pub fn large_pages_bytes(&self) -> usize {
        self.large_pages_bytes
    }

    /// The item bytes starting at `off` in segment `id`.
    pub fn bytes(&self, id: u32, off: u32) -> &[u8] {
        let s = self.get(id);
        &s.buf[off as usize..s.write_off]
    }

    /// The item bytes at `off` for patching. For a large object a reader
    /// has pinned, only its header and key: the value cannot change while
    /// it is being sent ([`large`](crate::large)).
    pub fn bytes_mut(&mut self, id: u32, off: u32) -> &mut [u8] {
        let s = self.get_mut(id);
        let end = s.write_off;
        let buf = &mut s.buf[..];
        let end = end.min(buf.len());
        &mut buf[off as usize..end]
    }

    /// Copies `len` bytes from (`src`, `src_off`) to (`dst`, `dst_off`); the
    /// two may be the same segment (non-overlapping ranges).
    pub fn copy(&mut self, src: u32, src_off: usize, dst: u32, dst_off: usize, len: usize) {
        if src == dst {
            self.get_mut(src).buf.copy_within(src_off..src_off + len, dst_off);
        } else {
            let mut d = std::mem::take(&mut self.get_mut(dst).buf);
            d[dst_off..dst_off + len].copy_from_slice(&self.get(src).buf[src_off..src_off + len]);
            self.get_mut(dst).buf = d;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(gen: u64, large: bool) -> Segment {
        Segment::new(vec![0; 64].into_boxed_slice(), gen, large)
    }

    #[test]
    fn ids_are_reused_and_fifo_skips_stale() {
        let mut t = SegTable::new();
        let a = t.install(seg(1, false));
        let b = t.install(seg(2, true));
        let c = t.install(seg(3, false));
        assert_eq!((a, b, c), (1, 2, 3));
        assert_eq!(t.large_count(), 1);
        assert_eq!(t.large_bytes(), 64);
        assert_eq!(t.oldest_gen(), 1);
        t.remove(b);
        assert_eq!(t.large_count(), 0);
        assert_eq!(t.oldest_first().collect::<Vec<_>>(), vec![1, 3]);
        let d = t.install(seg(4, false));
        assert_eq!(d, 2, "freed id reused");
        assert_eq!(t.oldest_first().collect::<Vec<_>>(), vec![1, 3, 2]);
        t.remove(a);
        assert_eq!(t.oldest_gen(), 3);
        assert_eq!(t.count(), 2);
    }

    #[test]
    fn requeue_moves_to_the_young_end() {
        let mut t = SegTable::new();
        let a = t.install(seg(1, false));
        let b = t.install(seg(2, false));
        t.requeue(a, 3);
        assert_eq!(t.oldest_first().collect::<Vec<_>>(), vec![b, a]);
        assert_eq!(t.oldest_gen(), 2);
        assert_eq!(t.get(a).gen, 3);
        t.remove(b);
        assert_eq!(t.oldest_gen(), 3);
    }

    #[test]
    fn max_exptime_tracking() {
        let mut s = seg(1, false);
        assert!(s.all_expired(0), "empty");
        s.note_exptime(10);
        s.note_exptime(5);
        assert!(!s.all_expired(9));
        assert!(s.all_expired(10));
        s.note_exptime(0);
        assert!(!s.all_expired(u32::MAX - 1));
    }

    #[test]
    fn copy_within_and_across() {
        let mut t = SegTable::new();
        let a = t.install(seg(1, false));
        let b = t.install(seg(2, false));
        t.get_mut(a).buf[..4].copy_from_slice(b"abcd");
        t.copy(a, 0, a, 10, 4);
        t.copy(a, 10, b, 5, 4);
        assert_eq!(&t.get(a).buf[10..14], b"abcd");
        assert_eq!(&t.get(b).buf[5..9], b"abcd");
        assert_eq!(t.get(a).buf.len(), 64);
    }

    #[test]
    fn many_stale_entries_are_compacted() {
        let mut t = SegTable::new();
        let keep = t.install(seg(0, false));
        for g in 1..1000 {
            let id = t.install(seg(g, false));
            t.remove(id);
        }
        assert!(t.fifo.len() < 200);
        assert_eq!(t.oldest_first().collect::<Vec<_>>(), vec![keep]);
    }
}
