//! Unit tests for the meta protocol parser and encoders. Expected replies
//! and error strings were checked against memcached 1.6.18 (see
//! `tests/meta-vectors/record.py` for the recorded vectors).

use super::*;
use crate::text::parse;

fn p(buf: &[u8]) -> Parsed<'_> {
    parse(buf, &Limits::default())
}

/// The meta request parsed from `buf`, asserting it used all of `buf`.
fn mreq(buf: &[u8]) -> MetaRequest<'_> {
    match p(buf) {
        Parsed::Request {
            request: Request::Meta(m),
            consumed,
        } => {
            assert_eq!(
                consumed,
                buf.len(),
                "consumed for {:?}",
                String::from_utf8_lossy(buf)
            );
            m
        }
        other => panic!("{:?} -> {:?}", String::from_utf8_lossy(buf), other),
    }
}

/// The error for `buf`: (error, consumed, swallow).
fn merr(buf: &[u8]) -> (&'static str, usize, usize) {
    match p(buf) {
        Parsed::Error {
            error,
            consumed,
            swallow,
        } => (error, consumed, swallow),
        other => panic!("{:?} -> {:?}", String::from_utf8_lossy(buf), other),
    }
}

/// The error for a whole line with no swallow.
fn e(buf: &[u8]) -> &'static str {
    let (error, consumed, swallow) = merr(buf);
    assert_eq!(
        (consumed, swallow),
        (buf.len(), 0),
        "for {:?}",
        String::from_utf8_lossy(buf)
    );
    error
}

#[test]
fn commands() {
    let r = mreq(b"mg foo v\r\n");
    assert_eq!(r.command, MetaCommand::Get);
    assert_eq!(r.key(), b"foo");
    assert!(!r.key_binary());
    assert!(r.flags.has(b'v') && !r.flags.has(b'q'));
    assert_eq!(mreq(b"md foo\r\n").command, MetaCommand::Delete);
    assert_eq!(mreq(b"ma foo\r\n").command, MetaCommand::Arith);
    assert_eq!(mreq(b"mn\r\n").command, MetaCommand::Noop);
    assert_eq!(mreq(b"mn anything at all\r\n").command, MetaCommand::Noop);
    assert_eq!(mreq(b"me foo\r\n").command, MetaCommand::Debug);
    let r = mreq(b"ms foo 2 T10 F5\r\nhi\r\n");
    assert_eq!(r.command, MetaCommand::Set);
    assert_eq!(r.data, b"hi");
    assert_eq!(r.flags.ttl, Some(10));
    assert_eq!(r.flags.client_flags, 5);
    assert_eq!(r.store_mode(), StoreCommand::Set);
}

#[test]
fn arity() {
    assert_eq!(e(b"mg\r\n"), ERROR);
    assert_eq!(e(b"ms\r\n"), ERROR);
    assert_eq!(e(b"md\r\n"), ERROR);
    assert_eq!(e(b"ma\r\n"), ERROR);
    assert_eq!(e(b"me\r\n"), BAD_FORMAT);
    assert_eq!(e(b"ms foo\r\n"), BAD_FORMAT);
    assert_eq!(e(b"mz foo\r\n"), ERROR);
}
