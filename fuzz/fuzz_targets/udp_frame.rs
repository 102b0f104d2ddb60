//! Fuzz UDP datagrams: the 8-byte frame header
//! (`larder_server::conn::udp::frame`, the pure part of the UDP handler)
//! and the payload after it, read as the handler reads it: text or binary
//! by its first byte, parsed as a pipelined stream under the parser
//! invariants (`larder_proto::invariants`).
#![no_main]

use larder_proto::invariants::{check_binary_stream, check_stream};
use larder_proto::{binary, Limits};
use larder_server::conn::udp::frame;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let be16 = |at: usize| u16::from_be_bytes([data[at], data[at + 1]]);
    let Some(f) = frame(data) else {
        // Dropped: too short for a header, or one of several datagrams.
        assert!(data.len() < 8 || be16(4) != 1, "a whole one-datagram request was dropped");
        return;
    };
    assert!(data.len() >= 8);
    assert_eq!((f.request_id, f.sequence, f.total), ([data[0], data[1]], be16(2), 1));
    assert_eq!(f.payload.as_ptr(), data[8..].as_ptr());
    assert_eq!(f.payload.len(), data.len() - 8);
    let limits = Limits::default();
    match f.payload.first() {
        Some(&b) if binary::is_binary(b) => {
            check_binary_stream(f.payload, &limits, None);
        }
        _ => {
            check_stream(f.payload, &limits);
        }
    }
});
