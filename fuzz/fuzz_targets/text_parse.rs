//! Fuzz the text protocol parser: any byte stream, parsed request after
//! request, must keep the invariants in `larder_proto::invariants` (no
//! panic, progress, results that depend only on the bytes consumed, slices
//! inside the buffer, prefixes incomplete, the request re-encoded parsing
//! to an equivalent one, a storage command waiting for its data block
//! parsing the same with the value received aside). The first byte picks
//! the limits (`invariants::fuzz_text`, which the crate's tests also run
//! over the seeds and regressions).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| larder_proto::invariants::fuzz_text(data));
