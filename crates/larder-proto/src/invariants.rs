//! Properties every [`parse`] result must have, checked by the randomized
//! unit tests and by the cargo-fuzz target (`fuzz/`), so both exercise the
//! same contract. Panics on a violation. Not part of the API.

use crate::meta::{self, MetaCommand, MetaRequest};
use crate::text::{parse, Keys, Limits, Parsed, Request, KEY_MAX_LENGTH};

/// Parse `buf` as a pipelined stream, request after request, checking each
/// result and the stream's progress. Returns how many results were seen.
pub fn check_stream(buf: &[u8], limits: &Limits) -> usize {
    let mut rest = buf;
    let mut results = 0;
    loop {
        results += 1;
        let (consumed, swallow) = match check_one(rest, limits) {
            Step::Advance { consumed, swallow } => (consumed, swallow),
            Step::Stop => return results,
        };
        assert!(consumed > 0, "no progress");
        rest = &rest[consumed..];
        rest = &rest[swallow.min(rest.len())..];
    }
}

enum Step {
    Advance { consumed: usize, swallow: usize },
    Stop,
}

/// Check one parse of the front of `buf`.
fn check_one(buf: &[u8], limits: &Limits) -> Step {
    let parsed = parse(buf, limits);
    assert_eq!(parsed, parse(buf, limits), "parse is deterministic");
    let newline = buf.iter().position(|&b| b == b'\n');
    let step = match &parsed {
        Parsed::Request { request, consumed } => {
            check_request(buf, request, *consumed);
            Step::Advance {
                consumed: *consumed,
                swallow: 0,
            }
        }
        Parsed::Error {
            error,
            consumed,
            swallow,
        } => {
            assert!(!error.is_empty() && !error.contains('\n'));
            Step::Advance {
                consumed: *consumed,
                swallow: *swallow,
            }
        }
        Parsed::Silent { consumed, swallow } => Step::Advance {
            consumed: *consumed,
            swallow: *swallow,
        },
        Parsed::TooLarge {
            key,
            consumed,
            swallow,
            ..
        } => {
            assert!(key.len() <= KEY_MAX_LENGTH && within(buf, key));
            assert!(*swallow >= 2);
            assert_eq!(
                Some(*consumed),
                newline.map(|n| n + 1),
                "too large consumes the line"
            );
            Step::Advance {
                consumed: *consumed,
                swallow: *swallow,
            }
        }
        Parsed::Incomplete { needed } => {
            match needed {
                Some(n) => assert!(*n > buf.len() && newline.is_some()),
                None => assert!(newline.is_none()),
            }
            return Step::Stop;
        }
        Parsed::Close => {
            let overlong = newline.is_none() && buf.len() > limits.max_line;
            let http = newline.is_some_and(|n| contains(&buf[..n], b"HTTP/"));
            assert!(overlong || http, "close only for an overlong line or HTTP");
            return Step::Stop;
        }
    };
    if let Step::Advance { consumed, .. } = step {
        let line_end = newline.expect("a result needs a line") + 1;
        assert!(consumed >= line_end && consumed <= buf.len());
        check_prefixes(buf, &parsed, line_end, consumed, limits);
    }
    step
}

/// The result depends only on the bytes it consumed, and every shorter
/// prefix is incomplete (while the line is short enough to wait for).
fn check_prefixes(
    buf: &[u8],
    parsed: &Parsed<'_>,
    line_end: usize,
    consumed: usize,
    limits: &Limits,
) {
    assert_eq!(
        &parse(&buf[..consumed], limits),
        parsed,
        "result depends only on consumed bytes"
    );
    if line_end > limits.max_line {
        return;
    }
    // Every cut would be quadratic on long inputs: sample a few.
    let cuts = [
        0,
        1,
        line_end / 2,
        line_end - 1,
        line_end,
        (line_end + consumed) / 2,
        consumed - 1,
    ];
    for &cut in cuts.iter().filter(|&&c| c < consumed) {
        let expected = if cut < line_end {
            Parsed::Incomplete { needed: None }
        } else {
            Parsed::Incomplete {
                needed: Some(consumed),
            }
        };
        assert_eq!(
            parse(&buf[..cut], limits),
            expected,
            "prefix of {cut} bytes"
        );
    }
}

fn check_request(buf: &[u8], request: &Request<'_>, consumed: usize) {
    assert!(consumed > 0 && consumed <= buf.len());
    assert_eq!(buf[consumed - 1], b'\n', "a request ends with its newline");
    let used = &buf[..consumed];
    let check_keys = |keys: &Keys<'_>| {
        for key in *keys {
            assert!(!key.is_empty() && key.len() <= KEY_MAX_LENGTH && !key.contains(&b' '));
            assert!(within(used, key));
        }
    };
    match request {
        Request::Get { keys, .. } | Request::Gat { keys, .. } => check_keys(keys),
        Request::Store { key, data, .. } => {
            assert!(
                key.len() <= KEY_MAX_LENGTH
                    && !key.is_empty()
                    && within(used, key)
                    && within(used, data)
            );
            let data_end = data.as_ptr() as usize - used.as_ptr() as usize + data.len();
            assert_eq!(&used[data_end..], b"\r\n", "data block ends the request");
        }
        Request::Delete { key, .. } | Request::Arith { key, .. } | Request::Touch { key, .. } => {
            assert!(key.len() <= KEY_MAX_LENGTH && !key.is_empty() && within(used, key));
        }
        Request::Stats { args } | Request::Admin { args, .. } => {
            assert!(within(used, args) && !args.starts_with(b" ") && !args.ends_with(b" "));
        }
        Request::Meta(m) => check_meta(used, m),
        _ => {}
    }
}

/// A meta request: its parts lie in the bytes consumed, its flags are
/// consistent, and every encoder can answer it with whole lines.
fn check_meta(used: &[u8], m: &MetaRequest<'_>) {
    let key = m.key();
    if m.command == MetaCommand::Noop {
        assert!(key.is_empty() && m.flags.order().is_empty());
    } else if m.key_binary() {
        assert!(!key.is_empty() && key.len() <= meta::BINARY_KEY_MAX);
        // The re-encoded key decodes to the same bytes.
        let mut enc = Vec::new();
        meta::base64_encode(&mut enc, key);
        let mut dec = [0u8; KEY_MAX_LENGTH];
        assert_eq!(meta::base64_decode(&enc, &mut dec), Some(key.len()));
        assert_eq!(&dec[..key.len()], key);
    } else {
        assert!(!key.is_empty() && key.len() <= KEY_MAX_LENGTH && within(used, key));
        assert!(!key.contains(&b' '));
    }
    if m.command == MetaCommand::Set {
        assert!(within(used, m.data));
        let data_end = m.data.as_ptr() as usize - used.as_ptr() as usize + m.data.len();
        assert_eq!(&used[data_end..], b"\r\n", "data block ends the request");
    } else {
        assert!(m.data.is_empty());
    }
    let order = m.flags.order();
    assert!(order.len() <= meta::MAX_FLAG_TOKENS);
    for (i, &f) in order.iter().enumerate() {
        assert!(
            m.flags.has(f) && !order[..i].contains(&f),
            "flags are unique"
        );
    }
    let opaque = m.flags.opaque;
    assert_eq!(m.flags.has(b'O'), !opaque.is_empty());
    if !opaque.is_empty() {
        assert!(opaque[0] == b'O' && within(used, opaque));
    }
    match m.command {
        MetaCommand::Set | MetaCommand::Delete => assert!(!m.opaque_too_long()),
        _ => {}
    }
    // Every encoder produces whole lines (or nothing, under `q`).
    let lines = |out: &[u8]| out.is_empty() || out.ends_with(b"\r\n");
    let mut out = Vec::new();
    let item = meta::MgItem {
        value: b"v\r\n",
        ttl: Some(-5),
        ttl_after: None,
        won: true,
        stale: true,
        token_sent: true,
        key_binary: m.key_binary(),
        ..Default::default()
    };
    meta::mg_hit(&mut out, m, &item);
    assert!(lines(&out) && !out.is_empty());
    out.clear();
    meta::mg_miss(&mut out, m);
    assert!(lines(&out));
    for st in [
        meta::MetaStatus::Hd,
        meta::MetaStatus::Ns,
        meta::MetaStatus::Ex,
        meta::MetaStatus::Nf,
    ] {
        out.clear();
        meta::ms(&mut out, m, st, u64::MAX);
        assert!(lines(&out));
        out.clear();
        meta::md(&mut out, m, st);
        assert!(lines(&out));
    }
    out.clear();
    let ma_item = meta::MaItem {
        value: u64::MAX,
        created: true,
        ..Default::default()
    };
    meta::ma(&mut out, m, &meta::MaOutcome::Item(ma_item));
    assert!(lines(&out) && !out.is_empty());
    out.clear();
    meta::me(
        &mut out,
        key,
        &meta::MeItem {
            ttl: Some(i64::MIN),
            ..Default::default()
        },
    );
    assert!(lines(&out));
}

/// `part` is a subslice of `whole`.
fn within(whole: &[u8], part: &[u8]) -> bool {
    let (w, p) = (whole.as_ptr() as usize, part.as_ptr() as usize);
    p >= w && p + part.len() <= w + whole.len()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
