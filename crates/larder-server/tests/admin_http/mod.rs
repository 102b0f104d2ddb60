//! What the admin_* tests share: a small blocking HTTP/1.1 client for the
//! admin listener, and a launcher for servers whose cache port requires
//! authentication (the test kit's launcher proves a start with an
//! unauthenticated `stats`, which `-Y`, `-S` and required client
//! certificates refuse; these servers are known up when their admin port
//! answers).

// Each admin_* file uses its own part.
#![allow(dead_code)]

use larder_testkit::{free_port, larder_binary, user_args};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Status line and headers, as received.
    pub head: String,
    pub body: Vec<u8>,
}

impl Reply {
    /// A header's value (name case-insensitive; the first of several).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// Every value of a header.
    pub fn headers(&self, name: &str) -> Vec<&str> {
        self.head
            .lines()
            .skip(1)
            .filter_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
            })
            .collect()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one response (head, then `Content-Length` bytes) from `r`; the
/// connection stays usable for the next one.
pub fn read_reply(r: &mut impl BufRead, head_request: bool) -> std::io::Result<Reply> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("closed after {head:?}")));
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut reply = Reply { status, head, body: Vec::new() };
    let len: usize = reply.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    if !head_request {
        reply.body = vec![0; len];
        r.read_exact(&mut reply.body)?;
    }
    Ok(reply)
}

/// `GET path` with `headers`, on a connection of its own that the request
/// asks to close.
pub fn request(port: u16, path: &str, headers: &[(&str, &str)]) -> Reply {
    try_request(port, path, headers).unwrap_or_else(|e| panic!("GET {path} on {port}: {e}"))
}

pub fn try_request(port: u16, path: &str, headers: &[(&str, &str)]) -> std::io::Result<Reply> {
    let s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    (&s).write_all(req.as_bytes())?;
    read_reply(&mut BufReader::new(s), false)
}

pub fn get(port: u16, path: &str) -> Reply {
    request(port, path, &[])
}

/// An `Authorization: Basic` value.
pub fn basic(user: &str, pass: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = format!("{user}:{pass}").into_bytes();
    let mut o = String::from("Basic ");
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            o.push(if i <= c.len() { A[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    o
}

/// A sample's value in an exposition (`name` with its labels, if any, as
/// written: `larder_admin_timeouts_total{kind="header"}`).
pub fn metric(exposition: &str, name: &str) -> Option<f64> {
    exposition.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// A larder that the test kit's launcher cannot prove (see the module
/// docs); killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub admin: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn command(args: &[&str], port: u16, admin: u16) -> Command {
    let mut cmd = Command::new(larder_binary());
    cmd.args(["-p", &port.to_string(), "-U", "0", "-o", &format!("metrics_port={admin}")]);
    cmd.args(user_args()).args(args).stdin(Stdio::null()).stdout(Stdio::null());
    cmd
}

/// Starts larder with `args` and an admin port; up once the admin port
/// accepts while the process lives (tried again on other ports if it
/// exits: another test took one).
pub fn start(args: &[&str]) -> Server {
    for _ in 0..5 {
        let (port, admin) = (free_port(), free_port());
        let mut child = command(args, port, admin).stderr(Stdio::inherit()).spawn().expect("start larder");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if TcpStream::connect(("127.0.0.1", admin)).is_ok() && TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Server { child, port, admin };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("larder {args:?} did not start");
}

/// A start that must fail: its exit code and stderr.
pub fn refused(args: &[&str]) -> (i32, String) {
    let mut child = command(args, free_port(), free_port()).stderr(Stdio::piped()).spawn().expect("start larder");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            return (status.code().unwrap_or(-1), err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("larder {args:?} started; it should have been refused");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A file in the temp directory, removed on drop.
pub struct TempFile(pub std::path::PathBuf);

impl TempFile {
    pub fn new(name: &str, text: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("larder-{name}-{}-{:?}", std::process::id(), std::thread::current().id()));
        std::fs::write(&path, text).unwrap();
        TempFile(path)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
