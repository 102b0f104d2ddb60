//! Shared by the integration tests: larder nodes started from the workspace's
//! release binary, and the Python with pylibmc that scripts/test installs.

#![allow(dead_code)]

use std::path::PathBuf;

use larder_testkit::Larder;

pub fn start_nodes(n: usize, args: &[&str]) -> Vec<Larder> {
    (0..n).map(|_| Larder::start(args)).collect()
}

pub fn addrs(nodes: &[Larder]) -> Vec<String> {
    nodes.iter().map(|l| format!("127.0.0.1:{}", l.port)).collect()
}

/// tests/.work/venv/bin/python (scripts/test's venv), or $LARDER_PYTHON.
pub fn python_with_pylibmc() -> Option<PathBuf> {
    let p = match std::env::var_os("LARDER_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/.work/venv/bin/python"),
    };
    let ok = std::process::Command::new(&p).args(["-c", "import pylibmc"]).output().map(|o| o.status.success()).unwrap_or(false);
    ok.then_some(p)
}

/// A larder on a port chosen by the test (to restart it on the same port,
/// which `Larder::start` cannot: it picks a free port each time). Killed on drop.
pub struct OnPort {
    child: std::process::Child,
    pub port: u16,
}

impl OnPort {
    pub fn start(port: u16) -> OnPort {
        let child = std::process::Command::new(larder_testkit::larder_binary())
            .args(["-p", &port.to_string(), "-U", "0"])
            .args(larder_testkit::user_args())
            .spawn()
            .expect("start larder");
        let up = larder_testkit::eventually(std::time::Duration::from_secs(10), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        assert!(up, "larder did not start on {port}");
        OnPort { child, port }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for OnPort {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
