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
            ms(out, m, st, cas)
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
        let got = match std::panic::catch_unwind(|| replay(v)) {
            Ok(got) => got,
            Err(_) => {
                failures.push(format!("{}: panicked", v.name));
                continue;
            }
        };
        if got != v.reply {
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
                    input.extend(std::iter::repeat(b'Q').take(245 + next(10)));
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
                input.extend(std::iter::repeat(b'd').take(len));
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
