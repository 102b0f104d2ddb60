//! Small shared helpers: a fast non-cryptographic hash for keys and
//! prefixes, prefix extraction, and integer formatting without allocation.

/// A fast 64-bit hash of a byte string (8 bytes per step, multiply-rotate,
/// final avalanche). Not DoS resistant; callers bound their tables so a
/// hostile key distribution costs accuracy, never memory.
#[inline]
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h: u64 = (bytes.len() as u64).wrapping_mul(K) ^ 0x2545_F491_4F6C_DD1D;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = (h ^ word(c)).wrapping_mul(K).rotate_left(29);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        h = (h ^ partial_word(rest)).wrapping_mul(K).rotate_left(29);
    }
    // murmur3 fmix64
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

/// The 8 bytes of `c` (exactly 8 long) as a little-endian word.
#[inline]
pub(crate) fn word(c: &[u8]) -> u64 {
    u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
}

/// Up to 8 bytes as a zero-padded little-endian word, without a `memcpy`
/// call (two overlapping loads).
#[inline]
pub(crate) fn partial_word(b: &[u8]) -> u64 {
    let n = b.len();
    match n {
        0 => 0,
        1..=3 => (b[0] as u64) | (b[n / 2] as u64) << (8 * (n / 2)) | (b[n - 1] as u64) << (8 * (n - 1)),
        4..=7 => {
            let lo = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64;
            let hi = u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]) as u64;
            lo | hi << (8 * (n - 4))
        }
        _ => word(&b[..8]),
    }
}

/// The prefix of `key`: the bytes before the first `delimiter`, or `None`
/// when the key has no delimiter (memcached's `stats detail` does not count
/// such keys). A key starting with the delimiter has the empty prefix, as in
/// memcached (`PREFIX  get ...` with two spaces).
#[inline]
pub fn key_prefix(key: &[u8], delimiter: u8) -> Option<&[u8]> {
    find_byte(key, delimiter).map(|i| &key[..i])
}

/// The position of the first `b` in `hay`: the same as
/// `hay.iter().position(|&x| x == b)`, 8 bytes per step (the classic
/// "has a zero byte" word trick; its lowest flagged byte is always a true
/// match, little-endian order is key order).
#[inline]
pub(crate) fn find_byte(hay: &[u8], b: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pat = LO.wrapping_mul(b as u64);
    let first = |w: u64| {
        let x = w ^ pat;
        let m = x.wrapping_sub(LO) & !x & HI;
        (m != 0).then(|| (m.trailing_zeros() / 8) as usize)
    };
    let mut chunks = hay.chunks_exact(8);
    let mut base = 0;
    for c in &mut chunks {
        if let Some(i) = first(word(c)) {
            return Some(base + i);
        }
        base += 8;
    }
    let rest = chunks.remainder();
    // the padding of a partial word is zero bytes: a match there (b == 0)
    // lies past the end
    match first(partial_word(rest)) {
        Some(i) if i < rest.len() => Some(base + i),
        _ => None,
    }
}

/// Appends the decimal form of `v`.
#[inline]
pub(crate) fn push_u64(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

#[inline]
pub(crate) fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// `STAT <name> <value>\r\n` with an integer value.
pub(crate) fn stat_u64(out: &mut Vec<u8>, name: &[&[u8]], v: u64) {
    out.extend_from_slice(b"STAT ");
    for p in name {
        out.extend_from_slice(p);
    }
    out.push(b' ');
    push_u64(out, v);
    out.extend_from_slice(b"\r\n");
}

pub(crate) fn stat_i64(out: &mut Vec<u8>, name: &[&[u8]], v: i64) {
    out.extend_from_slice(b"STAT ");
    for p in name {
        out.extend_from_slice(p);
    }
    out.push(b' ');
    push_i64(out, v);
    out.extend_from_slice(b"\r\n");
}

/// `STAT <name> <escaped key>\r\n`: a key or prefix as the value,
/// escaped by [`crate::escape::escape_key`] so it is one printable word.
pub(crate) fn stat_key(out: &mut Vec<u8>, name: &[&[u8]], key: &[u8]) {
    out.extend_from_slice(b"STAT ");
    for p in name {
        out.extend_from_slice(p);
    }
    out.push(b' ');
    crate::escape::escape_key(out, key);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use larder_testkit::XorShift64;

    #[test]
    fn ints() {
        let mut v = Vec::new();
        push_u64(&mut v, 0);
        v.push(b' ');
        push_u64(&mut v, u64::MAX);
        v.push(b' ');
        push_i64(&mut v, -42);
        v.push(b' ');
        push_i64(&mut v, i64::MIN);
        assert_eq!(v, b"0 18446744073709551615 -42 -9223372036854775808");
    }

    #[test]
    fn prefixes() {
        assert_eq!(key_prefix(b"user:1", b':'), Some(&b"user"[..]));
        assert_eq!(key_prefix(b":x", b':'), Some(&b""[..]));
        assert_eq!(key_prefix(b"plain", b':'), None);
        assert_eq!(key_prefix(b"a/b:c", b'/'), Some(&b"a"[..]));
    }

    #[test]
    fn find_byte_is_position() {
        let mut r = XorShift64(7);
        for n in 0..40usize {
            for _ in 0..200 {
                let v: Vec<u8> = (0..n)
                    .map(|_| [0u8, b':', b'a', 0x80, 0xff, 0x3a ^ 0x80][r.next_u64() as usize % 6])
                    .collect();
                for b in [0u8, b':', b'a', 0x80, 0xff, 0x01] {
                    assert_eq!(find_byte(&v, b), v.iter().position(|&c| c == b), "{v:?} {b}");
                }
            }
        }
    }

    #[test]
    fn partial_words() {
        for n in 0..=8usize {
            let b: Vec<u8> = (1..=n as u8).collect();
            let mut buf = [0u8; 8];
            buf[..n].copy_from_slice(&b);
            assert_eq!(partial_word(&b), u64::from_le_bytes(buf), "{n}");
        }
    }

    #[test]
    fn hash_spreads() {
        assert_ne!(hash_bytes(b"a"), hash_bytes(b"b"));
        assert_ne!(hash_bytes(b""), hash_bytes(b"\0"));
        assert_ne!(hash_bytes(b"abcdefgh"), hash_bytes(b"abcdefgh\0"));
    }
}
