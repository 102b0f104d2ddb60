//! Expired items are freed within about a second of expiring, without a
//! client reading them and without memory pressure (`Store::reclaim_expired`
//! run by the workers), and `stats` counts them truthfully. The clock is
//! moved with `debugtime` (enabled by `-o debugtime`).

mod common;

use common::Larder;
use std::time::{Duration, Instant};

#[test]
fn expired_segments_are_reclaimed_without_being_read() {
    let l = Larder::start(&["-m", "64", "-t", "2", "-o", "debugtime"]);
    let mut c = l.connect();
    let value = vec![b'x'; 1000];
    let mut req = Vec::new();
    for i in 0..2000 {
        // Even keys live 5 s, odd ones forever.
        let exptime = if i % 2 == 0 { 5 } else { 0 };
        req.extend_from_slice(format!("set k{i} 0 {exptime} {} noreply\r\n", value.len()).as_bytes());
        req.extend_from_slice(&value);
        req.extend_from_slice(b"\r\n");
    }
    c.send(&req);
    c.expect(b"mn\r\n", b"MN\r\n");
    assert_eq!(c.stat("curr_items"), 2000);
    let bytes_before = c.stat("bytes");
    let segments_before = c.stat("larder_segments_used");
    c.expect(b"debugtime 10\r\n", b"OK\r\n");
    // The workers sweep once a second; give them a few.
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.stat("reclaimed") < 1000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(c.stat("reclaimed"), 1000, "every expired item, counted once");
    assert_eq!(c.stat("curr_items"), 1000);
    assert_eq!(c.stat("evictions"), 0);
    assert_eq!(c.stat("bytes") * 2, bytes_before, "the expired half's bytes are gone");
    assert_eq!(c.stat("larder_bytes_dead"), 0, "no expired item shares a segment with a live one");
    assert!(c.stat("larder_segments_used") < segments_before);
    assert!(c.stat("larder_segments_free") > 0, "freed segments wait for reuse");
    // Nothing that should stay went: every long-lived key reads back.
    for i in (1..2000).step_by(2) {
        c.send(format!("mg k{i} v\r\n").as_bytes());
        assert_eq!(c.line(), "VA 1000\r\n");
        assert_eq!(c.exact(1002), [&value[..], b"\r\n"].concat());
    }
    c.expect(b"get k0\r\n", b"END\r\n");
    assert_eq!(c.stat("get_expired"), 0, "k0 was already gone, not found expired");
}
