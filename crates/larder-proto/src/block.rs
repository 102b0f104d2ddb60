//! Where a storage request's data block is: right after its command in the
//! read buffer, or — a large value received straight into the store's
//! buffer (the server's landing) — aside, with only what follows the value
//! (the text protocol's `\r\n`) left after the command.
//!
//! The parsers frame a data block through [`take`], so a request parses the
//! same way, and fails the same way, wherever its value was received.

/// A request's bytes: the read buffer from the request's start, and the
/// value if it was received elsewhere.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    pub buf: &'a [u8],
    pub aside: Option<&'a [u8]>,
}

impl<'a> Input<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Input { buf, aside: None }
    }
}

/// How a request that waits for its data block is laid out: `head` bytes
/// of command (line, or binary header, extras and key), then `value`
/// bytes, then `trailer` bytes (`\r\n` in the text protocol); and its
/// key's length as sent (a meta `b` key decodes shorter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub head: usize,
    pub value: usize,
    pub trailer: usize,
    pub key_len: usize,
}

/// A data block framed by [`take`].
pub(crate) enum Block<'a> {
    /// The value, and where the request ends in the read buffer.
    Ready { data: &'a [u8], end: usize },
    /// The read buffer must reach this length.
    Incomplete(usize),
    /// The trailer is not `\r\n`; the request ends here.
    BadChunk(usize),
}

/// The data block of a request whose value (`len` bytes) starts at
/// `start`, followed by `\r\n` if `crlf`.
pub(crate) fn take(input: Input<'_>, start: usize, len: usize, crlf: bool) -> Block<'_> {
    let trailer = if crlf { 2 } else { 0 };
    debug_assert!(input.aside.map_or(true, |v| v.len() == len), "a landing holds exactly the announced value");
    let (data, end) = match input.aside {
        // Received aside: only the trailer follows the command here. The
        // server lands exactly the announced length; anything else is not
        // this request's value.
        Some(v) if v.len() == len => (Some(v), start + trailer),
        _ => (None, start + len + trailer),
    };
    if input.buf.len() < end {
        return Block::Incomplete(end);
    }
    if crlf && &input.buf[end - 2..end] != b"\r\n" {
        return Block::BadChunk(end);
    }
    let data = match data {
        Some(v) => v,
        None => &input.buf[start..start + len],
    };
    Block::Ready { data, end }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::{self, BinParsed};
    use crate::text::{self, Limits, Parsed, Request, StoreCommand};
    use crate::MetaCommand;

    /// A request parses the same with its value in the buffer and aside,
    /// and consumes only what is in the buffer.
    #[test]
    fn a_text_set_parses_the_same_with_its_value_aside() {
        let limits = Limits::default();
        let whole = b"set k 5 0 10 noreply\r\n0123456789\r\nget k\r\n";
        let Parsed::Incomplete { needed: Some(n) } = text::parse(&whole[..30], &limits) else { panic!() };
        assert_eq!(n, 34);
        let shape = text::waiting_shape(&whole[..30], n).unwrap();
        assert_eq!(shape, Shape { head: 22, value: 10, trailer: 2, key_len: 1 });
        let value = &whole[22..32];
        let head_and_rest = [&whole[..22], &whole[32..]].concat();
        let aside = |buf| text::parse_input(Input { buf, aside: Some(value) }, &limits);
        match aside(&head_and_rest) {
            Parsed::Request { request: Request::Store { command: StoreCommand::Set, key, flags: 5, data, noreply: true, .. }, consumed } => {
                assert_eq!((key, data, consumed), (&b"k"[..], &b"0123456789"[..], 24));
            }
            other => panic!("{other:?}"),
        }
        // The trailer not yet in: wait for it; a wrong one: bad data chunk
        // (silent under noreply, as with the value in the buffer).
        assert_eq!(aside(&head_and_rest[..23]), Parsed::Incomplete { needed: Some(24) });
        assert_eq!(aside(b"set k 5 0 10 noreply\r\nXY"), Parsed::Silent { consumed: 24, swallow: 0 });
        assert_eq!(text::parse(b"set k 5 0 10 noreply\r\n0123456789XY", &limits), Parsed::Silent { consumed: 34, swallow: 0 });
    }

    #[test]
    fn a_meta_set_parses_the_same_with_its_value_aside() {
        let limits = Limits::default();
        let head = b"ms k 4 T0 F3\r\n";
        let Parsed::Incomplete { needed: Some(n) } = text::parse(head, &limits) else { panic!() };
        assert_eq!(text::waiting_shape(head, n), Some(Shape { head: head.len(), value: 4, trailer: 2, key_len: 1 }));
        let buf = [&head[..], b"\r\n"].concat();
        match text::parse_input(Input { buf: &buf, aside: Some(b"abcd") }, &limits) {
            Parsed::Request { request: Request::Meta(m), consumed } => {
                assert_eq!((m.command, m.data, consumed), (MetaCommand::Set, &b"abcd"[..], buf.len()));
            }
            other => panic!("{other:?}"),
        }
        let bad = [&head[..], b"!!"].concat();
        assert!(matches!(text::parse_input(Input { buf: &bad, aside: Some(b"abcd") }, &limits), Parsed::Error { error: text::BAD_DATA_CHUNK, .. }));
    }

    #[test]
    fn a_binary_set_parses_the_same_with_its_value_aside() {
        let limits = Limits::default();
        let mut req = vec![0x80, 0x01, 0, 1, 8, 0, 0, 0, 0, 0, 0, 13, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0];
        req.extend_from_slice(&[0, 0, 0, 7, 0, 0, 0, 0]); // flags 7, exptime 0
        req.push(b'k');
        let Some(shape) = ({
            let BinParsed::Incomplete { needed: Some(n) } = binary::parse(&req, &limits) else { panic!() };
            binary::waiting_shape(&req, n)
        }) else { panic!() };
        assert_eq!(shape, Shape { head: 33, value: 4, trailer: 0, key_len: 1 });
        // The same header with a body length that disagrees: no shape.
        let mut liar = req.clone();
        liar[11] = 14;
        assert_eq!(binary::waiting_shape(&liar, 37), None);
        match binary::parse_input(Input { buf: &req, aside: Some(b"wxyz") }, &limits, None) {
            BinParsed::Request { request, consumed } => {
                assert_eq!((request.key, request.value, consumed), (&b"k"[..], &b"wxyz"[..], 33));
            }
            other => panic!("{other:?}"),
        }
    }

    /// The header that stopped the server: keylen 65535, 255 bytes of
    /// extras, a 200,000-byte body and only 100 bytes sent. The parser waits
    /// for extras and key (as memcached does), and that wait is no value:
    /// no shape, so the server never takes `head` bytes for granted.
    #[test]
    fn a_header_still_arriving_has_no_shape() {
        let limits = Limits::default();
        let mut req = vec![0x80, 0x01, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0x03, 0x0d, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        req.resize(124, 0);
        let BinParsed::Incomplete { needed: Some(n) } = binary::parse(&req, &limits) else { panic!() };
        assert_eq!(n, 24 + 255 + 65535);
        assert_eq!(binary::waiting_shape(&req, n), None);
        // All of it in: the key is too long, and memcached's reply follows.
        req.resize(n, 0);
        assert!(matches!(binary::parse(&req, &limits), BinParsed::Error { close: true, .. }));
        assert_eq!(binary::waiting_shape(&req, n), None);
        // A valid key whose extras and key are not all in yet: no shape either.
        let mut set = vec![0x80, 0x01, 0, 10, 8, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        set.extend_from_slice(&[0; 8]);
        set.extend_from_slice(b"abc");
        assert_eq!(binary::waiting_shape(&set, 24 + 8 + 10 + 4078), None);
        // Other commands that wait for bytes are no values: a get whose key
        // is on its way, a SASL step's data.
        let get = [0x80, 0x00, 0, 5, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b'a'];
        assert_eq!(binary::waiting_shape(&get, 29), None);
        let mut step = vec![0x80, 0x22, 0, 5, 0, 0, 0, 0, 0, 0x01, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        step.extend_from_slice(b"PLAIN");
        assert_eq!(binary::waiting_shape(&step, 24 + 65541), None);
    }
}
