//! The memcached text protocol request parser.
//!
//! [`parse`] looks at the front of a connection's read buffer and says one of:
//! here is a complete request and how many bytes it used; I need more bytes;
//! this request is bad (send this exact error, drop these bytes, then swallow
//! that many more as they arrive); the request is bad but asked for `noreply`
//! (drop and swallow silently); a storage command's item can never fit; or
//! close the connection (what memcached does with a line that is too long and
//! is not a `get`, or with an HTTP request).
//!
//! The request line is read as memcached 1.6.40 and later read it (their
//! shared request parser, `proto_parser.c`, replaced 1.6.18's tokeniser; see
//! docs/differences.md for what 1.6.18 and 1.6.38 answered instead):
//!
//! * A line ends at `\n`; one `\r` before it is dropped. A line shorter
//!   than 4 bytes with its `\r\n` (so `\r\n`, ` \r\n`, `a\r\n`, `\n`) is
//!   `CLIENT_ERROR bad command line format`. A NUL byte is an ordinary byte
//!   of a token.
//! * Tokens are separated by one or more spaces (only `' '`: a tab is part of
//!   a token). Only the first 23 tokens are counted; the rest of the line is
//!   ignored, except by the get family, whose keys run to the end of the
//!   line and are all validated here.
//! * The command name is what comes before the line's first space, so a
//!   line starting with a space names no data command (` get k` is
//!   `ERROR`); only the administrative commands (`flush_all`, `verbosity`,
//!   `shutdown`, `cache_memlimit`, `slabs`, `lru`, `lru_crawler`,
//!   `extstore`, `refresh_certs`) are looked up by their first token, so
//!   leading spaces do not matter to them.
//! * A command missing a required token (`get`, `gat 0`, `set k 0 0`,
//!   `incr k`, `delete`, `mg`) is `CLIENT_ERROR bad command line format`;
//!   tokens beyond those a command reads are ignored (`touch k 1 2 3`
//!   touches). `noreply` is the line's last counted token, whatever came
//!   before it, and silences any reply sent as a single line (an unknown
//!   command's `ERROR` too).
//! * Numbers are read as memcached 1.6.45 reads them. The storage line's
//!   flags, exptime and length keep the rules of C's `strtoul`/`strtol`
//!   inside memcached's `safe_strto*` helpers: leading whitespace and a
//!   sign are accepted, the digits may be followed by whitespace and
//!   anything after it, values wider than the target are truncated (flags
//!   `4294967297` is `1`, exptime is an `int32_t`), and a negative value is
//!   refused by the unsigned readers only when it wraps to a value with the
//!   top bit set. Every other number (`gat`'s and `touch`'s exptime,
//!   `incr`/`decr`'s delta, `cas`'s unique, `flush_all`'s delay,
//!   `verbosity`, `cache_memlimit`) is read strictly, as memcached reads it
//!   from 1.6.40 (`gat`, `cas`, `flush_all`, `verbosity`, `cache_memlimit`)
//!   or 1.6.45 (`touch`, `incr`/`decr`): digits only, a `-` first where
//!   the number is signed, out of range refused ([`crate::number`]).
//!
//! The parser is stateless and never allocates: the server calls it again on
//! the same bytes when more arrive.

/// The keys of a multi-key command, split lazily from the line (no allocation).
/// Every key has already been validated by the parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keys<'a> {
    rest: &'a [u8],
}

impl<'a> Keys<'a> {
    /// Keys from a space-separated list (already validated).
    pub fn new(list: &'a [u8]) -> Self {
        Keys { rest: list }
    }
}

impl<'a> Iterator for Keys<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|&b| b != b' ')?;
        let rest = &self.rest[start..];
        let end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
        self.rest = &rest[end..];
        Some(&rest[..end])
    }
}

/// Administrative commands memcached 1.6.18 (as Debian builds it: with TLS
/// and extstore, without the debug-only `misbehave`/`debugtime`) recognises.
/// The parser only identifies them; the server interprets `args` and
/// answers as memcached does (often `ERROR`, or the feature-off message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminCommand {
    /// `slabs reassign <src> <dst>` / `slabs automove <0|1|2>` / `slabs automove ratio <r>`.
    Slabs,
    /// `lru tune|mode|temp_ttl ...` (at least one argument).
    Lru,
    /// `lru_crawler crawl|metadump|tocrawl|sleep|enable|disable ...`.
    LruCrawler,
    /// `watch [rawcmds|evictions|fetchers|mutations|...]`.
    Watch,
    /// `extstore <setting> <value> ...` (at least one argument).
    Extstore,
    /// `refresh_certs [noreply]` (memcached without TLS on answers
    /// `Error TLS not enabled`).
    RefreshCerts,
    /// larder's near-cache invalidation: `track stream|attach|detach ...`
    /// (not memcached's; see [`crate::track`]).
    Track,
}

use crate::block::{self, Block, Input, Shape};
use crate::meta::MetaRequest;
use crate::number::{safe_i64, strict_u64};
pub use crate::number::{safe_f64, safe_i32, safe_u32, strict_i32, strict_u32};
pub use crate::outcome::{item_size, Limits, Outcome, StoreCommand, BAD_DATA_CHUNK, BAD_FORMAT, ERROR, KEY_MAX_LENGTH, TOO_LARGE};

/// What [`parse`] found at the front of the buffer (see [`Outcome`]).
pub type Parsed<'a> = Outcome<'a, Request<'a>>;

/// A parsed request. Slices borrow the read buffer.
///
/// [`Request::Meta`] makes this a few hundred bytes (a base64 key is decoded
/// into a buffer inside it): boxing it would allocate per request.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// `get`/`gets` (cas = true for gets). Also the ancient `bget`.
    Get {
        keys: Keys<'a>,
        cas: bool,
    },
    /// `gat`/`gats`: get and touch. `exptime` is the raw protocol value,
    /// an `int32_t`. `keys` holds at least one key.
    Gat {
        exptime: i64,
        keys: Keys<'a>,
        cas: bool,
    },
    /// `set add replace append prepend cas`. `exptime` as for `Gat`.
    Store {
        command: StoreCommand,
        key: &'a [u8],
        flags: u32,
        exptime: i64,
        data: &'a [u8],
        noreply: bool,
    },
    Delete {
        key: &'a [u8],
        noreply: bool,
    },
    /// `incr` (incr = true) / `decr`.
    Arith {
        key: &'a [u8],
        incr: bool,
        delta: u64,
        noreply: bool,
    },
    Touch {
        key: &'a [u8],
        exptime: i64,
        noreply: bool,
    },
    /// `flush_all [delay] [noreply]`. `delay` may be zero or negative
    /// (both mean "now" in memcached).
    FlushAll {
        delay: i64,
        noreply: bool,
    },
    Version,
    /// `verbosity <level> [noreply]`; memcached clamps the level itself.
    Verbosity {
        level: u32,
        noreply: bool,
    },
    Quit,
    /// `stats [group ...]`: `args` is everything after `stats`, trimmed.
    Stats {
        args: &'a [u8],
    },
    /// `shutdown [graceful]`.
    Shutdown {
        graceful: bool,
    },
    /// `cache_memlimit <megabytes> [noreply]` (a 32-bit value, truncated as
    /// memcached does; range checks are the server's).
    CacheMemlimit {
        megabytes: u64,
        noreply: bool,
    },
    /// `debugtime <secs>`: test-only clock control; the server refuses it
    /// unless started with the test option.
    DebugTime {
        offset: i64,
    },
    /// An administrative command; see [`AdminCommand`]. `args` is the rest
    /// of the line after the command name, trimmed of spaces. `noreply`:
    /// the line's last counted token is `noreply`, which silences a reply
    /// memcached sends as one line (`OK`, `ERROR`, ...).
    Admin {
        command: AdminCommand,
        args: &'a [u8],
        noreply: bool,
    },
    /// A meta command (`mg ms md ma mn me`); see [`crate::meta`].
    Meta(MetaRequest<'a>),
}

/// `touch`, `gat`, `flush_all` with an unparsable time.
pub const INVALID_EXPTIME: &str = "CLIENT_ERROR invalid exptime argument";
/// `incr`/`decr` with an unparsable delta.
pub const INVALID_DELTA: &str = "CLIENT_ERROR invalid numeric delta argument";
/// `delete` with a time other than `0`, or extra tokens (two spaces, sic).
pub const DELETE_USAGE: &str = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]";
/// `shutdown` with an argument other than `graceful`. memcached started
/// without `-A` answers every `shutdown` line with `ERROR: shutdown not
/// enabled` before looking at arguments: a server emulating that replaces
/// this error (compare with this constant) as well as the request.
pub const INVALID_SHUTDOWN: &str = "CLIENT_ERROR invalid shutdown mode";

/// memcached's `MAX_TOKENS` counts a terminal pseudo-token, so a command sees
/// at most this many real tokens.
const MAX_REAL_TOKENS: usize = 23;

/// memcached's longest run of leading spaces tolerated before a long `get`.
const MAX_LEADING_SPACES: usize = 100;

/// Parse one request from the front of `buf`.
///
/// Framing and limits (the line length rules as in memcached 1.6.18, which
/// 1.6.45 keeps; the rest as 1.6.40 and later, see the module docs):
///
/// * Without a `\n` in `buf`: wait while `buf` holds at most
///   `limits.max_line` bytes. Beyond that, keep waiting only for a line that
///   starts (after at most 100 spaces) with `get ` or `gets ` and is at most
///   `limits.max_get_line` long; otherwise [`Parsed::Close`]. memcached only
///   applies the limit to bytes still lacking a newline, so a complete line
///   already in `buf` is parsed whatever its length.
/// * Unknown commands answer `ERROR` (silenced by a final `noreply`), but an
///   unknown line of at least two counted tokens whose last starts with
///   `HTTP/` closes the connection.
/// * A missing required token is [`BAD_FORMAT`], never silent (memcached
///   reads `noreply` only once a command has its tokens); argument errors
///   after that are suppressed by a final `noreply` token
///   ([`Parsed::Silent`]). A misspelled `noreply` is just an extra token
///   (`set k 0 0 1 norepl` stores and replies).
/// * `delete <key>` ignores any tokens after the key but a final `noreply`
///   (memcached 1.6.40; 1.6.18 accepted only `0` there).
/// * A storage line refused once its length is read swallows its data block
///   (`swallow` in [`Parsed::Error`] / [`Parsed::Silent`]); one refused
///   before (too few tokens, a length it cannot read) swallows nothing.
/// * A storage command's item size is checked (see [`item_size`]) as soon as
///   its line is complete; its data block is then swallowed unbuffered
///   ([`Parsed::TooLarge`]). Otherwise the data block is exactly `bytes + 2`
///   bytes whatever they contain; if its last two are not `\r\n` the whole
///   block is consumed and [`BAD_DATA_CHUNK`] answered, so what follows is
///   parsed as the next command.
/// * Meta commands (`mg ms md ma mn me`) return [`Request::Meta`]; their
///   rules are in [`crate::meta`]. An `ms` data block is framed like a
///   `set`'s (too large: [`Parsed::TooLarge`] with `StoreCommand::Set`; bad
///   chunk: [`BAD_DATA_CHUNK`], never silent).
pub fn parse<'a>(buf: &'a [u8], limits: &Limits) -> Parsed<'a> {
    parse_input(Input::new(buf), limits)
}

/// [`parse`], for a request whose data block's value was received aside
/// (`input.aside`): `input.buf` holds its command line and the `\r\n`
/// after the value. See [`crate::block`].
pub fn parse_input<'a>(input: Input<'a>, limits: &Limits) -> Parsed<'a> {
    let buf = input.buf;
    let mut tokens = Tokens::new(buf);
    match tokens.scan(buf) {
        Some(consumed) => command(&tokens, input, consumed, limits),
        None => no_newline(buf, limits),
    }
}

/// The layout of the request at the front of `buf` after [`parse`] said it
/// is [`Parsed::Incomplete`] with `needed` known (a data block on its way).
pub fn waiting_shape(buf: &[u8], needed: usize) -> Option<Shape> {
    let head = buf.iter().position(|&b| b == b'\n')? + 1;
    let value = needed.checked_sub(head + 2)?;
    // `<command> <key> ...` (storage and `ms` alike), tokenised as the
    // parser does: only spaces separate tokens, so a `\r` inside a key is
    // part of it (the key is never the line's last token here).
    let key_len = buf[..head].split(|&b| b == b' ').filter(|t| !t.is_empty()).nth(1)?.len();
    Some(Shape { head, value, trailer: 2, key_len })
}

/// No complete line yet: wait, unless the bytes already exceed what
/// memcached tolerates without a newline.
fn no_newline<'a>(buf: &[u8], limits: &Limits) -> Parsed<'a> {
    if buf.len() <= limits.max_line {
        return Parsed::Incomplete { needed: None };
    }
    // Only a multi-get may legitimately be this long.
    let spaces = buf.iter().take_while(|&&b| b == b' ').count();
    let rest = &buf[spaces..];
    let is_get = rest.starts_with(b"get ") || rest.starts_with(b"gets ");
    if spaces > MAX_LEADING_SPACES || !is_get || buf.len() > limits.max_get_line {
        return Parsed::Close;
    }
    Parsed::Incomplete { needed: None }
}

/// The tokens of a line as memcached counts them (at most
/// [`MAX_REAL_TOKENS`]), kept as byte ranges so that "the rest of the line
/// after token i" stays available, plus what the get family needs to
/// validate keys past the token cap.
///
/// Only the first [`KEPT_TOKENS`] ranges are stored (no command reads further:
/// the longest is `cas` with `noreply`, 7 tokens) and the last counted one,
/// for the `noreply` and `HTTP/` checks: a small array to initialise on
/// every call.
struct Tokens<'a> {
    /// The command text: the line without its `\r\n`.
    line: &'a [u8],
    spans: [(usize, usize); KEPT_TOKENS],
    /// The last counted token.
    last: (usize, usize),
    /// Counted tokens (at most [`MAX_REAL_TOKENS`]).
    len: usize,
    /// Every token on the line, beyond the cap too.
    seen: usize,
    /// The longest token from the third on, over the whole line: the keys of
    /// `gat` (and, with the second token, of `get`).
    longest_tail: usize,
}

/// The bytes that end a token: a space or the line's `\n`. A table keeps
/// the per-byte loop to one load and one test.
static ENDS_TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    t[b' ' as usize] = true;
    t[b'\n' as usize] = true;
    t
};

/// How many token ranges [`Tokens`] stores.
const KEPT_TOKENS: usize = 8;

impl<'a> Tokens<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Tokens {
            line: buf,
            spans: [(0, 0); KEPT_TOKENS],
            last: (0, 0),
            len: 0,
            seen: 0,
            longest_tail: 0,
        }
    }

    /// One pass over the front of `buf`: find the end of the first line,
    /// splitting it into tokens on the way. `None` if there is no `\n` yet;
    /// otherwise the bytes the line occupies with its `\n`. (Filling `self`
    /// in place rather than returning a new `Tokens` saves a copy per call.)
    fn scan(&mut self, buf: &'a [u8]) -> Option<usize> {
        let mut i = 0;
        loop {
            while i < buf.len() && buf[i] == b' ' {
                i += 1;
            }
            let start = i;
            while i < buf.len() && !ENDS_TOKEN[usize::from(buf[i])] {
                i += 1;
            }
            match buf.get(i) {
                None => return None,
                Some(b' ') => self.push(start, i),
                Some(_) => {
                    // One `\r` before the `\n` is dropped, unless it is the
                    // whole line (memcached tests the line's length).
                    let end = if i > 1 && buf[i - 1] == b'\r' {
                        i - 1
                    } else {
                        i
                    };
                    if start < end {
                        self.push(start, end);
                    }
                    self.line = &buf[..end];
                    return Some(i + 1);
                }
            }
        }
    }

    fn push(&mut self, start: usize, end: usize) {
        if self.seen >= 2 {
            self.longest_tail = self.longest_tail.max(end - start);
        }
        if self.len < MAX_REAL_TOKENS {
            if self.len < KEPT_TOKENS {
                self.spans[self.len] = (start, end);
            }
            self.last = (start, end);
            self.len += 1;
        }
        self.seen += 1;
    }

    /// Token `i` (below [`KEPT_TOKENS`]); callers check `len` first.
    fn get(&self, i: usize) -> &'a [u8] {
        let (s, e) = self.spans[i];
        &self.line[s..e]
    }

    fn last(&self) -> &'a [u8] {
        let (s, e) = self.last;
        &self.line[s..e]
    }

    /// memcached's `set_noreply_maybe`: the last counted token is `noreply`.
    fn noreply(&self) -> bool {
        self.last() == b"noreply"
    }

    /// Everything after token `i` (untrimmed).
    fn after(&self, i: usize) -> &'a [u8] {
        &self.line[self.spans[i].1..]
    }
}

/// memcached's shortest request line, `\r\n` included: a two-letter
/// command with its line end.
const MIN_LINE: usize = 4;

/// Dispatch on the command name.
fn command<'a>(t: &Tokens<'a>, input: Input<'a>, consumed: usize, limits: &Limits) -> Parsed<'a> {
    let line = Line { consumed };
    if consumed < MIN_LINE {
        return line.error(BAD_FORMAT);
    }
    // The name is what precedes the line's first space: empty when the
    // line starts with one, which then only the administrative commands
    // (looked up by their first token) can match.
    let name = t.line.split(|&b| b == b' ').next().unwrap_or(b"");
    match name {
        b"get" => get(t, line, false),
        b"gets" => get(t, line, true),
        b"gat" => gat(t, line, false),
        b"gats" => gat(t, line, true),
        b"set" => store(t, input, line, StoreKind::Set, limits),
        b"add" => store(t, input, line, StoreKind::Add, limits),
        b"replace" => store(t, input, line, StoreKind::Replace, limits),
        b"append" => store(t, input, line, StoreKind::Append, limits),
        b"prepend" => store(t, input, line, StoreKind::Prepend, limits),
        b"cas" => store(t, input, line, StoreKind::Cas, limits),
        b"delete" => delete(t, line),
        b"incr" => arith(t, line, true),
        b"decr" => arith(t, line, false),
        b"touch" => touch(t, line),
        b"version" => line.request(Request::Version),
        b"quit" => line.request(Request::Quit),
        b"stats" => line.request(Request::Stats {
            args: trim(t.after(0)),
        }),
        b"watch" => admin(t, line, AdminCommand::Watch, 1),
        b"mg" | b"ms" | b"md" | b"ma" | b"mn" | b"me" => meta(name, t, input, consumed, limits),
        _ => by_first_token(t, line),
    }
}

/// A meta command's line-level checks, then [`crate::meta::parse`].
/// memcached 1.6.40's tokeniser refuses a flag token (from the third token
/// on; the fourth for `ms`, whose third is the length) that starts with
/// neither a letter (or one of ``[\\]^_` ``: bytes 65 to 122) nor a digit,
/// before anything else is read: the whole line is then a bad format, and
/// an `ms` data block is not swallowed. (1.6.18 to 1.6.38 answered the
/// flag's own error, `CLIENT_ERROR invalid flag` and the like.)
fn meta<'a>(name: &[u8], t: &Tokens<'a>, input: Input<'a>, consumed: usize, limits: &Limits) -> Parsed<'a> {
    if name != b"mn" {
        let first_flag = if name == b"ms" { 3 } else { 2 };
        let bad_flag = t
            .line
            .split(|&b| b == b' ')
            .filter(|w| !w.is_empty())
            .take(MAX_REAL_TOKENS)
            .skip(first_flag)
            .any(|w| !(65..123).contains(&w[0]) && !w[0].is_ascii_digit());
        if bad_flag {
            return Line { consumed }.error(BAD_FORMAT);
        }
    }
    crate::meta::parse(name, t.line, t.len, input, consumed, limits).map(Request::Meta)
}

/// A line whose name is none of the data commands: memcached looks its
/// first token up among the administrative commands; failing that it is
/// unknown.
fn by_first_token<'a>(t: &Tokens<'a>, line: Line) -> Parsed<'a> {
    if t.len == 0 {
        return line.error(ERROR);
    }
    match t.get(0) {
        b"flush_all" => flush_all(t, line),
        b"verbosity" => verbosity(t, line),
        b"shutdown" => shutdown(t, line),
        b"cache_memlimit" => cache_memlimit(t, line),
        b"debugtime" => debugtime(t, line),
        b"slabs" => admin(t, line, AdminCommand::Slabs, 1),
        b"lru" => admin(t, line, AdminCommand::Lru, 2),
        b"lru_crawler" => admin(t, line, AdminCommand::LruCrawler, 1),
        b"extstore" => admin(t, line, AdminCommand::Extstore, 2),
        b"refresh_certs" => admin(t, line, AdminCommand::RefreshCerts, 1),
        b"track" => admin(t, line, AdminCommand::Track, 2),
        _ => unknown(t, line),
    }
}

/// An unrecognised command: a line of at least two tokens whose last
/// counted one starts with `HTTP/` closes the connection; otherwise
/// `ERROR`, which a final `noreply` silences.
fn unknown<'a>(t: &Tokens<'a>, line: Line) -> Parsed<'a> {
    if t.len > 1 && t.last().starts_with(b"HTTP/") {
        return Parsed::Close;
    }
    line.fail(ERROR, t.noreply())
}

/// The command line's extent, to build results that consume exactly it.
#[derive(Clone, Copy)]
struct Line {
    consumed: usize,
}

impl Line {
    fn request(self, request: Request<'_>) -> Parsed<'_> {
        Parsed::Request {
            request,
            consumed: self.consumed,
        }
    }

    fn error<'a>(self, error: &'static str) -> Parsed<'a> {
        Parsed::Error {
            error,
            consumed: self.consumed,
            swallow: 0,
        }
    }

    /// An argument error: silent when the command asked for `noreply`.
    fn fail<'a>(self, error: &'static str, noreply: bool) -> Parsed<'a> {
        if noreply {
            Parsed::Silent {
                consumed: self.consumed,
                swallow: 0,
            }
        } else {
            self.error(error)
        }
    }
}

fn key_ok(key: &[u8]) -> bool {
    key.len() <= KEY_MAX_LENGTH
}

/// `get|gets <key>*`: at least one key, all of them at most 250 bytes.
/// (1.6.18's `bget` is gone since 1.6.40: `ERROR`.) A final `noreply` is
/// just a key.
fn get<'a>(t: &Tokens<'a>, line: Line, cas: bool) -> Parsed<'a> {
    if t.len < 2 {
        return line.error(BAD_FORMAT);
    }
    if !key_ok(t.get(1)) || t.longest_tail > KEY_MAX_LENGTH {
        return line.error(BAD_FORMAT);
    }
    line.request(Request::Get {
        keys: Keys::new(t.after(0)),
        cas,
    })
}

/// `gat|gats <exptime> <key>+`: at least one key; the exptime is checked
/// before the keys. A final `noreply` is just a key.
fn gat<'a>(t: &Tokens<'a>, line: Line, cas: bool) -> Parsed<'a> {
    if t.len < 3 {
        return line.error(BAD_FORMAT);
    }
    let exptime = match strict_i32(t.get(1)) {
        Some(v) => i64::from(v),
        None => return line.error(INVALID_EXPTIME),
    };
    if t.longest_tail > KEY_MAX_LENGTH {
        return line.error(BAD_FORMAT);
    }
    line.request(Request::Gat {
        exptime,
        keys: Keys::new(t.after(1)),
        cas,
    })
}

/// Storage commands, before the CAS unique is known.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StoreKind {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    Cas,
}

/// `<cmd> <key> <flags> <exptime> <bytes> [<cas unique>] ... [noreply]\r\n<data>\r\n`
///
/// memcached reads the length first: without five tokens, or with a
/// length it cannot use, the line is a bad format whatever its last token,
/// and nothing more is swallowed (the data line is then read as a command).
/// Once the length is known, a bad key, flags, exptime or CAS unique (a
/// `cas` needs a sixth token) is a bad format too, but the data block is
/// swallowed and a final `noreply` silences the error. Tokens between the
/// ones read and the last are ignored.
fn store<'a>(
    t: &Tokens<'a>,
    input: Input<'a>,
    line: Line,
    kind: StoreKind,
    limits: &Limits,
) -> Parsed<'a> {
    if t.len < 5 {
        return line.error(BAD_FORMAT);
    }
    // memcached adds 2 for the `\r\n` in an int, so it refuses lengths that
    // would overflow that. (The length keeps strtol's reading: see
    // docs/differences.md.)
    let bytes = match safe_i32(t.get(4)) {
        Some(b) if (0..=i32::MAX - 2).contains(&b) => b,
        _ => return line.error(BAD_FORMAT),
    };
    let block = bytes as usize + 2;
    let noreply = t.noreply();
    let refuse = || {
        if noreply {
            Parsed::Silent {
                consumed: line.consumed,
                swallow: block,
            }
        } else {
            Parsed::Error {
                error: BAD_FORMAT,
                consumed: line.consumed,
                swallow: block,
            }
        }
    };
    let key = t.get(1);
    if !key_ok(key) {
        return refuse();
    }
    // memcached reads flags and exptime with C's readers straight from
    // the line, so a NUL ends them.
    let (flags, exptime) = match (safe_u32(c_str(t.get(2))), safe_i32(c_str(t.get(3)))) {
        (Some(f), Some(e)) => (f, i64::from(e)),
        _ => return refuse(),
    };
    let command = match kind {
        StoreKind::Set => StoreCommand::Set,
        StoreKind::Add => StoreCommand::Add,
        StoreKind::Replace => StoreCommand::Replace,
        StoreKind::Append => StoreCommand::Append,
        StoreKind::Prepend => StoreCommand::Prepend,
        StoreKind::Cas => match (t.len > 5).then(|| strict_u64(t.get(5))).flatten() {
            Some(unique) => StoreCommand::Cas(unique),
            None => return refuse(),
        },
    };
    if item_size(key.len(), flags, bytes as usize) > limits.item_size_max {
        return Parsed::TooLarge {
            command,
            key,
            noreply,
            consumed: line.consumed,
            swallow: block,
        };
    }
    let (data, end) = match block::take(input, line.consumed, block - 2, true) {
        Block::Ready { data, end } => (data, end),
        Block::Incomplete(end) => return Parsed::Incomplete { needed: Some(end) },
        // memcached has read the whole block into the item by now.
        Block::BadChunk(end) => return Line { consumed: end }.fail(BAD_DATA_CHUNK, noreply),
    };
    Parsed::Request {
        request: Request::Store {
            command,
            key,
            flags,
            exptime,
            data,
            noreply,
        },
        consumed: end,
    }
}

/// `delete <key> ... [noreply]` (memcached 1.6.40): every token after the
/// key but a final `noreply` is ignored (1.6.18 to 1.6.38 accepted only
/// `0` there and refused the rest with [`DELETE_USAGE`]). `delete noreply`
/// deletes the key `noreply`, silently.
fn delete<'a>(t: &Tokens<'a>, line: Line) -> Parsed<'a> {
    if t.len < 2 {
        return line.error(BAD_FORMAT);
    }
    let noreply = t.noreply();
    let key = t.get(1);
    if !key_ok(key) {
        return line.fail(BAD_FORMAT, noreply);
    }
    line.request(Request::Delete { key, noreply })
}

/// `incr|decr <key> <delta> ... [noreply]`
fn arith<'a>(t: &Tokens<'a>, line: Line, incr: bool) -> Parsed<'a> {
    if t.len < 3 {
        return line.error(BAD_FORMAT);
    }
    let noreply = t.noreply();
    let key = t.get(1);
    if !key_ok(key) {
        return line.fail(BAD_FORMAT, noreply);
    }
    match strict_u64(t.get(2)) {
        Some(delta) => line.request(Request::Arith {
            key,
            incr,
            delta,
            noreply,
        }),
        None => line.fail(INVALID_DELTA, noreply),
    }
}

/// `touch <key> <exptime> ... [noreply]`
fn touch<'a>(t: &Tokens<'a>, line: Line) -> Parsed<'a> {
    if t.len < 3 {
        return line.error(BAD_FORMAT);
    }
    let noreply = t.noreply();
    let key = t.get(1);
    if !key_ok(key) {
        return line.fail(BAD_FORMAT, noreply);
    }
    match strict_i32(t.get(2)) {
        Some(e) => line.request(Request::Touch {
            key,
            exptime: i64::from(e),
            noreply,
        }),
        None => line.fail(INVALID_EXPTIME, noreply),
    }
}

/// `flush_all [delay] ... [noreply]`: the delay is read whenever the token
/// count says there is one, so `flush_all noreply 5` fails on `noreply`,
/// and `flush_all 5 junk` flushes in 5 seconds.
fn flush_all<'a>(t: &Tokens<'a>, line: Line) -> Parsed<'a> {
    let noreply = t.noreply();
    let mut delay = 0;
    if t.len != if noreply { 2 } else { 1 } {
        match strict_i32(t.get(1)) {
            Some(d) => delay = i64::from(d),
            None => return line.fail(INVALID_EXPTIME, noreply),
        }
    }
    line.request(Request::FlushAll { delay, noreply })
}

/// `verbosity <level> ... [noreply]`; `verbosity noreply` is a silent error.
fn verbosity<'a>(t: &Tokens<'a>, line: Line) -> Parsed<'a> {
    let noreply = t.noreply();
    match (t.len > 1).then(|| strict_u32(t.get(1))).flatten() {
        Some(level) => line.request(Request::Verbosity { level, noreply }),
        None => line.fail(BAD_FORMAT, noreply),
    }
}

/// `shutdown [graceful]`. A final `noreply` silences the refusal (even
/// memcached's answer when shutdown is not enabled, which the server puts
/// in place of [`INVALID_SHUTDOWN`]).
fn shutdown<'a>(t: &Tokens<'a>, line: Line) -> Parsed<'a> {
    match t.len {
        1 => line.request(Request::Shutdown { graceful: false }),
        2 if t.get(1) == b"graceful" => line.request(Request::Shutdown { graceful: true }),
        _ => line.fail(INVALID_SHUTDOWN, t.noreply()),
    }
}

/// `cache_memlimit <megabytes> ... [noreply]`: memcached answers a missing
/// or bad number with a bare `ERROR` (silenced by `noreply`).
fn cache_memlimit<'a>(t: &Tokens<'a>, line: Line) -> Parsed<'a> {
    let noreply = t.noreply();
    match (t.len > 1).then(|| strict_u32(t.get(1))).flatten() {
        Some(mb) => line.request(Request::CacheMemlimit {
            megabytes: u64::from(mb),
            noreply,
        }),
        None => line.fail(ERROR, noreply),
    }
}

/// `debugtime <seconds>` (memcached debug builds also take `p`/`r` to pause
/// and resume the clock; larder does not).
fn debugtime<'a>(t: &Tokens<'a>, line: Line) -> Parsed<'a> {
    if t.len < 2 {
        return line.error(ERROR);
    }
    match safe_i64(t.get(1)) {
        Some(offset) => line.request(Request::DebugTime { offset }),
        None => line.error(ERROR),
    }
}

/// An administrative command with at least `min_tokens` tokens (counting
/// its name), as memcached demands before looking at it.
fn admin<'a>(t: &Tokens<'a>, line: Line, command: AdminCommand, min_tokens: usize) -> Parsed<'a> {
    // `watch` is read as a data command (no `noreply`); `track` is
    // larder's own and keeps its words.
    let noreply = !matches!(command, AdminCommand::Watch | AdminCommand::Track) && t.noreply();
    if t.len < min_tokens {
        return line.fail(ERROR, noreply);
    }
    line.request(Request::Admin {
        command,
        args: trim(t.after(0)),
        noreply,
    })
}

/// A token as C reads it: up to its first NUL.
fn c_str(token: &[u8]) -> &[u8] {
    token.split(|&b| b == 0).next().unwrap_or(token)
}

/// Strip spaces (only spaces, the token separator) from both ends.
fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| b != b' ').unwrap_or(s.len());
    let end = s.iter().rposition(|&b| b != b' ').map_or(start, |e| e + 1);
    &s[start..end]
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
