//! Protocol changes of memcached releases after 1.6.38 that the
//! tests/reference-1638 suite cannot compare (its reference server predates
//! them), checked against what doc/protocol.txt and the release say:
//! 1.6.40's conditional `mg C<cas>` fetch; and `delete k noreplY`, which
//! memcached's proxy sends for a client's `noreply` (accepted and answered;
//! every other extra token refused as 1.6.38 refuses it). (The 1.6.20-1.6.38
//! changes are compared with the real 1.6.38 there.)

mod common;

use common::Larder;

/// 1.6.40: "If a CAS token is supplied with C, and a 'v' flag is supplied,
/// only return the value if the CAS flag does NOT match"; other flags act
/// as usual (a `T` still touches).
#[test]
fn mg_c_withholds_a_value_whose_cas_matches() {
    let l = Larder::start(&[]);
    let mut c = l.connect();
    c.expect(b"ms k 2 E500\r\nva\r\n", b"HD\r\n");
    c.expect(b"mg k C500 v c\r\n", b"HD c500\r\n");
    c.expect(b"mg k C99999 v c\r\n", b"VA 2 c500\r\nva\r\n");
    // Without v there is no value to withhold; s still reports the size.
    c.expect(b"mg k C500 s\r\n", b"HD s2\r\n");
    // T applies whether or not the CAS matched.
    c.expect(b"mg k C500 v T100\r\n", b"HD\r\n");
    c.expect(b"mg k t\r\n", b"HD t100\r\n");
    // A miss is a miss.
    c.expect(b"mg nope C1 v\r\n", b"EN\r\n");
}

/// 1.6.40's parser ignores whatever follows the key of `delete` but a last
/// token spelled exactly `noreply`: memcached's own proxy forwards
/// `delete k noreply` as `delete k noreplY`, which 1.6.18-1.6.38 refuse.
#[test]
fn delete_accepts_the_proxys_noreply_and_refuses_other_tokens() {
    let l = Larder::start(&[]);
    let mut c = l.connect();
    // memcached's proxy sends `noreplY` for a client's `noreply` and wants
    // the reply: accepted and answered.
    for extra in [&b" noreplY"[..], b" 0 noreplY", b" 0"] {
        c.expect(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n");
        let line = [&b"delete k"[..], extra, b"\r\n"].concat();
        c.expect(&line, b"DELETED\r\n");
    }
    // Anything else is refused as memcached 1.6.18 and 1.6.38 refuse it
    // (their t/issue_3.t), and the key stays.
    c.expect(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n");
    for extra in [&b" 5"[..], b" noreply 0", b" 0 0"] {
        let line = [&b"delete k"[..], extra, b"\r\n"].concat();
        c.expect(&line, b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n");
    }
    c.expect(b"delete k x y z\r\n", b"ERROR\r\n");
    c.expect(b"get k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n");
    // A refused delete with noreply stays silent (and deletes nothing).
    c.expect(b"delete k 7 noreply\r\nmn\r\n", b"MN\r\n");
    c.expect(b"get k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n");
    c.expect(b"delete\r\n", b"ERROR\r\n");
}
