//! Fuzz the near-cache `track` grammar (`larder_proto::track`): the first
//! byte picks what the rest is, either the arguments of a `track` line
//! (through the text parser as the server reads it, then the grammar) or a
//! stream connection's input (`mn`/`quit` lines). What must hold is
//! `larder_proto::track_invariants::fuzz_track`'s contract: no panic,
//! determinism, prefixes within their bounds and inside the line, accepted
//! commands round-tripping through their canonical form, stream lines
//! consumed whole. The crate's tests replay the seeds through the same
//! function.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| larder_proto::track_invariants::fuzz_track(data));
