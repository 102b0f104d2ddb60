//! A warm TLS connection allocates nothing per request: larder's own record
//! layer (`net::tls_record`, driven by `net::tls::TlsStream`) opens and
//! seals records in place in buffers sized once per connection. This test
//! runs a real `TlsStream` against a rustls client in-process and counts
//! the server side's allocations over warm round trips (a counting global
//! allocator, per thread): zero, for one request per round trip and for
//! pipelines of many records.
//!
//! Why larder has its own record layer: rustls 0.23.46 allocates once per
//! record it decrypts and once per record it encrypts, in both of its
//! server APIs, and neither takes a caller's buffer. Where, in its source:
//! a decrypted record's plaintext is copied into a fresh `Vec`
//! (`CommonState::take_received_plaintext`: `bytes.into_vec()`), which the
//! unbuffered `ReadTraffic::next_record` then pops (its comment: in-place
//! decryption is future work); and `WriteTraffic::encrypt` goes through
//! the same `RecordLayer::encrypt_outgoing` as the buffered writer, whose
//! `MessageEncrypter::encrypt` returns an owned record
//! (`PrefixedPayload::with_capacity`) that is then copied into the
//! caller's buffer and dropped. The second test measures that, with
//! larder's own TLS configuration, so the reason stays checked: it fails
//! once a rustls upgrade stops allocating per record, and then larder
//! could hand the record layer back to rustls.

use rustls::server::UnbufferedServerConnection;
use rustls::unbuffered::ConnectionState;
use rustls::{ClientConnection, ServerConnection};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::sync::Arc;

mod common;
mod tls_support;

thread_local! {
    /// Allocations made by this thread (the test harness's other threads
    /// stay out of the count).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

fn count() {
    // try_with: no count while the thread-local is being torn down.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every method forwards to the system allocator with the caller's
// arguments unchanged; counting touches only a const-initialised
// thread-local `Cell` (no allocation, no destructor, so no re-entry).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations `f` makes on this thread.
fn counted<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = ALLOCATIONS.with(Cell::get);
    let r = f();
    (r, ALLOCATIONS.with(Cell::get) - before)
}

const REQUEST: &[u8] = b"get k\r\n";
const REPLY: &[u8] = b"VALUE k 0 10\r\n0123456789\r\nEND\r\n";
/// Round trips before counting (handshake leftovers, first-use growth).
const WARM: usize = 20;
/// Round trips counted.
const TRIPS: u64 = 200;

fn server_config() -> Arc<rustls::ServerConfig> {
    tls_support::server_config(|_| {})
}

fn client() -> ClientConnection {
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    ClientConnection::new(common::tls::client_config(Default::default()), name).unwrap()
}

/// Client → wire: what the client has to send.
fn client_out(c: &mut ClientConnection) -> Vec<u8> {
    let mut wire = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut wire).unwrap();
    }
    wire
}

/// Wire → client: feed the server's bytes; the plaintext it yields.
fn client_in(c: &mut ClientConnection, mut wire: &[u8]) -> Vec<u8> {
    while !wire.is_empty() {
        c.read_tls(&mut wire).unwrap();
        c.process_new_packets().unwrap();
    }
    let mut plain = Vec::new();
    match c.reader().read_to_end(&mut plain) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(e) => panic!("client read: {e}"),
    }
    plain
}

/// The server over the unbuffered API, with buffers it owns and reuses
/// (sized once: a record is at most ~16.6 KiB).
struct Unbuffered {
    conn: UnbufferedServerConnection,
    input: Vec<u8>,
    used: usize,
    output: Vec<u8>,
    sent: usize,
    plain: Vec<u8>,
}

impl Unbuffered {
    fn new() -> Unbuffered {
        Unbuffered {
            conn: UnbufferedServerConnection::new(server_config()).unwrap(),
            input: vec![0; 64 * 1024],
            used: 0,
            output: vec![0; 64 * 1024],
            sent: 0,
            plain: Vec::with_capacity(64 * 1024),
        }
    }

    /// Take `wire` from the client, run the state machine until it wants
    /// more input, encrypting `reply` once application data may be sent.
    fn pump(&mut self, wire: &[u8], mut reply: Option<&[u8]>) {
        self.input[self.used..self.used + wire.len()].copy_from_slice(wire);
        self.used += wire.len();
        loop {
            let status = self.conn.process_tls_records(&mut self.input[..self.used]);
            let mut discard = status.discard;
            let mut more = true;
            match status.state.expect("server TLS state") {
                ConnectionState::ReadTraffic(mut r) => {
                    while let Some(record) = r.next_record() {
                        let record = record.unwrap();
                        discard += record.discard;
                        self.plain.extend_from_slice(record.payload);
                    }
                }
                ConnectionState::EncodeTlsData(mut e) => {
                    self.sent += e.encode(&mut self.output[self.sent..]).unwrap();
                }
                ConnectionState::TransmitTlsData(t) => t.done(),
                ConnectionState::BlockedHandshake => more = false,
                ConnectionState::WriteTraffic(mut w) => {
                    if let Some(r) = reply.take() {
                        self.sent += w.encrypt(r, &mut self.output[self.sent..]).unwrap();
                    }
                    more = false;
                }
                other => panic!("unexpected server state {other:?}"),
            }
            self.input.copy_within(discard..self.used, 0);
            self.used -= discard;
            if !more {
                return;
            }
        }
    }

    /// What it encrypted since the last call.
    fn take_output(&mut self) -> Vec<u8> {
        let v = self.output[..self.sent].to_vec();
        self.sent = 0;
        v
    }
}

/// Handshake, warm up, then count the server's allocations over
/// [`TRIPS`] round trips of one request; returns that count.
fn unbuffered_allocations() -> u64 {
    let mut c = client();
    let mut s = Unbuffered::new();
    while c.is_handshaking() {
        let wire = client_out(&mut c);
        s.pump(&wire, None);
        let back = s.take_output();
        client_in(&mut c, &back);
    }
    let mut total = 0;
    for trip in 0..WARM + TRIPS as usize {
        c.writer().write_all(REQUEST).unwrap();
        let wire = client_out(&mut c);
        let ((), n) = counted(|| {
            s.plain.clear();
            s.pump(&wire, Some(REPLY));
        });
        assert_eq!(s.plain, REQUEST, "the server decrypted the request");
        let back = s.take_output();
        assert_eq!(client_in(&mut c, &back), REPLY, "the client decrypted the reply");
        if trip >= WARM {
            total += n;
        }
    }
    total
}

/// The same with the buffered `ServerConnection` (what `net::tls` uses),
/// into reused buffers of the test's own.
fn buffered_allocations() -> u64 {
    let mut c = client();
    let mut s = ServerConnection::new(server_config()).unwrap();
    let mut out: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut plain = vec![0u8; 64 * 1024];
    let mut serve = |s: &mut ServerConnection, mut wire: &[u8], reply: Option<&[u8]>, out: &mut Vec<u8>| -> usize {
        while !wire.is_empty() {
            s.read_tls(&mut wire).unwrap();
            s.process_new_packets().unwrap();
        }
        let got = match s.reader().read(&mut plain) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
            Err(e) => panic!("server read: {e}"),
        };
        if let Some(r) = reply {
            s.writer().write_all(r).unwrap();
        }
        while s.wants_write() {
            s.write_tls(out).unwrap();
        }
        got
    };
    while c.is_handshaking() || s.is_handshaking() {
        let wire = client_out(&mut c);
        out.clear();
        serve(&mut s, &wire, None, &mut out);
        client_in(&mut c, &out);
    }
    let mut total = 0;
    for trip in 0..WARM + TRIPS as usize {
        c.writer().write_all(REQUEST).unwrap();
        let wire = client_out(&mut c);
        out.clear();
        let (got, n) = counted(|| serve(&mut s, &wire, Some(REPLY), &mut out));
        assert_eq!(got, REQUEST.len(), "the server decrypted the request");
        assert_eq!(client_in(&mut c, &out), REPLY, "the client decrypted the reply");
        if trip >= WARM {
            total += n;
        }
    }
    total
}

/// larder's stream: warm round trips of one request (one record each
/// way), then of a pipeline (50 records in, one reply of 50 values out),
/// for every suite. Both counts must be zero.
#[test]
fn warm_tls_round_trips_allocate_nothing() {
    for suite in tls_support::suites() {
        let mut p = tls_support::Pair::new(suite);
        let mut buf = vec![0u8; 16 * 1024];
        let mut single = 0;
        let mut pipelined = 0;
        let mut pipeline = Vec::new();
        let mut replies = Vec::new();
        for i in 0..50 {
            pipeline.push(format!("get key-{i}\r\n").into_bytes());
            replies.extend_from_slice(format!("VALUE key-{i} 0 10\r\n0123456789\r\n").as_bytes());
        }
        replies.extend_from_slice(b"END\r\n");
        for trip in 0..WARM + TRIPS as usize {
            // One request, one reply.
            p.client_send(REQUEST);
            p.client_flush();
            let (got, n) = counted(|| serve(&mut p.server, &mut buf, REQUEST.len(), REPLY));
            assert_eq!(&buf[..got], REQUEST);
            assert_eq!(p.client_recv().unwrap(), REPLY);
            // A pipeline: one record per request in, one large reply out.
            for r in &pipeline {
                p.client_send(r);
            }
            p.client_flush();
            let want: usize = pipeline.iter().map(Vec::len).sum();
            let (got, m) = counted(|| serve(&mut p.server, &mut buf, want, &replies));
            assert_eq!(got, want);
            let mut back = Vec::new();
            while back.len() < replies.len() {
                back.extend(p.client_recv().unwrap());
            }
            assert_eq!(back, replies);
            if trip >= WARM {
                single += n;
                pipelined += m;
            }
        }
        eprintln!("{:?}: {single} allocations over {TRIPS} warm single-request round trips, {pipelined} over {TRIPS} pipelines of 50", suite.suite());
        assert_eq!(single, 0, "{:?}: allocations per single-request round trip", suite.suite());
        assert_eq!(pipelined, 0, "{:?}: allocations per pipelined round trip", suite.suite());
    }
}

/// The server side of one round trip, as the session does it: read until
/// `want` bytes of plaintext are in `buf`, then write `reply` (waiting out
/// a full socket). Returns the bytes read.
fn serve(s: &mut larder_server::net::tls::TlsStream, buf: &mut [u8], want: usize, reply: &[u8]) -> usize {
    let mut got = 0;
    while got < want {
        match s.read(&mut buf[got..]) {
            Ok(0) => panic!("server: end of stream"),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => panic!("server read: {e}"),
        }
    }
    let mut sent = 0;
    while sent < reply.len() {
        match s.write(&reply[sent..]) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => panic!("server write: {e}"),
        }
    }
    while s.wants_write() {
        match s.send_pending() {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => panic!("server send: {e}"),
        }
    }
    got
}

#[test]
fn rustls_alone_allocates_per_record_in_both_apis() {
    let unbuffered = unbuffered_allocations();
    let buffered = buffered_allocations();
    eprintln!(
        "rustls server side, {TRIPS} warm round trips of one request (one record each way): \
         unbuffered API {unbuffered} allocations, buffered API {buffered}"
    );
    assert!(
        buffered >= 2 * TRIPS && unbuffered >= 2 * TRIPS,
        "rustls made {unbuffered} (unbuffered API) and {buffered} (buffered API) allocations for {TRIPS} round trips: it no \
         longer allocates per record, and net::tls_record may no longer be needed (see this file's doc)"
    );
}
