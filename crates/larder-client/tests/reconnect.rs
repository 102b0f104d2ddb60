//! What a caller sees when a pooled connection dies under it: a server
//! restart closes every idle connection, and the next request must go out on
//! a fresh one instead of failing ("connection closed"); a read whose
//! connection fails mid-request is repeated once on another connection; a
//! write whose bytes may have reached the server is not repeated.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use larder_client::{Client, Config, Error};

#[test]
fn requests_after_a_server_restart_use_fresh_connections() {
    let port = larder_testkit::free_port();
    let server = common::OnPort::start(port);
    let mut cfg = Config::new([server.addr()]);
    cfg.pool_size = 2;
    let c = Client::new(cfg).unwrap();
    c.set("k", b"1", 0).unwrap();
    assert_eq!(c.get("k").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(c.pool_counts(0), (1, 1), "one pooled connection to the first process");
    drop(server);
    let server = common::OnPort::start(port);
    // The idle connection is closed by the dead process: neither a read nor
    // a write may fail because of it.
    assert_eq!(c.get("k").unwrap(), None, "cold restart: empty");
    c.set("k", b"2", 0).unwrap();
    assert_eq!(c.get("k").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(c.pool_counts(0), (1, 1), "the dead connection was dropped, not kept");
    drop(server);
}

/// A server that answers each connection's first request (`mg`: `EN`, `ms`:
/// `HD`) and closes the connection when the second one arrives, unanswered,
/// as a process dying between two requests would. Counts the `ms` it read.
fn one_answer_per_connection() -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let sets = Arc::new(AtomicUsize::new(0));
    let sets2 = sets.clone();
    thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let sets = sets2.clone();
            thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                let mut line = String::new();
                for n in 0.. {
                    line.clear();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if line.starts_with("ms ") {
                        sets.fetch_add(1, Ordering::SeqCst);
                        let mut data = String::new();
                        r.read_line(&mut data).unwrap();
                    }
                    if n > 0 {
                        return; // closes without answering
                    }
                    let reply: &[u8] = if line.starts_with("ms ") { b"HD\r\n" } else { b"EN\r\n" };
                    w.write_all(reply).unwrap();
                }
            });
        }
    });
    (addr, sets)
}

#[test]
fn a_read_is_retried_once_and_a_write_is_not() {
    let (addr, sets) = one_answer_per_connection();
    let mut cfg = Config::new([addr]);
    cfg.pool_size = 1;
    let c = Client::new(cfg).unwrap();
    assert_eq!(c.get("a").unwrap(), None);
    // Same pooled connection: the server reads the request and hangs up;
    // the read goes again on a new connection.
    assert_eq!(c.get("a").unwrap(), None);
    assert_eq!(c.metrics().retries, 1);
    // The pooled connection now has served one request; the write reaches the
    // server, which hangs up: the caller gets the error, the write is not sent twice.
    match c.set("b", b"v", 0) {
        Err(Error::Io(_)) => {}
        other => panic!("want an I/O error, got {other:?}"),
    }
    assert_eq!(sets.load(Ordering::SeqCst), 1, "the write was sent once");
    assert_eq!(c.metrics().retries, 1);
    // The broken connection was dropped: the next write opens a new one.
    c.set("b", b"v", 0).unwrap();
    assert_eq!(sets.load(Ordering::SeqCst), 2);
}
