//! `-Y`: the ASCII authentication handshake, what a connection may say
//! before it has authenticated.
//!
//! memcached (proto_text.c) reads an unauthenticated connection with its
//! own small reader, not the command parser, and larder follows it byte for
//! byte:
//!
//! * a line (ended by `\n`; the `\r` is optional) whose first word is `set`
//!   and whose fifth word is a number announces a data block of that many
//!   bytes plus `\r\n`; key, flags and exptime are not looked at, `noreply`
//!   is not honoured;
//! * the block `<user> <password>` (more words are ignored) is answered
//!   `STORED` when it matches the authfile, and the connection is then an
//!   ordinary one; otherwise `CLIENT_ERROR authentication failure`. Both
//!   count in `auth_cmds`, the failure also in `auth_errors`;
//! * a block not ended by `\r\n` gets `CLIENT_ERROR bad command line
//!   termination`, one with fewer than two words `CLIENT_ERROR bad
//!   authentication token format` (neither is counted);
//! * any other line — every command, text or meta, including `quit` — gets
//!   `CLIENT_ERROR unauthenticated` and the connection stays open;
//! * more than 2048 bytes without a newline closes the connection, and
//!   nothing is answered;
//! * a `set` announcing more than 16384 bytes gets `CLIENT_ERROR auth token
//!   too long` for its line alone (nothing after it is read as its block)
//!   and the connection stays open, as memcached 1.6.45 answers (its fix
//!   for huge auth tokens; up to 1.6.44 memcached closed the connection
//!   once its 16 KiB read buffer was full). A block of 16383 or 16384
//!   bytes, which with its `\r\n` does not fit that buffer, still closes
//!   the connection unanswered, without buffering any of it.
//!
//! One deliberate difference: memcached reuses one reply slot while
//! unauthenticated, so of several requests pipelined in one read only the
//! last reply is sent. larder answers every request.

use crate::connmem::output::Output;
use crate::auth::sasl::ConnAuth;
use crate::exec::Ctx;
use crate::counters::bump;
use crate::wire::Step;

/// The gate's driver: answer the request at the front of `buf` and, when
/// the credentials match, open the gate for this connection's `auth`.
pub fn step(cx: &mut Ctx<'_>, buf: &[u8], auth: &mut ConnAuth, out: &mut Output) -> Step {
    let check = |user: &[u8], pass: &[u8]| cx.srv.access().credentials.as_ref().is_some_and(|c| c.check(user, pass));
    match handshake(buf, check) {
        AuthStep::Wait => Step::Wait(None),
        AuthStep::Close => Step::Close,
        AuthStep::Answered { consumed, outcome } => {
            if !out.start_response() {
                return Step::Overflow;
            }
            // memcached counts attempts, not refused requests.
            if matches!(outcome, Outcome::Authenticated | Outcome::Failed) {
                bump(&cx.ws.auth_cmds, 1);
            }
            if outcome == Outcome::Failed {
                bump(&cx.ws.auth_errors, 1);
            }
            auth.set_authenticated(outcome == Outcome::Authenticated);
            larder_proto::reply::line(&mut out.buf, outcome.reply());
            Step::Ran { consumed, close: None }
        }
    }
}

/// memcached's limit on a line without a newline before it gives up.
const LINE_MAX: usize = 2048;
/// memcached's read buffer (`READ_BUFFER_SIZE`), which the data block and
/// its `\r\n` must fit in.
const BLOCK_MAX: usize = 16 * 1024;
/// memcached 1.6.45's `MAX_AUTH_REQ_LEN`: a larger announced block is
/// answered [`TOO_LONG`] and not read.
const TOKEN_MAX: usize = 16 * 1024;

pub const UNAUTHENTICATED: &str = larder_proto::reply::UNAUTHENTICATED;
pub const FAILURE: &str = larder_proto::reply::AUTHENTICATION_FAILURE;
pub const BAD_TERMINATION: &str = larder_proto::reply::BAD_TERMINATION;
pub const BAD_FORMAT: &str = larder_proto::reply::BAD_AUTH_TOKEN_FORMAT;
pub const STORED: &str = "STORED";
pub const TOO_LONG: &str = "CLIENT_ERROR auth token too long";

/// What to do with the bytes at the front of an unauthenticated buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum AuthStep {
    /// Not a whole request yet.
    Wait,
    /// Hostile or broken: close without a reply.
    Close,
    /// Drop `consumed` bytes and answer.
    Answered { consumed: usize, outcome: Outcome },
}

/// How a request of an unauthenticated connection ended.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Outcome {
    /// The credentials matched: the connection is now an ordinary one.
    Authenticated,
    /// An attempt with wrong credentials (`auth_errors`).
    Failed,
    /// Not an attempt: any other command, or a malformed block; the reply.
    Refused(&'static str),
}

impl Outcome {
    pub fn reply(self) -> &'static str {
        match self {
            Outcome::Authenticated => STORED,
            Outcome::Failed => FAILURE,
            Outcome::Refused(line) => line,
        }
    }
}

/// Read one request from `buf` (the unprocessed input of a connection that
/// has not authenticated), check credentials with `check`.
pub fn handshake(buf: &[u8], check: impl FnOnce(&[u8], &[u8]) -> bool) -> AuthStep {
    if buf.len() < 2 {
        return AuthStep::Wait;
    }
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() > LINE_MAX { AuthStep::Close } else { AuthStep::Wait };
    };
    let line_len = nl + 1;
    let line = words(&buf[..nl]);
    let size = match (line.first(), line.get(4)) {
        (Some(&b"set"), Some(n)) => larder_proto::text::safe_u32(n),
        _ => None,
    };
    let Some(size) = size else {
        return AuthStep::Answered { consumed: line_len, outcome: Outcome::Refused(UNAUTHENTICATED) };
    };
    if size as usize > TOKEN_MAX {
        return AuthStep::Answered { consumed: line_len, outcome: Outcome::Refused(TOO_LONG) };
    }
    let block = size as usize + 2;
    if block > BLOCK_MAX {
        return AuthStep::Close;
    }
    if buf.len() < line_len + block {
        return AuthStep::Wait;
    }
    let consumed = line_len + block;
    let data = &buf[line_len..consumed];
    let answer = |outcome| AuthStep::Answered { consumed, outcome };
    if &data[size as usize..] != b"\r\n" {
        return answer(Outcome::Refused(BAD_TERMINATION));
    }
    match words(&data[..size as usize])[..] {
        [user, pass, ..] if check(user, pass) => answer(Outcome::Authenticated),
        [_, _, ..] => answer(Outcome::Failed),
        _ => answer(Outcome::Refused(BAD_FORMAT)),
    }
}

/// memcached's tokenizer: words separated by spaces (only spaces), the
/// input read as a C string (a NUL ends it). At most 5 words are needed.
fn words(s: &[u8]) -> Vec<&[u8]> {
    let s = s.split(|&b| b == 0).next().unwrap_or(&[]);
    s.split(|&b| b == b' ').filter(|w| !w.is_empty()).take(5).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(buf: &[u8]) -> AuthStep {
        handshake(buf, |u, p| u == b"foo" && p == b"bar")
    }

    fn answered(buf: &[u8], reply: &'static str, authenticated: bool) {
        let AuthStep::Answered { consumed, outcome } = run(buf) else { panic!("{buf:?}: not answered") };
        assert_eq!((consumed, outcome.reply(), outcome == Outcome::Authenticated), (buf.len(), reply, authenticated), "{buf:?}");
    }

    // The replies below are memcached 1.6.18's for the same bytes.
    #[test]
    fn replies_like_memcached() {
        answered(b"set foo 0 0 7\r\nfoo bar\r\n", STORED, true);
        answered(b"set k 0 0 7\nfoo bar\r\n", STORED, true);
        answered(b"set a b c 7 noreply\r\nfoo bar\r\n", STORED, true);
        answered(b"set k 0 0 4294967303\r\nfoo bar\r\n", STORED, true);
        answered(b"set k 0 0 11\r\nfoo bar baz\r\n", STORED, true);
        answered(b"set foo 0 0 7\r\nfoo bab\r\n", FAILURE, false);
        answered(b"set foo 0 0 3\r\nfoo\r\n", BAD_FORMAT, false);
        answered(b"set k 0 0 7\r\nfoo\0bar\r\n", BAD_FORMAT, false);
        answered(b"set foo 0 0 3\r\nfooXY", BAD_TERMINATION, false);
        for line in [&b"get foo\r\n"[..], b"mn\r\n", b"quit\r\n", b"\r\n", b"set\r\n", b"set k 0 0 -1\r\n", b"SET k 0 0 1\r\n"] {
            answered(line, UNAUTHENTICATED, false);
        }
    }

    #[test]
    fn waits_and_closes() {
        assert_eq!(run(b"s"), AuthStep::Wait);
        assert_eq!(run(b"set k 0 0 7\r\nfoo"), AuthStep::Wait);
        assert_eq!(run(&[b'x'; 2048]), AuthStep::Wait);
        assert_eq!(run(&[b'x'; 2049]), AuthStep::Close);
        assert_eq!(run(b"set k 0 0 16382\r\n"), AuthStep::Wait);
        assert_eq!(run(b"set k 0 0 16384\r\n"), AuthStep::Close);
    }

    #[test]
    fn too_long_tokens_are_answered_and_skipped() {
        // memcached 1.6.45: the line is answered, what follows is the next request.
        let line = b"set k 0 0 16385\r\nfoo bar\r\n";
        assert_eq!(run(line), AuthStep::Answered { consumed: 17, outcome: Outcome::Refused(TOO_LONG) });
        assert_eq!(
            run(b"set k 0 0 2147483646\r\n"),
            AuthStep::Answered { consumed: 22, outcome: Outcome::Refused(TOO_LONG) }
        );
    }

    #[test]
    fn strtoul() {
        assert_eq!(larder_proto::text::safe_u32(b"7\r"), Some(7));
        assert_eq!(larder_proto::text::safe_u32(b"+7"), Some(7));
        assert_eq!(larder_proto::text::safe_u32(b"-0"), Some(0));
        assert_eq!(larder_proto::text::safe_u32(b"-1"), None);
        assert_eq!(larder_proto::text::safe_u32(b"7x"), None);
        assert_eq!(larder_proto::text::safe_u32(b"\r"), None);
        assert_eq!(larder_proto::text::safe_u32(b"99999999999999999999"), None);
    }
}
