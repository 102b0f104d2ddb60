//! Hit ratio on real traces: load a cache2k trace and replay it as a look-aside cache would
//! (`get`; on a miss, `set`), then report the hit ratio.
//!
//! Format (traces/README.md): xz-compressed big-endian signed 32-bit integers, one key
//! per request. Decompression runs the `xz` command (`xz -dc`): xz-utils is on every Debian
//! system and in CI, and the traces are read once per run, so an xz decoder crate (and its
//! C build or large pure-Rust dependency) buys nothing.
//!
//! Value sizes ([`SizeDist`]): either every key gets the same size (4000 bytes in the
//! original scenarios), or each key draws its own size once from a seeded distribution
//! (uniform 50-500, uniform 500-5000, or Facebook's ETC model, see `dist`) — the draw is a
//! function of the key id and [`SIZE_SEED`] alone, so every server, round and run sees the
//! same size for the same key, and sizes are unrelated to popularity (as the traces carry no
//! sizes, that is the honest assumption). The working set is the sum of the distinct keys'
//! value sizes, and the server's `-m` is the working set divided by 4, 10 or 40, in whole MiB
//! (memcached's `-m` unit), at least 2.
//!
//! Replay is batched for speed over one connection: up to 100 consecutive requests whose keys
//! are all distinct are sent as pipelined `get`s, then the misses among them are `set` in
//! trace order (written together with the next batch's `get`s). A batch never holds the same key twice, so a repeated key always sees the
//! `set` of its earlier miss; the only difference from strict one-by-one replay is that the
//! `get`s of a batch are applied before the batch's `set`s (at most 99 requests of
//! reordering, which cannot change a hit into a miss except through eviction order).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::codec::{self, Frame};
use crate::dist::{Rng, SizeDist};
use crate::workload::{write_key, Values};

/// Where the traces are unless `--traces DIR` says otherwise: `$LARDER_TRACES`, else the
/// repository's own `traces/` (found from this crate's directory at build time).
pub fn default_dir() -> String {
    std::env::var("LARDER_TRACES").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces").to_string())
}

/// A loaded trace: one key id per request.
pub struct Trace {
    pub keys: Vec<u32>,
    pub distinct: usize,
    /// The distinct key ids, sorted (for the working set of variable sizes).
    pub unique: Vec<u32>,
}

/// Seed of the per-key value sizes (fixed: results must be comparable across runs).
pub const SIZE_SEED: u64 = 0x005e_ed0f_5173;

/// The value size of trace key `key` under `sizes`: one draw from a generator seeded by the
/// key id (and [`SIZE_SEED`]), so the same key always has the same size.
#[inline]
pub fn value_size(sizes: &SizeDist, key: u32) -> usize {
    match *sizes {
        SizeDist::Fixed(n) => n,
        _ => sizes.sample(&mut Rng::new(SIZE_SEED ^ ((key as u64) << 8))),
    }
}

/// Sum of the distinct keys' value sizes, in bytes.
pub fn working_set(t: &Trace, sizes: &SizeDist) -> f64 {
    t.unique.iter().map(|&k| value_size(sizes, k) as f64).sum()
}

/// Reads an .xz trace with `xz -dc`.
pub fn load(path: &str) -> Result<Trace, String> {
    let out = std::process::Command::new("xz")
        .arg("-dc")
        .arg(path)
        .output()
        .map_err(|e| format!("running xz -dc {path}: {e} (install xz-utils)"))?;
    if !out.status.success() {
        return Err(format!("xz -dc {path} failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(from_bytes(&out.stdout))
}

pub fn from_bytes(bytes: &[u8]) -> Trace {
    let keys: Vec<u32> = bytes.chunks_exact(4).map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]) as u32).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    sorted.dedup();
    Trace { distinct: sorted.len(), keys, unique: sorted }
}

/// `-m` in MiB for a working set of `ws` bytes: ws ÷ divisor, rounded, at least 2.
pub fn memory_mb(ws: f64, divisor: usize) -> usize {
    ((ws / divisor as f64 / (1024.0 * 1024.0)).round() as usize).max(2)
}

#[derive(Clone, Debug, Default)]
pub struct ReplayResult {
    pub requests: u64,
    pub hits: u64,
    pub misses: u64,
    pub errors: u64,
    pub corrupt: u64,
    pub seconds: f64,
    /// The first error reply, verbatim.
    pub first_error: Option<String>,
}

impl ReplayResult {
    pub fn hit_ratio(&self) -> f64 {
        self.hits as f64 / (self.hits + self.misses).max(1) as f64
    }
}

const KEY_SIZE: usize = 16;
const BATCH: usize = 100;

/// Replays `keys` (at most `max_requests` of them) against `addr`.
///
/// One round trip per batch: the `set`s for batch i's misses are written together with batch
/// i+1's `get`s (memcached executes a connection's requests in order, so the sets land first).
pub fn replay(addr: SocketAddr, keys: &[u32], sizes: &SizeDist, max_requests: usize) -> Result<ReplayResult, String> {
    let keys = &keys[..keys.len().min(max_requests)];
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    s.set_nodelay(true).ok();
    s.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    let values = Values::new(sizes.max());
    let mut r = ReplayResult::default();
    let t0 = Instant::now();
    let mut out = Vec::with_capacity(BATCH * (sizes.mean() as usize + 64));
    let mut rbuf = vec![0u8; 256 * 1024];
    let (mut rs, mut re) = (0usize, 0usize);
    let mut batch: Vec<u32> = Vec::with_capacity(BATCH);
    let mut missed: Vec<u32> = Vec::with_capacity(BATCH);
    let mut i = 0;
    let mut key = Vec::with_capacity(KEY_SIZE + 4);
    loop {
        // sets for the previous batch's misses ...
        out.clear();
        for &k in &missed {
            key.clear();
            write_key(&mut key, b'k', k as u64, KEY_SIZE);
            out.extend_from_slice(b"set ");
            out.extend_from_slice(&key);
            let size = value_size(sizes, k);
            write!(out, " 0 0 {size}\r\n").map_err(|e| e.to_string())?;
            out.extend_from_slice(values.value(&key, size));
            out.extend_from_slice(b"\r\n");
        }
        let sets = missed.len();
        // ... then the next batch: consecutive requests with distinct keys.
        batch.clear();
        while i < keys.len() && batch.len() < BATCH && !batch.contains(&keys[i]) {
            batch.push(keys[i]);
            i += 1;
        }
        if sets == 0 && batch.is_empty() {
            break;
        }
        for &k in &batch {
            out.extend_from_slice(b"get ");
            write_key(&mut out, b'k', k as u64, KEY_SIZE);
            out.extend_from_slice(b"\r\n");
        }
        s.write_all(&out).map_err(|e| e.to_string())?;
        for _ in 0..sets {
            match next_frame(&mut s, &mut rbuf, &mut rs, &mut re)? {
                (Frame::Stored, _) => {}
                (Frame::Error | Frame::NotStored, base) => {
                    r.errors += 1;
                    if r.first_error.is_none() {
                        let line = &rbuf[base..rs];
                        r.first_error = Some(String::from_utf8_lossy(line).trim_end().to_string());
                    }
                }
                (f, _) => return Err(format!("unexpected reply to set: {f:?}")),
            }
        }
        missed.clear();
        for &k in &batch {
            let mut hit = false;
            loop {
                match next_frame(&mut s, &mut rbuf, &mut rs, &mut re)? {
                    (Frame::Value { key: kr, data }, base) => {
                        hit = true;
                        if !values.verify(&rbuf[base + kr.start..base + kr.end], &rbuf[base + data.start..base + data.end]) {
                            r.corrupt += 1;
                        }
                    }
                    (Frame::End, _) => break,
                    (Frame::Error, _) => {
                        r.errors += 1;
                        break;
                    }
                    (f, _) => return Err(format!("unexpected reply to get: {f:?}")),
                }
            }
            r.requests += 1;
            if hit {
                r.hits += 1;
            } else {
                r.misses += 1;
                missed.push(k);
            }
        }
    }
    r.seconds = t0.elapsed().as_secs_f64();
    Ok(r)
}

/// Reads until one frame is complete; returns it with the offset its ranges are relative to.
fn next_frame(s: &mut TcpStream, buf: &mut Vec<u8>, rs: &mut usize, re: &mut usize) -> Result<(Frame, usize), String> {
    loop {
        if let Some((f, used)) = codec::parse_frame(&buf[*rs..*re]).map_err(|e| e.0)? {
            let base = *rs;
            *rs += used;
            return Ok((f, base));
        }
        if *rs > 0 {
            buf.copy_within(*rs..*re, 0);
            *re -= *rs;
            *rs = 0;
        }
        if *re == buf.len() {
            let n = buf.len() * 2;
            buf.resize(n, 0);
        }
        let n = s.read(&mut buf[*re..]).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("server closed the connection".into());
        }
        *re += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_big_endian_keys() {
        let bytes = [0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1];
        let t = from_bytes(&bytes);
        assert_eq!(t.keys, vec![1, u32::MAX, 1]);
        assert_eq!(t.distinct, 2);
    }

    #[test]
    fn memory_limit() {
        assert_eq!(memory_mb(20_484.0 * 4000.0, 4), 20);
        assert_eq!(memory_mb(10.0 * 4000.0, 10), 2);
    }

    #[test]
    fn per_key_sizes_are_stable_in_range_and_spread() {
        let t = from_bytes(&(0..20_000u32).flat_map(|k| k.to_be_bytes()).collect::<Vec<u8>>());
        for spec in ["50-500", "500-5000"] {
            let d = SizeDist::parse(spec).unwrap();
            let (mean_expected, max) = (d.mean(), d.max());
            let sizes: Vec<usize> = t.unique.iter().map(|&k| value_size(&d, k)).collect();
            assert_eq!(sizes, t.unique.iter().map(|&k| value_size(&d, k)).collect::<Vec<_>>(), "same key, same size");
            assert!(sizes.iter().all(|&s| s <= max && s >= max / 10), "{spec}: in range");
            let mean = working_set(&t, &d) / t.distinct as f64;
            assert!((mean - mean_expected).abs() < mean_expected * 0.02, "{spec}: mean {mean}, expected about {mean_expected}");
            let below = sizes.iter().filter(|&&s| (s as f64) < mean_expected).count();
            assert!((9_000..11_000).contains(&below), "{spec}: {below} of 20,000 below the mean");
        }
        let etc = SizeDist::parse("etc").unwrap();
        let mean = working_set(&t, &etc) / t.distinct as f64;
        // ETC: mean of the model ≈ 344 B; the sample mean over 20,000 keys of a heavy tail
        // varies, so only roughly.
        assert!((250.0..450.0).contains(&mean), "ETC mean {mean}");
        assert_eq!(value_size(&SizeDist::Fixed(4000), 7), 4000);
    }
}
