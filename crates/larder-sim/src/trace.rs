//! Loading the cache2k traces in the repository's `traces/` (see its README).
//!
//! Format (the traces' README): an xz-compressed sequence of big-endian
//! signed 32-bit integers, one key per request, no sizes. Decompression pipes
//! through the `xz` command (`xz -dc`), as larder-bench does: xz-utils is on
//! every Debian system, a trace is read once per run, and an xz decoder crate
//! (liblzma's C build, or a large pure-Rust port) would be the crate's only
//! dependency and buy nothing.

use std::path::{Path, PathBuf};

/// Where the traces are unless `--traces DIR` says otherwise: `$LARDER_TRACES`, else the
/// repository's own `traces/` (found from this crate's directory at build time).
pub fn default_dir() -> PathBuf {
    std::env::var_os("LARDER_TRACES").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces"))
}

/// A loaded trace: one key per request.
pub struct Trace {
    pub name: String,
    pub keys: Vec<u32>,
    pub unique: usize,
}

impl Trace {
    pub fn from_keys(name: &str, keys: Vec<u32>) -> Trace {
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        Trace { name: name.to_string(), unique: sorted.len(), keys }
    }
}

/// Big-endian i32 keys from raw (decompressed) bytes.
pub fn parse(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]) as u32).collect()
}

/// Reads one `.trace.xz` file with `xz -dc`.
pub fn load(path: &Path) -> Result<Trace, String> {
    let out = std::process::Command::new("xz")
        .arg("-dc")
        .arg(path)
        .output()
        .map_err(|e| format!("running xz -dc {}: {e} (install xz-utils)", path.display()))?;
    if !out.status.success() {
        return Err(format!("xz -dc {} failed: {}", path.display(), String::from_utf8_lossy(&out.stderr).trim()));
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("trace");
    let name = name.trim_end_matches(".xz").trim_end_matches(".trace").trim_start_matches("cache2k-");
    Ok(Trace::from_keys(name, parse(&out.stdout)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_endian_signed() {
        let b = [0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0, 0, 1, 0];
        assert_eq!(parse(&b), vec![7, u32::MAX, 256]);
        let t = Trace::from_keys("t", parse(&b));
        assert_eq!(t.unique, 3);
    }
}
