//! What an idle connection costs (issue #29): 10,000 plain connections
//! that each set one 10-byte value and then sit idle must grow larder's
//! resident memory by at most 1.5 KiB each. A connection with nothing in
//! flight holds no read or output buffer (`connmem::pool`); before that it
//! held 2 × 16 KiB and cost ~12.8 KiB resident. memcached 1.6.18's figure
//! from the same clients is printed beside ours when it is installed (the
//! bound is ours; memcached's is for the record, ~0.7 KiB). 1,000 idle TLS
//! connections are measured against memcached `-Z` the same way, with a
//! bound derived from memcached's figure.
//!
//! Run alone: `cargo test --release -p larder-server --test idle_conns -- --nocapture`.

use larder_testkit::larder::Larder;
use larder_testkit::memcached::Memcached;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const CONNS: usize = 10_000;
/// Bytes of resident growth allowed per idle connection.
const BOUND: u64 = 1536;

/// Raise this process's open-file limit to `want` (or its hard limit):
/// the test holds one socket per connection, and the servers it starts
/// inherit the limit.
fn raise_nofile(want: u64) -> u64 {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit read and write a struct we own.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl), 0);
        if rl.rlim_cur < want {
            rl.rlim_cur = want.min(rl.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &rl), 0);
        }
    }
    rl.rlim_cur
}

fn rss_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).expect("VmRSS");
    kib * 1024
}

/// One connection that stores a 10-byte value under key `i` and is then
/// left open.
fn open_and_set(port: u16, i: usize) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("set idle:{i} 0 0 10\r\n0123456789\r\n").as_bytes()).unwrap();
    let mut reply = [0u8; 8];
    s.read_exact(&mut reply).expect("a reply to the set");
    assert_eq!(&reply, b"STORED\r\n", "connection {i}");
    s
}

/// Resident growth per idle connection of the server `pid` listening on
/// `port`, after a warm-up connection (so the store's first segment and
/// the worker's buffers are in place before the first measure).
fn per_idle_conn(port: u16, pid: u32) -> (u64, u64, f64) {
    drop(open_and_set(port, usize::MAX));
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_of(pid);
    let conns: Vec<TcpStream> = (0..CONNS).map(|i| open_and_set(port, i)).collect();
    // Let the server settle (every connection adopted and run).
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_of(pid);
    drop(conns);
    (before, after, after.saturating_sub(before) as f64 / CONNS as f64)
}

#[test]
fn an_idle_connection_costs_under_one_and_a_half_kib() {
    let limit = raise_nofile(CONNS as u64 + 2000);
    assert!(limit >= CONNS as u64 + 100, "RLIMIT_NOFILE hard limit {limit} is too low for {CONNS} connections");
    let args = ["-t", "2", "-c", "12000", "-m", "64"];

    let larder = Larder::start(&args);
    let (before, after, per) = per_idle_conn(larder.port, larder.pid() as u32);
    println!("larder: RSS {:.1} MiB -> {:.1} MiB with {CONNS} idle connections: {per:.0} bytes each", before as f64 / 1048576.0, after as f64 / 1048576.0);
    drop(larder);

    let (_, installed) = Memcached::binary();
    if installed {
        let mut extra = args.to_vec();
        extra.extend(["-u", "nobody"]);
        let mc = Memcached::start(&extra);
        let (b, a, p) = per_idle_conn(mc.port, mc.child.id());
        println!("memcached: RSS {:.1} MiB -> {:.1} MiB with {CONNS} idle connections: {p:.0} bytes each", b as f64 / 1048576.0, a as f64 / 1048576.0);
    } else {
        println!("memcached not installed: no reference figure");
    }
    assert!(per <= BOUND as f64, "{per:.0} bytes of resident memory per idle connection (bound {BOUND})");
}

/// Resident growth per idle TLS connection of the server `pid` whose TLS
/// listener is `tls_port`: `TLS_CONNS` rustls clients that each finish the
/// handshake, set one 10-byte value and sit idle, after a warm-up one.
fn per_idle_tls_conn(tls_port: u16, pid: u32) -> (u64, u64, f64) {
    use larder_testkit::tls::TlsClient;
    let open_and_set = |i: usize| {
        let mut c = TlsClient::connect(tls_port);
        c.send(format!("set idle:{i} 0 0 10\r\n0123456789\r\n").as_bytes());
        assert_eq!(c.line(), "STORED\r\n", "TLS connection {i}");
        c
    };
    drop(open_and_set(usize::MAX));
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_of(pid);
    let conns: Vec<TlsClient> = (0..TLS_CONNS).map(open_and_set).collect();
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_of(pid);
    drop(conns);
    (before, after, after.saturating_sub(before) as f64 / TLS_CONNS as f64)
}

const TLS_CONNS: usize = 1_000;

/// Idle TLS connections against memcached `-Z` (issue #29: "measure and
/// document what an idle TLS connection costs"). Each of larder's keeps
/// its record buffers (a receive buffer of one largest record, 16.6 KiB,
/// and a send buffer: `net::tls`) but, like a plain one, no read or output
/// buffer; memcached 1.6.18 keeps OpenSSL's per-connection state and
/// buffers. The same clients, in the same way, against both (memcached
/// with `-l notls:` on the launcher's port so it can be probed, TLS on
/// another, as larder). Figures on the reference machine are in
/// docs/memory.md.
///
/// Measured on the reference machine: larder 19,653 bytes per idle TLS
/// connection, memcached 1.6.18 `-Z` 15,069 (1.3 x). larder's record layer
/// keeps its receive buffer (one largest record) and its send buffer for
/// the connection's life, so that a warm TLS request allocates nothing
/// (the no-alloc suite); handing them back to a per-worker pool when
/// drained, as plain connections do, is what would close the gap.
///
/// The bounds: at most `TLS_BOUND` absolute (what the record buffers
/// cost, with room for the allocator), and at most memcached `-Z`'s own
/// figure from the same run times `TLS_RATIO` (1.5: today's 1.3 with room
/// for noise; the layout before #29, ~31 KiB, is over 2 x and fails).
#[test]
fn an_idle_tls_connection_costs_within_a_bound_of_memcacheds() {
    use larder_testkit::launch::free_port;
    use larder_testkit::tls::{certs, server_args};
    const TLS_BOUND: f64 = 24.0 * 1024.0;
    const TLS_RATIO: f64 = 1.5;
    raise_nofile(TLS_CONNS as u64 + 2000);
    let common_args: Vec<String> = ["-t", "2", "-c", "12000", "-m", "64"].iter().map(|s| s.to_string()).chain(server_args(certs())).collect();

    // The launcher's port stays plain (it probes it); TLS on another.
    let tls_port = free_port();
    let mut args = common_args.clone();
    args.extend(["-l".into(), "notls:127.0.0.1".into(), "-l".into(), format!("127.0.0.1:{tls_port}")]);
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let larder = Larder::start(&args);
    let (before, after, per) = per_idle_tls_conn(tls_port, larder.pid() as u32);
    println!("larder -Z: RSS {:.1} MiB -> {:.1} MiB with {TLS_CONNS} idle TLS connections: {per:.0} bytes each", before as f64 / 1048576.0, after as f64 / 1048576.0);
    drop(larder);
    assert!(per <= TLS_BOUND, "{per:.0} bytes of resident memory per idle TLS connection (bound {TLS_BOUND})");

    let (bin, installed) = Memcached::binary();
    let missing = format!("memcached at {} (set MEMCACHED_BIN to use another)", bin.display());
    if larder_testkit::require_or_skip(installed.then_some(()), &missing, "apt-get install memcached (scripts/test installs it)").is_none() {
        return;
    }
    let mc_tls_port = free_port();
    let mut extra = common_args;
    extra.extend(["-l".into(), format!("127.0.0.1:{mc_tls_port}")]);
    let extra: Vec<&str> = extra.iter().map(|s| s.as_str()).collect();
    let mc = Memcached::start_listening("notls:127.0.0.1", &extra);
    let (b, a, mc_per) = per_idle_tls_conn(mc_tls_port, mc.child.id());
    println!("memcached -Z: RSS {:.1} MiB -> {:.1} MiB with {TLS_CONNS} idle TLS connections: {mc_per:.0} bytes each", b as f64 / 1048576.0, a as f64 / 1048576.0);
    assert!(
        per <= mc_per * TLS_RATIO,
        "larder {per:.0} bytes per idle TLS connection, memcached -Z {mc_per:.0}: over {TLS_RATIO} x memcached's"
    );
}

/// A connection keeps its two resting buffers for a moment after a request
/// (`conn::worker`'s holders: a busy connection does not give them back and
/// take them again on every request), but not for long: the worker's
/// once-a-second housekeeping takes them back. Eight connections that
/// served a request 2.5 s ago hold nothing; the one asking holds its own
/// two at most. (Were holders never made to give their buffers back, the
/// eight would hold 8 × 2 × 16 KiB here.)
#[test]
fn buffers_go_back_within_the_housekeeping_lag() {
    let larder = Larder::start(&["-t", "1", "-m", "64"]);
    let conns: Vec<TcpStream> = (0..8).map(|i| open_and_set(larder.port, i)).collect();
    std::thread::sleep(Duration::from_millis(2500));
    let mut c = larder.connect();
    // (its first request, before its own buffers are accounted)
    c.stat("read_buf_bytes");
    let total = c.stat("read_buf_bytes") + c.stat("response_obj_bytes");
    let free = c.stat("read_buf_bytes_free") + c.stat("larder_write_buf_bytes_free");
    let held = total.saturating_sub(free);
    assert!(held <= 2 * 16 * 1024, "{held} bytes of buffers held by connections 2.5 s after their last request");
    drop(conns);
}
