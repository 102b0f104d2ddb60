//! Warm restart: the store written to a snapshot stream at a graceful stop
//! and read back at the next start ([`Store::save_snapshot`],
//! [`Store::load_snapshot`]). The server's `-e <file>` decides where the
//! stream goes (larder-server `restart/mod.rs`: temp file, fsync, atomic
//! rename, what to do with a refused file); this module only encodes and
//! decodes, over any `io::Write`/`io::Read`, so the store still opens no
//! file.
//!
//! # Why a snapshot and not a file-backed memory image
//!
//! memcached's `-e` maps its slab memory onto the file and fixes pointers up
//! after a restart. larder's segments are ordinary heap buffers and its index
//! is keyed with a per-process random hash key, so an image would need the
//! index rebuilt anyway, and it would tie the on-disk format to the in-memory
//! layout (a newer larder could not read an older image). A snapshot walks
//! every live item once at stop, writes only what a restart needs, and is
//! loaded by re-storing each item with its CAS: the format is independent of
//! the segment layout, versioned, and checked block by block.
//!
//! # Format (version 2; all integers little-endian)
//!
//! ```text
//! file header, 72 bytes
//!   0   8  magic "LARDSNAP"
//!   8   4  format version (2; 1 is read too)
//!   12  4  header length (72 in version 1)
//!   16  20 version of the larder that wrote it, ASCII, NUL-padded
//!   36  8  saved at, Unix seconds
//!   44  8  memory limit (-m) of the writer, bytes
//!   52  4  item size max (-I) of the writer, bytes
//!   56  4  items indexed when the save began (saturating; an upper bound
//!          of the records, which lets a reader size its index up front)
//!   60  8  index slots of the writer (the reader's index starts at least
//!          this big if memory allows, as memcached restores its hash
//!          table's size)
//!   68  4  CRC-32C of bytes 0..68
//! blocks, numbered 0, 1, 2, ... in file order
//!   0   4  kind: 1 = items, 2 = end
//!   4   4  sequence number
//!   8   4  payload length
//!   12  4  records in the payload (0 for the end block)
//!   16  n  payload
//!   16+n 4 CRC-32C of the 16 header bytes and the payload
//! items payload: records back to back
//!   0   1  key length (1..=250)
//!   1   1  bits: 0 key sent base64 (meta b), 1 fetched, 2 stale,
//!          3 win token sent; 7..4 (version 2) the item's access count
//!          for eviction: its counter at the save, plus one if it was in
//!          a main-queue segment (saturating at 15); version 1 has 0 there
//!   2   4  client flags
//!   6   8  expiry, Unix seconds (0 = never)
//!   14  8  CAS
//!   22  4  value length
//!   26     key, then value
//! end payload, 32 bytes (the completeness marker, written last)
//!   0   8  records in the file
//!   8   8  item blocks in the file
//!   16  8  highest CAS in the file
//!   24  8  payload bytes of all item blocks
//! end of file right after the end block
//! ```
//!
//! Item blocks hold about 1 MiB of records; a record over 256 KiB gets a
//! block of its own, written straight from the segment (no copy of a large
//! value). Expiry is stored as wall-clock time, so the remaining TTL keeps
//! running while the server is down: an item that expired meanwhile is not
//! restored.
//!
//! # Compatibility
//!
//! A reader accepts every format version up to its own
//! ([`FORMAT_VERSION`]); a file from a newer format is refused with
//! [`SnapshotError::Future`], naming the larder that wrote it. A change
//! that an older reader would misread must bump the version.
//!
//! Version 2 added the access count (record bits 7..4): without it every
//! restored item started as if just written, the segment S3-FIFO queues
//! evicted the hot set with the one-hit items, and a trace replayed across
//! a restart missed up to 2% more than without one. A version 1 file loads
//! as before (counts 0).
//!
//! # Never serving torn data
//!
//! Every block is verified (its CRC, its sequence number, its record count,
//! each record's bounds) before any of its records is stored, and the end
//! block must match the totals and be followed by nothing. If anything fails
//! the load is refused with [`SnapshotError::Damaged`] (or `Foreign`,
//! `Future`) and the store is flushed, so none of the records already
//! stored from the file can be served. Load into an empty store.
//!
//! # Loading
//!
//! Records are re-stored as `set`s that keep their CAS (as meta `E` does;
//! such items store their CAS, 8 more bytes each) and their meta state
//! bits. Records over the reader's `-I` are skipped; if the reader's `-m`
//! is smaller than the data, the store evicts as usual while loading (the
//! records written last survive, per shard, roughly the most recent). When
//! done, the generation counter is moved past the highest CAS loaded and
//! every open segment is closed, so CAS values handed out after the restart
//! are above every restored one.

use crate::crc32c::Crc32c;
use crate::shard::Found;
use crate::{item, Mode, Store, StoreResult, Time, Write, WriteOptions};
use std::fmt;
use std::io::{self, Read};

/// The snapshot file's first 8 bytes.
pub const MAGIC: &[u8; 8] = b"LARDSNAP";
/// The format this larder writes, and the newest it reads.
pub const FORMAT_VERSION: u32 = 2;

const HEADER_LEN: usize = 72;
/// Where the header's CRC is (version 1).
const HEADER_CRC: usize = HEADER_LEN - 4;
const BLOCK_HEADER: usize = 16;
const RECORD_HEADER: usize = 26;
/// Records gathered per item block.
const BLOCK_TARGET: usize = 1 << 20;
/// A record this big gets a block of its own.
const BIG_RECORD: usize = BLOCK_TARGET / 4;
/// The largest block a reader accepts: one record of a 1 GiB value (the
/// most `-I` allows) plus key and header.
const MAX_BLOCK: usize = (1 << 30) + (1 << 12);
const KIND_ITEMS: u32 = 1;
const KIND_END: u32 = 2;
const END_PAYLOAD: usize = 32;

const BIT_KEY_BINARY: u8 = 1;
const BIT_FETCHED: u8 = 2;
const BIT_STALE: u8 = 4;
const BIT_TOKEN_SENT: u8 = 8;
/// The record bits each format version defines.
const KNOWN_BITS_V1: u8 = 15;
const KNOWN_BITS_V2: u8 = 255;
/// Where version 2 keeps the access count.
const FREQ_SHIFT: u32 = 4;

/// The two clocks a snapshot converts between: the store's (`now`, in
/// [`Time`]) and the wall clock (`unix_now`, Unix seconds), read at the
/// same moment.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotClock {
    pub now: Time,
    pub unix_now: i64,
}

/// What [`Store::save_snapshot`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaveReport {
    pub items: u64,
    /// Bytes written (the file's size).
    pub bytes: u64,
    pub blocks: u64,
}

/// What [`Store::load_snapshot`] found and stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Items stored.
    pub items: u64,
    /// Records whose expiry passed while the server was down.
    pub expired: u64,
    /// Records larger than this store's item size max.
    pub too_large: u64,
    /// Records the store had no memory for (`-M` with a smaller `-m`).
    pub no_memory: u64,
    /// Records in the file.
    pub records: u64,
    /// Format version of the file.
    pub format_version: u32,
    /// The larder version that wrote it.
    pub writer_version: String,
    /// When it was written (Unix seconds).
    pub saved_at: i64,
    /// The writer's memory limit.
    pub saved_memory_limit: u64,
}

/// Why a snapshot was refused. After any of these the store holds nothing
/// from the file.
#[derive(Debug)]
pub enum SnapshotError {
    /// Reading failed (not a format problem).
    Io(io::Error),
    /// Not a larder snapshot (no magic): some other file.
    Foreign,
    /// A format newer than this larder reads.
    Future { version: u32, writer: String },
    /// A larder snapshot, but truncated or corrupted.
    Damaged(String),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::Io(e) => write!(f, "read error: {e}"),
            SnapshotError::Foreign => write!(f, "not a larder snapshot (unknown magic)"),
            SnapshotError::Future { version, writer } => write!(
                f,
                "snapshot format {version} (written by larder {writer}) is newer than this larder reads (format {FORMAT_VERSION})"
            ),
            SnapshotError::Damaged(why) => write!(f, "damaged snapshot: {why}"),
        }
    }
}

impl std::error::Error for SnapshotError {}

fn damaged<T>(why: impl Into<String>) -> Result<T, SnapshotError> {
    Err(SnapshotError::Damaged(why.into()))
}

/// Writes blocks, checksums and counts.
struct BlockWriter<W: io::Write> {
    w: W,
    buf: Vec<u8>,
    count: u32,
    seq: u32,
    items: u64,
    bytes: u64,
    payload_bytes: u64,
    max_cas: u64,
}

impl<W: io::Write> BlockWriter<W> {
    fn block(&mut self, kind: u32, count: u32, parts: &[&[u8]]) -> io::Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let len32 = u32::try_from(len).map_err(|_| io::Error::other("snapshot block over 4 GiB"))?;
        let mut h = [0u8; BLOCK_HEADER];
        h[0..4].copy_from_slice(&kind.to_le_bytes());
        h[4..8].copy_from_slice(&self.seq.to_le_bytes());
        h[8..12].copy_from_slice(&len32.to_le_bytes());
        h[12..16].copy_from_slice(&count.to_le_bytes());
        let mut crc = Crc32c::new();
        crc.update(&h);
        self.w.write_all(&h)?;
        for p in parts {
            crc.update(p);
            self.w.write_all(p)?;
        }
        self.w.write_all(&crc.finish().to_le_bytes())?;
        self.seq += 1;
        self.bytes += (BLOCK_HEADER + len + 4) as u64;
        if kind == KIND_ITEMS {
            self.payload_bytes += len as u64;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> io::Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let r = self.block(KIND_ITEMS, self.count, &[&buf]);
        self.buf = buf;
        self.buf.clear();
        self.count = 0;
        r
    }

    fn record(&mut self, key: &[u8], bits: u8, flags: u32, exp_unix: i64, cas: u64, value: &[u8]) -> io::Result<()> {
        let mut h = [0u8; RECORD_HEADER];
        h[0] = key.len() as u8;
        h[1] = bits;
        h[2..6].copy_from_slice(&flags.to_le_bytes());
        h[6..14].copy_from_slice(&exp_unix.to_le_bytes());
        h[14..22].copy_from_slice(&cas.to_le_bytes());
        h[22..26].copy_from_slice(&(value.len() as u32).to_le_bytes());
        self.items += 1;
        self.max_cas = self.max_cas.max(cas);
        let size = RECORD_HEADER + key.len() + value.len();
        if size >= BIG_RECORD {
            self.flush_block()?;
            return self.block(KIND_ITEMS, 1, &[&h, key, value]);
        }
        if self.buf.len() + size > BLOCK_TARGET {
            self.flush_block()?;
        }
        self.buf.extend_from_slice(&h);
        self.buf.extend_from_slice(key);
        self.buf.extend_from_slice(value);
        self.count += 1;
        Ok(())
    }
}

/// The 64-byte file header.
fn header(larder_version: &str, saved_at: i64, memory_limit: u64, item_size_max: u32, items_hint: u32, index_slots: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    let v = larder_version.as_bytes();
    let n = v.len().min(20);
    h[16..16 + n].copy_from_slice(&v[..n]);
    h[36..44].copy_from_slice(&saved_at.to_le_bytes());
    h[44..52].copy_from_slice(&memory_limit.to_le_bytes());
    h[52..56].copy_from_slice(&item_size_max.to_le_bytes());
    h[56..60].copy_from_slice(&items_hint.to_le_bytes());
    h[60..68].copy_from_slice(&index_slots.to_le_bytes());
    let crc = crate::crc32c::crc32c(&h[..HEADER_CRC]);
    h[HEADER_CRC..].copy_from_slice(&crc.to_le_bytes());
    h
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// `read_exact`, with running out of bytes reported as truncation.
fn read_all(r: &mut impl Read, buf: &mut [u8], what: &str) -> Result<(), SnapshotError> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => SnapshotError::Damaged(format!("truncated ({what})")),
        _ => SnapshotError::Io(e),
    })
}

impl Store {
    /// The body of [`Store::save_snapshot`].
    pub(crate) fn save<W: io::Write>(&self, w: W, clock: SnapshotClock, larder_version: &str) -> io::Result<SaveReport> {
        let mut bw = BlockWriter { w, buf: Vec::with_capacity(BLOCK_TARGET), count: 0, seq: 0, items: 0, bytes: 0, payload_bytes: 0, max_cas: 0 };
        let (mut indexed, mut slots) = (0usize, 0usize);
        for s in self.shards.iter() {
            let g = s.0.lock().unwrap_or_else(|e| e.into_inner());
            indexed += g.index.used();
            slots += g.index.slots();
        }
        let hint = u32::try_from(indexed).unwrap_or(u32::MAX);
        let h = header(larder_version, clock.unix_now, self.pool.limit() as u64, self.item_size_max as u32, hint, slots as u64);
        bw.w.write_all(&h)?;
        bw.bytes += HEADER_LEN as u64;
        let now = clock.now;
        let flush = self.flush.load(std::sync::atomic::Ordering::Acquire);
        for s in self.shards.iter() {
            let mut g = s.0.lock().unwrap_or_else(|e| e.into_inner());
            g.apply_flush(flush, now, &self.pool);
            let g = &*g;
            let mut segs: Vec<(u64, u32)> = g.segs.oldest_first().map(|id| (g.segs.get(id).gen, id)).collect();
            segs.sort_unstable();
            for &(_, id) in &segs {
                if g.is_flushed(id) {
                    continue;
                }
                let seg = g.segs.get(id);
                let (end, mut live) = (seg.write_off, seg.live_items);
                let mut off = 0;
                while off < end && live > 0 {
                    if seg.buf[off] == item::PAD {
                        off += 1;
                        continue;
                    }
                    let loc = crate::index::Loc { seg: id, off: off as u32 };
                    let h = g.header(loc);
                    let bytes = &seg.buf[off..off + h.total()];
                    let key = &bytes[h.key_off..h.key_off + h.klen];
                    if let Some(pos) = g.index.find_loc(self.hasher.hash(key), loc) {
                        live -= 1;
                        if !h.expired(now) {
                            let exp_unix = if h.exptime == 0 { 0 } else { h.exptime as i64 - now as i64 + clock.unix_now };
                            // A main-queue item has already survived once:
                            // after the restart it starts in the small queue,
                            // and one more count lets it through it again.
                            let freq = (g.index.freq(pos) + seg.main as u8).min(15);
                            let bits = (h.key_binary as u8 * BIT_KEY_BINARY)
                                | (h.fetched as u8 * BIT_FETCHED)
                                | (h.stale as u8 * BIT_STALE)
                                | (h.token_sent as u8 * BIT_TOKEN_SENT)
                                | (freq << FREQ_SHIFT);
                            bw.record(key, bits, h.flags, exp_unix, g.cas(loc), &bytes[h.val_off()..])?;
                        }
                    }
                    off += h.total();
                }
            }
        }
        bw.flush_block()?;
        let mut end = [0u8; END_PAYLOAD];
        end[0..8].copy_from_slice(&bw.items.to_le_bytes());
        end[8..16].copy_from_slice(&(bw.seq as u64).to_le_bytes());
        end[16..24].copy_from_slice(&bw.max_cas.to_le_bytes());
        end[24..32].copy_from_slice(&bw.payload_bytes.to_le_bytes());
        let blocks = bw.seq as u64;
        bw.block(KIND_END, 0, &[&end])?;
        bw.w.flush()?;
        Ok(SaveReport { items: bw.items, bytes: bw.bytes, blocks })
    }

    /// The body of [`Store::load_snapshot`].
    pub(crate) fn load<R: Read + Send>(&self, r: R, clock: SnapshotClock) -> Result<LoadReport, SnapshotError> {
        let mut max_cas = 0;
        let result = self.load_inner(r, clock, &mut max_cas);
        if result.is_err() {
            self.flush_all(clock.now, clock.now);
        }
        // CAS values handed out from now on exceed every one loaded: later
        // generations, and no open segment of an earlier one.
        self.pool.advance_gen_past(max_cas >> 24);
        for s in self.shards.iter() {
            s.0.lock().unwrap_or_else(|e| e.into_inner()).close_open(&self.pool);
        }
        result
    }

    fn load_inner<R: Read + Send>(&self, mut r: R, clock: SnapshotClock, max_cas: &mut u64) -> Result<LoadReport, SnapshotError> {
        let mut first = [0u8; 16];
        let got = read_up_to(&mut r, &mut first).map_err(SnapshotError::Io)?;
        if got < 12 || &first[0..8] != MAGIC {
            return Err(SnapshotError::Foreign);
        }
        if got < 16 {
            return damaged("truncated (file header)");
        }
        let version = u32_at(&first, 8);
        let hlen = u32_at(&first, 12) as usize;
        if version == 0 {
            return Err(SnapshotError::Foreign);
        }
        if !(HEADER_LEN..=4096).contains(&hlen) {
            return damaged(format!("header length {hlen}"));
        }
        let mut h = vec![0u8; hlen];
        h[..16].copy_from_slice(&first);
        read_all(&mut r, &mut h[16..], "file header")?;
        let writer = String::from_utf8_lossy(&h[16..36]).trim_end_matches('\0').to_string();
        if version > FORMAT_VERSION {
            return Err(SnapshotError::Future { version, writer });
        }
        // Versions 1 and 2 differ only in the record bits they define
        // (`read_blocks`).
        if hlen != HEADER_LEN || crate::crc32c::crc32c(&h[..HEADER_CRC]) != u32_at(&h, HEADER_CRC) {
            return damaged("file header checksum mismatch");
        }
        let mut rep = LoadReport {
            format_version: version,
            writer_version: writer,
            saved_at: u64_at(&h, 36) as i64,
            saved_memory_limit: u64_at(&h, 44),
            ..LoadReport::default()
        };
        // Index room for what is coming (spread evenly over the shards by
        // the hash), so loading never re-hashes a growing index.
        // and the index the writer had (memory permitting).
        // The hints are the file's word (a checksum is no signature): no
        // more than this store's memory could index, at 8 bytes a slot, so
        // sizing an index from them cannot overflow.
        let n = self.shards.len();
        let most = self.pool.limit() / 8;
        let hint = (u32_at(&h, 56) as usize).min(most);
        let items = hint.div_ceil(n) + hint.div_ceil(n) / 16;
        let slots = usize::try_from(u64_at(&h, 60)).unwrap_or(usize::MAX).min(most) / n;
        for s in self.shards.iter() {
            s.0.lock().unwrap_or_else(|e| e.into_inner()).presize_index(&self.env(clock.now), items, slots, &mut crate::Unreported);
        }
        // Two threads: this one stores, a reader reads and verifies the
        // next blocks meanwhile (reading and checksumming are about a
        // third of the work). Blocks reach the store only verified; their
        // buffers come back for reuse.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(2);
        let (free_tx, free_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        std::thread::scope(|sc| {
            sc.spawn(move || {
                let known_bits = if version >= 2 { KNOWN_BITS_V2 } else { KNOWN_BITS_V1 };
                if let Err(e) = read_blocks(r, known_bits, &tx, &free_rx) {
                    let _ = tx.send(Msg::Failed(e));
                }
            });
            loop {
                match rx.recv() {
                    Ok(Msg::Block(buf, records)) => {
                        for rec in &records {
                            rep.records += 1;
                            *max_cas = (*max_cas).max(rec.cas);
                            self.restore(rec, &buf, clock, &mut rep);
                        }
                        let _ = free_tx.send(buf);
                    }
                    Ok(Msg::End) => return Ok(rep),
                    Ok(Msg::Failed(e)) => return Err(e),
                    Err(_) => return damaged("the snapshot reader stopped"),
                }
            }
        })
    }

    /// Stores one verified record.
    fn restore(&self, rec: &Record, buf: &[u8], clock: SnapshotClock, rep: &mut LoadReport) {
        if rec.exp_unix != 0 && rec.exp_unix <= clock.unix_now {
            rep.expired += 1;
            return;
        }
        let exptime = if rec.exp_unix == 0 {
            0
        } else {
            (rec.exp_unix - clock.unix_now + clock.now as i64).clamp(1, u32::MAX as i64) as Time
        };
        let key = &buf[rec.key.clone()];
        let value = &buf[rec.value.clone()];
        let w = Write { mode: Mode::Set, key, flags: rec.flags, exptime, value, landed: None };
        let opts = WriteOptions { new_cas: Some(rec.cas), key_binary: rec.bits & BIT_KEY_BINARY != 0, ..WriteOptions::default() };
        match self.write_to(&w, clock.now, &opts, &mut crate::Unreported).0 {
            StoreResult::Stored(_) => rep.items += 1,
            StoreResult::TooLarge => {
                rep.too_large += 1;
                return;
            }
            _ => {
                rep.no_memory += 1;
                return;
            }
        }
        let (fetched, stale, token) = (rec.bits & BIT_FETCHED != 0, rec.bits & BIT_STALE != 0, rec.bits & BIT_TOKEN_SENT != 0);
        let freq = rec.bits >> FREQ_SHIFT;
        if fetched || stale || token || freq > 0 {
            let h = self.hasher.hash(key);
            let mut l = self.lock(h, clock.now);
            if let Found::Live(pos, loc) = l.g.lookup(h, key, clock.now, &self.pool, &mut crate::Unreported) {
                let b = l.g.item_bytes_mut(loc);
                if fetched {
                    item::set_fetched(b);
                }
                item::set_meta_state(b, stale, token);
                if freq > 0 {
                    l.g.index.relocate(pos, loc, freq);
                }
            }
        }
    }
}

/// From the reader thread of a load to the storing one.
enum Msg {
    /// A verified items block and its records.
    Block(Vec<u8>, Vec<Record>),
    /// The end block matched everything read, and nothing follows it.
    End,
    Failed(SnapshotError),
}

/// Reads, verifies and parses every block after the file header, sending
/// each items block on as it is verified; buffers sent back on `free` are
/// reused.
fn read_blocks<R: Read>(mut r: R, known_bits: u8, tx: &std::sync::mpsc::SyncSender<Msg>, free: &std::sync::mpsc::Receiver<Vec<u8>>) -> Result<(), SnapshotError> {
    let mut seq: u32 = 0;
    let mut payload_bytes: u64 = 0;
    let mut records_seen: u64 = 0;
    let mut max_cas: u64 = 0;
    loop {
        let mut bh = [0u8; BLOCK_HEADER];
        read_all(&mut r, &mut bh, "missing end block")?;
        let (kind, bseq, len, count) = (u32_at(&bh, 0), u32_at(&bh, 4), u32_at(&bh, 8) as usize, u32_at(&bh, 12));
        if bseq != seq {
            return damaged(format!("block {seq} has sequence number {bseq}"));
        }
        if len > MAX_BLOCK {
            return damaged(format!("block {seq} claims {len} bytes"));
        }
        let mut buf = free.try_recv().unwrap_or_default();
        if buf.capacity() > 4 * BLOCK_TARGET {
            buf = Vec::new(); // after a large value
        }
        buf.clear();
        // Grows with the bytes actually read: a damaged length cannot
        // make it allocate what the file does not hold.
        (&mut r).take(len as u64).read_to_end(&mut buf).map_err(SnapshotError::Io)?;
        if buf.len() < len {
            return damaged(format!("truncated (block {seq})"));
        }
        let mut crc_bytes = [0u8; 4];
        read_all(&mut r, &mut crc_bytes, "block checksum")?;
        let mut crc = Crc32c::new();
        crc.update(&bh);
        crc.update(&buf);
        if crc.finish() != u32::from_le_bytes(crc_bytes) {
            return damaged(format!("block {seq} checksum mismatch"));
        }
        match kind {
            KIND_ITEMS => {
                let records = parse_records(&buf, count, known_bits).map_err(|e| SnapshotError::Damaged(format!("block {seq}: {e}")))?;
                payload_bytes += len as u64;
                records_seen += records.len() as u64;
                max_cas = records.iter().map(|r| r.cas).fold(max_cas, u64::max);
                if tx.send(Msg::Block(buf, records)).is_err() {
                    return Ok(()); // the storing side is gone
                }
            }
            KIND_END => {
                if len != END_PAYLOAD || count != 0 {
                    return damaged("malformed end block");
                }
                let (items, blocks, top_cas, bytes) = (u64_at(&buf, 0), u64_at(&buf, 8), u64_at(&buf, 16), u64_at(&buf, 24));
                if items != records_seen || blocks != seq as u64 || bytes != payload_bytes || top_cas != max_cas {
                    return damaged(format!(
                        "end block says {items} records in {blocks} blocks ({bytes} bytes), read {records_seen} in {seq} ({payload_bytes} bytes)"
                    ));
                }
                let mut extra = [0u8; 1];
                if read_up_to(&mut r, &mut extra).map_err(SnapshotError::Io)? != 0 {
                    return damaged("bytes after the end block");
                }
                let _ = tx.send(Msg::End);
                return Ok(());
            }
            other => return damaged(format!("block {seq} has unknown kind {other}")),
        }
        seq = seq.checked_add(1).ok_or_else(|| SnapshotError::Damaged("too many blocks".into()))?;
    }
}

/// One record of an items block: ranges into the block's payload.
struct Record {
    bits: u8,
    flags: u32,
    exp_unix: i64,
    cas: u64,
    key: std::ops::Range<usize>,
    value: std::ops::Range<usize>,
}

/// Checks a whole items payload: `count` records that fill it exactly.
fn parse_records(p: &[u8], count: u32, known_bits: u8) -> Result<Vec<Record>, String> {
    let mut out = Vec::with_capacity(count.min(1 << 16) as usize);
    let mut at = 0;
    while at < p.len() {
        if p.len() - at < RECORD_HEADER {
            return Err(format!("record at {at} cut short"));
        }
        let h = &p[at..at + RECORD_HEADER];
        let klen = h[0] as usize;
        let bits = h[1];
        let vlen = u32_at(h, 22) as usize;
        if klen == 0 || klen > item::MAX_KEY_LEN {
            return Err(format!("record at {at}: key length {klen}"));
        }
        if bits & !known_bits != 0 {
            return Err(format!("record at {at}: unknown bits {bits:#x}"));
        }
        let key = at + RECORD_HEADER..at + RECORD_HEADER + klen;
        let end = key.end.checked_add(vlen).filter(|&e| e <= p.len()).ok_or_else(|| format!("record at {at} overruns its block"))?;
        out.push(Record {
            bits,
            flags: u32_at(h, 2),
            exp_unix: u64_at(h, 6) as i64,
            cas: u64_at(h, 14),
            key: key.clone(),
            value: key.end..end,
        });
        at = end;
    }
    if out.len() != count as usize {
        return Err(format!("{} records, header says {count}", out.len()));
    }
    Ok(out)
}

/// Reads until `buf` is full or the stream ends; how many bytes came.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    /// fuzz/regressions/snapshot_load: a snapshot whose header (checksum
    /// recomputed) claims 2^62 index slots. On a store of a few shards
    /// sizing the index from that overflowed (a panic with overflow
    /// checks, a capacity-overflow panic without): the load must go on,
    /// the hint capped by the store's memory.
    #[test]
    fn index_hints_beyond_memory_are_capped() {
        let clock = SnapshotClock { now: 10, unix_now: 1_700_000_000 };
        let small = || Store::new(Config { memory_limit: 2 << 20, item_size_max: 1 << 20, ..Config::default() }).unwrap();
        let src = small();
        src.store(Mode::Set, b"k", 0, 0, b"v", clock.now);
        let mut file = Vec::new();
        src.save_snapshot(&mut file, clock, "t").unwrap();
        for (items, slots) in [(u32::MAX, 1u64 << 62), (0, u64::MAX), (u32::MAX, (1 << 63) + 12345)] {
            file[56..60].copy_from_slice(&items.to_le_bytes());
            file[60..68].copy_from_slice(&slots.to_le_bytes());
            let crc = crate::crc32c::crc32c(&file[..HEADER_CRC]);
            file[HEADER_CRC..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
            let dst = small();
            let rep = dst.load_snapshot(file.as_slice(), clock).unwrap();
            assert_eq!(rep.items, 1);
            assert!(matches!(dst.get(b"k", clock.now, |it| it.value.to_vec()), crate::Lookup::Hit(v) if v == b"v"));
        }
    }
}
