//! The meta `E` flag (explicit CAS), which memcached added after 1.6.18:
//! every write path gives the item the client's CAS.

mod common;

use common::Larder;

#[test]
fn e_sets_the_cas_on_ms_ma_md_and_vivify() {
    let l = Larder::start(&[]);
    let mut c = l.connect();
    c.expect(b"ms k 2 E1234 c\r\nhi\r\n", b"HD c1234\r\n");
    c.expect(b"mg k c v\r\n", b"VA 2 c1234\r\nhi\r\n");
    // A compare-and-set against the explicit CAS works like any other.
    c.expect(b"ms k 2 C1234 E2000 c\r\nho\r\n", b"HD c2000\r\n");
    c.expect(b"ms k 2 C1234 c\r\nxx\r\n", b"EX c0\r\n");
    // ma: an existing counter, and one vivified by N.
    c.expect(b"ms n 1\r\n5\r\n", b"HD\r\n");
    c.expect(b"ma n E77 c v\r\n", b"VA 1 c77\r\n6\r\n");
    c.expect(b"ma fresh N0 J10 E55 c v\r\n", b"VA 2 c55\r\n10\r\n");
    // md I: the item turns stale with the given CAS.
    c.expect(b"md k I E999\r\n", b"HD\r\n");
    c.expect(b"mg k c v\r\n", b"VA 2 c999 X W\r\nho\r\n");
    // mg N: a vivified placeholder carries it.
    c.expect(b"mg lease N30 E4242 c\r\n", b"HD c4242 W\r\n");
    c.expect(b"mg k c Ex\r\n", b"CLIENT_ERROR bad token in command line format\r\n");
}
