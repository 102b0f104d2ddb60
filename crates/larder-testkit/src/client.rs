//! A raw text-protocol client for tests: bytes in, bytes out, nothing
//! interpreted unless asked (a real client library would hide exactly what
//! the tests check: framing, error strings, pipelining).
//!
//! Every read has a timeout (10 s unless changed), so a server that stops
//! answering fails the test instead of hanging it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How long a read waits before the test fails, unless the test changes it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One connection to a server on 127.0.0.1.
pub struct Client {
    /// The buffered stream; `reader.get_mut()` writes, `reader.get_ref()`
    /// gives the socket (local address, socket options).
    pub reader: BufReader<TcpStream>,
}

impl Client {
    /// Connects to 127.0.0.1:`port` with the default read timeout.
    pub fn connect(port: u16) -> Client {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("connect to 127.0.0.1:{port}: {e}"));
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        Client { reader: BufReader::new(s) }
    }

    /// The socket.
    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    /// How long reads wait (`None`: forever; tests should not).
    pub fn set_read_timeout(&mut self, t: Option<Duration>) {
        self.reader.get_ref().set_read_timeout(t).unwrap();
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).unwrap();
    }

    /// One reply line including `\r\n` (empty at end of stream).
    pub fn line(&mut self) -> String {
        let mut l = String::new();
        self.reader.read_line(&mut l).unwrap();
        l
    }

    /// Exactly `n` bytes.
    pub fn exact(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.reader.read_exact(&mut v).unwrap();
        v
    }

    /// Send `req` and assert the reply is exactly `expected`.
    pub fn expect(&mut self, req: &[u8], expected: &[u8]) {
        self.send(req);
        let got = self.exact(expected.len());
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(expected), "reply to {:?}", String::from_utf8_lossy(req));
    }

    /// Reads until what was received ends with `end`; panics if the server
    /// closes first (showing what did arrive). Everything read is returned,
    /// so pipelined replies come back together.
    pub fn read_until(&mut self, end: &[u8]) -> Vec<u8> {
        let mut got = Vec::new();
        while !got.ends_with(end) {
            let buf = self.reader.fill_buf().unwrap_or_else(|e| panic!("waiting for {:?} after {:?}: {e}", String::from_utf8_lossy(end), String::from_utf8_lossy(&got)));
            assert!(!buf.is_empty(), "closed while waiting for {:?}; got {:?}", String::from_utf8_lossy(end), String::from_utf8_lossy(&got));
            let n = buf.len();
            got.extend_from_slice(buf);
            self.reader.consume(n);
        }
        got
    }

    /// Sends `req` and reads until the reply ends with `end`.
    pub fn roundtrip(&mut self, req: &[u8], end: &[u8]) -> Vec<u8> {
        self.send(req);
        self.read_until(end)
    }

    /// Everything the server sends until it is quiet for `quiet` (or closes).
    /// The read timeout is restored afterwards.
    pub fn read_for(&mut self, quiet: Duration) -> Vec<u8> {
        let before = self.reader.get_ref().read_timeout().unwrap();
        self.set_read_timeout(Some(quiet));
        let mut got = Vec::new();
        loop {
            match self.reader.fill_buf() {
                Ok([]) | Err(_) => break,
                Ok(buf) => {
                    let n = buf.len();
                    got.extend_from_slice(buf);
                    self.reader.consume(n);
                }
            }
        }
        self.set_read_timeout(before);
        got
    }

    /// `stats [group]` as (name, value) pairs.
    pub fn stats(&mut self, group: &str) -> Vec<(String, String)> {
        let cmd = if group.is_empty() { "stats\r\n".to_string() } else { format!("stats {group}\r\n") };
        self.send(cmd.as_bytes());
        let mut out = Vec::new();
        loop {
            let l = self.line();
            assert!(!l.is_empty(), "connection closed during stats");
            if l == "END\r\n" {
                return out;
            }
            let mut parts = l.trim_end().splitn(3, ' ');
            assert_eq!(parts.next(), Some("STAT"), "bad stats line {l:?}");
            out.push((parts.next().unwrap().to_string(), parts.next().unwrap_or("").to_string()));
        }
    }

    /// One figure of `stats`, or of `stats larder` for larder's own
    /// (`larder_*`) figures.
    pub fn stat(&mut self, name: &str) -> u64 {
        figure(&self.stats(if name.starts_with("larder_") { "larder" } else { "" }), name)
    }

    /// The server's pid from `stats`, if it answers like a memcached (any
    /// I/O error or a closed connection: `None`). The launchers use it to
    /// make sure the server on a port is the one they started.
    pub(crate) fn try_pid(&mut self) -> Option<u64> {
        self.reader.get_mut().write_all(b"stats\r\n").ok()?;
        let mut pid = None;
        loop {
            let mut l = String::new();
            if self.reader.read_line(&mut l).ok()? == 0 {
                return None;
            }
            if l == "END\r\n" {
                return pid;
            }
            if let Some(v) = l.strip_prefix("STAT pid ") {
                pid = v.trim_end().parse().ok();
            }
        }
    }

    /// `-Y`'s handshake (a `set` whose value is `user pass`); whether the
    /// server answered `STORED`. No panic: the launchers use it on a port
    /// that may belong to someone else.
    pub fn try_authenticate(&mut self, user: &str, pass: &str) -> bool {
        let creds = format!("{user} {pass}");
        let req = format!("set auth 0 0 {}\r\n{creds}\r\n", creds.len());
        if self.reader.get_mut().write_all(req.as_bytes()).is_err() {
            return false;
        }
        let mut l = String::new();
        self.reader.read_line(&mut l).is_ok() && l == "STORED\r\n"
    }

    /// Whether the server closed the connection (EOF within the timeout).
    pub fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 64];
        match self.reader.read(&mut buf) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => matches!(e.kind(), std::io::ErrorKind::ConnectionReset),
        }
    }
}

/// One numeric figure of a [`Client::stats`] listing (several figures of
/// one listing are one moment's).
pub fn figure(stats: &[(String, String)], name: &str) -> u64 {
    let v = &stats.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no stat {name}")).1;
    v.parse().unwrap_or_else(|e| panic!("stat {name} {v:?}: {e}"))
}
