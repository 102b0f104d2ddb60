//! Warm restart (`-e <file>`): the snapshot file around the store's
//! snapshot format (`larder_store::Store::save_snapshot`, format and
//! checks documented there and in `docs/warm-restart.md`).
//!
//! * **Save** (graceful stop, SIGUSR1, after every worker has stopped):
//!   written to `<file>.tmp`, fsynced, renamed over `<file>`, directory
//!   fsynced. A crash (kill -9) mid-save leaves only the `.tmp`, which the
//!   next start removes: never a torn `<file>`.
//! * **Load** (start-up, after the sockets are bound and before any client
//!   is served): every block is verified before its items are stored; once
//!   loaded, `<file>` is removed (as memcached removes its metadata file),
//!   so a later crash cannot bring back values that the server has since
//!   overwritten or deleted.
//! * **Refusal.** A file that is not a larder snapshot (another program's,
//!   memcached's `<file>.meta` next to it, an empty file) or is from a newer
//!   snapshot format stops the start-up with a message and is left in
//!   place: it is not ours to delete, and starting would overwrite it at the
//!   next graceful stop (memcached, too, refuses to start on a metadata
//!   file it cannot parse). A larder snapshot that fails verification
//!   (truncated, a flipped byte) is reported, removed, and the server
//!   starts empty (as memcached starts clean when its metadata does not
//!   validate).
//! * SIGTERM/SIGINT stop without saving, as memcached's do.

use larder_store::{LoadReport, SaveReport, SnapshotClock, SnapshotError, Store};
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What the warm restart did at start-up (`stats larder`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RestartStats {
    /// A snapshot was loaded.
    pub loaded: bool,
    /// Items stored from it.
    pub items_loaded: u64,
    /// Records that expired while the server was down.
    pub items_expired: u64,
    /// Records not stored: over `-I`, or no memory (`-M`).
    pub items_skipped: u64,
    /// Seconds from opening the file to the last item stored.
    pub load_seconds: f64,
    /// The snapshot's size in bytes.
    pub file_bytes: u64,
}

/// Outcome of [`load`] when the server may start.
pub struct Loaded {
    pub stats: RestartStats,
    /// The snapshot was refused after part of it was stored (flushed since):
    /// start from a fresh store so no counter remembers it.
    pub discard_store: bool,
}

fn with_suffix(path: &str, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{path}{suffix}"))
}

/// The temp file a save writes before renaming it over `path`.
pub fn temp_path(path: &str) -> PathBuf {
    with_suffix(path, ".tmp")
}

/// Load the snapshot at `path` into `store` (empty, just created). `Err`:
/// the server must not start (the message says why and what to do).
pub fn load(store: &Store, path: &str, clock: SnapshotClock) -> Result<Loaded, String> {
    let none = Loaded { stats: RestartStats::default(), discard_store: false };
    let tmp = temp_path(path);
    if tmp.exists() {
        // Only a save writes it, and a finished save renames it away.
        eprintln!("[restart] removing {}: left by a save that did not finish", tmp.display());
        fs::remove_file(&tmp).map_err(|e| format!("larder: [restart] cannot remove {}: {e}", tmp.display()))?;
    }
    let meta = with_suffix(path, ".meta");
    if meta.exists() {
        return Err(format!(
            "larder: [restart] {} is memcached's restart metadata: larder cannot reuse memcached's memory file. \
             Remove {} and {path} to start with an empty cache",
            meta.display(),
            meta.display()
        ));
    }
    let started = Instant::now();
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            eprintln!("[restart] no snapshot at {path}, starting with an empty cache");
            return Ok(none);
        }
        Err(e) => return Err(format!("larder: [restart] cannot open {path}: {e}")),
    };
    let file_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let result = store.load_snapshot(BufReader::with_capacity(1 << 20, file), clock);
    let load_seconds = started.elapsed().as_secs_f64();
    match result {
        Ok(rep) => {
            // Loaded: from now on the server's items move on and the file
            // describes the past. Were it left, a crash followed by a start
            // would serve overwritten or deleted values.
            fs::remove_file(path).map_err(|e| {
                format!("larder: [restart] loaded {path} but cannot remove it (a later crash would bring back stale values): {e}")
            })?;
            eprintln!("[restart] {}", describe(path, &rep, load_seconds));
            Ok(Loaded {
                stats: RestartStats {
                    loaded: true,
                    items_loaded: rep.items,
                    items_expired: rep.expired,
                    items_skipped: rep.too_large + rep.no_memory,
                    load_seconds,
                    file_bytes,
                },
                discard_store: false,
            })
        }
        Err(e @ SnapshotError::Damaged(_)) => {
            eprintln!("[restart] {path}: {e}; removing it and starting with an empty cache");
            fs::remove_file(path).map_err(|e| format!("larder: [restart] cannot remove {path}: {e}"))?;
            Ok(Loaded { discard_store: true, ..none })
        }
        Err(e @ (SnapshotError::Foreign | SnapshotError::Future { .. })) => Err(format!(
            "larder: [restart] {path}: {e}. Refusing to start: remove the file (or point -e elsewhere) to start with an empty cache"
        )),
        Err(e) => Err(format!("larder: [restart] {path}: {e}")),
    }
}

fn describe(path: &str, rep: &LoadReport, secs: f64) -> String {
    let mut s = format!(
        "loaded {} items from {path} in {secs:.3} s (saved by larder {}, format {}",
        rep.items, rep.writer_version, rep.format_version
    );
    if rep.expired > 0 {
        s += &format!("; {} expired while stopped", rep.expired);
    }
    if rep.too_large > 0 {
        s += &format!("; {} larger than -I skipped", rep.too_large);
    }
    if rep.no_memory > 0 {
        s += &format!("; {} did not fit in -m", rep.no_memory);
    }
    s + ")"
}

/// Save the store to `path` (graceful stop). The store must no longer be
/// changing (workers stopped).
pub fn save(store: &Store, path: &str, clock: SnapshotClock) -> Result<(SaveReport, f64), String> {
    let started = Instant::now();
    let tmp = temp_path(path);
    let result = write_snapshot(store, &tmp, Path::new(path), clock);
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    let rep = result.map_err(|e| format!("larder: [restart] saving to {path} failed: {e}"))?;
    Ok((rep, started.elapsed().as_secs_f64()))
}

fn write_snapshot(store: &Store, tmp: &Path, path: &Path, clock: SnapshotClock) -> std::io::Result<SaveReport> {
    let file = OpenOptions::new().write(true).create(true).truncate(true).open(tmp)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let rep = store.save_snapshot(&mut w, clock, env!("CARGO_PKG_VERSION"))?;
    w.flush()?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    drop(file);
    fs::rename(tmp, path)?;
    // The rename itself reaches the disk only with the directory.
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use larder_store::{Config, Lookup, Mode};

    const SAVE: SnapshotClock = SnapshotClock { now: 100, unix_now: 2_000_000 };
    const LOAD: SnapshotClock = SnapshotClock { now: 2, unix_now: 2_000_010 };

    fn store() -> Store {
        Store::new(Config { memory_limit: 16 << 20, ..Config::default() }).unwrap()
    }

    /// A snapshot path in a directory removed when the guard drops.
    fn dir(name: &str) -> (larder_testkit::scratch::ScratchDir, String) {
        let d = larder_testkit::scratch::ScratchDir::new(&format!("persist-{name}"));
        let path = d.path().join("cache").to_string_lossy().into_owned();
        (d, path)
    }

    fn full() -> Store {
        let s = store();
        for i in 0..500 {
            s.store(Mode::Set, format!("k{i}").as_bytes(), i, 0, format!("value {i}").as_bytes(), SAVE.now);
        }
        s
    }

    #[test]
    fn save_then_load_removes_the_file() {
        let (_scratch, path) = dir("roundtrip");
        let (rep, _) = save(&full(), &path, SAVE).unwrap();
        assert_eq!(rep.items, 500);
        assert!(Path::new(&path).exists() && !temp_path(&path).exists());
        let s = store();
        let l = load(&s, &path, LOAD).unwrap();
        assert_eq!((l.stats.loaded, l.stats.items_loaded, l.discard_store), (true, 500, false));
        assert_eq!(s.get(b"k7", LOAD.now, |it| it.value.to_vec()), Lookup::Hit(b"value 7".to_vec()));
        // Gone once loaded: a crash now cannot bring these values back.
        assert!(!Path::new(&path).exists());
        let l = load(&store(), &path, LOAD).unwrap();
        assert!(!l.stats.loaded);
    }

    #[test]
    fn an_interrupted_save_is_discarded() {
        let (_scratch, path) = dir("interrupted");
        save(&full(), &path, SAVE).unwrap();
        // A save killed mid-write: its temp file, part of a snapshot.
        let bytes = fs::read(&path).unwrap();
        fs::remove_file(&path).unwrap();
        fs::write(temp_path(&path), &bytes[..bytes.len() / 2]).unwrap();
        let s = store();
        let l = load(&s, &path, LOAD).unwrap();
        assert!(!l.stats.loaded && !temp_path(&path).exists());
        assert_eq!(s.get(b"k7", LOAD.now, |_| ()), Lookup::Miss);
    }

    #[test]
    fn damaged_starts_empty_foreign_refuses() {
        let (_scratch, path) = dir("damaged");
        save(&full(), &path, SAVE).unwrap();
        let mut bytes = fs::read(&path).unwrap();
        bytes[200] ^= 4;
        fs::write(&path, &bytes).unwrap();
        let l = load(&store(), &path, LOAD).unwrap();
        assert!(l.discard_store && !l.stats.loaded);
        assert!(!Path::new(&path).exists(), "a damaged snapshot is removed");
        // Foreign: refused, left in place.
        fs::write(&path, b"not a snapshot").unwrap();
        let e = load(&store(), &path, LOAD).err().unwrap();
        assert!(e.contains("not a larder snapshot"), "{e}");
        assert!(Path::new(&path).exists());
        fs::remove_file(&path).unwrap();
        // memcached's metadata file next to it.
        fs::write(format!("{path}.meta"), b"").unwrap();
        let e = load(&store(), &path, LOAD).err().unwrap();
        assert!(e.contains(".meta"), "{e}");
    }
}
