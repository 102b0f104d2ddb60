//! Unit tests for the binary protocol codec.
//!
//! The `rec` module holds request/reply pairs recorded from memcached 1.6.18
//! (our own test vectors, captured with a small python script that sent each
//! request over TCP to a fresh memcached and saved the bytes it answered).
//! [`Model`] is a tiny test-only server that executes requests the way the
//! module docs say the server must; replaying the recorded requests through
//! `parse` + the encoders must reproduce memcached's bytes exactly.

use super::*;
use larder_testkit::XorShift64Star;
use std::collections::HashMap;

#[allow(dead_code)]
mod rec {
    // Recorded from memcached 1.6.18 by /tmp/binrec/record.py (fresh server,
    // one connection for the first group, in order; one connection each for
    // the rest). (request hex, reply hex, server closed the connection).
    pub const NOOP: (&str, &str, bool) = ("800a00000000000000000000010203040000000000000000", "810a00000000000000000000010203040000000000000000", false);
    pub const VERSION: (&str, &str, bool) = ("800b00000000000000000000000000050000000000000000", "810b00000000000000000006000000050000000000000000312e362e3138", false);
    pub const GET_MISS: (&str, &str, bool) = ("8000000500000000000000050000000700000000000000006e6f6b6579", "8100000000000001000000090000000700000000000000004e6f7420666f756e64", false);
    pub const GETK_MISS: (&str, &str, bool) = ("800c000500000000000000050000000700000000000000006e6f6b6579", "810c000500000001000000050000000700000000000000006e6f6b6579", false);
    pub const GETQ_MISS_NOOP: (&str, &str, bool) = ("8009000500000000000000050000000700000000000000006e6f6b6579800a00000000000000000000000000000000000000000000", "810a00000000000000000000000000000000000000000000", false);
    pub const SET: (&str, &str, bool) = ("80010001080000000000000e000000090000000000000000deadbeef000000006b68656c6c6f", "810100000000000000000000000000090000000000000001", false);
    pub const GET_HIT: (&str, &str, bool) = ("8000000100000000000000010000000700000000000000006b", "810000000400000000000009000000070000000000000001deadbeef68656c6c6f", false);
    pub const GETK_HIT: (&str, &str, bool) = ("800c000100000000000000010000000800000000000000006b", "810c0001040000000000000a000000080000000000000001deadbeef6b68656c6c6f", false);
    pub const GETQ_HIT: (&str, &str, bool) = ("8009000100000000000000010000000a00000000000000006b", "8109000004000000000000090000000a0000000000000001deadbeef68656c6c6f", false);
    pub const GETKQ_HIT: (&str, &str, bool) = ("800d000100000000000000010000000b00000000000000006b", "810d0001040000000000000a0000000b0000000000000001deadbeef6b68656c6c6f", false);
    pub const TOUCH_HIT: (&str, &str, bool) = ("801c000104000000000000050000000c0000000000000000000003e86b", "811c000004000000000000040000000c0000000000000001deadbeef", false);
    pub const GAT_HIT: (&str, &str, bool) = ("801d000104000000000000050000000d0000000000000000000000006b", "811d000004000000000000090000000d0000000000000001deadbeef68656c6c6f", false);
    pub const GATK_HIT: (&str, &str, bool) = ("8023000104000000000000050000000e0000000000000000000000006b", "81230001040000000000000a0000000e0000000000000001deadbeef6b68656c6c6f", false);
    pub const TOUCH_MISS: (&str, &str, bool) = ("801c000204000000000000060000000f0000000000000000000000007a7a", "811c000000000001000000090000000f00000000000000004e6f7420666f756e64", false);
    pub const GATK_MISS: (&str, &str, bool) = ("802300020400000000000006000000100000000000000000000000007a7a", "8123000200000001000000020000001000000000000000007a7a", false);
    pub const ADD_EXISTS: (&str, &str, bool) = ("80020001080000000000000a00000011000000000000000000000000000000006b78", "810200000000000200000014000000110000000000000000446174612065786973747320666f72206b65792e", false);
    pub const REPLACE_MISS: (&str, &str, bool) = ("80030002080000000000000b00000012000000000000000000000000000000007a7a78", "8103000000000001000000090000001200000000000000004e6f7420666f756e64", false);
    pub const ADDQ_EXISTS_NOOP: (&str, &str, bool) = ("80120001080000000000000a00000013000000000000000000000000000000006b78800a00000000000000000000000000000000000000000000", "811200000000000200000014000000130000000000000000446174612065786973747320666f72206b65792e810a00000000000000000000000000000000000000000000", false);
    pub const SETQ_NOOP: (&str, &str, bool) = ("80110001080000000000000a00000014000000000000000000000001000000007176800a00000000000000000000000000000000000000000000", "810a00000000000000000000000000000000000000000000", false);
    pub const SET_CAS_MISMATCH: (&str, &str, bool) = ("80010001080000000000000a00000015000000000000303900000000000000006b78", "810100000000000200000014000000150000000000000000446174612065786973747320666f72206b65792e", false);
    pub const INCR_MISS_NOCREATE: (&str, &str, bool) = ("8005000314000000000000170000001600000000000000000000000000000001000000000000000affffffff636e74", "8105000000000001000000090000001600000000000000004e6f7420666f756e64", false);
    pub const INCR_MISS_CREATE: (&str, &str, bool) = ("8005000314000000000000170000001700000000000000000000000000000001000000000000000a00000000636e74", "810500000000000000000008000000170000000000000003000000000000000a", false);
    pub const INCR_HIT: (&str, &str, bool) = ("8005000314000000000000170000001800000000000000000000000000000005000000000000000a00000000636e74", "810500000000000000000008000000180000000000000004000000000000000f", false);
    pub const DECR_HIT: (&str, &str, bool) = ("80060003140000000000001700000019000000000000000000000000000001f4000000000000000a00000000636e74", "8106000000000000000000080000001900000000000000050000000000000000", false);
    pub const INCR_NONNUMERIC: (&str, &str, bool) = ("8005000114000000000000150000001a000000000000000000000000000000010000000000000000000000006b", "81050000000000060000002e0000001a00000000000000004e6f6e2d6e756d65726963207365727665722d736964652076616c756520666f7220696e6372206f722064656372", false);
    pub const DELETE_MISS: (&str, &str, bool) = ("8004000200000000000000020000001b00000000000000007a7a", "8104000000000001000000090000001b00000000000000004e6f7420666f756e64", false);
    pub const DELETE_HIT: (&str, &str, bool) = ("8004000300000000000000030000001c0000000000000000636e74", "8104000000000000000000000000001c0000000000000000", false);
    pub const APPEND_MISS: (&str, &str, bool) = ("800e000200000000000000030000001d00000000000000007a7a78", "810e0000000000050000000b0000001d00000000000000004e6f742073746f7265642e", false);
    pub const APPEND_HIT: (&str, &str, bool) = ("800e000100000000000000030000001e00000000000000006b2121", "810e000000000000000000000000001e0000000000000006", false);
    pub const SET_TOO_LARGE_NOOP: (&str, &str, bool) = ("LARGE", "81010000000000030000000a0000001f0000000000000000546f6f206c617267652e810a00000000000000000000000000000000000000000000", false);
    pub const GET_AFTER_TOO_LARGE: (&str, &str, bool) = ("8000000100000000000000010000002000000000000000006b", "8100000000000001000000090000002000000000000000004e6f7420666f756e64", false);
    pub const UNKNOWN_NOOP: (&str, &str, bool) = ("805000000000000000000003000000210000000000000000616263800a00000000000000000000000000220000000000000000", "81500000000000810000000f000000210000000000000000556e6b6e6f776e20636f6d6d616e64810a00000000000000000000000000220000000000000000", false);
    pub const STAT_RESET: (&str, &str, bool) = ("8010000500000000000000050000002300000000000000007265736574", "811000000000000000000000000000230000000000000000", false);
    pub const STAT_UNKNOWN: (&str, &str, bool) = ("801000030000000000000003000000240000000000000000666f6f", "8110000000000001000000090000002400000000000000004e6f7420666f756e64", false);
    pub const STAT_SIZES: (&str, &str, bool) = ("80100005000000000000000500000025000000000000000073697a6573", "8110000c000000000000001400000025000000000000000073697a65735f73746174757364697361626c6564811000000000000000000000000000250000000000000000", false);
    pub const FLUSH: (&str, &str, bool) = ("80080000040000000000000400000026000000000000000000000000", "810800000000000000000000000000260000000000000000", false);
    pub const FLUSHQ_NOOP: (&str, &str, bool) = ("801800000000000000000000000000270000000000000000800a00000000000000000000000000000000000000000000", "810a00000000000000000000000000000000000000000000", false);
    pub const GET_BAD_EXTRAS: (&str, &str, bool) = ("800000010400000000000005000000280000000000000000616263646b800a00000000000000000000000000000000000000000000", "810000000000000400000011000000280000000000000000496e76616c696420617267756d656e7473", true);
    pub const KEYLEN_OVER_BODY: (&str, &str, bool) = ("8000000200000000000000010000002900000000000000006b6b800a00000000000000000000000000000000000000000000", "81000000000000810000000f000000290000000000000000556e6b6e6f776e20636f6d6d616e64", true);
    pub const KEY_TOO_LONG: (&str, &str, bool) = ("800000fb00000000000000fb0000002a00000000000000006161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161616161800a00000000000000000000000000000000000000000000", "8100000000000004000000110000002a0000000000000000496e76616c696420617267756d656e7473", true);
    pub const QUIT: (&str, &str, bool) = ("8007000000000000000000000000002b0000000000000000800a00000000000000000000000000000000000000000000", "8107000000000000000000000000002b0000000000000000", true);
    pub const QUITQ: (&str, &str, bool) = ("8017000000000000000000000000002c0000000000000000800a00000000000000000000000000000000000000000000", "", true);
    pub const SETQ_BAD_EXTRAS: (&str, &str, bool) = ("8011000104000000000000060000002d0000000000000000616263646b76800a00000000000000000000000000000000000000000000", "8111000000000004000000110000002d0000000000000000496e76616c696420617267756d656e7473", true);
    pub const BAD_MAGIC: (&str, &str, bool) = ("800a00000000000000000000000000000000000000000000810a00000000000000000000000000000000000000000000", "810a00000000000000000000000000000000000000000000", true);
    // memcached started with -F (flush disabled): flush, then flushq, then noop.
    pub const FLUSH_DISABLED: (&str, &str, bool) = ("800800000000000000000000000000030000000000000000801800000000000000000000000000040000000000000000800a00000000000000000000000000000000000000000000", "81080000000000200000000d00000003000000000000000041757468206661696c7572652e81180000000000200000000d00000004000000000000000041757468206661696c7572652e810a00000000000000000000000000000000000000000000", false);
    /// The first group, sent in this order on one connection.
    pub const SEQUENCE: [(&str, (&str, &str, bool)); 37] = [
        ("NOOP", NOOP),
        ("VERSION", VERSION),
        ("GET_MISS", GET_MISS),
        ("GETK_MISS", GETK_MISS),
        ("GETQ_MISS_NOOP", GETQ_MISS_NOOP),
        ("SET", SET),
        ("GET_HIT", GET_HIT),
        ("GETK_HIT", GETK_HIT),
        ("GETQ_HIT", GETQ_HIT),
        ("GETKQ_HIT", GETKQ_HIT),
        ("TOUCH_HIT", TOUCH_HIT),
        ("GAT_HIT", GAT_HIT),
        ("GATK_HIT", GATK_HIT),
        ("TOUCH_MISS", TOUCH_MISS),
        ("GATK_MISS", GATK_MISS),
        ("ADD_EXISTS", ADD_EXISTS),
        ("REPLACE_MISS", REPLACE_MISS),
        ("ADDQ_EXISTS_NOOP", ADDQ_EXISTS_NOOP),
        ("SETQ_NOOP", SETQ_NOOP),
        ("SET_CAS_MISMATCH", SET_CAS_MISMATCH),
        ("INCR_MISS_NOCREATE", INCR_MISS_NOCREATE),
        ("INCR_MISS_CREATE", INCR_MISS_CREATE),
        ("INCR_HIT", INCR_HIT),
        ("DECR_HIT", DECR_HIT),
        ("INCR_NONNUMERIC", INCR_NONNUMERIC),
        ("DELETE_MISS", DELETE_MISS),
        ("DELETE_HIT", DELETE_HIT),
        ("APPEND_MISS", APPEND_MISS),
        ("APPEND_HIT", APPEND_HIT),
        ("SET_TOO_LARGE_NOOP", SET_TOO_LARGE_NOOP),
        ("GET_AFTER_TOO_LARGE", GET_AFTER_TOO_LARGE),
        ("UNKNOWN_NOOP", UNKNOWN_NOOP),
        ("STAT_RESET", STAT_RESET),
        ("STAT_UNKNOWN", STAT_UNKNOWN),
        ("STAT_SIZES", STAT_SIZES),
        ("FLUSH", FLUSH),
        ("FLUSHQ_NOOP", FLUSHQ_NOOP),
    ];
    /// One connection each; all but the last end with a noop that must not be answered.
    pub const CLOSING: [(&str, (&str, &str, bool)); 7] = [
        ("GET_BAD_EXTRAS", GET_BAD_EXTRAS),
        ("KEYLEN_OVER_BODY", KEYLEN_OVER_BODY),
        ("KEY_TOO_LONG", KEY_TOO_LONG),
        ("QUIT", QUIT),
        ("QUITQ", QUITQ),
        ("SETQ_BAD_EXTRAS", SETQ_BAD_EXTRAS),
        ("BAD_MAGIC", BAD_MAGIC),
    ];
}

// ---------------------------------------------------------------- helpers

fn hex(s: &str) -> Vec<u8> {
    assert_eq!(s.len() & 1, 0, "odd hex");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// A request packet with consistent lengths.
fn pkt(op: u8, key: &[u8], extras: &[u8], value: &[u8], opaque: u32, cas: u64) -> Vec<u8> {
    let body = (key.len() + extras.len() + value.len()) as u32;
    let mut b = raw(op, key.len() as u16, extras.len() as u8, body, opaque, cas);
    b.extend_from_slice(extras);
    b.extend_from_slice(key);
    b.extend_from_slice(value);
    b
}

/// Just a request header, with arbitrary lengths.
fn raw(op: u8, keylen: u16, extlen: u8, bodylen: u32, opaque: u32, cas: u64) -> Vec<u8> {
    let mut b = vec![REQUEST_MAGIC, op];
    b.extend_from_slice(&keylen.to_be_bytes());
    b.push(extlen);
    b.push(0);
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(&bodylen.to_be_bytes());
    b.extend_from_slice(&opaque.to_be_bytes());
    b.extend_from_slice(&cas.to_be_bytes());
    b
}

fn store_extras(flags: u32, exptime: u32) -> Vec<u8> {
    let mut e = flags.to_be_bytes().to_vec();
    e.extend_from_slice(&exptime.to_be_bytes());
    e
}

fn arith_extras(delta: u64, initial: u64, exptime: u32) -> Vec<u8> {
    let mut e = delta.to_be_bytes().to_vec();
    e.extend_from_slice(&initial.to_be_bytes());
    e.extend_from_slice(&exptime.to_be_bytes());
    e
}

fn p(buf: &[u8]) -> BinParsed<'_> {
    parse(buf, &Limits::default())
}

/// The request parsed from `buf`, asserting it used all of `buf`.
fn req(buf: &[u8]) -> BinRequest<'_> {
    match p(buf) {
        BinParsed::Request { request, consumed } => {
            assert_eq!(consumed, buf.len());
            request
        }
        other => panic!("{:02x?} -> {:?}", &buf[..buf.len().min(40)], other),
    }
}

/// (status, opcode, consumed, swallow, close) of an error.
fn err(buf: &[u8]) -> (Status, u8, usize, usize, bool) {
    match p(buf) {
        BinParsed::Error { response_status, opcode, opaque, consumed, swallow, close, unlink_key } => {
            assert_eq!(opaque, be32(&buf[12..16]), "opaque echoed");
            assert_eq!(unlink_key, None);
            (response_status, opcode, consumed, swallow, close)
        }
        other => panic!("{:02x?} -> {:?}", &buf[..buf.len().min(40)], other),
    }
}

/// An `EINVAL` that closes the connection (memcached's protocol error).
fn assert_einval(buf: &[u8]) {
    let (status, opcode, consumed, swallow, close) = err(buf);
    assert_eq!((status, opcode, swallow, close), (Status::InvalidArguments, buf[1], 0, true), "{:02x?}", buf);
    let fixed = HEADER_LEN + buf[4] as usize + be16(&buf[2..4]) as usize;
    assert_eq!(consumed, fixed);
}

// ---------------------------------------------------------------- tables

#[test]
fn opcode_table_round_trips() {
    let mut known = 0;
    for code in 0..=255u8 {
        if let Some(op) = Opcode::from_code(code) {
            known += 1;
            assert_eq!(op.code(), code);
            assert_eq!(u8::from(op), code);
            assert!(OPCODES.contains(&op));
        }
    }
    assert_eq!(known, OPCODES.len());
    for code in [0x1b, 0x1f, 0x20, 0x21, 0x22, 0x25, 0x30, 0x3c, 0x80, 0xff] {
        assert_eq!(Opcode::from_code(code), None, "{code:#x}");
    }
}

#[test]
fn opcode_flags() {
    use Opcode::*;
    let quiet = [GetQ, GetKQ, SetQ, AddQ, ReplaceQ, DeleteQ, IncrementQ, DecrementQ, QuitQ, FlushQ, AppendQ, PrependQ, GatQ, GatKQ];
    let with_key = [GetK, GetKQ, GatK, GatKQ];
    for op in OPCODES {
        assert_eq!(op.quiet(), quiet.contains(&op), "{op:?}");
        assert_eq!(op.with_key(), with_key.contains(&op), "{op:?}");
    }
    // Each quiet opcode is its loud twin's command.
    let pairs = [
        (Get, GetQ), (GetK, GetKQ), (Set, SetQ), (Add, AddQ), (Replace, ReplaceQ), (Delete, DeleteQ),
        (Increment, IncrementQ), (Decrement, DecrementQ), (Quit, QuitQ), (Flush, FlushQ),
        (Append, AppendQ), (Prepend, PrependQ), (Gat, GatQ), (GatK, GatKQ),
    ];
    for (loud, q) in pairs {
        assert_eq!(loud.command(), q.command());
        assert!(!loud.quiet());
        assert_eq!(loud.with_key(), q.with_key());
    }
    assert_eq!(GetK.command(), Command::Get);
    assert_eq!(GatKQ.command(), Command::Gat);
    assert_eq!(Touch.command(), Command::Touch);
}

#[test]
fn status_codes_and_messages() {
    // Codes from protocol_binary.h; messages from memcached 1.6.18's replies
    // (the recorded vectors below check most of them on the wire).
    let table: [(Status, u16, &[u8]); 11] = [
        (Status::Success, 0x00, b""),
        (Status::KeyNotFound, 0x01, b"Not found"),
        (Status::KeyExists, 0x02, b"Data exists for key."),
        (Status::TooLarge, 0x03, b"Too large."),
        (Status::InvalidArguments, 0x04, b"Invalid arguments"),
        (Status::NotStored, 0x05, b"Not stored."),
        (Status::NonNumeric, 0x06, b"Non-numeric server-side value for incr or decr"),
        (Status::AuthError, 0x20, b"Auth failure."),
        (Status::AuthContinue, 0x21, b""),
        (Status::UnknownCommand, 0x81, b"Unknown command"),
        (Status::OutOfMemory, 0x82, b"Out of memory"),
    ];
    for (status, code, message) in table {
        assert_eq!(status.code(), code);
        assert_eq!(Status::from_code(code), Some(status));
        assert_eq!(status.message(), message, "{status:?}");
    }
    assert_eq!(Status::from_code(0x07), None);
}

// ---------------------------------------------------------------- good requests

#[test]
fn parses_every_opcode() {
    use Opcode::*;
    let k: &[u8] = b"key";
    // No extras, no key.
    for op in [Noop, Version, Quit, QuitQ, Flush, FlushQ] {
        let b = pkt(op.code(), b"", b"", b"", 0xa1b2c3d4, 77);
        let r = req(&b);
        assert_eq!(r.opcode, op);
        assert_eq!((r.opaque, r.cas, r.key, r.value), (0xa1b2c3d4, 77, &b""[..], &b""[..]));
        let want = if op.command() == Command::Flush { Extras::Flush { exptime: 0 } } else { Extras::None };
        assert_eq!(r.extras, want);
    }
    // Flush with its optional delay.
    for op in [Flush, FlushQ] {
        let b = pkt(op.code(), b"", &90u32.to_be_bytes(), b"", 1, 0);
        assert_eq!(req(&b).extras, Extras::Flush { exptime: 90 });
    }
    // Key only.
    for op in [Get, GetQ, GetK, GetKQ, Delete, DeleteQ, Stat] {
        let b = pkt(op.code(), k, b"", b"", 5, 99);
        let r = req(&b);
        assert_eq!((r.opcode, r.key, r.value, r.extras, r.cas, r.opaque), (op, k, &b""[..], Extras::None, 99, 5));
    }
    // Stat without a key (all stats).
    assert_eq!(req(&pkt(0x10, b"", b"", b"", 0, 0)).key, b"");
    // Store commands.
    for op in [Set, SetQ, Add, AddQ, Replace, ReplaceQ] {
        let b = pkt(op.code(), k, &store_extras(0xdeadbeef, 3600), b"the value", 6, 1234);
        let r = req(&b);
        assert_eq!(r.opcode, op);
        assert_eq!(r.extras, Extras::Store { flags: 0xdeadbeef, exptime: 3600 });
        assert_eq!((r.key, r.value, r.cas), (k, &b"the value"[..], 1234));
        // An empty value is fine.
        let b = pkt(op.code(), k, &store_extras(0, 0), b"", 6, 0);
        assert_eq!(req(&b).value, b"");
    }
    for op in [Append, AppendQ, Prepend, PrependQ] {
        let b = pkt(op.code(), k, b"", b"tail", 6, 8);
        let r = req(&b);
        assert_eq!((r.opcode, r.key, r.value, r.extras, r.cas), (op, k, &b"tail"[..], Extras::None, 8));
        assert_eq!(req(&pkt(op.code(), k, b"", b"", 6, 8)).value, b"");
    }
    // Arithmetic.
    for op in [Increment, IncrementQ, Decrement, DecrementQ] {
        let b = pkt(op.code(), k, &arith_extras(5, 10, 60), b"", 6, 0);
        let r = req(&b);
        assert_eq!(r.opcode, op);
        assert_eq!(r.extras, Extras::Arith { delta: 5, initial: Some(10), exptime: 60 });
        let b = pkt(op.code(), k, &arith_extras(u64::MAX, 10, NO_CREATE), b"", 6, 0);
        assert_eq!(req(&b).extras, Extras::Arith { delta: u64::MAX, initial: None, exptime: NO_CREATE });
    }
    // Touch family.
    for op in [Touch, Gat, GatQ, GatK, GatKQ] {
        let b = pkt(op.code(), k, &0x0102_0304u32.to_be_bytes(), b"", 6, 0);
        let r = req(&b);
        assert_eq!((r.opcode, r.key, r.extras), (op, k, Extras::Touch { exptime: 0x0102_0304 }));
    }
}

#[test]
fn keys_are_raw_bytes_up_to_250() {
    let key: Vec<u8> = (0..250).map(|i| (i % 256) as u8).collect();
    assert_eq!(req(&pkt(0x00, &key, b"", b"", 0, 0)).key, &key[..]);
    assert_eq!(req(&pkt(0x00, b"a b\r\n\0", b"", b"", 0, 0)).key, b"a b\r\n\0");
}

#[test]
fn data_type_and_reserved_fields_are_ignored() {
    let mut b = pkt(0x00, b"k", b"", b"", 0, 0);
    b[5] = 0x7f;
    b[6] = 0xff;
    b[7] = 0x01;
    assert_eq!(req(&b).key, b"k");
}

// ---------------------------------------------------------------- bad requests

#[test]
fn wrong_shapes_are_einval_and_close() {
    let e4 = [0u8; 4];
    let e8 = [0u8; 8];
    let e20 = [0u8; 20];
    // (opcode, key, extras, value)
    type Case<'a> = (u8, &'a [u8], &'a [u8], &'a [u8]);
    let cases: Vec<Case> = vec![
        // version, noop, quit(q): nothing allowed.
        (0x0b, b"k", b"", b""), (0x0b, b"", &e4, b""), (0x0b, b"", b"", b"v"),
        (0x0a, b"k", b"", b""), (0x0a, b"", &e4, b""), (0x0a, b"", b"", b"v"),
        (0x07, b"k", b"", b""), (0x07, b"", b"", b"v"), (0x17, b"", &e4, b""),
        // flush(q): no key, extras 0 or 4, nothing else.
        (0x08, b"k", b"", b""), (0x08, b"", &e8, b""), (0x08, b"", &e4, b"v"), (0x08, b"", b"", b"v"),
        (0x18, b"", &[0u8; 2], b""),
        // get family, delete: key, no extras, no value.
        (0x00, b"", b"", b""), (0x00, b"k", &e4, b""), (0x00, b"k", b"", b"v"),
        (0x09, b"", b"", b""), (0x0c, b"k", &e4, b""), (0x0d, b"k", b"", b"v"),
        (0x04, b"", b"", b""), (0x04, b"k", &e4, b""), (0x14, b"k", b"", b"v"),
        // incr/decr: key, 20 bytes of extras, no value.
        (0x05, b"", &e20, b""), (0x05, b"k", &e8, b""), (0x05, b"k", b"", b""),
        (0x06, b"k", &e20, b"v"), (0x15, b"k", &[0u8; 24], b""), (0x16, b"k", &[0u8; 19], b""),
        // set/add/replace: key, 8 bytes of extras.
        (0x01, b"", &e8, b"v"), (0x01, b"k", &e4, b"v"), (0x01, b"k", b"", b"v"), (0x01, b"k", &[0u8; 12], b"v"),
        (0x11, b"k", &e4, b"v"), (0x02, b"", &e8, b""), (0x12, b"k", b"", b""), (0x03, b"k", &e20, b""), (0x13, b"", &e8, b""),
        // append/prepend: key, no extras.
        (0x0e, b"", b"", b"v"), (0x0e, b"k", &e4, b"v"), (0x19, b"k", &e8, b""), (0x0f, b"", b"", b""), (0x1a, b"k", &e4, b"v"),
        // stat: no extras.
        (0x10, b"", &e4, b""), (0x10, b"k", &e8, b""),
        // touch family: key, 4 bytes of extras.
        (0x1c, b"k", b"", b""), (0x1c, b"", &e4, b""), (0x1c, b"k", &e8, b""),
        (0x1d, b"k", b"", b""), (0x1e, b"", &e4, b""), (0x23, b"k", &e8, b""), (0x24, b"k", b"", b""),
        // SASL: list takes nothing; auth/step need a key and no extras.
        (0x20, b"k", b"", b""), (0x20, b"", b"", b"v"), (0x21, b"", b"", b"v"), (0x22, b"k", &e4, b""),
    ];
    for (op, key, extras, value) in cases {
        assert_einval(&pkt(op, key, extras, value, 0x55, 0));
    }
}

#[test]
fn einval_is_decided_before_the_value_arrives() {
    // get with a 5-byte body but a 1-byte key: header + key is enough.
    let mut b = raw(0x00, 1, 0, 5, 3, 0);
    b.push(b'k');
    assert_einval(&b);
    // set with 4 bytes of extras and a 1000-byte value announced.
    let mut b = raw(0x01, 1, 4, 1005, 3, 0);
    b.extend_from_slice(&[0, 0, 0, 0, b'k']);
    assert_einval(&b);
}

#[test]
fn header_inconsistencies() {
    // key longer than the body: UNKNOWN_COMMAND and close (once the key is in).
    let mut b = raw(0x00, 2, 0, 1, 9, 0);
    assert_eq!(p(&b), BinParsed::Incomplete { needed: Some(26) });
    b.extend_from_slice(b"kk");
    assert_eq!(err(&b), (Status::UnknownCommand, 0x00, 26, 0, true));
    // key + extras longer than the body.
    let mut b = raw(0x01, 1, 8, 8, 9, 0);
    b.extend_from_slice(&[0; 9]);
    assert_eq!(err(&b), (Status::UnknownCommand, 0x01, 33, 0, true));
    // Even for an unknown opcode, and before the key length check.
    let mut b = raw(0x50, 300, 0, 10, 9, 0);
    b.extend_from_slice(&[b'a'; 300]);
    assert_eq!(err(&b), (Status::UnknownCommand, 0x50, 324, 0, true));
}

#[test]
fn keys_longer_than_250_are_einval_for_every_opcode() {
    let key = [b'a'; 251];
    for op in [0x00u8, 0x01, 0x04, 0x0e, 0x10, 0x1c, 0x50, 0xff] {
        let extras: &[u8] = match op {
            0x01 => &[0; 8],
            0x1c => &[0; 4],
            _ => b"",
        };
        assert_einval(&pkt(op, &key, extras, b"", 1, 0));
    }
    assert_eq!(req(&pkt(0x00, &key[..250], b"", b"", 1, 0)).key.len(), 250);
}

#[test]
fn unknown_opcodes_swallow_the_body_like_memcached() {
    // No key: exactly the body is swallowed.
    let b = pkt(0x50, b"", b"", b"abc", 7, 0);
    assert_eq!(err(&b), (Status::UnknownCommand, 0x50, 24, 3, false));
    // With key and extras, memcached consumes them and then still swallows
    // the whole body length (recorded: a following noop was eaten).
    let b = pkt(0x50, b"abc", &[1, 2], b"xy", 7, 0);
    assert_eq!(err(&b), (Status::UnknownCommand, 0x50, 29, 7, false));
    // Decided as soon as header + extras + key are in.
    let b = raw(0x51, 0, 0, 1_000_000, 7, 0);
    assert_eq!(err(&b), (Status::UnknownCommand, 0x51, 24, 1_000_000, false));
    // A body length of 2^31 or more is not swallowed at all (C int).
    assert_eq!(err(&raw(0x55, 0, 0, 0x7fff_ffff, 4, 0)).3, 0x7fff_ffff);
    assert_eq!(err(&raw(0x55, 0, 0, 0x8000_0000, 4, 0)).3, 0);
    assert_eq!(err(&raw(0x55, 0, 0, 0xffff_ffff, 4, 0)).3, 0);
    // Gaps in the opcode table and the range commands are unknown.
    for op in [0x1b, 0x1f, 0x25, 0x30, 0x31, 0x3c, 0x80, 0xfe] {
        assert_eq!(err(&pkt(op, b"", b"", b"", 1, 0)), (Status::UnknownCommand, op, 24, 0, false));
    }
}

#[test]
fn sasl_opcodes_are_unknown_commands() {
    assert_eq!(err(&pkt(0x20, b"", b"", b"", 3, 0)), (Status::UnknownCommand, 0x20, 24, 0, false));
    // auth/step swallow body - key after consuming the key.
    assert_eq!(err(&pkt(0x21, b"PLAIN", b"", b"abcd", 3, 0)), (Status::UnknownCommand, 0x21, 29, 4, false));
    assert_eq!(err(&pkt(0x22, b"PLAIN", b"", b"", 3, 0)), (Status::UnknownCommand, 0x22, 29, 0, false));
    let mut b = raw(0x21, 1, 0, 0xffff_ffff, 3, 0);
    b.push(b'k');
    assert_eq!(err(&b), (Status::UnknownCommand, 0x21, 25, 0, false));
}

/// (status, opcode, consumed, swallow, close) of an error under `-S`.
fn sasl_err(buf: &[u8], authenticated: bool) -> (Status, u8, usize, usize, bool) {
    match parse_sasl(buf, &Limits::default(), authenticated) {
        BinParsed::Error { response_status, opcode, consumed, swallow, close, .. } => {
            (response_status, opcode, consumed, swallow, close)
        }
        other => panic!("{:02x?} -> {:?}", &buf[..buf.len().min(40)], other),
    }
}

#[test]
fn sasl_requests_under_dash_s() {
    let l = Limits::default();
    let list = pkt(0x20, b"", b"", b"", 9, 0);
    for auth in [false, true] {
        match parse_sasl(&list, &l, auth) {
            BinParsed::Sasl { request, consumed } => {
                assert_eq!((request.command, request.opcode, request.opaque, consumed), (SaslCommand::ListMechs, 0x20, 9, 24));
            }
            other => panic!("{other:?}"),
        }
    }
    let auth = pkt(0x21, b"PLAIN", b"", b"\0u\0p", 7, 0);
    // Waits for the whole body (the data), then hands over mech and data.
    assert_eq!(parse_sasl(&auth[..29], &l, false), BinParsed::Incomplete { needed: Some(auth.len()) });
    match parse_sasl(&auth, &l, false) {
        BinParsed::Sasl { request, consumed } => {
            assert_eq!((request.command, request.mech, request.data, consumed), (SaslCommand::Auth, &b"PLAIN"[..], &b"\0u\0p"[..], auth.len()));
        }
        other => panic!("{other:?}"),
    }
    let step = pkt(0x22, b"CRAM-MD5", b"", b"resp", 7, 0);
    assert!(matches!(parse_sasl(&step, &l, true), BinParsed::Sasl { request: SaslRequest { command: SaslCommand::Step, .. }, .. }));
    // Without -S they stay unknown commands.
    assert_eq!(err(&auth).0, Status::UnknownCommand);
}

#[test]
fn sasl_refuses_unauthenticated_commands_and_closes() {
    let get = pkt(0x00, b"k", b"", b"", 1, 0);
    assert_eq!(sasl_err(&get, false), (Status::AuthError, 0x00, 25, 0, true));
    // Quiet ones too, and opcodes that do not exist.
    assert_eq!(sasl_err(&pkt(0x11, b"k", &store_extras(0, 0), b"v", 1, 0), false), (Status::AuthError, 0x11, 33, 0, true));
    assert_eq!(sasl_err(&pkt(0x50, b"", b"", b"", 1, 0), false), (Status::AuthError, 0x50, 24, 0, true));
    // Before the key length check (memcached's order), after the body check.
    let long = pkt(0x00, &[b'k'; 300], b"", b"", 1, 0);
    assert_eq!(sasl_err(&long, false).0, Status::AuthError);
    assert_eq!(sasl_err(&long, true).0, Status::InvalidArguments);
    let mut short_body = raw(0x00, 5, 0, 2, 1, 0);
    short_body.extend_from_slice(b"kkkkk");
    assert_eq!(sasl_err(&short_body, false), (Status::UnknownCommand, 0x00, 29, 0, true));
    // version is allowed; once authenticated everything is.
    assert!(matches!(parse_sasl(&pkt(0x0b, b"", b"", b"", 1, 0), &Limits::default(), false), BinParsed::Request { .. }));
    assert!(matches!(parse_sasl(&get, &Limits::default(), true), BinParsed::Request { .. }));
}

#[test]
fn sasl_bad_shapes_and_sizes() {
    // Shape errors close; a long mechanism is EINVAL with the data swallowed.
    assert_eq!(sasl_err(&pkt(0x20, b"", b"", b"x", 1, 0), false), (Status::InvalidArguments, 0x20, 24, 0, true));
    assert_eq!(sasl_err(&pkt(0x21, b"", b"", b"x", 1, 0), false), (Status::InvalidArguments, 0x21, 24, 0, true));
    assert!(sasl_err(&pkt(0x21, b"PLAIN", &[0; 4], b"x", 1, 0), false).4);
    let long_mech = pkt(0x21, &[b'X'; 40], b"", b"data", 1, 0);
    assert_eq!(sasl_err(&long_mech, false), (Status::InvalidArguments, 0x21, 64, 4, false));
    // Data memcached could not hold in an unchunked item: ENOMEM, swallowed,
    // decided from the header alone (never buffered).
    let mut big = raw(0x21, 5, 0, 5 + 600_000, 1, 0);
    big.extend_from_slice(b"PLAIN");
    assert_eq!(sasl_err(&big, false), (Status::OutOfMemory, 0x21, 29, 600_000, false));
    let mut huge = raw(0x22, 5, 0, u32::MAX, 1, 0);
    huge.extend_from_slice(b"PLAIN");
    assert_eq!(sasl_err(&huge, true), (Status::OutOfMemory, 0x22, 29, 0, false));
    // Just under the limit waits for the data instead.
    let fits = SASL_DATA_ITEM_MAX - item_size(5, 0, 0) as usize;
    let mut edge = raw(0x21, 5, 0, (5 + fits) as u32, 1, 0);
    edge.extend_from_slice(b"PLAIN");
    assert!(matches!(parse_sasl(&edge, &Limits::default(), false), BinParsed::Incomplete { .. }));
    let mut over = raw(0x21, 5, 0, (5 + fits + 1) as u32, 1, 0);
    over.extend_from_slice(b"PLAIN");
    assert_eq!(sasl_err(&over, false).0, Status::OutOfMemory);
}

// ---------------------------------------------------------------- too large

fn too_large(buf: &[u8]) -> (u8, usize, usize, Option<&[u8]>) {
    match p(buf) {
        BinParsed::Error { response_status: Status::TooLarge, opcode, consumed, swallow, close: false, unlink_key, .. } => {
            (opcode, consumed, swallow, unlink_key)
        }
        other => panic!("{:?}", other),
    }
}

#[test]
fn item_size_matches_memcached() {
    // Boundaries measured against memcached 1.6.18 with -I 1m.
    let max = Limits::default().item_size_max as u64;
    assert_eq!(item_size(1, 0, 1_048_516), max);
    assert_eq!(item_size(1, 1, 1_048_512), max);
}

#[test]
fn too_large_values_are_e2big_and_swallowed_unbuffered() {
    // Only header + extras + key are needed to decide.
    let header_only = |op: u8, flags: u32, vlen: u32| {
        let extras = if matches!(op, 0x0e | 0x0f | 0x19 | 0x1a) { vec![] } else { store_extras(flags, 0) };
        let mut b = raw(op, 1, extras.len() as u8, 1 + extras.len() as u32 + vlen, 0x77, 0);
        b.extend_from_slice(&extras);
        b.push(b'k');
        b
    };
    // Largest value that fits: waits for the value.
    assert_eq!(p(&header_only(0x01, 0, 1_048_516)), BinParsed::Incomplete { needed: Some(33 + 1_048_516) });
    assert_eq!(p(&header_only(0x01, 1, 1_048_512)), BinParsed::Incomplete { needed: Some(33 + 1_048_512) });
    assert_eq!(p(&header_only(0x0e, 0, 1_048_516)), BinParsed::Incomplete { needed: Some(25 + 1_048_516) });
    // One more byte: E2BIG. set and setq unlink the stale item, others don't.
    assert_eq!(too_large(&header_only(0x01, 0, 1_048_517)), (0x01, 33, 1_048_517, Some(&b"k"[..])));
    assert_eq!(too_large(&header_only(0x11, 0, 1_048_517)), (0x11, 33, 1_048_517, Some(&b"k"[..])));
    assert_eq!(too_large(&header_only(0x01, 1, 1_048_513)), (0x01, 33, 1_048_513, Some(&b"k"[..])));
    assert_eq!(too_large(&header_only(0x02, 0, 1_048_517)), (0x02, 33, 1_048_517, None));
    assert_eq!(too_large(&header_only(0x13, 0, 1_048_517)), (0x13, 33, 1_048_517, None));
    assert_eq!(too_large(&header_only(0x0e, 0, 1_048_517)), (0x0e, 25, 1_048_517, None));
    assert_eq!(too_large(&header_only(0x1a, 0, 1_048_517)), (0x1a, 25, 1_048_517, None));
    // Enormous bodies too (memcached hangs on >= 2^31; we answer E2BIG).
    assert_eq!(too_large(&header_only(0x01, 0, 0xffff_ffff - 9)).2, 0xffff_ffff - 9);
    // A larger -I moves the boundary.
    let limits = Limits { item_size_max: 2 * 1024 * 1024, ..Limits::default() };
    assert!(matches!(parse(&header_only(0x01, 0, 1_048_517), &limits), BinParsed::Incomplete { .. }));
}

// ---------------------------------------------------------------- framing

/// Every split point of `packet` is Incomplete with the right `needed`,
/// and the whole packet followed by more bytes consumes exactly `consumed`.
fn check_splits(packet: &[u8], consumed: usize) {
    let fixed = HEADER_LEN + packet[4] as usize + be16(&packet[2..4]) as usize;
    for i in 0..consumed {
        let want = if i < HEADER_LEN {
            None
        } else if i < fixed {
            Some(fixed)
        } else {
            Some(consumed)
        };
        assert_eq!(p(&packet[..i]), BinParsed::Incomplete { needed: want }, "split at {i} of {:02x?}", packet);
    }
    let mut more = packet.to_vec();
    more.extend_from_slice(&pkt(0x0a, b"", b"", b"", 0, 0));
    match p(&more) {
        BinParsed::Request { consumed: c, .. } | BinParsed::Error { consumed: c, .. } => assert_eq!(c, consumed),
        other => panic!("{:?}", other),
    }
}

#[test]
fn partial_buffers_at_every_split_point() {
    let k: &[u8] = b"some-key";
    let packets = vec![
        pkt(0x0a, b"", b"", b"", 1, 2),
        pkt(0x0b, b"", b"", b"", 1, 2),
        pkt(0x07, b"", b"", b"", 1, 2),
        pkt(0x08, b"", &7u32.to_be_bytes(), b"", 1, 2),
        pkt(0x00, k, b"", b"", 1, 2),
        pkt(0x0d, k, b"", b"", 1, 2),
        pkt(0x04, k, b"", b"", 1, 2),
        pkt(0x10, b"items", b"", b"", 1, 2),
        pkt(0x10, b"", b"", b"", 1, 2),
        pkt(0x01, k, &store_extras(3, 4), b"a value of some length", 1, 2),
        pkt(0x12, k, &store_extras(0, 0), b"", 1, 2),
        pkt(0x0f, k, b"", b"prefix", 1, 2),
        pkt(0x05, k, &arith_extras(1, 2, 3), b"", 1, 2),
        pkt(0x24, k, &9u32.to_be_bytes(), b"", 1, 2),
        // errors
        pkt(0x50, b"", b"", b"xyz", 1, 2),
        pkt(0x00, k, &[0; 4], b"", 1, 2),
    ];
    for packet in &packets {
        let consumed = match p(packet) {
            BinParsed::Request { consumed, .. } | BinParsed::Error { consumed, .. } => consumed,
            other => panic!("{:?}", other),
        };
        check_splits(packet, consumed);
    }
}

#[test]
fn surplus_body_of_stat_and_touch_is_the_next_packet() {
    // memcached consumes only header + extras + key for these and reads the
    // rest of the announced body as the next packet (recorded: the noop
    // inside the surplus was answered).
    let noop = pkt(0x0a, b"", b"", b"", 8, 0);
    let mut b = raw(0x1c, 1, 4, 5 + 24, 3, 0);
    b.extend_from_slice(&[0, 0, 0, 0, b'g']);
    b.extend_from_slice(&noop);
    match p(&b) {
        BinParsed::Request { request, consumed } => {
            assert_eq!((request.opcode, request.key, consumed), (Opcode::Touch, &b"g"[..], 29));
            assert_eq!(req(&b[consumed..]).opcode, Opcode::Noop);
        }
        other => panic!("{:?}", other),
    }
    let mut b = raw(0x10, 3, 0, 3 + 24, 3, 0);
    b.extend_from_slice(b"pid");
    // Decided without waiting for the surplus.
    assert!(matches!(p(&b), BinParsed::Request { consumed: 27, .. }));
    for op in [0x1d, 0x1e, 0x23, 0x24] {
        let mut b = raw(op, 1, 4, 100, 3, 0);
        b.extend_from_slice(&[0, 0, 0, 0, b'g']);
        assert!(matches!(p(&b), BinParsed::Request { consumed: 29, .. }), "{op:#x}");
    }
}

#[test]
fn bad_magic_closes_once_a_header_is_in() {
    let mut b = pkt(0x0a, b"", b"", b"", 0, 0);
    for magic in [0x00, 0x81, b'g', 0xff] {
        b[0] = magic;
        assert_eq!(p(&b), BinParsed::Close);
        assert_eq!(p(&b[..23]), BinParsed::Incomplete { needed: None });
    }
    assert!(is_binary(0x80));
    assert!(!is_binary(b'g'));
}

// ---------------------------------------------------------------- encoders

#[test]
fn encoders_build_exact_headers() {
    let mut out = Vec::new();
    response(&mut out, ResponseHead::new(0x0cu8, Status::KeyExists, 0x0102_0304, 0x1122_3344_5566_7788), b"EX", b"KEY", b"value");
    assert_eq!(
        out,
        hex("810c0003020000020000000a010203041122334455667788\
             45584b455976616c7565")
    );
    // header() leaves the body to the caller.
    let mut out = vec![0xee];
    header(&mut out, ResponseHead::new(Opcode::GetK, Status::Success, 9, 10), 4, 3, 1000);
    assert_eq!(out, hex("ee810c000304000000000003e800000009000000000000000a"));
    // get_hit_header + value == get_hit
    let (mut a, mut b) = (Vec::new(), Vec::new());
    get_hit_header(&mut a, Opcode::GatKQ, 1, 2, 3, b"kk", 5);
    a.extend_from_slice(b"hello");
    get_hit(&mut b, Opcode::GatKQ, 1, 2, 3, b"kk", b"hello");
    assert_eq!(a, b);
    // error_message carries the given text.
    let mut out = Vec::new();
    error_message(&mut out, Opcode::SetQ, Status::OutOfMemory, 5, OOM_ITEM);
    let (r, n) = decode_response(&out).unwrap().unwrap();
    assert_eq!((n, r.opcode, r.status, r.opaque, r.cas, r.value), (out.len(), 0x11, 0x82, 5, 0, OOM_ITEM));
}

/// Encoders against the recorded replies (see `rec`).
#[test]
fn encoders_match_recorded_memcached_replies() {
    let check = |vector: (&str, &str, bool), build: &dyn Fn(&mut Vec<u8>)| {
        let mut out = Vec::new();
        build(&mut out);
        assert_eq!(out, hex(vector.1), "request {}", vector.0);
    };
    use Opcode::*;
    check(rec::NOOP, &|o| success(o, Noop, 0x0102_0304, 0));
    check(rec::VERSION, &|o| version(o, 5, b"1.6.18"));
    check(rec::GET_MISS, &|o| get_miss(o, Get, 7, b"nokey"));
    check(rec::GETK_MISS, &|o| get_miss(o, GetK, 7, b"nokey"));
    check(rec::SET, &|o| success(o, Set, 9, 1));
    check(rec::GET_HIT, &|o| get_hit(o, Get, 7, 1, 0xdeadbeef, b"k", b"hello"));
    check(rec::GETK_HIT, &|o| get_hit(o, GetK, 8, 1, 0xdeadbeef, b"k", b"hello"));
    check(rec::GETQ_HIT, &|o| get_hit(o, GetQ, 10, 1, 0xdeadbeef, b"k", b"hello"));
    check(rec::GETKQ_HIT, &|o| get_hit(o, GetKQ, 11, 1, 0xdeadbeef, b"k", b"hello"));
    check(rec::TOUCH_HIT, &|o| touch_hit(o, 12, 1, 0xdeadbeef));
    check(rec::GAT_HIT, &|o| get_hit(o, Gat, 13, 1, 0xdeadbeef, b"k", b"hello"));
    check(rec::GATK_HIT, &|o| get_hit(o, GatK, 14, 1, 0xdeadbeef, b"k", b"hello"));
    check(rec::TOUCH_MISS, &|o| get_miss(o, Touch, 15, b"zz"));
    check(rec::GATK_MISS, &|o| get_miss(o, GatK, 16, b"zz"));
    check(rec::ADD_EXISTS, &|o| status_only(o, Add, Status::KeyExists, 17));
    check(rec::REPLACE_MISS, &|o| status_only(o, Replace, Status::KeyNotFound, 18));
    check(rec::ADDQ_EXISTS_NOOP, &|o| {
        status_only(o, AddQ, Status::KeyExists, 19);
        success(o, Noop, 0, 0);
    });
    check(rec::SET_CAS_MISMATCH, &|o| status_only(o, Set, Status::KeyExists, 21));
    check(rec::INCR_MISS_NOCREATE, &|o| status_only(o, Increment, Status::KeyNotFound, 22));
    check(rec::INCR_MISS_CREATE, &|o| incr_result(o, Increment, 23, 3, 10));
    check(rec::INCR_HIT, &|o| incr_result(o, Increment, 24, 4, 15));
    check(rec::DECR_HIT, &|o| incr_result(o, Decrement, 25, 5, 0));
    check(rec::INCR_NONNUMERIC, &|o| status_only(o, Increment, Status::NonNumeric, 26));
    check(rec::DELETE_MISS, &|o| status_only(o, Delete, Status::KeyNotFound, 27));
    check(rec::DELETE_HIT, &|o| success(o, Delete, 28, 0));
    check(rec::APPEND_MISS, &|o| status_only(o, Append, Status::NotStored, 29));
    check(rec::APPEND_HIT, &|o| success(o, Append, 30, 6));
    check(rec::SET_TOO_LARGE_NOOP, &|o| {
        status_only(o, Set, Status::TooLarge, 31);
        success(o, Noop, 0, 0);
    });
    check(rec::UNKNOWN_NOOP, &|o| {
        status_only(o, 0x50u8, Status::UnknownCommand, 33);
        success(o, Noop, 34, 0);
    });
    check(rec::STAT_RESET, &|o| stat_end(o, 35));
    check(rec::STAT_UNKNOWN, &|o| status_only(o, Stat, Status::KeyNotFound, 36));
    check(rec::STAT_SIZES, &|o| {
        stat(o, 37, b"sizes_status", b"disabled");
        stat_end(o, 37);
    });
    check(rec::FLUSH, &|o| success(o, Flush, 38, 0));
    check(rec::FLUSH_DISABLED, &|o| {
        status_only(o, Flush, Status::AuthError, 3);
        status_only(o, FlushQ, Status::AuthError, 4);
        success(o, Noop, 0, 0);
    });
    check(rec::GET_BAD_EXTRAS, &|o| status_only(o, Get, Status::InvalidArguments, 40));
    check(rec::KEYLEN_OVER_BODY, &|o| status_only(o, Get, Status::UnknownCommand, 41));
    check(rec::KEY_TOO_LONG, &|o| status_only(o, Get, Status::InvalidArguments, 42));
    check(rec::QUIT, &|o| success(o, Quit, 43, 0));
    check(rec::SETQ_BAD_EXTRAS, &|o| status_only(o, SetQ, Status::InvalidArguments, 45));
}

#[test]
fn decode_response_round_trips_and_waits() {
    let mut out = Vec::new();
    get_hit(&mut out, Opcode::GetK, 1, 2, 3, b"key", b"value");
    for i in 0..out.len() {
        assert_eq!(decode_response(&out[..i]), Ok(None));
    }
    let (r, n) = decode_response(&out).unwrap().unwrap();
    assert_eq!(n, out.len());
    assert_eq!((r.opcode, r.status, r.opaque, r.cas), (0x0c, 0, 1, 2));
    assert_eq!((r.extras, r.key, r.value), (&3u32.to_be_bytes()[..], &b"key"[..], &b"value"[..]));
    out[0] = 0x80;
    assert_eq!(decode_response(&out), Err(()));
}

// ---------------------------------------------------------------- model server

#[derive(Clone)]
struct Item {
    flags: u32,
    value: Vec<u8>,
    cas: u64,
}

/// A minimal single-connection server implementing the module docs'
/// "what the server decides" list, enough to replay the recordings.
struct Model {
    items: HashMap<Vec<u8>, Item>,
    last_cas: u64,
    inbuf: Vec<u8>,
    swallow: usize,
    closed: bool,
    limits: Limits,
}

impl Model {
    fn new() -> Self {
        Model { items: HashMap::new(), last_cas: 0, inbuf: Vec::new(), swallow: 0, closed: false, limits: Limits::default() }
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        self.inbuf.extend_from_slice(bytes);
        while !self.closed {
            if self.swallow > 0 {
                let n = self.swallow.min(self.inbuf.len());
                self.inbuf.drain(..n);
                self.swallow -= n;
                if self.swallow > 0 {
                    return;
                }
            }
            let Model { items, last_cas, inbuf, limits, .. } = self;
            let (consumed, swallow, close) = match parse(inbuf, limits) {
                BinParsed::Incomplete { needed } => {
                    if let Some(n) = needed {
                        assert!(n > inbuf.len());
                    }
                    return;
                }
                BinParsed::Close => (0, 0, true),
                BinParsed::Error { response_status, opcode, opaque, consumed, swallow, close, unlink_key } => {
                    if let Some(key) = unlink_key {
                        items.remove(key);
                    }
                    status_only(out, opcode, response_status, opaque);
                    (consumed, swallow, close)
                }
                BinParsed::Request { request, consumed } => {
                    let close = execute(items, last_cas, &request, out);
                    (consumed, 0, close)
                }
                BinParsed::Sasl { .. } => panic!("parse (without -S) returned a SASL request"),
            };
            self.inbuf.drain(..consumed);
            self.swallow = swallow;
            self.closed = close;
        }
    }
}

/// Execute one request; returns whether to close the connection.
fn execute(items: &mut HashMap<Vec<u8>, Item>, last_cas: &mut u64, r: &BinRequest<'_>, out: &mut Vec<u8>) -> bool {
    let op = r.opcode;
    let quiet = op.quiet();
    let mut next_cas = || {
        *last_cas += 1;
        *last_cas
    };
    let fail = |out: &mut Vec<u8>, status: Status| status_only(out, op, status, r.opaque);
    match op.command() {
        Command::Noop => success(out, op, r.opaque, 0),
        Command::Version => version(out, r.opaque, b"1.6.18"),
        Command::Quit => {
            if !quiet {
                success(out, op, r.opaque, 0);
            }
            return true;
        }
        Command::Flush => {
            items.clear();
            if !quiet {
                success(out, op, r.opaque, 0);
            }
        }
        Command::Get | Command::Gat | Command::Touch => match items.get(r.key) {
            Some(item) if op.command() == Command::Touch => touch_hit(out, r.opaque, item.cas, item.flags),
            Some(item) => get_hit(out, op, r.opaque, item.cas, item.flags, r.key, &item.value),
            None if quiet => {}
            None => get_miss(out, op, r.opaque, r.key),
        },
        Command::Set | Command::Add | Command::Replace => {
            let Extras::Store { flags, .. } = r.extras else { panic!("store extras") };
            let existing = items.get(r.key);
            let status = if r.cas != 0 {
                match existing {
                    None => Status::KeyNotFound,
                    Some(item) if item.cas != r.cas => Status::KeyExists,
                    Some(_) => Status::Success,
                }
            } else {
                match (op.command(), existing) {
                    (Command::Add, Some(_)) => Status::KeyExists,
                    (Command::Replace, None) => Status::KeyNotFound,
                    _ => Status::Success,
                }
            };
            if status == Status::Success {
                let cas = next_cas();
                items.insert(r.key.to_vec(), Item { flags, value: r.value.to_vec(), cas });
                if !quiet {
                    success(out, op, r.opaque, cas);
                }
            } else {
                fail(out, status);
            }
        }
        Command::Append | Command::Prepend => match items.get_mut(r.key) {
            None => fail(out, Status::NotStored),
            Some(item) if r.cas != 0 && r.cas != item.cas => fail(out, Status::KeyExists),
            Some(item) => {
                if op.command() == Command::Append {
                    item.value.extend_from_slice(r.value);
                } else {
                    item.value.splice(0..0, r.value.iter().copied());
                }
                *last_cas += 1;
                item.cas = *last_cas;
                if !quiet {
                    success(out, op, r.opaque, item.cas);
                }
            }
        },
        Command::Delete => match items.get(r.key) {
            None => fail(out, Status::KeyNotFound),
            Some(item) if r.cas != 0 && r.cas != item.cas => fail(out, Status::KeyExists),
            Some(_) => {
                items.remove(r.key);
                if !quiet {
                    success(out, op, r.opaque, 0);
                }
            }
        },
        Command::Increment | Command::Decrement => {
            let Extras::Arith { delta, initial, .. } = r.extras else { panic!("arith extras") };
            let incr = op.command() == Command::Increment;
            let (value, cas) = match items.get_mut(r.key) {
                Some(item) if r.cas != 0 && r.cas != item.cas => return { fail(out, Status::KeyExists); false },
                Some(item) => {
                    let Some(n) = std::str::from_utf8(&item.value).ok().and_then(|s| s.parse::<u64>().ok()) else {
                        fail(out, Status::NonNumeric);
                        return false;
                    };
                    let n = if incr { n.wrapping_add(delta) } else { n.saturating_sub(delta) };
                    item.value = n.to_string().into_bytes();
                    *last_cas += 1;
                    item.cas = *last_cas;
                    (n, item.cas)
                }
                None => match initial {
                    None => {
                        fail(out, Status::KeyNotFound);
                        return false;
                    }
                    Some(initial) => {
                        let cas = next_cas();
                        items.insert(r.key.to_vec(), Item { flags: 0, value: initial.to_string().into_bytes(), cas });
                        (initial, cas)
                    }
                },
            };
            if !quiet {
                incr_result(out, op, r.opaque, cas, value);
            }
        }
        Command::Stat => {
            if r.key.starts_with(b"reset") {
                stat_end(out, r.opaque);
            } else if r.key == b"sizes" {
                stat(out, r.opaque, b"sizes_status", b"disabled");
                stat_end(out, r.opaque);
            } else {
                fail(out, Status::KeyNotFound);
            }
        }
    }
    false
}

fn request_bytes(name: &str, hex_request: &str) -> Vec<u8> {
    if name == "SET_TOO_LARGE_NOOP" {
        let mut b = pkt(0x01, b"k", &store_extras(0, 0), &vec![b'a'; 1_048_517], 31, 0);
        b.extend_from_slice(&pkt(0x0a, b"", b"", b"", 0, 0));
        return b;
    }
    hex(hex_request)
}

/// Replay the recorded session through parse + Model + encoders, feeding
/// the bytes in chunks of `chunk` to exercise incremental parsing.
fn replay(chunk: usize) {
    let mut model = Model::new();
    for (name, (request, reply, closed)) in rec::SEQUENCE {
        let bytes = request_bytes(name, request);
        let mut out = Vec::new();
        for piece in bytes.chunks(chunk) {
            model.feed(piece, &mut out);
        }
        assert_eq!(out, hex(reply), "{name} (chunk {chunk})");
        assert_eq!(model.closed, closed, "{name}");
    }
    for (name, (request, reply, closed)) in rec::CLOSING {
        let mut model = Model::new();
        let mut out = Vec::new();
        for piece in request_bytes(name, request).chunks(chunk) {
            model.feed(piece, &mut out);
        }
        assert_eq!(out, hex(reply), "{name} (chunk {chunk})");
        assert_eq!(model.closed, closed, "{name}");
    }
}

#[test]
fn replaying_recorded_sessions_reproduces_memcached_bytes() {
    replay(usize::MAX);
}

#[test]
fn replaying_recorded_sessions_byte_by_byte() {
    for chunk in [1, 7, 24, 25, 4096] {
        replay(chunk);
    }
}

// ---------------------------------------------------------------- robustness

/// Invariants of any parse result on any input, then the same for the rest
/// of `buf` read as a pipelined stream.
fn check_invariants(buf: &[u8], limits: &Limits) {
    let mut rest = buf;
    while let Some(advance) = check_one(rest, limits) {
        rest = &rest[advance.min(rest.len())..];
    }
}

/// Check one parse; returns how far a server would advance (consumed plus
/// swallow), or `None` where the stream stops.
fn check_one(buf: &[u8], limits: &Limits) -> Option<usize> {
    let parsed = parse(buf, limits);
    assert_eq!(parsed, parse(buf, limits), "deterministic");
    // The result depends only on the bytes consumed, and every shorter
    // prefix is Incomplete with a `needed` no further than `consumed`.
    let consumed = match parsed {
        BinParsed::Request { consumed, .. } | BinParsed::Error { consumed, .. } => Some(consumed),
        _ => None,
    };
    if let Some(c) = consumed {
        assert_eq!(parse(&buf[..c], limits), parsed, "depends only on consumed bytes");
        for i in 0..c {
            match parse(&buf[..i], limits) {
                BinParsed::Incomplete { needed } => assert!(needed.map_or(true, |n| n > i && n <= c)),
                other => panic!("prefix {i} of {c}: {:?}", other),
            }
        }
    }
    check_result(buf, limits);
    match parsed {
        BinParsed::Request { consumed, .. } => Some(consumed),
        BinParsed::Error { close: false, consumed, swallow, .. } => Some(consumed + swallow),
        _ => None,
    }
}

fn check_result(buf: &[u8], limits: &Limits) {
    check_parsed(buf, parse(buf, limits), None);
    check_parsed(buf, parse_sasl(buf, limits, false), Some(false));
    check_parsed(buf, parse_sasl(buf, limits, true), Some(true));
}

/// `sasl`: how `parsed` was produced (None: without -S).
fn check_parsed(buf: &[u8], parsed: BinParsed<'_>, sasl: Option<bool>) {
    let base = buf.as_ptr() as usize;
    let within = |s: &[u8]| s.is_empty() || (s.as_ptr() as usize >= base && s.as_ptr() as usize + s.len() <= base + buf.len());
    match parsed {
        BinParsed::Sasl { request, consumed } => {
            assert!(sasl.is_some());
            assert!(consumed >= HEADER_LEN && consumed <= buf.len());
            assert!(within(request.mech) && within(request.data));
            assert!(request.mech.len() <= MAX_SASL_MECH_LEN);
            assert_eq!(request.opcode, buf[1]);
        }
        BinParsed::Request { request, consumed } => {
            assert!(consumed >= HEADER_LEN && consumed <= buf.len());
            assert!(within(request.key) && within(request.value));
            assert!(request.key.len() <= KEY_MAX_LENGTH);
            assert_eq!(request.opcode.code(), buf[1]);
            // Unauthenticated, only version gets through.
            assert!(sasl != Some(false) || request.opcode == Opcode::Version);
        }
        BinParsed::Incomplete { needed } => {
            if let Some(n) = needed {
                assert!(n > buf.len());
            } else {
                assert!(buf.len() < HEADER_LEN);
            }
        }
        BinParsed::Error { consumed, close, swallow, unlink_key, opcode, .. } => {
            assert!(consumed >= HEADER_LEN && consumed <= buf.len());
            assert!(!close || swallow == 0);
            assert_eq!(opcode, buf[1]);
            if let Some(k) = unlink_key {
                assert!(within(k));
            }
        }
        BinParsed::Close => assert_ne!(buf[0], REQUEST_MAGIC),
    }
}

#[test]
fn random_input_never_panics() {
    let mut rng = XorShift64Star(0x9e37_79b9_7f4a_7c15);
    let small = Limits { item_size_max: 200, ..Limits::default() };
    let mut buf = Vec::new();
    for _ in 0..200_000 {
        buf.clear();
        let len = rng.below(80) as usize;
        for _ in 0..len {
            buf.push(rng.next_u64() as u8);
        }
        if !buf.is_empty() && rng.below(4) != 0 {
            buf[0] = REQUEST_MAGIC;
        }
        if buf.len() >= 12 && rng.below(2) == 0 {
            // Plausible opcode and small lengths so that more paths are reached.
            buf[1] = rng.below(0x28) as u8;
            buf[2] = 0;
            buf[3] = rng.below(8) as u8;
            buf[4] = [0, 4, 8, 20, rng.below(24) as u8][rng.below(5) as usize];
            let body = rng.below(48) as u32;
            buf[8..12].copy_from_slice(&body.to_be_bytes());
        }
        check_invariants(&buf, &Limits::default());
        check_invariants(&buf, &small);
    }
}

#[test]
fn mutated_valid_packets_never_panic() {
    let mut rng = XorShift64Star(42);
    let seeds = [
        pkt(0x01, b"key", &store_extras(1, 2), b"value", 1, 2),
        pkt(0x05, b"key", &arith_extras(1, 2, 3), b"", 1, 2),
        pkt(0x1d, b"key", &5u32.to_be_bytes(), b"", 1, 2),
        pkt(0x10, b"items", b"", b"", 1, 2),
        pkt(0x08, b"", &5u32.to_be_bytes(), b"", 1, 2),
        pkt(0x21, b"PLAIN", b"", b"secret", 1, 2),
    ];
    for _ in 0..30_000 {
        // A pipelined stream of one to four packets, then a few mutations.
        let mut b = Vec::new();
        for _ in 0..1 + rng.below(4) {
            b.extend_from_slice(&seeds[rng.below(seeds.len() as u64) as usize]);
        }
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(b.len() as u64) as usize;
            b[i] = rng.next_u64() as u8;
        }
        let cut = rng.below(b.len() as u64 + 1) as usize;
        check_invariants(&b[..cut], &Limits::default());
        check_invariants(&b, &Limits::default());
    }
}

// ---------------------------------------------------------------- shape survey

/// Random request shapes (every opcode 0x00..=0x26 and a few unknown ones;
/// key 0/1/3/251 bytes, extras 0/3/4/8/20, value 0/2, sometimes a body
/// shorter than key + extras), each sent to memcached 1.6.18 on a fresh
/// connection followed by a noop, recorded by /tmp/binrec/shapes.py.
#[allow(dead_code)]
mod survey {
    // (packet hex, first reply status or -1 for none, closed, trailing noop answered)
    pub const SHAPES: [(&str, i32, bool, bool); 564] = [
        ("800500011400000000000015d34dcfd5000000000000000024b6f057b371f6f48f35dbba2851f9a6fafb3cc763", 0, false, true),
        ("801400010000000000000000c2c2ce80000000000000000066", 129, true, false),
        ("800e00010300000000000006de424c00000000000000000592b5de623131", 4, true, false),
        ("801d00000000000000000000f021659f0000000000000005", 4, true, false),
        ("802400fb04000000000000fffb71fd400000000000000000f516f2926164656261646465646265646463666464666664636464636566656261646663636564636466666166666666666265636661646564626366656365626662666366656361616561646562626464666565626666616366636262616665666366656465636566636262626564626665666261636465666362616262666561636165656561666564636166656566656264626264636664656563636566626166656365616365616166656264666562626661646362666663626161636463616364666365646664646361656362666466646364616466666461646366626561616461656662666462626363636266656463656365616463626661666466", 4, true, false),
        ("800600031400000000000019b19f06e6000000000000000028ac5822487d387817d894fb67ac1567d292149f6264623131", 4, true, false),
        ("801e0003080000000000000bbe43f7b00000000000000000b2cae0b32a36aeda616261", 4, true, false),
        ("80150003080000000000000bcb0b93c6000000000000000092eb30e605f8924c616465", 4, true, false),
        ("80040003040000000000000776c2bbca000000000000000589f136ce626462", 4, true, false),
        ("80fe000103000000000000045e0202570000000000000000786a8362", 129, false, false),
        ("801400000000000000000002f7a4645700000000000000003131", 4, true, false),
        ("802300000800000000000002d1cdd1c40000000000000005f19df7bf209b7d9c", 129, true, false),
        ("8019000000000000000000007d5ec4550000000000000000", 4, true, false),
        ("800a000014000000000000165e7c5d7100000000000000005e220b50dd7b326f2a55bffb6cdda2beffffffff3131", 4, true, false),
        ("80250001140000000000001502cbea75000000000000000023a81ac3aaca64dc414cffc570766a4dffffffff63", 129, false, false),
        ("800600001400000000000016c556bc7f000000000000000094774304fa03bb8518634d5ab9bd98665ed37cdc3131", 4, true, false),
        ("8011000000000000000000020315557d00000000000000053131", 4, true, false),
        ("800100fb00000000000000fb853bcc4e00000000000000006666636366636465656166656466646363616262616165646465646162666266656361656664616666666564626263636465626365636361626562656565616664636365656364626165656566656165636361666664656461646164616265656665656464616161646564666364616561616565626665646164626562626264626362616662626563636363666263626162666662656166636561626162636365666361666564626364666466626666666364666161616464636465646461646565636663626364626461646661656661626462636465666366636362656561616263616563666364656363646162636266636263616366626261", 4, true, false),
        ("80030000000000000000000098a9274d0000000000000005", 4, true, false),
        ("800b00fb00000000000000fda2bef699000000000000000063636463636361666566666264666362636364636562656265646161656265646164616562616364616361636361666562646266616162626561666565656161666363636665646465616163656165656663616166646364666263616364626363636364646663666365626265626166666364656164636365666564656265656464646466626165616466626266666264636463626661636362666166666263656464616665616566616466666461666463616361636262616264636665616466666461666662656563616366656261666663626363646363656363656364616565666163636363616661666264636666616162666666616561663131", 4, true, false),
        ("800e00000300000000000003d2e8d3740000000000000000f42655", 4, true, false),
        ("8004000314000000000000076808c2f300000000000000053c647d82d646fa1742a8ce5af86025da2cd9497f646461", 129, true, false),
        ("803000fb14000000000001110dd18f7a00000000000000002cb333704d8fcb65a4ea5a9eb1f08b0d805a84b565646262636464656263666365626562666564666566616366626461636266636163656462646661626166616162666161616161636664636666666266646562666165626363666364646565626562646565666462616566656263656365636366646562636264646265656264666266636462636363666464656165616264666265656364636563666464616563666464656264616366666564646261656661626262626664626562666661666362656164656164666262636262616164636463666466666466636664626664646564666463646562666164626665636463646265636162616161656666666564666663616461626463646666643131", 4, true, false),
        ("801500000400000000000004e26ff7130000000000000000bdbe75b1", 4, true, false),
        ("801f0003080000000000000de0f139820000000000000000b2b889985d626c786562633131", 129, false, false),
        ("80fe000300000000000000001ded67710000000000000000666365", 129, true, false),
        ("800c00010000000000000001500f8590000000000000000062", 1, false, true),
        ("800600000800000000000008d78aa81b00000000000000001a318c51d479977e", 4, true, false),
        ("802400010300000000000006c62534c00000000000000005073be8653131", 4, true, false),
        ("802500fb0800000000000103b0e29ead00000000000000003702caaf6fc7e56d6166636163636266666365636662636164636566626662646463616465636563646664646664626161666165656464666466666364626164666663616162666264656565626466646261616466646562646563636361656361616561616561646463626662636165666365626661626666636464616565616662626365656266636661656264626265666564616565626165626261636664666662666163646462616561636461616666636161646364666466666661656263666563666264626364666162646165646261666161616664666265616366626365616264636664626466636565616361646561666563626665626461636362656665", 4, true, false),
        ("801c00001400000000000016ee2bce2600000000000000053c454fd68ef31b8b141e6aef0629005bffffffff3131", 4, true, false),
        ("8030000114000000000000174b43495500000000000000054094fbb057dc3d03570f7b86ae3dc9adffffffff613131", 129, false, false),
        ("801400000400000000000001e2b4d5b300000000000000004a413b50", 129, true, false),
        ("8009000000000000000000024e5b7eeb00000000000000003131", 4, true, false),
        ("802200fb0800000000000103cef332b40000000000000000ce96f813c9f2ba856661646563656662636363636166646266666661646565636564646164626361636565646261656563666561646666626564626362636361616363616564616264656463626364616265666661616564666665646263666464656462646563656464646266666165626566636261646566636563626366656164626461636561656362666165616463656666646666626366616164646165656664636661666161626363646363666266646664666666616666646462616565636563646361666564646465636665646363656465646565636562636362636166626163636662656266666462646265626462656166666265666666646364656566", 4, true, false),
        ("80110003040000000000000927e63eb800000000000000051ba6cedf6462653131", 4, true, false),
        ("800a00010400000000000005fec1b5410000000000000000be47026365", 4, true, false),
        ("80180003000000000000000386b88ed00000000000000000656664", 4, true, false),
        ("801100011400000000000015d2d4a0f400000000000000001bee261be870b7b3cddd86ee92c29e90c851d19663", 4, true, false),
        ("802200fb00000000000000fb823f42dc00000000000000056566626466616663646464636662666263636165666562666362626161656165626164616363626266666566666461636464636661616266626166646563626565616162636662656461666466666164646364666264636565626366636463616362656363626661666666646164626362616663646666666663626363636462636563636561636166636162626663656365656662666362616664646465626261656365666564666264666465636166656162656265616461636565666366636461636364636263616262636361656465646664656562646464636162646261656365626461656161646165616265666665636266656162656463", 4, true, false),
        ("801200fb04000000000000ffa76657b500000000000000003bba7a636264626262626161626261646665636461636461636466666166636464656565626466626666626462646264656265636166636365636165636366666564616166636562646565656664616464616164616362656266636565626262656566636162666463616266656165656362616364626464626265656166616261646564626564636561636461666463636465666263666666636466626663636563636362646262616263656266646463666361616366646665656464666263636266616363646264646466656362636366626563646164646665656165626563666464636465666666626562616263646262666661626564646161636261", 4, true, false),
        ("801a00000000000000000000c113a91a0000000000000005", 4, true, false),
        ("80200001000000000000000049b5db28000000000000000062", 129, true, false),
        ("800600001400000000000014a6e54989000000000000000093e8721b41efd683735367fef1718e55ffffffff", 4, true, false),
        ("80050003140000000000000494ded19b0000000000000005ac3a1b8389a29d21733b37c4fc9f9093ffffffff666464", 129, true, false),
        ("802400000000000000000002c150844300000000000000003131", 4, true, false),
        ("8009000100000000000000015cac27aa000000000000000061", -1, false, true),
        ("801f000114000000000000150f9521db0000000000000000aa7f69900705a0d6d26fdc448dc4cee4dc0c1d0565", 129, false, false),
        ("800700fb00000000000000fb4070f48500000000000000006266646563616166616663636262666165626664656266616462626162646264626565646164626364666566636566656365666262616464616164626464666261646464646664666562656264616161646364626266666163666262666564656263646366626363626563616261626565626366616665616466656266616561636162636665616463666161626464616666666665616162626664636664636161666166646166616263626261656265656664666561626261616262616364626565616263656465656461626461646364636663656662626364626262636665626165626263666463616463646464646666626261636165656266", 4, true, false),
        ("801200011400000000000013bdf081450000000000000000226b752cbb611335fe5eb38562021298ffffffff66", 129, true, false),
        ("801b00fb04000000000000bf70fa2701000000000000000091f070db6661666666656266656566616663646365656266656462636563626461616566626265616564666563666562626163666561646266616266666262626165616166656364656363636361626564636461666165646663646463616462646666616564646161656164666564666563626262666364656361636261656262636165626166636363626161646463626461636165666265656261636363616163646363646262656466636463616665636365636363656365626461616266646363646163626266646361626664636463666166636266636261616266616166646664666265666561636464656565636164616663666366626264656663", 129, true, false),
        ("8026000300000000000000053cfff54d00000000000000006166613131", 129, false, false),
        ("800a00010800000000000009c2968827000000000000000034d39b73d9b18e1665", 4, true, false),
        ("800d0001040000000000000785794207000000000000000503402add653131", 4, true, false),
        ("802600000300000000000003eecd5d060000000000000000d7db76", 129, false, false),
        ("803c00010800000000000009962fa33300000000000000007d3a6dbbefb367ff65", 129, false, false),
        ("800400000000000000000002f9c9ecbd00000000000000003131", 4, true, false),
        ("80050000000000000000000243065a0a00000000000000053131", 4, true, false),
        ("800400030000000000000001a44f37920000000000000000656365", 129, true, false),
        ("803c00030000000000000003ce9f5b9c0000000000000000626361", 129, false, false),
        ("802400000000000000000000e88fbeec0000000000000000", 4, true, false),
        ("802500001400000000000014fc111b9f0000000000000000b2968764fae4329c9311a00f6b909efeffffffff", 129, false, false),
        ("80010000080000000000000802738b9500000000000000002d992e769b60d831", 4, true, false),
        ("801700030000000000000005b37c913f00000000000000006464613131", 4, true, false),
        ("800000031400000000000019659090c20000000000000005a5538db83a177e4dd6ccbf75cb2e06c7ffffffff6166613131", 4, true, false),
        ("801e0001040000000000000574cfe9ba0000000000000000d8328f0262", -1, false, true),
        ("802600000000000000000000f48dd3a10000000000000000", 129, false, true),
        ("802200000400000000000006b390ab240000000000000005455e69983131", 4, true, false),
        ("801a00000400000000000006e7a8ee60000000000000000539a4ff0d3131", 4, true, false),
        ("801f00010300000000000006d52aba1c0000000000000000fd3c41623131", 129, false, false),
        ("805000fb00000000000000fd3b54d685000000000000000062656661666363666662646365636164626262626462616666626663666163656266616561666666666566646665626662656362656664646663626365626361616665626266636661616661626163666563646666646664646365646362626663626363626365656261626264666464626262636463626464626265646661646265636162636462636661616263656265626266666163636566616461636461636162616265626661616464646366656465656366626166626165666166626166616166646165666661656361616162646661626161656365616261636166646561636462626661656565636363646561656265626265656462643131", 4, true, false),
        ("800e00fb08000000000001033e8fe87f0000000000000000ff6d631023b24ab26162636562656364636663656563646465616163636566666663666462626561656462626163616161656564646562616665616365636661636365636461666363656365656161656463646465626362646464636463636265666161636362646464646661616364666666656165646361666666646566646661646262656464636366646565646366656663666661656263646265626563646663646162636564626366626462616465656366646361666163646561656261636264616363646563666162646665646666666565666463626665636663656363636561666664646663626261616361646665636264646666626666656165646165", 4, true, false),
        ("802600fb00000000000000fda5fab9fe000000000000000061656265646664656463616364626362626562646465656261636664626465616266646666656465636164666163656264646261626564636565636466656261656162656464616661616563626665626264626464646565616561666265646265636365626661636265626166646562636562626366626563636562636464666661656265666363616466626361626464646361656566666365616364656262636263616361626566656162616164626166666263646561616265646366636562646565636166666263626362646365656363636164616264656461626263616463636664656266646261656262646464666261626261666564623131", 4, true, false),
        ("800e0001040000000000000758e619bb000000000000000041924373653131", 4, true, false),
        ("80140000140000000000001666c05c420000000000000005a39bb7310e5becf1ae5472349ecb6dc7ffffffff3131", 4, true, false),
        ("802600001400000000000014c772996100000000000000054babd0ec719e357f4f258c099fb018478417182a", 129, false, false),
        ("802200000000000000000000128b86290000000000000005", 4, true, false),
        ("800c00010000000000000003708af18b0000000000000000633131", 4, true, false),
        ("801e000303000000000000068fa9aac8000000000000000026df64646265", 4, true, false),
        ("800400030000000000000005ad6dcfdb00000000000000006461653131", 4, true, false),
        ("803c000000000000000000002622b7b40000000000000005", 129, false, true),
        ("80060001080000000000000b9f7282d40000000000000000d3d123ec2755bb86633131", 4, true, false),
        ("800e00000000000000000000b0e3ddda0000000000000005", 4, true, false),
        ("8005000304000000000000077856c385000000000000000504f8bd6e626664", 4, true, false),
        ("801400030300000000000008f5e963400000000000000000084e106562663131", 4, true, false),
        ("80fe00000000000000000002fa0532a600000000000000003131", 129, false, true),
        ("800d0000030000000000000324e033ee000000000000000501aacf", 4, true, false),
        ("800200fb04000000000000ff2efb6a180000000000000000dcf03e8b6361616662646566666564626463616465636361646463636164656461636465656166646665656564626265656566656661636262616561646266646461636663626566656461656364666361626665666266666266636463656464616162646162646565656163656563666664626265636666616666626463616362666466636566626461636662666365666264636366646661626464666264626266656262646464626666626462646164616464636166656666646363666161656564636463636465626363656563666561626365626265666164636462616566616565616566646363636666666465666666626164626161636564616464", 4, true, false),
        ("802500fb00000000000000fb67950bb800000000000000006166636261656561656563646464666465666263656465616665616461636662616664636266666164636566646263626365636362616664626162666563616562626664656165636366666561636461646263626365656364626266656464636361656465666264636466636666666566656462656465656163616465666265636361626366636161656663656165656164646363616266666565656262626162646164636663616263656364636164626663656462666164646462626365646561666463636665666563626461666264656465616461646266616565626564626563626663626262666263656365656666616565626566656161", 4, true, false),
        ("800200030000000000000003805089520000000000000005656361", 4, true, false),
        ("801c00030300000000000008f653c4700000000000000005308dfa6361653131", 4, true, false),
        ("80060003000000000000000553e60cb900000000000000056162653131", 4, true, false),
        ("800d0003140000000000001777c1c01f00000000000000051e8d33ea2cce0ecd85d8b64bd0c876378747b8c1626561", 4, true, false),
        ("801600030400000000000007367d21040000000000000000b1433198656365", 4, true, false),
        ("8025000114000000000000174c1fdb770000000000000005ce216ebf7ef744eb1afc904366d7ed4effffffff613131", 129, false, false),
        ("800f00010300000000000006cf77bb3d0000000000000005ff9c9e613131", 4, true, false),
        ("801300fb0400000000000101f965bdac0000000000000005ed8ec7b866656666636365636364666366646363656364646162626664666466626163666261636362666565626561656662656665626663636264636462666166656663646662626665626166616465616366626365626566646566626366646565656463656665656465616666666166646661656566666466616661646666656165666262616266646161646564636363626565626563636562666365666361656565616366656162616162656662666562646662646461666266656263656562626464616565666162666265656161626661646463636663646164626661666461666566646462626166646465646164656261666362656463616162633131", 4, true, false),
        ("802300000000000000000000c0d07f6c0000000000000000", 4, true, false),
        ("801800000000000000000002024fe16900000000000000003131", 4, true, false),
        ("801700030300000000000006453fe3b20000000000000000d58024666466", 4, true, false),
        ("802000030000000000000003a4a3faa80000000000000000646562", 4, true, false),
        ("80120003000000000000000344d015170000000000000000646565", 4, true, false),
        ("80fe00fb14000000000001110426c9ea0000000000000000c0a095240efe82a1871158bab7ada41df465210163646664656466666366666666656162626563636162616666646366666561646464656563656164666563656465636263646265646162646563626261626263616663666264626564626165636666656262646464626161656665626462616662616564666361616666656566616663616162616162626666626365626565656661616163616166636664626463636163656463666561646664636465616266626163616665646461636165656264666164666661646365636566626362626261666361666163636261636463616162616263666265656361666561666662616362646662666463626566626165646361666364646162646563653131", 4, true, false),
        ("8005000100000000000000003028aa1e000000000000000063", 129, true, false),
        ("803000fb00000000000000fd99f01dfc000000000000000064626561656663626365646365666663646464626366626464636566646466656363656265636665656461616265666461636162646563646365666266666166656663626164626466656362626362646661626666626563646466626365656465626262636666646366666563646561636361616664616366616462646364636263666263626561616465626664636565646163666166656161656562656364646562646665636262616664666261656464656365626464626363646663666365616164656261636666636465636665626564626562616663616266666466656662636664636361616161666665666161646465656562626561623131", 4, true, false),
        ("800d0003080000000000000b565d13dc0000000000000000779831169640190a616464", 4, true, false),
        ("8021000014000000000000160277da930000000000000005e7c4bd0c53ef032514e4cea67cf58b997134aa6e3131", 4, true, false),
        ("800800000000000000000000b3db1b010000000000000000", 0, false, true),
        ("800700001400000000000014195b011f0000000000000000fcf85b32c6827938a38ce05d6b489ca9ffffffff", 4, true, false),
        ("801200000800000000000008ad28a408000000000000000009b568fc0da29f0d", 4, true, false),
        ("801500fb03000000000001009c0341950000000000000000b727b466666564616463646363626463656465646265656164666264666163626464646563626561666162646464626464656661626463636461616466616461616464626462656363636565636362656563666466626365626564626564616465656166666562646361656565666161666165666265666665656361646261636263626162626564646362656461656163656466616463666265636165636261626461626663636564656265646365656361636462636362646461626662616463616664636662666664666266646561666665636462636365616464666163656265646465626666636565616562616261666165636366636266666661613131", 4, true, false),
        ("800500010000000000000003da43c17c0000000000000000643131", 4, true, false),
        ("802000010300000000000006df43e8550000000000000000fe9b89663131", 4, true, false),
        ("802100000000000000000002a656d1fb00000000000000003131", 4, true, false),
        ("801f0003080000000000000b2eb5781800000000000000059fa0399b7b13b5f7616164", 129, false, false),
        ("801100030000000000000003991bf98d0000000000000005656364", 4, true, false),
        ("800d000103000000000000067930907c000000000000000037334c643131", 4, true, false),
        ("800e00001400000000000013c26ce86800000000000000006e83ca7839a4a8505bf18a798b4e045fffffffff", 129, true, false),
        ("8017000300000000000000036347fa3f0000000000000000656366", 4, true, false),
        ("80110003140000000000001932f816b70000000000000000e971acff3223064fd3e867669d5fa130ffffffff6664623131", 4, true, false),
        ("802300fb140000000000010faabcd97f0000000000000000c0484080cae8ec62ad810e1aec501c88b7e4076c6363646162636662636665626661626466616564646466616366636366626262656664626666646564626361656463646266646263666364646164636666656461666261666163666461666262626166646461656266666164666163626663636666626562616165666663616166626465656364636366646461636463646466616565636266636666666365666666616266666165616361666266616362656465636163656161666266656265666363626161616562666161656565626563656566646164626362626666646363626261666566646661636262646564616165666562646564636265646264626563666463646566666163646661", 4, true, false),
        ("8020000008000000000000082a8da32d0000000000000000b41bb9339c5fbc04", 4, true, false),
        ("801c00fb030000000000006f3065b7100000000000000005ddda846561646161636464656665646261666666656365626265626466666364636666616166616163626464646364656261616166616466636364646664646364656663636462616561626261636461656464666664646664646561626264646266636563646266626562646164646363636562646664646262656662656461666661666462636163616265656263626166666564656163666565636566616566636163616365646265636566616561656363646664646566636266656661656364666364636361646461616664646264656464616361646261646461616363616265626166656461616164666163656465616665626362636161646362", 129, true, false),
        ("80170003080000000000000b3c21b357000000000000000080a7aa9fd83abf3c636562", 4, true, false),
        ("800900fb04000000000000ffb7f3a6b3000000000000000521a8862c6361616161666561666466666164616564666665666263626164616564646464646261616464616464646161656161636263656265656361656664656565636261616464626664656465626165626264616162646363646564656663666663646161626562666364656661616361616263666365656263666361636363656565646263626362646563656162666465636665646661656663616666646164616361656463616464656564666565656561626465636161616561616462616563666263636461626565666561626162616565626664626165626263666663616262646164616564646365636163626566626165616361626562666366", 4, true, false),
        ("800900fb00000000000000fb19dd450d00000000000000006561666462666162666561666661646562646363646562616662626262636563626264616665656663636262626165636265656161626665646465626461616561646363616163636465646665636361616165616364656666636164656566636166636661626463626164646164616664616462616363646663656665636361616164636264666565626461666464636163626464656166616465636563666665646564656464666164616364646463636265656663616562636265626562656662666364626363616463656661666565646665646366646465656263636266636266646465646363646163666265666563626162616364666565", 4, true, false),
        ("801500000300000000000000dd0a59ff0000000000000005fe8b6b", 129, true, false),
        ("800500010300000000000004259af32700000000000000004c684865", 4, true, false),
        ("8030000104000000000000057792f0d0000000000000000595420b6064", 129, false, false),
        ("801d00001400000000000014e7f21a720000000000000000c0bb0bef5d05497ee283e10515b22dd4ffffffff", 4, true, false),
        ("8006000114000000000000171d32fe9e000000000000000014c19eb0bd8ee598b0b0abec97e4d3324b000cf6643131", 4, true, false),
        ("8017000314000000000000171fc227d70000000000000005a5412cd89bacb09d65c2e4c1614554704b56f271616266", 4, true, false),
        ("801c00010000000000000001e691cf44000000000000000062", 4, true, false),
        ("801a000300000000000000037a4836990000000000000000616566", 5, false, true),
        ("801a000004000000000000045e469dda0000000000000000c781eac4", 4, true, false),
        ("800500010400000000000005333ca7cb0000000000000000c7868a4561", 4, true, false),
        ("801000001400000000000016fcff2d800000000000000000b5c7f75bf1e8f501e530a6abd6358d288188219b3131", 4, true, false),
        ("8000000008000000000000080cca2e4f000000000000000022a958e0e5566657", 4, true, false),
        ("80200003080000000000000bb3ef074d0000000000000005b3e22671b82957a6666261", 4, true, false),
        ("800b00fb00000000000000fbb101b2ca00000000000000056164666666636164646162626164626161636266636662626461656666656261666465636561626162616266616264656363636462666663656465636364616466656661656264666462616462666662646665616363666463646262656165616664636663636363626466666466646261646164616662646464636666666364616363666465616666626364626661626463666663656464616463636162656665616366646565666661646565636364616162666363626664626165646265646266666464636266626163666561636165626362666464616464666362636361616564646565636266666462646466626463646164646162666363", 4, true, false),
        ("800800fb0800000000000103d4bc6b5b00000000000000006d40313ea15212ae6564616461626564626265636562636261666465616561646164626564616365636566616563646663616162626261666264656464656164626163646264646165626363646162646365666265636462666565666661636162656261656165666561616361636666616666636165616162626364626264626163646263626363616563666464626165616164646265666463656261616365626661646461666265616562626364656661636365666361656662626161666362636361626664636363666663656361666462616465636464626365616564666563626565636563626263636563656563616265616262636261636361666566636262", 4, true, false),
        ("800e00000800000000000008c93b23520000000000000000e77df9f9f6c4e166", 4, true, false),
        ("80500003140000000000001756578a770000000000000000051a2e1073039d7f4d96a31064eefdedffffffff666163", 129, false, false),
        ("8018000014000000000000144994b3d1000000000000000090533024234e401ea139a185225a25a1b624ae17", 4, true, false),
        ("8030000304000000000000075b1ef57b0000000000000005d4e19407616665", 129, false, false),
        ("80040003140000000000001707758a24000000000000000553f84715092356be9f524477a2da252221946934616166", 4, true, false),
        ("8021000100000000000000035f021fa20000000000000000623131", 129, false, true),
        ("80210000080000000000000820ae56b40000000000000000858b2541cecb66a7", 4, true, false),
        ("801f00011400000000000017315f746b00000000000000002d2c5fc3ada6d48e0ad32deef4f552352e52ee45643131", 129, false, false),
        ("80030003030000000000000807d2dbd800000000000000008f35a26562643131", 4, true, false),
        ("800e0003080000000000000b00acf85a0000000000000000bb5a9906e7519612646166", 4, true, false),
        ("801a000003000000000000024eb1dd0d0000000000000005bb96d2", 129, true, false),
        ("8007000000000000000000009381bd440000000000000000", 0, true, false),
        ("801300030400000000000007247fb2ce00000000000000055a839b39636261", 4, true, false),
        ("8024000003000000000000051ac2f8c2000000000000000094e2ff3131", 4, true, false),
        ("801000fb03000000000000fe7e7e418e000000000000000091ef406264616463616265666165626362616365626263626466636161636364656662666366636662636266616362616163656466666662646265656361616363626461656265616466626263626361656361626362646466616162646365656466636264636261646361666663626563646463636264616265616661626261626662666261646363616665626261616365616166616266616661636362666361616663666565636163656664666461666263646264646461656166616266656466646465616263636564656566666663646262636265626265656565666463646363656462636661656663656466626262666361636463626165656363", 4, true, false),
        ("800700010400000000000005729873ce00000000000000001daee82564", 4, true, false),
        ("801f0000040000000000000652fb0a810000000000000005f540efb33131", 129, false, false),
        ("800f00000300000000000001b4d5d0c1000000000000000062327a", 129, true, false),
        ("800100000000000000000002250bbf3800000000000000003131", 4, true, false),
        ("805000fb03000000000000fe008a5de20000000000000000ca75b76262626661646264646362656361656464626566666565636662626663656362666266636266626161666361636661656563646264656363626165666661646161626165666466636165636262656361656363616363626464636461616564636662646162616265626364666265656563666261656565646166646463646465636662626162666263626663616563636164616565626563646262636662616666646564616261666665616561636166646465636361656663646365646165626665616263656663626566656266666665636263626664656261656562616261646362636164626564666164656166616461636362666362656564", 4, true, false),
        ("800f00001400000000000014dc8f8b250000000000000005ab8af96fa0615c9983953819408c9a3cdce8e7be", 4, true, false),
        ("8020000314000000000000194d511cde0000000000000005a0818211c40b4a0849fe6fcc7c0957bdf3da3f986562613131", 4, true, false),
        ("80170000140000000000001457e4878b000000000000000095bd19dbad14b7ed37fd7160d681fc91efb13c95", 4, true, false),
        ("8023000108000000000000097007472b0000000000000000779db0e3dfb4c23465", 4, true, false),
        ("80150000030000000000000558f157240000000000000005a27bc43131", 4, true, false),
        ("800100fb140000000000010ff9203a400000000000000005c60b15fcf87aca3d239e93d2d682d2da29c116806365646364626166656162666561636265636361666566646165656162626666656365616461636661626665646266616464626363636365646461656464626661636466646565636565646461636264636363616566666661626665616364666564626161616266656161646662636266636363616563636662636564626561646465656461656666646664666466646266646661656463626661636361666662636666656263646262626366646664616166646563666464616265646463646466616161646362636665656562666166626166616464666461656264626464616465616661646561656164656561636563626565636666636362", 4, true, false),
        ("80130000040000000000000170705e9b000000000000000556b019de", 129, true, false),
        ("802500fb00000000000000606f623c2700000000000000056164636461626662616366636562656661616265656162646464666262616162616664666261656263636563636563636261616165626264666662616261656166666261636461666663656666616365636661636166616261636362616661636166656166636365636166646166626662656365666361626363626363636561636564636461646662636563616563626466646362646664626164616661626662656265666661646563616262626264626266626261646262626663616261636465666362656562666462636266626361666363636564666666636465636562666466626364636162666265666566656166656664646162656365", 129, true, false),
        ("800900fb140000000000010f2586070b000000000000000064522c5766a1fc05207a47ea268e577c4e38e1e86566626362656161666162646661616563656261636665666365646362666162646561636161666264636661626666626365646464656665646462616663666364626262646666666666626362666364616166626166616162636366666261656363626162636262666261666564636164636465646166646362656461656266646462626266666665666262616263626264656565646365646462636164616262666264616463666566616162646264666264646166636461616362656662666564646161626361626166646562636264636461666563646665626665666162666262626163666666626362646165656461656562656665646562", 4, true, false),
        ("801c000000000000000000021ca9605b00000000000000053131", 4, true, false),
        ("800b000000000000000000004e8a5a4f0000000000000000", 0, false, true),
        ("8020000303000000000000084ba7312d0000000000000000f6ecda6163613131", 4, true, false),
        ("80fe00fb0300000000000100b105d5a40000000000000000ae4d3b65626564666666656664626666626465656462636465646366616663666162626165646662616263656662616564626265656561656561646161636465636162616563666366626364656464656465616364666563656366636462666165626562646663636563626563636164636561616165656465636462636262646562636262656165666362636563626662636566616263616466626663656261616463626561616461616261666362616461666361616363626564656364626264656664646662616264646163616661656465666561616463656465646162616165616662626363646161656665656165626564656662666665666161623131", 4, true, false),
        ("801400000400000000000006eaa2960f0000000000000000490207253131", 4, true, false),
        ("800700001400000000000016b9bc4d5e0000000000000000d7035a7dca7c23c4cf53464fb3371e09ffffffff3131", 4, true, false),
        ("800500fb03000000000000feb42a944a0000000000000000deca836164626463646461666263636664656465636361666465646164666361646661626262626165626163666662666665646665646666646363616666636565616563646463626662616665626264656666636661646665646166666463666166666363646163656161656466626561636663636566646661666563636461636566616661646563636662636462626161636664636361666566656665626262616463626465636362616162616464656163666263656266656166636461636661636266616261626261636664636561626364636166656561616564626661616361616561626262626164636463616361616163616661626161616366", 4, true, false),
        ("80020000080000000000000af829ba5a0000000000000000d06cf65e506155ed3131", 4, true, false),
        ("80080003080000000000000bdd76585b0000000000000000087c8bdfdeb4f187656563", 4, true, false),
        ("800000000300000000000002fe06a6fc000000000000000562f62e", 129, true, false),
        ("800b00fb14000000000000129c5ab2910000000000000005648e95501e877ac3d2643c1f0b15f4a54e6ee2986364656565616462616364616361656166636262656561626666616462626663626462666565616365646565626366626262666664626662626661656662636464616661616464646461626366666562656262626664656465616562646466656665616466646562666362666565666362646663666463646266616464626363616661656361636462666664636566666466646463646366646665626461636466646466626264666465656162616565666562636264656661646261656366626261616362636465656566646266656563616666616463666566646163636261636562616166616564626361656464646166636666646164656364", 129, true, false),
        ("801b00fb1400000000000111f23489c000000000000000007ba5ba41c8497aff66d619b5618a7ceebd3818bd63636664616165666264656564656266626664626265626265636362636665636565656661656465636361616561656364616564666365646466626162626661656366646465666364646465646166616262626462656362646562666264666663616263636463656664616566646262646165646261636265636663646666646364626462626166636561626164666165666263626561616665656664616563636364626165656263666262666162626362626366646162656165636665666561626163646366646566636466636463656263616464636661646564656162666163666465646461646666666162646165626262666464636564623131", 4, true, false),
        ("801600031400000000000017fffa6d2b0000000000000000a6dda773e51ab678e87561b5b282aec48e6c5ec1616464", -1, false, true),
        ("80fe00030300000000000003522b91ab0000000000000000ca4865656565", 129, true, false),
        ("800e000014000000000000143b6d7af300000000000000054cd5c6a9afa85d3ba9fa5fb5dccc32edffffffff", 4, true, false),
        ("801d00fb00000000000000fb235f5ebf00000000000000006666656466646562666265646661616265616663666164636361636261656564646362666164626663616266636166616163636266616165616365656562636362626261646563636666616662646662666662616166626664646461626662646666666362616662636261636663656665646363646661646461646265656162616161616664616464616164626466626166636662656365666664656364626261656266666466646262636261616565646466616164636466636262636362656263646466666466626663616366616265666162626364636266656563646363616365646665616264656365616466656364636363616365636161", 4, true, false),
        ("80060001080000000000000905f5dfa200000000000000009241f15880f0bfd763", 4, true, false),
        ("801100000300000000000003492387530000000000000000a9d966", 4, true, false),
        ("801c00010300000000000006bc24ada700000000000000000c4b3a623131", 4, true, false),
        ("801300fb080000000000010337d7ab85000000000000000004b26cfcaddbaa046465666464616364626462626362616161666261656261626566636662656263626661656365616666626265646364626563616363646265666561666662626263646265656263656366656261616261666164626661626664636264656461626161616164656165636165636163666164666465656466626265626362666663656466636366616262616366646461656262656164656465616363646162646564616561666461666461666261656361646362646263666664616564656263656266616361646464616562626462646364626662646163656266656365646465666563646363646261636561656364646164656666646264666164", 4, true, false),
        ("80150000030000000000000304cd6fc70000000000000000a56dbb", 4, true, false),
        ("805000030300000000000006bd03483a00000000000000004b8281666163", 129, false, false),
        ("800a00fb00000000000000fdf2ca818e000000000000000065666661666164666161626662636362636361616663646665656261656262666462636663666561656163646363666563656662666664666665616466616565616662636163646562626261636662636666656461636361626165656263616562636465656261646563616462646164666463616664666463616662616562636564616564656465656265646663666461616666666665666362636565646465636662626162636561646465656264636665626463666264616462656665656463646262626663626463636461636465656664636464646366656665656461626266656362646161616463626261616662626561636363616261633131", 4, true, false),
        ("8022000100000000000000010250d8ba000000000000000566", 129, false, true),
        ("801b00000400000000000006be445bc3000000000000000019b36dc03131", 129, false, false),
        ("80020001000000000000000184c90f29000000000000000066", 4, true, false),
        ("801900030400000000000007d5e589e4000000000000000533a2f935666564", 4, true, false),
        ("8024000114000000000000153dbbb01200000000000000006acf1a5eb1b8bba05ed1c2dd8bb026fbcec32c3262", 4, true, false),
        ("8021000304000000000000097d1932e50000000000000005126e138e6565633131", 4, true, false),
        ("800600030300000000000006af5a054d000000000000000035b366636464", 4, true, false),
        ("8010000100000000000000016a440480000000000000000566", 1, false, true),
        ("802500030400000000000007f4a6846d00000000000000055497b0b4616363", 129, false, false),
        ("801600fb1400000000000111b68028fd0000000000000000743d2bbe753b6735d83fd6bbc015c33addb0761466636163616666636362626365656164666366656164656263646662656265646565636566626664666364666463636662626361616464636366646462626364616463626664656262626161656663646566666363666365656262636163616262636563616664666464646563646365636666646262636162666664616361616562616466656463646564626263616162656564666461626161646561666164636166656261646362636163646664646565636662636263656265666363666261656465616565636665656162616462626162666263616562646366646363616563616263656563636464666461626265646263656363636466623131", 4, true, false),
        ("800300fb140000000000010ffe9f2b0900000000000000000a724738e059c69efd6e248c9f57df05ffffffff6162636364636362646162626364666165626262636565656462656261666362626561666466626366666563616363666161636362656262646664646163666163656462636466646665616464666464666262626465636163666466636263626661666466646262636361666566646363646466636561666564616663616664636562646562636364616566636166616161616164616566616261656166626465616164646361666664656161646565636561636563616163616365656166626661666561616262636365646564656564646564656465616363646564626362656262646161626463636665666461616462666365666364656466", 4, true, false),
        ("800100000400000000000006f9f4dad900000000000000000a0ecde23131", 4, true, false),
        ("800d00fb1400000000000111f7e5c5e900000000000000001edd247cd36216ccf87d1b864c3b9bdbffffffff63656461616561656566666262616165656163616361646562666462656564636466636165616365646564626565666465626562666466626264636666656563666366666166626266656466646161626162666461646566666261626463646266646163626366656665656663666563646165646461646165616562626663616261666264616361666462646462626165646165636361646461656666626161616565666663616161616266656365666161636562666663616561656265656565646465656563666163656563656565646464646262666666626662626161636266636561636166656264646463656361626164626664656362623131", 4, true, false),
        ("8007000300000000000000056d24ea4400000000000000006366643131", 4, true, false),
        ("800400030300000000000008bf44ffa5000000000000000553b3f06363653131", 4, true, false),
        ("800100010300000000000004879263f3000000000000000039ab4d65", 4, true, false),
        ("801e000014000000000000166494a70a0000000000000000843e3775278d5292c24fa4e7e7f60cd2ffffffff3131", 4, true, false),
        ("800e0001000000000000000143e7fd71000000000000000062", 5, false, true),
        ("801b000104000000000000073667e0050000000000000000b7cf18da613131", 129, false, false),
        ("8020000100000000000000011c780545000000000000000064", 4, true, false),
        ("803000000300000000000000df5286d500000000000000000dd9e5", 129, true, false),
        ("802100fb04000000000000ff05a0ae0700000000000000055ba237116264616665626165666564626264636564626466646563616263636364656265656365636666666262656363646361656561656161616664616665666262636562636365636366666365636365666163656663616365646264616363636366626661656362636163616565666266616161616663616562666561666665646261636265666561616364616665626164616262646661616361656261646466646463626364646565666666626365666362666661666264616561646161666365666461666661646263616464616566636264626165616261636566656263636664646461656465646166646363616661626163616566636561636666", 4, true, false),
        ("801600010400000000000005e57f2aaf00000000000000059c76d99a63", 4, true, false),
        ("800d00000000000000000000aef8e7b30000000000000000", 4, true, false),
        ("8010000003000000000000038782b7700000000000000000a466b6", 4, true, false),
        ("801400fb0400000000000101d432db0f000000000000000035f7fbbd64646165616466616264666265666264656661616463626563646166636261626561616165636164636361646466636265666466666362636664666566646562616566646462656361626361646362646261626264626366666561636565636666626662626363636464646266616161666261656561646663666562636665656261626165656164636563666361626662636266656165616361616666636262646365636663646162646466616263636262656163646365656663626263636165656263666564636462626164666664656663646664666564626462656664656466616264636465656363626166666664616261646561626261633131", 4, true, false),
        ("802000000400000000000006e17744700000000000000005cc71a0233131", 4, true, false),
        ("800400000000000000000000f229600e0000000000000000", 4, true, false),
        ("8025000003000000000000030986bd6800000000000000058bd024", 129, false, false),
        ("805000001400000000000014ee0d134d0000000000000005637aa4cf959d89e61448a5fe29a503a1ffffffff", 129, false, false),
        ("8020000000000000000000001feafbdf0000000000000000", 129, false, true),
        ("800d00fb04000000000000ffbb24bd8d0000000000000000f9500dc06261626563666661626264616263636561636162626466666165636361666366616162666264626564646561646166626661626264666263626261616464666464636562616664626661656464626565666662656664666163666464616466646161666565666165646562626464646364666262626361646662616462626564636465616361636261626366646665646366656266656263616461616466646362656361616363656565666463636363656161656561646163656662626365666566646266626664626663616264646666656466626666636664656266626462636165626364646466636665666163626166666262646362636564", 4, true, false),
        ("80190003000000000000000548f336f900000000000000006465633131", 5, false, true),
        ("801400030400000000000009a9dfc3e40000000000000000cb44d7436165613131", 4, true, false),
        ("801100000300000000000005ab652c9000000000000000053569503131", 4, true, false),
        ("800100fb04000000000000ff2884226d00000000000000001fd6431c6363656662626263646466666366646465626466646265646565626664656461666562616266636362656561666566616261656663646362666364636161656466616463626466636464636363616266626562626466636264656565646461666364646265616464666262626266646565626162636566656163666566656261636266616263616663636263616661616462646663646465626364646564626164666665626163656365656563646164666264646461636462636263646664646461636463636265646362656666616362616564656461646662636364656463666364626664616462656564646565666266626564626164616164", 4, true, false),
        ("800e000300000000000000052908dc6a00000000000000006163653131", 5, false, true),
        ("805000000000000000000002025b871c00000000000000053131", 129, false, true),
        ("80200001080000000000000962f70b1b0000000000000000353dc4344389861b64", 4, true, false),
        ("800c00001400000000000014162b70f000000000000000008cb018aa72dfc65b3d14710ffe07e16bdc5b07ec", 4, true, false),
        ("8004000300000000000000039160d02b0000000000000005656361", 1, false, true),
        ("80140003080000000000000d16a23f8e0000000000000000ce0b50f9974697456661623131", 4, true, false),
        ("802500fb00000000000000fdefeeb366000000000000000063656664626365646564616162636365646562626564646363616164636261666363646366656366636564646262626466666666646164656162636566636563626565666466646166636663636465656661666464636363666262656565656665626466626466656366666566626565626163626261616162656365616161636266636661666163616561656361646163666366626664616664646463656366646664646466636461646466626161626365616266666163626366646565636161656664616364626564616362626566636262646465646662656465626363616564656566616164616462646262616262626366646665646266643131", 4, true, false),
        ("800d000308000000000000037d4519c400000000000000003de44f87a17b5576646461", 129, true, false),
        ("8019000014000000000000167d6e711f000000000000000591129586367c5fe8be83a165289b50d148e1b81c3131", 4, true, false),
        ("802300000300000000000003ea78989200000000000000050f8da5", 4, true, false),
        ("800c00fb0400000000000101fdd8754000000000000000009fae3e3066666666646363616561656165666365646465626166656162666366616265666166616464656466656162636562626361646166626361656461626361616466616365666565656565616366636466616466636266646166636163616266656666616165626163646666656664626664616164636465666362636363616562616364666463656562656364646563616264646165646562656663636364646461666266656163646462646264646266646165666166626165616664646664616362626261636363666361646662656661646264666161666263666164656162666165616164626363616466656161636563666565616563616465643131", 4, true, false),
        ("8007000003000000000000059a0a93020000000000000000f4e8da3131", 4, true, false),
        ("80140000140000000000000f7dfe2da600000000000000000dea1983a920bec6c77c0783f378795ce18d8318", 129, true, false),
        ("8012000004000000000000004bf76bcc0000000000000000af5493b5", 129, true, false),
        ("800600fb00000000000000fb63ab716900000000000000006262636565616562626566646462616366656564646564656561636463646166666365636461656566656464616663626362646362666564616364616264646565666263666564666661626561636661636263666163616161646566616362616561656366666565656366616361616366636262636362646163666662626265666462666263646563666666616461636361656563616665646362666466626264656164616164646363666161646464636161636265636563616365626662656663636265666665636261646165636563666662666561616462636665656664656564666466636264666666656164646561636162636661646161", 4, true, false),
        ("8004000304000000000000004bee648a00000000000000007b57608c616264", 129, true, false),
        ("800b0003040000000000000921eda74f0000000000000000c6cc2a8c6265643131", 4, true, false),
        ("803c0001000000000000000323b957bc0000000000000000643131", 129, false, false),
        ("800700fb08000000000001054addc00d000000000000000548c13ccf1e9d484c65636265646461646461636166666563636462636261666463656462646161646366646264656565636663626666666564626463626463646363636362616463636362666261616263666661616462666161656564656162626261666364626665616466656164666366666563626665646366656564626266666265646661666561646163646463646264656665616362626563636562616564636464616164626263666362656266626463616263656166616663616464666261616164626161626663656166646366616664656466616566626661616566666163656565666361656361636664646165616565656362616165666365646666633131", 4, true, false),
        ("80fe000114000000000000151969ddd10000000000000000809375f7a859b52bedcba0fa34d0dbb5583c2ea363", 129, false, false),
        ("802100fb140000000000010f10e1717600000000000000056e4660ce4cf7087ec4f5764cd9b09369a3509ac36661626563646162616362646662626564616562666462616363616265656362626364616661646263616164626164646461656262616664636164636561636661666165656361666563666564646366636564646662616566616465626462636566666365666462616361616161616666666162636662636661626465666261616662626163626665636264626264646561646266616362626161666466656661616562646666616264616665616466656364656562616564636361636164656565646464626364636362646566626163636466626565656666616261656162626462616366616664626363616665626163656465646266626464", 4, true, false),
        ("801a00000800000000000008b42ce0c90000000000000000c324c96a3b29f00d", 4, true, false),
        ("800e00030300000000000006c756867f0000000000000000eb1c67616162", 4, true, false),
        ("802100001400000000000014e41c75a30000000000000000e098acc0b1eefde8bd380551075e2bbfe1d4a35e", 4, true, false),
        ("8021000114000000000000153698e304000000000000000079626528ba98cb1a75249a4ca3de4857ffffffff62", 4, true, false),
        ("801700fb00000000000000fb0c0043b100000000000000006362636463656461656265626464636666636563646566626566646661656262656662616161626565666362626664666565616564636561646462646564636364626363636165646662616464666161656565626561656361666262636365666561626361656466616564656463656362666263626264616666636364616265666466616364626565626666616361616465626364626465656265626263656461636266646564646565636266656464636563646262636265636163616263656662616365616464666165636263636663626466616562626361636163616166616164626166616466636366636365666563666161626562646464", 4, true, false),
        ("80160000000000000000000069a94f680000000000000005", 4, true, false),
        ("80220003040000000000000704b294b900000000000000005c8db5f3666465", 4, true, false),
        ("80030003080000000000000d90a1976b0000000000000005ef67bc44b0761ede6265643131", 1, false, true),
        ("800100010000000000000003af579acd0000000000000005643131", 4, true, false),
        ("800400010000000000000003c67e497f0000000000000005653131", 4, true, false),
        ("802200030000000000000000aba931440000000000000005616365", 129, true, false),
        ("801b00fb140000000000010f06ceb879000000000000000002a2a2ded83f4c6da8248d52872c2f7a1d0fc7d66265646166626662626461656564656262626361656164666662666366636565656562626662656266636662636466656261636464666163646165666262626161666465646261626361626565666265616263656262636563646263646164636665656365626665636364616562646165636165616164636161646165656161626165646561646362666566646164666664626461666462616564646564616464626165646564626362636361646161666361666264666362626161626366646264636364616365626666666266656163626261666661656266636361666562656464636361616465646165626465616162616462636463646361", 4, true, false),
        ("8018000314000000000000177ea099ad0000000000000000c8caf6082b769d5a8c42c8c25328b9e6ffffffff646565", 4, true, false),
        ("80070000030000000000000357eac58600000000000000057dd3b5", 4, true, false),
        ("801e00fb08000000000001053c129aa300000000000000003bea0df69a995d0d63636465666163646365646466626261616561626162646265626462656362666366626361656661636261626564616261626365646664616566646164646261646662636665666365616363656461636663626464666162646463636264616566646465626663646365666162616562626163636662616366656263616261656362656664636362646465636565636663616263646363626664636563636663626563666165666363646662626466636166636563626161656261616362626264646564656165646664646665616464616366666162646562616461666461666561636365616561626362646565636466626165626561616464613131", 4, true, false),
        ("80140000000000000000000025964d140000000000000005", 4, true, false),
        ("800500000300000000000005cc26d6cc000000000000000547cc093131", 4, true, false),
        ("80240000080000000000000abd270c2e0000000000000000ff4b563a3f2451143131", 4, true, false),
        ("801000000000000000000002e2f87f0200000000000000003131", -1, true, false),
        ("8009000014000000000000166c90e9d20000000000000000b2619131140dfd3b3cb19b1473d3ea41ffffffff3131", 4, true, false),
        ("801c00fb08000000000001033c5585ef0000000000000000b999606e31a5c3536564636365666462646162646564616262626265636463636464626663636166636462626465656464636666626466666264656666616165656561626666626366626461646561666366646666666261636461666265646663636266656364626565616163656566666162666563646466656466646361636365626561636363636563626164626564656162646263626563666366616463636262656366626266656665646666636166616366666161616565666566626566616661646163646565636361656366626562646463626661616562626662626463646163616462626366666666626262656365666265636264616561666562626161", 4, true, false),
        ("801f000100000000000000010cc061c2000000000000000062", 129, false, false),
        ("801900fb08000000000001035786152d00000000000000050871e2d6d43697d06166656665626263636564656464626464636266616165646462646262666366666362646465616664666662636462626366666366636262636265666461666166626665636164636264636365626462616463666563636565626566636163656465646465636465636665666665616461656466616161616662616365626162616363636462646262646561626563636366666562656266666461636163626464656162656263636262636266666665616561656464656362626462646664616465646561616561646165616266616162626166626365666361656164626165636663666362666463626362616263666661616261666364666663", 4, true, false),
        ("801300000800000000000008172311ea00000000000000000b315198d02c5166", 4, true, false),
        ("802400fb0800000000000103b92603de00000000000000005fdaf1724fb468826665636662616565666364666363636666616461656466626562656364636361636564616565626463616666636662646665636364656364646561636264616266626466646665646564616466616462656361616364626162626161636163626365636462616263636265666665646463656463646165656265656464656566656461636365656161626461616366646166666562626464636161666662666661656563656465656566626666636666646362616263646363636163646466666666656563626563626661636165656162666466666463646362666364616661646363656262656166656263616261646561656464616161636565", 4, true, false),
        ("801e00fb00000000000000fb6c93f96a00000000000000056662646661626362636265666461616266616261656261656365656466646466666166656566626466626365616562666163626665666463626364656664616461636265666464626163646661626464626463636461626166656466636665646662636561656661666561646463666564656564656662646465646666636165616365646466616561666461656164616566656466636263656665626564656563656463656561666265666363616666646162666565636162636364666465626362626566616561656566646663616663656662666363646366666166616461616166626362656561656266636361646261626566636562626563", 4, true, false),
        ("801d00fb1400000000000111069b0e8e00000000000000009eab6c954983e783a45d1f5aed8f07066ccad7da63646361626166656465646666626366616263626266646563636264626165626261666165616466656365636665656463636366646165616564646262626662646564626665616566636565666664666562626465626562666265646363626366656665616566656162666363666165616365616565646366626563666361636665636364626166626663626562616566646266616363626662616462636162616561636264616361646166666166616563626461626363656461616163626565646461666663646263666363666366636661646562656163646263616461656361626166616266646263616166636264666666646166636665633131", 4, true, false),
        ("800500fb00000000000000fb19271a5a00000000000000006164616563626265636664626262646262646564646363626562666662666565646161656665636361666366656265666263646565626561616366656466666662656466636161646266646565616465656466656161656461646262626264666563616362646464636564656461656264646165666161646562656466656265646563646666656163646366626562626362666165646266626666636266656161646261626162656261616266656162636366656363646362626662616264626465626666666363636163636164666264626261666165646661626262616661636465666566636362646265636263626662666666666461646361", 4, true, false),
        ("801600fb04000000000000ff523c7826000000000000000062eb2e976664636366616463636262656265636565656266666361636563626564626166666362666264646466666264666561646265626662616463636262636366646666636263646363636166626664636661656466616165656663656164656465656462636465646161666466616561626362616564656164616562666561656464636361666363626163636563666265646266646165656462616361656262636664636661626564666161636662636363616661656161666461646663636262626264636663616463656363636362636261666166636665626565616164666262636364616562626663616662666366666566656463656463636364", 4, true, false),
        ("802100fb030000000000010020e5e7d90000000000000000823ce561666263666364626361666361666166616163636462656664626361666462626461626366616166636461626264626561626462616665656262656563666661626566616163646165646464626261636264656264666663666466666562626564636166616563626262636462646564626662646561646264636164666364636361666462666163656264636461666661656466666662656661616564626563626163636166626564646265656164646665656462646264636461646262636563656364656466666461626262656561666362666265636464616264666363616664656465646464646366616266646464656164646266616461623131", 4, true, false),
        ("803c00010400000000000007f219334e0000000000000000afba2315653131", 129, false, false),
        ("801a00000300000000000005c2749dba00000000000000005076c43131", 4, true, false),
        ("800f00fb04000000000000ff89f1269c00000000000000006933826a6566626266626665626665666663656265616366666364666363616162646562656661646264616162616566656661656563626262666562636661626561616663646464656564636562636562666163646563616662656663626261656166646662656166636366666665636265656664616461666262626466656263636366636363656163626361656565636165636665636461616464646565616165666562656566666664656365666465616465616463646163666363616364616466616563666166616664646462616261666561636264636361666461636365666566626262636664626462616363616362656563666163636462636465", 4, true, false),
        ("800b0000000000000000000285063c1800000000000000003131", 4, true, false),
        ("801d000314000000000000191662f1900000000000000000557469cb63d6b091bc873fdd2f50bc8fd89102e66262643131", 4, true, false),
        ("801700000300000000000003470c0f4400000000000000007e7a2f", 4, true, false),
        ("802600031400000000000017430622c500000000000000005dfdd915bfff0da230ae087479854af9ffffffff626264", 129, false, false),
        ("801f00fb03000000000000fe4737832700000000000000054c2fad6561636366666561646365656266646164646664646663636365666565646565626262636264646164636264666465666162636663666463636663626364636461636661646563626661636563616361636561666366646463656666636165626364636562616261646164656365626466656465626562626565616166666163646661666363656461656363666662626663636163616563646663666463666261616665626461626563656663646466636462656664626262666461616463626663656661666163646561626462646366626466616261626662666661626565616665626461616561666564656165656266636666626364636662", 4, true, false),
        ("800d00001400000000000014d0c59def00000000000000006244d71993471489bf0f2f250110e8f3ffffffff", 4, true, false),
        ("800a00010400000000000007d8e1c2f8000000000000000030f25fc9643131", 4, true, false),
        ("8050000114000000000000159aba533c00000000000000004e4258df56c88c10d4819aeca057779ffa58ede161", 129, false, false),
        ("8012000000000000000000022af5df6100000000000000003131", 4, true, false),
        ("801c00000300000000000003f168863000000000000000051be95f", 4, true, false),
        ("8001000003000000000000054406c1cb0000000000000005b27a723131", 4, true, false),
        ("80fe000000000000000000007d77cb010000000000000005", 129, false, true),
        ("800d000114000000000000173cb5e74f0000000000000005141232865d3035adaeffcd1fd6877a12ffffffff653131", 4, true, false),
        ("801500000000000000000000d497fb2c0000000000000000", 4, true, false),
        ("801b00010000000000000001377cc978000000000000000063", 129, false, false),
        ("8018000003000000000000053467df3d00000000000000057aab763131", 4, true, false),
        ("80240003140000000000001727375c59000000000000000046b41e809c77b3a893d1d4425228dc52c816018b656166", 4, true, false),
        ("800400010000000000000001d37d1164000000000000000062", 1, false, true),
        ("801700010000000000000001b48b64dd000000000000000063", 4, true, false),
        ("801300030400000000000009ac3f54df0000000000000005c7f755176365643131", 4, true, false),
        ("80300000030000000000000559684c5300000000000000059265c03131", 129, false, false),
        ("80220003140000000000000648cb89d90000000000000005406014f4b753dd9e5045f412d1978e5f3a2fc3b4656464", 129, true, false),
        ("802200010300000000000006bd6c9c2f000000000000000024ce2f613131", 4, true, false),
        ("800d00030300000000000003d3f11016000000000000000557fc69636564", 129, true, false),
        ("800800010800000000000009210eb0170000000000000005043d02f704caf3f264", 4, true, false),
        ("801d000114000000000000157e9c5bf8000000000000000083d59cea56b8867a64ad76853b6a5711ffffffff66", 4, true, false),
        ("801400010000000000000001a907f298000000000000000061", 1, false, true),
        ("800f000003000000000000034b975f810000000000000000ffab5f", 4, true, false),
        ("800e00000000000000000002b9c39d7300000000000000003131", 4, true, false),
        ("801400000800000000000008b036861700000000000000006bd36eb7ce1b297f", 4, true, false),
        ("8005000000000000000000001b9004c90000000000000005", 4, true, false),
        ("80130000000000000000000038f1bbca0000000000000000", 4, true, false),
        ("8006000000000000000000007e1d98fb0000000000000000", 4, true, false),
        ("802300000800000000000008172a680b000000000000000084b5e7d3ade805dc", 4, true, false),
        ("801b0003080000000000000b8a13c72d000000000000000098faa374bc49f68c656165", 129, false, false),
        ("801b00fb00000000000000fb6bd1447000000000000000006166636163646163646466656561646166666362646464666164636165646161636462656166646163646161636562646266616161616664636464656664616466616365626566646565666162616461646464616466656562636564646662646666656366646161646361616262646261636364616461646466616564646164616566636166636363646466666464636364646264666664666564656365656266636362646561666363616465646165626665666366636265656566656461616262666265616264656661646161646161656461656365656266656165646365626161646262626661666564626166666463616661636665626464", 4, true, false),
        ("80060003040000000000000784f05c8500000000000000050e7c5ffd616266", 4, true, false),
        ("800a0003080000000000000bf04cff58000000000000000555ececfaedbd58a4656666", 4, true, false),
        ("800300fb03000000000000fe1c4ca89a00000000000000003c3c3f6665656561656561646465616561646261656365616163666266616564646565616163656662666366616566626461656165656261656161646362616264646561646564666662616466626262646163656565626666636264626361666164656166666463636164646264656566616566626362616266626164646461616664636364616566626564646664626166626261616466646161666663666463666365616362666565616461646264626264636466646661646263646164646661616361656265636464656563616461646161616464666263656562666165616465636466656463646166616663656166666564616262616365636561", 4, true, false),
        ("801f000314000000000000177d17e02e000000000000000079ba28bc93c15af6501f8a173bc79442ffffffff616265", 129, false, false),
        ("802000000300000000000005037024dd0000000000000000daa4ea3131", 4, true, false),
        ("801300fb1400000000000111c208108b00000000000000006e1bc285f9ce1888b11cce0b5e193ab3acc2b84c64626462636166656163666162636663636365646662626465626365626261636662656664626163646264636361626661626665616662636661646263636263646361626162646365656661636462656362636364656662626364616565626466636161646264646566666463636164636564666565626262616266656166646261656665616162656461626666646565666264646262616465636265666563646565666364656362626563616361666561656363646666636562656562656166626161656563616561656364646466666561656366666666656462666161646361616165616261656265666165626262616562646265646266643131", 4, true, false),
        ("801700000000000000000002abc8473800000000000000003131", 4, true, false),
        ("8003000300000000000000051af93f0100000000000000006161663131", 4, true, false),
        ("80500000080000000000000858266a1b00000000000000001fed521c2824e676", 129, false, false),
        ("8019000004000000000000041540374d0000000000000000bb44a3d0", 4, true, false),
        ("801800fb0300000000000100f9606da10000000000000005df648761636662636661636565626262636262656165626163616662656463636562636262646262626664656465626665666462616363616364666264626566666665636463616362656263666364626265636263626366626265646466656266636263666165636264626563616564666464616664626566656165616462626665636266616465626263656166616166656261616361646462626465646565616661646362616664616361656261666661636364616263656361636665646664656465666562636565636165666562656265646466656564646361626463616166656164646665616465666364646562656161636165616366666561643131", 4, true, false),
        ("8012000014000000000000149e8cc37500000000000000058a6b2c5ffb162b9439c115cbbcdba72e9d0dc47e", 4, true, false),
        ("80fe0003080000000000000b20cd75e1000000000000000080d5a0c09cdcd107656661", 129, false, false),
        ("800300030300000000000006f1e313220000000000000005a29053656165", 4, true, false),
        ("80210001080000000000000970230fc7000000000000000083b0924d9431b20f62", 4, true, false),
        ("800600031400000000000017b83afe0c000000000000000090fe157d8584b5ec79d3010474f05dd2ffffffff636264", 1, false, true),
        ("800200000000000000000002a7d9128800000000000000053131", 4, true, false),
        ("80240003140000000000001989f73be20000000000000000dda76a799d340e78e567e459905a7e2cffffffff6465623131", 4, true, false),
        ("8021000103000000000000049474d1b70000000000000000846fa064", 4, true, false),
        ("800d00030000000000000003d3c1efd50000000000000005616465", -1, false, true),
        ("800f0003000000000000000313abac510000000000000000616266", 5, false, true),
        ("8007000100000000000000010883189f000000000000000065", 4, true, false),
        ("800d00000400000000000006e6571b99000000000000000537f0180e3131", 4, true, false),
        ("80190001080000000000000bb8039d0e0000000000000005cfac40046561adc1633131", 4, true, false),
        ("802500030000000000000003411008df0000000000000005636464", 129, false, false),
        ("802600010000000000000001e32885b9000000000000000063", 129, false, false),
        ("800c0003140000000000000a3a962586000000000000000519d9a5ef8646d1a246fce6304a44ed75a35d5c43636166", 129, true, false),
        ("800b00010300000000000001ee1815af00000000000000003ef38a66", 129, true, false),
        ("802400000300000000000001d3a9285e000000000000000039cc10", 129, true, false),
        ("801500fb140000000000010fee0aceef00000000000000007a4ca7d618fc31bfb56594f6d19b9231f3d8edb66462646363646464616466636161626566636663666166616465646665616164656666656662616161666461666166636465646266656366656164666665656266626564646561616162626362616663666363666265626466626366626565656464636662616464646462616361656665656563666165666362626666616265656564616463666661656563646262666163666361646561636162646664636165616564656662616162616366646562656461636561626563626562666463656563626361626565666164666464656366646466656264626266626562656161646262666564656665646166666666666265666665616265626365", 4, true, false),
        ("8004000108000000000000093ec8c73b0000000000000005140ece757c41a05063", 4, true, false),
        ("802600fb00000000000000fb1be389ca00000000000000006465646461656265616265656161666165636265626162646261646365666663636361616365616366636462616665616363656165646461666363616664646164626565636264656266666261666563666164666665646666636265626361656463636561626161646264616165626266616565626564626665656562626463656162656562666266626666626564646161646664626164666466616661636461616264646364646461666365636562626265626562626566666563626161626266666365666664616361636664656366626565656163636362636164616362626263666661666263666463636164636561656261636165636463", 4, true, false),
        ("800300011400000000000015ba9e5c8400000000000000051a8a90d9cdaa4e9fd928b0632fa920ceffffffff66", 4, true, false),
        ("800c00fb00000000000000fb2b80695100000000000000056364616364636665646362656466636262626562636266646165616466636563656664666462616663616263646164626663666666636162646162656562666466666663626563646261636565646164616462616563656362656563666465656165626164646561646163666462646263646665646564616263666162666563616265616265656461616463616565656462626462656364646166666563636266656562656165636262646263616365636264646163666366626664656664616162646163616163636262656366626564666466636265636465616663666564616263656464646262666266626262666164616162666663616466", 4, true, false),
        ("80fe00010800000000000009e456a12600000000000000002852f5eb22e5fb0a61", 129, false, false),
        ("801000fb00000000000000fb79270a6b00000000000000006361636166646466646663666564636264656662646563616364656462636362666161626161656463626664636462656561636162636262646266616466666463636365616665666364656265636563626362656561666164626565616566666464666466656165616362626164616461636364626263626463656561626266616566666166636564666566656165636666626365626163656664646365656264656165626162636163646361646164626465646266636461666566626163626462646365616663656566656165626164666366646464666661636664616266616661616662646263616263646462656664616664646265666363", 4, true, false),
        ("800e0003080000000000000db53111e400000000000000057b0ceb7342f1306c6561623131", 4, true, false),
        ("80020003080000000000000d79e7234a00000000000000002df199b5f55a64226363633131", 0, false, true),
        ("800b0003080000000000000b915630c7000000000000000032b486c8a8ec1424636664", 4, true, false),
        ("80080001080000000000000b43b428d60000000000000000c2f916d4a43a9cda613131", 4, true, false),
        ("800d00fb00000000000000fb43e3dc4f00000000000000006464646364646161626663616365626666666664616465646462646162666365626664656263666565636561646165666165626663616664666261646261666262636563646462666666656262616164666663666566626364646461656265646266666263646566666266656263616663656263666362636262626464646166616463656666656362656164646361626266616161616261656362666463646464626366626165616666636464616362656266616263666363666363626362636262656265656363646665656564616261636166636462616266666161636566656265626266646663646362636363626463616165636161656564", 4, true, false),
        ("800000fb00000000000000fd0946b882000000000000000566656163616263616465666664656265616562666362666362656464626666626661616466666465616462666266646161666566636161666664646563666365636265626164646661646162646465636266626166636365616263666163646466656661666666626461666663636562616161646562656363616565636262616661656261636565656261636266626261616162656162656364636562646161636565626265636164646161636664666663636366626362636661656163636162636365636566646562646562666666666261666361666566656661666363666364636263626663626564636662666561636361616466636463643131", 4, true, false),
        ("800e00000400000000000004bd345cff0000000000000005bb200b4a", 4, true, false),
        ("80180001040000000000000558541bc800000000000000050000000065", 4, true, false),
        ("80160000140000000000001457fe20a0000000000000000039f18b88eb115e6c4dfc0284d6b57510ffffffff", 4, true, false),
        ("80180003030000000000000889fd58600000000000000000a043036666643131", 4, true, false),
        ("80250001080000000000000bc4266d3d0000000000000000cf760acc267084e0623131", 129, false, false),
        ("803000fb00000000000000fbdd0e717e00000000000000006665626561666365636565656164636666616366626563656464626663616466626363616564656664626561646661666161626363636162626263616361616461666664626364656464616264666363616164616564636465646565616363656465656165636662616162646461626564666566626462636366616663616465626266656465666664626463636265626262646262666264646666646663616464636562626263626263636565666163616161616565646461656261626564646561626665626562646665656663666661626566616161656662666164666661636566656361646164636663616562656263666363666165636663", 4, true, false),
        ("801100fb140000000000010fac83172e00000000000000053ce7e59006b61631c9884259e8d5172bffffffff6364626265646364626663636161626662616265656565616264626165666161636363636466616166646564656563616565666564666561636264636563636664636264656262666464616566636565656664656264656163646164666461616461666162626661626263616264616662646464656263646566626662656363666165666463666466626166636361656662636165666562666663616366656462626363656663646666636263626262626166626162656464646561626361616662656663666164656264626566666564646462626661656564666463616265616164646364666664656163646663636565656565656564646366", 4, true, false),
        ("802500000300000000000005c563b9760000000000000000e7ca0c3131", 129, false, false),
        ("802600030300000000000008fba34eab000000000000000097af656465663131", 129, false, false),
        ("800000010000000000000001072edf21000000000000000062", 1, false, true),
        ("80010000000000000000000087a96f310000000000000005", 4, true, false),
        ("80010003080000000000000de84e62c20000000000000005b36db3ef3eb0eb886164653131", 1, false, true),
        ("800f00031400000000000007b530a7280000000000000000b563a312c985048100b497a3e3384339c5aecdfd646363", 129, true, false),
        ("801d0000080000000000000aa7ec7ab60000000000000000984f8e7c544af2353131", 4, true, false),
        ("801800fb04000000000000ff44854ea30000000000000000000000006661636163616563646162646262616465636162636463656362646664666466666165626162616662646266616263616165616266656265656566626262636562616364636365636563626465656265626461646163636664656562656565666361636661646561616666626364626563636362626565616661666563626264636663666265626664656566616665666364656565656663636266626166626163646562656266656166636662616562646464656261646362616566656261646364646263666665636362646664616666626663666464636564646162646562616261656264666462616464626562636666616165656165656666", 4, true, false),
        ("801f00fb00000000000000fbeb993be100000000000000006466636264656261646361656561646265646665666365646362646365626262616365656166626462636165636365656261666163666264616166626261626465616466666266646164636263616163666261666161646362626661616163666365626166626166646562616261616463646363666562616565626366636164616565626564636161616463636561656566626665636564666463626463666262656665646461616162646565666164646562626366636261616261666565666266636163636161626361656464616562626563626261636462646164656263616565646562616566626364666161626266626266636262656461", 4, true, false),
        ("801d000003000000000000058b07055d0000000000000000d35a023131", 4, true, false),
        ("801b000014000000000000007ba9d1010000000000000000dcbdf8661472a4106dbcc6f0b1ab322e0f9da60a", 129, true, false),
        ("801f0001000000000000000306a626d40000000000000000633131", 129, false, false),
        ("80130003080000000000000d9048337400000000000000058f8f19068aa6c5fa6361633131", 1, false, true),
        ("801000fb080000000000010330e14fb0000000000000000567ab346bd000946e6464616566656265616363626161636361646464626465616662626563656362616564666166666663646563646461666366626563616561636564646364626164656264636464616363626266646563616663646364626661616464646262636366616666616363616666656164626562646361666462636566666165626564656465626364656362656365666366636462636464656564656366666663626664666264636466626662656266626262636564666166626262666162646262666263636661616261666463626161666262636361656264636166616665646665656464636266616266636664626561666263626261656161656661", 4, true, false),
        ("8002000300000000000000058fd89ae600000000000000006261643131", 4, true, false),
        ("8003000314000000000000171527881d0000000000000005f01ca48a6203ed2c3881bf8cf01a33adffffffff616366", 4, true, false),
        ("801100010300000000000004f64ad1df000000000000000014473366", 4, true, false),
        ("8003000004000000000000041964dca500000000000000000f1ff0e1", 4, true, false),
        ("801c000000000000000000004dd8aac20000000000000005", 4, true, false),
        ("800300fb00000000000000fbf4ded2d100000000000000006464616463666662656562666663666561616166636264656662666463666462646465666261616364646562636462616462646463616363656166666162626566646462636363616363646165656566626264626665656164656265656464626261646564616665656663666561646161666366616466616361626161616461646463656261616365656564656163646662616566636164616563636162646466616561656566626661656362646265626163626466666466666266626361656364646461666264636463666361626462656266616266636464666465626561656661666361626461626462646662616661616565626465656266", 4, true, false),
        ("80170000000000000000000031e11dd70000000000000000", -1, true, false),
        ("80040001140000000000001700a496750000000000000000e5bfbade67272648e7415b2717858a34ffffffff613131", 4, true, false),
        ("801b0000140000000000001424edd793000000000000000052d138081e856c0c09dc1f5c01c63c69232bb602", 129, false, false),
        ("80120003080000000000000b13e6d2d70000000000000005362e4e2368d08856666161", 1, false, true),
        ("80500000080000000000000a8c10e02f0000000000000000b556ed443efd10e33131", 129, false, false),
        ("800b00fb14000000000001115262ce420000000000000000317f4d256489d645e2c69a8ae2069cdbffffffff61646566646363616464656465626465646665656261616661646161636666626165626465636166666162636662656563656664636263636465646662656164666262656664646162656563666163666463636662636566616361666266626462646662646265636265636463666163616362636662636665616163656261626464646361636264666162646262666564616566646665666366666162616365626265646163666662616161616262616263636564636165636363626563666266616566636563666466636665666565666363666564656564646465666462626265636164656363666265616666646663646664636561666465623131", 4, true, false),
        ("800a00031400000000000017a212487700000000000000007a445a5a91c621f7d716597e709dd372aec584ab626366", 4, true, false),
        ("801e00000000000000000000df3856910000000000000005", 4, true, false),
        ("802000000400000000000004913685840000000000000000bb13480a", 4, true, false),
        ("800c0003040000000000000716a061d40000000000000000806a3e6b626362", 4, true, false),
        ("800a00010000000000000003ce9bf9a80000000000000000613131", 4, true, false),
        ("801900010000000000000001c0d1386a000000000000000562", 5, false, true),
        ("802400fb03000000000000fef7f5ac1c0000000000000000f236026364646466636165666262636661616562636262646662636162646365646563666566646662646265656364646365636266616665656166626361636664626363666365626665626266646163656665616362636461646666666466666561636161636361616165616666626465616662616665636461616266616564646563656366616563666564646662616364666465616261656363666563656665616363656565646162626164666663636265656265626561646462666163666262626463626162626463626363656661636662636365656162616366666661626364636366626262626163616164656366646566626463666263646266", 4, true, false),
        ("800200fb00000000000000fb677bacac00000000000000056666626162656562636162656664646563636265626662616662636563626661626165656166656465656662626365646365636265656361626365626565656664616261626666656464636366636462636166626361616663636264656564646261656661636365656661626565656265666461666663656562636465646563636266636466646162636663656461626562666561636164666365616662646366626463646162636161656264626366656464646563636263616162656164656461646566626263616261656362646366646665646566636564666664626562646462626662646466626662666164656463666366646461636263", 4, true, false),
        ("8016000300000000000000057f650ee900000000000000006462663131", 4, true, false),
        ("8026000114000000000000172dec7a1c00000000000000005eebb3fe404b9e5f463a5394c7bb62e8ffffffff623131", 129, false, false),
        ("8016000003000000000000033ac9818b000000000000000016198e", 4, true, false),
        ("801100000400000000000004bc6db1360000000000000000e768736b", 4, true, false),
        ("801f000000000000000000026a0bdb6f00000000000000053131", 129, false, true),
        ("800100fb14000000000000fc7a922fa70000000000000000f6bdaebfbca671b95aab3d5eac85a1f2ffffffff6461636461666563666362656461646564666161616364616262646265636566646564626166646161616663616461626266626364666163646362656562646365636162666562616264646462656666656663626265666163616562636165616464626365646665656664636162626363656563636264646665666161616563626561636564636166646163626165636262616363666364636464636161616261666666656365646163616465636161666565646666656464656264616464616363646164646261626165656166656162656465646262616161656365656264626465616366666663636363656162646263636164626564616662", 129, true, false),
        ("801400030000000000000003e02da7310000000000000000636562", 1, false, true),
        ("801b00000000000000000002d5dff1e600000000000000003131", 129, false, true),
        ("801e00031400000000000017b44c55fc0000000000000000b89809135b8b8dc129e1e4c6be7fa3dfbd400ed9636362", 4, true, false),
        ("800700fb140000000000010fd1d25c24000000000000000061158af4587c2dab54f0d080838d1e76f64db7ff6566626264616562646166646662666264666163616266616361626662616366666664626465666362666361656264666262646264636165656664636264616364626265636466646664656163626661616461666561656265656461656263646165656262666163626161616565636361666665666265646662616662616464646666626562656661616666666563666163616662666165656666636465656262666166636563636261636665646661616462666162626265626663626561646163666265656365626662666362636564636662666663636661616365626162626463666466626662656366656462666462636266626463646463", 4, true, false),
        ("805000fb14000000000001110f15e66600000000000000053c77682a8831249a688bd02614be0f3fffffffff65666461666363656462646564616462636163636562636662636162646163656662616162636261656166646362616161616561616464616563666666616462656465666266616264646463616364656462646664616663626264626261656465636463636363636564656663646263666462626466656566666362636262656662616663626461616361636161646163666564656265646366656365636265656366656363636466636661666361626364626364636165626262636262636663636366616461636662666265636162656164636566646662646461636662626466616364666662636261656661616662656263666661636366633131", 4, true, false),
        ("800700010400000000000007c9bb4d4c0000000000000000d244e06c623131", 4, true, false),
        ("801b000000000000000000009e20c30f0000000000000005", 129, false, true),
        ("802300fb00000000000000fbf637272000000000000000006163616561616564616464656265636363656161616664646665616364646163636565656666656266636163646663666364646361656464646262636661616165626561636263636562636262646164636362666662646664626262656365646364646261616662666464616164636165646461626265656164616163646265616661616464646566616361656364646465666666626163626262616364666163646662656265666663666464636562626466636664666263646363636463656562656662646266666465636165636162616163616666616463646364646366626162616566616663656361646362656462626262626262656162", 4, true, false),
        ("801a00001400000000000014404253b4000000000000000044833a1026afbdfd66e56b8d8197ce06ffffffff", 4, true, false),
        ("801400fb00000000000000fb6a4f0f6f00000000000000006663616666666261666164666564646364616563636665666361656366646664626466616664616166626366636163636565626661666363666464656463666463616462666266666663616563656665626365636162666562666663616462626366626662656666646666616165626665616665626663636264626364646666616266646164636462636561616365626564616662666465646263656662636365636365656263646562636362656361646662656665666163646263656464666561616262626166666464646165656362656463646565636163636565646161616166646364666562656363646661646662636561626263646562", 4, true, false),
        ("801f000100000000000000007995fde9000000000000000566", 129, true, false),
        ("800500fb0800000000000103200c30990000000000000005d951ab49684630bc6362626464656263636365636561666163636466646463616165656362646162626364646563656161666463626465616663646561656561616564616463616266626361646561616366656261666164666166646563626464626161656465646662646162646361646565646366616561636664636663656561646465626262666463636165616265616164666666656365636263636164616164656165646465646265646366646562666665656466646361616666646264616666666463626361616561656265636562626666626363616666616264646264646563626262636361616363616466616561646266616161666263656565636263", 4, true, false),
        ("800d000004000000000000046cec290c0000000000000000ed2d008b", 4, true, false),
        ("801400fb1400000000000102e0b37bf70000000000000000c1016f785fd412e1d44f0897e934d342d8f4fb736561626464666366626662656566626562616266616366656165666166616365656663646265646466636461666665616661636263636362616363616565636666626363646465656465646266646661666364646465626565656564646366646564656166616166646562646362646365656561666161666365626464616562626266636663616164646361626362636165656361616662646565626162616466616363656664656261626661656164646662666263636562636562626562646264636363646362666164666662656165626461636665656165636461626466626565616462666564616566666264636163636566626165646664", 129, true, false),
        ("80060003030000000000000469d8990d00000000000000009658d4616462", 129, true, false),
        ("800000010400000000000005bbf749310000000000000005d5b5899d62", 4, true, false),
        ("8030000100000000000000013967d851000000000000000061", 129, false, false),
        ("800e000003000000000000013c064993000000000000000597e932", 129, true, false),
        ("80000000040000000000000442d8e99a00000000000000056d5e220b", 4, true, false),
        ("80190003030000000000000684654c7c0000000000000000ab4396656162", 4, true, false),
        ("800e000004000000000000065a2366df00000000000000057442eefa3131", 4, true, false),
        ("800000fb03000000000000fe2923dfb40000000000000000f66eea6562636661616664626265656661626564626265636466666463656162646566636664656166656261616266636562646562656164666465646564616561636666656661656165646662616466636263666264666265646463646465666162666566656362646364656365656662626464666662646664656461646565616264656165626663636462626266616463646261636362656362636562666263666163636166646664626466666564646664646666646366666666616161626163626461636161616363636464616461656563616266636165656566646565666361616261656563646264636266646466636366666666626563656565", 4, true, false),
        ("801d0001080000000000000b866c5efd00000000000000052782d2a2d4148d97643131", 4, true, false),
        ("803c00010300000000000004fcfeef360000000000000000224f0c65", 129, false, false),
        ("800800fb00000000000000fbe7429ebf00000000000000006463626366626361636463616561666461636262626664626162626563656163666662626364646463646362636365636266616466666263656163636662646566616563616563626463646666666265646463646462656366636563616466646566616663616164626565626262636363646564636464626261646562636565666661616266616262666464656665636265656565636566626661646263666461666166626462666566636562656366646463666561646663636565626162626265636463646561646461636261626361646261646365636565646163626362626364646361636165646666626463656264616266636363636661", 4, true, false),
        ("800e000314000000000000174376efe500000000000000003e978ca2b058242930ff50110f819245e8f72ba3646161", 4, true, false),
        ("8021000303000000000000064b37dbcb000000000000000060e6fa636561", 4, true, false),
        ("80180000080000000000000ae09af1f500000000000000051e91d2cf2d8c210c3131", 4, true, false),
        ("801e00030000000000000005236a0c0700000000000000006465663131", 4, true, false),
        ("802200fb140000000000010f4945badd0000000000000000040f0056c08003d5a918b4cd552a6727ffffffff6666626264616166666161646565646463666363626664636461616464666663666364656465626461636161636166616466646163656163666664646564656261646264646565666561636663656664616562636263636566656263636463636265636164666665616265646164626161656266656664626562646663616663646165636566646365656163636462616365656463646565656363616663616166646465636561666665666364616466646465616565666566646664626261666264666261626261636362626265616363646266626664616661636664626361656165646465626162666565666561616162636663666662666665", 4, true, false),
        ("801e00010000000000000001ab194e33000000000000000065", 4, true, false),
        ("803c00000400000000000004c2bcd25c0000000000000000e296e253", 129, false, false),
        ("805000000300000000000003269c85a60000000000000000af6c2e", 129, false, false),
        ("801c000114000000000000152317cecb00000000000000000eb9cac74ded417f38f5a52f5eeef563ffffffff61", 4, true, false),
        ("800000fb00000000000000fb714fa04400000000000000006263656265656564656363636265656662616361636361646166656561616361626466616664636263646666656562626362656461656565646266636361616465666265666361626466656662656464636662666265636566616464666364616663666664616264666663646662636366626665666464636363626163636662666662666466656161656264656262666463646163616163616461656563636461646262636161656566616461626563626666646266666366626664656266656363656665656463626166626565626162656361636663646563626563646366646365636665646564616466666565616261636265656365646263", 4, true, false),
        ("8050000300000000000000057d63c6ab00000000000000056261623131", 129, false, false),
        ("8030000003000000000000035ec3ed440000000000000000275c9b", 129, false, false),
        ("8004000104000000000000074f843f18000000000000000580ac3147643131", 4, true, false),
        ("801e000008000000000000087ce745080000000000000005064f85b5f1d447f6", 4, true, false),
        ("801700fb0800000000000103521ee1c40000000000000005a36a14971e823d836666626564616262616162646162656664646263646165656263666663666266626163666563636364616564646364646663636565626264636366646166666461616565616461636562616462646362646666656665626362626561656365636563636461636665646661626463616261626462666162626662646263636465646261626165666365616365646263636562626465616261636561656562656263636361616364636465656264656566646366656463666462626465636664656264656365636262616462666366666665656565666562636266626264626466636466636362656466626164646563626166666263666566666364", 4, true, false),
        ("802400fb00000000000000fba6fece8900000000000000006461656566616266656262626465646361666662626561616162646362626265616463636563646365646265636666646263666166636366646361636163616361626266666265656261616266626162666366636263656364646565636662636264626366666164656665626666636561636463626164646565626566626361616663636561646566636564646664646262656362626365636265646363646163646564626666626663626666656563666262626266636565636162656263616566666162666465616565636363616561656563636465646165616663626265656462666162626565656263666264646664646364656463626462", 4, true, false),
        ("80020003030000000000000188e9a56200000000000000003c8849636464", 129, true, false),
        ("802300030000000000000000d40b5cb30000000000000000666464", 129, true, false),
        ("800c0001080000000000000b6803cb9b00000000000000000878b71066d95b5c653131", 4, true, false),
        ("801200fb00000000000000045dd0320800000000000000056466646366626661636161656563646266666263646161626365636166646262626562656566616461666463626565626462626661666261656361636164626361666262636462646461636162636563656562656266656366636665616266666561656662616361646661626663666264636563636361626566666166616366636565636165656363626463636266616162666462646662646662616562616263646262636366636162626266666664646466656466636362666265636663636663646663646365656564646366646464616161636164666461636564666366636166666665626162666665666266656365646366666163656464", 129, true, false),
        ("800a00010000000000000001c051ac62000000000000000063", 4, true, false),
        ("800500030000000000000003d8f298e70000000000000005626665", 4, true, false),
        ("800800fb04000000000000fff2b862510000000000000005000000006465616664616661626363646466616561636161656166666162656462626665626262636461626164636664636262666462626562626666646264626361636464616564616462646161646161636662646665646562666365656661666166666462656662636163666364616461626161656263616264646162646665616662646563636266646262626564616563646564616665646163616466666263656265646665666666656362656163636361666462626661646461646266616166626361646665616566646664636166626661616561626464616663666565646163616363636463636661646461616663656563656463636363666361", 4, true, false),
        ("800e0000080000000000000add2d16ce00000000000000005330f48caae521633131", 4, true, false),
        ("800200fb08000000000001030ad4647f00000000000000053b0519d6307fd83e6561636564626264626165626364626161656261666565666164616563616466666661646564656363656463636464646564636661666465656663646563616364656561636666636663636263666565656161616561666565626562656661616562636664616462626466656263626361636262646362646164656161636164646561636662656365626166626363626565626561646162646262646563616266616161616461656564656265616464656365626362656663626465646262616662626365616362656662666563636361626464626466646263636464616262636461616666656463666363626262616664626361636262646361", 4, true, false),
        ("800e00fb0300000000000100f5cbaf33000000000000000089708c65646664666261626462656364656362646563646162656161646366616163666165646364616564656363656165636163656662626363646364656161626262626562636463636366626665656666616363616161636261666466636463646364666561616162636565656566636461616661626162666461616164646463646362666461666265616165636661616166636365646161656165636263626566616364666566636663626166626462646666646366646561616363636561666261636663616664666362666664616366636164636166636261616164646163646161616164656363646566646562616465626663616661656164653131", 4, true, false),
        ("801200010800000000000009f6788cea0000000000000000e9319b39da50252d64", -1, false, true),
        ("8005000003000000000000032d1780ea0000000000000000c85f3f", 4, true, false),
        ("800100010000000000000000d3c92b2c000000000000000061", 129, true, false),
        ("80170000080000000000000a4a32fbce0000000000000000f33a25a5829431d03131", 4, true, false),
        ("801e00fb00000000000000fdb3c2e9e4000000000000000562666665636266666463656366666661646565616666646166626361616663626266646464616164626564666162636666656264616366616465636466626662656365646561636166616465656161626461626163636464616364646563666365666163636365656564666262666561646665646365626363646364616164666563656663646465616263626263666463666665626465646666626263636665646366656165656263646565616365646466656664626664636362636566626461666162646564616466646364616562616261646662646565636165646661666361656666636263646366636365636163656162656661636361623131", 4, true, false),
        ("801c00fb00000000000000fbc250dd5300000000000000056663626665616565646266646664656362616564616565616664656561626664666162646566626363646266666462616164616462626466616265626361616461666564656661636162636663616162646465626265656262646666616361646464666162656666656361616366626364626463616363636165626566636465636265636364646265656564636664656563646362626664616164646161666661656162666261656666636662626563636565666462636262646666656365656165666564666166616463656161626265646163656264646364616566666163666462646562616566616465666464616466656563666563636361", 4, true, false),
        ("801300010000000000000001a2b4bb51000000000000000061", 4, true, false),
        ("800400fb03000000000000feb6dad1480000000000000000f7cb786365636566616163656266616666656166636462646362626664666666616666616263656564636664666363666163616663666262626564616266636365626161626661636464626662646665626466666365636563656565666366616464636663626364626561626662646162646366646266646661666261646663666564666366636164626366636166666665616165626263616163636466666164636461636561626663656265616163616562616461636363626463646266616661656462626564636364636462626561646566666663656163666362646466646164636664616264626364636163636665656265656365636361636162", 4, true, false),
        ("8016000003000000000000057e09e8140000000000000000a29bc73131", 4, true, false),
        ("802300030300000000000006a74ce652000000000000000071ab05646663", 4, true, false),
        ("801c000104000000000000025ca0c43c000000000000000088aa8e1a63", 129, true, false),
        ("8015000314000000000000191d09a6dd0000000000000000d10e756dd3d84f99edc0bd08bc44232bffffffff6366613131", 4, true, false),
        ("800e00001400000000000016142d1b770000000000000000dcfabfeb157427bfa368f2ee171513a8b0dfcde73131", 4, true, false),
        ("801500fb04000000000000ff8a552e1b00000000000000003087523c6366616166656561656464666463666265616164646163646363646164626361666462616564616666666464626362656564656661616665626165636161656365626461666666626264616566666661656165626363636462646462666161626666646663616563646563626665636364636466616562626164656466636565616464636262646462666464656263636361666463636261656663656661666566666264656664626161666566626262626566646264656464626662636464626466666466636561646666646562646262656161636565646164626163666163666566646664656564616266626564666566646566656166666664", 4, true, false),
        ("803c00fb140000000000010f2b37c62600000000000000005ea9133436093cc8c44068e82be4b97aad87ef6d6264626161666465656461626262636164626363666262636665646564626165656661656561626261656265616564626462636263656665626565636664636463646466636166636465636266666664656365636565616362626266636561646166636461616164626164656563646163646562626464646561646161656264636264666263656361666163626563646561616562666362636165646366626464636364616665626166616466636363646366656166616365666661656263646261616666626362646561616464666466616662646461636364646463636162656465626664656562636664656461626364626463636362666362", 4, true, false),
        ("80150003040000000000000937043a5000000000000000009e95ba9f6663623131", 4, true, false),
        ("800c00000000000000000000c94c859c0000000000000000", 4, true, false),
        ("802100000000000000000000399f651d0000000000000005", 4, true, false),
        ("80250001030000000000000455cb039a00000000000000009935d064", 129, false, false),
        ("800b00000800000000000008dfbb119400000000000000005da01cad94075876", 4, true, false),
        ("800700fb080000000000010328de47940000000000000000bfb254f0c267eb7f6666656365666666656164666464636466656265656364636563636664666366626564626661666365626566616161626461646261636563656362646565626462656664616466646163626165636464626466666163646462646565666466626266616263646164636362626463646564646566636465656665636563666464616365626164646263626262626464636166646264616163646661636362616166636264656566626266656565636165646263656166616264666561646365646664656464636664636466626265626366636565646362646266636164626564656261656666646263636365636461616564626466626563616664", 4, true, false),
        ("8012000003000000000000038b41e998000000000000000514f4f8", 4, true, false),
        ("802400fb140000000000010fa0b4724b0000000000000005904733a707c32cfe821991d1746e4ce4ffffffff6665616466636466646361636464656466626564666261646364626463636362636564636164656665636466636465656164636363626666666464616464646565636665656161616564646561646361616263656161616363656563616664636365656666616363636166646161636364626564616164656664636466626262626461616165616162626663626166616363636665656461656365656664646262626561656561646261626561666163616662656465626265636663646664646462666163666566656665616265616662666166656466646461636561626562646162666466656563626665656265656163646463626264636163", 4, true, false),
        ("801900fb00000000000000fb7163d75200000000000000006563636664636362656665626465656264616664626163656165626264666662626262656566666262646166646363626362646666646163626463646362626466656262616264626466656262626161646564636266626362616463626466646564666264616262666664626664666166646461636365646162616165616363636461616365656666666662666161656162616661626165616361626661646164636662636465626561636364666465666364666563656165666365646365616363646562656366656466616365656266666664656164626163616163646263636563616363626561626465636264626366616262656666646664", 4, true, false),
        ("803c00fb04000000000000ff8a89d2160000000000000005ea98bf6e6363656161646661636566636561636662666262646662626262636164666261636264666162666466666564656264636362616166636463656361666162656265666263666464646365626163626265646465646162666166666365646265646163636161626661646364656664646362616266656161626361616464666564646264636263656666616164656565636463626565646462626162656564656463626262636364636362636161666162666264646362616666646164666161666161636461656465656162646162616663666161616166666366666561666266636363636364646362656364646366646161636562636466636664", 4, true, false),
        ("80080000040000000000000462011a34000000000000000000000000", 0, false, true),
        ("8007000000000000000000022d03cf6900000000000000003131", 4, true, false),
        ("801400010300000000000004108a7be90000000000000005fc87f465", 4, true, false),
        ("80220003000000000000000331676dfd0000000000000005656263", 129, false, true),
        ("800500010000000000000001b3a97fa2000000000000000065", 4, true, false),
        ("801a000314000000000000177dad11da00000000000000003f6caed7770026eab4ddab1e52e05a1034ec5990646564", 4, true, false),
        ("800c00011400000000000017dd79a27f0000000000000000784df5d37114381cdc41135fb6562930ffffffff613131", 4, true, false),
        ("80090000000000000000000067e1ea720000000000000005", 4, true, false),
        ("803c0003140000000000001595c528230000000000000000b2aca2edbe2a509d8aeeda2b7af4150671484668616666", 129, true, false),
        ("801d0000080000000000000852a5c0740000000000000000c6d694137c8a6680", 4, true, false),
        ("801e0000030000000000000352dc5f5b0000000000000000a962ba", 4, true, false),
        ("800a00000800000000000008bca2362c0000000000000000eb9fd3d88b292f18", 4, true, false),
        ("80130000040000000000000444b09dbb00000000000000053e5f96a1", 4, true, false),
        ("801f00000300000000000003931f7aac0000000000000000392598", 129, false, false),
        ("803c00000800000000000008a275f7790000000000000000b512e2f1cbe0490c", 129, false, false),
        ("801c0003000000000000000380db7def0000000000000005626264", 4, true, false),
        ("80500000000000000000000011c51c110000000000000000", 129, false, true),
        ("800c00fb0800000000000103c2ac2fab000000000000000015ed80ce08eb01576365646266626662626362636665646365626461636162666562646161666566646161666166656461616364626561646665646562616161666161626461656465646662666563656263656661626265636664636663656266616666646463636462666261636266666366646662666562616566656265656463666562666265666664626162626165656465666362616562646666616563666162636161656162646164666162656665626666656661666363616663616262646361666162616161626165626562646266616561636161666162626363646661646362636262626463646363666466646462656666646561666365646163626261", 4, true, false),
        ("8017000103000000000000060ad4df3e0000000000000005f0a36b633131", 4, true, false),
        ("801000fb140000000000010fdeef90290000000000000000265ab3108f6fa8640cadf38add7902c5bc2574e36666666363646266656564666666656466646164636162616361646362636366626463626162656266626265626364666664646361616364666665616261616166666565656163646664636266656662616165656465636562656263646162656165656162626461646363646366656663616464656265636265656366636562656362666565616264666465636665626263626565646266646663616165636665636165636163626365646364666463656262666265656664656265626265636562656462636166656365666562646263636366616261646663626466646265666566616566636363646566626263626361656461656661636362", 4, true, false),
        ("802300030300000000000008ebd444e40000000000000000c8cb6e6262623131", 4, true, false),
        ("801a00fb04000000000000ffb22abd480000000000000005222f400c6262626666646366636363666665616562626666616661666161626362636366616563616666636666626565616461646466656364666163656461626262636261666566636661626462666264636663646365626566616366666466656263666365656161646464666265616266646166646462636365666466666164636466646266626263666263656562666365616266626564636466636162616562616163616164626665626362666362646561626666636166626663616366636165626266646465626666636563626566636663626265646565616562656265626164636261626261616361616564636262636163646563636564626563", 4, true, false),
        ("801c00030400000000000007d19c70130000000000000000ba599e53636366", 1, false, true),
        ("802500fb04000000000000ff2b04c43200000000000000053716a3f96161656664626262646563656463616264656361656564616363626264646361656262626461636666666162616362666362656662636263636166656463646465616562666565656663616663636266646266616663616661646265616664626666646266616366636363626561636465626464616366626163656461646462636262626464656462666364616162626264636362646364656364646463656564616661636263646562646363666363626466636261646563626265616561626461626164646162616665626263656566636262646163666463656561656463616565616161626264626665646265646363656264646564636563", 4, true, false),
        ("800300001400000000000014f2e2a2c10000000000000000ef4c6c757485659edde2e16eeb12f2abffffffff", 4, true, false),
        ("801500030300000000000006f752761f0000000000000000697f24656665", 4, true, false),
        ("800600030000000000000003085e76350000000000000000616264", 4, true, false),
        ("800d00010000000000000003028fdb4a0000000000000000663131", 4, true, false),
        ("8025000008000000000000082cf2903800000000000000058489f9b9779beb05", 129, false, false),
        ("800000fb0800000000000103d20062f00000000000000000517a3a0fda2611c56561666262656162616562636564646563656261636565626264616161626361616263616262656266636163656662636664626163656666656564666465666561656664656265616562636163636464626264636662636461626161646663646562616163636365656362626563646361656362666464666166616463626664666664626461616564616262656462626265636562636665636665626566626565626366656162656566656365636666666165626462636164646464626363636662626464626561616366666365666462626366636566616463666361646463666263666364626265656463626264656366626464666263646362", 4, true, false),
        ("800400fb00000000000000fde7cb7e5d000000000000000063616564616566616261666361666165636266646363636661666361656364656563616665666462656165626366636564656262656162666564656162616664646565616665666465656566626263646262646166636461646466626465626165656461626261626564656562666464666662616161626366616266656565626662656661626166636164666364616165626261666564626262646565656466656666626562646661656361646363646663616261646362636362666463636565616165666563656162666665616264626165636466616161666265656165666261636565646563636462616561616365666465616266616465613131", 4, true, false),
        ("801200fb00000000000000fbf466ee9e00000000000000006364666565636463656566666462656566646161626662646362646161646662636563656166636263636162626163636562646663666362646261616163656566656364666463646665636261626662616266656162626165666562646161646561646165626661656162646366666562636262646162636163656662666164666266616465616262656563646662616366626264616564636562636662616566656462666265646566646666616462646563666462626161636465616162636664616665646163646466666162626666666362616664656264636666656562636162646464616165626361626562656361656166656366646561", 4, true, false),
        ("801000010000000000000003e785dd5f0000000000000005623131", 1, true, false),
        ("8003000004000000000000020d676ab100000000000000000baaa861", 129, true, false),
        ("800a00000000000000000000056387f00000000000000000", 0, false, true),
        ("800c00000400000000000004333615b10000000000000005b362850e", 4, true, false),
        ("800c000300000000000000039a6be0ce0000000000000000616262", 1, false, true),
        ("800d000308000000000000079fcdc7d200000000000000004f3c7501ee8e39ab656461", 129, true, false),
        ("8004000014000000000000143beed7c60000000000000005b295c635f58c6fe5a85cf89b3fba32f5ffffffff", 4, true, false),
        ("8019000000000000000000022aed3a8700000000000000003131", 4, true, false),
        ("8001000003000000000000014860b81d000000000000000077438c", 129, true, false),
        ("801500fb0800000000000103f37f65b40000000000000000ee245054a9fd7e4b6363666662616266656263646661636563666663646465616262616665646366616564626161626466646461616266636264646266636362636463626662666164656562666563666464666561656264646466636565666466646566616163656461636166626662646361636565626666666664616661666364656561636662616662666663656561656666616566656262646264666265646565636566636666626366666366616465616566646261666265626261616163626663656262666361656361666561646462666565616662656662666464636261626266636365666164636265616366616265656666626366656464626566636265", 4, true, false),
        ("802400000400000000000004336d16d30000000000000000b4ebdd40", 4, true, false),
        ("80050003030000000000000649cb57650000000000000000d1bf82636261", 4, true, false),
        ("801a00fb140000000000010f4f3894bf0000000000000005585ea8a8b8f5b755964b705c28803b73b7ca207c6461616662666365646562646564626462646365616462636463636161656265626165646361666263666261666464616361616266626164636165626466666663646164626466646664646365626666646166626265666164616662666162626562636563616664616161666363666662646266616461646463616663626262646263616161656363616666666164666162636164616664656566636663646364636561636365636466616165646461616461646366616264636563666463666464646363646562616161656266626466666364636662626365666664646462636665656162626266666666666366616464656362636462646166", 4, true, false),
        ("802200fb00000000000000fd8b8675fb000000000000000063616261666265646261666361616662636363626561626664646261616162616165636564656462656564626461656363666362616661666164656563616162616663626366636662656565646465616461646164616265666364626165616561656664656264626562636662626363626566656561626366636661656662626661646165616563656662636163616662666262666165646465656564646163626664646461646562636361616562666662616563636464646463666163636261636261656565636666666361666466656662636165616161636163636462656462656562646463666162616162636163636564666462656463653131", 4, true, false),
        ("8030000000000000000000004a6e8d280000000000000005", 129, false, true),
        ("8030000303000000000000060df905f00000000000000000dd2a0d646465", 129, false, false),
        ("80260003040000000000000979db398600000000000000004b18b5916164623131", 129, false, false),
        ("8006000300000000000000013b4e9d830000000000000000646561", 129, true, false),
        ("8018000300000000000000054285c93300000000000000006261663131", 4, true, false),
        ("800e00fb1400000000000111fe997de5000000000000000035c2892b5bb69af8008227dca1446529ffffffff65616462656561656463646665636265636366656362646163616265616364616462616461656464666164616564626465666163666161616565626663656163646662636266666462646465636363636665666266616361616266656665616565626365626665616262666461656161626362646661626563656465646261626166666462626664656565666566646362616364656165616465616563646163656361616365626566626461626164646461626365646465656464626666636364636165616261616164636163666364626661616664626165646562656566656662666561616562616162616162636261616463666361656666653131", 4, true, false),
        ("8017000104000000000000044c154dd100000000000000054ae52cb964", 129, true, false),
        ("800b00fb08000000000001053ab790f8000000000000000598edfb2f4aa28c1462636165646364656262616364656261666663646466636366636465646462656464666466656265656161656465636661626265656663656563636466656164616261616265656263626361616364626362656164626466616665646661626662646161646662636161666161646464636162656466626164626464666566666263656365656365616264616562616365646461636262626162636464626666656664666363646262646462666562636563646466656461656461616364636361656261656562646564616164656166626164626361626265626465636366666461616566666566616164656163616565666265656664616165643131", 4, true, false),
        ("800100000300000000000003514dab5d0000000000000000092b53", 4, true, false),
        ("803c00fb03000000000000fe684cd72e000000000000000580263d6161666266646464636161646565656366666466626466636162646664666563616661666366666261666561666666656561666361666564656466636264656566626565656466626464646262646162616561646365656164616263656565656365626666656266636563646664616562656265666461646361616361666562646362616464656461666362636461636466616462656566626263616664626263656163646465646161646362656561656566656162656364636662666662656465626263616464616161646264626461666264616464656164616562646562636461636265616261636666626666616163656365646464646561", 4, true, false),
        ("80000000140000000000001425fd5939000000000000000516cc75084fb6f16b6ae98887f8733c7899d44e56", 4, true, false),
        ("8003000004000000000000032100c2550000000000000000dd14f5b4", 129, true, false),
        ("800200011400000000000015d54381ff0000000000000000df15ee385fc4394e85b6443e5b8791f5b6934aa763", 4, true, false),
        ("8001000300000000000000054acd39b200000000000000006162643131", 4, true, false),
        ("8011000304000000000000074c311c2a00000000000000004aa35177636665", 4, true, false),
        ("801500fb00000000000000fd8086e5c7000000000000000061666166666162666261636562656463626461636464656461616361666263636163656166666365646465636164646165646164646663656664666261666661626566616364666263666262616162636666626566626263636663616163666465616164636466626263656366636362656363666362656465656462626164646165656562666463666462656566636164656561646461656361656361626263636465656261656461616362646561646462616665616462646365636363666566616565666563626662636266646563626265666262646661636266616166646664666661616465646366646266666261616361636262666161613131", 4, true, false),
        ("80260000040000000000000496357e2e000000000000000021343ee6", 129, false, false),
        ("80080001140000000000001727f2fbf800000000000000009f56ac9d78b2bc7672b10c5384067afbffffffff613131", 4, true, false),
        ("801f000003000000000000058b3e82a900000000000000053f8d6b3131", 129, false, false),
        ("8018000000000000000000001ed4eab40000000000000000", -1, false, true),
        ("801100fb00000000000000fbafea6e0700000000000000006266636463616462666666636464636464636663656163636265646163616563636662646565616663666561626663656262626564646466646162626263616262646461666266656561656461636163656266646264616561626561646363646562636561656661646564616364616164656363616565656365636264656261616664626162616465626562646664666466636466616366666562636565656162646261666664656165656565616666626162636162666564656164636666666161636463656561636166646563666463636566636263646563646165656364646561646665646364646361666462626263656561656563626266", 4, true, false),
        ("80230001000000000000000120860298000000000000000565", 4, true, false),
        ("8000000100000000000000036e9df2b50000000000000000623131", 4, true, false),
        ("800900000300000000000005ea8c15020000000000000005fe4c143131", 4, true, false),
        ("802400fb04000000000000448d09c1290000000000000000ed700dc86362656164656566636463636461636366616664646163666662666664646564636263666664666164616363626261666164646566626461656361636464646264616363646165636166616165636564666362646262626361646661646262636666656466626362646361656361616562666162646162646565646266626662646161616265646464656565666563666262626161616661646562636263626561646366666566646263626365646663666266646263626566646266626261666665616262616462666363646464626161656463646161616266656464646661626265616661626665656264666364626462666664656565616361", 129, true, false),
        ("801e000300000000000000033e9ec9060000000000000000636265", 4, true, false),
        ("800900000800000000000008d4618fcc0000000000000000863c059acd7de1fa", 4, true, false),
        ("801200011400000000000015c4c80b3e00000000000000002a161e2d38a88205700b1a6e9e834034ffffffff65", 4, true, false),
        ("800c00030300000000000008fe88193c0000000000000000c795e76563653131", 4, true, false),
        ("805000000400000000000004470f34260000000000000005420bd79b", 129, false, false),
        ("80030001080000000000000bdafa82b9000000000000000016b3eedb83df4bd4653131", 1, false, true),
        ("801d00000400000000000004e340f47100000000000000007d964ac1", 4, true, false),
        ("802400fb00000000000000fd08bdf325000000000000000062646461656263646461626263656161636566646262646265646666646564666163656565656363616165616364646666666465626561636462646461646562646662626165616566656666646462626166626562656464666565666163666461656666616361636261626666616666636361646462616465616566656363666564626366626463626465626665666564616561616165626265616161626266656163616561666665666262626362666166626663666265646466646563616261636166656263656465626562616265646665636162646263666162626266646563626163666261666266636263626665646664666166646365633131", 4, true, false),
        ("801700fb140000000000010f4b8afb510000000000000005c3c43e9485f89fac1453ac38a917dfcdcc92fd3a6361616465656664616263646661636665656263636364636565616364666264636365666666666366636462656264646263616361646661666162616565616465666664636564626166656163636164646164626166626366656564666266646161656163666164626366656463646466626262646563626561626264626266626166656163656365626266656266666561636266646161656564636162656164646261656163646661646564666264626366666162636465616465646263656163616562616163646461646263646665666266616166656263616164616362616466626262616561636263626265656266646562626165666663", 4, true, false),
    ];
}

/// The parser's decision for every surveyed shape agrees with what
/// memcached did: which error status, whether it closed, and whether the
/// trailing noop was reached (which pins down consumed + swallow).
#[test]
fn parse_decisions_match_memcached_shape_survey() {
    const MARK: u32 = 0xfeed_f00d;
    let noop = pkt(0x0a, b"", b"", b"", MARK, 0);
    let mut requests = 0;
    for (i, &(packet, status, closed, noop_answered)) in survey::SHAPES.iter().enumerate() {
        let packet = hex(packet);
        let mut stream = packet.clone();
        stream.extend_from_slice(&noop);
        let ctx = format!("row {i}: {:02x?} -> status {status} closed {closed} noop {noop_answered}", packet);
        match p(&stream) {
            BinParsed::Error { response_status, consumed, swallow, close, .. } => {
                assert_eq!(i32::from(response_status.code()), status, "{ctx}");
                assert_eq!(close, closed, "{ctx}");
                if close {
                    assert!(!noop_answered, "{ctx}");
                } else {
                    // memcached reached the noop exactly when the error's
                    // consumed + swallow end where the noop starts.
                    assert_eq!(consumed + swallow == packet.len(), noop_answered, "{ctx}");
                    assert!(consumed + swallow >= packet.len(), "{ctx}");
                }
            }
            BinParsed::Request { request, consumed } => {
                requests += 1;
                assert!(status != 4 && status != 0x81, "{ctx}");
                if consumed == packet.len() {
                    let quits = request.opcode.command() == Command::Quit;
                    assert_eq!(closed, quits, "{ctx}");
                    assert_eq!(noop_answered, !quits, "{ctx}");
                } else {
                    // A stat/touch surplus read as the next packet: here
                    // always a bad magic byte, so memcached closed.
                    assert!(matches!(request.opcode.command(), Command::Stat | Command::Touch | Command::Gat), "{ctx}");
                    assert_eq!(p(&stream[consumed..]), BinParsed::Close, "{ctx}");
                    assert!(closed && !noop_answered, "{ctx}");
                }
            }
            other => panic!("{ctx}: {:?}", other),
        }
    }
    assert!(requests > 20, "the survey reaches valid requests too ({requests})");
}
