//! Self-describing values, for tests that must catch a torn, truncated,
//! extended or misdirected value, not only a wrong checksum.
//!
//! A value names the key it was written for (a numeric id), its version and
//! its length; the rest is a pattern seeded by (key, version) and a checksum:
//!
//! ```text
//! offset 0   "LARDERLV"                magic
//!        8   key id, u32 LE; 4 zero bytes
//!        16  version, u64 LE
//!        24  length of the whole value, u64 LE
//!        32  body: xorshift64 words seeded by splitmix64(key << 40 ^ version)
//!   len - 8  FNV-1a over 8-byte words of everything before (the last
//!            partial word zero-padded)
//! ```
//!
//! A reader takes the header it received, regenerates the value it names and
//! compares every byte, so two versions mixed, a value cut short or run long,
//! or another key's value are all caught; the checksum is a second line of
//! defence. The header is 32 bytes so that the body starts 8-aligned.
//!
//! Values can be made whole ([`make_value`], [`check_value`]) or as a
//! stream of [`CHUNK`]-sized pieces ([`ValueGen`]), so a test can send or
//! verify a 1 GiB value over a socket without holding a copy of it.

use crate::rng::{splitmix64, XorShift64};

pub const MAGIC: &[u8; 8] = b"LARDERLV";
/// Magic, key id, padding, version, length.
pub const HEAD: usize = 32;
/// The trailing checksum.
pub const TAIL: usize = 8;
/// The shortest value: a header and a checksum.
pub const MIN_LEN: usize = HEAD + TAIL;
/// [`ValueGen`] produces values this many bytes at a time.
pub const CHUNK: usize = 1 << 20;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x100_0000_01b3;

/// The pattern's seed for version `version` of key `key`: distinct,
/// well-mixed streams for nearby (key, version) pairs, never zero (a zero
/// xorshift state would stay zero).
fn seed(key: u32, version: u64) -> u64 {
    splitmix64(u64::from(key) << 40 ^ version) | 1
}

/// Produces the bytes of version `version` of key `key`, `len` bytes long,
/// in order, in pieces of [`CHUNK`] bytes (the last one shorter).
pub struct ValueGen {
    key: u32,
    version: u64,
    len: usize,
    pos: usize,
    pattern: XorShift64,
    sum: u64,
}

impl ValueGen {
    pub fn new(key: u32, version: u64, len: usize) -> ValueGen {
        assert!(len >= MIN_LEN, "a value is at least {MIN_LEN} bytes, not {len}");
        ValueGen { key, version, len, pos: 0, pattern: XorShift64(seed(key, version)), sum: FNV_OFFSET }
    }

    /// Bytes not produced yet.
    pub fn remaining(&self) -> usize {
        self.len - self.pos
    }

    /// Bytes produced so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The next `min(CHUNK, remaining)` bytes into `out` (replacing what
    /// it held).
    pub fn next_chunk(&mut self, out: &mut Vec<u8>) {
        let n = CHUNK.min(self.remaining());
        out.clear();
        out.resize(n, 0);
        let body_end = self.len - TAIL;
        let mut i = 0;
        // `pos` is a multiple of 8 at every chunk start (CHUNK is), so the
        // words below are aligned to the value's start.
        while i < n {
            let p = self.pos + i;
            if p >= body_end {
                // The checksum; the last partial word was folded in already.
                out[i..].copy_from_slice(&self.sum.to_le_bytes()[p - body_end..p - body_end + (n - i)]);
                break;
            }
            let word = if p < HEAD { self.head_word(p) } else { self.pattern.next_u64() };
            // Bytes of this word inside the value's body (the last word may
            // be partial); the checksum covers them zero-padded.
            let take = 8.min(body_end - p).min(n - i);
            let mut w = [0u8; 8];
            w[..take].copy_from_slice(&word.to_le_bytes()[..take]);
            out[i..i + take].copy_from_slice(&w[..take]);
            self.sum = (self.sum ^ u64::from_le_bytes(w)).wrapping_mul(FNV_PRIME);
            i += take;
        }
        self.pos += n;
    }

    /// The header word at offset `p` (a multiple of 8 below [`HEAD`]).
    fn head_word(&self, p: usize) -> u64 {
        let mut h = [0u8; HEAD];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&self.key.to_le_bytes());
        h[16..24].copy_from_slice(&self.version.to_le_bytes());
        h[24..32].copy_from_slice(&(self.len as u64).to_le_bytes());
        u64::from_le_bytes(h[p..p + 8].try_into().unwrap())
    }
}

/// The header of a value: (key id, version, length).
pub fn parse_head(h: &[u8]) -> Result<(u32, u64, usize), String> {
    if h.len() < HEAD || &h[..8] != MAGIC {
        return Err(format!("bad header {:?}", &h[..h.len().min(HEAD)]));
    }
    Ok((
        u32::from_le_bytes(h[8..12].try_into().unwrap()),
        u64::from_le_bytes(h[16..24].try_into().unwrap()),
        u64::from_le_bytes(h[24..32].try_into().unwrap()) as usize,
    ))
}

/// Fills `out` with version `version` of key `key`, `len` bytes long.
pub fn make_value(out: &mut Vec<u8>, key: u32, version: u64, len: usize) {
    let mut g = ValueGen::new(key, version, len);
    out.clear();
    out.reserve(len);
    let mut chunk = Vec::new();
    while g.remaining() > 0 {
        g.next_chunk(&mut chunk);
        out.extend_from_slice(&chunk);
    }
}

/// Checks that `v` is exactly one complete version written for key `key`
/// and returns that version; otherwise says what is wrong.
pub fn check_value(key: u32, v: &[u8]) -> Result<u64, String> {
    if v.len() < MIN_LEN {
        return Err(format!("key {key}: value of {} bytes is too short", v.len()));
    }
    let (id, version, len) = parse_head(v).map_err(|e| format!("key {key}: {e}"))?;
    if id != key {
        return Err(format!("key {key}: holds a value of key {id} (version {version})"));
    }
    if len != v.len() {
        return Err(format!("key {key} version {version}: {} bytes, header says {len}", v.len()));
    }
    let mut g = ValueGen::new(key, version, len);
    let mut want = Vec::new();
    let mut at = 0;
    while g.remaining() > 0 {
        g.next_chunk(&mut want);
        let got = &v[at..at + want.len()];
        if got != &want[..] {
            let off = at + got.iter().zip(&want).position(|(a, b)| a != b).unwrap();
            let place = if off >= len - TAIL { "in the checksum" } else { "in the body" };
            return Err(format!("key {key} version {version}: wrong byte at offset {off} {place} (torn or corrupted value)"));
        }
        at += want.len();
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a over 8-byte words, zero-padded: the checksum as the format
    /// describes it, computed independently of [`ValueGen`].
    fn checksum(data: &[u8]) -> u64 {
        data.chunks(8).fold(FNV_OFFSET, |h, c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            (h ^ u64::from_le_bytes(w)).wrapping_mul(FNV_PRIME)
        })
    }

    #[test]
    fn a_value_has_the_documented_layout() {
        for len in [MIN_LEN, MIN_LEN + 1, 100_003, CHUNK - 3, CHUNK + 8, 2 * CHUNK + 5] {
            let mut v = Vec::new();
            make_value(&mut v, 3, 7, len);
            assert_eq!(v.len(), len);
            assert_eq!(parse_head(&v), Ok((3, 7, len)));
            assert_eq!(&v[12..16], &[0; 4]);
            let body_end = len - TAIL;
            assert_eq!(v[body_end..], checksum(&v[..body_end]).to_le_bytes(), "len {len}");
            let mut x = XorShift64(seed(3, 7));
            for (i, c) in v[HEAD..body_end].chunks(8).enumerate() {
                assert_eq!(c, &x.next_u64().to_le_bytes()[..c.len()], "len {len} word {i}");
            }
        }
    }

    #[test]
    fn the_stream_is_the_whole_value_in_chunks() {
        let len = 2 * CHUNK + 12_345;
        let mut whole = Vec::new();
        make_value(&mut whole, 9, 1, len);
        let mut g = ValueGen::new(9, 1, len);
        let mut chunk = Vec::new();
        let mut sizes = Vec::new();
        while g.remaining() > 0 {
            let at = g.pos();
            g.next_chunk(&mut chunk);
            assert_eq!(chunk[..], whole[at..at + chunk.len()]);
            sizes.push(chunk.len());
        }
        assert_eq!(sizes, [CHUNK, CHUNK, 12_345]);
    }

    #[test]
    fn value_format_detects_tearing() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        make_value(&mut a, 3, 7, 100_003);
        make_value(&mut b, 3, 8, 100_003);
        assert_eq!(check_value(3, &a), Ok(7));
        assert_eq!(check_value(3, &b), Ok(8));
        assert!(check_value(4, &a).is_err(), "another key's value");
        // Half of one version, half of the next.
        let mut torn = a.clone();
        torn[50_000..].copy_from_slice(&b[50_000..]);
        assert!(check_value(3, &torn).is_err());
        torn = a.clone();
        torn[60_001] ^= 1;
        assert!(check_value(3, &torn).is_err(), "one flipped bit");
        torn = a.clone();
        *torn.last_mut().unwrap() ^= 1;
        assert!(check_value(3, &torn).unwrap_err().contains("in the checksum"), "a flipped checksum bit");
        assert!(check_value(3, &a[..a.len() - 1]).is_err(), "truncated");
        let mut longer = a.clone();
        longer.push(0);
        assert!(check_value(3, &longer).is_err(), "extended");
        assert!(check_value(3, &a[..MIN_LEN - 1]).is_err(), "shorter than a header");
        torn = a.clone();
        torn[0] = b'X';
        assert!(check_value(3, &torn).is_err(), "bad magic");
    }
}
