//! What parsing one request can come to ([`Outcome`]), and what the text
//! and meta parsers share in deciding it: the [`Limits`], memcached's item
//! size rule ([`item_size`]) and key length, the storage commands, and the
//! error lines both send. Both parsers import this module; neither imports
//! the other for it (the text parser hands `mg ms md ma mn me` lines to
//! the meta parser, one way only).

/// Limits that shape parsing decisions.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// `-I`: the largest item the server accepts. A storage command whose
    /// item would be larger is answered `SERVER_ERROR object too large for
    /// cache` and its data block is swallowed without being buffered.
    ///
    /// The size compared is memcached's: see [`item_size`]. memcached started
    /// with `-C` (no CAS) stores 8 bytes less per item; a server emulating
    /// that passes `item_size_max + 8`.
    pub item_size_max: usize,
    /// Longest command line accepted without a newline before the connection
    /// is closed (memcached: 2048, except for `get`/`gets` lines which may be
    /// longer, up to `max_get_line`).
    pub max_line: usize,
    /// Upper bound on a multi-get line; beyond it the connection is closed.
    pub max_get_line: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            item_size_max: 1024 * 1024,
            max_line: 2048,
            max_get_line: 1024 * 1024,
        }
    }
}

/// The storage commands; `Cas` carries the client's CAS unique.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreCommand {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    Cas(u64),
}

/// What parsing found at the front of the buffer: a request of type `R`
/// (the text parser's [`Parsed`](crate::text::Parsed) is this with its
/// [`Request`](crate::text::Request); the meta parser makes a
/// [`MetaRequest`](crate::meta::MetaRequest), which the text parser wraps).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome<'a, R> {
    /// A complete request that used `consumed` bytes.
    Request {
        request: R,
        consumed: usize,
    },
    /// Not enough bytes yet. `needed`, when known, is the total length the
    /// buffer must reach for this request to complete (a data block).
    Incomplete { needed: Option<usize> },
    /// A bad request: reply with `error` (a full line without `\r\n`, e.g.
    /// `"CLIENT_ERROR bad command line format"`), drop `consumed` bytes, then
    /// discard the next `swallow` bytes as they arrive.
    Error {
        error: &'static str,
        consumed: usize,
        swallow: usize,
    },
    /// A bad request whose last token was `noreply`: memcached suppresses
    /// even the error. Drop `consumed` bytes, swallow `swallow` more, send
    /// nothing. (For example `set k x 0 5 noreply`, `incr k z noreply`, or a
    /// data block not ending in `\r\n` after `set ... noreply`.)
    Silent { consumed: usize, swallow: usize },
    /// A storage command whose item can never fit in `item_size_max`.
    /// Reply `SERVER_ERROR object too large for cache` ([`TOO_LARGE`])
    /// unless `noreply`, drop `consumed` bytes (the command line) and swallow
    /// `swallow` more (the data block and its `\r\n`, never buffered). For
    /// `StoreCommand::Set` memcached also unlinks any existing item under
    /// `key`, so stale data does not survive a failed set.
    TooLarge {
        command: StoreCommand,
        key: &'a [u8],
        noreply: bool,
        consumed: usize,
        swallow: usize,
    },
    /// memcached closes the connection here (an overlong line, for example).
    Close,
}

impl<'a, R> Outcome<'a, R> {
    /// The same outcome with its request, if any, made by `f`.
    #[inline]
    pub fn map<S>(self, f: impl FnOnce(R) -> S) -> Outcome<'a, S> {
        match self {
            Outcome::Request { request, consumed } => Outcome::Request { request: f(request), consumed },
            Outcome::Incomplete { needed } => Outcome::Incomplete { needed },
            Outcome::Error { error, consumed, swallow } => Outcome::Error { error, consumed, swallow },
            Outcome::Silent { consumed, swallow } => Outcome::Silent { consumed, swallow },
            Outcome::TooLarge { command, key, noreply, consumed, swallow } => {
                Outcome::TooLarge { command, key, noreply, consumed, swallow }
            }
            Outcome::Close => Outcome::Close,
        }
    }
}

/// `ERROR`: unknown command or wrong number of tokens.
pub const ERROR: &str = "ERROR";
/// Bad key length, unparsable storage numbers, bad `verbosity` level.
pub const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format";
/// A data block that does not end in `\r\n`.
pub const BAD_DATA_CHUNK: &str = "CLIENT_ERROR bad data chunk";
/// An item larger than `-I`.
pub const TOO_LARGE: &str = "SERVER_ERROR object too large for cache";
/// memcached's `KEY_MAX_LENGTH`.
pub const KEY_MAX_LENGTH: usize = 250;

/// memcached's `sizeof(item)` on 64-bit builds.
const ITEM_HEADER: usize = 48;
/// The CAS value stored with every item unless memcached runs with `-C`.
const ITEM_CAS: usize = 8;

/// The size memcached compares against `-I` for a stored item: header, CAS,
/// key plus a NUL, 4 bytes of client flags when they are non-zero, and the
/// value with its `\r\n`. `value_len` excludes the `\r\n`.
///
/// With `-I 1m` and key `k`, flags 0: a 1048516-byte value is stored and a
/// 1048517-byte one is too large (checked against memcached 1.6.18).
/// memcached applies the same rule to the combined value of an `append` or
/// `prepend` (with the existing item's flags) and answers `NOT_STORED` when
/// it fails: that check is the server's.
pub fn item_size(key_len: usize, flags: u32, value_len: usize) -> usize {
    let flags_len = if flags == 0 { 0 } else { 4 };
    ITEM_HEADER + ITEM_CAS + key_len + 1 + flags_len + value_len + 2
}
