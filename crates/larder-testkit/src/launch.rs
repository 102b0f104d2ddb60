//! Starting a server process on a free port and knowing it is ours.
//!
//! A port found free can be taken by another test's server between our check
//! and the bind (tests run in parallel); then our server exits, and a
//! connection would reach the other one and the test would talk to the wrong
//! server. So a start counts only once `stats` on the port answers with our
//! child's pid; otherwise it is retried on another port. Both launchers
//! ([`Larder`](crate::Larder), [`Memcached`](crate::Memcached)) use this.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::client::Client;

/// A port on 127.0.0.1 that was free a moment ago (the OS's choice for
/// port 0). Another process may take it before it is used: see the module
/// documentation for how the launchers cope.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `n` distinct free ports: all are held while the next is chosen, so the
/// OS cannot hand out the same one twice.
pub fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<TcpListener> = (0..n).map(|_| TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    held.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

/// How many ports a launcher tries before giving up.
const TRIES: usize = 10;
/// How long one start may take to answer. Generous: a warm restart loads
/// its snapshot before it answers (warm_restart.rs's 1 GiB took over 10 s
/// once on a loaded 2-core machine), and a start that fails fails fast
/// anyway (the child exits).
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Credentials a server started with `-Y` wants before it answers `stats`.
pub type Credentials<'a> = Option<(&'a str, &'a str)>;

/// Spawns `command(port)` on free ports until the child answers `stats` on
/// its port with its own pid; returns it and the port. `what` names the
/// server in the panic message when no try succeeds. With `auth`, the
/// launcher authenticates first (`-Y`: an unauthenticated `stats` is
/// refused).
pub(crate) fn start_on_free_port_auth(what: &str, auth: Credentials<'_>, mut command: impl FnMut(u16) -> Command) -> (Child, u16) {
    for _ in 0..TRIES {
        let port = free_port();
        let mut child = command(port).spawn().unwrap_or_else(|e| panic!("start {what}: {e}"));
        if answers_as(&mut child, port, auth) {
            return (child, port);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("{what} did not start on a free port in {TRIES} tries");
}

/// Whether `child` answers on `port` (false: it exited, took too long, or
/// someone else's server answers there).
pub(crate) fn answers_as(child: &mut Child, port: u16, auth: Credentials<'_>) -> bool {
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if child.try_wait().ok().flatten().is_some() {
            return false;
        }
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut c = Client { reader: std::io::BufReader::new(s) };
            if let Some((user, pass)) = auth {
                if !c.try_authenticate(user, pass) {
                    return false;
                }
            }
            return c.try_pid() == Some(u64::from(child.id()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Kills `child` and reaps it; used by the launchers' `Drop`.
pub(crate) fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Whether the tests run as root (effective uid 0; the owner of
/// `/proc/self` is the process's effective uid, which spares the kit a libc
/// dependency).
pub fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// `-u root` when running as root, else nothing. larder, like memcached,
/// refuses to start as root without `-u`; tests and CI run as root, and
/// `-u root` says "stay root, on purpose" to both.
pub fn user_args() -> &'static [&'static str] {
    if running_as_root() {
        &["-u", "root"]
    } else {
        &[]
    }
}

/// Polls `f` every 50 ms for up to `limit` until it holds; its last answer.
/// For figures a server settles just after its client got a reply (a
/// connection gives its buffers back at the end of its event). Time only
/// bounds the wait: nothing is asserted about how long it took.
pub fn eventually(limit: std::time::Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_and_bindable() {
        let ports = free_ports(8);
        let mut sorted = ports.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 8, "{ports:?}");
        assert!(ports.iter().all(|&p| p != 0));
    }

    #[test]
    fn a_child_that_exits_does_not_count_as_started() {
        let port = free_port();
        let mut child = Command::new("true").spawn().unwrap();
        assert!(!answers_as(&mut child, port, None));
        kill(&mut child);
    }
}
