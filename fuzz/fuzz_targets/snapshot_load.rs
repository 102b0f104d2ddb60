//! Fuzz the warm-restart loader (`Store::load_snapshot`, larder-store's
//! `snapshot.rs`): a damaged file is refused and leaves nothing behind, a
//! valid one loads exactly what it holds, and nothing panics.
//!
//! Checksums make random damage easy to refuse: a flipped byte fails its
//! block's CRC-32C long before the loader looks at what it means. So
//! besides raw inputs, the target makes a valid snapshot with the store's
//! own writer (items described by the input), damages it with the input's
//! edits, and, when the input asks, recomputes every checksum (and the end
//! block's totals) afterwards: then the damage reaches the structure checks
//! behind the checksums (lengths, counts, sequence numbers, record bounds,
//! bits, header fields such as the index size hints), and a file can be
//! valid but different from the one written.
//!
//! The oracle is an independent reader of the format as the module docs
//! of `snapshot.rs` describe it ([`decode`] below): where it refuses the
//! file, the load must be refused with the same kind of error and serve
//! none of the keys it saw; where it accepts, the load must succeed, and
//! every record (last one wins per key; expired ones skipped) must read
//! back with its value, flags, CAS and remaining time, and nothing else
//! may be stored. With the mode byte's bit 3 the file is loaded into a
//! small store (one shard, 2 MiB, `-I` 4 KiB) that cannot hold all of it:
//! then every key reads back as one of its records or not at all.
#![no_main]

use larder_store::{Config, Lookup, Mode, SnapshotClock, SnapshotError, Store, StoreResult, Write, WriteOptions};
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;

const SAVE: SnapshotClock = SnapshotClock { now: 1000, unix_now: 1_700_000_000 };
/// The restart: 50 s later on the wall clock, a fresh store clock.
const LOAD: SnapshotClock = SnapshotClock { now: 2, unix_now: 1_700_000_050 };

const HEADER_LEN: usize = 72;
const HEADER_CRC: usize = 68;
const MAX_BLOCK: usize = (1 << 30) + (1 << 12);

fn store() -> Store {
    // Big enough that nothing a fuzz input holds is evicted or too large;
    // 4 KiB segments, so that values of a few KiB are already large
    // objects (their own buffers, their own snapshot path) and cheap.
    Store::new(Config { memory_limit: 8 << 20, item_size_max: 2 << 20, segment_size: 4096, ..Config::default() }).unwrap()
}

/// A store that loads only part of a file: one shard, a 4 KiB `-I`, and
/// too little memory for the larger inputs (`-m` below the writer's).
fn small_store() -> Store {
    Store::new(Config { memory_limit: 2 << 20, item_size_max: 4096, ..Config::default() }).unwrap()
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// CRC-32C (Castagnoli), the textbook table-driven way (the store has its
/// own implementation; this one checks it as much as the loader).
fn crc32c(parts: &[&[u8]]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = (c >> 1) ^ (0x82f6_3b78 & (c & 1).wrapping_neg());
            }
            *e = c;
        }
        t
    });
    let mut crc = !0u32;
    for part in parts {
        for &b in *part {
            crc = table[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
        }
    }
    !crc
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rec {
    key: Vec<u8>,
    bits: u8,
    flags: u32,
    exp_unix: i64,
    cas: u64,
    value: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refused {
    Foreign,
    Future,
    Damaged,
}

/// Records of one items payload, or `None` if they do not fill it exactly
/// as `count` well-formed records.
fn records(p: &[u8], count: u32, known_bits: u8) -> Option<Vec<Rec>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < p.len() {
        let h = p.get(at..at + 26)?;
        let (klen, bits, vlen) = (usize::from(h[0]), h[1], u32_at(h, 22) as usize);
        if klen == 0 || klen > 250 || bits & !known_bits != 0 {
            return None;
        }
        let key = p.get(at + 26..at + 26 + klen)?;
        let value = p.get(at + 26 + klen..(at + 26 + klen).checked_add(vlen)?)?;
        out.push(Rec { key: key.to_vec(), bits, flags: u32_at(h, 2), exp_unix: u64_at(h, 6) as i64, cas: u64_at(h, 14), value: value.to_vec() });
        at += 26 + klen + vlen;
    }
    (out.len() == count as usize).then_some(out)
}

/// The file as the format describes it: its records, or why it is refused
/// (with the records of the blocks verified before that point).
fn decode(f: &[u8]) -> Result<Vec<Rec>, (Refused, Vec<Rec>)> {
    let none = |why| Err((why, Vec::new()));
    if f.len() < 12 || &f[..8] != b"LARDSNAP" {
        return none(Refused::Foreign);
    }
    if f.len() < 16 {
        return none(Refused::Damaged);
    }
    let (version, hlen) = (u32_at(f, 8), u32_at(f, 12) as usize);
    if version == 0 {
        return none(Refused::Foreign);
    }
    if !(HEADER_LEN..=4096).contains(&hlen) || f.len() < hlen {
        return none(Refused::Damaged);
    }
    if version > 2 {
        return none(Refused::Future);
    }
    if hlen != HEADER_LEN || crc32c(&[&f[..HEADER_CRC]]) != u32_at(f, HEADER_CRC) {
        return none(Refused::Damaged);
    }
    let known_bits = if version >= 2 { 255 } else { 15 };
    let mut recs = Vec::new();
    let (mut at, mut seq, mut bytes) = (hlen, 0u64, 0u64);
    loop {
        let Some(bh) = f.get(at..at + 16) else { return Err((Refused::Damaged, recs)) };
        let (kind, bseq, len, count) = (u32_at(bh, 0), u32_at(bh, 4), u32_at(bh, 8) as usize, u32_at(bh, 12));
        if u64::from(bseq) != seq || len > MAX_BLOCK {
            return Err((Refused::Damaged, recs));
        }
        let Some(payload) = f.get(at + 16..at + 16 + len) else { return Err((Refused::Damaged, recs)) };
        let Some(crc) = f.get(at + 16 + len..at + 20 + len) else { return Err((Refused::Damaged, recs)) };
        if crc32c(&[bh, payload]) != u32_at(crc, 0) {
            return Err((Refused::Damaged, recs));
        }
        at += 20 + len;
        match kind {
            1 => match records(payload, count, known_bits) {
                Some(r) => {
                    recs.extend(r);
                    bytes += len as u64;
                }
                None => return Err((Refused::Damaged, recs)),
            },
            2 => {
                let max_cas = recs.iter().map(|r| r.cas).max().unwrap_or(0);
                let ok = len == 32
                    && count == 0
                    && u64_at(payload, 0) == recs.len() as u64
                    && u64_at(payload, 8) == seq
                    && u64_at(payload, 16) == max_cas
                    && u64_at(payload, 24) == bytes
                    && at == f.len();
                return if ok { Ok(recs) } else { Err((Refused::Damaged, recs)) };
            }
            _ => return Err((Refused::Damaged, recs)),
        }
        seq += 1;
        if seq > u64::from(u32::MAX) {
            return Err((Refused::Damaged, recs));
        }
    }
}

/// Recompute the header's and every block's checksum, as far as the
/// block lengths let the blocks be found; with `totals`, also the end
/// block's totals from the item blocks before it (record counts from the
/// block headers, max CAS from the records where they parse).
fn reseal(f: &mut [u8], totals: bool) {
    if f.len() < HEADER_LEN {
        return;
    }
    let crc = crc32c(&[&f[..HEADER_CRC]]);
    f[HEADER_CRC..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    let mut at = HEADER_LEN;
    let (mut seq, mut records_n, mut bytes, mut max_cas) = (0u64, 0u64, 0u64, 0u64);
    while at + 16 <= f.len() {
        let (kind, len, count) = (u32_at(f, at), u32_at(f, at + 8) as usize, u32_at(f, at + 12));
        if at + 20 + len > f.len() {
            break;
        }
        if kind == 1 {
            seq += 1;
            records_n += u64::from(count);
            bytes += len as u64;
            if let Some(r) = records(&f[at + 16..at + 16 + len], count, 255) {
                max_cas = r.iter().map(|r| r.cas).fold(max_cas, u64::max);
            }
        } else if kind == 2 && totals && len == 32 {
            let p = at + 16;
            f[p..p + 8].copy_from_slice(&records_n.to_le_bytes());
            f[p + 8..p + 16].copy_from_slice(&seq.to_le_bytes());
            f[p + 16..p + 24].copy_from_slice(&max_cas.to_le_bytes());
            f[p + 24..p + 32].copy_from_slice(&bytes.to_le_bytes());
        }
        let crc = crc32c(&[&f[at..at + 16 + len]]);
        f[at + 16 + len..at + 20 + len].copy_from_slice(&crc.to_le_bytes());
        at += 20 + len;
    }
}

/// The fuzz input, read front to back.
struct Script<'a>(&'a [u8]);

impl<'a> Script<'a> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}

/// A valid snapshot of items the script describes.
fn written(s: &mut Script<'_>) -> (Vec<u8>, Vec<Vec<u8>>) {
    let src = store();
    let now = SAVE.now;
    let mut keys = Vec::new();
    for i in 0..s.byte() % 12 {
        let klen = usize::from(s.byte() % 40) + 1;
        let mut key = s.take(klen).to_vec();
        key.push(b'0' + i); // distinct, never empty
        let size = s.byte();
        // Mostly small; a few over the 4 KiB segments of this store.
        let vlen = if size & 0xc0 == 0xc0 { usize::from(size & 0x3f) * 256 } else { usize::from(size & 0x7f) };
        let value: Vec<u8> = (0..vlen).map(|j| (j as u8).wrapping_mul(31) ^ i).collect();
        let flags = if size & 1 != 0 { s.u32() } else { 0 };
        let how = s.byte();
        let exp = match how % 4 {
            0 => 0,
            1 => now + 30, // expires while the server is down
            2 => now + 1000,
            _ => now - 1, // already expired at the save
        };
        let opts = WriteOptions { new_cas: (how & 4 != 0).then(|| u64::from(s.u32())), key_binary: how & 8 != 0, ..WriteOptions::default() };
        let w = Write { mode: Mode::Set, key: &key, flags, exptime: exp, value: &value, landed: None };
        let (r, _) = src.write(&w, now, &opts);
        assert!(matches!(r, StoreResult::Stored(_)), "{r:?}");
        if how & 16 != 0 {
            let _ = src.get(&key, now, |_| ());
        }
        keys.push(key);
    }
    let mut file = Vec::new();
    src.save_snapshot(&mut file, SAVE, "fuzz").unwrap();
    (file, keys)
}

/// Edits from the script: overwrite, flip, cut, insert, remove, and
/// 32/64-bit little-endian writes (the format's lengths and counts).
fn damage(f: &mut Vec<u8>, s: &mut Script<'_>) {
    for _ in 0..s.byte() % 8 {
        let (op, pos, arg) = (s.byte(), s.u32() as usize, s.byte());
        let at = pos % (f.len() + 1);
        match op % 7 {
            0 if at < f.len() => f[at] = arg,
            1 if at < f.len() => f[at] ^= 1 << (arg % 8),
            2 => f.truncate(at),
            3 => f.insert(at, arg),
            4 if at < f.len() => {
                f.remove(at);
            }
            5 if at + 4 <= f.len() => {
                let v = s.u32();
                f[at..at + 4].copy_from_slice(&v.to_le_bytes());
            }
            6 if at + 8 <= f.len() => {
                let v = u64::from(s.u32()) << (arg % 33) | u64::from(arg);
                f[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            _ => {}
        }
    }
}

/// The store time a record's expiry becomes after the restart.
fn exptime(r: &Rec) -> u32 {
    if r.exp_unix == 0 {
        0
    } else {
        (r.exp_unix - LOAD.unix_now + i64::from(LOAD.now)).clamp(1, i64::from(u32::MAX)) as u32
    }
}

fn read(s: &Store, key: &[u8]) -> Option<(Vec<u8>, u32, u64, u32)> {
    match s.get(key, LOAD.now, |it| (it.value.to_vec(), it.flags, it.cas, it.exptime)) {
        Lookup::Hit(x) => Some(x),
        _ => None,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut s = Script(data);
    let mode = s.byte();
    let (file, mut keys) = if mode & 3 == 0 {
        (s.0.to_vec(), Vec::new())
    } else {
        let (mut file, keys) = written(&mut s);
        damage(&mut file, &mut s);
        if mode & 2 != 0 {
            reseal(&mut file, mode & 4 != 0);
        }
        (file, keys)
    };
    let expected = decode(&file);
    let small = mode & 8 != 0;
    let dst = if small { small_store() } else { store() };
    let loaded = dst.load_snapshot(file.as_slice(), LOAD);
    match (&expected, &loaded) {
        (Err((why, seen)), Err(e)) => {
            let kind = match e {
                SnapshotError::Foreign => Refused::Foreign,
                SnapshotError::Future { .. } => Refused::Future,
                SnapshotError::Damaged(_) => Refused::Damaged,
                SnapshotError::Io(e) => panic!("read error from a slice: {e}"),
            };
            assert_eq!(kind, *why, "refused as {e}");
            keys.extend(seen.iter().map(|r| r.key.clone()));
            for k in &keys {
                assert_eq!(read(&dst, k), None, "a refused snapshot left {k:?} behind");
            }
        }
        (Ok(recs), Ok(rep)) if small => {
            // Records may be skipped (too large, no memory) or evicted, so
            // each key reads back as one of its records, or not at all.
            assert_eq!(rep.records, recs.len() as u64);
            let expired = recs.iter().filter(|r| r.exp_unix != 0 && r.exp_unix <= LOAD.unix_now).count() as u64;
            assert_eq!(rep.expired, expired);
            assert_eq!(rep.items + rep.expired + rep.too_large + rep.no_memory, rep.records);
            let mut distinct: Vec<&[u8]> = recs.iter().map(|r| &r.key[..]).collect();
            distinct.sort();
            distinct.dedup();
            for k in &distinct {
                if let Some(got) = read(&dst, k) {
                    let one_of = recs.iter().filter(|r| r.key == *k && (r.exp_unix == 0 || r.exp_unix > LOAD.unix_now)).any(|r| got == (r.value.clone(), r.flags, r.cas, exptime(r)));
                    assert!(one_of, "{k:?} read {got:?}: none of its records");
                }
            }
            for k in &keys {
                if !distinct.contains(&k.as_slice()) {
                    assert_eq!(read(&dst, k), None, "{k:?} is not in the file but was loaded");
                }
            }
            assert!(dst.stats().curr_items <= distinct.len() as u64, "items stored besides the file's");
        }
        (Ok(recs), Ok(rep)) => {
            assert_eq!(rep.records, recs.len() as u64);
            assert_eq!((rep.too_large, rep.no_memory), (0, 0));
            let mut want: HashMap<&[u8], &Rec> = HashMap::new();
            let mut expired = 0;
            for r in recs {
                if r.exp_unix != 0 && r.exp_unix <= LOAD.unix_now {
                    expired += 1;
                } else {
                    want.insert(&r.key, r);
                }
            }
            assert_eq!(rep.expired, expired);
            assert_eq!(rep.items, recs.len() as u64 - expired);
            for (k, r) in &want {
                let got = read(&dst, k);
                assert!(got == Some((r.value.clone(), r.flags, r.cas, exptime(r))), "{k:?}: read {got:?}, file says {r:?}");
            }
            for k in &keys {
                if !want.contains_key(k.as_slice()) {
                    assert_eq!(read(&dst, k), None, "{k:?} is not in the file but was loaded");
                }
            }
            assert_eq!(dst.stats().curr_items, want.len() as u64, "items stored besides the file's");
        }
        (want, got) => panic!("the format says {:?}, the loader {:?}", want.as_ref().map(|r| r.len()).map_err(|e| e.0), got.as_ref().map(|r| r.records)),
    }
});
