//! incr/decr arithmetic with memcached 1.6's exact observable behaviour.
//!
//! memcached parses the stored data (value followed by "\r\n") with
//! `safe_strtoull`: C `strtoull(data, &end, 10)` (leading whitespace, an
//! optional sign, decimal digits; overflow is an error), accepted only if
//! something was converted and the character after the number is whitespace
//! or NUL; a result that is negative as a signed 64-bit number is refused if
//! the number (leading blanks, sign, digits) contains a '-'. An empty value
//! is non-numeric.
//!
//! incr wraps at 2^64, decr stops at 0. When the new number's decimal form
//! is not longer than the old value, memcached rewrites the value in place
//! keeping its length, padded with trailing spaces (so `decr` of "10" by 1
//! replies "9" and a later `get` returns "9 "); otherwise the value becomes
//! exactly the new digits.

/// C `isspace` in the "C" locale.
fn c_isspace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The number memcached reads from a stored value, or `None` if it would
/// answer "non-numeric".
pub fn parse(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    // memcached sees the value followed by "\r\n"; reading past that is
    // undefined there, a NUL here.
    let at = |i: usize| -> u8 {
        match i.checked_sub(value.len()) {
            None => value[i],
            Some(0) => b'\r',
            Some(1) => b'\n',
            Some(_) => 0,
        }
    };
    let mut i = 0;
    while c_isspace(at(i)) {
        i += 1;
    }
    let neg = match at(i) {
        b'-' => {
            i += 1;
            true
        }
        b'+' => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut n: u64 = 0;
    let mut overflow = false;
    while at(i).is_ascii_digit() {
        match n.checked_mul(10).and_then(|n| n.checked_add((at(i) - b'0') as u64)) {
            Some(v) => n = v,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start || overflow {
        return None; // nothing converted (end == str), or ERANGE
    }
    let end = at(i);
    if !(c_isspace(end) || end == 0) {
        return None;
    }
    let n = if neg { n.wrapping_neg() } else { n };
    // Since 1.6.22 memcached looks for the '-' only in the number itself
    // (sign and digits), not in what follows it: "18446744073709551615 -"
    // is a number again (1.6.18 refused it).
    if (n as i64) < 0 && value[..i.min(value.len())].contains(&b'-') {
        return None;
    }
    Some(n)
}

/// Applies the delta.
pub fn apply(old: u64, incr: bool, delta: u64) -> u64 {
    if incr {
        old.wrapping_add(delta)
    } else {
        old.saturating_sub(delta)
    }
}

/// Decimal digits of `n` in `buf`; returns the used tail.
pub fn digits(n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Length of the rewritten value: the old length when the digits fit (in
/// place, space padded), else the digits' length.
pub fn new_len(old_len: usize, ndigits: usize) -> usize {
    if ndigits <= old_len {
        old_len
    } else {
        ndigits
    }
}

/// Writes the new value (digits, then space padding) into `dst`.
pub fn write(dst: &mut [u8], digits: &[u8]) {
    dst[..digits.len()].copy_from_slice(digits);
    dst[digits.len()..].fill(b' ');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_safe_strtoull() {
        assert_eq!(parse(b"0"), Some(0));
        assert_eq!(parse(b"42"), Some(42));
        assert_eq!(parse(b"  42"), Some(42));
        assert_eq!(parse(b"+42"), Some(42));
        assert_eq!(parse(b"42 "), Some(42));
        assert_eq!(parse(b"42 trailing words"), Some(42));
        assert_eq!(parse(b"42\0junk"), Some(42));
        assert_eq!(parse(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse(b"00018446744073709551615"), Some(u64::MAX));
        assert_eq!(parse(b"-0"), Some(0));
        // "-1" is 2^64-1 for strtoull, negative as i64, and has a '-'.
        assert_eq!(parse(b"-1"), None);
        // Wraps to 1, positive, so accepted (a C quirk, reproduced).
        assert_eq!(parse(b"-18446744073709551615"), Some(1));
        assert_eq!(parse(b"18446744073709551616"), None, "ERANGE");
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b" "), None);
        assert_eq!(parse(b"hi"), None);
        assert_eq!(parse(b"12abc"), None);
        assert_eq!(parse(b"-"), None);
        assert_eq!(parse(b"0x10"), None);
        assert_eq!(parse(b"1.5"), None);
        assert_eq!(parse(b"\t7\n"), Some(7));
        // 1.6.22: a '-' after the number does not make a large one negative.
        assert_eq!(parse(b"18446744073709551615 -"), Some(u64::MAX));
        assert_eq!(parse(b" -1 x"), None);
    }

    #[test]
    fn incr_wraps_decr_clamps() {
        assert_eq!(apply(u64::MAX, true, 1), 0);
        assert_eq!(apply(9223372036854775807, true, 1), 9223372036854775808);
        assert_eq!(apply(5, false, 9), 0);
        assert_eq!(apply(10, false, 1), 9);
    }

    #[test]
    fn rewrite_pads_in_place_or_grows() {
        let mut b = [0u8; 20];
        assert_eq!(digits(0, &mut b), b"0");
        assert_eq!(digits(u64::MAX, &mut b), b"18446744073709551615");
        // decr "10" by 1: reply "9", value "9 ".
        let d = digits(9, &mut b).to_vec();
        let n = new_len(2, d.len());
        assert_eq!(n, 2);
        let mut v = vec![0u8; n];
        write(&mut v, &d);
        assert_eq!(v, b"9 ");
        // incr "9" by 1: value grows to "10".
        assert_eq!(new_len(1, 2), 2);
        assert_eq!(new_len(1, 1), 1);
    }
}
