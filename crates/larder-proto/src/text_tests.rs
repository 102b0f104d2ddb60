//! Unit tests for the text parser. Expected replies were checked against
//! memcached 1.6.18, and those of the request-line rules memcached 1.6.40
//! changed against the 1.6.45 binary (see the module docs of `text.rs` and
//! docs/notes-arity-1645.md).

use super::*;
use larder_testkit::XorShift64Star;
use crate::number::safe_u64;

fn p(buf: &[u8]) -> Parsed<'_> {
    parse(buf, &Limits::default())
}

/// The request parsed from `buf`, asserting it used all of `buf`.
fn req(buf: &[u8]) -> Request<'_> {
    match p(buf) {
        Parsed::Request { request, consumed } => {
            assert_eq!(
                consumed,
                buf.len(),
                "consumed for {:?}",
                String::from_utf8_lossy(buf)
            );
            request
        }
        other => panic!("{:?} -> {:?}", String::from_utf8_lossy(buf), other),
    }
}

/// The error line parsed from `buf`, asserting it used all of `buf`, no swallow.
fn err(buf: &[u8]) -> &'static str {
    match p(buf) {
        Parsed::Error {
            error,
            consumed,
            swallow,
        } => {
            assert_eq!(
                (consumed, swallow),
                (buf.len(), 0),
                "for {:?}",
                String::from_utf8_lossy(buf)
            );
            error
        }
        other => panic!("{:?} -> {:?}", String::from_utf8_lossy(buf), other),
    }
}

fn silent(buf: &[u8]) {
    assert_eq!(
        p(buf),
        Parsed::Silent {
            consumed: buf.len(),
            swallow: 0
        },
        "{:?}",
        String::from_utf8_lossy(buf)
    );
}

/// The error of a storage line refused after its length was read: the
/// data block (`swallow` bytes) is swallowed (memcached 1.6.40).
fn err_swallow(buf: &[u8], swallow: usize) -> &'static str {
    match p(buf) {
        Parsed::Error { error, consumed, swallow: s } if (consumed, s) == (buf.len(), swallow) => error,
        other => panic!("{:?} -> {:?}", String::from_utf8_lossy(buf), other),
    }
}

fn silent_swallow(buf: &[u8], swallow: usize) {
    assert_eq!(p(buf), Parsed::Silent { consumed: buf.len(), swallow }, "{:?}", String::from_utf8_lossy(buf));
}

fn keys<'a>(r: &Request<'a>) -> Vec<&'a [u8]> {
    match r {
        Request::Get { keys, .. } | Request::Gat { keys, .. } => keys.collect(),
        other => panic!("not a get: {other:?}"),
    }
}

#[test]
fn get_and_gets() {
    let r = req(b"get a bb ccc\r\n");
    assert!(matches!(r, Request::Get { cas: false, .. }));
    assert_eq!(keys(&r), [&b"a"[..], b"bb", b"ccc"]);
    let r = req(b"gets  a   b \r\n");
    assert!(matches!(r, Request::Get { cas: true, .. }));
    assert_eq!(keys(&r), [&b"a"[..], b"b"]);
    // 1.6.40 dropped `bget`; a get without a key is a bad format (1.6.18
    // and 1.6.38: ERROR).
    assert_eq!(err(b"bget a\r\n"), ERROR);
    assert_eq!(err(b"get\r\n"), BAD_FORMAT);
    assert_eq!(err(b"get   \r\n"), BAD_FORMAT);
    assert_eq!(err(b"gets\r\n"), BAD_FORMAT);
    // A final `noreply` is a key.
    assert_eq!(keys(&req(b"get k noreply\r\n")), [&b"k"[..], b"noreply"]);
    assert_eq!(err(b"gex a\r\n"), ERROR);
}

#[test]
fn get_key_length_limit_applies_to_every_key() {
    let long = [b'x'; 251];
    let ok = [b'x'; 250];
    let mut line = b"get a ".to_vec();
    line.extend_from_slice(&ok);
    line.extend_from_slice(b"\r\n");
    assert_eq!(keys(&req(&line)).len(), 2);
    let mut line = b"get a ".to_vec();
    line.extend_from_slice(&long);
    line.extend_from_slice(b" b\r\n");
    assert_eq!(err(&line), BAD_FORMAT);
    let mut line = b"gat 1 a ".to_vec();
    line.extend_from_slice(&long);
    line.extend_from_slice(b"\r\n");
    assert_eq!(err(&line), BAD_FORMAT);
}

#[test]
fn multiget_beyond_max_tokens_keeps_every_key() {
    let mut line = b"get".to_vec();
    for i in 0..100 {
        line.extend_from_slice(format!(" k{i}").as_bytes());
    }
    line.extend_from_slice(b"\r\n");
    let r = req(&line);
    let ks = keys(&r);
    assert_eq!(ks.len(), 100);
    assert_eq!(ks[99], b"k99");
    // A too-long key far past token 24 is still caught.
    let mut bad = line[..line.len() - 2].to_vec();
    bad.push(b' ');
    bad.extend_from_slice(&[b'z'; 251]);
    bad.extend_from_slice(b"\r\n");
    assert_eq!(err(&bad), BAD_FORMAT);
}

#[test]
fn gat_and_gats() {
    let r = req(b"gat 100 a b\r\n");
    assert!(matches!(
        r,
        Request::Gat {
            exptime: 100,
            cas: false,
            ..
        }
    ));
    assert_eq!(keys(&r), [&b"a"[..], b"b"]);
    let r = req(b"gats -1 a\r\n");
    assert!(matches!(
        r,
        Request::Gat {
            exptime: -1,
            cas: true,
            ..
        }
    ));
    // No keys: a bad format before the exptime is read (1.6.18 and 1.6.38
    // answered END, or the exptime's error).
    assert_eq!(err(b"gat 10\r\n"), BAD_FORMAT);
    assert_eq!(err(b"gat x a\r\n"), INVALID_EXPTIME);
    assert_eq!(err(b"gat x\r\n"), BAD_FORMAT);
    assert_eq!(err(b"gat\r\n"), BAD_FORMAT);
    // memcached 1.6.40+ reads gat's exptime strictly: at most 11
    // characters, digits only, out of an int32_t's range refused (1.6.18
    // and 1.6.38 took 300 zeros and a 1, `+5`, and truncated 4294967297 to 1).
    let long_zero = [&b"gat "[..], &[b'0'; 300], b"1 k\r\n"].concat();
    assert_eq!(err(&long_zero), INVALID_EXPTIME);
    assert_eq!(err(b"gat 4294967297 a\r\n"), INVALID_EXPTIME);
    assert_eq!(err(b"gat +5 a\r\n"), INVALID_EXPTIME);
    assert_eq!(err(b"gat 2147483648 a\r\n"), INVALID_EXPTIME);
    assert!(matches!(req(b"gat -2147483648 a\r\n"), Request::Gat { exptime: -2147483648, .. }));
    assert!(matches!(req(b"gat 00000000005 a\r\n"), Request::Gat { exptime: 5, .. }));
}

/// memcached 1.6.45 reads touch's exptime and incr/decr's delta strictly,
/// as 1.6.40 already read cas's unique, flush_all's delay, verbosity and
/// cache_memlimit (protocol.txt keeps the grammar; the readers changed).
#[test]
fn numbers_of_the_text_commands_are_read_strictly() {
    for bad in [&b"touch k +5\r\n"[..], b"touch k 4294967297\r\n", b"touch k 5x\r\n", b"touch k 000000000005\r\n"] {
        assert_eq!(err(bad), INVALID_EXPTIME, "{}", String::from_utf8_lossy(bad));
    }
    assert!(matches!(req(b"touch k -1\r\n"), Request::Touch { exptime: -1, .. }));
    for bad in [&b"incr k +1\r\n"[..], b"decr k -0\r\n", b"incr k 18446744073709551616\r\n", b"incr k 00000000000000000000001\r\n"] {
        assert_eq!(err(bad), INVALID_DELTA, "{}", String::from_utf8_lossy(bad));
    }
    assert!(matches!(req(b"incr k 18446744073709551615\r\n"), Request::Arith { delta: u64::MAX, .. }));
    assert_eq!(err_swallow(b"cas k 0 0 1 +5\r\n", 3), BAD_FORMAT);
    assert_eq!(err_swallow(b"cas k 0 0 1 -0\r\n", 3), BAD_FORMAT);
    assert_eq!(err(b"flush_all +5\r\n"), INVALID_EXPTIME);
    assert_eq!(err(b"verbosity +1\r\n"), BAD_FORMAT);
    assert_eq!(err(b"cache_memlimit +64\r\n"), ERROR);
    // A storage line's flags and exptime keep strtol's reading (1.6.45 too).
    assert!(matches!(req(b"set k +5 +6 1\r\nx\r\n"), Request::Store { flags: 5, exptime: 6, .. }));
}

fn store_req(buf: &[u8]) -> (StoreCommand, Vec<u8>, u32, i64, Vec<u8>, bool) {
    match req(buf) {
        Request::Store {
            command,
            key,
            flags,
            exptime,
            data,
            noreply,
        } => (
            command,
            key.to_vec(),
            flags,
            exptime,
            data.to_vec(),
            noreply,
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn storage_commands() {
    assert_eq!(
        store_req(b"set k 5 10 3\r\nabc\r\n"),
        (
            StoreCommand::Set,
            b"k".to_vec(),
            5,
            10,
            b"abc".to_vec(),
            false
        )
    );
    assert_eq!(store_req(b"add k 0 0 0\r\n\r\n").0, StoreCommand::Add);
    assert_eq!(
        store_req(b"replace k 0 0 1 noreply\r\nx\r\n").0,
        StoreCommand::Replace
    );
    assert!(store_req(b"replace k 0 0 1 noreply\r\nx\r\n").5);
    assert_eq!(
        store_req(b"append k 0 0 1\r\nx\r\n").0,
        StoreCommand::Append
    );
    assert_eq!(
        store_req(b"prepend k 0 0 1\r\nx\r\n").0,
        StoreCommand::Prepend
    );
    assert_eq!(
        store_req(b"cas k 0 0 1 77\r\nx\r\n").0,
        StoreCommand::Cas(77)
    );
    assert_eq!(
        store_req(b"cas k 0 0 1 18446744073709551615 noreply\r\nx\r\n").0,
        StoreCommand::Cas(u64::MAX)
    );
    // Data may hold anything, including \r\n.
    assert_eq!(store_req(b"set k 0 0 4\r\na\r\nb\r\n").4, b"a\r\nb");
    // Misspelled noreply is just an ignored token; the reply is sent.
    assert!(!store_req(b"set k 0 0 1 norepl\r\na\r\n").5);
    // Negative exptime is fine.
    assert_eq!(store_req(b"set k 0 -5 1\r\na\r\n").3, -5);
}

#[test]
fn storage_arity_errors_are_never_silent() {
    // memcached 1.6.40: fewer than five tokens, or a length it cannot read,
    // is a bad format before `noreply` is looked at, and nothing is
    // swallowed (1.6.18 and 1.6.38: ERROR for a wrong token count).
    for line in [&b"set k 0 0\r\n"[..], b"add\r\n", b"set\r\n", b"set k 0 0 noreply\r\n", b"set k 0 0 -1 noreply\r\n"] {
        assert_eq!(err(line), BAD_FORMAT, "{:?}", String::from_utf8_lossy(line));
    }
    // Extra tokens are ignored; only the last one can be `noreply`.
    assert!(matches!(store_req(b"set k 0 0 1 noreply x\r\nx\r\n"), (StoreCommand::Set, _, _, _, _, false)));
    assert!(matches!(store_req(b"set k 0 0 1 x noreply\r\nx\r\n"), (StoreCommand::Set, _, _, _, _, true)));
    assert!(matches!(store_req(b"cas k 0 0 1 2 noreply x\r\nx\r\n"), (StoreCommand::Cas(2), _, _, _, _, false)));
    // A cas without its unique: the block is swallowed (t/cas.t of 1.6.45).
    assert_eq!(err_swallow(b"cas k 0 0 1\r\n", 3), BAD_FORMAT);
    assert_eq!(err_swallow(b"cas foo 0 0 6 \r\n", 8), BAD_FORMAT);
    silent_swallow(b"cas foo 0 0 6 noreply\r\n", 8);
}

#[test]
fn storage_number_parsing_matches_c() {
    // flags are strtoul truncated to 32 bits.
    assert_eq!(store_req(b"set k 4294967297 0 1\r\nx\r\n").2, 1);
    assert_eq!(store_req(b"set k -18446744073709551615 0 1\r\nx\r\n").2, 1);
    assert_eq!(store_req(b"set k +7 0 1\r\nx\r\n").2, 7);
    assert_eq!(store_req(b"set k -0 0 1\r\nx\r\n").2, 0);
    assert_eq!(err_swallow(b"set k -1 0 1\r\n", 3), BAD_FORMAT);
    assert_eq!(err_swallow(b"set k 18446744073709551616 0 1\r\n", 3), BAD_FORMAT);
    assert_eq!(err_swallow(b"set k 1x 0 1\r\n", 3), BAD_FORMAT);
    assert_eq!(err_swallow(b"set k x 0 1\r\n", 3), BAD_FORMAT);
    assert_eq!(err_swallow(b"set k 0 x 1\r\n", 3), BAD_FORMAT);
    // Digits followed by whitespace (not a separator) then anything: accepted.
    assert_eq!(store_req(b"set k 3\tjunk 0 1\r\nx\r\n").2, 3);
    assert_eq!(store_req(b"set k 0 0 1\t\r\nx\r\n").4, b"x");
    assert_eq!(store_req(b"set k 0 0 1\r\r\nx\r\n").4, b"x");
    // bytes is an int32_t: 4294967297 reads as 1.
    assert_eq!(store_req(b"set k 0 0 4294967297\r\nx\r\n").4, b"x");
    // exptime too.
    assert_eq!(store_req(b"set k 0 4294967295 1\r\nx\r\n").3, -1);
    assert_eq!(err(b"set k 0 0 -1\r\n"), BAD_FORMAT);
    assert_eq!(err(b"set k 0 0 4294967295\r\n"), BAD_FORMAT);
    assert_eq!(err(b"set k 0 0 2147483647\r\n"), BAD_FORMAT);
    assert!(matches!(
        p(b"set k 0 0 2147483645\r\n"),
        Parsed::TooLarge {
            swallow: 2147483647,
            ..
        }
    ));
}

#[test]
fn storage_bad_args_with_noreply_are_silent() {
    // ... and their data blocks are swallowed (memcached 1.6.40).
    silent_swallow(b"set k x 0 1 noreply\r\n", 3);
    silent_swallow(b"cas k 0 0 1 x noreply\r\n", 3);
    let mut line = b"set ".to_vec();
    line.extend_from_slice(&[b'k'; 251]);
    line.extend_from_slice(b" 0 0 1 noreply\r\n");
    silent_swallow(&line, 3);
    assert_eq!(
        err_swallow(&line[..line.len() - 10]
            .iter()
            .chain(b"\r\n")
            .copied()
            .collect::<Vec<_>>(), 3),
        BAD_FORMAT
    );
}

#[test]
fn storage_key_length() {
    let mut line = b"set ".to_vec();
    line.extend_from_slice(&[b'k'; 250]);
    line.extend_from_slice(b" 0 0 1\r\nx\r\n");
    assert_eq!(store_req(&line).1.len(), 250);
    let mut line = b"set ".to_vec();
    line.extend_from_slice(&[b'k'; 251]);
    line.extend_from_slice(b" 0 0 1\r\n");
    assert_eq!(err_swallow(&line, 3), BAD_FORMAT);
}

#[test]
fn bad_data_chunk_consumes_the_whole_block() {
    // memcached reads bytes+2 = 5 bytes "abcde", then "\r\n" is a line too
    // short to hold a command (1.6.18 and 1.6.38: ERROR).
    let buf = b"set k 0 0 3\r\nabcde\r\n";
    assert_eq!(
        p(buf),
        Parsed::Error {
            error: BAD_DATA_CHUNK,
            consumed: 18,
            swallow: 0
        }
    );
    assert_eq!(err(&buf[18..]), BAD_FORMAT);
    // Block of the right length but wrong terminator.
    let buf = b"set k 0 0 3\r\nabc\nd\r\n";
    assert_eq!(
        p(buf),
        Parsed::Error {
            error: BAD_DATA_CHUNK,
            consumed: 18,
            swallow: 0
        }
    );
    // With noreply the error is silent.
    assert_eq!(
        p(b"set k 0 0 1 noreply\r\nabc\r\n"),
        Parsed::Silent {
            consumed: 24,
            swallow: 0
        }
    );
}

#[test]
fn data_block_incomplete_reports_total_needed() {
    assert_eq!(
        p(b"set k 0 0 5\r\n"),
        Parsed::Incomplete { needed: Some(20) }
    );
    assert_eq!(
        p(b"set k 0 0 5\r\nhel"),
        Parsed::Incomplete { needed: Some(20) }
    );
    assert_eq!(
        p(b"set k 0 0 5\r\nhello\r"),
        Parsed::Incomplete { needed: Some(20) }
    );
    assert!(matches!(
        p(b"set k 0 0 5\r\nhello\r\n"),
        Parsed::Request { consumed: 20, .. }
    ));
}

#[test]
fn too_large_boundary_matches_memcached_at_1m() {
    let limits = Limits {
        item_size_max: 1 << 20,
        ..Limits::default()
    };
    let check = |line: &'static [u8]| parse(line, &limits);
    // Measured against memcached 1.6.18 -I 1m: key "k", flags 0.
    assert_eq!(
        check(b"set k 0 0 1048516\r\n"),
        Parsed::Incomplete {
            needed: Some(19 + 1048518)
        }
    );
    assert_eq!(
        check(b"set k 0 0 1048517\r\n"),
        Parsed::TooLarge {
            command: StoreCommand::Set,
            key: b"k",
            noreply: false,
            consumed: 19,
            swallow: 1048519
        }
    );
    // Non-zero flags cost 4 bytes.
    assert!(matches!(
        check(b"set k 1 0 1048512\r\n"),
        Parsed::Incomplete { .. }
    ));
    assert!(matches!(
        check(b"set k 1 0 1048513\r\n"),
        Parsed::TooLarge { .. }
    ));
    // Flags that truncate to zero cost nothing.
    assert!(matches!(
        check(b"set k 4294967296 0 1048516\r\n"),
        Parsed::Incomplete { .. }
    ));
    // Each key byte counts.
    assert!(matches!(
        check(b"set kk 0 0 1048515\r\n"),
        Parsed::Incomplete { .. }
    ));
    assert!(matches!(
        check(b"set kk 0 0 1048516\r\n"),
        Parsed::TooLarge { .. }
    ));
    assert_eq!(
        check(b"add kk 0 0 1048516 noreply\r\n"),
        Parsed::TooLarge {
            command: StoreCommand::Add,
            key: b"kk",
            noreply: true,
            consumed: 28,
            swallow: 1048518
        }
    );
    assert!(matches!(
        check(b"cas kk 0 0 1048516 9\r\n"),
        Parsed::TooLarge {
            command: StoreCommand::Cas(9),
            ..
        }
    ));
}

#[test]
fn delete_variants() {
    assert_eq!(
        req(b"delete k\r\n"),
        Request::Delete {
            key: b"k",
            noreply: false
        }
    );
    assert_eq!(
        req(b"delete k 0\r\n"),
        Request::Delete {
            key: b"k",
            noreply: false
        }
    );
    assert_eq!(
        req(b"delete k noreply\r\n"),
        Request::Delete {
            key: b"k",
            noreply: true
        }
    );
    assert_eq!(
        req(b"delete k 0 noreply\r\n"),
        Request::Delete {
            key: b"k",
            noreply: true
        }
    );
    // memcached 1.6.40 ignores every token after the key but a final
    // `noreply` (1.6.18 and 1.6.38 refused them with DELETE_USAGE, and a
    // wrong token count with ERROR).
    let plain = |key| Request::Delete { key, noreply: false };
    let quiet = |key| Request::Delete { key, noreply: true };
    assert_eq!(req(b"delete k 1\r\n"), plain(b"k"));
    assert_eq!(req(b"delete k noreply 0\r\n"), plain(b"k"));
    assert_eq!(req(b"delete k 0 0\r\n"), plain(b"k"));
    assert_eq!(req(b"delete k 0 noreply x\r\n"), plain(b"k"));
    assert_eq!(req(b"delete a b c d\r\n"), plain(b"a"));
    assert_eq!(req(b"delete k 1 noreply\r\n"), quiet(b"k"));
    assert_eq!(req(b"delete noreply\r\n"), quiet(b"noreply"));
    assert_eq!(err(b"delete\r\n"), BAD_FORMAT);
    // memcached's proxy forwards `noreply` as `noreplY` and wants the reply.
    assert_eq!(req(b"delete k noreplY\r\n"), plain(b"k"));
    assert_eq!(req(b"delete k 1 noreplY\r\n"), plain(b"k"));
    let mut line = b"delete ".to_vec();
    line.extend_from_slice(&[b'k'; 251]);
    assert_eq!(err(&[&line[..], b"\r\n"].concat()), BAD_FORMAT);
    silent(&[&line[..], b" noreply\r\n"].concat());
}

#[test]
fn incr_decr() {
    assert_eq!(
        req(b"incr k 5\r\n"),
        Request::Arith {
            key: b"k",
            incr: true,
            delta: 5,
            noreply: false
        }
    );
    assert_eq!(
        req(b"decr k 5 noreply\r\n"),
        Request::Arith {
            key: b"k",
            incr: false,
            delta: 5,
            noreply: true
        }
    );
    assert_eq!(
        req(b"incr k 18446744073709551615\r\n"),
        Request::Arith {
            key: b"k",
            incr: true,
            delta: u64::MAX,
            noreply: false
        }
    );
    // A fourth token that is not noreply is ignored.
    assert_eq!(
        req(b"incr k 1 x\r\n"),
        Request::Arith {
            key: b"k",
            incr: true,
            delta: 1,
            noreply: false
        }
    );
    assert_eq!(err(b"incr k x\r\n"), INVALID_DELTA);
    assert_eq!(err(b"incr k -1\r\n"), INVALID_DELTA);
    assert_eq!(err(b"incr k 18446744073709551616\r\n"), INVALID_DELTA);
    silent(b"decr k x noreply\r\n");
    // memcached 1.6.40: a missing delta is a bad format, extra tokens are
    // ignored (1.6.18 and 1.6.38: ERROR for both).
    assert_eq!(err(b"incr k\r\n"), BAD_FORMAT);
    assert_eq!(err(b"incr\r\n"), BAD_FORMAT);
    assert!(matches!(req(b"incr k 1 2 3\r\n"), Request::Arith { delta: 1, noreply: false, .. }));
    assert!(matches!(req(b"incr k 1 2 noreply\r\n"), Request::Arith { delta: 1, noreply: true, .. }));
    silent(b"incr k noreply\r\n");
}

#[test]
fn touch() {
    assert_eq!(
        req(b"touch k 10\r\n"),
        Request::Touch {
            key: b"k",
            exptime: 10,
            noreply: false
        }
    );
    assert_eq!(
        req(b"touch k -1 noreply\r\n"),
        Request::Touch {
            key: b"k",
            exptime: -1,
            noreply: true
        }
    );
    assert_eq!(err(b"touch k x\r\n"), INVALID_EXPTIME);
    silent(b"touch k x noreply\r\n");
    assert_eq!(err(b"touch k\r\n"), BAD_FORMAT);
    assert!(matches!(req(b"touch k 1 2 3\r\n"), Request::Touch { exptime: 1, noreply: false, .. }));
}

#[test]
fn flush_all() {
    assert_eq!(
        req(b"flush_all\r\n"),
        Request::FlushAll {
            delay: 0,
            noreply: false
        }
    );
    assert_eq!(
        req(b"flush_all noreply\r\n"),
        Request::FlushAll {
            delay: 0,
            noreply: true
        }
    );
    assert_eq!(
        req(b"flush_all 10\r\n"),
        Request::FlushAll {
            delay: 10,
            noreply: false
        }
    );
    assert_eq!(
        req(b"flush_all 10 noreply\r\n"),
        Request::FlushAll {
            delay: 10,
            noreply: true
        }
    );
    assert_eq!(
        req(b"flush_all -1\r\n"),
        Request::FlushAll {
            delay: -1,
            noreply: false
        }
    );
    assert_eq!(
        req(b"flush_all 1 x\r\n"),
        Request::FlushAll {
            delay: 1,
            noreply: false
        }
    );
    assert_eq!(err(b"flush_all x\r\n"), INVALID_EXPTIME);
    assert_eq!(err(b"flush_all noreply 1\r\n"), INVALID_EXPTIME);
    silent(b"flush_all x noreply\r\n");
    // Extra tokens are ignored (1.6.18 and 1.6.38: ERROR).
    assert!(matches!(req(b"flush_all 1 2 3\r\n"), Request::FlushAll { delay: 1, noreply: false }));
    assert!(matches!(req(b"flush_all 1 2 noreply\r\n"), Request::FlushAll { delay: 1, noreply: true }));
    // Looked up by its first token: leading spaces are fine.
    assert!(matches!(req(b"  flush_all\r\n"), Request::FlushAll { delay: 0, noreply: false }));
}

#[test]
fn verbosity() {
    assert_eq!(
        req(b"verbosity 1\r\n"),
        Request::Verbosity {
            level: 1,
            noreply: false
        }
    );
    assert_eq!(
        req(b"verbosity 1 noreply\r\n"),
        Request::Verbosity {
            level: 1,
            noreply: true
        }
    );
    assert_eq!(
        req(b"verbosity 1 2\r\n"),
        Request::Verbosity {
            level: 1,
            noreply: false
        }
    );
    assert_eq!(err(b"verbosity\r\n"), BAD_FORMAT);
    assert_eq!(err(b"verbosity x\r\n"), BAD_FORMAT);
    assert!(matches!(req(b"verbosity 1 2 3\r\n"), Request::Verbosity { level: 1, noreply: false }));
    silent(b"verbosity noreply\r\n");
}

#[test]
fn simple_commands() {
    assert_eq!(req(b"version\r\n"), Request::Version);
    assert_eq!(req(b"version x y\r\n"), Request::Version);
    assert_eq!(req(b"quit\r\n"), Request::Quit);
    assert_eq!(req(b"quit now\r\n"), Request::Quit);
    assert_eq!(req(b"stats\r\n"), Request::Stats { args: b"" });
    assert_eq!(req(b"stats \r\n"), Request::Stats { args: b"" });
    assert_eq!(
        req(b"stats  detail  dump \r\n"),
        Request::Stats {
            args: b"detail  dump"
        }
    );
    assert_eq!(req(b"shutdown\r\n"), Request::Shutdown { graceful: false });
    assert_eq!(
        req(b"shutdown graceful\r\n"),
        Request::Shutdown { graceful: true }
    );
    assert_eq!(err(b"shutdown foo\r\n"), INVALID_SHUTDOWN);
    assert_eq!(err(b"shutdown graceful x\r\n"), INVALID_SHUTDOWN);
    assert_eq!(
        req(b"cache_memlimit 100\r\n"),
        Request::CacheMemlimit {
            megabytes: 100,
            noreply: false
        }
    );
    assert_eq!(
        req(b"cache_memlimit 100 noreply\r\n"),
        Request::CacheMemlimit {
            megabytes: 100,
            noreply: true
        }
    );
    assert_eq!(err(b"cache_memlimit x\r\n"), ERROR);
    assert_eq!(err(b"cache_memlimit\r\n"), ERROR);
    silent(b"cache_memlimit x noreply\r\n");
    assert_eq!(req(b"debugtime 10\r\n"), Request::DebugTime { offset: 10 });
    assert_eq!(
        req(b"debugtime -10\r\n"),
        Request::DebugTime { offset: -10 }
    );
    assert_eq!(err(b"debugtime x\r\n"), ERROR);
    assert_eq!(err(b"debugtime\r\n"), ERROR);
}

#[test]
fn admin_commands() {
    let admin = |b: &'static [u8]| match req(b) {
        Request::Admin { command, args, .. } => (command, args),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        admin(b"slabs reassign 1 2\r\n"),
        (AdminCommand::Slabs, &b"reassign 1 2"[..])
    );
    assert_eq!(admin(b"slabs\r\n"), (AdminCommand::Slabs, &b""[..]));
    assert_eq!(admin(b"lru tune 1 2 3 4\r\n").0, AdminCommand::Lru);
    assert_eq!(err(b"lru\r\n"), ERROR);
    assert_eq!(
        admin(b"lru_crawler metadump all\r\n"),
        (AdminCommand::LruCrawler, &b"metadump all"[..])
    );
    assert_eq!(admin(b"watch\r\n").0, AdminCommand::Watch);
    assert_eq!(admin(b"extstore item_age 5\r\n").0, AdminCommand::Extstore);
    assert_eq!(err(b"extstore\r\n"), ERROR);
    assert_eq!(admin(b"refresh_certs\r\n").0, AdminCommand::RefreshCerts);
}

#[test]
fn unknown_commands_and_http() {
    assert_eq!(err(b"boguscommand slkdsldkfjsd\r\n"), ERROR);
    // Lines shorter than 4 bytes with their line end are a bad format
    // (memcached 1.6.40; 1.6.18 and 1.6.38: ERROR); longer blank ones ERROR.
    for short in [&b"\r\n"[..], b"\n", b"\r\r\n", b" \r\n", b"x\r\n", b"\0\r\n", b"ab\n", b"x\n"] {
        assert_eq!(err(short), BAD_FORMAT, "{:?}", String::from_utf8_lossy(short));
    }
    assert_eq!(err(b"   \r\n"), ERROR);
    assert_eq!(err(b"  \r\n"), ERROR);
    assert_eq!(err(b"\0\0\r\n"), ERROR);
    assert_eq!(err(b"xy\r\n"), ERROR);
    assert_eq!(err(b"misbehave\r\n"), ERROR);
    assert!(matches!(req(b"mg k v\r\n"), Request::Meta(_))); // meta: see meta_tests.rs
    assert_eq!(err(b"mx k v\r\n"), ERROR);
    // An unknown command's ERROR is silenced by a final noreply.
    silent(b"foo noreply\r\n");
    silent(b"GET k noreply\r\n");
    assert_eq!(err(b"foo noreply x\r\n"), ERROR);
    // Any unknown line of two tokens or more whose last starts with HTTP/
    // closes the connection (1.6.18 and 1.6.38 answered ERROR for names
    // starting with one of their dispatch letters, and closed on one token).
    assert_eq!(p(b"GET / HTTP/1.0\r\n"), Parsed::Close);
    assert_eq!(p(b"PUT /asdf/asd/fasdfasdf/sadf HTTP/1.1\r\n"), Parsed::Close);
    assert_eq!(p(b"DELETE HTTP/1.1\r\n"), Parsed::Close);
    assert_eq!(p(b"x HTTP/1.1\r\n"), Parsed::Close);
    assert_eq!(p(b"gx / HTTP/1.1\r\n"), Parsed::Close);
    assert_eq!(p(b"mx HTTP/1.1\r\n"), Parsed::Close);
    assert_eq!(p(b"HTTP/1.1 HTTP/1.1\r\n"), Parsed::Close);
    assert_eq!(err(b"HTTP/1.1\r\n"), ERROR);
    // A known command is run whatever its last token.
    assert!(matches!(req(b"get / HTTP/1.1\r\n"), Request::Get { .. }));
    assert!(matches!(req(b"mn HTTP/1.1\r\n"), Request::Meta(_)));
    // Only the 23rd token counts as "last".
    let mut line = b"foo".to_vec();
    for _ in 0..21 {
        line.extend_from_slice(b" a");
    }
    assert_eq!(p(&[&line[..], b" HTTP/1.1 b\r\n"].concat()), Parsed::Close);
    assert_eq!(err(&[&line[..], b" a HTTP/1.1 b\r\n"].concat()), ERROR);
}

#[test]
fn line_framing() {
    // \n without \r.
    assert_eq!(req(b"version\n"), Request::Version);
    assert_eq!(store_req(b"set k 0 0 1\nx\r\n").4, b"x");
    // A NUL is part of a token (1.6.18 and 1.6.38 ended the command text
    // there).
    assert_eq!(err(b"set k 0 0 1\x00xx\r\n"), BAD_FORMAT);
    // ... but flags and exptime are read as C strings, which a NUL ends.
    assert!(matches!(store_req(b"set k 7\x00x 8\x00 1\r\nx\r\n"), (_, _, 7, 8, _, _)));
    assert_eq!(err_swallow(b"set k \x00 0 1\r\n", 3), BAD_FORMAT);
    assert_eq!(keys(&req(b"get a\x00b c\r\n")), [&b"a\x00b"[..], b"c"]);
    assert_eq!(store_req(b"set k\x000 0 0 1\r\nx\r\n").1, b"k\x000");
    assert_eq!(err(b"get\x00 k\r\n"), ERROR);
    // The name is what precedes the first space: a leading space names no
    // data command (1.6.18 and 1.6.38 skipped leading spaces).
    assert_eq!(err(b"  set  k  0 0 1  \r\n"), ERROR);
    assert_eq!(err(b" get k\r\n"), ERROR);
    assert_eq!(err(b" version\r\n"), ERROR);
    assert_eq!(err(b" stats\r\n"), ERROR);
    assert_eq!(err(b" watch\r\n"), ERROR);
    assert!(matches!(req(b" verbosity 1\r\n"), Request::Verbosity { level: 1, .. }));
    // Repeated spaces between tokens are fine.
    assert_eq!(store_req(b"set  k  0 0 1  \r\nx\r\n").1, b"k");
    // A tab is not a separator.
    assert_eq!(keys(&req(b"get a\tb\r\n")), [&b"a\tb"[..]]);
    assert_eq!(err(b"stats\t\r\n"), ERROR);
    assert_eq!(err(b"\tget k\r\n"), ERROR);
    // Only one \r is dropped.
    assert_eq!(keys(&req(b"get a\r\r\n")), [&b"a\r"[..]]);
    // Any command ignores what follows its last token, and quit/version
    // any token at all.
    assert_eq!(req(b"quit foo\r\n"), Request::Quit);
    assert_eq!(req(b"version noreply\r\n"), Request::Version);
}

#[test]
fn long_lines() {
    let limits = Limits::default();
    let junk = vec![b'x'; 2048];
    assert_eq!(parse(&junk, &limits), Parsed::Incomplete { needed: None });
    let junk = vec![b'x'; 2049];
    assert_eq!(parse(&junk, &limits), Parsed::Close);
    let mut get = b"get".to_vec();
    while get.len() < 4000 {
        get.extend_from_slice(b" a");
    }
    assert_eq!(parse(&get, &limits), Parsed::Incomplete { needed: None });
    let gets = [&b"gets"[..], &get[3..]].concat();
    assert_eq!(parse(&gets, &limits), Parsed::Incomplete { needed: None });
    // gat is not exempt.
    let gat = [&b"gat 1"[..], &get[3..]].concat();
    assert_eq!(parse(&gat, &limits), Parsed::Close);
    // Up to 100 leading spaces are tolerated before get.
    let spaced = [&[b' '; 100][..], &get].concat();
    assert_eq!(parse(&spaced, &limits), Parsed::Incomplete { needed: None });
    let spaced = [&[b' '; 101][..], &get].concat();
    assert_eq!(parse(&spaced, &limits), Parsed::Close);
    // The multiget bound.
    let small = Limits {
        max_get_line: 3000,
        ..limits
    };
    assert_eq!(parse(&get, &small), Parsed::Close);
    // Completed, the long get parses.
    get.extend_from_slice(b"\r\n");
    assert_eq!(keys(&req(&get)).len(), 1999);
    // A complete long non-get line is processed, as memcached does when it
    // arrives in one read.
    let long_version = [&b"version"[..], &[b' '; 3000], b"\r\n"].concat();
    assert_eq!(req(&long_version), Request::Version);
}

#[test]
fn pipelined_requests() {
    let buf = b"set a 0 0 1\r\n1\r\nget a b\r\ndelete a\nincr n 1 noreply\r\nset b 0 0 2\r\nxy\r\nversion\r\n";
    let mut rest = &buf[..];
    let mut seen = Vec::new();
    while !rest.is_empty() {
        match p(rest) {
            Parsed::Request { request, consumed } => {
                seen.push(format!("{request:?}"));
                rest = &rest[consumed..];
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen.len(), 6);
    assert!(seen[0].starts_with("Store"));
    assert!(seen[1].starts_with("Get"));
    assert!(seen[2].starts_with("Delete"));
    assert!(seen[3].starts_with("Arith"));
    assert!(seen[4].starts_with("Store"));
    assert_eq!(seen[5], "Version");
}

#[test]
fn every_split_point_is_incomplete_until_complete() {
    let samples: &[&[u8]] = &[
        b"set k 0 0 5\r\nhello\r\n",
        b"get a b c\r\n",
        b"gats 5 a\n",
        b"cas key 1 2 3 4 noreply\r\nabc\r\n",
        b"delete k 0 noreply\r\n",
        b"incr k 1\r\n",
        b"set k 0 0 0\r\n\r\n",
        b"set k 0 0 3\r\nabcde\r\n",
    ];
    for &full in samples {
        // The first request may end before the sample does (bad data chunk).
        let used = match p(full) {
            Parsed::Request { consumed, .. }
            | Parsed::Error { consumed, .. }
            | Parsed::Silent { consumed, .. } => consumed,
            other => panic!("{full:?}: {other:?}"),
        };
        for cut in 0..used {
            match p(&full[..cut]) {
                Parsed::Incomplete { needed } => {
                    if let Some(n) = needed {
                        assert!(n > cut && n == used, "{full:?} at {cut}: {n}");
                    }
                }
                other => panic!(
                    "{:?} cut at {cut}: {other:?}",
                    String::from_utf8_lossy(full)
                ),
            }
        }
    }
}

#[test]
fn c_number_readers() {
    assert_eq!(safe_u32(b"4294967295"), Some(u32::MAX));
    assert_eq!(safe_u32(b"4294967296"), Some(0));
    assert_eq!(safe_u32(b" 5"), Some(5));
    assert_eq!(safe_u32(b"\t5"), Some(5));
    assert_eq!(safe_u32(b"5\r"), Some(5));
    assert_eq!(safe_u32(b"5\rjunk"), Some(5));
    assert_eq!(safe_u32(b"5junk"), None);
    assert_eq!(safe_u32(b""), None);
    assert_eq!(safe_u32(b"-"), None);
    assert_eq!(safe_u32(b"+"), None);
    assert_eq!(safe_u32(b"-1"), None);
    assert_eq!(safe_u64(b"-9223372036854775809"), Some(9223372036854775807));
    assert_eq!(safe_u64(b"-9223372036854775808"), None);
    assert_eq!(safe_i64(b"9223372036854775807"), Some(i64::MAX));
    assert_eq!(safe_i64(b"9223372036854775808"), None);
    assert_eq!(safe_i64(b"-9223372036854775808"), Some(i64::MIN));
    assert_eq!(safe_i64(b"-9223372036854775809"), None);
    assert_eq!(safe_i32(b"2147483648"), Some(i32::MIN));
    assert_eq!(safe_i32(b"-1"), Some(-1));
    assert_eq!(safe_i32(b"0x10"), None);
}

/// Valid requests to mutate and splice.
const SEEDS: &[&[u8]] = &[
    b"set k 0 0 5\r\nhello\r\n",
    b"cas key 1 2 3 4 noreply\r\nabc\r\n",
    b"append a 4294967297 -1 2\r\nxy\r\n",
    b"get a bb ccc\r\n",
    b"gats 10 a b\n",
    b"delete k 0 noreply\r\n",
    b"incr k 18446744073709551615\r\n",
    b"touch k -1\r\n",
    b"flush_all 10 noreply\r\n",
    b"verbosity 1\r\n",
    b"stats detail dump\r\n",
    b"shutdown graceful\r\n",
    b"cache_memlimit 100\r\n",
    b"lru_crawler metadump all\r\n",
    b"GET / HTTP/1.1\r\n",
    b"version\r\n",
    b"mg k s v t c f l h k O123 q\r\n",
    b"ms k 5 T10 F3 c k MS I C9\r\nhello\r\n",
    b"ms Zm9v 2 b k\r\nhi\r\n",
    b"md Zm9vYg== b q I T30\r\n",
    b"ma k N0 J5 D2 MD v t c\r\n",
    b"mn\r\n",
    b"me k b\r\n",
];

/// Bytes that matter to the parser, favoured by mutations.
const INTERESTING: &[u8] = b" \r\n\0\t-+09noreplyHTTP/mgsdbkvqOTNMC=";

fn mutate(rng: &mut XorShift64Star, input: &mut Vec<u8>) {
    for _ in 0..=rng.index(4) {
        let pos = rng.index(input.len() + 1);
        match rng.index(6) {
            0 if pos < input.len() => input[pos] = INTERESTING[rng.index(INTERESTING.len())],
            1 => input.insert(pos, INTERESTING[rng.index(INTERESTING.len())]),
            2 if pos < input.len() => {
                input.remove(pos);
            }
            3 => input.truncate(pos),
            4 => input.extend_from_slice(SEEDS[rng.index(SEEDS.len())]),
            // Keys around the 250-byte limit.
            5 if rng.index(4) == 0 => {
                let run = 240 + rng.index(20);
                input.splice(pos..pos, vec![b'k'; run]);
            }
            _ if pos < input.len() => input[pos] = rng.next_u64() as u8,
            _ => {}
        }
    }
}

#[test]
fn random_and_mutated_inputs_keep_the_invariants() {
    let mut rng = XorShift64Star(0x9E37_79B9_7F4A_7C15);
    // Small limits so the overlong-line paths are reached too.
    let limits = [
        Limits::default(),
        Limits {
            item_size_max: 100,
            max_line: 40,
            max_get_line: 80,
        },
    ];
    let mut results = 0;
    for round in 0..60_000 {
        let mut input = Vec::new();
        if round % 10 == 0 {
            // Pure noise, biased toward parser-relevant bytes.
            for _ in 0..rng.index(120) {
                input.push(if rng.index(2) == 0 {
                    INTERESTING[rng.index(INTERESTING.len())]
                } else {
                    rng.next_u64() as u8
                });
            }
        } else {
            for _ in 0..=rng.index(3) {
                input.extend_from_slice(SEEDS[rng.index(SEEDS.len())]);
            }
            mutate(&mut rng, &mut input);
        }
        results += crate::invariants::check_stream(&input, &limits[round % 2]);
    }
    // The seeds are mostly valid, so most rounds parse several requests.
    assert!(results > 100_000, "only {results} results");
}

#[test]
fn item_size_rule() {
    assert_eq!(item_size(1, 0, 40), 100);
    assert_eq!(item_size(1, 7, 40), 104);
    assert_eq!(item_size(250, 0, 0), 48 + 8 + 251 + 2);
}

#[test]
fn too_large_swallows_the_block_then_parsing_resumes() {
    let limits = Limits {
        item_size_max: 100,
        ..Limits::default()
    };
    // Exactly at the limit: stored.
    let fits = [&b"set k 0 0 40\r\n"[..], &[b'a'; 40], b"\r\n"].concat();
    assert!(matches!(
        parse(&fits, &limits),
        Parsed::Request { consumed: 56, .. }
    ));
    // One byte more: the block (even if it is already buffered) is swallowed.
    let buf = [&b"set k 0 0 41\r\n"[..], &[b'a'; 41], b"\r\nget k\r\n"].concat();
    assert_eq!(
        parse(&buf, &limits),
        Parsed::TooLarge {
            command: StoreCommand::Set,
            key: b"k",
            noreply: false,
            consumed: 14,
            swallow: 43
        }
    );
    let after = &buf[14 + 43..];
    assert!(matches!(
        parse(after, &limits),
        Parsed::Request {
            request: Request::Get { .. },
            consumed: 7
        }
    ));
    // The verdict does not wait for the block.
    assert!(matches!(
        parse(&buf[..14], &limits),
        Parsed::TooLarge { .. }
    ));
}

#[test]
fn silent_error_then_the_data_block_is_a_command() {
    // memcached 1.6.40: nothing for the bad set (noreply) and its 3-byte
    // block swallowed; a refused length swallows nothing, so its data line
    // is read as a command (1.6.18 and 1.6.38 swallowed nothing).
    let buf = b"set k x 0 1 noreply\r\nabc\r\n";
    assert_eq!(p(buf), Parsed::Silent { consumed: 21, swallow: 3 });
    assert_eq!(err(&buf[24..]), BAD_FORMAT);
    let buf = b"set k 0 0 x noreply\r\nabc\r\n";
    assert_eq!(p(buf), Parsed::Error { error: BAD_FORMAT, consumed: 21, swallow: 0 });
    assert_eq!(err(&buf[21..]), ERROR);
    // Too few tokens: the data line too is a bad format (1.6.18: ERROR ERROR).
    let buf = b"set k 0\r\nx\r\n";
    assert_eq!(err(&buf[..9]), BAD_FORMAT);
    assert_eq!(err(&buf[9..]), BAD_FORMAT);
}

/// What memcached 1.6.45 does with each line (measured with its binary;
/// docs/notes-arity-1645.md has the full table): "E <error> <swallow>",
/// "S <swallow>" (silent), "R" (a request), "C" (close).
#[test]
fn request_lines_as_memcached_1_6_45_reads_them() {
    let bad = BAD_FORMAT;
    let table: &[(&[u8], &str)] = &[
        (b"\r\n", "E bad 0"),
        (b" \r\n", "E bad 0"),
        (b"\x00\r\n", "E bad 0"),
        (b"\n", "E bad 0"),
        (b"ab\n", "E bad 0"),
        (b"  \r\n", "E ERROR 0"),
        (b"\x00\x00\r\n", "E ERROR 0"),
        (b"GET k\r\n", "E ERROR 0"),
        (b"foo\r\n", "E ERROR 0"),
        (b"foo noreply\r\n", "S 0"),
        (b"bget k\r\n", "E ERROR 0"),
        (b" get k\r\n", "E ERROR 0"),
        (b"get\r\n", "E bad 0"),
        (b"gets\r\n", "E bad 0"),
        (b"gat\r\n", "E bad 0"),
        (b"gat 0\r\n", "E bad 0"),
        (b"gats 0 k\r\n", "R"),
        (b"incr\r\n", "E bad 0"),
        (b"incr k\r\n", "E bad 0"),
        (b"incr k 1 2 3\r\n", "R"),
        (b"incr k noreply\r\n", "S 0"),
        (b"delete\r\n", "E bad 0"),
        (b"delete k 0 noreply x\r\n", "R"),
        (b"touch k\r\n", "E bad 0"),
        (b"touch k 1 2 3\r\n", "R"),
        (b"set\r\n", "E bad 0"),
        (b"set k 0 0\r\n", "E bad 0"),
        (b"set k 0 0 noreply\r\n", "E bad 0"),
        (b"set k 0 0 x noreply\r\n", "E bad 0"),
        (b"set k x 0 1\r\n", "E bad 3"),
        (b"set k 0 x 1 noreply\r\n", "S 3"),
        (b"cas k 0 0 1\r\n", "E bad 3"),
        (b"cas foo 0 0 6 \r\n", "E bad 8"),
        (b"cas foo 0 0 6 noreply\r\n", "S 8"),
        (b"cas k 0 0 1 x noreply\r\n", "S 3"),
        (b"verbosity\r\n", "E bad 0"),
        (b"verbosity noreply\r\n", "S 0"),
        (b"verbosity 1 2 3\r\n", "R"),
        (b"flush_all 1 2 3\r\n", "R"),
        (b"flush_all noreply 5\r\n", "E CLIENT_ERROR invalid exptime argument 0"),
        (b" flush_all\r\n", "R"),
        (b"cache_memlimit\r\n", "E ERROR 0"),
        (b"cache_memlimit 100 2 3\r\n", "R"),
        (b"shutdown noreply\r\n", "S 0"),
        (b"slabs noreply\r\n", "R"),
        (b"version foo\r\n", "R"),
        (b"quit foo\r\n", "R"),
        (b" version\r\n", "E ERROR 0"),
        (b"stats foo\r\n", "R"),
        (b"mg\r\n", "E bad 0"),
        (b"md\r\n", "E bad 0"),
        (b"mg k !\r\n", "E bad 0"),
        (b"ms k 1 !\r\n", "E bad 0"),
        (b"mn foo\r\n", "R"),
        (b"HTTP/1.1\r\n", "E ERROR 0"),
        (b"gx / HTTP/1.1\r\n", "C"),
        (b"GET / HTTP/1.1\r\n", "C"),
    ];
    for &(line, want) in table {
        let got = match p(line) {
            Parsed::Error { error, consumed, swallow } if consumed == line.len() => {
                format!("E {} {swallow}", if error == bad { "bad" } else { error })
            }
            Parsed::Silent { consumed, swallow } if consumed == line.len() => format!("S {swallow}"),
            // A storage line's request needs its block: its line parsed fine.
            Parsed::Request { .. } | Parsed::Incomplete { needed: Some(_) } => "R".to_string(),
            Parsed::Close => "C".to_string(),
            other => format!("{other:?}"),
        };
        assert_eq!(got, want, "{:?}", String::from_utf8_lossy(line));
    }
    // The storage lines that read: their blocks are then data.
    assert!(matches!(store_req(b"set k 0 0 1 noreply extra\r\nx\r\n"), (_, _, _, _, _, false)));
}
