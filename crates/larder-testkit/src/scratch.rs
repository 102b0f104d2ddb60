//! Scratch directories for tests: made under the system temp directory,
//! named for the test process, and removed when the test is done with them,
//! so that runs do not pile up directories in /tmp.
//!
//! A [`ScratchDir`] is removed on drop. A directory a test process keeps
//! for its whole life (the TLS test PKI, held in a static, which is never
//! dropped) is removed by the next process that makes one of the same kind:
//! [`sweep_dead`] takes away those whose process has ended.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A directory that exists until this value is dropped.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// A new, empty directory `<temp>/larder-<kind>-<pid>-<n>`.
    pub fn new(kind: &str) -> ScratchDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("larder-{kind}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
        ScratchDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Removes `<temp>/larder-<kind>-<pid>[-...]` directories whose process is
/// no longer running (Linux: no `/proc/<pid>`). Elsewhere it removes nothing.
pub fn sweep_dead(kind: &str) {
    let prefix = format!("larder-{kind}-");
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else { continue };
        let pid = rest.split('-').next().unwrap_or("");
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) || pid == std::process::id().to_string() {
            continue;
        }
        if Path::new("/proc/self").exists() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_dir_is_removed_on_drop() {
        let d = ScratchDir::new("scratch-test");
        std::fs::write(d.path().join("f"), b"x").unwrap();
        let p = d.path().to_path_buf();
        assert!(p.is_dir());
        drop(d);
        assert!(!p.exists());
    }

    #[test]
    fn sweep_removes_only_directories_of_ended_processes() {
        // pid 0 names no process a test could be; /proc/0 does not exist.
        let dead = std::env::temp_dir().join("larder-sweep-test-0-1");
        std::fs::create_dir_all(&dead).unwrap();
        let live = ScratchDir::new("sweep-test");
        sweep_dead("sweep-test");
        assert!(!dead.exists(), "a dead process's directory is swept");
        assert!(live.path().is_dir(), "this process's stays");
    }
}
