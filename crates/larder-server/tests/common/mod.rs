//! Test support: start the real `larder` binary on a free port and talk to it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Larder {
    pub child: Child,
    pub port: u16,
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_larder")
}

impl Larder {
    /// Start larder with `args` (plus `-p <free port> -U 0` unless given).
    ///
    /// A free port can be taken by another test's server between our check
    /// and larder's bind; then larder exits and a connection would reach the
    /// other server. So a start only counts once `stats` answers with our
    /// child's pid; otherwise try another port.
    pub fn start(args: &[&str]) -> Larder {
        for _ in 0..10 {
            let port = free_port();
            let mut cmd = Command::new(binary());
            let port_s = port.to_string();
            cmd.args(["-p", &port_s]);
            if !args.contains(&"-U") {
                cmd.args(["-U", "0"]);
            }
            cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::inherit());
            let child = cmd.spawn().expect("start larder");
            let mut l = Larder { child, port };
            if l.wait_ready() {
                return l;
            }
            let _ = l.child.kill();
            let _ = l.child.wait();
        }
        panic!("larder did not start on a free port in 10 tries");
    }

    /// Whether our child answers on `port` (false: it exited, or someone
    /// else's server answers there).
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            if let Ok(s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut c = Client { reader: BufReader::new(s) };
                return c.try_pid() == Some(self.child.id() as u64);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.port)
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Send a signal and wait (bounded) for the exit status.
    pub fn signal_and_wait(&mut self, sig: &str) -> std::process::ExitStatus {
        Command::new("kill").args([&format!("-{sig}"), &self.pid().to_string()]).status().unwrap();
        self.wait_exit(Duration::from_secs(10)).expect("larder did not exit")
    }

    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Larder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Client {
    pub reader: BufReader<TcpStream>,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client { reader: BufReader::new(s) }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).unwrap();
    }

    /// One reply line including `\r\n`.
    pub fn line(&mut self) -> String {
        let mut l = String::new();
        self.reader.read_line(&mut l).unwrap();
        l
    }

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

    /// The server's pid from `stats`, if it answers like a memcached.
    fn try_pid(&mut self) -> Option<u64> {
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

    /// One figure of `stats`, or of `stats larder` for larder's own
    /// (`larder_*`) figures.
    pub fn stat(&mut self, name: &str) -> u64 {
        let all = self.stats(if name.starts_with("larder_") { "larder" } else { "" });
        all.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no stat {name}")).1.parse().unwrap()
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
