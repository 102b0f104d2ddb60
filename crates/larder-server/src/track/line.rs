//! The push lines of an invalidation stream (docs/near-cache.md): `IV
//! <key>`, `IV <base64> b`, `IA`, `LOST`, `MN`, and how long each is before
//! it is written, so a bounded queue can decide whether it fits without
//! encoding it twice or into a scratch buffer.

use larder_proto::meta::base64_encode;

pub const IA: &[u8] = b"IA\r\n";
pub const LOST: &[u8] = b"LOST\r\n";
pub const MN: &[u8] = b"MN\r\n";

/// Whether `key` can travel as it is in a text line: non-empty, at most
/// memcached's 250 bytes, and no byte a text tokenizer splits or ends a line
/// on (space, control bytes, DEL). Bytes from 0x80 up are allowed, as in
/// memcached's text keys. Anything else (binary-protocol keys with spaces
/// or newlines, keys a meta `b` request decoded) goes base64.
#[inline]
pub fn text_safe(key: &[u8]) -> bool {
    !key.is_empty() && key.len() <= larder_proto::text::KEY_MAX_LENGTH && key.iter().all(|&b| b > b' ' && b != 0x7f)
}

/// Length of the `IV` line for `key`.
#[inline]
pub fn iv_len(key: &[u8]) -> usize {
    if text_safe(key) {
        3 + key.len() + 2
    } else {
        // "IV " + base64 (4 per 3 bytes, padded) + " b\r\n"
        3 + key.len().div_ceil(3) * 4 + 4
    }
}

/// Append the `IV` line for `key` (exactly [`iv_len`] bytes).
#[inline]
pub fn push_iv(out: &mut Vec<u8>, key: &[u8]) {
    out.extend_from_slice(b"IV ");
    if text_safe(key) {
        out.extend_from_slice(key);
        out.extend_from_slice(b"\r\n");
    } else {
        base64_encode(out, key);
        out.extend_from_slice(b" b\r\n");
    }
}

/// Whether the line starting at `line` (a queue's bytes, from a line start)
/// is an `MN` line, and the length of that line (through its `\n`).
pub fn next_line(bytes: &[u8]) -> Option<(usize, bool)> {
    let end = bytes.iter().position(|&b| b == b'\n')? + 1;
    Some((end, &bytes[..end] == MN))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(key: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        push_iv(&mut out, key);
        assert_eq!(out.len(), iv_len(key), "iv_len disagrees with push_iv for {key:?}");
        out
    }

    #[test]
    fn text_keys_go_as_they_are() {
        assert_eq!(line(b"user:42"), b"IV user:42\r\n");
        assert_eq!(line("café".as_bytes()), "IV café\r\n".as_bytes());
        assert_eq!(line(&[b'k'; 250]).len(), 255);
    }

    #[test]
    fn other_keys_go_base64_with_b() {
        assert_eq!(line(b"a b"), b"IV YSBi b\r\n");
        assert_eq!(line(b"x\r\n"), b"IV eA0K b\r\n");
        assert_eq!(line(b"\0"), b"IV AA== b\r\n");
        assert_eq!(line(b"\x7f1"), b"IV fzE= b\r\n");
        assert_eq!(line(b""), b"IV  b\r\n");
        // Longer than a text key may be: base64 too, never cut.
        let long = vec![b'k'; 251];
        assert!(line(&long).ends_with(b" b\r\n"));
        let mut dec = [0u8; 400];
        let l = line(&long);
        let n = larder_proto::meta::base64_decode(&l[3..l.len() - 4], &mut dec).unwrap();
        assert_eq!(&dec[..n], &long[..]);
    }

    #[test]
    fn lines_are_split_and_mn_found() {
        let q = b"IV a\r\nMN\r\nIA\r\n";
        assert_eq!(next_line(q), Some((6, false)));
        assert_eq!(next_line(&q[6..]), Some((4, true)));
        assert_eq!(next_line(&q[10..]), Some((4, false)));
        assert_eq!(next_line(b"IV a"), None);
    }
}
