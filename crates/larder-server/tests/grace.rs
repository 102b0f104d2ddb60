//! Grace mode end to end: one getter refills an expired key, the others get
//! the old value at once; a lapsed winner is replaced; delete ends grace.
//! The clock is moved with `debugtime` (enabled by `-o debugtime`).

mod common;

use common::Larder;

#[test]
fn one_refiller_others_served_stale() {
    let l = Larder::start(&["-o", "grace=30s,grace_lease=5s,debugtime"]);
    let (mut a, mut b, mut c) = (l.connect(), l.connect(), l.connect());
    a.expect(b"set page:1 7 10 3\r\nold\r\n", b"STORED\r\n");
    a.expect(b"debugtime 11\r\n", b"OK\r\n");
    // The first getter after expiry misses and refills...
    a.expect(b"get page:1\r\n", b"END\r\n");
    // ...everyone else keeps getting the old value, without waiting.
    b.expect(b"get page:1\r\n", b"VALUE page:1 7 3\r\nold\r\nEND\r\n");
    c.expect(b"get page:1\r\n", b"VALUE page:1 7 3\r\nold\r\nEND\r\n");
    a.expect(b"set page:1 7 10 3\r\nnew\r\n", b"STORED\r\n");
    b.expect(b"get page:1\r\n", b"VALUE page:1 7 3\r\nnew\r\nEND\r\n");
    // Next round: the winner never sets; after the lease another getter wins.
    a.expect(b"debugtime 11\r\n", b"OK\r\n");
    c.expect(b"get page:1\r\n", b"END\r\n");
    b.expect(b"get page:1\r\n", b"VALUE page:1 7 3\r\nnew\r\nEND\r\n");
    a.expect(b"debugtime 6\r\n", b"OK\r\n");
    b.expect(b"get page:1\r\n", b"END\r\n");
    c.expect(b"get page:1\r\n", b"VALUE page:1 7 3\r\nnew\r\nEND\r\n");
    assert_eq!(a.stat("larder_grace_wins"), 3);
    assert_eq!(a.stat("larder_grace_winner_timeouts"), 1);
    assert_eq!(a.stat("larder_grace_hits"), 4);
    // Past grace the value is gone for everyone.
    a.expect(b"debugtime 31\r\n", b"OK\r\n");
    b.expect(b"get page:1\r\n", b"END\r\n");
    c.expect(b"get page:1\r\n", b"END\r\n");
}

#[test]
fn delete_ends_grace_and_prefixes_choose_who_gets_it() {
    let l = Larder::start(&["-o", "grace_prefix=page:30s,debugtime"]);
    let mut a = l.connect();
    a.expect(b"set page:1 0 5 1\r\nx\r\nset user:1 0 5 1\r\ny\r\n", b"STORED\r\nSTORED\r\n");
    a.expect(b"debugtime 6\r\n", b"OK\r\n");
    // No grace outside the prefix.
    a.expect(b"get user:1\r\n", b"END\r\n");
    a.expect(b"get user:1\r\n", b"END\r\n");
    a.expect(b"get page:1\r\n", b"END\r\n");
    a.expect(b"get page:1\r\n", b"VALUE page:1 0 1\r\nx\r\nEND\r\n");
    a.expect(b"delete page:1\r\n", b"NOT_FOUND\r\n");
    a.expect(b"get page:1\r\n", b"END\r\n");
    a.expect(b"get page:1\r\n", b"END\r\n");
}
