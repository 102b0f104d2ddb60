//! Properties every parse result must have, checked by the randomized
//! unit tests and by the cargo-fuzz targets (`fuzz/`), so both exercise the
//! same contract. Panics on a violation. Not part of the API.
//!
//! Text and meta ([`check_stream`]) and binary ([`check_binary_stream`]),
//! each over a pipelined stream:
//!
//! * no panic, progress, results that depend only on the bytes consumed,
//!   slices inside the buffer, shorter prefixes incomplete;
//! * round trip: a request re-encoded ([`crate::encode`]) parses to an
//!   equivalent request that consumes exactly the encoding;
//! * a request waiting for its data block: the layout the server receives
//!   the value by (`waiting_shape`) lies in the bytes received, adds up to
//!   what the parser needs, and parsing with the value received aside (the
//!   server's large-value landing) gives the same request as parsing it in
//!   the buffer.

use crate::binary::{self, BinParsed, HEADER_LEN, MAX_SASL_MECH_LEN, REQUEST_MAGIC};
use crate::block::Input;
use crate::encode;
use crate::meta::{self, MetaCommand, MetaRequest};
use crate::text::{self, parse, Keys, Limits, Parsed, Request, KEY_MAX_LENGTH};

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
            check_round_trip(request, limits);
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
                Some(n) => {
                    assert!(*n > buf.len() && newline.is_some());
                    check_text_landing(buf, *n, limits);
                }
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
        meta::ms(&mut out, m, st, u64::MAX, usize::MAX);
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

/// Text requests that mean the same: a multi-key command's keys compared
/// one by one (its spacing is not kept), everything else as parsed.
fn equivalent(a: &Request<'_>, b: &Request<'_>) -> bool {
    match (a, b) {
        (Request::Get { keys: ka, cas: ca }, Request::Get { keys: kb, cas: cb }) => ca == cb && Iterator::eq(*ka, *kb),
        (
            Request::Gat { exptime: ea, keys: ka, cas: ca },
            Request::Gat { exptime: eb, keys: kb, cas: cb },
        ) => ea == eb && ca == cb && Iterator::eq(*ka, *kb),
        _ => a == b,
    }
}

/// A request re-encoded parses to an equivalent request, using all of the
/// encoding.
fn check_round_trip(request: &Request<'_>, limits: &Limits) {
    let mut enc = Vec::new();
    encode::text_request(&mut enc, request);
    match parse(&enc, limits) {
        Parsed::Request { request: again, consumed } => {
            assert_eq!(consumed, enc.len(), "round trip consumes the encoding {:?}", String::from_utf8_lossy(&enc));
            assert!(
                equivalent(request, &again),
                "round trip: {request:?} encoded as {:?} parsed as {again:?}",
                String::from_utf8_lossy(&enc)
            );
        }
        other => panic!("round trip: {request:?} encoded as {:?} parsed as {other:?}", String::from_utf8_lossy(&enc)),
    }
}

/// The largest value the landing checks complete a request with.
const FILL_MAX: usize = 16 << 10;

/// `buf` waits for a data block and the parser said the buffer must reach
/// `needed` bytes: if the server may receive the value aside
/// ([`text::waiting_shape`]), the shape lies in the received bytes, and the
/// request parses the same with its value aside as in the buffer.
fn check_text_landing(buf: &[u8], needed: usize, limits: &Limits) {
    let Some(shape) = text::waiting_shape(buf, needed) else { return };
    assert!(shape.head <= buf.len(), "landing head {} past the {} bytes received", shape.head, buf.len());
    assert_eq!(shape.head + shape.value + shape.trailer, needed, "landing shape adds up to what is needed");
    assert_eq!(shape.trailer, 2);
    // Bound the work (framing does not depend on the value's size): a
    // value of up to 16 KiB is filled in.
    if shape.value > FILL_MAX {
        return;
    }
    let value_end = shape.head + shape.value;
    let mut whole = buf[..buf.len().min(value_end)].to_vec();
    whole.resize(value_end, b'x');
    whole.extend_from_slice(b"\r\n");
    let Parsed::Request { request, consumed } = parse(&whole, limits) else {
        panic!("the completed request does not parse: {:?}", parse(&whole, limits))
    };
    assert_eq!(consumed, needed);
    let key_len = match &request {
        Request::Store { key, .. } => {
            assert_eq!(key.len(), shape.key_len, "landing key length");
            key.len()
        }
        Request::Meta(m) if m.key_binary() => m.key().len(),
        Request::Meta(m) => {
            assert_eq!(m.key().len(), shape.key_len, "landing key length");
            m.key().len()
        }
        other => panic!("a {other:?} waited for a data block"),
    };
    assert!(key_len <= shape.key_len, "a landing has room for the key");
    let mut head = whole[..shape.head].to_vec();
    head.extend_from_slice(b"\r\n");
    let aside = text::parse_input(Input { buf: &head, aside: Some(&whole[shape.head..value_end]) }, limits);
    match aside {
        Parsed::Request { request: again, consumed } => {
            assert_eq!(consumed, head.len(), "with the value aside, the request ends after its trailer");
            assert!(equivalent(&request, &again), "value aside: {again:?}, in the buffer: {request:?}");
        }
        other => panic!("value aside: {other:?}, in the buffer: {request:?}"),
    }
}

// ---------------------------------------------------------------------------
// Binary.

/// Parse `buf` as a pipelined stream of binary requests (`sasl`: `None`
/// without `-S`, else whether the connection authenticated), checking
/// each result and the stream's progress as a server advances through it
/// (consumed bytes, then swallowed ones). Returns how many results were
/// seen.
pub fn check_binary_stream(buf: &[u8], limits: &Limits, sasl: Option<bool>) -> usize {
    let mut rest = buf;
    let mut results = 0;
    loop {
        results += 1;
        match check_binary_one(rest, limits, sasl) {
            Some(advance) => {
                assert!(advance > 0, "no progress");
                rest = &rest[advance.min(rest.len())..];
            }
            None => return results,
        }
    }
}

fn bin_parse<'a>(buf: &'a [u8], limits: &Limits, sasl: Option<bool>) -> BinParsed<'a> {
    binary::parse_input(Input::new(buf), limits, sasl)
}

/// Check one parse of the front of `buf`; how far the server advances
/// (consumed plus swallowed), or `None` where the stream stops.
fn check_binary_one(buf: &[u8], limits: &Limits, sasl: Option<bool>) -> Option<usize> {
    let parsed = bin_parse(buf, limits, sasl);
    assert_eq!(parsed, bin_parse(buf, limits, sasl), "deterministic");
    match sasl {
        None => assert_eq!(parsed, binary::parse(buf, limits)),
        Some(authenticated) => assert_eq!(parsed, binary::parse_sasl(buf, limits, authenticated)),
    }
    let base = buf.as_ptr() as usize;
    let within = |s: &[u8]| s.is_empty() || (s.as_ptr() as usize >= base && s.as_ptr() as usize + s.len() <= base + buf.len());
    let consumed = match parsed {
        BinParsed::Request { request, consumed } => {
            assert!(consumed >= HEADER_LEN && consumed <= buf.len());
            assert!(within(request.key) && within(request.value));
            assert!(request.key.len() <= binary::KEY_MAX_LENGTH);
            assert_eq!(request.opcode.code(), buf[1]);
            assert!(sasl != Some(false) || request.opcode == binary::Opcode::Version, "unauthenticated: only version");
            let mut enc = Vec::new();
            encode::binary_request(&mut enc, &request);
            match bin_parse(&enc, limits, sasl) {
                BinParsed::Request { request: again, consumed: used } => {
                    assert_eq!(used, enc.len(), "round trip consumes the encoding");
                    assert_eq!(again, request, "round trip");
                }
                other => panic!("round trip: {request:?} parsed as {other:?}"),
            }
            consumed
        }
        BinParsed::Sasl { request, consumed } => {
            assert!(sasl.is_some(), "SASL requests only with -S");
            assert!(consumed >= HEADER_LEN && consumed <= buf.len());
            assert!(within(request.mech) && within(request.data));
            assert!(request.mech.len() <= MAX_SASL_MECH_LEN);
            assert_eq!(request.opcode, buf[1]);
            let mut enc = Vec::new();
            encode::sasl_request(&mut enc, &request);
            match bin_parse(&enc, limits, sasl) {
                BinParsed::Sasl { request: again, consumed: used } => {
                    assert_eq!(used, enc.len(), "round trip consumes the encoding");
                    assert_eq!(again, request, "round trip");
                }
                other => panic!("round trip: {request:?} parsed as {other:?}"),
            }
            consumed
        }
        BinParsed::Error { consumed, close, swallow, unlink_key, opcode, .. } => {
            assert!(consumed >= HEADER_LEN && consumed <= buf.len());
            assert!(!close || swallow == 0);
            assert_eq!(opcode, buf[1]);
            if let Some(k) = unlink_key {
                assert!(within(k));
            }
            consumed
        }
        BinParsed::Incomplete { needed } => {
            match needed {
                Some(n) => {
                    assert!(n > buf.len() && buf.len() >= HEADER_LEN);
                    check_binary_landing(buf, n, limits, sasl);
                }
                None => assert!(buf.len() < HEADER_LEN),
            }
            return None;
        }
        BinParsed::Close => {
            assert_ne!(buf[0], REQUEST_MAGIC);
            return None;
        }
    };
    // The result depends only on the bytes consumed, and shorter prefixes
    // are incomplete, needing no more than was consumed.
    assert_eq!(bin_parse(&buf[..consumed], limits, sasl), parsed, "depends only on consumed bytes");
    for cut in [0, 1, HEADER_LEN - 1, HEADER_LEN, (HEADER_LEN + consumed) / 2, consumed - 1] {
        if cut >= consumed {
            continue;
        }
        match bin_parse(&buf[..cut], limits, sasl) {
            BinParsed::Incomplete { needed } => {
                assert!(needed.map_or(cut < HEADER_LEN, |n| n > cut && n <= consumed), "prefix {cut} of {consumed}: needs {needed:?}")
            }
            other => panic!("prefix {cut} of {consumed}: {other:?}"),
        }
    }
    match parsed {
        BinParsed::Error { close: true, .. } => None,
        BinParsed::Error { swallow, .. } => Some(consumed + swallow),
        _ => Some(consumed),
    }
}

/// The binary counterpart of [`check_text_landing`]: what
/// [`binary::waiting_shape`] says of a request waiting for `needed` bytes
/// lies in the bytes received (a server copies the value's first bytes
/// from there), adds up, and a request completed with its value aside
/// parses as it does in the buffer.
fn check_binary_landing(buf: &[u8], needed: usize, limits: &Limits, sasl: Option<bool>) {
    let Some(shape) = binary::waiting_shape(buf, needed) else { return };
    assert!(
        shape.head <= buf.len(),
        "landing head {} (header, extras, key) past the {} bytes received",
        shape.head,
        buf.len()
    );
    assert_eq!(shape.head + shape.value + shape.trailer, needed, "landing shape adds up to what is needed");
    if shape.value > FILL_MAX {
        return;
    }
    let mut whole = buf.to_vec();
    whole.resize(needed, b'x');
    let in_buffer = bin_parse(&whole, limits, sasl);
    let aside = binary::parse_input(Input { buf: &whole[..shape.head], aside: Some(&whole[shape.head..]) }, limits, sasl);
    match in_buffer {
        BinParsed::Request { request, consumed } if consumed == needed => match aside {
            BinParsed::Request { request: again, consumed } => {
                assert_eq!(consumed, shape.head, "with the value aside, the request ends after its key");
                assert_eq!(again, request, "value aside and in the buffer");
                assert_eq!(request.key.len(), shape.key_len, "landing key length");
            }
            other => panic!("value aside: {other:?}, in the buffer: {request:?}"),
        },
        BinParsed::Sasl { request, consumed } if consumed == needed => match aside {
            BinParsed::Sasl { request: again, consumed } => {
                assert_eq!(consumed, shape.head, "with the data aside, the request ends after its key");
                assert_eq!(again, request, "data aside and in the buffer");
            }
            other => panic!("SASL data aside: {other:?}, in the buffer: {request:?}"),
        },
        other => panic!("a landing shape {shape:?} for a request that completes as {other:?}"),
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

// ---------------------------------------------------------------------------
// The fuzz targets' inputs (`fuzz/fuzz_targets/{text,meta,binary}_parse.rs`
// call these, and the tests below replay the seeds and regressions through
// them on stable Rust).

/// `text_parse`: the first byte picks the limits (even: the defaults; odd:
/// tiny ones, so that overlong lines and too-large items are reached by
/// short inputs); the rest is a pipelined stream for [`check_stream`].
pub fn fuzz_text(data: &[u8]) {
    let (pick, input) = match data.split_first() {
        Some((&b, rest)) => (b, rest),
        None => (0, data),
    };
    let limits = if pick & 1 == 0 {
        Limits::default()
    } else {
        Limits { item_size_max: 64 + usize::from(pick >> 1), max_line: 48, max_get_line: 96 }
    };
    check_stream(input, &limits);
}

/// `meta_parse`: the first byte picks the command the stream starts with
/// (bits 0-2: `mg `, `ms `, `md `, `ma `, `mn`, `me `, `ms k `, nothing) and
/// the limits (bit 3: tiny ones); the rest follows it.
pub fn fuzz_meta(data: &[u8]) {
    const PREFIXES: [&[u8]; 8] = [b"mg ", b"ms ", b"md ", b"ma ", b"mn", b"me ", b"ms k ", b""];
    let Some((&pick, input)) = data.split_first() else { return };
    let limits = if pick & 8 == 0 {
        Limits::default()
    } else {
        Limits { item_size_max: 64 + usize::from(pick >> 4) * 8, max_line: 48, max_get_line: 96 }
    };
    let mut buf = PREFIXES[usize::from(pick & 7)].to_vec();
    buf.extend_from_slice(input);
    check_stream(&buf, &limits);
}

/// `binary_parse`: the first byte picks the mode (bits 0-1: 0 or 3 without
/// SASL, 1 under `-S` unauthenticated, 2 authenticated) and the limits (bit
/// 2: an `-I` of 64 + 16 * (bits 3-7) bytes); the rest is a stream for
/// [`check_binary_stream`].
pub fn fuzz_binary(data: &[u8]) {
    let Some((&pick, input)) = data.split_first() else { return };
    let sasl = match pick & 3 {
        1 => Some(false),
        2 => Some(true),
        _ => None,
    };
    let limits = if pick & 4 == 0 {
        Limits::default()
    } else {
        Limits { item_size_max: 64 + usize::from(pick >> 3) * 16, ..Limits::default() }
    };
    check_binary_stream(input, &limits, sasl);
}

/// Inputs the fuzz targets found, kept as regression tests (the files are
/// also under fuzz/regressions/).
#[cfg(test)]
mod tests {
    use super::*;

    /// meta_parse: an `ms` whose key holds a `\r` waits for its data block;
    /// `text::waiting_shape` split the key at the `\r` (7 bytes, not 45),
    /// so a large value under it was sized for the wrong key.
    #[test]
    fn a_key_with_a_carriage_return_lands_with_its_whole_length() {
        let mut line = b"ms \x11\x11\x11\x11\x11\t3\r\xff\xff".to_vec();
        line.extend_from_slice(&[0x11; 32]);
        line.extend_from_slice(b".= 2\n");
        check_stream(&line, &Limits::default());
        let mut set = b"set a\rb 0 0 10\r\n".to_vec();
        let shape = text::waiting_shape(&set, set.len() + 12).unwrap();
        assert_eq!((shape.key_len, shape.value), (3, 10));
        check_stream(&set, &Limits::default());
        set.extend_from_slice(b"0123456789\r\n");
        check_stream(&set, &Limits::default());
    }

    /// Every seed and regression input of the parser targets, replayed
    /// through the targets' own entry points (fuzz/corpus/<target>/,
    /// fuzz/regressions/<target>/; skipped where the repository is not
    /// around the crate).
    #[test]
    fn fuzz_seeds_and_regressions_replay() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
        type Target = (&'static str, fn(&[u8]));
        let targets: [Target; 3] = [("text_parse", fuzz_text), ("meta_parse", fuzz_meta), ("binary_parse", fuzz_binary)];
        for (target, run) in targets {
            for dir in ["corpus", "regressions"] {
                let Ok(files) = std::fs::read_dir(root.join(dir).join(target)) else { continue };
                for file in files {
                    let path = file.unwrap().path();
                    let data = std::fs::read(&path).unwrap();
                    if let Err(e) = std::panic::catch_unwind(|| run(&data)) {
                        panic!("{}: {:?}", path.display(), e.downcast_ref::<String>());
                    }
                }
            }
        }
    }

    /// binary_parse: the 124-byte request that stopped the server (binary
    /// SET, keylen 65535, extlen 255, bodylen 200000): a header still
    /// arriving has no landing shape.
    #[test]
    fn the_crashing_binary_set_header() {
        let mut req = vec![0x80, 0x01, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0x03, 0x0d, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        req.resize(124, b'A');
        for sasl in [None, Some(false), Some(true)] {
            check_binary_stream(&req, &Limits::default(), sasl);
        }
    }
}
