//! The reference server: memcached 1.6.18 as Debian packages it
//! (`/usr/bin/memcached`, or `$MEMCACHED_BIN`), for tests that send the same
//! bytes to memcached and to larder and compare, or that check a format
//! against the real thing.
//!
//! When it is not installed, [`Memcached::start_or_skip`] applies the
//! workspace's rule for missing dependencies ([`crate::require_or_skip`]):
//! a failure under CI, a loud `SKIPPED:` elsewhere.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::client::Client;
use crate::launch;
use crate::policy::require_or_skip;

/// Where to look for memcached unless `MEMCACHED_BIN` says otherwise.
pub const DEFAULT_MEMCACHED: &str = "/usr/bin/memcached";

/// How to get it, for the messages.
const INSTALL: &str = "apt-get install memcached (scripts/test installs it)";

/// A running memcached and its port; killed when dropped.
pub struct Memcached {
    pub child: Child,
    pub port: u16,
}

impl Memcached {
    /// The memcached binary to use (`$MEMCACHED_BIN`, else
    /// `/usr/bin/memcached`), and whether it exists.
    pub fn binary() -> (PathBuf, bool) {
        let bin = PathBuf::from(std::env::var_os("MEMCACHED_BIN").unwrap_or_else(|| DEFAULT_MEMCACHED.into()));
        let exists = bin.is_file();
        (bin, exists)
    }

    /// Starts memcached on a free port of 127.0.0.1 with TCP only, plus
    /// `extra` arguments; returns once it answers. `None` when it is not
    /// installed and the environment allows skipping (see the module
    /// documentation); under CI a missing memcached panics.
    pub fn start_or_skip(extra: &[&str]) -> Option<Memcached> {
        let (bin, exists) = Memcached::binary();
        let missing = format!("memcached at {} (set MEMCACHED_BIN to use another)", bin.display());
        require_or_skip(exists.then_some(()), &missing, INSTALL)?;
        Some(Memcached::start(extra))
    }

    /// As [`Memcached::start_or_skip`], for tests that cannot run at all
    /// without memcached: panics if it is missing.
    pub fn start(extra: &[&str]) -> Memcached {
        Memcached::start_auth(extra, None)
    }

    /// As [`Memcached::start_or_skip`] for a memcached started with `-Y`
    /// (in `extra`): the launcher authenticates as `user`/`pass`.
    pub fn start_with_auth_or_skip(extra: &[&str], user: &str, pass: &str) -> Option<Memcached> {
        let (bin, exists) = Memcached::binary();
        let missing = format!("memcached at {} (set MEMCACHED_BIN to use another)", bin.display());
        require_or_skip(exists.then_some(()), &missing, INSTALL)?;
        Some(Memcached::start_auth(extra, Some((user, pass))))
    }

    /// As [`Memcached::start`], with the launcher's listener given as
    /// `listen` (`-l`, on the free port): `notls:127.0.0.1` for a memcached
    /// started with `-Z` in `extra`, whose TLS listeners `extra` names
    /// with their own ports, so the launcher can still ask it in plain
    /// text whether it is up.
    pub fn start_listening(listen: &str, extra: &[&str]) -> Memcached {
        Memcached::start_on(listen, extra, None)
    }

    fn start_auth(extra: &[&str], auth: launch::Credentials<'_>) -> Memcached {
        Memcached::start_on("127.0.0.1", extra, auth)
    }

    fn start_on(listen: &str, extra: &[&str], auth: launch::Credentials<'_>) -> Memcached {
        let (bin, exists) = Memcached::binary();
        assert!(exists, "no memcached at {}: {INSTALL}", bin.display());
        let (child, port) = launch::start_on_free_port_auth("memcached", auth, |port| {
            let mut cmd = Command::new(&bin);
            // -u root: memcached refuses to run as root without -u; as
            // another user it ignores the flag.
            cmd.args(["-p", &port.to_string(), "-U", "0", "-l", listen, "-u", "root"]);
            cmd.args(extra).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
            cmd
        });
        Memcached { child, port }
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.port)
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        launch::kill(&mut self.child);
    }
}
