//! Numbers in request lines, read as C's `strtoul`/`strtol` read them
//! (base 10) followed by the checks of memcached's `safe_strto*` helpers,
//! so that every parser (text, meta, the server's `-Y` handshake) accepts
//! and refuses exactly the numbers memcached does.

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
