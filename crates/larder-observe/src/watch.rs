//! `watch`: memcached's log stream line formats.
//!
//! # Format (memcached 1.6.18, checked against `/usr/bin/memcached`)
//!
//! `watch [fetchers|mutations|evictions|...]` answers `OK\r\n`, then streams
//! one `\n`-terminated line per event (no `END`). No argument means
//! `fetchers`; an unknown argument is `ERROR`. Lines (keys URI-encoded as in
//! [`crate::metadump::uriencode`]):
//!
//! ```text
//! ts=<sec>.<usec> gid=<n> type=item_get key=<k> status=<found|not_found|flushed|expired> clsid=<c> cfd=<fd> size=<value bytes>
//! ts=<sec>.<usec> gid=<n> type=item_store key=<k> status=<not_stored|stored|exists|not_found|too_large|no_memory> cmd=<add|set|replace|append|prepend|cas> ttl=<s> clsid=<c> cfd=<fd> size=<value bytes>
//! ts=<sec>.<usec> gid=<n> type=eviction key=<k> fetch=<yes|no> ttl=<s left or -1> la=<s since last access> clsid=<c> size=<value bytes>
//! ts=<sec>.<usec> gid=<n> type=deleted key=<k> cmd=<delete|md> clsid=<c> size=<value bytes>
//! ts=<sec>.<usec> gid=<n> type=conn_new rip=<ip|unix> rport=<port|0> transport=<tcp|local> cfd=<fd>
//! ts=<sec>.<usec> gid=<n> type=conn_close rip=<ip|unix> rport=<port|0> transport=<tcp|local> reason=<error|normal|idle_timeout|shutdown> cfd=<fd>
//! ```
//!
//! Recorded from memcached 1.6.18:
//! `ts=1795260382.101149 gid=3 type=item_store key=foo%3A1 status=stored cmd=set ttl=0 clsid=1 cfd=26 size=3`,
//! `ts=1795260382.101152 gid=4 type=item_get key=foo%3A2 status=not_found clsid=0 cfd=26 size=0`.
//! Details that matter for byte equality:
//!
//! * `<usec>` is printed **without zero padding** (`printf("%d")`): 5 us
//!   after a second prints `ts=1795260382.5`. [`Timestamp`] reproduces it.
//! * `size` is the value length without `\r\n`; a miss has `clsid=0 size=0`.
//! * `gid` is one global sequence over all log entries.
//! * memcached's store path logs an `item_get` (`not_found` or `found`)
//!   before the `item_store` of a `set`, and `delete`, `touch`, `incr`
//!   log an `item_get`: mutations are `item_store` events only.
//! * `ttl` of `item_store` is the relative TTL given (0 = none); of
//!   `eviction` the seconds left (-1 = none).

use crate::metadump::uriencode;
use crate::util::{push_i64, push_u64};

/// What a watcher asked for (`watch` arguments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchFlags {
    pub fetchers: bool,
    pub mutations: bool,
    pub evictions: bool,
    pub rawcmds: bool,
    pub sysevents: bool,
    pub connevents: bool,
    pub proxyreqs: bool,
    pub proxyevents: bool,
    pub proxyuser: bool,
    /// `deletions` (memcached 1.6.20): one `type=deleted` line per item a
    /// `delete` or `md` removed.
    pub deletions: bool,
}

impl WatchFlags {
    /// Parses the tokens after `watch`; `None` for an unknown word
    /// (memcached answers `ERROR`). No tokens = `fetchers`.
    ///
    /// As memcached 1.6.40 and later (its new request parser compares a
    /// token with `strncmp(token, word, token_len)`), a token names the
    /// first word in memcached's order that it begins: `watch fetch` is
    /// `fetchers`, `watch proxy` is `proxyreqs`. 1.6.18 to 1.6.39 wanted
    /// the whole word.
    pub fn parse(tokens: &[&[u8]]) -> Option<Self> {
        let mut f = WatchFlags::default();
        if tokens.is_empty() {
            f.fetchers = true;
            return Some(f);
        }
        for t in tokens {
            // memcached 1.6.45's order of comparisons (proto_text.c).
            let words: [(&[u8], &mut bool); 10] = [
                (b"rawcmds", &mut f.rawcmds),
                (b"evictions", &mut f.evictions),
                (b"fetchers", &mut f.fetchers),
                (b"mutations", &mut f.mutations),
                (b"sysevents", &mut f.sysevents),
                (b"connevents", &mut f.connevents),
                (b"proxyreqs", &mut f.proxyreqs),
                (b"proxyevents", &mut f.proxyevents),
                (b"proxyuser", &mut f.proxyuser),
                (b"deletions", &mut f.deletions),
            ];
            let field = words.into_iter().find(|(word, _)| !t.is_empty() && word.starts_with(t))?;
            *field.1 = true;
        }
        Some(f)
    }
}

/// Wall-clock time of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timestamp {
    pub secs: u64,
    pub usecs: u32,
}

impl Timestamp {
    pub fn now() -> Self {
        let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Timestamp { secs: d.as_secs(), usecs: d.subsec_micros() }
    }
}

fn head(out: &mut Vec<u8>, ts: Timestamp, gid: u64, ty: &[u8]) {
    out.extend_from_slice(b"ts=");
    push_u64(out, ts.secs);
    out.push(b'.');
    push_u64(out, ts.usecs as u64);
    out.extend_from_slice(b" gid=");
    push_u64(out, gid);
    out.extend_from_slice(b" type=");
    out.extend_from_slice(ty);
    out.extend_from_slice(b" key=");
}

/// `status=` of an `item_get` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetStatus {
    NotFound,
    Found,
    Flushed,
    Expired,
}

/// `status=` of an `item_store` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreStatus {
    NotStored,
    Stored,
    Exists,
    NotFound,
    TooLarge,
    NoMemory,
}

/// `cmd=` of an `item_store` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreCmd {
    Add,
    Set,
    Replace,
    Append,
    Prepend,
    Cas,
}

/// `type=item_get` (watch `fetchers`).
// One argument per field of memcached's line, in its order. A parameter
// struct would read better but changes the caller in larder-server/src too.
#[allow(clippy::too_many_arguments)]
pub fn item_get(out: &mut Vec<u8>, ts: Timestamp, gid: u64, key: &[u8], status: GetStatus, clsid: u32, cfd: i32, size: u64) {
    head(out, ts, gid, b"item_get");
    uriencode(out, key);
    out.extend_from_slice(match status {
        GetStatus::NotFound => b" status=not_found",
        GetStatus::Found => b" status=found",
        GetStatus::Flushed => b" status=flushed",
        GetStatus::Expired => b" status=expired",
    });
    out.extend_from_slice(b" clsid=");
    push_u64(out, clsid as u64);
    out.extend_from_slice(b" cfd=");
    push_i64(out, cfd as i64);
    out.extend_from_slice(b" size=");
    push_u64(out, size);
    out.push(b'\n');
}

/// `type=item_store` (watch `mutations`).
// One argument per field of memcached's line, in its order. A parameter
// struct would read better but changes the caller in larder-server/src too.
#[allow(clippy::too_many_arguments)]
pub fn item_store(
    out: &mut Vec<u8>,
    ts: Timestamp,
    gid: u64,
    key: &[u8],
    status: StoreStatus,
    cmd: StoreCmd,
    ttl: u32,
    clsid: u32,
    cfd: i32,
    size: u64,
) {
    head(out, ts, gid, b"item_store");
    uriencode(out, key);
    out.extend_from_slice(match status {
        StoreStatus::NotStored => b" status=not_stored",
        StoreStatus::Stored => b" status=stored",
        StoreStatus::Exists => b" status=exists",
        StoreStatus::NotFound => b" status=not_found",
        StoreStatus::TooLarge => b" status=too_large",
        StoreStatus::NoMemory => b" status=no_memory",
    });
    out.extend_from_slice(match cmd {
        StoreCmd::Add => b" cmd=add",
        StoreCmd::Set => b" cmd=set",
        StoreCmd::Replace => b" cmd=replace",
        StoreCmd::Append => b" cmd=append",
        StoreCmd::Prepend => b" cmd=prepend",
        StoreCmd::Cas => b" cmd=cas",
    });
    out.extend_from_slice(b" ttl=");
    push_u64(out, ttl as u64);
    out.extend_from_slice(b" clsid=");
    push_u64(out, clsid as u64);
    out.extend_from_slice(b" cfd=");
    push_i64(out, cfd as i64);
    out.extend_from_slice(b" size=");
    push_u64(out, size);
    out.push(b'\n');
}

/// `type=eviction` (watch `evictions`): `ttl` seconds left (-1 = none),
/// `la` seconds since last access.
// One argument per field of memcached's line, in its order. A parameter
// struct would read better but changes the caller in larder-server/src too.
#[allow(clippy::too_many_arguments)]
pub fn eviction(out: &mut Vec<u8>, ts: Timestamp, gid: u64, key: &[u8], fetched: bool, ttl: i64, la: u32, clsid: u32, size: u64) {
    head(out, ts, gid, b"eviction");
    uriencode(out, key);
    out.extend_from_slice(if fetched { b" fetch=yes" } else { b" fetch=no" });
    out.extend_from_slice(b" ttl=");
    push_i64(out, ttl);
    out.extend_from_slice(b" la=");
    push_u64(out, la as u64);
    out.extend_from_slice(b" clsid=");
    push_u64(out, clsid as u64);
    out.extend_from_slice(b" size=");
    push_u64(out, size);
    out.push(b'\n');
}

/// `cmd=` of a `type=deleted` line: the command that removed the item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteCmd {
    Delete,
    Md,
}

/// `type=deleted` (watch `deletions`, memcached 1.6.20): an item a text
/// `delete` or a meta `md` removed (or, `md x`, emptied: then `size` is 0,
/// the emptied item's). `size`: the value length without `\r\n`.
pub fn deleted(out: &mut Vec<u8>, ts: Timestamp, gid: u64, key: &[u8], cmd: DeleteCmd, clsid: u32, size: u64) {
    head(out, ts, gid, b"deleted");
    uriencode(out, key);
    out.extend_from_slice(match cmd {
        DeleteCmd::Delete => b" cmd=delete",
        DeleteCmd::Md => b" cmd=md",
    });
    out.extend_from_slice(b" clsid=");
    push_u64(out, clsid as u64);
    out.extend_from_slice(b" size=");
    push_u64(out, size);
    out.push(b'\n');
}

/// `type=conn_new` (`reason: None`) or `type=conn_close` (watch
/// `connevents`); `rip`/`rport` as memcached prints them (IPv6 without
/// brackets; a Unix socket peer is `unix` / `0`).
// One argument per field of memcached's line, in its order. A parameter
// struct would read better but changes the caller in larder-server/src too.
#[allow(clippy::too_many_arguments)]
pub fn conn_event(
    out: &mut Vec<u8>,
    ts: Timestamp,
    gid: u64,
    ty: &[u8],
    rip: &[u8],
    rport: &[u8],
    transport: &[u8],
    reason: Option<&[u8]>,
    cfd: i32,
) {
    head(out, ts, gid, ty);
    // head() ends with " key=": conn lines have no key.
    out.truncate(out.len() - b" key=".len());
    out.extend_from_slice(b" rip=");
    out.extend_from_slice(rip);
    out.extend_from_slice(b" rport=");
    out.extend_from_slice(rport);
    out.extend_from_slice(b" transport=");
    out.extend_from_slice(transport);
    if let Some(r) = reason {
        out.extend_from_slice(b" reason=");
        out.extend_from_slice(r);
    }
    out.extend_from_slice(b" cfd=");
    push_i64(out, cfd as i64);
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_match_memcached() {
        let ts = Timestamp { secs: 1795260382, usecs: 101149 };
        let mut out = Vec::new();
        item_store(&mut out, ts, 3, b"foo:1", StoreStatus::Stored, StoreCmd::Set, 0, 1, 26, 3);
        item_get(&mut out, Timestamp { secs: 1795260382, usecs: 101152 }, 4, b"foo:2", GetStatus::NotFound, 0, 26, 0);
        item_get(&mut out, Timestamp { secs: 1795260383, usecs: 402584 }, 23, "sp%aceé".as_bytes(), GetStatus::NotFound, 0, 26, 0);
        eviction(&mut out, Timestamp { secs: 5, usecs: 7 }, 9, b"a b", true, -1, 12, 1, 100);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ts=1795260382.101149 gid=3 type=item_store key=foo%3A1 status=stored cmd=set ttl=0 clsid=1 cfd=26 size=3\n\
             ts=1795260382.101152 gid=4 type=item_get key=foo%3A2 status=not_found clsid=0 cfd=26 size=0\n\
             ts=1795260383.402584 gid=23 type=item_get key=sp%25ace%C3%A9 status=not_found clsid=0 cfd=26 size=0\n\
             ts=5.7 gid=9 type=eviction key=a%20b fetch=yes ttl=-1 la=12 clsid=1 size=100\n"
        );
    }

    #[test]
    fn flags() {
        let f = WatchFlags::parse(&[b"fetchers", b"mutations", b"evictions"]).unwrap();
        assert!(f.fetchers && f.mutations && f.evictions && !f.rawcmds);
        assert_eq!(WatchFlags::parse(&[]).unwrap(), WatchFlags { fetchers: true, ..Default::default() });
        assert!(WatchFlags::parse(&[b"bogus"]).is_none());
        let d = WatchFlags::parse(&[b"deletions"]).unwrap();
        assert_eq!(d, WatchFlags { deletions: true, ..Default::default() });
        // 1.6.40+: a token that begins a word names the first such word.
        assert_eq!(WatchFlags::parse(&[b"fetch"]).unwrap(), WatchFlags { fetchers: true, ..Default::default() });
        assert_eq!(WatchFlags::parse(&[b"proxy"]).unwrap(), WatchFlags { proxyreqs: true, ..Default::default() });
        assert_eq!(WatchFlags::parse(&[b"del"]).unwrap(), d);
        assert!(WatchFlags::parse(&[b"deletionsx"]).is_none());
        assert!(WatchFlags::parse(&[b"fetchers", b"x"]).is_none());
    }

    #[test]
    fn deleted_line_matches_memcached() {
        // memcached's logger.c format: key URI-encoded, size without CRLF.
        let mut out = Vec::new();
        deleted(&mut out, Timestamp { secs: 1795260382, usecs: 5 }, 7, b"a b", DeleteCmd::Delete, 1, 3);
        deleted(&mut out, Timestamp { secs: 1795260382, usecs: 6 }, 8, b"k", DeleteCmd::Md, 1, 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ts=1795260382.5 gid=7 type=deleted key=a%20b cmd=delete clsid=1 size=3\n\
             ts=1795260382.6 gid=8 type=deleted key=k cmd=md clsid=1 size=0\n"
        );
    }
}
