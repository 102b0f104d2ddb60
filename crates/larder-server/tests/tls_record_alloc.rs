//! Why `net::tls` stays on rustls's buffered API: rustls 0.23's unbuffered
//! API (`UnbufferedServerConnection`) allocates exactly as the buffered
//! `ServerConnection` does, one buffer per application-data record it
//! decrypts and one per record it encrypts, so moving to it would not make
//! a warm TLS connection allocation-free (tests/alloc.rs pins what larder
//! allocates per round trip).
//!
//! Where, in rustls 0.23.46's source: a decrypted record's plaintext is
//! copied into a fresh `Vec` (`CommonState::take_received_plaintext`:
//! `bytes.into_vec()`), which the unbuffered `ReadTraffic::next_record`
//! then pops (its comment: in-place decryption is future work); and
//! `WriteTraffic::encrypt` goes through the same
//! `RecordLayer::encrypt_outgoing` as the buffered writer, whose
//! `MessageEncrypter::encrypt` returns an owned record
//! (`PrefixedPayload::with_capacity`) that is then copied into the caller's
//! buffer and dropped.
//!
//! This test runs both server APIs in-process against one rustls client,
//! with larder's own TLS configuration (`state::tls::build_config`), and
//! counts the server side's allocations over warm round trips of one
//! request each. It fails when a rustls upgrade makes the unbuffered API
//! cheaper than the buffered one: then `net::tls` should move to it and
//! tests/alloc.rs's TLS bound should drop to the plain connections' one.

use larder_server::state::tls::{build_config, TlsSettings};
use rustls::server::UnbufferedServerConnection;
use rustls::unbuffered::ConnectionState;
use rustls::{ClientConnection, ServerConnection};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::sync::Arc;

mod common;

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
    let c = common::tls::certs();
    let settings = TlsSettings {
        enabled: true,
        chain_cert: Some(c.server_crt.display().to_string()),
        key: Some(c.server_key.display().to_string()),
        ..TlsSettings::default()
    };
    Arc::new(build_config(&settings, &Default::default()).expect("larder's TLS configuration"))
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

#[test]
fn rustls_unbuffered_api_allocates_per_record_as_the_buffered_one_does() {
    let unbuffered = unbuffered_allocations();
    let buffered = buffered_allocations();
    eprintln!(
        "rustls server side, {TRIPS} warm round trips of one request (one record each way): \
         unbuffered API {unbuffered} allocations, buffered API {buffered}"
    );
    // The buffered API's figure is what tests/alloc.rs measures through
    // larder (2 per round trip); it must hold here too, or this test no
    // longer measures what it says.
    assert!(buffered >= 2 * TRIPS, "buffered API: {buffered} allocations for {TRIPS} round trips, expected one per record each way");
    assert!(
        unbuffered >= 2 * TRIPS,
        "rustls's unbuffered API made {unbuffered} allocations for {TRIPS} round trips (buffered: {buffered}): it no longer \
         allocates per record; move net::tls to it and lower tests/alloc.rs's TLS bound to the plain connections' one"
    );
}
