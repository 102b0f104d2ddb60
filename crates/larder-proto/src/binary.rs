//! The memcached binary protocol: request parser and response encoders.
//!
//! A binary connection is recognised by its first byte, [`REQUEST_MAGIC`]
//! (`0x80`); see [`is_binary`]. memcached decides once per connection, so
//! the server does too: a later packet with a bad magic byte closes the
//! connection ([`BinParsed::Close`]), it is never re-read as text.
//!
//! # Packets
//!
//! Every request and response is a 24-byte header followed by a body of
//! `extras`, then `key`, then `value` (all integers big-endian):
//!
//! ```text
//! byte  0: magic (0x80 request, 0x81 response)   1: opcode
//!       2: key length (u16)                       4: extras length (u8)
//!       5: data type (0, ignored)                 6: reserved (request) / status (response), u16
//!       8: total body length (u32)               12: opaque (u32, echoed untouched)
//!      16: cas (u64)
//! ```
//!
//! # Parsing
//!
//! [`parse`] looks at the front of the connection's read buffer and returns a
//! [`BinParsed`]: a [`BinRequest`] borrowing the buffer and the bytes it
//! used, a request for more bytes, an error to answer, or "close". It is
//! stateless and never allocates; call it again on the same bytes when more
//! arrive. Framing and validation follow memcached 1.6.18 (`proto_bin.c`),
//! including the parts clients can observe:
//!
//! * memcached decides a packet once it holds the header, extras and key; it
//!   does not wait for (or look at) the rest of the body first. A request
//!   whose header is inconsistent or whose extras are the wrong size for its
//!   opcode is answered with an error before its value arrives.
//! * Only `set`/`add`/`replace`/`append`/`prepend` read a value: they consume
//!   the whole body. Every other command consumes header + extras + key. For
//!   most of them the header must say `body length == extras + key` (else
//!   `EINVAL`), but `stat`, `touch`, `gat`, `gatk` accept a longer body and
//!   memcached then reads the surplus bytes as the *next packet*; so does
//!   [`parse`] (the `consumed` it reports stops after the key).
//! * Header checks, in memcached's order: key + extras longer than the body
//!   → `UNKNOWN_COMMAND` and close; key longer than 250 bytes (whatever the
//!   opcode) → `EINVAL` and close; wrong extras/key/body shape for the
//!   opcode → `EINVAL` and close. Closing errors carry `close: true`.
//! * An unknown opcode (including the range opcodes `0x30..=0x3c`, and the
//!   SASL ones when the server runs without `-S`) → `UNKNOWN_COMMAND`,
//!   connection kept. memcached swallows `body length` bytes *after* the
//!   extras and key it already consumed (it over-reads by extras + key; a
//!   body length of 2^31 or more is not swallowed at all): `swallow`
//!   reproduces exactly that. For the SASL opcodes memcached first checks
//!   their shape (`EINVAL` and close if wrong) and swallows `body length -
//!   key length`.
//! * With SASL on (`-S`, [`parse_sasl`]): the SASL opcodes are requests
//!   ([`BinParsed::Sasl`]), and a connection that has not authenticated
//!   gets `AUTH_ERROR` ("Auth failure.") and is closed for any opcode but
//!   the SASL ones and `version`, once header, extras and key are in. That
//!   check comes right after the key + extras > body check and before every
//!   other one (memcached's `dispatch_bin_command`). A mechanism name longer
//!   than [`MAX_SASL_MECH_LEN`] → `EINVAL`, its data swallowed, connection
//!   kept; SASL data memcached could not hold in one unchunked item
//!   ([`SASL_DATA_ITEM_MAX`]) → `ENOMEM`, swallowed.
//! * A storage command whose item could never fit `limits.item_size_max`
//!   (the same size memcached computes, [`item_size`]) → `E2BIG`
//!   ("Too large."), its value swallowed without being buffered. For
//!   `set`/`setq`, memcached also unlinks any item already stored under the
//!   key (`unlink_key`). memcached flushes that reply only once the value
//!   has been swallowed. (For a value of 2^31 bytes or more memcached
//!   misbehaves and never answers; larder answers `E2BIG` as well.)
//! * The data type and reserved header fields are ignored. Keys are raw
//!   bytes: binary keys may contain spaces and control characters.
//!
//! # What the server decides (per opcode)
//!
//! The parser only decodes. The server executes, and answers with the
//! encoders below, echoing the request's raw opcode (`request.opcode`, so a
//! `setq` error is sent with opcode `0x11`) and `opaque`. Error replies use
//! cas 0. memcached 1.6.18's behaviour, which the server must reproduce:
//!
//! * **Quiet opcodes** (`*Q`): a success produces no output, errors are
//!   always sent. Exceptions: `getq`/`getkq`/`gatq`/`gatkq` hits are sent
//!   and their *misses* are silent; `quitq` closes without a reply.
//! * **noop**: an empty success reply; it also forces every pending reply
//!   out (clients pipeline quiet commands and end with a `noop`).
//! * **get / getk / gat / gatk** (and quiet forms): hit → [`get_hit`]
//!   (extras = 4-byte flags, cas = item's cas, key only for the `k`
//!   variants). Miss → [`get_miss`]: `KEY_ENOENT` with body "Not found", or
//!   for the `k` variants the key in the key field and no message. `gat`
//!   sets the new expiry first. The request's cas is ignored.
//! * **touch**: hit → [`touch_hit`] (flags extras, cas, no value); miss →
//!   "Not found".
//! * **set / add / replace**: success → empty reply with the item's new cas
//!   ([`success`]). A non-zero request cas turns *any* of the three into a
//!   compare-and-swap (missing item → `KEY_ENOENT`, cas mismatch →
//!   `KEY_EEXISTS`). Otherwise `add` on an existing key → `KEY_EEXISTS`
//!   ("Data exists for key."), `replace` on a missing key → `KEY_ENOENT`.
//!   Out of memory → `ENOMEM` with [`OOM_ITEM`].
//! * **append / prepend**: success → empty reply with the new cas; missing
//!   item → `NOT_STORED` ("Not stored."); non-zero cas that does not match →
//!   `KEY_EEXISTS`; result too large → `NOT_STORED`.
//! * **delete**: success → empty reply with cas 0; miss → `KEY_ENOENT`;
//!   non-zero cas that does not match → `KEY_EEXISTS`.
//! * **increment / decrement**: success → [`incr_result`] (8-byte value,
//!   cas = new cas). Non-zero request cas not matching → `KEY_EEXISTS`.
//!   Non-numeric value → `DELTA_BADVAL`. Miss: if `initial` is `None`
//!   (expiry `0xffffffff`) → `KEY_ENOENT` (counted as an incr/decr miss);
//!   otherwise store `initial` as decimal text (flags 0, the given expiry,
//!   add semantics, request cas ignored) and reply with `initial` and the new
//!   item's cas (`NOT_STORED` if that add loses a race, `ENOMEM` with
//!   [`OOM_NEW_ITEM`] when out of memory). Decrement stops at 0, increment
//!   wraps at 2^64.
//! * **flush**: expiry 0 → now, else memcached's `realtime(exptime)`.
//!   Success → empty reply. With flush disabled (`-F`) → `AUTH_ERROR`
//!   ("Auth failure."), also for `flushq`.
//! * **version**: [`version`] with the version string (memcached: `1.6.18`).
//! * **stat**: empty key → all general stats as [`stat`] packets, then
//!   [`stat_end`]. Keys are compared as memcached's `strncmp` prefixes:
//!   `reset…` → reset, then only [`stat_end`]; `settings…` → settings and
//!   the end packet; `detail dump` → one stat `detailed` whose value is the
//!   text dump, and the end packet; `detail on` / `detail off` → just the
//!   end packet; other `detail…` → `KEY_ENOENT`; a known group (`items`,
//!   `slabs`, `sizes`, …) → its stats and the end packet; anything else →
//!   `KEY_ENOENT` "Not found" (no end packet). Stat packets use opcode
//!   `0x10`, status 0, cas 0 and the request's opaque.
//! * **quit**: empty success reply, then close after writing; `quitq`: close.
//! * **SASL** (`-S`, [`BinParsed::Sasl`]): list → success with the
//!   mechanisms, space-separated, as the value; auth/step → success with the
//!   value `Authenticated`, `AUTH_CONTINUE` with the server's challenge as
//!   the value, or `AUTH_ERROR` ("Auth failure."). All with cas 0.
//! * **Closing**: on [`BinParsed::Close`] (bad magic) memcached closes at
//!   once, and replies still queued from earlier packets of the same read
//!   are lost unless a `noop` (or another flushing reply) came before;
//!   sending them first is a harmless difference. On an `Error` with
//!   `close`, the error reply is written, then the connection closed.
//! * Numeric expiries are unsigned 32-bit values in the binary protocol
//!   (never negative); the server interprets them as the text protocol's
//!   exptime (relative up to 30 days, else absolute Unix time).

use crate::block::{self, Block, Input, Shape};
use crate::Limits;

/// First byte of every request; a connection that starts with it speaks binary.
pub const REQUEST_MAGIC: u8 = 0x80;
/// First byte of every response.
pub const RESPONSE_MAGIC: u8 = 0x81;
/// Length of a request or response header.
pub const HEADER_LEN: usize = 24;
/// memcached's `KEY_MAX_LENGTH`; the binary header allows 65535 but memcached
/// refuses anything longer than this with `EINVAL` (and closes).
pub const KEY_MAX_LENGTH: usize = 250;
/// The incr/decr expiry meaning "do not create a missing item".
pub const NO_CREATE: u32 = 0xffff_ffff;
/// memcached's `MAX_SASL_MECH_LEN`: a longer mechanism name is `EINVAL`.
pub const MAX_SASL_MECH_LEN: usize = 32;
/// The largest item (by [`item_size`]) memcached can hold SASL data in:
/// it reads the data into an item and refuses a chunked one, and items
/// above half a slab page (1 MiB) are chunked. Also bounded by `-I`.
pub const SASL_DATA_ITEM_MAX: usize = 512 * 1024;

/// `SASL_LIST_MECHS`, `SASL_AUTH`, `SASL_STEP`.
pub const OP_SASL_LIST_MECHS: u8 = 0x20;
pub const OP_SASL_AUTH: u8 = 0x21;
pub const OP_SASL_STEP: u8 = 0x22;

/// `ENOMEM` body memcached sends when a set/append item cannot be allocated.
pub const OOM_ITEM: &[u8] = b"Out of memory allocating item";
/// `ENOMEM` body when incr/decr cannot allocate the new value.
pub const OOM_INCR: &[u8] = b"Out of memory incrementing value";
/// `ENOMEM` body when incr/decr cannot allocate the item for `initial`.
pub const OOM_NEW_ITEM: &[u8] = b"Out of memory allocating new item";
/// `ENOMEM` body when stats cannot be generated.
pub const OOM_STATS: &[u8] = b"Out of memory generating stats";

/// Whether a connection whose first byte is `first_byte` speaks the binary
/// protocol (memcached's `-B auto-negotiate`).
pub fn is_binary(first_byte: u8) -> bool {
    first_byte == REQUEST_MAGIC
}

/// What a request asks for, with its quiet and key-returning variants folded
/// in (see [`Opcode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// get, getq, getk, getkq.
    Get,
    Set,
    Add,
    Replace,
    Delete,
    Increment,
    Decrement,
    /// quit, quitq.
    Quit,
    /// flush, flushq.
    Flush,
    Noop,
    Version,
    Append,
    Prepend,
    Stat,
    /// touch: extend the expiry, reply with flags only.
    Touch,
    /// gat, gatq, gatk, gatkq: get and touch.
    Gat,
}

/// Every opcode larder implements, with its wire value. [`Opcode::command`],
/// [`Opcode::quiet`] and [`Opcode::with_key`] describe it; replies echo the
/// wire value ([`Opcode::code`], or `u8::from(opcode)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    Get = 0x00,
    Set = 0x01,
    Add = 0x02,
    Replace = 0x03,
    Delete = 0x04,
    Increment = 0x05,
    Decrement = 0x06,
    Quit = 0x07,
    Flush = 0x08,
    GetQ = 0x09,
    Noop = 0x0a,
    Version = 0x0b,
    GetK = 0x0c,
    GetKQ = 0x0d,
    Append = 0x0e,
    Prepend = 0x0f,
    Stat = 0x10,
    SetQ = 0x11,
    AddQ = 0x12,
    ReplaceQ = 0x13,
    DeleteQ = 0x14,
    IncrementQ = 0x15,
    DecrementQ = 0x16,
    QuitQ = 0x17,
    FlushQ = 0x18,
    AppendQ = 0x19,
    PrependQ = 0x1a,
    Touch = 0x1c,
    Gat = 0x1d,
    GatQ = 0x1e,
    GatK = 0x23,
    GatKQ = 0x24,
}

/// All opcodes, for tests and tables.
pub const OPCODES: [Opcode; 32] = [
    Opcode::Get,
    Opcode::Set,
    Opcode::Add,
    Opcode::Replace,
    Opcode::Delete,
    Opcode::Increment,
    Opcode::Decrement,
    Opcode::Quit,
    Opcode::Flush,
    Opcode::GetQ,
    Opcode::Noop,
    Opcode::Version,
    Opcode::GetK,
    Opcode::GetKQ,
    Opcode::Append,
    Opcode::Prepend,
    Opcode::Stat,
    Opcode::SetQ,
    Opcode::AddQ,
    Opcode::ReplaceQ,
    Opcode::DeleteQ,
    Opcode::IncrementQ,
    Opcode::DecrementQ,
    Opcode::QuitQ,
    Opcode::FlushQ,
    Opcode::AppendQ,
    Opcode::PrependQ,
    Opcode::Touch,
    Opcode::Gat,
    Opcode::GatQ,
    Opcode::GatK,
    Opcode::GatKQ,
];

impl Opcode {
    /// The opcode with wire value `code`, if larder implements it.
    pub const fn from_code(code: u8) -> Option<Opcode> {
        use Opcode::*;
        Some(match code {
            0x00 => Get,
            0x01 => Set,
            0x02 => Add,
            0x03 => Replace,
            0x04 => Delete,
            0x05 => Increment,
            0x06 => Decrement,
            0x07 => Quit,
            0x08 => Flush,
            0x09 => GetQ,
            0x0a => Noop,
            0x0b => Version,
            0x0c => GetK,
            0x0d => GetKQ,
            0x0e => Append,
            0x0f => Prepend,
            0x10 => Stat,
            0x11 => SetQ,
            0x12 => AddQ,
            0x13 => ReplaceQ,
            0x14 => DeleteQ,
            0x15 => IncrementQ,
            0x16 => DecrementQ,
            0x17 => QuitQ,
            0x18 => FlushQ,
            0x19 => AppendQ,
            0x1a => PrependQ,
            0x1c => Touch,
            0x1d => Gat,
            0x1e => GatQ,
            0x23 => GatK,
            0x24 => GatKQ,
            _ => return None,
        })
    }

    /// The wire value, echoed in replies.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The command, without the quiet / key-returning distinction.
    pub const fn command(self) -> Command {
        use Opcode::*;
        match self {
            Get | GetQ | GetK | GetKQ => Command::Get,
            Set | SetQ => Command::Set,
            Add | AddQ => Command::Add,
            Replace | ReplaceQ => Command::Replace,
            Delete | DeleteQ => Command::Delete,
            Increment | IncrementQ => Command::Increment,
            Decrement | DecrementQ => Command::Decrement,
            Quit | QuitQ => Command::Quit,
            Flush | FlushQ => Command::Flush,
            Noop => Command::Noop,
            Version => Command::Version,
            Append | AppendQ => Command::Append,
            Prepend | PrependQ => Command::Prepend,
            Stat => Command::Stat,
            Touch => Command::Touch,
            Gat | GatQ | GatK | GatKQ => Command::Gat,
        }
    }

    /// A quiet variant: no reply on success (get family: no reply on a miss).
    pub const fn quiet(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            GetQ | GetKQ
                | SetQ
                | AddQ
                | ReplaceQ
                | DeleteQ
                | IncrementQ
                | DecrementQ
                | QuitQ
                | FlushQ
                | AppendQ
                | PrependQ
                | GatQ
                | GatKQ
        )
    }

    /// getk/getkq/gatk/gatkq: hits and misses carry the key.
    pub const fn with_key(self) -> bool {
        matches!(self, Opcode::GetK | Opcode::GetKQ | Opcode::GatK | Opcode::GatKQ)
    }
}

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> u8 {
        op as u8
    }
}

/// Response status codes (memcached's `protocol_binary_response_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Status {
    Success = 0x00,
    KeyNotFound = 0x01,
    KeyExists = 0x02,
    TooLarge = 0x03,
    InvalidArguments = 0x04,
    NotStored = 0x05,
    NonNumeric = 0x06,
    AuthError = 0x20,
    AuthContinue = 0x21,
    UnknownCommand = 0x81,
    OutOfMemory = 0x82,
}

impl Status {
    /// The wire value.
    pub const fn code(self) -> u16 {
        self as u16
    }

    /// The status with wire value `code`, if memcached defines it.
    pub const fn from_code(code: u16) -> Option<Status> {
        use Status::*;
        Some(match code {
            0x00 => Success,
            0x01 => KeyNotFound,
            0x02 => KeyExists,
            0x03 => TooLarge,
            0x04 => InvalidArguments,
            0x05 => NotStored,
            0x06 => NonNumeric,
            0x20 => AuthError,
            0x21 => AuthContinue,
            0x81 => UnknownCommand,
            0x82 => OutOfMemory,
            _ => return None,
        })
    }

    /// The body memcached sends with this status when it has no more
    /// specific message (`write_bin_error`). Empty for the non-errors.
    pub const fn message(self) -> &'static [u8] {
        use Status::*;
        match self {
            Success | AuthContinue => b"",
            KeyNotFound => b"Not found",
            KeyExists => b"Data exists for key.",
            TooLarge => b"Too large.",
            InvalidArguments => b"Invalid arguments",
            NotStored => b"Not stored.",
            NonNumeric => b"Non-numeric server-side value for incr or decr",
            AuthError => b"Auth failure.",
            UnknownCommand => b"Unknown command",
            OutOfMemory => b"Out of memory",
        }
    }
}

/// The decoded extras of a request. Expiries are the raw unsigned 32-bit
/// protocol values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extras {
    /// get, delete, append, prepend, stat, noop, version, quit.
    None,
    /// set, add, replace: client flags and expiry.
    Store { flags: u32, exptime: u32 },
    /// increment, decrement. `initial` is `None` when the expiry is
    /// [`NO_CREATE`]: a miss is then `KEY_ENOENT` instead of creating the
    /// item with `initial`.
    Arith { delta: u64, initial: Option<u64>, exptime: u32 },
    /// touch, gat, gatk: the new expiry.
    Touch { exptime: u32 },
    /// flush: the delay; 0 (also when the optional extras are absent) means now.
    Flush { exptime: u32 },
}

/// A complete request. `key` and `value` borrow the read buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinRequest<'a> {
    pub opcode: Opcode,
    /// Echoed untouched in every reply to this request.
    pub opaque: u32,
    /// The request's cas: compare-and-swap for set/add/replace/append/
    /// prepend/delete/incr/decr when non-zero; ignored by the others.
    pub cas: u64,
    /// The key; empty only for commands that take none (and optional for stat,
    /// where it names the stats group).
    pub key: &'a [u8],
    /// The value of set/add/replace/append/prepend; empty otherwise.
    pub value: &'a [u8],
    pub extras: Extras,
}

/// Which SASL command a [`SaslRequest`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaslCommand {
    /// `SASL_LIST_MECHS` (0x20): no key, no body.
    ListMechs,
    /// `SASL_AUTH` (0x21): key = mechanism, value = the client's first message.
    Auth,
    /// `SASL_STEP` (0x22): key = mechanism, value = the client's next message.
    Step,
}

/// A complete SASL request (only with [`parse_sasl`]). Replies echo
/// `opcode` and `opaque`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaslRequest<'a> {
    pub command: SaslCommand,
    pub opcode: u8,
    pub opaque: u32,
    /// The mechanism name (empty for `ListMechs`), at most [`MAX_SASL_MECH_LEN`] bytes.
    pub mech: &'a [u8],
    pub data: &'a [u8],
}

/// What [`parse`] found at the front of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinParsed<'a> {
    /// A complete request that used `consumed` bytes.
    Request { request: BinRequest<'a>, consumed: usize },
    /// A complete SASL request that used `consumed` bytes ([`parse_sasl`] only).
    Sasl { request: SaslRequest<'a>, consumed: usize },
    /// Not enough bytes yet. `needed` is `None` until the 24-byte header is
    /// in; then it is the buffer length at which `parse` will decide: the
    /// header, extras and key, or, once those are valid, the header and the
    /// whole body for a command that carries a value.
    Incomplete { needed: Option<usize> },
    /// A request to answer with `response_status` (use [`status_only`],
    /// which sends memcached's message for it) under the request's raw
    /// `opcode` and `opaque`, even for quiet opcodes. Then drop `consumed`
    /// bytes and discard the next `swallow` bytes as they arrive (some may
    /// already be in the buffer). With `close`, close the connection after
    /// writing the reply (`swallow` is then 0). With `unlink_key`, first
    /// unlink any item stored under that key (a too-large `set`).
    Error {
        response_status: Status,
        opcode: u8,
        opaque: u32,
        consumed: usize,
        swallow: usize,
        close: bool,
        unlink_key: Option<&'a [u8]>,
    },
    /// A bad magic byte: memcached closes the connection without a reply.
    Close,
}

/// The size memcached compares against `-I` for an item: header, cas, key
/// plus a NUL, 4 bytes of flags when non-zero, the value plus `\r\n`: the
/// text protocol's [`crate::text::item_size`], as a `u64`. With `-I 1m`, key `k`
/// and flags 0, memcached 1.6.18 stores a 1048516-byte value and answers a
/// 1048517-byte one with `E2BIG`; with non-zero flags the limit is 4 less.
pub fn item_size(key_len: usize, flags: u32, value_len: usize) -> u64 {
    crate::text::item_size(key_len, flags, value_len) as u64
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// A count memcached passes through a C `int`: 2^31 and above is negative,
/// which its swallow logic treats as nothing to swallow.
fn c_int_swallow(n: u32) -> usize {
    if n <= i32::MAX as u32 {
        n as usize
    } else {
        0
    }
}

/// Parse one binary request from the front of `buf`, for a server without
/// SASL. See the module docs.
pub fn parse<'a>(buf: &'a [u8], limits: &Limits) -> BinParsed<'a> {
    parse_with(Input::new(buf), limits, None)
}

/// Parse one binary request for a server with SASL on (`-S`), from a
/// connection that has (`authenticated`) or has not yet authenticated.
/// See the module docs.
pub fn parse_sasl<'a>(buf: &'a [u8], limits: &Limits, authenticated: bool) -> BinParsed<'a> {
    parse_with(Input::new(buf), limits, Some(authenticated))
}

/// [`parse`] or [`parse_sasl`] (`sasl`: `None` without SASL, else whether
/// the connection authenticated), for a request whose value may have been
/// received aside (`input.aside`; `input.buf` then holds the header, extras
/// and key). See [`crate::block`].
pub fn parse_input<'a>(input: Input<'a>, limits: &Limits, sasl: Option<bool>) -> BinParsed<'a> {
    parse_with(input, limits, sasl)
}

/// The opcode and opaque of the request header at the front of `buf`, if
/// a whole header is there: what an error reply to it must echo.
pub fn opcode_and_opaque(buf: &[u8]) -> Option<(u8, u32)> {
    let header = buf.get(..HEADER_LEN)?;
    Some((header[1], be32(&header[12..16])))
}

/// The layout of the request at the front of `buf` after [`parse`] said it
/// is [`BinParsed::Incomplete`] with `needed` known, when what it waits for
/// is a storage command's value; `None` otherwise.
///
/// [`parse`] also reports `needed` while the header's extras and key are
/// still arriving (memcached reads them before it judges the header), and
/// for a SASL command's data: neither is a value, and the lengths of a
/// header not yet judged are the client's word only. So a shape is given
/// only for a set/add/replace/append/prepend (quiet or not) whose header,
/// extras and a valid key are all in `buf`, and whose body length agrees
/// with `needed`: the caller may then slice `buf[..head]` and receive
/// `value` bytes after it.
pub fn waiting_shape(buf: &[u8], needed: usize) -> Option<Shape> {
    let header = buf.get(..HEADER_LEN)?;
    if header[0] != REQUEST_MAGIC {
        return None;
    }
    let storage = Opcode::from_code(header[1])
        .is_some_and(|op| matches!(op.command(), Command::Set | Command::Add | Command::Replace | Command::Append | Command::Prepend));
    let key_len = be16(&header[2..4]) as usize;
    if !storage || key_len == 0 || key_len > KEY_MAX_LENGTH {
        return None;
    }
    let extras = header[4] as usize;
    let head = HEADER_LEN + extras + key_len;
    if buf.len() < head {
        return None;
    }
    let value = needed.checked_sub(head)?;
    let body = be32(&header[8..12]) as usize;
    if extras + key_len + value != body {
        return None;
    }
    Some(Shape { head, value, trailer: 0, key_len })
}

fn parse_with<'a>(input: Input<'a>, limits: &Limits, sasl: Option<bool>) -> BinParsed<'a> {
    let buf = input.buf;
    if buf.len() < HEADER_LEN {
        return BinParsed::Incomplete { needed: None };
    }
    if buf[0] != REQUEST_MAGIC {
        return BinParsed::Close;
    }
    let code = buf[1];
    let keylen = be16(&buf[2..4]) as usize;
    let extlen = buf[4] as usize;
    let bodylen32 = be32(&buf[8..12]);
    let bodylen = bodylen32 as u64;
    let opaque = be32(&buf[12..16]);
    let cas = be64(&buf[16..24]);

    // memcached decides once header, extras and key are in.
    let fixed = HEADER_LEN + extlen + keylen;
    if buf.len() < fixed {
        return BinParsed::Incomplete { needed: Some(fixed) };
    }
    let extras = &buf[HEADER_LEN..HEADER_LEN + extlen];
    let key = &buf[HEADER_LEN + extlen..fixed];

    let error = |status: Status, swallow: usize, close: bool| BinParsed::Error {
        response_status: status,
        opcode: code,
        opaque,
        consumed: fixed,
        swallow,
        close,
        unlink_key: None,
    };
    let invalid = error(Status::InvalidArguments, 0, true);

    if (keylen + extlen) as u64 > bodylen {
        return error(Status::UnknownCommand, 0, true);
    }
    let sasl_opcode = matches!(code, OP_SASL_LIST_MECHS | OP_SASL_AUTH | OP_SASL_STEP);
    if sasl == Some(false) && !sasl_opcode && code != Opcode::Version.code() {
        return error(Status::AuthError, 0, true);
    }
    if keylen > KEY_MAX_LENGTH {
        return invalid;
    }
    if sasl.is_some() && sasl_opcode {
        return parse_sasl_command(buf, limits, code, opaque, fixed, key, extlen, bodylen32);
    }

    let opcode = match Opcode::from_code(code) {
        Some(op) => op,
        None => {
            return match code {
                // SASL_LIST_MECHS
                0x20 if extlen == 0 && keylen == 0 && bodylen == 0 => {
                    error(Status::UnknownCommand, 0, false)
                }
                // SASL_AUTH, SASL_STEP
                0x21 | 0x22 if extlen == 0 && keylen != 0 => {
                    error(Status::UnknownCommand, c_int_swallow(bodylen32 - keylen as u32), false)
                }
                0x20..=0x22 => invalid,
                _ => error(Status::UnknownCommand, c_int_swallow(bodylen32), false),
            };
        }
    };

    let key_body = (keylen + extlen) as u64 == bodylen;
    let request = |extras: Extras, value: &'a [u8]| BinRequest { opcode, opaque, cas, key, value, extras };
    let done = |request: BinRequest<'a>, consumed: usize| BinParsed::Request { request, consumed };

    match opcode.command() {
        Command::Version | Command::Noop | Command::Quit => {
            if extlen == 0 && keylen == 0 && bodylen == 0 {
                done(request(Extras::None, &[]), fixed)
            } else {
                invalid
            }
        }
        Command::Flush => {
            if keylen == 0 && key_body && (extlen == 0 || extlen == 4) {
                let exptime = if extlen == 4 { be32(extras) } else { 0 };
                done(request(Extras::Flush { exptime }, &[]), fixed)
            } else {
                invalid
            }
        }
        Command::Get | Command::Delete => {
            if extlen == 0 && keylen > 0 && key_body {
                done(request(Extras::None, &[]), fixed)
            } else {
                invalid
            }
        }
        Command::Increment | Command::Decrement => {
            if keylen > 0 && extlen == 20 && key_body {
                let delta = be64(&extras[0..8]);
                let initial = be64(&extras[8..16]);
                let exptime = be32(&extras[16..20]);
                let initial = if exptime == NO_CREATE { None } else { Some(initial) };
                done(request(Extras::Arith { delta, initial, exptime }, &[]), fixed)
            } else {
                invalid
            }
        }
        Command::Stat => {
            if extlen == 0 {
                done(request(Extras::None, &[]), fixed)
            } else {
                invalid
            }
        }
        Command::Touch | Command::Gat => {
            if extlen == 4 && keylen != 0 {
                done(request(Extras::Touch { exptime: be32(extras) }, &[]), fixed)
            } else {
                invalid
            }
        }
        Command::Set | Command::Add | Command::Replace | Command::Append | Command::Prepend => {
            let store = matches!(opcode.command(), Command::Set | Command::Add | Command::Replace);
            let shape_ok = if store { extlen == 8 && keylen != 0 } else { extlen == 0 && keylen != 0 };
            if !shape_ok {
                return invalid;
            }
            let parsed_extras = if store {
                Extras::Store { flags: be32(&extras[0..4]), exptime: be32(&extras[4..8]) }
            } else {
                Extras::None
            };
            let flags = match parsed_extras {
                Extras::Store { flags, .. } => flags,
                _ => 0,
            };
            // bodylen >= keylen + extlen was checked above.
            let value_len = (bodylen - (keylen + extlen) as u64) as usize;
            if item_size(keylen, flags, value_len) > limits.item_size_max as u64 {
                let unlink_key = if opcode.command() == Command::Set { Some(key) } else { None };
                return BinParsed::Error {
                    response_status: Status::TooLarge,
                    opcode: code,
                    opaque,
                    consumed: fixed,
                    swallow: value_len,
                    close: false,
                    unlink_key,
                };
            }
            match block::take(input, fixed, value_len, false) {
                Block::Ready { data, end } => done(request(parsed_extras, data), end),
                Block::Incomplete(total) => BinParsed::Incomplete { needed: Some(total) },
                Block::BadChunk(_) => unreachable!("binary values have no trailer"),
            }
        }
    }
}

/// A SASL opcode under `-S`, its header, extras and key in `buf[..fixed]`.
#[allow(clippy::too_many_arguments)]
fn parse_sasl_command<'a>(
    buf: &'a [u8],
    limits: &Limits,
    code: u8,
    opaque: u32,
    fixed: usize,
    key: &'a [u8],
    extlen: usize,
    bodylen: u32,
) -> BinParsed<'a> {
    let error = |status: Status, swallow: usize, close: bool| BinParsed::Error {
        response_status: status,
        opcode: code,
        opaque,
        consumed: fixed,
        swallow,
        close,
        unlink_key: None,
    };
    let request = |command, data: &'a [u8]| SaslRequest { command, opcode: code, opaque, mech: key, data };
    if code == OP_SASL_LIST_MECHS {
        return if extlen == 0 && key.is_empty() && bodylen == 0 {
            BinParsed::Sasl { request: request(SaslCommand::ListMechs, &[]), consumed: fixed }
        } else {
            error(Status::InvalidArguments, 0, true)
        };
    }
    if extlen != 0 || key.is_empty() {
        return error(Status::InvalidArguments, 0, true);
    }
    // bodylen >= keylen was checked by the caller.
    let data_len = bodylen - key.len() as u32;
    if key.len() > MAX_SASL_MECH_LEN {
        return error(Status::InvalidArguments, c_int_swallow(data_len), false);
    }
    // memcached reads the data into an item of the key and data + "\r\n".
    let limit = limits.item_size_max.min(SASL_DATA_ITEM_MAX) as u64;
    if item_size(key.len(), 0, data_len as usize) > limit {
        return error(Status::OutOfMemory, c_int_swallow(data_len), false);
    }
    let total = fixed + data_len as usize;
    if buf.len() < total {
        return BinParsed::Incomplete { needed: Some(total) };
    }
    let command = if code == OP_SASL_AUTH { SaslCommand::Auth } else { SaslCommand::Step };
    BinParsed::Sasl { request: request(command, &buf[fixed..total]), consumed: total }
}

/// The fields of a response header that do not depend on its body: which
/// request it answers (`opcode`, `opaque`) and the outcome (`status`, `cas`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseHead {
    pub opcode: u8,
    pub status: Status,
    pub opaque: u32,
    pub cas: u64,
}

impl ResponseHead {
    pub fn new(opcode: impl Into<u8>, status: Status, opaque: u32, cas: u64) -> ResponseHead {
        ResponseHead { opcode: opcode.into(), status, opaque, cas }
    }
}

/// Append a response header. The caller appends `bodylen` bytes of
/// extras, key and value after it (for example a value copied straight
/// from the store).
pub fn header(out: &mut Vec<u8>, head: ResponseHead, extlen: u8, keylen: u16, bodylen: u32) {
    let ResponseHead { opcode, status, opaque, cas } = head;
    out.reserve(HEADER_LEN + bodylen as usize);
    out.push(RESPONSE_MAGIC);
    out.push(opcode);
    out.extend_from_slice(&keylen.to_be_bytes());
    out.push(extlen);
    out.push(0); // data type: raw bytes
    out.extend_from_slice(&status.code().to_be_bytes());
    out.extend_from_slice(&bodylen.to_be_bytes());
    out.extend_from_slice(&opaque.to_be_bytes());
    out.extend_from_slice(&cas.to_be_bytes());
}

/// Append a complete response: header, `extras`, `key`, `value`.
pub fn response(out: &mut Vec<u8>, head: ResponseHead, extras: &[u8], key: &[u8], value: &[u8]) {
    let bodylen = extras.len() + key.len() + value.len();
    header(out, head, extras.len() as u8, key.len() as u16, bodylen as u32);
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// A reply with `status` and memcached's standard message for it as the
/// body (empty for [`Status::Success`]), cas 0. The reply to every
/// [`BinParsed::Error`] and to most failed commands.
pub fn status_only(out: &mut Vec<u8>, opcode: impl Into<u8>, status: Status, opaque: u32) {
    response(out, ResponseHead::new(opcode, status, opaque, 0), &[], &[], status.message());
}

/// An error reply with a specific message body (e.g. [`OOM_ITEM`]), cas 0.
pub fn error_message(out: &mut Vec<u8>, opcode: impl Into<u8>, status: Status, opaque: u32, message: &[u8]) {
    response(out, ResponseHead::new(opcode, status, opaque, 0), &[], &[], message);
}

/// An empty success reply: set/add/replace/append/prepend (with the new
/// cas), delete (cas 0), flush, noop, quit.
pub fn success(out: &mut Vec<u8>, opcode: impl Into<u8>, opaque: u32, cas: u64) {
    header(out, ResponseHead::new(opcode, Status::Success, opaque, cas), 0, 0, 0);
}

/// The header and extras of a get/gat hit whose value (`value_len` bytes)
/// the caller appends next; the key is included for [`Opcode::with_key`]
/// opcodes.
pub fn get_hit_header(
    out: &mut Vec<u8>,
    opcode: Opcode,
    opaque: u32,
    cas: u64,
    flags: u32,
    key: &[u8],
    value_len: usize,
) {
    let key = if opcode.with_key() { key } else { &[] };
    let bodylen = 4 + key.len() + value_len;
    header(out, ResponseHead::new(opcode, Status::Success, opaque, cas), 4, key.len() as u16, bodylen as u32);
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(key);
}

/// A get/getq/getk/getkq/gat/gatq/gatk/gatkq hit: flags as extras, the key
/// for the `k` variants, the value, the item's cas.
pub fn get_hit(out: &mut Vec<u8>, opcode: Opcode, opaque: u32, cas: u64, flags: u32, key: &[u8], value: &[u8]) {
    get_hit_header(out, opcode, opaque, cas, flags, key, value.len());
    out.extend_from_slice(value);
}

/// A get/gat miss (not for the quiet variants, which send nothing):
/// `KEY_ENOENT` with the key and no message for the `k` variants, with
/// "Not found" otherwise. Also a touch miss.
pub fn get_miss(out: &mut Vec<u8>, opcode: Opcode, opaque: u32, key: &[u8]) {
    if opcode.with_key() {
        response(out, ResponseHead::new(opcode, Status::KeyNotFound, opaque, 0), &[], key, &[]);
    } else {
        status_only(out, opcode, Status::KeyNotFound, opaque);
    }
}

/// A touch hit: the item's flags as extras and its cas, no key or value.
pub fn touch_hit(out: &mut Vec<u8>, opaque: u32, cas: u64, flags: u32) {
    response(out, ResponseHead::new(Opcode::Touch, Status::Success, opaque, cas), &flags.to_be_bytes(), &[], &[]);
}

/// A successful increment/decrement: the new value as 8 bytes, the new cas.
pub fn incr_result(out: &mut Vec<u8>, opcode: impl Into<u8>, opaque: u32, cas: u64, value: u64) {
    response(out, ResponseHead::new(opcode, Status::Success, opaque, cas), &[], &[], &value.to_be_bytes());
}

/// The version reply, e.g. `version(out, opaque, b"1.6.18")`.
pub fn version(out: &mut Vec<u8>, opaque: u32, version: &[u8]) {
    response(out, ResponseHead::new(Opcode::Version, Status::Success, opaque, 0), &[], &[], version);
}

/// One statistic of a stat reply: key = name, value = value.
pub fn stat(out: &mut Vec<u8>, opaque: u32, name: &[u8], value: &[u8]) {
    response(out, ResponseHead::new(Opcode::Stat, Status::Success, opaque, 0), &[], name, value);
}

/// The empty stat packet that ends a stat reply.
pub fn stat_end(out: &mut Vec<u8>, opaque: u32) {
    header(out, ResponseHead::new(Opcode::Stat, Status::Success, opaque, 0), 0, 0, 0);
}

/// A response decoded by [`decode_response`] (for clients, tests, the bench).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response<'a> {
    pub opcode: u8,
    /// The raw status; [`Status::from_code`] names it.
    pub status: u16,
    pub opaque: u32,
    pub cas: u64,
    pub extras: &'a [u8],
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// Decode one response from the front of `buf`: `Ok(Some((response,
/// consumed)))`, `Ok(None)` when more bytes are needed, `Err(())` for a
/// bad magic byte or inconsistent lengths.
#[allow(clippy::result_unit_err)]
pub fn decode_response(buf: &[u8]) -> Result<Option<(Response<'_>, usize)>, ()> {
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    if buf[0] != RESPONSE_MAGIC {
        return Err(());
    }
    let keylen = be16(&buf[2..4]) as usize;
    let extlen = buf[4] as usize;
    let bodylen = be32(&buf[8..12]) as usize;
    if keylen + extlen > bodylen {
        return Err(());
    }
    let total = HEADER_LEN.checked_add(bodylen).ok_or(())?;
    if buf.len() < total {
        return Ok(None);
    }
    let body = &buf[HEADER_LEN..total];
    Ok(Some((
        Response {
            opcode: buf[1],
            status: be16(&buf[6..8]),
            opaque: be32(&buf[12..16]),
            cas: be64(&buf[16..24]),
            extras: &body[..extlen],
            key: &body[extlen..extlen + keylen],
            value: &body[extlen + keylen..],
        },
        total,
    )))
}

#[cfg(test)]
#[path = "binary_tests.rs"]
mod tests;
