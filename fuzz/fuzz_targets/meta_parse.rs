//! Fuzz the meta protocol (`mg ms md ma mn me`): the first byte picks the
//! command the line starts with (so the fuzzer spends its time on keys,
//! flags and data blocks) and the limits; the rest is the line and
//! whatever follows, parsed as a pipelined stream with
//! `larder_proto::invariants::check_stream`: no panic, progress, slices
//! inside the buffer, the meta flags consistent and every reply encoder
//! producing whole lines, the request re-encoded parsing to an equivalent
//! one, and an `ms` waiting for its data block parsing the same with the
//! value received aside. The input's layout is `invariants::fuzz_meta`'s
//! (which the crate's tests also run over the seeds and regressions).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| larder_proto::invariants::fuzz_meta(data));
