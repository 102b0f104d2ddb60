//! Protocol changes of memcached releases after 1.6.38 that the
//! tests/reference-1638 suite cannot compare (its reference server predates
//! them), checked against what doc/protocol.txt and the release say:
//! 1.6.40's conditional `mg C<cas>` fetch; `delete k noreplY`, which
//! memcached's proxy sends for a client's `noreply` (answered, as every
//! token after the key is ignored); and the framing of 1.6.40's request
//! parser around refused storage lines (expected replies measured with
//! memcached 1.6.45). (The 1.6.20-1.6.38 changes are compared with the
//! real 1.6.38 there.)

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
/// (A final `noreply` after other tokens silences the reply.)
#[test]
fn delete_ignores_every_token_after_the_key_but_a_final_noreply() {
    let l = Larder::start(&[]);
    let mut c = l.connect();
    // memcached 1.6.40 and later: whatever follows the key is ignored
    // (1.6.18 and 1.6.38 took only `0` and refused the rest with `CLIENT_ERROR
    // bad command line format.  Usage: ...`, their t/issue_3.t, which 1.6.45
    // dropped). The proxy's `noreplY` is one such token: answered.
    for extra in [&b" noreplY"[..], b" 0 noreplY", b" 0", b" 5", b" noreply 0", b" 0 0", b" x y z", b" 0 noreply x"] {
        c.expect(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n");
        let line = [&b"delete k"[..], extra, b"\r\n"].concat();
        c.expect(&line, b"DELETED\r\n");
    }
    // A final noreply silences it, after any tokens.
    c.expect(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n");
    c.expect(b"delete k 7 noreply\r\nmn\r\n", b"MN\r\n");
    c.expect(b"get k\r\n", b"END\r\n");
    c.expect(b"delete\r\n", b"CLIENT_ERROR bad command line format\r\n");
}

/// 1.6.40's parser: a storage line refused once its length is read has its
/// data block swallowed (silently under a final `noreply`), arriving whole
/// or in pieces; a line refused before that swallows nothing, so its data
/// line is read as a command. Replies as memcached 1.6.45 gives them
/// (1.6.18 and 1.6.38 answered `ERROR` twice for most of these).
#[test]
fn refused_storage_lines_swallow_their_block_as_memcached_1_6_45() {
    let l = Larder::start(&[]);
    let mut c = l.connect();
    let bad = b"CLIENT_ERROR bad command line format\r\n";
    // memcached 1.6.45's t/cas.t: a cas without its unique.
    c.expect(b"cas foo 0 0 6 \r\nbarva2\r\n", bad);
    c.expect(b"cas foo 0 0 6 noreply\r\nbarva2\r\nmn\r\n", b"MN\r\n");
    c.expect(b"cas k 0 0 1\r\nx\r\n", bad);
    // Bad flags, exptime or key: swallowed too.
    c.expect(b"set k x 0 1\r\nx\r\n", bad);
    c.expect(b"set k 0 x 1 noreply\r\nx\r\nmn\r\n", b"MN\r\n");
    let long = [&b"set "[..], &[b'k'; 251], b" 0 0 3\r\nabc\r\n"].concat();
    c.expect(&long, bad);
    // Too few tokens or a bad length: the data line is a command of its own
    // (`x` is too short a line: a bad format too); noreply does not apply.
    c.expect(b"set k 0\r\nx\r\n", &[&bad[..], bad].concat());
    c.expect(b"set k 0 0 z noreply\r\nhello\r\n", &[&bad[..], b"ERROR\r\n"].concat());
    // Only the last token is noreply; tokens in between are ignored.
    c.expect(b"set k 0 0 1 noreply extra\r\nx\r\n", b"STORED\r\n");
    c.expect(b"set k 0 0 1 extra noreply\r\ny\r\nget k\r\n", b"VALUE k 0 1\r\ny\r\nEND\r\n");
    // The swallowed block may arrive in pieces; as in memcached, the
    // refusal is sent once the block is gone.
    c.send(b"cas k 0 0 10 x\r\n01234");
    std::thread::sleep(std::time::Duration::from_millis(50));
    c.send(b"567");
    std::thread::sleep(std::time::Duration::from_millis(50));
    c.expect(b"89\r\nget k\r\n", &[&bad[..], b"VALUE k 0 1\r\ny\r\nEND\r\n"].concat());
}
