//! Key dump: memcached's `lru_crawler metadump` line format, and larder's
//! prefix filter.
//!
//! # Format (memcached 1.6.18, checked against `/usr/bin/memcached`)
//!
//! One line per live (not expired, not flushed) item, `\n`-terminated, and a
//! final `END\r\n`:
//!
//! ```text
//! key=<uriencoded key> exp=<unix expiry or -1> la=<unix last access> cas=<cas> fetch=<yes|no> cls=<class id> size=<item bytes> flags=<client flags>\n
//! ...
//! END\r\n
//! ```
//!
//! Recorded from memcached 1.6.18:
//! `key=foo%3A1 exp=1795260483 la=1795260383 cas=1 fetch=yes cls=1 size=71`,
//! `key=sp%25ace%C3%A9 exp=-1 la=1795260383 cas=6 fetch=no cls=1 size=68`;
//! memcached 1.6.24 appended ` flags=<client flags>` (1.6.38:
//! `key=k exp=-1 la=1795745413 cas=2 fetch=no cls=1 size=67 flags=5`), and
//! `size=` is the item's size as memcached counts it, the same as `me`'s.
//! memcached 1.6.40 formats the line field by field, each followed by a
//! space, so the line ends `flags=5 \n` (1.6.45:
//! `key=k exp=-1 la=1795769373 cas=3 fetch=yes cls=1 size=61 flags=0 `);
//! larder follows it, and the server begins the dump with `OK\r\n` as
//! 1.6.43 does.
//! The key is URI-encoded as memcached's `uriencode` does: every byte except
//! ASCII letters, digits and `-._~` becomes `%XX` (upper-case hex); see
//! [`crate::escape`] for how this relates to the escaping of `stats` listings.
//! larder has no slab classes: `cls` is whatever the server reports
//! (suggested: 1 for every item, which tools that group by class handle).
//!
//! # Commands
//!
//! `lru_crawler metadump all` dumps everything; memcached also accepts a
//! comma-separated list of class ids (`1,2`) and `hash`; larder treats any
//! class list as `all`. larder's extension: an optional extra token
//! `prefix=<p>` (`lru_crawler metadump all prefix=user`) restricts the dump
//! to keys whose prefix (bytes before the delimiter) is exactly `<p>`;
//! [`MetadumpArgs::parse`] parses the tokens after `lru_crawler metadump`.
//! Replies memcached gives that the server should keep:
//! `BUSY currently processing crawler request`, `ERROR metadump not allowed`,
//! `ERROR cannot pipeline other commands before metadump`.
//!
//! Streaming without stopping the server is the server's and store's job:
//! walk the store one shard (or segment) at a time under that shard's lock,
//! encode the live items of the shard into the connection's buffer with
//! [`write_line`], release, flush when the buffer is large, move on; then
//! [`write_end`].

use crate::util::push_u64;

/// The metadata of one item, as `metadump` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadumpItem<'a> {
    pub key: &'a [u8],
    /// Absolute unix expiry time; `None` = never (`exp=-1`).
    pub exptime: Option<u64>,
    /// Absolute unix time of the last access.
    pub last_access: u64,
    pub cas: u64,
    /// Fetched at least once since stored.
    pub fetched: bool,
    pub class: u32,
    /// The item's size as memcached counts it (what `me` reports).
    pub size: u64,
    /// The client flags (memcached 1.6.24 added `flags=`).
    pub flags: u32,
}

/// Appends `key` URI-encoded like memcached's `uriencode` (defined with
/// the listings' escaping in [`crate::escape`], which explains both).
pub use crate::escape::uriencode;

/// Appends one metadump line (with its `\n`).
pub fn write_line(out: &mut Vec<u8>, it: &MetadumpItem<'_>) {
    out.extend_from_slice(b"key=");
    uriencode(out, it.key);
    out.extend_from_slice(b" exp=");
    match it.exptime {
        Some(e) => push_u64(out, e),
        None => out.extend_from_slice(b"-1"),
    }
    out.extend_from_slice(b" la=");
    push_u64(out, it.last_access);
    out.extend_from_slice(b" cas=");
    push_u64(out, it.cas);
    out.extend_from_slice(if it.fetched { b" fetch=yes" } else { b" fetch=no" });
    out.extend_from_slice(b" cls=");
    push_u64(out, it.class as u64);
    out.extend_from_slice(b" size=");
    push_u64(out, it.size);
    out.extend_from_slice(b" flags=");
    push_u64(out, u64::from(it.flags));
    // memcached 1.6.40's unrolled formatter ends every field with a space,
    // the last one too.
    out.extend_from_slice(b" \n");
}

/// Appends the terminating `END\r\n`.
pub fn write_end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"END\r\n");
}

/// Parsed arguments of `lru_crawler metadump <classes|all|hash> [prefix=<p>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadumpArgs<'a> {
    /// The class selector as given (`all`, `hash`, `1,2,...`).
    pub classes: &'a [u8],
    /// Only keys with exactly this prefix.
    pub prefix: Option<&'a [u8]>,
}

impl<'a> MetadumpArgs<'a> {
    /// `tokens`: what follows `lru_crawler metadump`. `None` when the tokens
    /// are not a valid metadump request (memcached answers `ERROR`).
    pub fn parse(tokens: &[&'a [u8]]) -> Option<Self> {
        match tokens {
            [classes] => Some(MetadumpArgs { classes, prefix: None }),
            [classes, p] => p.strip_prefix(b"prefix=").map(|prefix| MetadumpArgs { classes, prefix: Some(prefix) }),
            _ => None,
        }
    }

    /// Whether `key` passes the prefix filter.
    #[inline]
    pub fn matches(&self, key: &[u8], delimiter: u8) -> bool {
        match self.prefix {
            None => true,
            Some(p) => key.len() > p.len() && key.starts_with(p) && key[p.len()] == delimiter,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_match_memcached() {
        let mut out = Vec::new();
        write_line(
            &mut out,
            &MetadumpItem {
                key: b"foo:1",
                exptime: Some(1795260483),
                last_access: 1795260383,
                cas: 1,
                fetched: true,
                class: 1,
                size: 71,
                flags: 0,
            },
        );
        write_line(
            &mut out,
            &MetadumpItem {
                key: "sp%aceé".as_bytes(),
                exptime: None,
                last_access: 1795260383,
                cas: 6,
                fetched: false,
                class: 1,
                size: 68,
                flags: 5,
            },
        );
        write_end(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "key=foo%3A1 exp=1795260483 la=1795260383 cas=1 fetch=yes cls=1 size=71 flags=0 \n\
             key=sp%25ace%C3%A9 exp=-1 la=1795260383 cas=6 fetch=no cls=1 size=68 flags=5 \n\
             END\r\n"
        );
        let mut e = Vec::new();
        uriencode(&mut e, b"aZ09-._~ /:\x00\xff");
        assert_eq!(e, b"aZ09-._~%20%2F%3A%00%FF");
    }

    #[test]
    fn args_and_filter() {
        let a = MetadumpArgs::parse(&[b"all"]).unwrap();
        assert!(a.matches(b"anything", b':'));
        let a = MetadumpArgs::parse(&[b"all", b"prefix=user"]).unwrap();
        assert_eq!(a.prefix, Some(&b"user"[..]));
        assert!(a.matches(b"user:1", b':'));
        assert!(!a.matches(b"users:1", b':'));
        assert!(!a.matches(b"user", b':'));
        assert!(!a.matches(b"item:1", b':'));
        assert!(MetadumpArgs::parse(&[b"all", b"user"]).is_none());
        assert!(MetadumpArgs::parse(&[]).is_none());
    }
}
