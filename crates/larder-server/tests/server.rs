//! Black-box tests of the `larder` binary over TCP, UDP and Unix sockets:
//! pipelining, limits, lifecycle and the server-owned parts of the protocol.

mod common;

use common::{free_port, Client, Larder};
use std::io::{Read, Write};
use std::time::Duration;

#[test]
fn set_get_and_pipelined_requests_in_one_write() {
    let l = Larder::start(&[]);
    let mut c = l.connect();
    c.expect(b"set a 5 0 3\r\nabc\r\n", b"STORED\r\n");
    // Ten requests in one packet: all ten answers, in order.
    let mut req = Vec::new();
    for i in 0..10 {
        req.extend_from_slice(format!("set k{i} {i} 0 1\r\n{i}\r\n").as_bytes());
    }
    req.extend_from_slice(b"get a k0 k9 nope\r\n");
    let mut expected = Vec::new();
    for _ in 0..10 {
        expected.extend_from_slice(b"STORED\r\n");
    }
    expected.extend_from_slice(b"VALUE a 5 3\r\nabc\r\nVALUE k0 0 1\r\n0\r\nVALUE k9 9 1\r\n9\r\nEND\r\n");
    c.expect(&req, &expected);
}

#[test]
fn a_hundred_key_get_answers_every_key() {
    let l = Larder::start(&[]);
    let mut c = l.connect();
    let mut req = Vec::new();
    for i in 0..100 {
        req.extend_from_slice(format!("set key:{i} 0 0 {}\r\n{}\r\n", i.to_string().len(), i).as_bytes());
    }
    c.send(&req);
    for _ in 0..100 {
        assert_eq!(c.line(), "STORED\r\n");
    }
    let keys: Vec<String> = (0..100).map(|i| format!("key:{i}")).collect();
    c.send(format!("get {}\r\n", keys.join(" ")).as_bytes());
    for i in 0..100 {
        assert_eq!(c.line(), format!("VALUE key:{i} 0 {}\r\n", i.to_string().len()));
        assert_eq!(c.line(), format!("{i}\r\n"));
    }
    assert_eq!(c.line(), "END\r\n");
}

#[test]
fn values_split_across_many_writes_are_reassembled() {
    let l = Larder::start(&[]);
    let mut c = l.connect();
    let value: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut req = format!("set big 0 0 {}\r\n", value.len()).into_bytes();
    req.extend_from_slice(&value);
    req.extend_from_slice(b"\r\n");
    for chunk in req.chunks(7919) {
        c.send(chunk);
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!(c.line(), "STORED\r\n");
    c.send(b"get big\r\n");
    assert_eq!(c.line(), format!("VALUE big 0 {}\r\n", value.len()));
    assert_eq!(c.exact(value.len()), value);
    assert_eq!(c.exact(7), b"\r\nEND\r\n");
}

#[test]
fn too_large_set_is_swallowed_and_drops_the_old_value() {
    let l = Larder::start(&["-I", "1k", "-m", "8"]);
    let mut c = l.connect();
    c.expect(b"set k 0 0 3\r\nold\r\n", b"STORED\r\n");
    let big = vec![b'x'; 5000];
    let mut req = b"set k 0 0 5000\r\n".to_vec();
    req.extend_from_slice(&big);
    req.extend_from_slice(b"\r\nget k\r\n");
    // The data block is discarded, not parsed as commands; the old value is gone.
    c.expect(&req, b"SERVER_ERROR object too large for cache\r\nEND\r\n");
    assert_eq!(c.stat("store_too_large"), 1);
}

#[test]
fn noreply_is_silent() {
    let l = Larder::start(&[]);
    let mut c = l.connect();
    c.send(b"set a 0 0 1 noreply\r\n1\r\nadd a 0 0 1 noreply\r\n2\r\nincr a 5 noreply\r\ndelete nope noreply\r\ntouch a 0 noreply\r\nflush_all 100 noreply\r\n");
    c.expect(b"get a\r\n", b"VALUE a 0 1\r\n6\r\nEND\r\n");
}

#[test]
fn connection_limit_rejects_with_memcacheds_error() {
    let l = Larder::start(&["-c", "2"]);
    let mut a = l.connect();
    a.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    // The start-up probe's connection may not be closed on the server's
    // side yet (seen on a loaded machine): b would then be the third.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while a.stat("curr_connections") > 1 {
        assert!(std::time::Instant::now() < deadline, "start-up probe still connected");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut b = l.connect();
    b.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    let mut third = std::net::TcpStream::connect(("127.0.0.1", l.port)).unwrap();
    third.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    third.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"ERROR Too many open connections\r\n");
    assert_eq!(a.stat("rejected_connections"), 1);
    // A freed slot is usable again, once the server has seen the close.
    drop(b);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while a.stat("curr_connections") > 1 {
        assert!(std::time::Instant::now() < deadline, "closed connection still counted");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut d = l.connect();
    d.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
}

#[test]
fn idle_connections_are_closed_after_the_timeout() {
    let l = Larder::start(&["-o", "idle_timeout=1"]);
    let mut idle = l.connect();
    idle.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
    std::thread::sleep(Duration::from_millis(3500));
    assert!(idle.is_closed(), "idle connection still open");
    let mut c = l.connect();
    assert!(c.stat("idle_kicks") >= 1);
}

#[test]
fn an_endless_line_closes_only_that_connection() {
    let l = Larder::start(&[]);
    let mut good = l.connect();
    good.expect(b"set a 0 0 1\r\nx\r\n", b"STORED\r\n");
    let mut bad = l.connect();
    // 1 MiB of garbage without a newline: memcached closes such a connection.
    let junk = vec![b'z'; 1 << 20];
    let _ = bad.reader.get_mut().write_all(&junk);
    assert!(bad.is_closed());
    good.expect(b"get a\r\n", b"VALUE a 0 1\r\nx\r\nEND\r\n");
}

#[test]
fn a_client_that_never_reads_does_not_stop_others() {
    let l = Larder::start(&["-t", "1"]);
    let mut c = l.connect();
    c.expect(b"set v 0 0 10000\r\n", b"");
    c.expect(&[b'v'; 10000], b"");
    c.expect(b"\r\n", b"STORED\r\n");
    // Flood gets without reading the replies.
    let mut flood = std::net::TcpStream::connect(("127.0.0.1", l.port)).unwrap();
    flood.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let req = b"get v\r\n".repeat(1000);
    for _ in 0..200 {
        if flood.write_all(&req).is_err() {
            break; // the server stopped reading from us: backpressure works
        }
    }
    // Meanwhile another client on the same (only) worker is served.
    let mut other = l.connect();
    other.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
}

#[test]
fn stats_have_memcacheds_names() {
    let l = Larder::start(&["-m", "32"]);
    let mut c = l.connect();
    c.expect(b"set a 0 0 1\r\nx\r\nget a b\r\n", b"STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n");
    let stats = c.stats("");
    let names: Vec<&str> = stats.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "pid", "uptime", "time", "version", "curr_connections", "total_connections", "rejected_connections",
        "cmd_get", "cmd_set", "cmd_touch", "cmd_flush", "get_hits", "get_misses", "get_expired", "get_flushed",
        "delete_hits", "delete_misses", "incr_hits", "incr_misses", "decr_hits", "decr_misses", "cas_hits",
        "cas_misses", "cas_badval", "touch_hits", "touch_misses", "bytes_read", "bytes_written",
        "limit_maxbytes", "threads", "bytes", "curr_items", "total_items", "evictions", "reclaimed",
    ] {
        assert!(names.contains(&want), "missing stat {want}");
    }
    let get = |n: &str| stats.iter().find(|(k, _)| k == n).unwrap().1.clone();
    assert_eq!(get("cmd_get"), "2");
    assert_eq!(get("get_hits"), "1");
    assert_eq!(get("get_misses"), "1");
    assert_eq!(get("curr_items"), "1");
    assert_eq!(get("limit_maxbytes"), (32u64 << 20).to_string());
    // `stats reset` zeroes counters, not the items.
    c.expect(b"stats reset\r\n", b"RESET\r\n");
    assert_eq!(c.stat("cmd_get"), 0);
    assert_eq!(c.stat("curr_items"), 1);
    let settings = c.stats("settings");
    assert!(settings.iter().any(|(k, v)| k == "item_size_max" && v == "1048576"));
}

#[test]
fn udp_get_uses_memcacheds_framing() {
    let udp_port = free_port();
    let udp_s = udp_port.to_string();
    let l = Larder::start(&["-U", &udp_s]);
    let mut c = l.connect();
    c.expect(b"set foo 0 0 6\r\nfooval\r\n", b"STORED\r\n");
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0];
    req.extend_from_slice(b"get foo\r\n");
    sock.send_to(&req, ("127.0.0.1", udp_port)).unwrap();
    let mut buf = [0u8; 2048];
    let n = sock.recv(&mut buf).unwrap();
    assert_eq!(&buf[..8], &[0x12, 0x34, 0, 0, 0, 1, 0, 0]);
    assert_eq!(&buf[8..n], b"VALUE foo 0 6\r\nfooval\r\nEND\r\n");
}

#[test]
fn unix_socket_serves_and_is_removed_on_exit() {
    let path = std::env::temp_dir().join(format!("larder-test-{}.sock", std::process::id()));
    let path_s = path.to_str().unwrap().to_string();
    let mut child = std::process::Command::new(common::binary())
        .args(["-s", &path_s, "-a", "700"])
        .args(common::user_args())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stream = None;
    for _ in 0..200 {
        if let Ok(s) = std::os::unix::net::UnixStream::connect(&path) {
            stream = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut s = stream.expect("unix socket");
    s.write_all(b"version\r\n").unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"VERSION 1.6.18\r\n");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o700);
    unsafe_kill(child.id() as i32);
    let st = child.wait().unwrap();
    assert!(st.success(), "exit status {st}");
    assert!(!path.exists(), "socket file left behind");
}

fn unsafe_kill(pid: i32) {
    std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
}

#[test]
fn sigterm_and_sigint_exit_cleanly() {
    for sig in ["TERM", "INT"] {
        let mut l = Larder::start(&[]);
        let mut c = l.connect();
        c.expect(b"version\r\n", b"VERSION 1.6.18\r\n");
        let st = l.signal_and_wait(sig);
        assert!(st.success(), "SIG{sig}: {st}");
    }
}

#[test]
fn shutdown_needs_dash_a() {
    let l = Larder::start(&[]);
    let mut c = l.connect();
    // memcached 1.6.40 and later (1.6.38: `ERROR: shutdown not enabled`).
    c.expect(b"shutdown\r\n", b"SERVER_ERROR: shutdown not enabled\r\n");
    let mut l = Larder::start(&["-A"]);
    let mut c = l.connect();
    c.send(b"shutdown\r\n");
    let st = l.wait_exit(Duration::from_secs(10)).expect("did not shut down");
    assert!(st.success());
}

#[test]
fn bad_flags_are_named_at_start_up() {
    for (args, needle) in [
        (&["-Z", "-p", "0"][..], "You cannot enable SSL without a TCP port"),
        (&["-o", "ext_path=/x"], "ext_path"),
        (&["-c", "0"], "connections"),
        (&["-t", "0"], "threads"),
        (&["-m", "64", "-I", "64m"], "1/2 of memory"),
        (&["-q"], "q"),
    ] {
        let out = std::process::Command::new(common::binary()).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} started");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn help_and_version() {
    let out = std::process::Command::new(common::binary()).arg("-h").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("unix-socket"));
    let out = std::process::Command::new(common::binary()).arg("-V").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("larder "));
}

#[test]
fn many_connections_many_threads_consistent_values() {
    let l = Larder::start(&["-t", "4"]);
    let port = l.port;
    let handles: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(port);
                for i in 0..300 {
                    let key = format!("t{t}k{}", i % 17);
                    let val = format!("{t}-{i}-{}", "v".repeat(i % 50));
                    c.expect(format!("set {key} {i} 0 {}\r\n{val}\r\n", val.len()).as_bytes(), b"STORED\r\n");
                    c.expect(format!("get {key}\r\n").as_bytes(), format!("VALUE {key} {i} {}\r\n{val}\r\nEND\r\n", val.len()).as_bytes());
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// As memcached: root without `-u` is refused (exit 64, memcached's
/// message); `-u root` stays root on purpose; an unknown user is exit 67.
#[test]
fn root_needs_dash_u() {
    if !common::running_as_root() {
        return;
    }
    let port = common::free_port().to_string();
    let out = std::process::Command::new(common::binary()).args(["-p", &port, "-U", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "can't run as root without the -u switch\n");
    let out = std::process::Command::new(common::binary()).args(["-p", &port, "-U", "0", "-u", "no-such-user-here"]).output().unwrap();
    assert_eq!(out.status.code(), Some(67));
    assert!(String::from_utf8_lossy(&out.stderr).contains("can't find the user no-such-user-here to switch to"));
    let l = Larder::start(&["-u", "root"]);
    l.connect().expect(b"version\r\n", b"VERSION 1.6.18\r\n");
}

/// Start-up errors exit with memcached 1.6.38's status (each checked
/// against it): 1 for what its option loop refuses, 64 (EX_USAGE) for -B
/// and -I and the checks after the loop.
#[test]
fn start_up_errors_exit_as_memcached() {
    let cases: &[(&[&str], i32)] = &[
        (&["-o", "bogus"], 1),
        (&["-o", "idle_timeout=x"], 1),
        (&["-c", "0"], 1),
        (&["-t", "0"], 1),
        (&["-R", "0"], 1),
        (&["-Q"], 1),
        (&["-B", "xx"], 64),
        (&["-I", "100"], 64),
        (&["-m", "8", "-I", "5m"], 64),
    ];
    for (args, code) in cases {
        let out = std::process::Command::new(common::binary())
            .args(["-p", &common::free_port().to_string(), "-U", "0"])
            .args(*args)
            .args(common::user_args())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
