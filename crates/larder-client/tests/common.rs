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
