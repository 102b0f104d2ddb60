//! The tracker's two bounds and their flags: `-o track_table_mb=N` (the
//! tracking table, MiB, default 16) and `-o track_stream_kb=N` (each
//! subscriber's pending output, KiB, default 256). The parsers take the
//! value after `=` and say what is wrong in words fit for the command
//! line's error.

/// Default `track_table_mb`.
pub const TABLE_MB_DEFAULT: usize = 16;
/// Default `track_stream_kb`.
pub const STREAM_KB_DEFAULT: usize = 256;
/// Upper ends: far beyond sensible, low enough that the byte count cannot
/// overflow anywhere (64 GiB of table, 1 GiB per subscriber).
pub const TABLE_MB_MAX: usize = 64 * 1024;
pub const STREAM_KB_MAX: usize = 1024 * 1024;
/// A stream bound must hold at least one `IV` of the longest base64 key
/// plus `LOST`: 1 KiB does.
pub const STREAM_KB_MIN: usize = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes the tracking table may count (key bytes + entry overhead).
    pub table_bytes: usize,
    /// Bytes one subscriber may have pending.
    pub stream_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { table_bytes: TABLE_MB_DEFAULT << 20, stream_bytes: STREAM_KB_DEFAULT << 10 }
    }
}

fn number(name: &str, v: &str, min: usize, max: usize, unit: &str) -> Result<usize, String> {
    let v = v.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{name} must be a whole number of {unit}, not {v:?}"));
    }
    match v.parse::<usize>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!("{name} must be between {min} and {max} {unit}, not {v}")),
    }
}

/// `-o track_table_mb=N`: the table's bytes. 0 is allowed and means "track
/// nothing": every tracked read is invalidated at once (broadcast mode
/// still works).
pub fn parse_table_mb(v: &str) -> Result<usize, String> {
    number("track_table_mb", v, 0, TABLE_MB_MAX, "MiB").map(|n| n << 20)
}

/// `-o track_stream_kb=N`: one subscriber's pending bytes.
pub fn parse_stream_kb(v: &str) -> Result<usize, String> {
    number("track_stream_kb", v, STREAM_KB_MIN, STREAM_KB_MAX, "KiB").map(|n| n << 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_clearly() {
        assert_eq!(parse_table_mb("16"), Ok(16 << 20));
        assert_eq!(parse_table_mb("0"), Ok(0));
        assert_eq!(parse_stream_kb("256"), Ok(256 << 10));
        assert!(parse_stream_kb("0").unwrap_err().contains("between 1 and"));
        assert!(parse_table_mb("-1").unwrap_err().contains("whole number"));
        assert!(parse_table_mb("1.5").unwrap_err().contains("whole number"));
        assert!(parse_table_mb("").unwrap_err().contains("whole number"));
        assert!(parse_table_mb("99999999999999999999999").unwrap_err().contains("between"));
        assert!(parse_table_mb("65537").unwrap_err().contains("between 0 and 65536 MiB"));
        assert_eq!(Limits::default(), Limits { table_bytes: 16 << 20, stream_bytes: 256 << 10 });
    }
}
