//! Fuzz the meta protocol (`mg ms md ma mn me`): the first byte picks the
//! command the line starts with (so the fuzzer spends its time on keys,
//! flags and data blocks) and the limits; the rest is the line and
//! whatever follows, parsed as a pipelined stream with
//! `larder_proto::invariants::check_stream`: no panic, progress, slices
//! inside the buffer, the meta flags consistent and every reply encoder
//! producing whole lines, the request re-encoded parsing to an equivalent
//! one, and an `ms` waiting for its data block parsing the same with the
//! value received aside.
#![no_main]

use larder_proto::invariants::check_stream;
use larder_proto::Limits;
use libfuzzer_sys::fuzz_target;

const PREFIXES: [&[u8]; 8] = [b"mg ", b"ms ", b"md ", b"ma ", b"mn", b"me ", b"ms k ", b""];

fuzz_target!(|data: &[u8]| {
    let (pick, input) = match data.split_first() {
        Some((&b, rest)) => (b, rest),
        None => return,
    };
    let limits = if pick & 8 == 0 {
        Limits::default()
    } else {
        Limits { item_size_max: 64 + usize::from(pick >> 4) * 8, max_line: 48, max_get_line: 96 }
    };
    let mut buf = PREFIXES[usize::from(pick & 7)].to_vec();
    buf.extend_from_slice(input);
    check_stream(&buf, &limits);
});
