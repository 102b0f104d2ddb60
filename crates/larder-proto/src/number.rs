//! Numbers in request lines, read as C's `strtoul`/`strtol` read them
//! (base 10) followed by the checks of memcached's `safe_strto*` helpers,
//! so that every parser (text, meta, the server's `-Y` handshake) accepts
//! and refuses exactly the numbers memcached does.
//!
//! memcached 1.6.40 moved its text and meta parsing onto a new tokenizer,
//! which reads `gat`'s exptime, `cas`'s unique, `flush_all`'s delay and the
//! admin commands' numbers with its own strict readers instead of `strto*`;
//! 1.6.45 did the same for meta flags (`N T R F C E J D`), `touch`'s
//! exptime and `incr`/`decr`'s delta (a flag with no digits could make
//! `strto*` read past the request). The `strict_*` functions here are those
//! readers: digits only (a `-` first for the signed one, nothing else: no
//! `+`, no spaces), at most 11 or 22 characters, out of range refused
//! instead of truncated. A storage line's flags and exptime keep `strto*`'s
//! rules in 1.6.45 too; the lengths of `set` and `ms` (strict in 1.6.45)
//! keep them in larder, as 1.6.18 and 1.6.38 have them (docs/differences.md).

/// C's `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// What `strto*` found: sign, magnitude (`None` if it overflowed 64 bits),
/// or `None` overall when there were no digits or the digits were followed
/// by something other than whitespace or the end of the token.
fn scan_c_number(tok: &[u8]) -> Option<(bool, Option<u64>)> {
    let mut i = tok.iter().take_while(|&&b| is_c_space(b)).count();
    let negative = match tok.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits_start = i;
    let mut magnitude = Some(0u64);
    while let Some(&b) = tok.get(i) {
        if !b.is_ascii_digit() {
            break;
        }
        magnitude = magnitude
            .and_then(|m| m.checked_mul(10))
            .and_then(|m| m.checked_add(u64::from(b - b'0')));
        i += 1;
    }
    if i == digits_start {
        return None;
    }
    if i < tok.len() && !is_c_space(tok[i]) {
        return None;
    }
    Some((negative, magnitude))
}

/// `strtoull`: negation wraps, overflow (ERANGE) fails.
fn c_strtoull(tok: &[u8]) -> Option<u64> {
    let (negative, magnitude) = scan_c_number(tok)?;
    let m = magnitude?;
    Some(if negative { m.wrapping_neg() } else { m })
}

/// memcached's `safe_strtoull`: a result with the top bit set is refused if
/// the token has a minus sign anywhere.
pub(crate) fn safe_u64(tok: &[u8]) -> Option<u64> {
    let v = c_strtoull(tok)?;
    if (v as i64) < 0 && tok.contains(&b'-') {
        return None;
    }
    Some(v)
}

/// memcached's `safe_strtoul`: as `safe_strtoull` (unsigned long is 64 bits),
/// then truncated to 32 bits (so `4294967303` reads as 7). Public for the
/// server's `-Y` handshake, which reads a `set` line the way memcached's
/// does.
pub fn safe_u32(tok: &[u8]) -> Option<u32> {
    safe_u64(tok).map(|v| v as u32)
}

/// memcached's `safe_strtoll`.
pub(crate) fn safe_i64(tok: &[u8]) -> Option<i64> {
    let (negative, magnitude) = scan_c_number(tok)?;
    let m = magnitude?;
    if negative {
        if m > 1u64 << 63 {
            return None;
        }
        Some((m as i64).wrapping_neg())
    } else {
        i64::try_from(m).ok()
    }
}

/// memcached's `safe_strtol`: a 64-bit `long` stored into an `int32_t`.
pub fn safe_i32(tok: &[u8]) -> Option<i32> {
    safe_i64(tok).map(|v| v as i32)
}

/// memcached's `safe_strtod`: a decimal number filling the token (up to
/// trailing whitespace). Public for the server's tuning commands.
pub fn safe_f64(tok: &[u8]) -> Option<f64> {
    let start = tok.iter().take_while(|&&b| is_c_space(b)).count();
    let end = tok.iter().rposition(|&b| !is_c_space(b)).map_or(start, |e| e + 1);
    std::str::from_utf8(tok.get(start..end)?).ok()?.parse().ok()
}

/// Longest token memcached's strict readers take: 11 characters for 32 bits
/// (a sign and ten digits), 22 for 64.
const STRICT_32_MAX: usize = 11;
const STRICT_64_MAX: usize = 22;

/// Digits only, at most `max` of them, summed without overflow.
fn strict_digits(tok: &[u8], max: usize, limit: u64) -> Option<u64> {
    if tok.len() > max {
        return None;
    }
    tok.iter().try_fold(0u64, |sum, &b| {
        let d = u64::from(b.wrapping_sub(b'0'));
        if d > 9 {
            return None;
        }
        sum.checked_mul(10)?.checked_add(d).filter(|&v| v <= limit)
    })
}

/// memcached 1.6.45's unsigned 32-bit reader (`F`).
pub fn strict_u32(tok: &[u8]) -> Option<u32> {
    strict_digits(tok, STRICT_32_MAX, u64::from(u32::MAX)).map(|v| v as u32)
}

/// memcached 1.6.45's unsigned 64-bit reader (`C`, `E`, `J`, `D`).
pub fn strict_u64(tok: &[u8]) -> Option<u64> {
    strict_digits(tok, STRICT_64_MAX, u64::MAX)
}

/// memcached 1.6.45's signed 32-bit reader (`N`, `T`, `R`, `ms`'s length).
/// A lone `-` reads as 0, as there.
pub fn strict_i32(tok: &[u8]) -> Option<i32> {
    if tok.len() > STRICT_32_MAX {
        return None;
    }
    match tok.split_first() {
        Some((b'-', digits)) => {
            let m = strict_digits(digits, STRICT_32_MAX, 1 << 31)?;
            Some((m as i64).wrapping_neg() as i32)
        }
        _ => strict_digits(tok, STRICT_32_MAX, i32::MAX as u64).map(|v| v as i32),
    }
}

#[cfg(test)]
mod strict_tests {
    use super::*;

    #[test]
    fn strict_readers_take_digits_only() {
        assert_eq!(strict_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(strict_u32(b"4294967296"), None, "refused, not truncated as strtoul's 64 bits are");
        assert_eq!(safe_u32(b"4294967296"), Some(0));
        assert_eq!(strict_u32(b"+5"), None);
        assert_eq!(safe_u32(b"+5"), Some(5));
        assert_eq!(strict_u32(b"000000000005"), None, "longer than 11 characters");
        assert_eq!(strict_u32(b"00000000005"), Some(5));
        assert_eq!(strict_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(strict_u64(b"18446744073709551616"), None);
        assert_eq!(strict_u64(b"-0"), None);
        assert_eq!(safe_u64(b"-0"), Some(0));
        assert_eq!(strict_u64(b"12a"), None);
        assert_eq!(strict_i32(b"-2147483648"), Some(i32::MIN));
        assert_eq!(strict_i32(b"-2147483649"), None);
        assert_eq!(strict_i32(b"2147483647"), Some(i32::MAX));
        assert_eq!(strict_i32(b"2147483648"), None);
        assert_eq!(safe_i32(b"2147483648"), Some(i32::MIN), "strtol's long, stored in an int");
        assert_eq!(strict_i32(b"-"), Some(0));
        assert_eq!(strict_i32(b"+1"), None);
        assert_eq!(strict_i32(b"--1"), None);
        assert_eq!(strict_i32(b""), Some(0), "an empty token reads as 0; flag arguments check for one first");
    }
}
