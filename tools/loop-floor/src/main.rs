//! The least a get/set server can cost per request, measured the way
//! larder and memcached are (`scripts/cpu-per-request`).
//!
//! Issue 12 asks for larder's server CPU per request at `latency-50` to be at
//! most 0.85x memcached's. Most of that CPU is the kernel's (loopback TCP,
//! epoll sleeps and wake-ups). This program answers larder-bench's load with
//! nothing but a hash map behind the same system calls, in two event loops:
//!
//! * `epoll`: edge-triggered epoll, `recv` until short, one `send` per
//!   batch of replies, as larder does;
//! * `uring`: io_uring (single issuer, deferred task work), one receive
//!   armed per connection, each reply's send and the next receive
//!   submitted together with the wait for completions.
//!
//! Whatever larder's own code costs, it cannot go below these. Not a cache:
//! no limits, no expiry, `get` and `set` only, no pipelining past what one
//! 16 KiB buffer holds.
//!
//!     cargo build --release --manifest-path tools/loop-floor/Cargo.toml
//!     scripts/cpu-per-request tools/loop-floor/epoll 22601 85000
//!     scripts/cpu-per-request tools/loop-floor/uring 22602 85000

use std::collections::HashMap;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, IntoRawFd};

type Store = HashMap<Vec<u8>, Vec<u8>>;

struct Conn {
    fd: i32,
    rbuf: Vec<u8>,
    rlen: usize,
    out: Vec<u8>,
}

impl Conn {
    fn new(fd: i32) -> Conn {
        Conn { fd, rbuf: vec![0; 16384], rlen: 0, out: Vec::with_capacity(16384) }
    }
}

/// Answers the complete requests in `conn.rbuf` into `conn.out`.
fn answer(conn: &mut Conn, store: &mut Store) {
    let mut start = 0;
    loop {
        let buf = &conn.rbuf[start..conn.rlen];
        let Some(nl) = buf.windows(2).position(|w| w == b"\r\n") else { break };
        let words: Vec<&[u8]> = buf[..nl].split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
        match words.first().copied() {
            Some(b"get") => {
                for k in &words[1..] {
                    if let Some(v) = store.get(*k) {
                        conn.out.extend_from_slice(b"VALUE ");
                        conn.out.extend_from_slice(k);
                        conn.out.extend_from_slice(format!(" 0 {}\r\n", v.len()).as_bytes());
                        conn.out.extend_from_slice(v);
                        conn.out.extend_from_slice(b"\r\n");
                    }
                }
                conn.out.extend_from_slice(b"END\r\n");
                start += nl + 2;
            }
            Some(b"set") if words.len() >= 5 => {
                let len: usize = std::str::from_utf8(words[4]).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
                if buf.len() < nl + 2 + len + 2 {
                    break;
                }
                store.insert(words[1].to_vec(), buf[nl + 2..nl + 2 + len].to_vec());
                conn.out.extend_from_slice(b"STORED\r\n");
                start += nl + 2 + len + 2;
            }
            Some(b"stats") => {
                conn.out.extend_from_slice(format!("STAT pid {}\r\nEND\r\n", std::process::id()).as_bytes());
                start += nl + 2;
            }
            _ => {
                conn.out.extend_from_slice(b"ERROR\r\n");
                start += nl + 2;
            }
        }
    }
    conn.rbuf.copy_within(start..conn.rlen, 0);
    conn.rlen -= start;
    assert!(conn.rlen < conn.rbuf.len(), "a request longer than the buffer (not supported here)");
}

fn set_nodelay(fd: i32) {
    let one: i32 = 1;
    // SAFETY: `fd` is an open socket; the option value is a live i32 of the length given.
    unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &one as *const i32 as *const libc::c_void, 4) };
}

fn send_all(fd: i32, out: &mut Vec<u8>) {
    let mut off = 0;
    while off < out.len() {
        // SAFETY: the pointer and length describe the unsent part of `out`.
        let n = unsafe { libc::send(fd, out[off..].as_ptr() as *const libc::c_void, out.len() - off, libc::MSG_NOSIGNAL) };
        if n <= 0 {
            break;
        }
        off += n as usize;
    }
    out.clear();
}

fn run_epoll(l: TcpListener) {
    let lfd = l.into_raw_fd();
    // SAFETY (this function's libc calls): every fd passed is one this
    // function opened and still owns; every pointer is to a live local or
    // to the unfilled part of a connection's buffer, with its true length.
    unsafe { libc::fcntl(lfd, libc::F_SETFL, libc::O_NONBLOCK) };
    let ep = unsafe { libc::epoll_create1(0) };
    let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: u64::MAX };
    unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, lfd, &mut ev) };
    let mut conns: HashMap<u64, Conn> = HashMap::new();
    let mut store = Store::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
    let mut next = 0u64;
    loop {
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, 500) };
        for e in &events[..n.max(0) as usize] {
            let id = e.u64;
            if id == u64::MAX {
                loop {
                    let fd = unsafe { libc::accept4(lfd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK) };
                    if fd < 0 {
                        break;
                    }
                    set_nodelay(fd);
                    let mut ev = libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLET) as u32, u64: next };
                    unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
                    conns.insert(next, Conn::new(fd));
                    next += 1;
                }
                continue;
            }
            let Some(c) = conns.get_mut(&id) else { continue };
            let mut closed = false;
            loop {
                let room = c.rbuf.len() - c.rlen;
                let r = unsafe { libc::recv(c.fd, c.rbuf[c.rlen..].as_mut_ptr() as *mut libc::c_void, room, 0) };
                if r == 0 {
                    closed = true;
                    break;
                }
                if r < 0 {
                    break;
                }
                c.rlen += r as usize;
                answer(c, &mut store);
                if (r as usize) < room {
                    break;
                }
            }
            if !c.out.is_empty() {
                send_all(c.fd, &mut c.out);
            }
            if closed {
                unsafe { libc::close(c.fd) };
                conns.remove(&id);
            }
        }
    }
}

fn run_uring(l: TcpListener) {
    use io_uring::{opcode, squeue, types, IoUring};
    const ACCEPT: u64 = u64::MAX;
    // user_data: connection index × 2, + 1 for a send.
    let lfd = l.as_raw_fd();
    let mut ring: IoUring = IoUring::builder().setup_single_issuer().setup_defer_taskrun().setup_coop_taskrun().build(1024).expect("io_uring (kernel 6.1 or later)");
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut store = Store::new();
    let accept = || opcode::Accept::new(types::Fd(lfd), std::ptr::null_mut(), std::ptr::null_mut()).build().user_data(ACCEPT);
    let recv = |idx: usize, c: &mut Conn| {
        let room = c.rbuf.len() - c.rlen;
        opcode::Recv::new(types::Fd(c.fd), c.rbuf[c.rlen..].as_mut_ptr(), room as u32).build().user_data(idx as u64 * 2)
    };
    let mut pending: Vec<squeue::Entry> = vec![accept()];
    loop {
        for e in pending.drain(..) {
            // SAFETY: every buffer an entry points at (a connection's
            // read buffer past its data, or its output) stays allocated
            // and untouched until the entry completes: a connection has
            // one receive and at most one send in flight, `answer` runs
            // only on a receive's completion (the client sends its next
            // request after reading the reply, so the send completed
            // first), and buffers never grow here.
            unsafe { ring.submission().push(&e).expect("ring has room") };
        }
        ring.submit_and_wait(1).expect("io_uring_enter");
        let done: Vec<(u64, i32)> = ring.completion().map(|c| (c.user_data(), c.result())).collect();
        for (ud, res) in done {
            if ud == ACCEPT {
                if res >= 0 {
                    set_nodelay(res);
                    let idx = conns.len();
                    conns.push(Some(Conn::new(res)));
                    pending.push(recv(idx, conns[idx].as_mut().expect("just pushed")));
                }
                pending.push(accept());
                continue;
            }
            let idx = (ud / 2) as usize;
            let Some(c) = conns[idx].as_mut() else { continue };
            if ud % 2 == 1 {
                // Small replies on loopback go whole.
                c.out.clear();
                continue;
            }
            if res <= 0 {
                // SAFETY: the connection's own fd, closed once.
                unsafe { libc::close(c.fd) };
                conns[idx] = None;
                continue;
            }
            c.rlen += res as usize;
            answer(c, &mut store);
            if !c.out.is_empty() {
                pending.push(opcode::Send::new(types::Fd(c.fd), c.out.as_ptr(), c.out.len() as u32).build().user_data(idx as u64 * 2 + 1));
            }
            pending.push(recv(idx, c));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(port)) = (args.get(1), args.get(2).and_then(|p| p.parse::<u16>().ok())) else {
        eprintln!("usage: loop-floor epoll|uring PORT");
        std::process::exit(2);
    };
    let l = TcpListener::bind(("127.0.0.1", port)).expect("bind");
    match mode.as_str() {
        "epoll" => run_epoll(l),
        "uring" => run_uring(l),
        _ => {
            eprintln!("usage: loop-floor epoll|uring PORT");
            std::process::exit(2);
        }
    }
}
