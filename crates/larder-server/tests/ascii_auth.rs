//! `-Y` ASCII authentication over the wire: the handshake, every command
//! refused before it, hostile clients (huge or endless "passwords", many
//! failed attempts), the counters, and the same bytes sent to `memcached -Y`
//! where it is installed.

mod common;
use common::{Client, Larder, Memcached};
use std::time::Duration;

/// memcached's own test file's credentials, plus one.
const AUTHFILE: &str = "foo:bar\nbaaaz:quux\n";

fn authfile() -> tempfile_path::Path {
    tempfile_path::Path::with(AUTHFILE)
}

/// A file removed when dropped (no tempfile crate in the workspace).
mod tempfile_path {
    pub struct Path(pub std::path::PathBuf);
    impl Path {
        pub fn with(content: &str) -> Path {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("larder-authfile-{}-{n}", std::process::id()));
            std::fs::write(&p, content).unwrap();
            Path(p)
        }
        pub fn as_str(&self) -> &str {
            self.0.to_str().unwrap()
        }
    }
    impl Drop for Path {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

fn larder(file: &tempfile_path::Path) -> Larder {
    Larder::start_with_auth(&["-Y", file.as_str()], "foo", "bar")
}

/// Authenticate `c` as foo/bar.
fn login(c: &mut Client) {
    c.expect(b"set x 0 0 7\r\nfoo bar\r\n", b"STORED\r\n");
}

/// Every command of every text-borne protocol, refused the same way.
const REFUSED: &[&[u8]] = &[
    b"get foo\r\n",
    b"gets foo\r\n",
    b"gat 0 foo\r\n",
    b"delete foo\r\n",
    b"incr foo 1\r\n",
    b"touch foo 0\r\n",
    b"add foo 0 0 1\r\n",
    b"cas foo 0 0 1 1\r\n",
    b"stats\r\n",
    b"stats settings\r\n",
    b"flush_all\r\n",
    b"version\r\n",
    b"verbosity 1\r\n",
    b"quit\r\n",
    b"shutdown\r\n",
    b"mg foo v\r\n",
    b"ms foo 1\r\n",
    b"md foo\r\n",
    b"ma foo\r\n",
    b"mn\r\n",
    b"me foo\r\n",
    b"watch\r\n",
    b"lru_crawler metadump all\r\n",
    b"\r\n",
    b"set\r\n",
    b"set foo 0 0\r\n",
    b"set foo 0 0 -1\r\n",
    b"SET foo 0 0 1\r\n",
];

#[test]
fn handshake_and_refusals() {
    let f = authfile();
    let l = larder(&f);
    let mut c = l.connect();
    for req in REFUSED {
        c.expect(req, b"CLIENT_ERROR unauthenticated\r\n");
    }
    // A `set` line announces a block whatever else it says; the block is
    // judged only when all of it is in.
    c.expect(b"set foo 0 0 1 extra\r\n", b"");
    c.expect(b"x\r\n", b"CLIENT_ERROR bad authentication token format\r\n");
    c.expect(b"set foo 0 0 3\r\nfooXY", b"CLIENT_ERROR bad command line termination\r\n");
    c.expect(b"set foo 0 0 7\r\nfoo bab\r\n", b"CLIENT_ERROR authentication failure\r\n");
    c.expect(b"set foo 0 0 3\r\nfoo\r\n", b"CLIENT_ERROR bad authentication token format\r\n");
    c.expect(b"set foo 0 0 4\r\nbar \r\n", b"CLIENT_ERROR bad authentication token format\r\n");
    // Nothing of those was stored: the key, the flags and noreply are ignored.
    c.expect(b"set anykey 123 456 7 noreply\r\nfoo bar\r\n", b"STORED\r\n");
    c.expect(b"get foo\r\n", b"END\r\n");
    c.expect(b"set toast 0 0 2\r\nhi\r\n", b"STORED\r\n");
    c.expect(b"get toast\r\n", b"VALUE toast 0 2\r\nhi\r\nEND\r\n");
    c.expect(b"mn\r\n", b"MN\r\n");
    // Per connection: a second one starts unauthenticated, and the other
    // user works on it.
    let mut d = l.connect();
    d.expect(b"get toast\r\n", b"CLIENT_ERROR unauthenticated\r\n");
    d.expect(b"set k 0 0 10\r\nbaaaz quux\r\n", b"STORED\r\n");
    d.expect(b"get toast\r\n", b"VALUE toast 0 2\r\nhi\r\nEND\r\n");
    // A pipelined login and command: each answered (memcached would send
    // only the last reply of such a batch; see wire/gate.rs).
    let mut e = l.connect();
    e.expect(b"set k 0 0 7\r\nfoo bab\r\nget k\r\nset k 0 0 7\r\nfoo bar\r\nget toast\r\n", b"CLIENT_ERROR authentication failure\r\nCLIENT_ERROR unauthenticated\r\nSTORED\r\nVALUE toast 0 2\r\nhi\r\nEND\r\n");
    let settings = c.stats("settings");
    let get = |n: &str| settings.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    assert_eq!(get("auth_enabled_ascii").as_deref(), Some(f.as_str()), "memcached shows the file's path");
    assert_eq!(get("binding_protocol").as_deref(), Some("ascii"));
    // The launcher's login, c's, d's and e's two: 5 attempts, 2 failed (c, e).
    assert_eq!((c.stat("auth_cmds"), c.stat("auth_errors")), (6, 2));
}

#[test]
fn hostile_clients_are_bounded() {
    let f = authfile();
    let l = larder(&f);
    // A "password" block announced larger than 16 KiB: memcached 1.6.45
    // answers the line (t/ascii-auth.t at 1.6.45), reads none of it as a
    // block, and the connection may still log in; nothing is buffered.
    let mut c = l.connect();
    c.expect(b"set k 0 0 1000000000\r\n", b"CLIENT_ERROR auth token too long\r\n");
    c.expect(b"set k 0 0 2147483646\r\n", b"CLIENT_ERROR auth token too long\r\n");
    login(&mut c);
    // One that is not larger but does not fit the 16 KiB read buffer with
    // its \r\n: closed without a reply, as before.
    let mut c = l.connect();
    c.send(b"set k 0 0 16384\r\n");
    c.set_read_timeout(Some(Duration::from_secs(5)));
    assert!(c.is_closed());
    // The largest block memcached takes is read and judged.
    let mut c = l.connect();
    let pass = "p".repeat(16 * 1024 - 2 - 4);
    c.expect(format!("set k 0 0 {}\r\nfoo {pass}\r\n", pass.len() + 4).as_bytes(), b"CLIENT_ERROR authentication failure\r\n");
    // A line that never ends: closed after 2 KiB, as memcached.
    let mut c = l.connect();
    c.send(&[b'x'; 4096]);
    c.set_read_timeout(Some(Duration::from_secs(5)));
    assert!(c.is_closed());
    // Many failed attempts: all answered, counted, and the server still
    // lets the right user in.
    // Counters read on a connection of their own (logged in), so that the
    // one under attack stays unauthenticated.
    let mut watcher = l.connect();
    login(&mut watcher);
    let before = (watcher.stat("auth_cmds"), watcher.stat("auth_errors"));
    let mut c = l.connect();
    let mut burst = Vec::new();
    for i in 0..500 {
        burst.extend_from_slice(format!("set k 0 0 8\r\nfoo {i:04}\r\n").as_bytes());
    }
    c.send(&burst);
    for _ in 0..500 {
        assert_eq!(c.line(), "CLIENT_ERROR authentication failure\r\n");
    }
    login(&mut c);
    let after = (c.stat("auth_cmds"), c.stat("auth_errors"));
    assert_eq!((after.0 - before.0, after.1 - before.1), (501, 500));
}

#[test]
fn start_up_refusals_match_memcached() {
    let bad = tempfile_path::Path::with("foo:bar\n\nbaaaz:quux\n");
    let good = authfile();
    let cases: &[(&[&str], i32, &str)] = &[
        (&["-Y", bad.as_str()], 1, "has a malformed entry. Should be 'user:password'"),
        (&["-Y", "/nonexistent/authfile"], 1, "Could not open authfile [/nonexistent/authfile] for reading"),
        (&["-Y", good.as_str(), "-B", "binary"], 64, "You cannot allow the BINARY protocol while using ascii authentication tokens."),
        (&["-Y", good.as_str(), "-B", "auto"], 64, "You cannot allow the BINARY protocol"),
        (&["-Y", good.as_str(), "-U", "11999"], 64, "Cannot use UDP with ascii authentication enabled (-U 0 to disable)"),
    ];
    for (args, code, needle) in cases {
        let out = std::process::Command::new(common::binary())
            .args(["-p", &common::free_port().to_string()])
            .args(*args)
            .args(common::user_args())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn sighup_reloads_the_authfile() {
    let f = authfile();
    let l = larder(&f);
    std::fs::write(&f.0, "new:secret\n").unwrap();
    std::process::Command::new("kill").args(["-HUP", &l.pid().to_string()]).status().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut c = l.connect();
    c.expect(b"set k 0 0 7\r\nfoo bar\r\n", b"CLIENT_ERROR authentication failure\r\n");
    c.expect(b"set k 0 0 10\r\nnew secret\r\n", b"STORED\r\n");
    // A refused file keeps the previous credentials, as memcached.
    std::fs::write(&f.0, "no colon here\n").unwrap();
    std::process::Command::new("kill").args(["-HUP", &l.pid().to_string()]).status().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut d = l.connect();
    d.expect(b"set k 0 0 10\r\nnew secret\r\n", b"STORED\r\n");
}

/// The same conversation, byte for byte, with memcached -Y (one request
/// at a time: memcached drops all but the last reply of a pipelined batch).
#[test]
fn same_replies_as_memcached() {
    let f = authfile();
    let Some(mc) = Memcached::start_with_auth_or_skip(&["-Y", f.as_str()], "foo", "bar") else { return };
    let l = larder(&f);
    let script: Vec<&[u8]> = REFUSED
        .iter()
        .copied()
        .chain([
            &b"set k 0 0 7\r\nfoo bab\r\n"[..],
            b"set k 0 0 3\r\nfoo\r\n",
            b"set k 0 0 3\r\nfooXY",
            b"set k 0 0 7\nfoo bar\r\n",
            b"get k\r\n",
            b"set toast 0 0 2\r\nhi\r\n",
            b"get toast\r\n",
            b"mn\r\n",
        ])
        .collect();
    let mut a = mc.connect();
    let mut b = l.connect();
    // Whatever arrives until the connection has been quiet for 100 ms (some
    // requests get no reply). larder's side waits up to 3 s for as many
    // bytes as memcached sent, so a loaded machine delays, not fails, it.
    let settled = |c: &mut Client, at_least: usize| {
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        let mut got = c.read_for(Duration::from_millis(150));
        loop {
            let more = c.read_for(Duration::from_millis(100));
            if more.is_empty() && (got.len() >= at_least || std::time::Instant::now() > deadline) {
                return got;
            }
            got.extend(more);
        }
    };
    for req in script {
        a.send(req);
        b.send(req);
        let ra = settled(&mut a, 0);
        let rb = settled(&mut b, ra.len());
        assert_eq!(String::from_utf8_lossy(&rb), String::from_utf8_lossy(&ra), "after {:?}", String::from_utf8_lossy(req));
    }
}
