//! What requests a run sends: key names, value bytes, and the command mix.
//!
//! Keys are `k` followed by the zero-padded key index, padded to `key_size` bytes
//! (`k00000000000000000000042` for 24-byte keys); counters for `incr` use an `n` prefix so
//! they never collide with the values that `get` verifies.
//!
//! Values are self-checking: the value of length `len` stored under key `key` is the slice
//! `pattern[off .. off + len]` of one shared pseudo-random pattern, where `off` is a hash of
//! the key and the length. A reader recomputes the slice from the key and length in the reply
//! and compares: a value of another key, a truncated or extended value, or flipped bytes are
//! detected (except with probability ~1/65521 when two offsets collide, and the bytes then
//! still have to match). Writing a value is a copy from the shared pattern, so the hot path
//! allocates nothing.

use crate::dist::{KeyDist, Rng, SizeDist};

/// Number of distinct value offsets into the pattern (a prime).
const OFFSETS: usize = 65_521;

/// One kind of request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Get,
    MultiGet,
    Set,
    Delete,
    Incr,
    MetaGet,
    MetaSet,
    /// `set` of a counter key to "0" (preloading keys for `incr`).
    SetCounter,
}

impl OpKind {
    fn parse(s: &str) -> Option<OpKind> {
        Some(match s {
            "get" => OpKind::Get,
            "mget" | "multiget" | "multi-get" => OpKind::MultiGet,
            "set" => OpKind::Set,
            "delete" | "del" => OpKind::Delete,
            "incr" => OpKind::Incr,
            "mg" => OpKind::MetaGet,
            "ms" => OpKind::MetaSet,
            "setn" => OpKind::SetCounter,
            _ => return None,
        })
    }

    /// Reads count towards the hit ratio.
    pub fn is_read(self) -> bool {
        matches!(self, OpKind::Get | OpKind::MultiGet | OpKind::MetaGet)
    }
}

/// A weighted command mix, e.g. `get=90,set=10`.
#[derive(Clone, Debug)]
pub struct Mix {
    /// (kind, cumulative weight)
    table: Vec<(OpKind, u32)>,
    total: u32,
}

impl Mix {
    pub fn parse(spec: &str) -> Result<Mix, String> {
        let mut table = Vec::new();
        let mut total = 0u32;
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, w) = part.split_once(['=', ':']).unwrap_or((part, "1"));
            let kind = OpKind::parse(name).ok_or_else(|| format!("unknown command {name:?} in mix {spec:?}"))?;
            let w: u32 = w.parse().map_err(|_| format!("bad weight in mix {spec:?}"))?;
            if w == 0 {
                continue;
            }
            total += w;
            table.push((kind, total));
        }
        if total == 0 {
            return Err(format!("empty command mix {spec:?}"));
        }
        Ok(Mix { table, total })
    }

    pub fn single(kind: OpKind) -> Mix {
        Mix { table: vec![(kind, 1)], total: 1 }
    }

    #[inline]
    pub fn pick(&self, rng: &mut Rng) -> OpKind {
        if self.table.len() == 1 {
            return self.table[0].0;
        }
        let x = rng.below(self.total as u64) as u32;
        self.table.iter().find(|&&(_, c)| x < c).map(|&(k, _)| k).unwrap_or(self.table[0].0)
    }

    pub fn contains(&self, kind: OpKind) -> bool {
        self.table.iter().any(|&(k, _)| k == kind)
    }
}

/// How keys are chosen.
#[derive(Clone, Debug)]
pub enum KeySource {
    /// Draw from a distribution for the whole run.
    Random(KeyDist),
    /// Every key in `0..n` exactly once, split into contiguous ranges per connection; the run
    /// ends when all are done (preloading, filling, reading back).
    Sequential { n: u64 },
}

/// Everything needed to produce requests; shared read-only by all generator threads.
#[derive(Clone, Debug)]
pub struct Workload {
    pub key_size: usize,
    pub keys: KeySource,
    pub sizes: SizeDist,
    pub mix: Mix,
    pub multiget_keys: usize,
    /// Verify one value in this many (1 = every value, 0 = none).
    pub verify_every: u32,
    pub values: Values,
}

impl Workload {
    /// Writes key `index` (data key, `k` prefix) into `out`.
    #[inline]
    pub fn write_key(&self, out: &mut Vec<u8>, index: u64) {
        write_key(out, b'k', index, self.key_size);
    }

    /// Writes counter key `index` (`n` prefix) into `out`.
    #[inline]
    pub fn write_counter_key(&self, out: &mut Vec<u8>, index: u64) {
        write_key(out, b'n', index, self.key_size);
    }
}

/// `prefix` + index zero-padded to `size` bytes in total (longer if the index needs it).
#[inline]
pub fn write_key(out: &mut Vec<u8>, prefix: u8, index: u64, size: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = index;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let nd = digits.len() - i;
    out.push(prefix);
    for _ in (nd + 1)..size {
        out.push(b'0');
    }
    out.extend_from_slice(&digits[i..]);
}

/// The shared value pattern.
#[derive(Clone, Debug)]
pub struct Values {
    pattern: std::sync::Arc<Vec<u8>>,
    max: usize,
}

impl Values {
    /// A pattern able to produce values up to `max` bytes.
    pub fn new(max: usize) -> Values {
        let mut rng = Rng::new(0x1a7de7);
        let len = OFFSETS + max.max(1);
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let pattern = (0..len).map(|_| ALPHABET[(rng.next_u64() & 63) as usize]).collect();
        Values { pattern: std::sync::Arc::new(pattern), max }
    }

    /// The value for `key` of `len` bytes (len <= max).
    #[inline]
    pub fn value(&self, key: &[u8], len: usize) -> &[u8] {
        let off = offset(key, len);
        &self.pattern[off..off + len]
    }

    /// Whether `data` is exactly what was written under `key` with this length.
    #[inline]
    pub fn verify(&self, key: &[u8], data: &[u8]) -> bool {
        data.len() <= self.max && self.value(key, data.len()) == data
    }
}

#[inline]
fn offset(key: &[u8], len: usize) -> usize {
    // FNV-1a, then a multiplicative mix with the length.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= (len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^= h >> 29;
    (h % OFFSETS as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_padded() {
        let mut v = Vec::new();
        write_key(&mut v, b'k', 42, 24);
        assert_eq!(v, b"k00000000000000000000042");
        v.clear();
        write_key(&mut v, b'k', 0, 3);
        assert_eq!(v, b"k00");
        v.clear();
        write_key(&mut v, b'n', 123456, 4);
        assert_eq!(v, b"n123456");
    }

    #[test]
    fn values_verify_and_detect_corruption() {
        let vals = Values::new(20_000);
        let v = vals.value(b"k001", 100).to_vec();
        assert!(vals.verify(b"k001", &v));
        // another key's value of the same length
        assert!(!vals.verify(b"k002", &v));
        // truncated / extended
        assert!(!vals.verify(b"k001", &v[..99]));
        let longer = vals.value(b"k001", 101).to_vec();
        assert!(vals.verify(b"k001", &longer));
        let mut ext = v.clone();
        ext.push(b'A');
        assert!(!vals.verify(b"k001", &ext) || ext == longer);
        // a flipped byte anywhere
        for i in [0, 50, 99] {
            let mut bad = v.clone();
            bad[i] ^= 1;
            assert!(!vals.verify(b"k001", &bad), "flip at {i}");
        }
        // longer than any value we write
        assert!(!vals.verify(b"k001", &vec![b'A'; 20_001]));
        // many keys: no accidental acceptance of a neighbour's value
        let mut accepted = 0;
        for i in 0..10_000u64 {
            let mut a = Vec::new();
            let mut b = Vec::new();
            write_key(&mut a, b'k', i, 16);
            write_key(&mut b, b'k', i + 1, 16);
            let va = vals.value(&a, 64);
            assert!(vals.verify(&a, va));
            if vals.verify(&b, va) {
                accepted += 1;
            }
        }
        assert!(accepted <= 2, "{accepted}");
    }

    #[test]
    fn mix_parse_and_pick() {
        let m = Mix::parse("get=90,set=10").unwrap();
        let mut rng = Rng::new(1);
        let sets = (0..100_000).filter(|_| m.pick(&mut rng) == OpKind::Set).count();
        assert!((9_000..11_000).contains(&sets), "{sets}");
        assert!(Mix::parse("get=0").is_err());
        assert!(Mix::parse("frob=1").is_err());
        assert_eq!(Mix::parse("mg").unwrap().pick(&mut rng), OpKind::MetaGet);
    }
}
