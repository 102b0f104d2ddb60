//! Unit tests for the meta protocol parser and encoders. Expected replies
//! and error strings were checked against memcached 1.6.18 (see
//! `tests/meta-vectors/record.py` for the recorded vectors).

use super::*;
use crate::text::{parse, Parsed, Request};

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
    // No key: a bad format (memcached 1.6.40; 1.6.18 and 1.6.38: ERROR).
    assert_eq!(e(b"mg\r\n"), BAD_FORMAT);
    assert_eq!(e(b"ms\r\n"), BAD_FORMAT);
    assert_eq!(e(b"md\r\n"), BAD_FORMAT);
    assert_eq!(e(b"ma\r\n"), BAD_FORMAT);
    assert_eq!(e(b"me\r\n"), BAD_FORMAT);
    assert_eq!(e(b"ms foo\r\n"), BAD_FORMAT);
    assert_eq!(e(b"mz foo\r\n"), ERROR);
}

#[test]
fn typed_flags() {
    let r = mreq(b"mg k T30 N-1 R-2147483648 F4294967295 C18446744073709551615 MD J7 D9 Oab\r\n");
    let f = r.flags;
    assert_eq!(f.ttl, Some(30));
    assert_eq!(f.vivify_ttl, Some(-1));
    assert_eq!(f.recache_ttl, Some(i32::MIN));
    assert_eq!(f.client_flags, u32::MAX);
    // 1.6.18-1.6.44 read R2147483648 as i32::MIN and F4294967297 as 1
    // (strtol's long cut to 32 bits); 1.6.45 refuses both.
    assert_eq!(e(b"mg k R2147483648\r\n"), BAD_TOKEN);
    assert_eq!(merr(b"ms k 1 F4294967297\r\nx\r\n").0, BAD_FORMAT);
    assert_eq!(f.cas, Some(u64::MAX));
    assert_eq!(f.mode, Some(b'D'));
    assert_eq!((f.initial, f.delta), (7, 9));
    assert_eq!(f.opaque, b"Oab");
    assert_eq!(f.order(), b"TNRFCMJDO");
    // Defaults.
    let f = mreq(b"ma k\r\n").flags;
    assert_eq!(
        (f.ttl, f.vivify_ttl, f.recache_ttl, f.cas, f.mode),
        (None, None, None, None, None)
    );
    assert_eq!(
        (f.client_flags, f.initial, f.delta, f.opaque),
        (0, 0, 1, &b""[..])
    );
    assert!(f.order().is_empty());
    // memcached 1.6.45's strict readers (crate::number), not strtol's
    // rules (1.6.18-1.6.44 took `T+5` and `T5\t` as 5): digits only, a
    // flag without them refused, out of range refused.
    assert_eq!(mreq(b"mg k T-5\r\n").flags.ttl, Some(-5));
    assert_eq!(e(b"mg k T+5\r\n"), BAD_TOKEN);
    assert_eq!(e(b"mg k T5\t\r\n"), BAD_TOKEN);
    assert_eq!(e(b"mg k T\r\n"), BAD_TOKEN);
    assert_eq!(e(b"mg k N2147483648\r\n"), BAD_TOKEN);
    assert_eq!(e(b"mg k D+1\r\n"), INVALID_DELTA);
    assert_eq!(e(b"mg k J\r\n"), INVALID_INITIAL);
    assert_eq!(e(b"mg k C\r\n"), BAD_TOKEN);
    assert_eq!(mreq(b"mg k C18446744073709551615\r\n").flags.cas, Some(u64::MAX));
    assert_eq!(mreq(b"ms k 1 F4294967295\r\nx\r\n").flags.client_flags, u32::MAX);
    assert_eq!(merr(b"ms k 1 F4294967296\r\nx\r\n").0, BAD_FORMAT, "strtoul's 64 bits made it 0");
    // ms's length keeps strtol's reading (1.6.18 and 1.6.38: `+1` is 1).
    assert_eq!(mreq(b"ms k +1\r\nx\r\n").data, b"x");
    assert_eq!(e(b"mg k T5x\r\n"), BAD_TOKEN);
    assert_eq!(e(b"mg k J18446744073709551616\r\n"), INVALID_INITIAL);
    assert_eq!(e(b"mg k D-5\r\n"), INVALID_DELTA);
    assert_eq!(e(b"mg k C-1\r\n"), BAD_TOKEN);
    // Every single-letter flag is known; each sets its bit.
    for &letter in b"bkvqstcflhuOPLIx" {
        let line = [&b"mg Zm9v "[..], &[letter], b"\r\n"].concat();
        let r = mreq(&line);
        assert!(
            r.flags.has(letter) && r.flags.order() == [letter],
            "{}",
            letter as char
        );
        assert_eq!(r.key_binary(), letter == b'b');
    }
    // `E` is valid in larder (explicit CAS; memcached after 1.6.18).
    for &letter in b"ABGHKQSUVWXYZadegijmnoprwyz0[`" {
        let line = [&b"mg k "[..], &[letter], b"\r\n"].concat();
        assert_eq!(e(&line), INVALID_FLAG, "{}", letter as char);
    }
}

/// memcached 1.6.40's tokeniser refuses a meta line whose flag token starts
/// with a byte outside 65..=122 that is not a digit, before any flag is
/// read (1.6.18 and 1.6.38: the flag's own error). Replies checked with
/// the 1.6.45 binary.
#[test]
fn bad_flag_byte() {
    for line in [
        &b"mg k !\r\n"[..],
        b"mg k ~\r\n",
        b"mg k {\r\n",
        b"mg k @\r\n",
        b"mg k -5\r\n",
        b"mg k \x80\r\n",
        b"mg k \x7f\r\n",
        b"mg k v !\r\n",
        b"mg k O12 !\r\n",
        b"md k q !\r\n",
        b"ma k N0 J5 ~\r\n",
        b"me k !\r\n",
        b"mg k v v v v v v v v v v v v v v v v v v v v !\r\n",
    ] {
        assert_eq!(e(line), BAD_FORMAT, "{:?}", String::from_utf8_lossy(line));
    }
    // `ms`: from the fourth token; the data block is not swallowed.
    let p = crate::text::parse(b"ms k 1 !\r\nx\r\n", &Limits::default());
    assert_eq!(p, Parsed::Error { error: BAD_FORMAT, consumed: 10, swallow: 0 });
    assert_eq!(e(b"ms k 1 T1 \x80\r\n"), BAD_FORMAT);
    // The key may start with anything; a flag past the 23rd token is not
    // looked at (the line is then too long for the flags).
    assert!(matches!(crate::text::parse(b"mg ! v\r\n", &Limits::default()), Parsed::Request { .. }));
    assert_eq!(e(b"mg k v v v v v v v v v v v v v v v v v v v v v !\r\n"), "CLIENT_ERROR options flags are too long");
    assert_eq!(e(b"mg k [\r\n"), INVALID_FLAG);
    assert_eq!(e(b"mg k 5\r\n"), INVALID_FLAG);
}

#[test]
fn error_precedence() {
    // Duplicate and unknown flags stop at once; other errors let parsing go
    // on and the last message wins (a bad F has none of its own).
    assert_eq!(e(b"mg k Tx Jx\r\n"), INVALID_INITIAL);
    assert_eq!(e(b"mg k Jx Tx\r\n"), BAD_TOKEN);
    assert_eq!(e(b"mg k Fx\r\n"), BAD_FORMAT);
    assert_eq!(e(b"mg k Jx Fx\r\n"), INVALID_INITIAL);
    assert_eq!(e(b"mg k Tx v v\r\n"), DUPLICATE_FLAG);
    assert_eq!(e(b"mg k Tx Z\r\n"), INVALID_FLAG);
    assert_eq!(e(b"mg k v vv\r\n"), DUPLICATE_FLAG);
    // (`mg k \x80`: a bad format since 1.6.40, see bad_flag_byte)
    assert_eq!(e(b"mg k M\r\n"), M_TOKEN_LENGTH);
    assert_eq!(e(b"mg abc b\r\n"), DECODING_KEY);
    // ma has one message for every flag error (md too up to 1.6.39:
    // md_flag_errors_name_the_error).
    for line in [
        &b"ma k Dx\r\n"[..],
        b"ma k MSS\r\n",
    ] {
        assert_eq!(
            e(line),
            INVALID_OR_DUPLICATE,
            "{:?}",
            String::from_utf8_lossy(line)
        );
    }
    // Key length before flags; token count before flags.
    let long = [&b"mg "[..], &[b'k'; 251], b" Z\r\n"].concat();
    assert_eq!(e(&long), BAD_FORMAT);
    assert_eq!(
        e(b"mg k a b c d e f g h i j k l m n o p q r\r\n"),
        MG_TOO_MANY_FLAGS
    );
    assert_eq!(
        e(b"md k a b c d e f g h i j k l m n o p q r\r\n"),
        TOO_MANY_FLAGS
    );
    assert_eq!(
        e(b"ma k a b c d e f g h i j k l m n o p q r s t u v w x y z\r\n"),
        TOO_MANY_FLAGS
    );
    // 19 tokens are fine (17 flags), 20 are not.
    assert_eq!(
        mreq(b"mg k s t c f v h k l O q u P L I T1 N1 R1\r\n")
            .flags
            .order()
            .len(),
        17
    );
    assert_eq!(
        e(b"mg k s t c f v h k l O q u P L I T1 N1 R1 J1\r\n"),
        MG_TOO_MANY_FLAGS
    );
    // Modes.
    assert_eq!(e(b"ma k MS\r\n"), MA_INVALID_MODE);
    assert_eq!(
        e(b"md k O123456789012345678901234567890123\r\n"),
        OPAQUE_TOO_LONG
    );
    // mg and ma notice an overlong opaque only when answering.
    assert!(mreq(b"mg k O123456789012345678901234567890123\r\n").opaque_too_long());
    assert!(mreq(b"ma k O123456789012345678901234567890123\r\n").opaque_too_long());
    assert!(!mreq(b"mg k O1234567890123456789012345678901\r\n").opaque_too_long());
    // A NUL is an ordinary byte of a token (memcached 1.6.40; 1.6.18 to
    // 1.6.38 ended the command text there).
    let r = mreq(b"mg k\0x v\r\n");
    assert!(r.key() == b"k\0x" && r.flags.has(b'v'));
}

#[test]
fn modes() {
    use StoreCommand::*;
    let mode = |l: &[u8]| mreq(l).store_mode();
    assert_eq!(mode(b"ms k 0\r\n\r\n"), Set);
    assert_eq!(mode(b"ms k 0 MS\r\n\r\n"), Set);
    assert_eq!(mode(b"ms k 0 ME\r\n\r\n"), Add);
    assert_eq!(mode(b"ms k 0 MA\r\n\r\n"), Append);
    assert_eq!(mode(b"ms k 0 MP\r\n\r\n"), Prepend);
    assert_eq!(mode(b"ms k 0 MR\r\n\r\n"), Replace);
    assert_eq!(mode(b"ms k 0 C5\r\n\r\n"), Cas(5));
    assert_eq!(mode(b"ms k 0 MR C5\r\n\r\n"), Cas(5));
    assert_eq!(mode(b"ms k 0 ME C5\r\n\r\n"), Add);
    assert_eq!(mode(b"ms k 0 MA C5\r\n\r\n"), Append);
    for m in [&b"Ms"[..], b"Mx", b"MI", b"M+"] {
        let line = [&b"ms k 0 "[..], m, b"\r\n\r\n"].concat();
        assert_eq!(merr(&line), (MS_INVALID_MODE, line.len() - 2, 2));
    }
    assert!(mreq(b"ma k\r\n").incr());
    assert!(mreq(b"ma k MI\r\n").incr());
    assert!(mreq(b"ma k M+\r\n").incr());
    assert!(!mreq(b"ma k MD\r\n").incr());
    assert!(!mreq(b"ma k M-\r\n").incr());
    // mg and md ignore M (any byte).
    assert_eq!(mreq(b"mg k Mz\r\n").flags.mode, Some(b'z'));
}

#[test]
fn ms_framing_and_swallow() {
    // Errors before the length is known swallow nothing: the block is then
    // read as a command.
    assert_eq!(e(b"ms k\r\n"), BAD_FORMAT);
    assert_eq!(e(b"ms k x\r\n"), BAD_FORMAT);
    assert_eq!(e(b"ms k -1\r\n"), BAD_FORMAT);
    assert_eq!(e(b"ms k 2147483646\r\n"), BAD_FORMAT);
    assert_eq!(
        e(&[&b"ms "[..], &[b'k'; 251], b" 1\r\n"].concat()),
        BAD_FORMAT
    );
    assert_eq!(
        e(b"ms k 1 a b c d e f g h i j k l m n o p q\r\n"),
        TOO_MANY_FLAGS
    );
    // After it, the block is swallowed.
    let line = b"ms k 3 T1 T2\r\n";
    assert_eq!(merr(line), (DUPLICATE_FLAG, line.len(), 5));
    assert_eq!(merr(b"ms abc 3 b\r\n"), (DECODING_KEY, 12, 5));
    assert_eq!(merr(b"ms k 3 O123456789012345678901234567890123\r\n").2, 5);
    // Mode errors win over an overlong opaque.
    assert_eq!(
        merr(b"ms k 3 Mx O123456789012345678901234567890123\r\n").0,
        MS_INVALID_MODE
    );
    // A bad chunk consumes the block, always answered (even under q).
    assert_eq!(merr(b"ms k 3 q\r\nabcde\r\n"), (BAD_DATA_CHUNK, 15, 0));
    // Incomplete until the whole block is there, at every cut.
    for full in [
        &b"ms k 5 T10 F3 c k\r\nhello\r\n"[..],
        b"ms Zm9v 2 b k q\r\nhi\r\n",
        b"ms k 0\r\n\r\n",
        b"ms k 3 T1 T2\r\nabc\r\n",
        b"ms k 3\r\nab\r\r\n",
    ] {
        let line_end = full.iter().position(|&b| b == b'\n').unwrap() + 1;
        let used = match p(full) {
            Parsed::Request { consumed, .. } => consumed,
            Parsed::Error { consumed, .. } => consumed,
            other => panic!("{other:?}"),
        };
        for cut in 0..used {
            let expected = if cut < line_end {
                Parsed::Incomplete { needed: None }
            } else {
                Parsed::Incomplete { needed: Some(used) }
            };
            if used == line_end || cut < line_end {
                assert_eq!(
                    p(&full[..cut]),
                    Parsed::Incomplete { needed: None },
                    "{full:?} at {cut}"
                );
            } else {
                assert_eq!(p(&full[..cut]), expected, "{full:?} at {cut}");
            }
        }
    }
    // Too large: the block is swallowed unbuffered; the key is unlinked
    // whatever the mode; always answered.
    let limits = Limits {
        item_size_max: 100,
        ..Limits::default()
    };
    let big = b"ms kk 40 MA q\r\n";
    assert_eq!(item_size(2, 0, 40), 101);
    assert_eq!(
        parse(big, &limits),
        Parsed::TooLarge {
            command: StoreCommand::Set,
            key: b"kk",
            noreply: false,
            consumed: big.len(),
            swallow: 42
        }
    );
    assert!(matches!(
        parse(b"ms kk 39\r\n", &limits),
        Parsed::Incomplete { needed: Some(51) }
    ));
    // Client flags count, as for set.
    assert!(matches!(
        parse(b"ms kk 39 F1\r\n", &limits),
        Parsed::TooLarge { .. }
    ));
    // The decoded key length counts; its bytes are not in the buffer.
    match parse(b"ms a2s= 40 b\r\n", &limits) {
        Parsed::TooLarge { key, swallow, .. } => assert_eq!((key, swallow), (&b""[..], 42)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parse(b"ms a2s= 39 b\r\n", &limits),
        Parsed::Incomplete { .. }
    ));
}

#[test]
fn base64_keys() {
    let r = mreq(b"mg Zm9vYmFy b k\r\n");
    assert_eq!((r.key(), r.key_binary()), (&b"foobar"[..], true));
    assert_eq!(mreq(b"mg YQ== b\r\n").key(), b"a");
    assert_eq!(mreq(b"mg YWI= b\r\n").key(), b"ab");
    assert_eq!(mreq(b"mg AAAA b\r\n").key(), b"\0\0\0");
    // memcached's decoder skips bytes outside the alphabet and stops after
    // the first group with padding.
    assert_eq!(mreq(b"mg Y!W*I= b\r\n").key(), b"ab");
    assert_eq!(mreq(b"mg YQ==YWJj b\r\n").key(), b"a");
    assert_eq!(mreq(b"mg Y=Jj b\r\n").key(), b"`\x02");
    for bad in [&b"abc"[..], b"A===", b"====", b"!!!!", b"Zm9vY", b"Zm9v="] {
        let line = [&b"mg "[..], bad, b" b\r\n"].concat();
        assert_eq!(e(&line), DECODING_KEY, "{:?}", String::from_utf8_lossy(bad));
    }
    // The 250-byte limit is on the encoded key.
    let enc = |n: usize| {
        let mut v = Vec::new();
        base64_encode(&mut v, &vec![0xA5u8; n]);
        v
    };
    let k248 = enc(BINARY_KEY_MAX);
    assert_eq!(k248.len(), 248);
    let line = [&b"mg "[..], &k248, b" b\r\n"].concat();
    assert_eq!(mreq(&line).key(), &[0xA5u8; BINARY_KEY_MAX][..]);
    let k250 = [&k248[..], b"!!"].concat();
    assert_eq!(
        mreq(&[&b"mg "[..], &k250, b" b\r\n"].concat()).key().len(),
        BINARY_KEY_MAX
    );
    let k251 = [&k248[..], b"!!!"].concat();
    assert_eq!(e(&[&b"mg "[..], &k251, b" b\r\n"].concat()), BAD_FORMAT);
    // Round trips at every length.
    for n in 1..=BINARY_KEY_MAX {
        let src: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
        let mut encoded = Vec::new();
        base64_encode(&mut encoded, &src);
        assert_eq!(encoded.len(), n.div_ceil(3) * 4);
        let mut out = [0u8; BINARY_KEY_MAX];
        assert_eq!(base64_decode(&encoded, &mut out), Some(n));
        assert_eq!(&out[..n], &src[..]);
    }
    // me decodes only with a `b` right after the key.
    assert_eq!(mreq(b"me Zm9v b\r\n").key(), b"foo");
    assert_eq!(mreq(b"me Zm9v x b\r\n").key(), b"Zm9v");
    assert_eq!(mreq(b"me Zm9v b junk\r\n").key(), b"foo");
    assert_eq!(e(b"me abc b\r\n"), BAD_FORMAT);
}

#[test]
fn pipelined_meta_and_text() {
    let stream: &[u8] =
        b"mg a v\r\nget b\r\nms c 2 T5\r\nhi\r\nmn\r\nset d 0 0 1\r\nx\r\nmd e q\r\nma f MD\nme g\r\nmg h h h\r\nms i 1 Z\r\nQ\r\nversion\r\n";
    let mut rest = stream;
    let mut seen = Vec::new();
    while !rest.is_empty() {
        let (what, consumed, swallow) = match p(rest) {
            Parsed::Request {
                request: Request::Meta(m),
                consumed,
            } => (
                format!("{:?} {}", m.command, String::from_utf8_lossy(m.key())),
                consumed,
                0,
            ),
            Parsed::Request { request, consumed } => (
                format!("{:?}", request)
                    .split(' ')
                    .next()
                    .unwrap()
                    .to_string(),
                consumed,
                0,
            ),
            Parsed::Error {
                error,
                consumed,
                swallow,
            } => (error.to_string(), consumed, swallow),
            other => panic!("{other:?}"),
        };
        seen.push(what);
        rest = &rest[consumed + swallow..];
    }
    assert_eq!(
        seen,
        [
            "Get a",
            "Get",
            "Set c",
            "Noop ",
            "Store",
            "Delete e",
            "Arith f",
            "Debug g",
            DUPLICATE_FLAG,
            INVALID_FLAG,
            "Version"
        ]
    );
}

#[test]
fn encoders() {
    let mut out = Vec::new();
    // `t` shows the TTL as of its position: before or after T.
    let item = MgItem {
        value: b"xyz",
        ttl: Some(300),
        ttl_after: Some(100),
        ..Default::default()
    };
    mg_hit(&mut out, &mreq(b"mg k t T100\r\n"), &item);
    mg_hit(&mut out, &mreq(b"mg k T100 t\r\n"), &item);
    mg_hit(
        &mut out,
        &mreq(b"mg k T0 t\r\n"),
        &MgItem {
            ttl_after: None,
            ..item
        },
    );
    // N only counts for a created item.
    mg_hit(
        &mut out,
        &mreq(b"mg k N30 t\r\n"),
        &MgItem {
            ttl: Some(5),
            ttl_after: Some(5),
            ..item
        },
    );
    mg_hit(
        &mut out,
        &mreq(b"mg k N30 t\r\n"),
        &MgItem {
            ttl: None,
            ttl_after: Some(30),
            created: true,
            won: true,
            ..item
        },
    );
    // A past TTL wraps as memcached's unsigned arithmetic does.
    mg_hit(
        &mut out,
        &mreq(b"mg k t\r\n"),
        &MgItem {
            ttl: Some(-2),
            ..item
        },
    );
    assert_eq!(
        out,
        b"HD t300\r\nHD t100\r\nHD t-1\r\nHD t5\r\nHD t30 W\r\nHD t4294967294\r\n"
    );
    out.clear();
    // Every return flag, Z X W last; key echo by the item's binary flag.
    let item = MgItem {
        value: b"hello",
        client_flags: 7,
        cas: 99,
        ttl: None,
        ttl_after: None,
        last_access: 12,
        fetched: true,
        key_binary: true,
        created: false,
        token_sent: true,
        stale: true,
        won: true,
    };
    mg_hit(
        &mut out,
        &mreq(b"mg foo k O9 v s t c f l h q u\r\n"),
        &MgItem {
            key_binary: false,
            ..item
        },
    );
    mg_hit(&mut out, &mreq(b"mg Zm9v b h l f c t s O9 k\r\n"), &item);
    assert_eq!(
        out,
        &b"VA 5 kfoo O9 s5 t-1 c99 f7 l12 h1 Z X W\r\nhello\r\nHD h1 l12 f7 c99 t-1 s5 O9 kZm9v b Z X W\r\n"[..]
    );
    out.clear();
    // Misses: EN with O and k; nothing under q; overlong opaque errors.
    mg_miss(&mut out, &mreq(b"mg Zm9v b v k O1 s\r\n"));
    mg_miss(&mut out, &mreq(b"mg k q k\r\n"));
    mg_miss(
        &mut out,
        &mreq(b"mg k q O123456789012345678901234567890123\r\n"),
    );
    mg_hit(
        &mut out,
        &mreq(b"mg k O123456789012345678901234567890123\r\n"),
        &item,
    );
    assert_eq!(out, &b"EN kZm9v b O1\r\nCLIENT_ERROR opaque token too long\r\nCLIENT_ERROR opaque token too long\r\n"[..]);
    out.clear();
    // ms / md: HD hidden by q, the rest not.
    let r = mreq(b"ms Zm9v 1 b c q O5 k\r\nx\r\n");
    ms(&mut out, &r, MetaStatus::Hd, 8, 2);
    ms(&mut out, &r, MetaStatus::Ns, 0, 2);
    ms(&mut out, &r, MetaStatus::Ex, 0, 2);
    ms(&mut out, &r, MetaStatus::Nf, 0, 2);
    let r = mreq(b"md k q k\r\n");
    md(&mut out, &r, MetaStatus::Hd);
    md(&mut out, &r, MetaStatus::Nf);
    md(&mut out, &r, MetaStatus::Ex);
    assert_eq!(
        out,
        &b"NS c0 O5 kZm9v b\r\nEX c0 O5 kZm9v b\r\nNF c0 O5 kZm9v b\r\nNF kk\r\nEX kk\r\n"[..]
    );
    out.clear();
    // ma: the value after the flags; q hides an update, not a creation.
    let it = MaItem {
        value: 18446744073709551615,
        cas: 3,
        ttl: Some(9),
        ttl_after: Some(9),
        created: false,
    };
    ma(&mut out, &mreq(b"ma k v c t k\r\n"), &MaOutcome::Item(it));
    ma(&mut out, &mreq(b"ma k q v\r\n"), &MaOutcome::Item(it));
    ma(
        &mut out,
        &mreq(b"ma k q\r\n"),
        &MaOutcome::Item(MaItem {
            value: 0,
            created: true,
            ..it
        }),
    );
    ma(&mut out, &mreq(b"ma k q O1 k\r\n"), &MaOutcome::NotFound);
    ma(&mut out, &mreq(b"ma k q\r\n"), &MaOutcome::Exists);
    ma(&mut out, &mreq(b"ma k q\r\n"), &MaOutcome::NotStored);
    ma(
        &mut out,
        &mreq(b"ma k q O123456789012345678901234567890123\r\n"),
        &MaOutcome::Item(it),
    );
    assert_eq!(
        out,
        &b"VA 20 c3 t9 kk\r\n18446744073709551615\r\nHD\r\nNF O1 kk\r\nEX\r\nNS\r\nCLIENT_ERROR opaque token too long\r\n"[..]
    );
    out.clear();
    mn(&mut out);
    let info = MeItem {
        ttl: Some(30),
        last_access: 4,
        cas: 5,
        fetched: false,
        class: 1,
        size: 64,
        key_binary: false,
    };
    me(&mut out, b"foo", &info);
    me(
        &mut out,
        b"foo",
        &MeItem {
            ttl: None,
            fetched: true,
            key_binary: true,
            ..info
        },
    );
    me_miss(&mut out);
    assert_eq!(
        out,
        &b"MN\r\nME foo exp=30 la=4 cas=5 fetch=no cls=1 size=64\r\nME Zm9v exp=-1 la=4 cas=5 fetch=yes cls=1 size=64\r\nEN\r\n"[..]
    );
}

/// Flags and replies later releases added: `x` everywhere (1.6.27), `ms s`
/// (1.6.20), `mg C` with `v` (1.6.40).
#[test]
fn newer_meta_flags() {
    for line in [&b"mg k v x\r\n"[..], b"md k x q\r\n", b"ma k x\r\n", b"md k I x E5\r\n"] {
        let r = mreq(line);
        assert!(r.flags.has(b'x'), "{}", String::from_utf8_lossy(line));
    }
    assert!(mreq(b"ms k 2 x\r\nab\r\n").flags.has(b'x'));
    let mut out = Vec::new();
    // s prints the size it is given, in request order with the others.
    ms(&mut out, &mreq(b"ms k 2 s c O9\r\nab\r\n"), MetaStatus::Hd, 7, 4);
    ms(&mut out, &mreq(b"ms k 2 s\r\nab\r\n"), MetaStatus::Ns, 0, 2);
    assert_eq!(out, &b"HD s4 c7 O9\r\nNS s2\r\n"[..]);
    out.clear();
    // mg C: a matching CAS withholds the value, a different one does not.
    let item = MgItem { value: b"va", cas: 42, ..Default::default() };
    mg_hit(&mut out, &mreq(b"mg k C42 v c\r\n"), &item);
    mg_hit(&mut out, &mreq(b"mg k C41 v c\r\n"), &item);
    mg_hit(&mut out, &mreq(b"mg k C42 s\r\n"), &item);
    assert_eq!(out, &b"HD c42\r\nVA 2 c42\r\nva\r\nHD s2\r\n"[..]);
}

#[test]
fn q_table() {
    use MetaCommand::*;
    use MetaStatus::*;
    let hidden: Vec<_> = [Get, Set, Delete, Arith, Noop, Debug]
        .iter()
        .flat_map(|&c| [Va, Hd, En, Nf, Ns, Ex].map(move |s| (c, s)))
        .filter(|&(c, s)| suppressed(c, s, false))
        .collect();
    assert_eq!(
        hidden,
        [(Get, En), (Set, Hd), (Delete, Hd), (Arith, Va), (Arith, Hd)]
    );
    assert!(!suppressed(Arith, Hd, true) && !suppressed(Arith, Va, true));
}

// ---------------------------------------------------------------------------
// Vectors recorded from memcached 1.6.18 (tests/meta-vectors/record.py).

mod vectors {
    /// An item's state as `me` reported it.
    pub struct Me {
        pub ttl: Option<i64>,
        pub la: u64,
        pub cas: u64,
        pub fetched: bool,
        pub size: u64,
    }

    pub enum Req {
        Plain(&'static [u8]),
        /// A command line, then a data block of `len` copies of a byte, then `\r\n`.
        Big(&'static [u8], u8, usize),
    }

    impl Req {
        pub fn bytes(&self) -> Vec<u8> {
            match *self {
                Req::Plain(b) => b.to_vec(),
                Req::Big(line, byte, len) => {
                    let mut v = line.to_vec();
                    v.resize(line.len() + len, byte);
                    v.extend_from_slice(b"\r\n");
                    v
                }
            }
        }
    }

    pub struct Vector {
        pub name: &'static str,
        pub request: Req,
        pub reply: &'static [u8],
        pub status: &'static str,
        pub before: Option<Me>,
        pub after: Option<Me>,
        pub value: Option<&'static [u8]>,
        pub client_flags: u32,
        pub z: bool,
        pub x: bool,
        pub w: bool,
        pub key_binary: bool,
    }
}

#[rustfmt::skip]
#[path = "meta_vectors.rs"]
mod recorded;

use vectors::Vector;

fn status_of(v: &Vector) -> MetaStatus {
    match v.status {
        "VA" => MetaStatus::Va,
        "HD" => MetaStatus::Hd,
        "EN" => MetaStatus::En,
        "NF" => MetaStatus::Nf,
        "NS" => MetaStatus::Ns,
        "EX" => MetaStatus::Ex,
        s => panic!("{}: no status {s:?}", v.name),
    }
}

/// Answer one parsed meta request the way the server would, from the state
/// memcached had.
fn answer(v: &Vector, m: &MetaRequest<'_>, out: &mut Vec<u8>) {
    let after = v.after.as_ref();
    let before = v.before.as_ref();
    let created = before.is_none() && after.is_some();
    match m.command {
        MetaCommand::Get if v.status == "EN" => mg_miss(out, m),
        MetaCommand::Get => {
            let (b, a) = (before.or(after).unwrap(), after.unwrap());
            let item = MgItem {
                value: v.value.unwrap(),
                client_flags: v.client_flags,
                cas: a.cas,
                ttl: if created { None } else { b.ttl },
                ttl_after: a.ttl,
                last_access: if created { 0 } else { b.la },
                fetched: !created && b.fetched,
                key_binary: v.key_binary,
                created,
                token_sent: v.z,
                stale: v.x,
                won: v.w,
            };
            mg_hit(out, m, &item)
        }
        MetaCommand::Set => {
            let st = status_of(v);
            let cas = if st == MetaStatus::Hd {
                after.unwrap().cas
            } else {
                0
            };
            // The vectors were taken from 1.6.18, which has no `s` on ms:
            // none of them sends it, so the size is never printed.
            ms(out, m, st, cas, m.data.len())
        }
        MetaCommand::Delete => md(out, m, status_of(v)),
        MetaCommand::Arith => {
            if v.status == "NONNUM" {
                out.extend_from_slice(NON_NUMERIC.as_bytes());
                out.extend_from_slice(b"\r\n");
                return;
            }
            let outcome = match status_of(v) {
                MetaStatus::Nf => MaOutcome::NotFound,
                MetaStatus::Ex => MaOutcome::Exists,
                MetaStatus::Ns => MaOutcome::NotStored,
                _ => {
                    let a = after.unwrap();
                    let value = std::str::from_utf8(v.value.unwrap()).unwrap();
                    MaOutcome::Item(MaItem {
                        value: value.trim().parse().unwrap(),
                        cas: a.cas,
                        ttl: if created { None } else { before.unwrap().ttl },
                        ttl_after: a.ttl,
                        created,
                    })
                }
            };
            ma(out, m, &outcome)
        }
        MetaCommand::Noop => mn(out),
        MetaCommand::Debug if v.status == "EN" => me_miss(out),
        MetaCommand::Debug => {
            let b = before.unwrap();
            let item = MeItem {
                ttl: b.ttl,
                last_access: b.la,
                cas: b.cas,
                fetched: b.fetched,
                class: 1,
                size: b.size,
                key_binary: v.key_binary,
            };
            me(out, m.key(), &item)
        }
    }
}

/// Run a vector's request bytes through the parser and the encoders.
fn replay(v: &Vector) -> Vec<u8> {
    let buf = v.request.bytes();
    let limits = Limits::default();
    let mut out = Vec::new();
    let mut rest = &buf[..];
    while !rest.is_empty() {
        let (consumed, swallow) = match parse(rest, &limits) {
            Parsed::Request {
                request: Request::Meta(m),
                consumed,
            } => {
                answer(v, &m, &mut out);
                (consumed, 0)
            }
            Parsed::Error {
                error,
                consumed,
                swallow,
            } => {
                out.extend_from_slice(error.as_bytes());
                out.extend_from_slice(b"\r\n");
                (consumed, swallow)
            }
            Parsed::TooLarge {
                noreply,
                consumed,
                swallow,
                ..
            } => {
                if !noreply {
                    out.extend_from_slice(b"SERVER_ERROR object too large for cache\r\n");
                }
                (consumed, swallow)
            }
            other => panic!("{}: unexpected {:?}", v.name, other),
        };
        assert!(
            swallow <= rest.len() - consumed,
            "{}: swallow past the input",
            v.name
        );
        rest = &rest[consumed + swallow..];
    }
    out
}

#[test]
fn recorded_vectors() {
    let mut failures = Vec::new();
    for v in recorded::VECTORS {
        if newer_reply(&v.request.bytes()) {
            continue; // a later release changed this reply; larder follows it (see meta.rs)
        }
        let got = match std::panic::catch_unwind(|| replay(v)) {
            Ok(got) => got,
            Err(_) => {
                failures.push(format!("{}: panicked", v.name));
                continue;
            }
        };
        if got != v.reply && !short_lines_refused(v.reply, &got) && !md_errors_named(&v.request.bytes(), v.reply, &got) {
            failures.push(format!(
                "{}:\n  memcached: {:?}\n  larder:    {:?}",
                v.name,
                String::from_utf8_lossy(v.reply),
                String::from_utf8_lossy(&got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors differ:\n{}",
        failures.len(),
        recorded::VECTORS.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Randomized meta lines through the shared invariants.

/// Pieces of meta lines: every flag with good and bad tokens.
const FLAG_TOKENS: &[&[u8]] = &[
    b"b",
    b"k",
    b"v",
    b"q",
    b"s",
    b"t",
    b"c",
    b"f",
    b"l",
    b"h",
    b"u",
    b"O",
    b"O1",
    b"Oabcdefghijklmnopqrstuvwxyz0123456",
    b"P",
    b"L",
    b"I",
    b"T0",
    b"T-1",
    b"T30",
    b"Tx",
    b"T",
    b"N30",
    b"N",
    b"R5",
    b"R1.5",
    b"F0",
    b"F4294967296",
    b"Fx",
    b"C1",
    b"C-1",
    b"C18446744073709551616",
    b"MS",
    b"ME",
    b"MA",
    b"MP",
    b"MR",
    b"MI",
    b"MD",
    b"M+",
    b"M-",
    b"Mx",
    b"MSS",
    b"J1",
    b"Jx",
    b"D1",
    b"D",
    b"E1",
    b"S5",
    b"x",
    b"5",
    b"\xff",
    b"vv",
];
/// One valid token per flag letter.
const VALID_FLAGS: &[&[u8]] = &[
    b"b", b"k", b"v", b"q", b"s", b"t", b"c", b"f", b"l", b"h", b"u", b"O7", b"P", b"L", b"I",
    b"T30", b"N30", b"R5", b"F9", b"C1", b"MD", b"J1", b"D2",
];
const KEYS: &[&[u8]] = &[
    b"k", b"Zm9v", b"YQ==", b"Y!Q=", b"abc", b"A===", b"====", b"a b", b"k\t",
];

#[test]
fn random_meta_lines_keep_the_invariants() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: usize| {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        (seed.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    };
    let limits = [
        Limits::default(),
        Limits {
            item_size_max: 100,
            max_line: 60,
            max_get_line: 80,
        },
    ];
    let (mut results, mut metas, mut with_flags) = (0, 0, 0);
    for round in 0..20_000 {
        let mut input = Vec::new();
        for _ in 0..=next(3) {
            let cmd = [
                &b"mg"[..],
                b"ms",
                b"md",
                b"ma",
                b"mn",
                b"me",
                b"get",
                b"set",
            ][next(8)];
            input.extend_from_slice(cmd);
            if next(10) != 0 {
                input.push(b' ');
                if next(20) == 0 {
                    input.extend(std::iter::repeat_n(b'Q', 245 + next(10)));
                } else {
                    input.extend_from_slice(KEYS[next(KEYS.len())]);
                }
            }
            let set = cmd == b"ms" || cmd == b"set";
            let len = [0usize, 1, 3, 5, 40, 200][next(6)];
            if set {
                if cmd == b"set" {
                    input.extend_from_slice(b" 0 0");
                }
                input.push(b' ');
                input.extend_from_slice(len.to_string().as_bytes());
            }
            if next(2) == 0 {
                // Mostly valid: distinct letters in a random order.
                let mut picked: Vec<&[u8]> = VALID_FLAGS
                    .iter()
                    .copied()
                    .filter(|_| next(3) == 0)
                    .collect();
                for i in (1..picked.len()).rev() {
                    picked.swap(i, next(i + 1));
                }
                for tok in picked {
                    input.push(b' ');
                    input.extend_from_slice(tok);
                }
            } else {
                for _ in 0..next(22) {
                    input.push(b' ');
                    input.extend_from_slice(FLAG_TOKENS[next(FLAG_TOKENS.len())]);
                }
            }
            input.extend_from_slice(if next(8) == 0 { b"\n" } else { b"\r\n" });
            if set {
                input.extend(std::iter::repeat_n(b'd', len));
                input.extend_from_slice([&b"\r\n"[..], b"\n", b"xx", b""][next(4)]);
            }
        }
        // A few byte-level mutations.
        for _ in 0..next(3) {
            if input.is_empty() {
                break;
            }
            let pos = next(input.len());
            match next(3) {
                0 => input[pos] = b" \r\n\0bkO=T-"[next(10)],
                1 => input.truncate(pos),
                _ => {
                    input.remove(pos);
                }
            }
        }
        if let Parsed::Request {
            request: Request::Meta(m),
            ..
        } = parse(&input, &limits[0])
        {
            metas += 1;
            with_flags += usize::from(m.flags.order().len() > 2);
        }
        results += crate::invariants::check_stream(&input, &limits[round % 2]);
    }
    assert!(results > 20_000, "only {results} results");
    assert!(
        metas > 3_000 && with_flags > 500,
        "{metas} meta requests, {with_flags} with flags"
    );
}

#[test]
fn request_size_stays_bounded() {
    // A base64 key lives inline; keep an eye on what that costs every parse.
    let sizes = (
        std::mem::size_of::<MetaRequest<'_>>(),
        std::mem::size_of::<Request<'_>>(),
        std::mem::size_of::<Parsed<'_>>(),
    );
    println!("MetaRequest, Request, Parsed: {sizes:?}");
    assert!(sizes.2 <= 352, "{sizes:?}");
}

#[rustfmt::skip]
#[path = "meta_parse_vectors.rs"]
mod recorded_parse;

/// The error lines larder sends for a stream: parse errors, too-large, an
/// overlong opaque, and nothing else for requests (whose replies depend on
/// the store).
fn error_lines(stream: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        let (consumed, swallow) = match p(rest) {
            Parsed::Request {
                request: Request::Meta(m),
                consumed,
            } => {
                // The encoders of mg and ma answer an overlong opaque with
                // an error whatever the outcome.
                if matches!(m.command, MetaCommand::Get | MetaCommand::Arith) {
                    let mut reply = Vec::new();
                    mg_miss(&mut reply, &m);
                    if reply.starts_with(b"CLIENT_ERROR") {
                        out.extend_from_slice(&reply);
                    }
                }
                (consumed, 0)
            }
            Parsed::Request { consumed, .. } => (consumed, 0),
            Parsed::Error {
                error,
                consumed,
                swallow,
            } => {
                out.extend_from_slice(error.as_bytes());
                out.extend_from_slice(b"\r\n");
                (consumed, swallow)
            }
            Parsed::TooLarge {
                consumed, swallow, ..
            } => {
                out.extend_from_slice(b"SERVER_ERROR object too large for cache\r\n");
                (consumed, swallow)
            }
            Parsed::Silent { consumed, swallow } => (consumed, swallow),
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(stream)),
        };
        rest = &rest[(consumed + swallow).min(rest.len())..];
    }
    out
}

#[test]
fn recorded_random_requests_error_alike() {
    let mut failures = Vec::new();
    let mut strict_differs = 0;
    for &(input, errors) in recorded_parse::PARSE_VECTORS {
        if uses_newer_flag(input) {
            continue; // 1.6.18 refuses `E` and `x`; larder accepts them (see meta.rs)
        }
        if newer_flag_byte(input) {
            continue; // 1.6.40 refuses the whole line (see newer_flag_byte)
        }
        let got = error_lines(input);
        if short_lines_refused(errors, &got) {
            continue; // 1.6.40 answers a line shorter than 4 bytes otherwise (see short_lines_refused)
        }
        if md_errors_named(input, errors, &got) {
            continue; // 1.6.40's md names its flag error (see md_errors_named)
        }
        if got != errors && reads_numbers_differently(input) {
            strict_differs += 1;
            continue; // 1.6.45 reads this flag's number strictly (crate::number)
        }
        if got != errors {
            failures.push(format!(
                "{:?}\n  memcached: {:?}\n  larder:    {:?}",
                String::from_utf8_lossy(input),
                String::from_utf8_lossy(errors),
                String::from_utf8_lossy(&got)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        recorded_parse::PARSE_VECTORS.len(),
        failures.join("\n")
    );
    // The strict readers change few answers: a vector differing only there
    // is the exception, not the rule.
    assert!(strict_differs * 20 < recorded_parse::PARSE_VECTORS.len(), "{strict_differs} differ by strict numbers");
}

/// Whether a meta request line has a numeric token (a flag's argument, or
/// `ms`'s length) that memcached 1.6.18's `strto*` and 1.6.45's strict
/// readers ([`crate::number`]) read differently (`T+5`, `F4294967296`):
/// there larder answers as 1.6.45.
fn reads_numbers_differently(request: &[u8]) -> bool {
    use crate::number::{safe_i32, safe_u32, safe_u64, strict_i32, strict_u32, strict_u64};
    let line = request.split(|&b| b == b'\n').next().unwrap_or(b"");
    let words: Vec<&[u8]> = line.split(|&b| b == b' ' || b == b'\r').filter(|w| !w.is_empty()).collect();
    let Some((&cmd, rest)) = words.split_first() else { return false };
    if !matches!(cmd, b"mg" | b"ms" | b"md" | b"ma" | b"mn" | b"me") {
        return false;
    }
    let mut flags = rest.iter().skip(1);
    if cmd == b"ms" {
        if let Some(len) = flags.next() {
            if safe_i32(len) != strict_i32(len) {
                return true;
            }
        }
    }
    flags.any(|w| {
        let (arg, nonempty) = (&w[1..], w.len() > 1);
        match w[0] {
            b'N' | b'T' | b'R' => safe_i32(arg) != strict_i32(arg).filter(|_| nonempty),
            b'F' => safe_u32(arg) != strict_u32(arg).filter(|_| nonempty),
            b'C' | b'E' | b'J' | b'D' => safe_u64(arg) != strict_u64(arg).filter(|_| nonempty),
            _ => false,
        }
    })
}

/// Whether a meta request line carries an `E` flag token: the one flag where
/// larder follows memcached releases newer than the 1.6.18 these vectors were
/// recorded from.
/// A meta request with a flag 1.6.18 refuses and 1.6.27 added (`E`, `x`).
fn uses_newer_flag(request: &[u8]) -> bool {
    let line = request.split(|&b| b == b'\n').next().unwrap_or(b"");
    let mut words = line.split(|&b| b == b' ' || b == b'\r').filter(|w| !w.is_empty());
    matches!(words.next(), Some(b"mg" | b"ms" | b"md" | b"ma")) && words.skip(1).any(|w| matches!(w[0], b'E' | b'x'))
}

/// memcached 1.6.18 recorded `ERROR` for the leftovers of these streams
/// (a bare `\r\n` after a refused data block, a `\n` alone), lines
/// shorter than 4 bytes, which 1.6.40 and later answer `CLIENT_ERROR bad
/// command line format` (docs/differences.md; the text parser's tests
/// check that rule against 1.6.45's replies): `got` is the recording with
/// some of its bare `ERROR` lines read that way, and nothing else changed.
fn short_lines_refused(recorded: &[u8], got: &[u8]) -> bool {
    newer_lines(recorded, got, |r, n| r == b"ERROR\r\n" && n == b"CLIENT_ERROR bad command line format\r\n")
}

/// `md`'s flag errors: memcached 1.6.40 names the error (`invalid flag`,
/// `duplicate flag`, `bad token ...`, `error decoding key`), as `mg` does,
/// where 1.6.18 recorded `invalid or duplicate flag` for each
/// (`md_flag_errors_name_the_error` checks them against 1.6.45's replies):
/// `got` is the recording with some of those lines read that way.
fn md_errors_named(request: &[u8], recorded: &[u8], got: &[u8]) -> bool {
    let md = request.split(|&b| b == b'\n').any(|l| l.starts_with(b"md "));
    md && newer_lines(recorded, got, |r, n| {
        r == b"CLIENT_ERROR invalid or duplicate flag\r\n"
            && [INVALID_FLAG, DUPLICATE_FLAG, BAD_TOKEN, DECODING_KEY, INVALID_INITIAL, INVALID_DELTA, BAD_FORMAT]
                .iter()
                .any(|e| n.strip_suffix(b"\r\n") == Some(e.as_bytes()))
    })
}

/// `got` is `recorded` with some of its lines changed as `newer` allows
/// (recorded line, larder's line), and nothing else.
fn newer_lines(recorded: &[u8], got: &[u8], newer: impl Fn(&[u8], &[u8]) -> bool) -> bool {
    let rec: Vec<&[u8]> = recorded.split_inclusive(|&b| b == b'\n').collect();
    let new: Vec<&[u8]> = got.split_inclusive(|&b| b == b'\n').collect();
    rec.len() == new.len() && rec != new && rec.iter().zip(&new).all(|(r, n)| r == n || newer(r, n))
}

/// `md`'s flag errors as memcached 1.6.45 answered each (measured; 1.6.18
/// and 1.6.38 answer all but the opaque one `invalid or duplicate flag`).
#[test]
fn md_flag_errors_name_the_error() {
    let cases: &[(&[u8], &str)] = &[
        (b"md k q q\r\n", DUPLICATE_FLAG),
        (b"md k Z\r\n", INVALID_FLAG),
        (b"md k T1 T2\r\n", DUPLICATE_FLAG),
        (b"md k C1 C2\r\n", DUPLICATE_FLAG),
        (b"md !!!! b\r\n", DECODING_KEY),
        (b"md k Tx\r\n", BAD_TOKEN),
        (b"md k T\r\n", BAD_TOKEN),
        (b"md k q I T30 I\r\n", DUPLICATE_FLAG),
        (b"md k O1 O2\r\n", DUPLICATE_FLAG),
        (b"md k Ozzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\r\n", OPAQUE_TOO_LONG),
        (b"md k x x\r\n", DUPLICATE_FLAG),
        (b"md k k k\r\n", DUPLICATE_FLAG),
        (b"md k C-1\r\n", BAD_TOKEN),
        (b"md k E5 E6\r\n", DUPLICATE_FLAG),
        (b"md k b\r\n", DECODING_KEY),
        (b"md k!! b q\r\n", DECODING_KEY),
        (b"md k v v\r\n", DUPLICATE_FLAG),
        (b"md abc b\r\n", DECODING_KEY),
        (b"md k Jx\r\n", INVALID_INITIAL),
        (b"md k Dx\r\n", INVALID_DELTA),
        (b"md a2V5MjU1 C-1 J T30\r\n", INVALID_INITIAL),
        (b"md k794 T-1 MI D\r\n", INVALID_DELTA),
        (b"md a2V5MzEx Fx M+\r\n", BAD_FORMAT),
        // ma keeps the one string (1.6.45 too).
        (b"ma k Z\r\n", INVALID_OR_DUPLICATE),
        (b"ma k q q\r\n", INVALID_OR_DUPLICATE),
    ];
    for &(line, want) in cases {
        assert_eq!(error_lines(line), format!("{want}\r\n").into_bytes(), "{}", String::from_utf8_lossy(line));
    }
}

/// A meta line with a flag token (among the first 23 tokens) starting
/// with neither a letter nor a digit: 1.6.40's tokeniser refuses the whole
/// line as a bad format where 1.6.18 answered the flag's own error
/// (`bad_flag_byte` checks the rule against 1.6.45's replies).
fn newer_flag_byte(request: &[u8]) -> bool {
    let line = request.split(|&b| b == b'\n').next().unwrap_or(b"");
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut words = line.split(|&b| b == b' ').filter(|w| !w.is_empty()).take(23);
    let skip = match words.next() {
        Some(b"ms") => 2,
        Some(b"mg" | b"md" | b"ma" | b"me") => 1,
        _ => return false,
    };
    words.skip(skip).any(|w| !(65..123).contains(&w[0]) && !w[0].is_ascii_digit())
}

/// A request whose 1.6.18 reply a later release changed: [`uses_newer_flag`],
/// [`newer_flag_byte`], `ms` with `s` (1.6.20 prints the size), `mg` with
/// `C` (1.6.40 may withhold the value), every `me` (1.6.24 prints `exp=`
/// unnegated).
fn newer_reply(request: &[u8]) -> bool {
    let line = request.split(|&b| b == b'\n').next().unwrap_or(b"");
    let mut words = line.split(|&b| b == b' ' || b == b'\r').filter(|w| !w.is_empty());
    let cmd = words.next();
    let flags = || line.split(|&b| b == b' ' || b == b'\r').filter(|w| !w.is_empty()).skip(2);
    uses_newer_flag(request)
        || newer_flag_byte(request)
        || cmd == Some(b"me")
        || (cmd == Some(b"ms") && flags().skip(1).any(|w| w == b"s"))
        || (cmd == Some(b"mg") && flags().any(|w| w[0] == b'C'))
}

#[test]
fn e_flag_sets_the_new_cas() {
    let r = mreq(b"ms k 1 E12345 c\r\nx\r\n");
    assert_eq!(r.flags.new_cas, Some(12345));
    assert_eq!(e(b"mg k Ex\r\n"), BAD_TOKEN);
    assert_eq!(e(b"mg k E1 E2\r\n"), DUPLICATE_FLAG);
}
