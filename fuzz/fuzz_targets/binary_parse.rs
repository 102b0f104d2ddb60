//! Fuzz the binary protocol parser: any byte stream, parsed packet after
//! packet as a server advances through it (consumed, then swallowed
//! bytes), with `larder_proto::invariants::check_binary_stream`: no panic,
//! progress, results that depend only on the bytes consumed, slices inside
//! the buffer, shorter prefixes incomplete, the request re-encoded parsing
//! to an equal one, and a request waiting for its value laid out
//! (`waiting_shape`) inside the bytes received and parsing the same with
//! its value received aside.
//!
//! The first byte picks the mode: without SASL (`parse`), or with `-S`
//! (`parse_sasl`) on a connection that has or has not authenticated; and
//! the limits (the default `-I`, or a tiny one so that too-large paths are
//! reached by short inputs): `invariants::fuzz_binary`, which the crate's
//! tests also run over the seeds and regressions. Header lengths are
//! whatever the bytes say: the corpus holds hostile ones
//! (fuzz/corpus/binary_parse/README).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| larder_proto::invariants::fuzz_binary(data));
