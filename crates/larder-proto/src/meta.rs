//! The meta protocol: `mg ms md ma mn me`, parsed from a text-protocol line
//! (see [`crate::text::parse`], which returns [`Request::Meta`](crate::text::Request::Meta)) and the
//! encoders for their replies.
//!
//! Everything follows memcached 1.6.18 (`proto_text.c`), byte for byte,
//! including its quirks, except where a later release (1.6.20 to 1.6.40)
//! changed what the meta commands answer; larder follows the newer release
//! there (the list below says which).
//!
//! * Return flags come back in the order the client sent them (not in a
//!   fixed order). `mg` then appends `Z`, `X`, `W` in that order.
//! * A flag is identified by the first byte of its token; any token whose
//!   first byte was seen before is `CLIENT_ERROR duplicate flag`, so `v` and
//!   `vv`, or `O1` and `O2`, clash. Every command accepts every known flag
//!   letter (`b N T R l O P L k s t c f v h u q F C M J D I`, and since
//!   1.6.27 `x` and `E`) and ignores the ones it has no use for; any other
//!   letter is `CLIENT_ERROR invalid flag`.
//! * Newer releases: `E<cas>` (explicit CAS for the item written), `ms s`
//!   (1.6.20: the stored size, after an append the combined one), `ms MA`/
//!   `MP` with `N` (1.6.20: create on a miss), `md x` (1.6.27: empty the
//!   value, keep the item), `mg C<cas>` with `v` (1.6.40: no value when the
//!   CAS matches), `me`'s `exp=` as the seconds remaining (1.6.24).
//! * Errors are always sent, even under `q`; `q` only hides some nominal
//!   replies (see [`suppressed`]).
//! * `b`: the key is base64 (memcached's lenient decoder: bytes outside the
//!   alphabet are skipped). The 250-byte key limit applies to the encoded
//!   key. A returned key (`k`) is re-encoded canonically and followed by
//!   ` b`.
//!
//! Parsing never allocates; a base64 key is decoded into a buffer inside
//! [`MetaRequest`].
//!
//! # What the server does (the parser and encoders only frame and render)
//!
//! * Every command: errors from [`crate::text::parse`] are always sent; the
//!   encoders apply `q` themselves ([`suppressed`] says what they hide).
//!   `MetaFlags::ttl`/`vivify_ttl`/`recache_ttl` are raw protocol times
//!   (like `set`'s exptime: 0 = never, > 30 days = absolute, negative =
//!   already expired).
//! * `mg`: look the key up (`u`: no LRU bump; `h`, `l` report the state
//!   before this access). Miss with `N`: create an empty item (flags 0) with
//!   TTL `N`, `created`, and it wins. `T`: set the TTL. `R`: win when no token
//!   was sent yet, the item was not just created, has a TTL, and its TTL is
//!   below `R`'s. A stale item (`X`) wins when no token was sent yet. After a
//!   win, mark the item's token sent (`Z` for later fetches). Then
//!   [`mg_hit`] / [`mg_miss`]. With [`MetaRequest::opaque_too_long`],
//!   memcached still did the fetch/vivify and a `T` that came before the
//!   `O`, but marked no token; the encoders write the error.
//! * `ms`: [`MetaRequest::store_mode`] (a `C` makes set/replace a CAS
//!   store; memcached's store also applies the CAS test to append/prepend),
//!   client flags `F`, TTL `T`, the stored item remembers a binary key. `I`
//!   with a CAS store: a CAS lower than the item's stores the value anyway,
//!   keeping the old TTL, marked stale (token-sent kept). [`ms`] with the new
//!   CAS (`0` when nothing was stored). A too-large `ms` arrives as
//!   [`Outcome::TooLarge`] with `StoreCommand::Set` and `noreply: false`.
//! * `md`: `C` mismatch: `EX`. `I`: instead of deleting, mark stale, clear
//!   token-sent, new CAS, TTL `T` if given. Then [`md`].
//! * `ma`: [`MetaRequest::incr`], `D` delta (default 1), `C` compare. Miss
//!   with `N`: create the counter with value `J` (default 0) and TTL `N`
//!   (`created`: not hidden by `q`). `T` sets the TTL of a found or created
//!   counter. A non-numeric value: [`NON_NUMERIC`]. Then [`ma`].
//! * `mn`: [`mn`] (memcached flushes its output queue here).
//! * `me`: [`me`] / [`me_miss`]; the key printed is the stored item's.

use crate::block::{self, Block, Input};
use crate::reply::push_u64;
use crate::number::{safe_i32, strict_i32, strict_u32, strict_u64};
use crate::outcome::{item_size, Limits, Outcome, StoreCommand, BAD_DATA_CHUNK, BAD_FORMAT, ERROR, KEY_MAX_LENGTH};

/// What [`parse`] found: a meta request, or why there is none.
type Parsed<'a> = Outcome<'a, MetaRequest<'a>>;

/// The meta commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaCommand {
    /// `mg <key> <flags>*`
    Get,
    /// `ms <key> <datalen> <flags>*\r\n<data>\r\n`
    Set,
    /// `md <key> <flags>*`
    Delete,
    /// `ma <key> <flags>*`
    Arith,
    /// `mn`: answer `MN\r\n` (and flush). Anything after `mn` is ignored.
    Noop,
    /// `me <key> [b]`: meta debug.
    Debug,
}

/// The longest key a `b` (base64) key decodes to: 250 encoded bytes hold at
/// most 62 full 4-byte groups.
pub const BINARY_KEY_MAX: usize = KEY_MAX_LENGTH / 4 * 3;

/// memcached's `MFLAG_MAX_OPAQUE_LENGTH`: an `O` token (the `O` included)
/// longer than this is `CLIENT_ERROR opaque token too long`.
pub const MAX_OPAQUE_TOKEN: usize = 32;

/// The most flag tokens a meta line may carry: memcached refuses a line of
/// 20 tokens or more (`MFLAG_MAX_OPT_LENGTH` counts the terminal token), so
/// `mg`/`md`/`ma` have at most 17 flags and `ms` 16.
pub const MAX_FLAG_TOKENS: usize = 17;

// Error strings, exactly as memcached 1.6.18 sends them.
pub const DUPLICATE_FLAG: &str = "CLIENT_ERROR duplicate flag";
pub const INVALID_FLAG: &str = "CLIENT_ERROR invalid flag";
pub const BAD_TOKEN: &str = "CLIENT_ERROR bad token in command line format";
pub const DECODING_KEY: &str = "CLIENT_ERROR error decoding key";
pub const M_TOKEN_LENGTH: &str = "CLIENT_ERROR incorrect length for M token";
pub const INVALID_INITIAL: &str = "CLIENT_ERROR invalid numeric initial value";
pub const INVALID_DELTA: &str = "CLIENT_ERROR invalid numeric delta value";
/// `ma` (and `md` up to memcached 1.6.39) answer every flag error with
/// this one string.
pub const INVALID_OR_DUPLICATE: &str = "CLIENT_ERROR invalid or duplicate flag";
/// `mg` with 20 or more tokens (sic, "are").
pub const MG_TOO_MANY_FLAGS: &str = "CLIENT_ERROR options flags are too long";
/// `ms`, `md`, `ma` with 20 or more tokens.
pub const TOO_MANY_FLAGS: &str = "CLIENT_ERROR options flags too long";
pub const OPAQUE_TOO_LONG: &str = "CLIENT_ERROR opaque token too long";
pub const MS_INVALID_MODE: &str = "CLIENT_ERROR invalid mode for ms M token";
pub const MA_INVALID_MODE: &str = "CLIENT_ERROR invalid mode for ma M token";
/// `ma` on a value that is not a number (the server's to send).
pub use crate::reply::NON_NUMERIC;

/// A request's key: a slice of the read buffer, or a decoded base64 key
/// held inline (no allocation).
#[derive(Clone, Copy)]
enum Key<'a> {
    Text(&'a [u8]),
    Binary { len: u8, buf: [u8; BINARY_KEY_MAX] },
}

/// The flags of a meta request. `mask` records which flag letters were
/// present ([`MetaFlags::has`]); the token-carrying ones are also parsed
/// into typed fields. Numbers were validated as memcached does (`strtol`
/// rules, 32-bit truncation of `F`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaFlags<'a> {
    mask: u64,
    /// Flag letters in request order (first byte of each flag token).
    order: [u8; MAX_FLAG_TOKENS],
    count: u8,
    /// `T<ttl>`: new TTL (raw protocol value, as `exptime` of `set`).
    pub ttl: Option<i32>,
    /// `N<ttl>`: vivify on miss with this TTL (raw protocol value).
    pub vivify_ttl: Option<i32>,
    /// `R<ttl>`: win a recache token if the TTL remaining is below this
    /// (raw protocol value).
    pub recache_ttl: Option<i32>,
    /// `F<flags>`: client flags for `ms` (0 when absent).
    pub client_flags: u32,
    /// `C<cas>`: compare CAS.
    pub cas: Option<u64>,
    /// `E<cas>`: the CAS to give an item this request writes.
    pub new_cas: Option<u64>,
    /// `M<mode>`: the mode byte (validated for `ms`/`ma` by the parser).
    pub mode: Option<u8>,
    /// `J<initial>`: `ma` initial value on autovivify (default 0).
    pub initial: u64,
    /// `D<delta>`: `ma` delta (default 1).
    pub delta: u64,
    /// `O<opaque>`: the whole token, `O` included, echoed as is. Empty when
    /// absent.
    pub opaque: &'a [u8],
}

fn bit(letter: u8) -> u64 {
    match letter {
        b'A'..=b'Z' => 1 << (letter - b'A'),
        b'a'..=b'z' => 1 << (26 + letter - b'a'),
        _ => 0,
    }
}

impl<'a> MetaFlags<'a> {
    fn new() -> Self {
        MetaFlags {
            mask: 0,
            order: [0; MAX_FLAG_TOKENS],
            count: 0,
            ttl: None,
            vivify_ttl: None,
            recache_ttl: None,
            client_flags: 0,
            cas: None,
            new_cas: None,
            mode: None,
            initial: 0,
            delta: 1,
            opaque: b"",
        }
    }

    /// Was flag `letter` (e.g. `b'v'`, `b'q'`, `b'I'`) given?
    pub fn has(&self, letter: u8) -> bool {
        self.mask & bit(letter) != 0
    }

    /// The flag letters in request order (this is the order of return flags).
    pub fn order(&self) -> &[u8] {
        &self.order[..usize::from(self.count)]
    }

    /// `q`: noreply semantics for nominal replies (see [`suppressed`]).
    pub fn quiet(&self) -> bool {
        self.has(b'q')
    }
}

/// A parsed meta request.
#[derive(Clone, Copy)]
pub struct MetaRequest<'a> {
    pub command: MetaCommand,
    key: Key<'a>,
    /// `ms`: the data block, without its `\r\n`. Empty for other commands.
    pub data: &'a [u8],
    pub flags: MetaFlags<'a>,
}

impl<'a> MetaRequest<'a> {
    fn new(command: MetaCommand, key: &'a [u8]) -> Self {
        MetaRequest {
            command,
            key: Key::Text(key),
            data: b"",
            flags: MetaFlags::new(),
        }
    }

    /// The key, base64-decoded when the request had `b`. Empty for `mn`.
    pub fn key(&self) -> &[u8] {
        match &self.key {
            Key::Text(k) => k,
            Key::Binary { len, buf } => &buf[..usize::from(*len)],
        }
    }

    /// The key arrived base64-encoded (`b`): a stored item should remember
    /// it (memcached's `ITEM_KEY_BINARY`) and returned keys are re-encoded.
    pub fn key_binary(&self) -> bool {
        matches!(self.key, Key::Binary { .. })
    }

    /// `q` was given.
    pub fn quiet(&self) -> bool {
        self.flags.quiet()
    }

    /// `ms`: the store operation, from `M` (`S` set, `E` add, `A` append,
    /// `P` prepend, `R` replace; default set). As memcached does, a `C`
    /// turns set and replace into a CAS store; add, append and prepend keep
    /// their mode and the server compares the CAS itself for them (append
    /// and prepend: a simplified CAS check; add ignores it).
    pub fn store_mode(&self) -> StoreCommand {
        let base = match self.flags.mode {
            Some(b'E') => StoreCommand::Add,
            Some(b'A') => StoreCommand::Append,
            Some(b'P') => StoreCommand::Prepend,
            Some(b'R') => StoreCommand::Replace,
            _ => StoreCommand::Set,
        };
        match (base, self.flags.cas) {
            (StoreCommand::Set | StoreCommand::Replace, Some(c)) => StoreCommand::Cas(c),
            (b, _) => b,
        }
    }

    /// `ma`: increment (default, `MI`, `M+`) or decrement (`MD`, `M-`).
    pub fn incr(&self) -> bool {
        !matches!(self.flags.mode, Some(b'D' | b'-'))
    }

    /// `mg`/`ma`: the `O` token is too long. memcached only notices while
    /// writing the reply, after the command took effect; the encoders then
    /// write [`OPAQUE_TOO_LONG`] instead of the reply. (`ms` and `md` refuse
    /// such a request at parse time.)
    pub fn opaque_too_long(&self) -> bool {
        self.flags.opaque.len() > MAX_OPAQUE_TOKEN
    }
}

impl PartialEq for MetaRequest<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.command == other.command
            && self.key() == other.key()
            && self.key_binary() == other.key_binary()
            && self.data == other.data
            && self.flags == other.flags
    }
}

impl Eq for MetaRequest<'_> {}

impl std::fmt::Debug for MetaRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetaRequest")
            .field("command", &self.command)
            .field("key", &String::from_utf8_lossy(self.key()))
            .field("key_binary", &self.key_binary())
            .field("data_len", &self.data.len())
            .field("flags", &self.flags)
            .finish()
    }
}

// ---------------------------------------------------------------------------
// base64, as memcached's base64.c does it.

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// memcached's decode table: the alphabet, `=` as 0, everything else 0x80
/// (skipped).
static B64_DECODE: [u8; 256] = {
    let mut t = [0x80u8; 256];
    let mut i = 0;
    while i < 64 {
        t[B64[i] as usize] = i as u8;
        i += 1;
    }
    t[b'=' as usize] = 0;
    t
};

/// memcached's `base64_decode`: `None` where it returns 0 (no symbols, a
/// symbol count not a multiple of 4, bad padding, or an empty result).
/// Bytes outside the alphabet are skipped; decoding stops after the first
/// group holding padding.
pub fn base64_decode(src: &[u8], out: &mut [u8]) -> Option<usize> {
    let count = src
        .iter()
        .filter(|&&b| B64_DECODE[usize::from(b)] != 0x80)
        .count();
    if count == 0 || count % 4 != 0 || count / 4 * 3 > out.len() {
        return None;
    }
    let mut pos = 0;
    let mut block = [0u8; 4];
    let mut n = 0;
    let mut pad = 0;
    for &b in src {
        let v = B64_DECODE[usize::from(b)];
        if v == 0x80 {
            continue;
        }
        if b == b'=' {
            pad += 1;
        }
        block[n] = v;
        n += 1;
        if n == 4 {
            out[pos] = (block[0] << 2) | (block[1] >> 4);
            out[pos + 1] = (block[1] << 4) | (block[2] >> 2);
            out[pos + 2] = (block[2] << 6) | block[3];
            pos += 3;
            n = 0;
            if pad > 0 {
                match pad {
                    1 => pos -= 1,
                    2 => pos -= 2,
                    _ => return None,
                }
                break;
            }
        }
    }
    if pos == 0 {
        None
    } else {
        Some(pos)
    }
}

/// Append the canonical base64 encoding of `src` (with `=` padding).
pub fn base64_encode(out: &mut Vec<u8>, src: &[u8]) {
    let mut chunks = src.chunks_exact(3);
    for c in &mut chunks {
        out.extend_from_slice(&[
            B64[usize::from(c[0] >> 2)],
            B64[usize::from(((c[0] & 3) << 4) | (c[1] >> 4))],
            B64[usize::from(((c[1] & 0x0f) << 2) | (c[2] >> 6))],
            B64[usize::from(c[2] & 0x3f)],
        ]);
    }
    match *chunks.remainder() {
        [a] => out.extend_from_slice(&[
            B64[usize::from(a >> 2)],
            B64[usize::from((a & 3) << 4)],
            b'=',
            b'=',
        ]),
        [a, b] => out.extend_from_slice(&[
            B64[usize::from(a >> 2)],
            B64[usize::from(((a & 3) << 4) | (b >> 4))],
            B64[usize::from((b & 0x0f) << 2)],
            b'=',
        ]),
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// Parsing.

/// Split `line` on spaces (the text parser has already checked that it has
/// fewer than 20 tokens where that matters).
fn tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&b| b == b' ').filter(|t| !t.is_empty())
}

fn error<'a>(error: &'static str, consumed: usize, swallow: usize) -> Parsed<'a> {
    Parsed::Error {
        error,
        consumed,
        swallow,
    }
}

/// Parse a meta command line. `name` is the two-byte command, `line` the
/// command text (no `\r\n`), `ntokens` memcached's count of real tokens
/// (at most 23), `consumed` the bytes of the line with its `\n`.
pub(crate) fn parse<'a>(
    name: &[u8],
    line: &'a [u8],
    ntokens: usize,
    input: Input<'a>,
    consumed: usize,
    limits: &Limits,
) -> Parsed<'a> {
    let command = match name {
        b"mg" => MetaCommand::Get,
        b"ms" => MetaCommand::Set,
        b"md" => MetaCommand::Delete,
        b"ma" => MetaCommand::Arith,
        b"mn" => MetaCommand::Noop,
        b"me" => MetaCommand::Debug,
        _ => return error(ERROR, consumed, 0),
    };
    let request = |request| Parsed::Request { request, consumed };
    if command == MetaCommand::Noop {
        return request(MetaRequest::new(command, b""));
    }
    let mut toks = tokens(line);
    toks.next();
    let key = match toks.next() {
        Some(k) => k,
        // No key: a bad format (1.6.18 to 1.6.38 answered `ERROR` but for `me`).
        None => return error(BAD_FORMAT, consumed, 0),
    };
    if key.len() > KEY_MAX_LENGTH {
        return error(BAD_FORMAT, consumed, 0);
    }
    let mut req = MetaRequest::new(command, key);
    if command == MetaCommand::Debug {
        // Only `me <key> b` decodes; anything else after the key is ignored.
        if ntokens >= 3 && toks.next() == Some(b"b") && !decode_key(&mut req, key) {
            return error(BAD_FORMAT, consumed, 0);
        }
        return request(req);
    }
    if command == MetaCommand::Set && ntokens == 2 {
        return error(BAD_FORMAT, consumed, 0);
    }
    if ntokens >= 20 {
        let e = if command == MetaCommand::Get {
            MG_TOO_MANY_FLAGS
        } else {
            TOO_MANY_FLAGS
        };
        return error(e, consumed, 0);
    }
    if command == MetaCommand::Set {
        return set(req, key, toks, input, consumed, limits);
    }
    if let Err(e) = preparse(&mut req, key, toks) {
        // mg, and md from memcached 1.6.40, say which flag error it was;
        // ma (and md up to 1.6.39) answer every one with the same string.
        let e = if matches!(command, MetaCommand::Get | MetaCommand::Delete) {
            e
        } else {
            INVALID_OR_DUPLICATE
        };
        return error(e, consumed, 0);
    }
    match command {
        MetaCommand::Delete if req.opaque_too_long() => return error(OPAQUE_TOO_LONG, consumed, 0),
        MetaCommand::Arith if !matches!(req.flags.mode, None | Some(b'I' | b'+' | b'D' | b'-')) => {
            return error(MA_INVALID_MODE, consumed, 0)
        }
        _ => {}
    }
    request(req)
}

/// A numeric flag's argument, for memcached 1.6.45's strict readers
/// ([`crate::number`]): a flag with nothing after its letter is refused.
fn flag_arg(arg: &[u8]) -> Option<&[u8]> {
    (!arg.is_empty()).then_some(arg)
}

/// `ms <key> <datalen> <flags>*\r\n<data>\r\n`
fn set<'a>(
    mut req: MetaRequest<'a>,
    key: &'a [u8],
    mut toks: impl Iterator<Item = &'a [u8]>,
    input: Input<'a>,
    consumed: usize,
    limits: &Limits,
) -> Parsed<'a> {
    // The length keeps strtol's reading: memcached 1.6.18 and 1.6.38 both
    // answer `ms k 4294967296` with `CLIENT_ERROR bad data chunk` (the
    // length truncates), and the hostile-length tests hold larder to that.
    let vlen = match toks.next().and_then(safe_i32) {
        Some(v) if (0..=i32::MAX - 2).contains(&v) => v as usize,
        _ => return error(BAD_FORMAT, consumed, 0),
    };
    // From here on memcached swallows the data block after an error.
    let block = vlen + 2;
    if let Err(e) = preparse(&mut req, key, toks) {
        return error(e, consumed, block);
    }
    if !matches!(
        req.flags.mode,
        None | Some(b'E' | b'A' | b'P' | b'R' | b'S')
    ) {
        return error(MS_INVALID_MODE, consumed, block);
    }
    if req.opaque_too_long() {
        return error(OPAQUE_TOO_LONG, consumed, block);
    }
    if item_size(req.key().len(), req.flags.client_flags, vlen) > limits.item_size_max {
        // memcached unlinks the key whatever the mode. A base64 key is not
        // in the buffer: pass an empty key (no item is unlinked: a stale
        // value under a binary key survives, unlike in memcached).
        return Parsed::TooLarge {
            command: StoreCommand::Set,
            key: if req.key_binary() { &key[..0] } else { key },
            noreply: false,
            consumed,
            swallow: block,
        };
    }
    let end = match block::take(input, consumed, vlen, true) {
        Block::Ready { data, end } => {
            req.data = data;
            end
        }
        Block::Incomplete(end) => return Parsed::Incomplete { needed: Some(end) },
        // Always answered, even under `q`.
        Block::BadChunk(end) => return error(BAD_DATA_CHUNK, end, 0),
    };
    Parsed::Request {
        request: req,
        consumed: end,
    }
}

fn decode_key(req: &mut MetaRequest<'_>, key: &[u8]) -> bool {
    let mut buf = [0u8; BINARY_KEY_MAX];
    match base64_decode(key, &mut buf) {
        Some(len) => {
            req.key = Key::Binary {
                len: len as u8,
                buf,
            };
            true
        }
        None => false,
    }
}

/// memcached's `_meta_flag_preparse`: a duplicate or unknown flag stops at
/// once; other errors are noted (the last one's message wins; a bad `F` has
/// none of its own) and parsing goes on.
fn preparse<'a>(
    req: &mut MetaRequest<'a>,
    key: &[u8],
    toks: impl Iterator<Item = &'a [u8]>,
) -> Result<(), &'static str> {
    let mut failed: Option<&'static str> = None;
    let f = &mut req.flags;
    let mut decoded = None;
    for tok in toks {
        let o = tok[0];
        if o >= 127 || f.mask & bit(o) != 0 {
            return Err(DUPLICATE_FLAG);
        }
        let arg = &tok[1..];
        match o {
            b'b' => {
                // memcached decodes the key in place right here.
                let mut buf = [0u8; BINARY_KEY_MAX];
                match base64_decode(key, &mut buf) {
                    Some(len) => decoded = Some((len as u8, buf)),
                    None => failed = Some(DECODING_KEY),
                }
            }
            b'N' => match flag_arg(arg).and_then(strict_i32) {
                Some(v) => f.vivify_ttl = Some(v),
                None => failed = Some(BAD_TOKEN),
            },
            b'T' => match flag_arg(arg).and_then(strict_i32) {
                Some(v) => f.ttl = Some(v),
                None => failed = Some(BAD_TOKEN),
            },
            b'R' => match flag_arg(arg).and_then(strict_i32) {
                Some(v) => f.recache_ttl = Some(v),
                None => failed = Some(BAD_TOKEN),
            },
            b'O' => f.opaque = tok,
            // `x` (1.6.27): `md` empties the value; the others ignore it.
            b'l' | b'P' | b'L' | b'k' | b's' | b't' | b'c' | b'f' | b'v' | b'h' | b'u' | b'q'
            | b'I' | b'x' => {}
            b'F' => match flag_arg(arg).and_then(strict_u32) {
                Some(v) => f.client_flags = v,
                None => failed = Some(failed.unwrap_or(BAD_FORMAT)),
            },
            b'C' => match flag_arg(arg).and_then(strict_u64) {
                Some(v) => f.cas = Some(v),
                None => failed = Some(BAD_TOKEN),
            },
            // `E<cas>` (1.6.27): the CAS a write gives the item; 1.6.18
            // answers `invalid flag`.
            b'E' => match flag_arg(arg).and_then(strict_u64) {
                Some(v) => f.new_cas = Some(v),
                None => failed = Some(BAD_TOKEN),
            },
            b'M' => {
                if tok.len() != 2 {
                    failed = Some(M_TOKEN_LENGTH)
                } else {
                    f.mode = Some(tok[1])
                }
            }
            b'J' => match flag_arg(arg).and_then(strict_u64) {
                Some(v) => f.initial = v,
                None => failed = Some(INVALID_INITIAL),
            },
            b'D' => match flag_arg(arg).and_then(strict_u64) {
                Some(v) => f.delta = v,
                None => failed = Some(INVALID_DELTA),
            },
            _ => return Err(INVALID_FLAG),
        }
        f.mask |= bit(o);
        f.order[usize::from(f.count)] = o;
        f.count += 1;
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if let Some((len, buf)) = decoded {
        req.key = Key::Binary { len, buf };
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Replies.

/// A meta reply's status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaStatus {
    /// `VA <len>`: a value follows (`mg`/`ma` with `v`).
    Va,
    /// `HD`: success, no value.
    Hd,
    /// `EN`: miss (`mg`, `me`).
    En,
    /// `NF`: not found (`md`, `ma`; `ms` with `C` on a missing key).
    Nf,
    /// `NS`: not stored.
    Ns,
    /// `EX`: CAS mismatch.
    Ex,
}

impl MetaStatus {
    fn code(self) -> &'static [u8] {
        match self {
            MetaStatus::Va => b"VA",
            MetaStatus::Hd => b"HD",
            MetaStatus::En => b"EN",
            MetaStatus::Nf => b"NF",
            MetaStatus::Ns => b"NS",
            MetaStatus::Ex => b"EX",
        }
    }
}

/// Does `q` hide this reply? (memcached 1.6.18, checked against the real
/// server: protocol.txt says more than the code does.)
///
/// * `mg`: only `EN` (a hit, `HD` or `VA`, is always sent).
/// * `ms`: only `HD` (`NS`, `EX`, `NF` are sent).
/// * `md`: only `HD` (`NF` and `EX` are sent, whatever protocol.txt says).
/// * `ma`: `HD`/`VA` of an existing counter; not when the counter was just
///   created by `N` (`vivified`); `NF`, `EX`, `NS` are sent.
/// * `mn`, `me`: never.
///
/// Errors are never hidden.
pub fn suppressed(command: MetaCommand, status: MetaStatus, vivified: bool) -> bool {
    match command {
        MetaCommand::Get => status == MetaStatus::En,
        MetaCommand::Set | MetaCommand::Delete => status == MetaStatus::Hd,
        MetaCommand::Arith => matches!(status, MetaStatus::Hd | MetaStatus::Va) && !vivified,
        MetaCommand::Noop | MetaCommand::Debug => false,
    }
}

/// A TTL as memcached prints it for `t`: `-1` for an item that never
/// expires, else the seconds remaining as an unsigned 32-bit number (a
/// negative remainder, possible only after a `T` in the past, wraps as in
/// memcached).
fn push_ttl(out: &mut Vec<u8>, ttl: Option<i64>) {
    match ttl {
        None => out.extend_from_slice(b"-1"),
        Some(t) => push_u64(out, u64::from(t as u32)),
    }
}

/// ` k<key>`, or ` k<base64 key> b` for a binary key.
fn push_key(out: &mut Vec<u8>, key: &[u8], binary: bool) {
    out.extend_from_slice(b" k");
    if binary {
        base64_encode(out, key);
        out.extend_from_slice(b" b");
    } else {
        out.extend_from_slice(key);
    }
}

fn push_flag(out: &mut Vec<u8>, letter: u8, n: u64) {
    out.push(b' ');
    out.push(letter);
    push_u64(out, n);
}

fn push_opaque(out: &mut Vec<u8>, req: &MetaRequest<'_>) {
    out.push(b' ');
    out.extend_from_slice(req.flags.opaque);
}

fn opaque_error(out: &mut Vec<u8>) {
    line(out, OPAQUE_TOO_LONG.as_bytes());
}

fn line(out: &mut Vec<u8>, text: &[u8]) {
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

/// What the server found for an `mg` hit (or created with `N`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MgItem<'v> {
    /// The value (sent with `v`; its length is `s` and `VA <len>`).
    pub value: &'v [u8],
    /// Client flags (`f`).
    pub client_flags: u32,
    /// CAS unique (`c`).
    pub cas: u64,
    /// Seconds remaining before this request's `T` (`None`: never
    /// expires). An item just created by `N` has `None` here.
    pub ttl: Option<i64>,
    /// Seconds remaining after this request's `T`, or `N` when it created
    /// the item. `t` prints `ttl` or `ttl_after` depending on whether the
    /// `T`/`N` token came before the `t` token in the request, as memcached
    /// does. Equal to `ttl` when neither applies.
    pub ttl_after: Option<i64>,
    /// Seconds since the item was last accessed, before this access (`l`).
    pub last_access: u64,
    /// The item had been fetched before this request (`h1`/`h0`).
    pub fetched: bool,
    /// The stored key is binary (it was stored with `b`): memcached echoes
    /// the key (`k`) of a hit by the item's flag, not the request's.
    pub key_binary: bool,
    /// This request created the item (`N` on a miss).
    pub created: bool,
    /// A win token had already been sent for this item before this request
    /// (`Z`).
    pub token_sent: bool,
    /// The item is stale (marked by `md ... I`, or `ms ... I` with an older
    /// CAS) (`X`).
    pub stale: bool,
    /// This request won the recache token (`W`); the server then marks the
    /// token sent. memcached: won = (`N` and `created`) or (`R` given, not
    /// `token_sent`, not `created`, item has a TTL and it is below `R`'s) or
    /// (`stale` and not `token_sent`).
    pub won: bool,
}

/// `mg` hit: `VA <len> <flags>*\r\n<data>\r\n` (with `v`, unless `C`
/// names the item's CAS) or `HD <flags>*\r\n`. Return flags `s t c f l h O k` in request order,
/// then `Z`, `X`, `W`. Never hidden by `q`. An `O` token longer than 32
/// bytes gives [`OPAQUE_TOO_LONG`] instead (memcached noticed after the
/// fetch, and had applied a `T` that came before the `O`).
pub fn mg_hit(out: &mut Vec<u8>, req: &MetaRequest<'_>, item: &MgItem<'_>) {
    if mg_hit_head(out, req, item) {
        line(out, item.value);
    }
}

/// [`mg_hit`] up to the value: true when the reply carries the value
/// (`v`), which the caller then sends, followed by `\r\n` (a large value
/// goes out in pieces). Only `item.value.len()` is read here.
pub fn mg_hit_head(out: &mut Vec<u8>, req: &MetaRequest<'_>, item: &MgItem<'_>) -> bool {
    if req.opaque_too_long() {
        opaque_error(out);
        return false;
    }
    // 1.6.40: `C<cas>` on `mg` withholds the value when the CAS matches
    // (a conditional fetch); every other flag acts as usual.
    let value = req.flags.has(b'v') && req.flags.cas != Some(item.cas);
    if value {
        out.extend_from_slice(b"VA ");
        push_u64(out, item.value.len() as u64);
    } else {
        out.extend_from_slice(b"HD");
    }
    let mut ttl = item.ttl;
    for &f in req.flags.order() {
        match f {
            b'T' => ttl = item.ttl_after,
            b'N' if item.created => ttl = item.ttl_after,
            b's' => push_flag(out, b's', item.value.len() as u64),
            b't' => {
                out.extend_from_slice(b" t");
                push_ttl(out, ttl);
            }
            b'c' => push_flag(out, b'c', item.cas),
            b'f' => push_flag(out, b'f', u64::from(item.client_flags)),
            b'l' => push_flag(out, b'l', u64::from(item.last_access as u32)),
            b'h' => push_flag(out, b'h', u64::from(item.fetched)),
            b'O' => push_opaque(out, req),
            b'k' => push_key(out, req.key(), item.key_binary),
            _ => {}
        }
    }
    if item.token_sent {
        out.extend_from_slice(b" Z");
    }
    if item.stale {
        out.extend_from_slice(b" X");
    }
    if item.won {
        out.extend_from_slice(b" W");
    }
    out.extend_from_slice(b"\r\n");
    value
}

/// `mg` miss: `EN <flags>*\r\n` with `O` and `k` in request order; nothing
/// under `q` (but an overlong `O` is still [`OPAQUE_TOO_LONG`]).
pub fn mg_miss(out: &mut Vec<u8>, req: &MetaRequest<'_>) {
    if req.opaque_too_long() {
        return opaque_error(out);
    }
    if req.quiet() {
        return;
    }
    status_with_opaque_key(out, req, MetaStatus::En);
}

/// `<code>` then `O` and `k` (the request's key) in request order.
fn status_with_opaque_key(out: &mut Vec<u8>, req: &MetaRequest<'_>, status: MetaStatus) {
    out.extend_from_slice(status.code());
    for &f in req.flags.order() {
        match f {
            b'O' => push_opaque(out, req),
            b'k' => push_key(out, req.key(), req.key_binary()),
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// `ms` result: `HD`/`NS`/`EX`/`NF` then `O k c s` in request order. `cas`
/// is the stored item's new CAS (memcached prints `c0` when nothing was
/// stored); `size` is what `s` prints (1.6.20): the stored value's length,
/// the combined one after an append or prepend, else the data's length.
/// `HD` is hidden by `q`.
pub fn ms(out: &mut Vec<u8>, req: &MetaRequest<'_>, status: MetaStatus, cas: u64, size: usize) {
    if req.quiet() && status == MetaStatus::Hd {
        return;
    }
    out.extend_from_slice(status.code());
    for &f in req.flags.order() {
        match f {
            b'O' => push_opaque(out, req),
            b'k' => push_key(out, req.key(), req.key_binary()),
            b'c' => push_flag(out, b'c', cas),
            b's' => push_flag(out, b's', size as u64),
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// `md` result: `HD`/`NF`/`EX` then `O k` in request order. Only `HD` is
/// hidden by `q`.
pub fn md(out: &mut Vec<u8>, req: &MetaRequest<'_>, status: MetaStatus) {
    if req.quiet() && status == MetaStatus::Hd {
        return;
    }
    status_with_opaque_key(out, req, status);
}

/// What `ma` did to an item that exists after it (incremented, decremented,
/// or created by `N`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaItem {
    /// The counter's new value (with `v`: `VA <digits>` and the digits).
    pub value: u64,
    /// The item's CAS after the operation (`c`).
    pub cas: u64,
    /// Seconds remaining before this request's `T`/`N` (`None`: never
    /// expires; a created counter has `None`).
    pub ttl: Option<i64>,
    /// Seconds remaining after `T` (or `N` when created). As for `mg`, `t`
    /// prints one or the other by token order.
    pub ttl_after: Option<i64>,
    /// The counter was created by this request (`N` on a miss): memcached
    /// does not hide that reply under `q`.
    pub created: bool,
}

/// The outcome of `ma`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaOutcome {
    /// `HD` / `VA` with `c t O k` in request order.
    Item(MaItem),
    /// `NF` (miss without `N`) with `O k`.
    NotFound,
    /// `EX` (CAS mismatch) with `O k`.
    Exists,
    /// `NS` (a vivify store failed) with `O k`.
    NotStored,
}

/// `ma` reply. Under `q` an `Item` that was not created is hidden. An `O`
/// token longer than 32 bytes gives [`OPAQUE_TOO_LONG`] (memcached noticed
/// after the arithmetic was done). The server answers a non-numeric value
/// with [`NON_NUMERIC`] itself.
pub fn ma(out: &mut Vec<u8>, req: &MetaRequest<'_>, outcome: &MaOutcome) {
    if req.opaque_too_long() {
        return opaque_error(out);
    }
    let item = match outcome {
        MaOutcome::Item(item) => item,
        MaOutcome::NotFound => return status_with_opaque_key(out, req, MetaStatus::Nf),
        MaOutcome::Exists => return status_with_opaque_key(out, req, MetaStatus::Ex),
        MaOutcome::NotStored => return status_with_opaque_key(out, req, MetaStatus::Ns),
    };
    if req.quiet() && !item.created {
        return;
    }
    let mut digits = [0u8; 20];
    let digits = {
        let mut n = item.value;
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        &digits[i..]
    };
    let value = req.flags.has(b'v');
    if value {
        out.extend_from_slice(b"VA ");
        push_u64(out, digits.len() as u64);
    } else {
        out.extend_from_slice(b"HD");
    }
    let mut ttl = item.ttl;
    for &f in req.flags.order() {
        match f {
            b'c' => push_flag(out, b'c', item.cas),
            b't' => {
                out.extend_from_slice(b" t");
                push_ttl(out, ttl);
            }
            b'T' => ttl = item.ttl_after,
            b'N' if item.created => ttl = item.ttl_after,
            b'O' => push_opaque(out, req),
            b'k' => push_key(out, req.key(), req.key_binary()),
            _ => {}
        }
    }
    if value {
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(digits);
    }
    out.extend_from_slice(b"\r\n");
}

/// `mn`: `MN\r\n`. memcached also flushes its output here.
pub fn mn(out: &mut Vec<u8>) {
    out.extend_from_slice(b"MN\r\n");
}

/// What `me` reports about an item.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MeItem {
    /// Seconds remaining (`None`: never expires). memcached prints
    /// `exp=-1` for never, and otherwise the seconds remaining as a signed
    /// 32-bit number (1.6.24; 1.6.18 printed them negated).
    pub ttl: Option<i64>,
    /// Seconds since last access (`la=`).
    pub last_access: u64,
    pub cas: u64,
    /// `fetch=yes|no`.
    pub fetched: bool,
    /// Slab class (`cls=`); larder has none: pass 1.
    pub class: u32,
    /// memcached's `ITEM_ntotal`: pass
    /// [`crate::outcome::item_size`]`(key_len, client_flags, value_len)`.
    pub size: u64,
    /// The stored key is binary: printed base64-encoded.
    pub key_binary: bool,
}

/// `me` hit: `ME <key> exp=.. la=.. cas=.. fetch=yes|no cls=.. size=..\r\n`.
/// The key is the stored item's (re-encoded when binary). A miss is `EN\r\n`
/// ([`me_miss`]).
pub fn me(out: &mut Vec<u8>, key: &[u8], item: &MeItem) {
    out.extend_from_slice(b"ME ");
    if item.key_binary {
        base64_encode(out, key);
    } else {
        out.extend_from_slice(key);
    }
    out.extend_from_slice(b" exp=");
    match item.ttl {
        None => out.extend_from_slice(b"-1"),
        Some(t) => {
            let shown = t as u32 as i32;
            if shown < 0 {
                out.push(b'-');
            }
            push_u64(out, u64::from(shown.unsigned_abs()));
        }
    }
    out.extend_from_slice(b" la=");
    push_u64(out, u64::from(item.last_access as u32));
    out.extend_from_slice(b" cas=");
    push_u64(out, item.cas);
    out.extend_from_slice(if item.fetched {
        b" fetch=yes cls="
    } else {
        b" fetch=no cls="
    });
    push_u64(out, u64::from(item.class));
    out.extend_from_slice(b" size=");
    push_u64(out, item.size);
    out.extend_from_slice(b"\r\n");
}

/// `me` miss.
pub fn me_miss(out: &mut Vec<u8>) {
    out.extend_from_slice(b"EN\r\n");
}

#[cfg(test)]
#[path = "meta_tests.rs"]
mod tests;
