//! Fuzz the text protocol parser: any byte stream, parsed request after
//! request, must keep the invariants in `larder_proto::invariants` (no
//! panic, progress, results that depend only on the bytes consumed, slices
//! inside the buffer, prefixes incomplete, the request re-encoded parsing
//! to an equivalent one, a storage command waiting for its data block
//! parsing the same with the value received aside).
#![no_main]

use larder_proto::invariants::check_stream;
use larder_proto::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the limits: the defaults, or tiny ones that make
    // the overlong-line and too-large paths reachable by short inputs.
    let (pick, input) = match data.split_first() {
        Some((&b, rest)) => (b, rest),
        None => (0, data),
    };
    let limits = if pick & 1 == 0 {
        Limits::default()
    } else {
        Limits {
            item_size_max: 64 + usize::from(pick >> 1),
            max_line: 48,
            max_get_line: 96,
        }
    };
    check_stream(input, &limits);
});
