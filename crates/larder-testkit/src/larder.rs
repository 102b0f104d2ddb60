//! The `larder` server under test: started on a free port, ready when it
//! answers, killed when the handle is dropped (a failing test leaves no
//! server behind).

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::launch;

/// The `larder` binary under test.
///
/// Cargo names it in `CARGO_BIN_EXE_larder` for larder-server's integration
/// tests: at compile time (what `tests/common/mod.rs` reads with `env!`) and,
/// with a recent cargo, at run time too, which is what this reads. Without
/// it, the binary is looked up where cargo puts it, next to the `deps/`
/// directory holding the running test executable (`target/<profile>/larder`);
/// cargo builds it before running any larder-server integration test.
pub fn larder_binary() -> PathBuf {
    find_larder_binary().unwrap_or_else(|| panic!("no larder binary at {} ({LARDER_BUILD})", expected_larder_binary().display()))
}

/// How to build the binary [`larder_binary`] looks for.
pub const LARDER_BUILD: &str = "build it: cargo build -p larder-server, with --release for release tests";

/// [`larder_binary`], or `None` if it has not been built (for tests outside
/// larder-server, which cargo does not make build it).
pub fn find_larder_binary() -> Option<PathBuf> {
    let bin = expected_larder_binary();
    bin.is_file().then_some(bin)
}

/// Where [`larder_binary`] looks.
fn expected_larder_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("CARGO_BIN_EXE_larder") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let mut dir = exe.parent().expect("the test executable's directory").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join("larder")
}

/// A running larder and the port its clients use.
pub struct Larder {
    pub child: Child,
    pub port: u16,
}

/// A larder's stderr, collected by a thread as it is written (so a chatty
/// server never blocks on a full pipe).
#[derive(Clone)]
pub struct Stderr(Arc<Mutex<Vec<u8>>>);

impl Stderr {
    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Waits (up to `limit`) until the stderr written so far contains
    /// `needle`; the whole text if it does, `None` on timeout.
    pub fn wait_for(&self, needle: &str, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            let t = self.text();
            if t.contains(needle) {
                return Some(t);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Larder {
    /// Starts larder with `args` (plus `-p <free port>`, and `-U 0` unless
    /// `args` has `-U`); its stderr goes to the test's stderr.
    pub fn start(args: &[&str]) -> Larder {
        Larder::spawn(args, false)
    }

    /// As [`Larder::start`], with its stderr collected for the test to read.
    pub fn start_capturing_stderr(args: &[&str]) -> (Larder, Stderr) {
        let mut l = Larder::spawn(args, true);
        let mut pipe = l.child.stderr.take().expect("piped stderr");
        let log = Stderr(Arc::new(Mutex::new(Vec::new())));
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends at EOF, when the server exits.
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                sink.0.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        (l, log)
    }

    /// `capture_stderr`: a pipe (read by [`Larder::start_capturing_stderr`])
    /// instead of the test's stderr.
    fn spawn(args: &[&str], capture_stderr: bool) -> Larder {
        Larder::spawn_auth(args, capture_stderr, None)
    }

    /// Starts larder with `-Y` (in `args`); the launcher authenticates as
    /// `user`/`pass` to see that it is up. Connections the test opens start
    /// unauthenticated.
    pub fn start_with_auth(args: &[&str], user: &str, pass: &str) -> Larder {
        Larder::spawn_auth(args, false, Some((user, pass)))
    }

    /// Starts larder with `args` and its admin listener (`-o metrics_port=`)
    /// on a free port of its own; returns it with that port once both
    /// listeners accept. (A server that finds its admin port taken exits
    /// and the launcher tries other ports.)
    pub fn start_with_admin(args: &[&str]) -> (Larder, u16) {
        let admin = std::cell::Cell::new(0u16);
        let l = Larder::spawn_with(args, false, None, |cmd| {
            let mport = launch::free_port();
            admin.set(mport);
            cmd.args(["-o", &format!("metrics_port={mport}")]);
        });
        let mport = admin.get();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", mport)).is_err() {
            assert!(Instant::now() < deadline, "the admin listener on {mport} did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        (l, mport)
    }

    fn spawn_auth(args: &[&str], capture_stderr: bool, auth: launch::Credentials<'_>) -> Larder {
        Larder::spawn_with(args, capture_stderr, auth, |_| {})
    }

    /// `more` adds flags per try (it runs for each port tried).
    fn spawn_with(args: &[&str], capture_stderr: bool, auth: launch::Credentials<'_>, more: impl Fn(&mut Command)) -> Larder {
        let bin = larder_binary();
        let (child, port) = launch::start_on_free_port_auth("larder", auth, |port| {
            let mut cmd = Command::new(&bin);
            cmd.args(["-p", &port.to_string()]);
            more(&mut cmd);
            if !args.contains(&"-U") {
                cmd.args(["-U", "0"]);
            }
            // Root needs -u (see `launch::user_args`); a test that passes
            // its own -u gets exactly its flags.
            if !args.contains(&"-u") {
                cmd.args(launch::user_args());
            }
            cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null());
            cmd.stderr(if capture_stderr { Stdio::piped() } else { Stdio::inherit() });
            cmd
        });
        Larder { child, port }
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.port)
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The server's resident memory now (VmRSS from /proc), in bytes.
    pub fn rss_bytes(&self) -> u64 {
        self.status_kib("VmRSS:") * 1024
    }

    /// The server's peak resident set so far (`VmHWM`), in bytes.
    pub fn peak_rss_bytes(&self) -> u64 {
        self.status_kib("VmHWM:") * 1024
    }

    /// A `kB` field of `/proc/<pid>/status`.
    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{field} in /proc/<pid>/status"))
    }

    /// Sends a signal (`"TERM"`, `"INT"`, …) and waits (bounded) for the
    /// exit status.
    pub fn signal_and_wait(&mut self, sig: &str) -> std::process::ExitStatus {
        Command::new("kill").args([&format!("-{sig}"), &self.pid().to_string()]).status().unwrap();
        self.wait_exit(Duration::from_secs(10)).expect("larder did not exit")
    }

    /// The exit status, if the server exits within `limit`.
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
        launch::kill(&mut self.child);
    }
}
