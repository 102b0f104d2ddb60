//! Encoders for text protocol replies, appending to a write buffer.
//!
//! Numbers are formatted without allocating. Reply strings are memcached's,
//! byte for byte.

pub const STORED: &[u8] = b"STORED\r\n";
pub const NOT_STORED: &[u8] = b"NOT_STORED\r\n";
pub const EXISTS: &[u8] = b"EXISTS\r\n";
pub const NOT_FOUND: &[u8] = b"NOT_FOUND\r\n";
pub const DELETED: &[u8] = b"DELETED\r\n";
pub const TOUCHED: &[u8] = b"TOUCHED\r\n";
pub const END: &[u8] = b"END\r\n";
pub const OK: &[u8] = b"OK\r\n";
pub const ERROR: &[u8] = b"ERROR\r\n";
pub const RESET: &[u8] = b"RESET\r\n";

/// Append `n` in decimal.
pub fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

/// Append `n` in decimal, with a sign when negative.
pub fn push_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    push_u64(out, n.unsigned_abs());
}

/// `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n`
pub fn value(out: &mut Vec<u8>, key: &[u8], flags: u32, data: &[u8], cas: Option<u64>) {
    value_head(out, key, flags, data.len(), cas);
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// The `VALUE <key> <flags> <bytes>[ <cas>]\r\n` line alone: the caller
/// sends the `len` data bytes and `\r\n` after it (a large value goes out
/// in pieces).
pub fn value_head(out: &mut Vec<u8>, key: &[u8], flags: u32, len: usize, cas: Option<u64>) {
    out.extend_from_slice(b"VALUE ");
    out.extend_from_slice(key);
    out.push(b' ');
    push_u64(out, flags as u64);
    out.push(b' ');
    push_u64(out, len as u64);
    if let Some(cas) = cas {
        out.push(b' ');
        push_u64(out, cas);
    }
    out.extend_from_slice(b"\r\n");
}

/// A numeric reply line (incr/decr result).
pub fn number(out: &mut Vec<u8>, n: u64) {
    push_u64(out, n);
    out.extend_from_slice(b"\r\n");
}

/// An error or status line given without its `\r\n`.
pub fn line(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `STAT <name> <value>\r\n` with a numeric value.
pub fn stat_u64(out: &mut Vec<u8>, name: &str, v: u64) {
    out.extend_from_slice(b"STAT ");
    out.extend_from_slice(name.as_bytes());
    out.push(b' ');
    push_u64(out, v);
    out.extend_from_slice(b"\r\n");
}

/// `STAT <name> <value>\r\n` with a textual value.
pub fn stat_str(out: &mut Vec<u8>, name: &str, v: &str) {
    out.extend_from_slice(b"STAT ");
    out.extend_from_slice(name.as_bytes());
    out.push(b' ');
    out.extend_from_slice(v.as_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers() {
        let mut v = Vec::new();
        push_u64(&mut v, 0);
        v.push(b' ');
        push_u64(&mut v, u64::MAX);
        v.push(b' ');
        push_i64(&mut v, -42);
        assert_eq!(v, b"0 18446744073709551615 -42");
    }

    #[test]
    fn formats_value() {
        let mut v = Vec::new();
        value(&mut v, b"k", 7, b"abc", Some(9));
        value(&mut v, b"k", 0, b"", None);
        assert_eq!(v, b"VALUE k 7 3 9\r\nabc\r\nVALUE k 0 0\r\n\r\n");
    }
}
