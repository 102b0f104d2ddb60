//! Percent-encoding of keys and prefixes in every listing that prints them.
//!
//! # Why
//!
//! A key may hold any byte: binary-protocol keys are raw bytes, and a meta
//! key sent base64 with `b` decodes to raw bytes. Printed as is, a key
//! holding `\r\nSTAT forged 1\r\nEND\r\n` would forge lines, or an early
//! `END`, in *another* client's `stats` reply (a monitoring tool would then
//! read made-up figures, and everything after the forged `END` as the reply
//! to its next command). So every key or prefix larder prints in a listing
//! goes through this module (issue 12, item 6).
//!
//! # The encoding
//!
//! URI-style `%XX` (two upper-case hex digits), the scheme memcached's
//! `lru_crawler metadump` and `watch` already use: one decoder
//! ([`unescape`], plain percent-decoding) reads every listing. Two byte
//! sets, one encoder ([`percent_encode`]):
//!
//! * [`escape_key`], for `stats prefixes`, `stats hotkeys`,
//!   `stats bigkeys`, `stats cachedump`, `stats detail dump` (and the
//!   `prefix` label of `/metrics`): every byte that is **not** printable
//!   ASCII (`0x21..=0x7E`) is encoded, and so is `%` itself. The output is
//!   printable ASCII without spaces, so it is one word of a line: it cannot
//!   end the line, split the `STAT name value` words, or carry control
//!   bytes (including terminal escapes and C1 controls, which is why bytes
//!   `0x80..=0xFF` are encoded too: UTF-8 keys print as `%C3%A9`). Because
//!   `%` is encoded, the encoding is unambiguous: distinct keys print
//!   distinctly and [`unescape`] gives back the exact bytes. Every key the
//!   text protocol accepts that has no `%` and is ASCII prints unchanged,
//!   so those replies stay byte-identical to memcached's (`PREFIX foo get
//!   ...`, `ITEM user:1 [...]`) for ordinary keys.
//! * [`uriencode`], for `lru_crawler metadump` and `watch`: memcached's own
//!   `uriencode` byte for byte (everything but ASCII letters, digits and
//!   `-._~` is encoded, so `user:1` is `user%3A1`), because there larder must
//!   match memcached's output exactly.
//!
//! memcached itself prints keys raw in `stats cachedump` and prefixes raw in
//! `stats detail dump`, so a binary-protocol key can forge lines there;
//! larder deliberately differs for the keys that would.
//!
//! Cost: the encoders scan the key once and copy runs of kept bytes in one
//! `extend_from_slice`; nothing is allocated beyond the output.

/// Whether `escape_key` prints `b` as itself: printable ASCII except `%`.
#[inline]
pub fn is_kept(b: u8) -> bool {
    (0x21..=0x7E).contains(&b) && b != b'%'
}

/// Whether memcached's `uriencode` prints `b` as itself (RFC 3986
/// unreserved characters).
#[inline]
pub fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Appends `bytes` with every byte for which `keep` is false written as
/// `%XX` (upper-case hex). `keep` must be false for `%`, or the output
/// cannot be decoded unambiguously.
#[inline]
pub fn percent_encode(out: &mut Vec<u8>, bytes: &[u8], keep: impl Fn(u8) -> bool) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    debug_assert!(!keep(b'%'));
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !keep(b) {
            out.extend_from_slice(&bytes[run..i]);
            out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
            run = i + 1;
        }
    }
    out.extend_from_slice(&bytes[run..]);
}

/// Appends `key` escaped for a listing (`stats prefixes|hotkeys|bigkeys|
/// cachedump|detail dump`): see the module docs.
#[inline]
pub fn escape_key(out: &mut Vec<u8>, key: &[u8]) {
    percent_encode(out, key, is_kept);
}

/// `key` escaped for a listing, as a `String` (always ASCII).
pub fn escaped_key(key: &[u8]) -> String {
    let mut v = Vec::with_capacity(key.len());
    escape_key(&mut v, key);
    // escape_key writes ASCII only
    String::from_utf8(v).unwrap_or_default()
}

/// Appends `key` URI-encoded exactly as memcached's `uriencode` does
/// (`lru_crawler metadump`, `watch`).
#[inline]
pub fn uriencode(out: &mut Vec<u8>, key: &[u8]) {
    percent_encode(out, key, is_unreserved);
}

/// Percent-decodes `text` (the inverse of both encoders; upper- or
/// lower-case hex). `None` when a `%` is not followed by two hex digits.
pub fn unescape(text: &[u8]) -> Option<Vec<u8>> {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'%' {
            let hi = hex(*text.get(i + 1)?)?;
            let lo = hex(*text.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use larder_testkit::XorShift64;

    fn esc(k: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        escape_key(&mut v, k);
        v
    }

    #[test]
    fn every_byte() {
        for b in 0..=255u8 {
            let e = esc(&[b]);
            if is_kept(b) {
                assert_eq!(e, [b], "{b:#04x}");
            } else {
                assert_eq!(e, format!("%{b:02X}").as_bytes(), "{b:#04x}");
            }
            // nothing a line protocol cares about survives
            assert!(e.iter().all(|&c| (0x21..=0x7E).contains(&c)), "{b:#04x} -> {e:?}");
            assert_eq!(unescape(&e).unwrap(), [b], "{b:#04x}");
            let mut u = Vec::new();
            uriencode(&mut u, &[b]);
            assert_eq!(unescape(&u).unwrap(), [b], "{b:#04x}");
            assert!(u.iter().all(|&c| is_unreserved(c) || c == b'%' || c.is_ascii_hexdigit()));
        }
        assert_eq!(esc(b"%"), b"%25");
        assert_eq!(esc(b" "), b"%20");
        assert_eq!(esc(b"\x7f"), b"%7F");
        assert_eq!(esc(b"!~"), b"!~");
    }

    #[test]
    fn all_bytes_in_one_key_round_trip() {
        let all: Vec<u8> = (0..=255u8).collect();
        let e = esc(&all);
        assert_eq!(unescape(&e).unwrap(), all);
        assert_eq!(e.len(), 93 + 3 * (256 - 93), "kept: 0x21..=0x7E without %");
        let mut u = Vec::new();
        uriencode(&mut u, &all);
        assert_eq!(unescape(&u).unwrap(), all);
    }

    #[test]
    fn random_keys_round_trip_and_stay_distinct() {
        let mut r = XorShift64(12);
        let mut seen = std::collections::HashMap::new();
        for _ in 0..20_000 {
            let n = (r.next_u64() % 12) as usize;
            // bytes from a small alphabet so collisions would show
            let k: Vec<u8> = (0..n).map(|_| [b'%', b'2', b'5', b'a', b' ', b'\r', 0xff, b':'][r.next_u64() as usize % 8]).collect();
            let e = esc(&k);
            assert_eq!(unescape(&e).unwrap(), k);
            if let Some(prev) = seen.insert(e.clone(), k.clone()) {
                assert_eq!(prev, k, "two keys print as {:?}", String::from_utf8_lossy(&e));
            }
        }
    }

    #[test]
    fn ordinary_keys_print_as_memcached_prints_them() {
        assert_eq!(esc(b"user:1"), b"user:1");
        assert_eq!(esc(b"a/b#c(d)[e]{f}\"g'h\\i"), b"a/b#c(d)[e]{f}\"g'h\\i");
        assert_eq!(esc(b"sp%ace\xc3\xa9"), b"sp%25ace%C3%A9");
        assert_eq!(esc(b"x\r\nSTAT forged 1\r\nEND\r\n"), b"x%0D%0ASTAT%20forged%201%0D%0AEND%0D%0A");
        assert_eq!(escaped_key(b"a b"), "a%20b");
    }

    #[test]
    fn uriencode_is_memcacheds() {
        let mut e = Vec::new();
        uriencode(&mut e, b"aZ09-._~ /:\x00\xff%");
        assert_eq!(e, b"aZ09-._~%20%2F%3A%00%FF%25");
    }

    #[test]
    fn malformed_escapes_are_refused() {
        assert_eq!(unescape(b"a%2"), None);
        assert_eq!(unescape(b"%"), None);
        assert_eq!(unescape(b"%zz"), None);
        assert_eq!(unescape(b"%2f%2F"), Some(b"//".to_vec()));
        assert_eq!(unescape(b""), Some(Vec::new()));
    }
}
