//! Segment buffers, and large objects whose value can outlive their place
//! in the store while a connection sends it.
//!
//! A regular segment's buffer is a plain `Box<[u8]>` owned by its shard. A
//! large object (one item bigger than a segment) is a [`LargeObject`]
//! behind an `Arc`: the shard holds one reference through [`SegBuf`], and a
//! reader may take more with [`SegBuf::pin`], a [`Pinned`] view of the
//! item's value that stays valid after the item is replaced, deleted,
//! evicted or flushed (memcached refcounts items being written to a socket
//! for the same reason). So a get of a large value hands the bytes to the
//! socket without copying them into the connection's output.
//!
//! # Accounting
//!
//! A large object's bytes are reserved from the pool (`-m`) when it is
//! allocated and are released when the *last* reference drops (`Drop` of
//! [`LargeObject`]), not when the store lets go of it. When the store lets
//! go of one that readers still pin (it was replaced, deleted, evicted,
//! flushed), its charge moves to the [`PinSpill`] if that has room — the
//! server's connection budget, which paid for a copied value before
//! values were pinned — so `-m` is free for new data at once; otherwise it
//! stays charged to `-m` and the store evicts other data (or answers out
//! of memory) instead of allocating past the limit. Either way every byte
//! is counted in `-m` or in the budget until the last pin drops, and the
//! process stays within `-m` plus the connection budget by construction,
//! however slowly clients read.
//!
//! # Aliasing rules (why the `unsafe` here is sound)
//!
//! The bytes live in `UnsafeCell`s because the shard patches the item's
//! header (exptime, fetched bit, last access, meta flags) while other
//! threads may be reading the value through a [`Pinned`]:
//!
//! * The first pin *seals* the object at the value's offset. Pinned views
//!   only ever read `seal..len`.
//! * Mutable access goes only through `&mut SegBuf` (the shard's one
//!   handle, under its lock). While the `Arc` is unique (no pin alive, and
//!   none can be made without `&SegBuf`) that is the whole buffer; while it
//!   is shared it is only `..seal`, which no pin reads.
//! * Shared access through `&SegBuf` (the store's readers, under the shard
//!   lock) cannot coexist with the `&mut SegBuf` above.
//!
//! So no `&[u8]` ever overlaps a live `&mut [u8]`, and bytes a pin can see
//! are never written while it lives.
//!
//! The object's reference count, its seal, its charge and the spare buffer
//! come from [`sync`](crate::sync), and every access to the value's bytes
//! is announced to a [`Region`]: the loom model `tests/loom_large.rs` checks
//! these rules, and that the bytes are released exactly once, over every
//! interleaving of a pinning reader with the store letting go of the object.

use crate::sync::{self, AtomicBool, AtomicUsize, Mutex, Region};
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};

/// Memory outside `-m` that can take over the charge for a large object
/// the store let go of while readers still pin it (the server's connection
/// budget).
pub trait PinSpill: Send + Sync {
    /// Charges `n` bytes if there is room.
    fn try_take(&self, n: usize) -> bool;
    /// Gives back `n` bytes taken before.
    fn give_back(&self, n: usize);
}

/// The bytes of one large object, counted until dropped.
pub struct LargeObject {
    bytes: Box<[UnsafeCell<u8>]>,
    /// Start of the bytes pins may read (`usize::MAX`: never pinned).
    seal: AtomicUsize,
    /// The pool's `used` counter, which these bytes are charged to...
    used: Arc<AtomicUsize>,
    /// ...unless `in_spill`: then they are charged here (a pinned object
    /// the store let go of, [`let_go`]; a [`Landing`] not yet adopted).
    spill: OnceLock<Arc<dyn PinSpill>>,
    in_spill: AtomicBool,
    /// Where the bytes go when the last reference drops while charged to
    /// `used`, for the next landing to reuse ([`Spare`]); `None`: freed.
    spare: Option<Arc<Spare>>,
    /// Accesses to the bytes past the seal (zero-sized outside loom).
    value: Region,
}

// SAFETY: the only interior mutability is through `SegBuf`'s `&mut`
// access, which the module docs' rules keep from overlapping any bytes
// another thread reads through `&SegBuf` or a `Pinned`.
unsafe impl Sync for LargeObject {}

impl LargeObject {
    /// `n` zeroed bytes, already reserved in `used` by the caller.
    fn new(n: usize, used: Arc<AtomicUsize>) -> LargeObject {
        // Zeroed by the allocator: a buffer this big is fresh pages from
        // mmap, so there is no memset pass. No huge-page advice either:
        // BENCHMARKS.md ("Large values", huge pages withdrawn) has why.
        let zeroed: Box<[u8]> = vec![0u8; n].into_boxed_slice();
        // SAFETY: `UnsafeCell<u8>` is `repr(transparent)` over `u8`, so the
        // allocation has the same layout either way; ownership moves whole.
        let bytes = unsafe { Box::from_raw(Box::into_raw(zeroed) as *mut [UnsafeCell<u8>]) };
        LargeObject::with_bytes(bytes, used, None)
    }

    fn with_bytes(bytes: Box<[UnsafeCell<u8>]>, used: Arc<AtomicUsize>, spare: Option<Arc<Spare>>) -> LargeObject {
        LargeObject { bytes, seal: AtomicUsize::new(usize::MAX), used, spill: OnceLock::new(), in_spill: AtomicBool::new(false), spare, value: Region::new() }
    }

    /// Moves the charge from the pool's `used` to `spill` (which has
    /// already taken it).
    fn charge_to_spill(&self, spill: &Arc<dyn PinSpill>) {
        // Set before any reference drops, so whichever thread drops the
        // last one (Arc's release/acquire) sees both.
        let _ = self.spill.set(spill.clone());
        #[cfg(larder_loom)]
        if sync::flaw::on(sync::flaw::Flaw::SpillUnmarked) {
            self.used.fetch_sub(self.len(), Relaxed);
            return;
        }
        self.in_spill.store(true, Relaxed);
        self.used.fetch_sub(self.len(), Relaxed);
    }

    fn ptr(&self) -> *mut u8 {
        UnsafeCell::raw_get(self.bytes.as_ptr())
    }

    fn len(&self) -> usize {
        self.bytes.len()
    }
}

impl Drop for LargeObject {
    fn drop(&mut self) {
        // The bytes are freed or handed to the next landing.
        self.value.write();
        match self.spill.get() {
            Some(spill) if self.in_spill.load(Relaxed) => spill.give_back(self.bytes.len()),
            _ => match &self.spare {
                // Still counted in `used`, now as the spare's.
                Some(spare) => spare.keep(std::mem::take(&mut self.bytes)),
                None => {
                    self.used.fetch_sub(self.bytes.len(), Relaxed);
                }
            },
        }
    }
}

/// The buffer of the last large object that came in through a [`Landing`]
/// and was freed, kept for the next landing of about its size.
///
/// Why: a fresh buffer of 128 MiB costs the kernel 128 MiB of page zeroing
/// (and the host's first-touch faults on a VM) before the first byte is
/// received, most of what a large `set` took beyond memcached's (which
/// reuses its slab pages). A client that sets big values over and over,
/// usually of one size, gets its previous buffer back instead.
///
/// The kept buffer stays counted in `-m` (`used`), like the pool's spare
/// segment buffers, and gives way first whenever the pool needs room
/// ([`release`](Self::release)), so it never makes the store evict live items or
/// refuse a write. Only one is kept: it is for the repeated big write, not
/// a cache of buffers, and a landing that cannot use it releases it.
pub(crate) struct Spare {
    buf: Mutex<Option<Box<[UnsafeCell<u8>]>>>,
    used: Arc<AtomicUsize>,
}

impl Spare {
    pub(crate) fn new(used: Arc<AtomicUsize>) -> Spare {
        Spare { buf: Mutex::new(None), used }
    }

    /// Keeps `bytes` (counted in `used`), releasing the one kept before.
    fn keep(&self, bytes: Box<[UnsafeCell<u8>]>) {
        let old = self.buf.lock().unwrap().replace(bytes);
        if let Some(old) = old {
            self.used.fetch_sub(old.len(), Relaxed);
        }
    }

    /// The kept buffer if `n` bytes fit in it without wasting more than
    /// [`slack`]; still counted in `used`.
    fn take_fitting(&self, n: usize) -> Option<Box<[UnsafeCell<u8>]>> {
        let mut buf = self.buf.lock().unwrap();
        let fits = buf.as_ref().is_some_and(|b| b.len() >= n && b.len() - n <= slack(n));
        if fits { buf.take() } else { None }
    }

    /// Releases the kept buffer; whether there was one.
    pub(crate) fn release(&self) -> bool {
        let old = self.buf.lock().unwrap().take();
        match old {
            Some(old) => {
                self.used.fetch_sub(old.len(), Relaxed);
                true
            }
            None => false,
        }
    }

    /// Bytes kept (0 or one buffer's).
    pub(crate) fn bytes(&self) -> usize {
        self.buf.lock().unwrap().as_ref().map_or(0, |b| b.len())
    }
}

/// How many bytes more than it needs a landing may take from the
/// [`Spare`]: they sit as padding in front of the item, charged to `-m`,
/// so keep them small next to the value (1/64 of it, or 64 KiB).
fn slack(n: usize) -> usize {
    (n / 64).max(64 << 10)
}

/// The store lets go of a large object: if readers still pin it and
/// `spill` has room, its charge moves there and `-m` gets the bytes back
/// now; otherwise they stay in `-m` until the last pin drops.
pub(crate) fn let_go(obj: sync::Arc<LargeObject>, spill: Option<&Arc<dyn PinSpill>>) {
    if sync::Arc::strong_count(&obj) > 1 {
        if let Some(spill) = spill {
            if spill.try_take(obj.len()) {
                obj.charge_to_spill(spill);
            }
        }
    }
    drop(obj);
}

/// A segment's buffer: plain, or a shareable large object.
pub enum SegBuf {
    Plain(Box<[u8]>),
    Large(sync::Arc<LargeObject>),
}

impl Default for SegBuf {
    fn default() -> SegBuf {
        SegBuf::Plain(Box::default())
    }
}

impl From<Box<[u8]>> for SegBuf {
    fn from(b: Box<[u8]>) -> SegBuf {
        SegBuf::Plain(b)
    }
}

impl SegBuf {
    /// A large object of `n` zeroed bytes that `used` already counts.
    pub(crate) fn large(n: usize, used: Arc<AtomicUsize>) -> SegBuf {
        SegBuf::Large(sync::Arc::new(LargeObject::new(n, used)))
    }

    /// A reference to `start..` of a large object that keeps it alive (and
    /// counted) after the store drops it; `None` for a plain buffer.
    /// `start` must be at or past the end of every byte the store may still
    /// patch (the item's value offset); the first pin fixes that point.
    pub fn pin(&self, start: usize) -> Option<Pinned> {
        let SegBuf::Large(obj) = self else { return None };
        let seal = match obj.seal.compare_exchange(usize::MAX, start, Relaxed, Relaxed) {
            Ok(_) => start,
            Err(s) => s,
        };
        assert!(start >= seal && start <= obj.len(), "a pin reads only the sealed part");
        Some(Pinned { obj: obj.clone(), start })
    }

    /// How many pins of this buffer are alive.
    #[cfg(test)]
    pub fn pins(&self) -> usize {
        match self {
            SegBuf::Plain(_) => 0,
            SegBuf::Large(o) => sync::Arc::strong_count(o) - 1,
        }
    }
}

impl Deref for SegBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            SegBuf::Plain(b) => b,
            SegBuf::Large(o) => {
                o.value.read();
                // SAFETY: writes to these bytes need `&mut SegBuf`, which cannot
                // coexist with this `&self`; pins only read (module docs).
                unsafe { std::slice::from_raw_parts(o.ptr(), o.len()) }
            }
        }
    }
}

impl DerefMut for SegBuf {
    /// The whole buffer, except for a pinned large object: then only the
    /// part before the seal (the item's header and key), so indexing into
    /// the value panics instead of writing bytes a pin may be reading.
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            SegBuf::Plain(b) => b,
            SegBuf::Large(o) => {
                let unique = sync::Arc::strong_count(o) == 1;
                #[cfg(larder_loom)]
                let unique = unique || sync::flaw::on(sync::flaw::Flaw::SealIgnored);
                let end = if unique { o.len() } else { o.seal.load(Relaxed).min(o.len()) };
                if unique {
                    o.value.write();
                }
                // SAFETY: `&mut self` is the only handle besides pins; with no
                // pin alive (count 1, and no new one without `&self`) nothing
                // else reads any byte; otherwise pins read only `seal..`.
                unsafe { std::slice::from_raw_parts_mut(o.ptr(), end) }
            }
        }
    }
}

/// Part of a large object (an item's value) kept alive for a reader.
/// Cloning it is a reference count, not a copy.
#[derive(Clone)]
pub struct Pinned {
    obj: sync::Arc<LargeObject>,
    start: usize,
}

impl Deref for Pinned {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        let o = &self.obj;
        o.value.read();
        // SAFETY: `start >= seal` (checked in `pin`), and bytes past the seal
        // are written only while the object is unique, i.e. no `Pinned`
        // exists.
        unsafe { std::slice::from_raw_parts(o.ptr().add(self.start), o.len() - self.start) }
    }
}

/// Bytes a landing keeps in front of the value for the item's header and a
/// key of `key_len` bytes (as the client sent it; a base64 key decodes
/// shorter): the longest header (explicit CAS, client flags, 4-byte length)
/// plus the key. The store fills what its item does not use with
/// [`PAD`](crate::item::PAD) bytes, which segment walkers step over. Sized
/// to the key, not to the longest key, because those bytes are charged to
/// `-m` with the value (memcached's t/lru.t counts how many 1 MiB values
/// fit in 64 MiB).
pub fn landing_room(key_len: usize) -> usize {
    crate::item::MAX_HEADER_LEN + key_len.min(crate::item::MAX_KEY_LEN)
}

/// A large value on its way in from a client, received straight into the
/// buffer that becomes its large object, so a big `set` is neither
/// buffered in the connection nor copied into the store (memcached reads
/// a value into its item the same way).
///
/// Its bytes are charged to the connection budget (the [`PinSpill`]) while
/// they arrive, as the read buffer that would otherwise hold them was; when
/// the store adopts it ([`Store::write`](crate::Store) with
/// [`Write::landed`](crate::Write)) the charge moves to `-m`. Dropped
/// unadopted (the write was refused, the client went away), it gives its
/// bytes back to the budget.
///
/// Layout: at least [`landing_room`] bytes (more when the buffer is a
/// reused one a little bigger than needed), then the value. Filled through
/// [`unfilled`](Self::unfilled) while this is the object's only handle;
/// [`value`](Self::value) then seals it at the value, so the store may write
/// the item's header in front while the request still reads the value.
pub struct Landing {
    buf: SegBuf,
    /// Bytes before the value ([`landing_room`]).
    room: usize,
    filled: usize,
    /// The value once complete (a pin: the seal is set).
    value: Option<Pinned>,
}

impl Landing {
    /// Room for a `value_len`-byte value under a `key_len`-byte key,
    /// charged to `spill`; `None` when it has no room.
    ///
    /// The buffer is `spare`'s kept one when the value fits it (its extra
    /// bytes widen the room, and become padding in front of the item), else
    /// a fresh one; either way, when freed while counted in `-m` it becomes
    /// `spare`'s.
    pub(crate) fn new(key_len: usize, value_len: usize, used: Arc<AtomicUsize>, spill: &Arc<dyn PinSpill>, spare: &Arc<Spare>) -> Option<Landing> {
        let n = landing_room(key_len) + value_len;
        let obj = match spare.take_fitting(n) {
            Some(bytes) if spill.try_take(bytes.len()) => {
                // The charge moves from `-m` (the spare's) to the budget.
                used.fetch_sub(bytes.len(), Relaxed);
                LargeObject::with_bytes(bytes, used, Some(spare.clone()))
            }
            kept => {
                // A fresh buffer is needed, so the kept one is not for
                // this client's sizes (or the budget is short): it goes
                // rather than sit in `-m` beside the new one.
                match kept {
                    // Taken from the spare but the budget is short: freed.
                    Some(bytes) => {
                        used.fetch_sub(bytes.len(), Relaxed);
                    }
                    None => {
                        spare.release();
                    }
                }
                if !spill.try_take(n) {
                    return None;
                }
                let mut fresh = LargeObject::new(n, used);
                fresh.spare = Some(spare.clone());
                fresh
            }
        };
        let room = obj.len() - value_len;
        let _ = obj.spill.set(spill.clone());
        obj.in_spill.store(true, Relaxed);
        Some(Landing { buf: SegBuf::Large(sync::Arc::new(obj)), room, filled: 0, value: None })
    }

    /// Where the next received bytes go (empty once the value is complete).
    pub fn unfilled(&mut self) -> &mut [u8] {
        if self.value.is_some() {
            return &mut [];
        }
        let start = self.room + self.filled;
        &mut self.buf[start..]
    }

    /// `n` more bytes were written to [`unfilled`](Self::unfilled).
    pub fn advance(&mut self, n: usize) {
        self.filled += n;
        debug_assert!(self.room + self.filled <= self.buf.len());
        if self.room + self.filled == self.buf.len() {
            self.value = self.buf.pin(self.room);
        }
    }

    pub fn is_complete(&self) -> bool {
        self.value.is_some()
    }

    /// The value, once complete (empty before).
    pub fn value(&self) -> &[u8] {
        self.value.as_deref().unwrap_or(&[])
    }

    /// Bytes in front of the value, for the item's header and key.
    pub fn room(&self) -> usize {
        self.room
    }

    /// Bytes held (charged to the budget until adopted).
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    fn object(&self) -> &sync::Arc<LargeObject> {
        let SegBuf::Large(obj) = &self.buf else { unreachable!("a landing is a large object") };
        obj
    }

    /// Whether the store may adopt this landing for a write of `value`:
    /// `value` is its complete value (the same bytes, not a copy), and it
    /// was not adopted before.
    pub(crate) fn adoptable_for(&self, value: &[u8]) -> bool {
        let v = self.value();
        self.is_complete()
            && std::ptr::eq(v.as_ptr(), value.as_ptr())
            && v.len() == value.len()
            && self.object().in_spill.load(Relaxed)
    }

    /// The store takes the object: a handle for its segment table. The
    /// caller has reserved [`len`](Self::len) bytes of `-m` for it; the
    /// budget gets its charge back.
    pub(crate) fn adopt(&self) -> SegBuf {
        let obj = self.object();
        let was_in_spill = obj.in_spill.swap(false, Relaxed);
        assert!(was_in_spill, "a landing is adopted once");
        if let Some(spill) = obj.spill.get() {
            spill.give_back(obj.len());
        }
        SegBuf::Large(obj.clone())
    }
}

impl std::fmt::Debug for Landing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Landing({} of {} bytes)", self.filled, self.buf.len() - self.room)
    }
}

impl std::fmt::Debug for Pinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pinned({} bytes)", self.len())
    }
}

impl std::fmt::Debug for SegBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SegBuf::Plain(b) => write!(f, "Plain({} bytes)", b.len()),
            SegBuf::Large(o) => write!(f, "Large({} bytes, {} pins)", o.len(), sync::Arc::strong_count(o) - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(n: usize) -> Arc<AtomicUsize> {
        Arc::new(AtomicUsize::new(n))
    }

    #[test]
    fn bytes_stay_counted_until_the_last_pin_drops() {
        let u = used(100);
        let mut b = SegBuf::large(100, u.clone());
        b[..10].copy_from_slice(b"header....");
        b[10..].fill(7);
        let p = b.pin(10).expect("large buffers pin");
        assert_eq!(b.pins(), 1);
        drop(b);
        assert_eq!(u.load(Relaxed), 100, "still counted while pinned");
        assert_eq!(p.len(), 90);
        assert!(p.iter().all(|&x| x == 7));
        let q = p.clone();
        drop(p);
        assert_eq!(u.load(Relaxed), 100);
        drop(q);
        assert_eq!(u.load(Relaxed), 0, "released with the last pin");
    }

    #[test]
    fn a_pinned_object_can_be_written_only_before_its_seal() {
        let mut b = SegBuf::large(64, used(64));
        assert_eq!(b.deref_mut().len(), 64, "unique: all of it");
        let p = b.pin(16).unwrap();
        assert_eq!(b.deref_mut().len(), 16, "shared: the header part only");
        b[3] = 9; // patching the header while the value is read elsewhere
        assert_eq!(b[3], 9);
        assert_eq!(p.len(), 48);
        let write_value = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b[20] = 1));
        assert!(write_value.is_err(), "the value cannot be written while pinned");
        drop(p);
        assert_eq!(b.deref_mut().len(), 64, "unique again");
        assert!(SegBuf::Plain(vec![0; 8].into_boxed_slice()).pin(0).is_none());
    }

    #[test]
    #[should_panic(expected = "sealed part")]
    fn pins_cannot_reach_before_the_seal() {
        let b = SegBuf::large(64, used(64));
        let _p = b.pin(16).unwrap();
        let _q = b.pin(8);
    }

    struct Budget(AtomicUsize, usize);
    impl PinSpill for Budget {
        fn try_take(&self, n: usize) -> bool {
            self.0.fetch_update(Relaxed, Relaxed, |u| (u + n <= self.1).then_some(u + n)).is_ok()
        }
        fn give_back(&self, n: usize) {
            self.0.fetch_sub(n, Relaxed);
        }
    }

    #[test]
    fn a_pinned_object_let_go_moves_to_the_spill_if_it_has_room() {
        let u = used(300);
        let budget = Arc::new(Budget(AtomicUsize::new(0), 150));
        let spill: Arc<dyn PinSpill> = budget.clone();
        let large = |b: SegBuf| match b {
            SegBuf::Large(o) => o,
            SegBuf::Plain(_) => unreachable!(),
        };
        let (a, b, c) = (SegBuf::large(100, u.clone()), SegBuf::large(100, u.clone()), SegBuf::large(100, u.clone()));
        let (pa, pb) = (a.pin(0).unwrap(), b.pin(0).unwrap());
        let_go(large(a), Some(&spill));
        assert_eq!((u.load(Relaxed), budget.0.load(Relaxed)), (200, 100), "pinned: moved to the spill");
        let_go(large(b), Some(&spill));
        assert_eq!((u.load(Relaxed), budget.0.load(Relaxed)), (200, 100), "pinned, no room in the spill: stays in -m");
        let_go(large(c), Some(&spill));
        assert_eq!(u.load(Relaxed), 100, "unpinned: released at once");
        drop(pa);
        assert_eq!((u.load(Relaxed), budget.0.load(Relaxed)), (100, 0), "the spill got its bytes back");
        drop(pb);
        assert_eq!(u.load(Relaxed), 0);
    }

    #[test]
    fn pins_read_while_the_header_changes_on_another_thread() {
        let mut b = SegBuf::large(1 << 16, used(1 << 16));
        b[8..].fill(0xAB);
        let p = b.pin(8).unwrap();
        let reader = std::thread::spawn(move || (0..200).all(|_| p.iter().all(|&x| x == 0xAB)));
        for i in 0..10_000u32 {
            b[..4].copy_from_slice(&i.to_le_bytes());
        }
        assert!(reader.join().unwrap());
        assert_eq!(b.pins(), 0);
    }
}
