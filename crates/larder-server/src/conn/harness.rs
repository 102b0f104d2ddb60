//! Sessions served in-process, without listeners or worker threads: the
//! whole-session fuzz target (`fuzz/fuzz_targets/session.rs`) and tests
//! drive real [`Session`]s against a real store through this.
//!
//! Each connection is a Unix socket pair: the session owns one end (as a
//! `Stream::Unix`, the same type a Unix-socket client gets) and the harness
//! writes the client's bytes into the other and reads the replies back. A
//! step feeds at most one socket buffer's worth and runs the session until it
//! waits, the way a worker runs it on readiness events, so a client that
//! sends more than fits, or replies that overflow, behave as on a real
//! connection. Panics are not contained here: the fuzz target must see them.
//!
//! [`Harness::check`] states what must hold after any input: the connection
//! budget within its limit (and, once every connection has closed, holding
//! exactly its shelf of kept buffers), the store within `-m`, and every
//! item a walk of the store finds readable with the length the walk gave.

use crate::conn::session::{Session, Status};
use crate::connmem::pool::BufPool;
use crate::net::registry::{ConnInfo, ConnState};
use crate::net::stream::Stream;
use crate::config::{parse_args, Command, Protocol};
use crate::state::server::{Server, Shutdown};
use crate::trace::observe::Obs;
use crate::trace::WorkerTrace;
use larder_store::Lookup;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

/// Bytes written into a connection before its session runs again (below
/// the smallest Unix socket buffer, so a write never blocks).
const STEP: usize = 32 * 1024;
/// Reply bytes kept per connection for the caller to look at (the rest are
/// read, counted and dropped, as a client that reads would).
const KEPT_REPLY: usize = 1 << 20;
/// Session runs per step before the harness calls it stuck.
const MAX_RUNS: usize = 10_000;

/// One client connection.
struct Conn {
    session: Option<Session>,
    peer: UnixStream,
    replies: Vec<u8>,
    reply_bytes: u64,
    /// The first byte the client sent (which protocol it speaks under `-B auto`).
    first: Option<u8>,
}

/// A server and its connections, served on the calling thread.
pub struct Harness {
    srv: Arc<Server>,
    trace: WorkerTrace,
    /// The worker's pool of resting buffers the sessions borrow.
    pool: BufPool,
    conns: Vec<Conn>,
}

impl Harness {
    /// A server with memcached's flags `args` (no listener is bound; `-p`,
    /// `-l` and the like are ignored).
    pub fn new(args: &[&str]) -> Result<Harness, String> {
        let mut all = vec!["-p".to_string(), "0".into(), "-U".into(), "0".into()];
        all.extend(args.iter().map(|s| s.to_string()));
        let settings = match parse_args(all).map_err(|e| e.0)? {
            Command::Run(s) => s,
            _ => return Err("not a run".into()),
        };
        let store = larder_store::Store::new(larder_store::Config {
            memory_limit: settings.memory_limit,
            item_size_max: settings.item_size_max,
            evict: settings.evictions,
            ..larder_store::Config::default()
        })
        .map_err(|e| e.0)?;
        let srv = Arc::new(Server::new(settings, store, crate::state::server::Startup::bare(Shutdown::new())));
        let obs = Obs::new(&srv.insight().observer, srv.settings().observe.enabled, srv.clock().unix_now() - srv.clock().now() as i64);
        let trace = WorkerTrace { obs, log: srv.insight().log.worker_log() };
        let pool = BufPool::new(srv.conns().budget.clone());
        Ok(Harness { srv, trace, pool, conns: Vec::new() })
    }

    /// Open a connection; its index.
    pub fn connect(&mut self) -> std::io::Result<usize> {
        let (ours, peer) = UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        peer.set_nonblocking(true)?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&ours);
        let now = self.srv.clock().now();
        let info = Arc::new(ConnInfo::new(fd, "harness".into(), None, ConnState::Waiting, now));
        let stream = Stream::Unix(mio::net::UnixStream::from_std(ours));
        let session = Session::new(stream, info, now, self.srv.conns().budget.clone(), self.srv.access().credentials.is_none() && !self.srv.settings().sasl);
        self.conns.push(Conn { session: Some(session), peer, replies: Vec::new(), reply_bytes: 0, first: None });
        Ok(self.conns.len() - 1)
    }

    /// Send `bytes` on connection `conn` and serve it until it waits for
    /// more; false once the server has closed it.
    pub fn send(&mut self, conn: usize, bytes: &[u8]) -> bool {
        for chunk in bytes.chunks(STEP) {
            let Some(c) = self.conns.get_mut(conn) else { return false };
            if c.session.is_none() {
                return false;
            }
            c.first = c.first.or(chunk.first().copied());
            let mut written = 0;
            while written < chunk.len() {
                match c.peer.write(&chunk[written..]) {
                    Ok(n) => written += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => return false,
                }
            }
            self.serve(conn);
            if written < chunk.len() && !self.send(conn, &chunk[written..]) {
                return false;
            }
        }
        if bytes.is_empty() {
            self.serve(conn);
        }
        self.conns[conn].session.is_some()
    }

    /// The client closes its side; the session sees the end and closes.
    pub fn hang_up(&mut self, conn: usize) {
        if let Some(c) = self.conns.get_mut(conn) {
            let _ = c.peer.shutdown(std::net::Shutdown::Write);
            self.serve(conn);
            self.close(conn);
        }
    }

    /// Replies received on `conn` so far (the first [`KEPT_REPLY`] bytes),
    /// and how many bytes came in all.
    pub fn replies(&self, conn: usize) -> (&[u8], u64) {
        self.conns.get(conn).map_or((&[][..], 0), |c| (&c.replies[..], c.reply_bytes))
    }

    /// Whether `conn` speaks the binary protocol (`-B binary`, or its first
    /// byte under `-B auto`; `-Y` connections start in text).
    pub fn speaks_binary(&self, conn: usize) -> bool {
        let first = self.conns.get(conn).and_then(|c| c.first);
        match self.srv.settings().protocol {
            Protocol::Binary => true,
            Protocol::Ascii => false,
            Protocol::Auto => self.srv.access().credentials.is_none() && first.is_some_and(larder_proto::binary::is_binary),
        }
    }

    /// The store's segment size and the largest item (`-I`): the lengths
    /// around which the interesting paths switch.
    pub fn segment_size(&self) -> usize {
        self.srv.store().stats().segment_size as usize
    }

    pub fn item_size_max(&self) -> usize {
        self.srv.settings().item_size_max
    }

    /// Whether the server closed `conn`.
    pub fn is_closed(&self, conn: usize) -> bool {
        self.conns.get(conn).is_none_or(|c| c.session.is_none())
    }

    /// Run the session until it waits for input, reading its replies as
    /// a client would (so output it paused on is taken and it runs again).
    fn serve(&mut self, conn: usize) {
        let srv = &*self.srv;
        let ws = &srv.counters().workers[0];
        for _ in 0..MAX_RUNS {
            let c = &mut self.conns[conn];
            let Some(session) = c.session.as_mut() else { return };
            let status = session.on_event(srv, ws, &mut self.trace, srv.clock().now(), &srv.conns().budget, &mut self.pool, true);
            let drained = drain(&mut c.peer, &mut c.replies, &mut c.reply_bytes);
            match status {
                Status::Close | Status::Watch => return self.close(conn),
                // Released at once (no other client will write the key).
                Status::Parked => {
                    if let Some(t) = session.take_ticket() {
                        srv.stampede().coalescer.abandon(&t);
                    }
                    session.unpark();
                }
                Status::Again => {}
                Status::Idle if drained == 0 => {
                    // As the worker's housekeeping would, sooner: the
                    // buffers it kept go back (conn::worker's holders).
                    session.release_buffers(&mut self.pool, &srv.conns().budget);
                    return;
                }
                Status::Idle => {}
            }
        }
        panic!("a session ran {MAX_RUNS} times in one step without waiting");
    }

    fn close(&mut self, conn: usize) {
        let c = &mut self.conns[conn];
        if let Some(mut s) = c.session.take() {
            if let Some(t) = s.take_ticket() {
                self.srv.stampede().coalescer.abandon(&t);
            }
            s.stream_mut().abandon();
            self.srv.conns().registry.remove(s.info.fd);
        }
        drain(&mut c.peer, &mut c.replies, &mut c.reply_bytes);
    }

    /// Close every connection the server has not closed.
    pub fn close_all(&mut self) {
        for i in 0..self.conns.len() {
            self.close(i);
        }
    }

    /// What must hold whatever the clients sent: see the module docs.
    pub fn check(&self) -> Result<(), String> {
        let budget = &self.srv.conns().budget;
        if budget.used() > budget.limit() {
            return Err(format!("connection budget used {} past its limit {}", budget.used(), budget.limit()));
        }
        if self.conns.iter().all(|c| c.session.is_none()) {
            let (read, write) = budget.shelved_bytes();
            if budget.used() != read + write {
                return Err(format!("all connections closed, yet the budget holds {} beyond its shelf ({read} + {write})", budget.used()));
            }
        }
        let store = &self.srv.store();
        let stats = store.stats();
        if stats.memory_used > stats.limit_maxbytes {
            return Err(format!("store uses {} past -m {}", stats.memory_used, stats.limit_maxbytes));
        }
        let now = self.srv.clock().now();
        let mut walked = Vec::new();
        for shard in 0..store.shard_count() {
            store.for_each_item_in_shard(shard, now, |key, item| walked.push((key.to_vec(), item.value_len)));
        }
        for (key, len) in walked {
            match store.get(&key, now, |item| item.value.len() as u64) {
                Lookup::Hit(n) if n == len => {}
                Lookup::Hit(n) => return Err(format!("key {key:?}: a walk says {len} bytes, a read {n}")),
                // (an item may expire between the walk and the read)
                Lookup::Expired | Lookup::Flushed => {}
                Lookup::Miss => return Err(format!("key {key:?}: walked but not found")),
            }
        }
        Ok(())
    }
}

/// Read what the server sent; bytes read.
fn drain(peer: &mut UnixStream, kept: &mut Vec<u8>, total: &mut u64) -> usize {
    let mut buf = [0u8; 64 * 1024];
    let mut n = 0;
    loop {
        match peer.read(&mut buf) {
            Ok(0) => return n,
            Ok(got) => {
                n += got;
                *total += got as u64;
                let room = KEPT_REPLY.saturating_sub(kept.len()).min(got);
                kept.extend_from_slice(&buf[..room]);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return n,
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.close_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_stores_and_reads_back_through_the_harness() {
        let mut h = Harness::new(&["-m", "8"]).unwrap();
        let c = h.connect().unwrap();
        assert!(h.send(c, b"set k 1 0 3\r\nabc\r\nget k\r\n"));
        assert_eq!(h.replies(c).0, b"STORED\r\nVALUE k 1 3\r\nabc\r\nEND\r\n");
        h.check().unwrap();
        h.hang_up(c);
        assert!(h.is_closed(c));
        h.check().unwrap();
    }

    #[test]
    fn the_124_byte_binary_request_and_the_rest_of_its_key() {
        let mut h = Harness::new(&["-m", "64"]).unwrap();
        let c = h.connect().unwrap();
        let mut req = vec![0x80, 0x01, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0x03, 0x0d, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        req.resize(124, 0);
        assert!(h.send(c, &req));
        h.check().unwrap();
        assert!(!h.send(c, &vec![0u8; 24 + 255 + 65535 - 124]));
        assert!(h.replies(c).0.ends_with(b"Invalid arguments"));
        h.check().unwrap();
    }

    #[test]
    fn a_large_value_lands_in_pieces() {
        let mut h = Harness::new(&["-m", "64", "-I", "4m"]).unwrap();
        let c = h.connect().unwrap();
        let value = vec![b'v'; 3_000_000];
        let mut req = b"set big 0 0 3000000\r\n".to_vec();
        req.extend_from_slice(&value);
        req.extend_from_slice(b"\r\nmn\r\n");
        assert!(h.send(c, &req));
        assert_eq!(h.replies(c).0, b"STORED\r\nMN\r\n");
        assert!(h.send(c, b"get big\r\n"));
        assert_eq!(h.replies(c).1, 12 + 21 + 3_000_000 + 7);
        h.check().unwrap();
    }
}
