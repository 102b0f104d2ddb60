//! Encoders for text protocol replies, appending to a write buffer, and
//! the reply lines themselves.
//!
//! Numbers are formatted without allocating. Reply strings are memcached's,
//! byte for byte. Whole lines (with their `\r\n`) are `&[u8]`; error and
//! status lines sent with [`line`] are `&str` without it (a few also come
//! as a whole `…_LINE` for callers that write bytes straight out). The
//! lines the request parsers answer by themselves live with them
//! ([`outcome`](crate::outcome), [`text`](crate::text),
//! [`meta`](crate::meta)); [`BAD_FORMAT`] and [`TOO_LARGE`] are here too
//! because the server also sends them on its own.

pub use crate::outcome::{BAD_FORMAT, TOO_LARGE};

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

// ---------------------------------------------------------------------------
// Error and status lines the server sends on its own (not a parser's
// answer), for [`line`].

/// A value could not be stored for want of memory: `set`-like commands
/// (text and meta) with eviction off or nothing evictable, and a data block
/// the connection's memory budget cannot take (answered as memcached
/// answers a value it cannot allocate).
pub const OUT_OF_MEMORY_STORING: &str = "SERVER_ERROR out of memory storing object";
/// [`OUT_OF_MEMORY_STORING`] as a whole line.
pub const OUT_OF_MEMORY_STORING_LINE: &[u8] = b"SERVER_ERROR out of memory storing object\r\n";
/// [`TOO_LARGE`] as a whole line: a text storage command whose item the
/// store refused as larger than `-I`.
pub const TOO_LARGE_LINE: &[u8] = b"SERVER_ERROR object too large for cache\r\n";
/// A get's response could not be buffered (the connection's memory budget
/// is exhausted), text or meta.
pub const OUT_OF_MEMORY_WRITING_GET: &str = "SERVER_ERROR out of memory writing get response";
/// `incr`/`decr`/`ma` found no memory for the new value.
pub const OUT_OF_MEMORY: &str = "SERVER_ERROR out of memory";
/// `ma` with `N` (auto-vivify) found no memory for the item it creates.
pub const OUT_OF_MEMORY_ALLOCATING: &str = "SERVER_ERROR Out of memory allocating new item";
/// `incr`/`decr`/`ma` on a value that is not a decimal number.
pub const NON_NUMERIC: &str = "CLIENT_ERROR cannot increment or decrement non-numeric value";
/// `cache_memlimit` that the store refused (not under `noreply`).
pub const CANNOT_CHANGE_MEMORY_LIMIT: &str = "SERVER_ERROR cannot change memory limit";
/// `cache_memlimit` below 8 MB (memcached's smallest).
pub const MEMLIMIT_TOO_SMALL: &str = "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m";
/// `cache_memlimit` with a value that looks like bytes, not megabytes.
pub const MEMLIMIT_ADJUST_FAILED: &str = "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes";
/// `flush_all` on a server started with flush disabled (`-F`); sent even
/// under `noreply`.
pub const FLUSH_ALL_NOT_ALLOWED: &str = "CLIENT_ERROR flush_all not allowed";
/// `shutdown` on a server started without `-A`, whatever its arguments:
/// memcached 1.6.40 and later (1.6.18 to 1.6.39: `ERROR: shutdown not
/// enabled`, which clients read as an unknown command).
pub const SHUTDOWN_NOT_ENABLED: &str = "SERVER_ERROR: shutdown not enabled";
/// `stats detail` with a word other than `on`, `off` or `dump`.
pub const STATS_DETAIL_USAGE: &str = "CLIENT_ERROR usage: stats detail on|off|dump";
/// `stats cachedump` on a server started with key dumps off (`-X`).
pub const CACHEDUMP_NOT_ALLOWED: &str = "CLIENT_ERROR stats cachedump not allowed";
/// `stats cachedump` with fewer than two arguments.
pub const BAD_COMMAND_LINE: &str = "CLIENT_ERROR bad command line";
/// `stats cachedump` with a slab class of 64 or more.
pub const ILLEGAL_SLAB_ID: &str = "CLIENT_ERROR Illegal slab id";
/// `lru_crawler metadump` with the LRU crawler disabled.
pub const LRU_CRAWLER_DISABLED: &str = "CLIENT_ERROR lru crawler disabled";
/// `lru_crawler metadump` on a server started with key dumps off (`-X`).
pub const METADUMP_NOT_ALLOWED: &str = "ERROR metadump not allowed";
/// `lru_crawler metadump` with other requests pipelined before it in the
/// same read.
pub const METADUMP_PIPELINED: &str = "ERROR cannot pipeline other commands before metadump";
/// `watch` on a server whose logger is off.
pub const WATCH_NOT_ALLOWED: &str = "CLIENT_ERROR watch commands not allowed";
/// `watch` with other requests pipelined before it in the same read.
pub const WATCH_PIPELINED: &str = "ERROR cannot pipeline other commands before watch";
/// `watch` with an argument it does not know, for [`line`] ([`ERROR`] is
/// the same as a whole line).
pub const UNKNOWN: &str = "ERROR";
/// A connection accepted over the connection limit (`-c`): written to the
/// socket as is, then the connection is closed.
pub const TOO_MANY_CONNECTIONS_LINE: &[u8] = b"ERROR Too many open connections\r\n";
/// `-Y` (authfile): a request before the client authenticated.
pub const UNAUTHENTICATED: &str = "CLIENT_ERROR unauthenticated";
/// `-Y`: a `set` whose `<user> <password>` matches no authfile entry.
pub const AUTHENTICATION_FAILURE: &str = "CLIENT_ERROR authentication failure";
/// `-Y`: the authentication `set`'s data block does not end in `\r\n`.
pub const BAD_TERMINATION: &str = "CLIENT_ERROR bad command line termination";
/// `-Y`: the authentication `set`'s data is not `<user> <password>`.
pub const BAD_AUTH_TOKEN_FORMAT: &str = "CLIENT_ERROR bad authentication token format";

/// `VERSION <version>\r\n`: the `version` command's reply.
pub fn version(out: &mut Vec<u8>, version: &str) {
    out.extend_from_slice(b"VERSION ");
    out.extend_from_slice(version.as_bytes());
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

    /// The whole-line forms are their `&str` forms with `\r\n`.
    #[test]
    fn whole_lines_match_their_text() {
        for (text, whole) in [
            (OUT_OF_MEMORY_STORING, OUT_OF_MEMORY_STORING_LINE),
            (TOO_LARGE, TOO_LARGE_LINE),
            (UNKNOWN, ERROR),
            ("ERROR Too many open connections", TOO_MANY_CONNECTIONS_LINE),
        ] {
            let mut out = Vec::new();
            line(&mut out, text);
            assert_eq!(out, whole, "{text}");
        }
        let mut out = Vec::new();
        version(&mut out, "1.6.18");
        assert_eq!(out, b"VERSION 1.6.18\r\n");
    }
}
