//! `-S` test support: a Cyrus config made as an operator makes it
//! (`saslpasswd2 -a memcached`), a server started with `-S` on a free port,
//! and a small binary-protocol client.

use larder_testkit::require_or_skip;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const USER: &str = "rustuser";
pub const PASSWORD: &str = "rust pass";
pub const INSTALL: &str = "apt-get install libsasl2-2 libsasl2-modules sasl2-bin (scripts/test installs them)";

/// A Cyrus config directory (memcached.conf + sasldb), removed when dropped.
pub struct Conf(pub PathBuf);

impl Conf {
    /// None (skipped, or a panic under CI) when saslpasswd2 is missing.
    pub fn new() -> Option<Conf> {
        let tool = ["/usr/sbin/saslpasswd2", "/usr/bin/saslpasswd2"].into_iter().map(PathBuf::from).find(|p| p.exists());
        let tool = require_or_skip(tool, "saslpasswd2", INSTALL)?;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("larder-sasl-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("sasldb");
        std::fs::write(dir.join("memcached.conf"), format!("mech_list: plain cram-md5\nsasldb_path: {}\n", db.display())).unwrap();
        let mut child = Command::new(tool)
            .args(["-f", db.to_str().unwrap(), "-a", "memcached", "-c", "-p", USER])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(PASSWORD.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
        Some(Conf(dir))
    }
}

impl Drop for Conf {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server started with `-S` (and `extra`), killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Server {
    pub fn start(bin: &Path, conf: &Conf, extra: &[&str]) -> Server {
        for _ in 0..10 {
            let port = larder_testkit::free_port();
            let mut child = Command::new(bin)
                .args(["-p", &port.to_string(), "-U", "0", "-l", "127.0.0.1", "-u", "root", "-S"])
                .args(extra)
                .env("SASL_CONF_PATH", &conf.0)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(if extra.contains(&"-vv") { Stdio::piped() } else { Stdio::null() })
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
                if let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) {
                    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                    // binary version: allowed before authentication
                    if c.write_all(&packet(0x0b, b"", b"", 1)).is_ok() {
                        let mut head = [0u8; 2];
                        if c.read_exact(&mut head).is_ok() && head == [0x81, 0x0b] {
                            return Server { child, port };
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("{} -S did not start", bin.display());
    }

    pub fn larder(conf: &Conf, extra: &[&str]) -> Server {
        Server::start(Path::new(super::binary()), conf, extra)
    }

    pub fn connect(&self) -> Bin {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Bin(s)
    }

    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap().trim().trim_end_matches(" kB").trim().parse().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn packet(op: u8, key: &[u8], value: &[u8], opaque: u32) -> Vec<u8> {
    packet_ext(op, key, &[], value, opaque)
}

pub fn packet_ext(op: u8, key: &[u8], extras: &[u8], value: &[u8], opaque: u32) -> Vec<u8> {
    larder_testkit::binary::request(op, extras, key, value, opaque, 0)
}

/// A binary-protocol connection.
pub struct Bin(pub TcpStream);

/// One response: the whole packet, its status and value.
pub struct Reply {
    pub raw: Vec<u8>,
    pub status: u16,
    pub value: Vec<u8>,
}

impl Bin {
    pub fn send(&mut self, b: &[u8]) {
        self.0.write_all(b).unwrap();
    }

    pub fn reply(&mut self) -> Reply {
        let mut head = [0u8; 24];
        self.0.read_exact(&mut head).unwrap();
        let keylen = u16::from_be_bytes([head[2], head[3]]) as usize;
        let extlen = head[4] as usize;
        let body = u32::from_be_bytes([head[8], head[9], head[10], head[11]]) as usize;
        let mut rest = vec![0u8; body];
        self.0.read_exact(&mut rest).unwrap();
        let mut raw = head.to_vec();
        raw.extend_from_slice(&rest);
        Reply { raw, status: u16::from_be_bytes([head[6], head[7]]), value: rest[extlen + keylen..].to_vec() }
    }

    pub fn call(&mut self, op: u8, key: &[u8], value: &[u8]) -> Reply {
        self.send(&packet(op, key, value, 0xabcd));
        self.reply()
    }

    pub fn plain(&mut self, password: &str) -> Reply {
        self.call(0x21, b"PLAIN", format!("\0{USER}\0{password}").as_bytes())
    }

    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.0.read(&mut b), Ok(0) | Err(_))
    }

    /// `stats` value of `name` (this connection must be authenticated).
    pub fn stat(&mut self, name: &str) -> u64 {
        self.stat_in(b"", name)
    }

    /// A value of the stats `group` (`b""`: the general ones).
    pub fn stat_in(&mut self, group: &[u8], name: &str) -> u64 {
        self.send(&packet(0x10, group, b"", 1));
        let mut found = None;
        loop {
            let r = self.reply();
            let keylen = u16::from_be_bytes([r.raw[2], r.raw[3]]) as usize;
            if keylen == 0 {
                return found.unwrap_or_else(|| panic!("no stat {name}"));
            }
            if &r.raw[24..24 + keylen] == name.as_bytes() {
                found = Some(String::from_utf8(r.value).unwrap().parse().unwrap());
            }
        }
    }
}

