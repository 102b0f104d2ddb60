//! Properties every [`parse`] result must have, checked by the randomized
//! unit tests and by the cargo-fuzz target (`fuzz/`), so both exercise the
//! same contract. Panics on a violation. Not part of the API.

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
        _ => {}
    }
}

/// `part` is a subslice of `whole`.
fn within(whole: &[u8], part: &[u8]) -> bool {
    let (w, p) = (whole.as_ptr() as usize, part.as_ptr() as usize);
    p >= w && p + part.len() <= w + whole.len()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
