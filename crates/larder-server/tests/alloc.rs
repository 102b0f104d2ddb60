//! A warm connection serves requests without allocating.
//!
//! Runs only with `--features alloc-count` (scripts/test does), which makes
//! larder count every allocation and report it as `larder_allocations`.

#![cfg(feature = "alloc-count")]

mod common;

use common::tls::TlsClient;
use common::{Client, Larder};

fn allocations(c: &mut Client) -> u64 {
    c.stat("larder_allocations")
}

/// What a batch needs of a connection, plain or TLS.
trait Lines {
    fn send(&mut self, bytes: &[u8]);
    fn line(&mut self) -> String;
}

impl Lines for Client {
    fn send(&mut self, bytes: &[u8]) {
        Client::send(self, bytes)
    }
    fn line(&mut self) -> String {
        Client::line(self)
    }
}

impl Lines for TlsClient {
    fn send(&mut self, bytes: &[u8]) {
        TlsClient::send(self, bytes)
    }
    fn line(&mut self) -> String {
        TlsClient::line(self)
    }
}

/// A batch of pipelined requests covering the hot paths, and its replies.
fn batch(c: &mut impl Lines, round: usize) {
    let mut req = Vec::new();
    for i in 0..50 {
        let v = format!("value-{round}-{i}");
        req.extend_from_slice(format!("set k{i} 1 0 {}\r\n{v}\r\n", v.len()).as_bytes());
    }
    req.extend_from_slice(b"get k0 k1 k2 k3 k4 k5 k6 k7 k8 k9 missing\r\n");
    req.extend_from_slice(b"gets k10\r\ndelete k11\r\ndelete nope\r\ntouch k12 100\r\nincr n 1\r\nappend k13 0 0 1\r\nx\r\n");
    c.send(&req);
    for _ in 0..50 {
        assert_eq!(c.line(), "STORED\r\n");
    }
    for _ in 0..10 {
        assert!(c.line().starts_with("VALUE"));
        c.line();
    }
    assert_eq!(c.line(), "END\r\n");
    assert!(c.line().starts_with("VALUE k10"));
    c.line();
    for want in ["END\r\n", "DELETED\r\n", "NOT_FOUND\r\n", "TOUCHED\r\n"] {
        assert_eq!(c.line(), want);
    }
    c.line(); // incr: a number
    assert_eq!(c.line(), "STORED\r\n");
}

#[test]
fn warm_requests_do_not_allocate() {
    let l = Larder::start(&["-t", "1"]);
    let mut c = l.connect();
    c.expect(b"set n 0 0 1\r\n0\r\n", b"STORED\r\n");
    for round in 0..20 {
        batch(&mut c, round);
    }
    // What `stats` itself costs, measured the same way.
    let a = allocations(&mut c);
    let b = allocations(&mut c);
    let stats_cost = b - a;
    for round in 20..220 {
        batch(&mut c, round);
    }
    let after = allocations(&mut c);
    let during = after - b - stats_cost;
    // 200 batches × 66 requests: a per-request allocation would show as
    // thousands. Allow a handful for one-off growth.
    assert!(during <= 8, "{during} allocations for 13,200 warm requests (stats costs {stats_cost})");
}

/// With `-S`, the per-request "is this connection authenticated" check is a
/// bool handed to the binary parser: an authenticated binary connection
/// allocates no more than any other warm one.
#[test]
fn warm_sasl_requests_do_not_allocate() {
    use common::sasl::{packet, packet_ext, Conf, Server, PASSWORD};
    let Some(conf) = Conf::new() else { return };
    let srv = Server::larder(&conf, &["-t", "1"]);
    let mut c = srv.connect();
    assert_eq!(c.plain(PASSWORD).status, 0);
    let batch = |c: &mut common::sasl::Bin, round: usize| {
        let mut req = Vec::new();
        for i in 0..50 {
            let v = format!("value-{round}-{i}");
            req.extend(packet_ext(0x11, format!("k{i}").as_bytes(), &[0; 8], v.as_bytes(), i)); // setq
        }
        for i in 0..50 {
            req.extend(packet(0x0d, format!("k{i}").as_bytes(), b"", i)); // getkq
        }
        req.extend(packet(0x0a, b"", b"", 999)); // noop ends the batch
        c.send(&req);
        for _ in 0..50 {
            assert_eq!(c.reply().status, 0);
        }
        assert_eq!(&c.reply().raw[12..16], &999u32.to_be_bytes());
    };
    for round in 0..20 {
        batch(&mut c, round);
    }
    let a = c.stat_in(b"larder", "larder_allocations");
    let b = c.stat_in(b"larder", "larder_allocations");
    let stats_cost = b - a;
    for round in 20..220 {
        batch(&mut c, round);
    }
    let during = c.stat_in(b"larder", "larder_allocations") - b - stats_cost;
    assert!(during <= 8, "{during} allocations for 20,200 warm authenticated requests (stats costs {stats_cost})");
}

/// The same over TLS: after rustls's handshake larder's own record layer
/// (`net::tls_record`) opens and seals records in place in buffers sized
/// once per connection, so a warm TLS connection allocates no more than a
/// plain one (rustls alone would allocate per record each way:
/// tests/tls_record_alloc.rs). `stats` is read over a plain listener, so
/// its own cost stays out of the TLS connection's.
#[test]
fn warm_tls_requests_do_not_allocate() {
    let tls = common::free_port();
    let mut args = common::tls::server_args(common::tls::certs());
    for a in ["-t", "1", "-l", "notls:127.0.0.1", "-l"] {
        args.push(a.into());
    }
    args.push(format!("127.0.0.1:{tls}"));
    let l = Larder::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut admin = l.connect();
    let mut c = TlsClient::connect(tls);
    c.send(b"set n 0 0 1\r\n0\r\nset s 0 0 1\r\nx\r\n");
    assert_eq!(c.line(), "STORED\r\n");
    assert_eq!(c.line(), "STORED\r\n");
    for round in 0..20 {
        batch(&mut c, round);
    }
    let a = allocations(&mut admin);
    let b = allocations(&mut admin);
    let stats_cost = b - a;
    for round in 20..220 {
        batch(&mut c, round);
    }
    let after = allocations(&mut admin);
    let pipelined = after - b - stats_cost;
    // One request per round trip.
    for _ in 0..200 {
        c.send(b"get s\r\n");
        assert_eq!(c.line(), "VALUE s 0 1\r\n");
        c.line();
        assert_eq!(c.line(), "END\r\n");
    }
    let single = allocations(&mut admin) - after - stats_cost;
    eprintln!("TLS: {pipelined} allocations for 200 round trips of 66 requests, {single} for 200 of 1 request");
    // The plain connections' bound: a handful for one-off growth.
    assert!(pipelined <= 8, "{pipelined} allocations for 200 pipelined round trips (13,200 requests)");
    assert!(single <= 8, "{single} allocations for 200 single-request round trips");
}

/// Warm UDP multi-gets do not allocate either: their values are referenced
/// in the output and copied from the store a datagram at a time, into
/// buffers kept between requests.
#[test]
fn warm_udp_gets_do_not_allocate() {
    let port = common::free_port();
    let port_s = port.to_string();
    let l = Larder::start(&["-t", "1", "-U", &port_s]);
    let mut c = l.connect();
    let mut keys = String::new();
    for i in 0..10 {
        let v = format!("{i}").repeat(3000);
        c.expect(format!("set u{i} 0 0 3000\r\n{v}\r\n").as_bytes(), b"STORED\r\n");
        keys.push_str(&format!(" u{i}"));
    }
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let mut req = vec![0, 1, 0, 0, 0, 1, 0, 0];
    req.extend_from_slice(format!("get{keys} missing\r\n").as_bytes());
    let mut buf = [0u8; 2048];
    let mut rounds = |n: usize| {
        for _ in 0..n {
            sock.send_to(&req, ("127.0.0.1", port)).unwrap();
            let (mut got, mut total, mut bytes) = (0, 1, 0);
            while got < total {
                let k = sock.recv(&mut buf).expect("the reply's datagrams");
                total = u16::from_be_bytes([buf[4], buf[5]]) as usize;
                got += 1;
                bytes += k - 8;
            }
            assert_eq!(bytes, 10 * ("VALUE u0 0 3000\r\n".len() + 3002) + 5);
        }
    };
    rounds(20);
    let a = allocations(&mut c);
    let b = allocations(&mut c);
    let stats_cost = b - a;
    rounds(500);
    let after = allocations(&mut c);
    let during = after - b - stats_cost;
    assert!(during <= 8, "{during} allocations for 500 warm UDP multi-gets (stats costs {stats_cost})");
}
