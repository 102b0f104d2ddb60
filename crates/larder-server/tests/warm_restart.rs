//! Warm restart (`-e <file>`) with the real binary: SIGUSR1 saves, the next
//! start with the same `-e` serves every item with the same value, flags,
//! CAS and remaining TTL (items that expired while the server was down are
//! gone); SIGTERM saves nothing; a truncated, corrupted, foreign or
//! future-format file is refused and nothing from it is served; a save
//! killed with SIGKILL leaves nothing a start would load.
//!
//! Values are self-describing (`larder_testkit::values`) and compared byte
//! for byte with a regenerated copy.

mod common;

use common::{Client, Larder};
use larder_testkit::values::make_value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;

/// The big tests hold hundreds of MiB: one at a time.
static HEAVY: Mutex<()> = Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh directory for one test's snapshot (on the RAM disk when there is
/// one, as `-e` is meant to be used).
fn dir(name: &str) -> PathBuf {
    let base = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let d = base.join(format!("larder-warm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// (flags, cas, value) from `gets`, or None on a miss.
fn gets(c: &mut Client, key: &str) -> Option<(u32, u64, Vec<u8>)> {
    c.send(format!("gets {key}\r\n").as_bytes());
    let l = c.line();
    if l == "END\r\n" {
        return None;
    }
    let p: Vec<&str> = l.trim_end().split(' ').collect();
    assert_eq!((p[0], p[1]), ("VALUE", key), "{l:?}");
    let n: usize = p[3].parse().unwrap();
    let v = c.exact(n + 2);
    assert_eq!(c.line(), "END\r\n");
    Some((p[2].parse().unwrap(), p[4].parse().unwrap(), v[..n].to_vec()))
}

/// Remaining TTL (`mg k t`): -1 for none.
fn ttl(c: &mut Client, key: &str) -> i64 {
    c.send(format!("mg {key} t\r\n").as_bytes());
    let l = c.line();
    let t = l.trim_end().strip_prefix("HD t").unwrap_or_else(|| panic!("{key}: {l:?}"));
    t.parse().unwrap()
}

fn set(c: &mut Client, key: &str, flags: u32, exptime: u64, value: &[u8]) {
    c.send(format!("set {key} {flags} {exptime} {}\r\n", value.len()).as_bytes());
    c.send(value);
    c.send(b"\r\n");
    assert_eq!(c.line(), "STORED\r\n", "set {key}");
}

/// What one key should hold: (key id, value length, flags, ttl; 0 = none).
type Spec = (u32, usize, u32, u64);

fn specs() -> Vec<Spec> {
    let mut v = Vec::new();
    for i in 0..600u32 {
        let len = match i % 6 {
            0 => 40,
            1 => 100 + i as usize,
            2 => 5000 + 13 * i as usize,
            3 => 200_000 + 977 * i as usize,
            4 => 40 + (i as usize * 31) % 3000,
            _ => 700,
        };
        let flags = [0, 1, 0xffff_ffff, 12345][i as usize % 4];
        let exp = [0, 0, 3600, 2][i as usize % 4]; // 2 s: expires while down
        v.push((i, len, flags, exp));
    }
    // Large objects, over the 1 MiB segment, up to -I 8m.
    for (i, len) in [(1000, MIB + 1), (1001, 3 * MIB + 5), (1002, 8 * MIB - 1024)] {
        v.push((i, len, 77, 0));
    }
    v
}

fn key(id: u32) -> String {
    format!("warm:{id}")
}

#[test]
fn sigusr1_then_restart_serves_the_same_items() {
    let _g = heavy();
    let d = dir("roundtrip");
    let file = d.join("cache");
    let file_s = file.to_str().unwrap();
    let args = ["-m", "256", "-I", "8m", "-e", file_s];
    let (mut l, err) = Larder::start_capturing_stderr(&args);
    let mut c = l.connect();
    let mut v = Vec::new();
    for &(id, len, flags, exp) in &specs() {
        make_value(&mut v, id, 1, len);
        set(&mut c, &key(id), flags, exp, &v);
    }
    // Overwritten and deleted keys: the restart serves the last state.
    make_value(&mut v, 1, 2, 333);
    set(&mut c, &key(1), 9, 0, &v);
    c.expect(format!("delete {}\r\n", key(5)).as_bytes(), b"DELETED\r\n");
    let before: Vec<_> = specs().iter().map(|s| gets(&mut c, &key(s.0))).collect();
    // (Not for the 2 s items: they may expire between the two reads on a
    // busy machine, and only their absence is checked after the restart.)
    let ttl_before: Vec<i64> =
        specs().iter().zip(&before).map(|(s, b)| if b.is_some() && s.3 != 2 { ttl(&mut c, &key(s.0)) } else { 0 }).collect();
    let saved_at = Instant::now();
    assert!(l.signal_and_wait("USR1").success());
    let text = err.wait_for("[restart] saved", Duration::from_secs(5)).unwrap_or_else(|| err.text());
    assert!(text.contains("Gracefully stopping") && text.contains("[restart] saved"), "{text}");
    assert!(file.exists());
    // Let the 2 s items expire while the server is down.
    std::thread::sleep(Duration::from_millis(2500));

    let (l2, err2) = Larder::start_capturing_stderr(&args);
    assert!(err2.wait_for("[restart] loaded", Duration::from_secs(5)).is_some(), "{}", err2.text());
    assert!(!file.exists(), "the snapshot is removed once loaded");
    let down = saved_at.elapsed().as_secs() as i64 + 1;
    let mut c = l2.connect();
    let mut served: i64 = 0;
    for (n, &(id, _, _, exp)) in specs().iter().enumerate() {
        let got = gets(&mut c, &key(id));
        match (&before[n], exp) {
            (None, _) => assert_eq!(got, None, "{} came back", key(id)),
            (Some(_), 2) => assert_eq!(got, None, "{} expired while down but is served", key(id)),
            (Some(b), _) => {
                let g = got.unwrap_or_else(|| panic!("{} lost", key(id)));
                assert!(g == *b, "{} differs after the restart (flags/cas {:?} vs {:?})", key(id), (g.0, g.1), (b.0, b.1));
                let t = ttl(&mut c, &key(id));
                if exp == 0 {
                    assert_eq!(t, -1);
                } else {
                    let was = ttl_before[n];
                    assert!(t <= was && t >= was - down - 1, "{}: ttl {t}, was {was}, down {down}s", key(id));
                }
                served += 1;
            }
        }
    }
    assert!(served > 400, "{served}");
    // Per-prefix accounting knows the restored items (a later delete must
    // not take out what it never added).
    let prefix_items = |c: &mut Client| -> i64 {
        c.stats("prefixes").iter().find(|(n, _)| n == "prefix:warm:items").map_or(0, |(_, v)| v.parse().unwrap())
    };
    assert_eq!(prefix_items(&mut c), served);
    c.expect(format!("delete {}\r\n", key(0)).as_bytes(), b"DELETED\r\n");
    assert_eq!(prefix_items(&mut c), served - 1);
    // New writes get CAS values above every restored one.
    let max = before.iter().flatten().map(|b| b.1).max().unwrap();
    set(&mut c, &key(0), 0, 0, b"after");
    assert!(gets(&mut c, &key(0)).unwrap().1 > max);
    drop(l2);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sigterm_saves_nothing() {
    let d = dir("term");
    let file = d.join("cache");
    let args = ["-m", "64", "-e", file.to_str().unwrap()];
    let (mut l, _) = Larder::start_capturing_stderr(&args);
    let mut c = l.connect();
    set(&mut c, "k", 0, 0, b"v");
    assert!(l.signal_and_wait("TERM").success());
    assert!(!file.exists(), "memcached saves only on SIGUSR1");
    let l = Larder::start(&args);
    assert_eq!(gets(&mut l.connect(), "k"), None);
    let _ = std::fs::remove_dir_all(&d);
}

/// A valid snapshot of a few items (key "k:<i>" holds "value <i>").
fn snapshot_bytes(d: &Path) -> Vec<u8> {
    let file = d.join("good");
    let args = ["-m", "64", "-e", file.to_str().unwrap()];
    let (mut l, _) = Larder::start_capturing_stderr(&args);
    let mut c = l.connect();
    for i in 0..200 {
        set(&mut c, &format!("k:{i}"), i, 0, format!("value {i}").as_bytes());
    }
    assert!(l.signal_and_wait("USR1").success());
    let b = std::fs::read(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    b
}

/// Starts a larder on `file` expecting it to refuse to start; its stderr.
fn refuses_to_start(file: &Path) -> String {
    let out = Command::new(common::binary())
        .args(["-p", &common::free_port().to_string(), "-U", "0", "-m", "64", "-e", file.to_str().unwrap()])
        .args(common::user_args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success(), "started with {}", file.display());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn damaged_snapshots_are_never_served() {
    let d = dir("damaged");
    let good = snapshot_bytes(&d);
    let file = d.join("cache");
    let args = ["-m", "64", "-e", file.to_str().unwrap()];
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x20;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() - 10].to_vec()),
        ("truncated mid-block", good[..good.len() / 3].to_vec()),
        ("flipped byte", flipped),
    ];
    for (what, bytes) in cases {
        std::fs::write(&file, &bytes).unwrap();
        let (l, err) = Larder::start_capturing_stderr(&args);
        let text = err.wait_for("starting with an empty cache", Duration::from_secs(5)).unwrap_or_else(|| err.text());
        assert!(text.contains("damaged snapshot") && text.contains("starting with an empty cache"), "{what}: {text}");
        let mut c = l.connect();
        for i in 0..200 {
            assert_eq!(gets(&mut c, &format!("k:{i}")), None, "{what}: k:{i} served");
        }
        assert!(!file.exists(), "{what}: the damaged file is removed");
    }
    // The good one loads (so the refusals above were about the damage).
    std::fs::write(&file, &good).unwrap();
    let l = Larder::start(&args);
    assert_eq!(gets(&mut l.connect(), "k:7").map(|x| x.2), Some(b"value 7".to_vec()));
    drop(l);

    // Not ours, or newer than us: refused, the start fails, the file stays.
    std::fs::write(&file, b"some other program's data\n").unwrap();
    let text = refuses_to_start(&file);
    assert!(text.contains("not a larder snapshot"), "{text}");
    assert!(file.exists());
    let mut future = good.clone();
    future[8..12].copy_from_slice(&(larder_store::SNAPSHOT_FORMAT_VERSION + 1).to_le_bytes());
    std::fs::write(&file, &future).unwrap();
    let text = refuses_to_start(&file);
    assert!(text.contains("newer than this larder reads"), "{text}");
    assert_eq!(std::fs::read(&file).unwrap(), future);
    std::fs::remove_file(&file).unwrap();
    // memcached's metadata file (t/restart.t: an empty one must stop it).
    std::fs::write(d.join("cache.meta"), b"").unwrap();
    let text = refuses_to_start(&file);
    assert!(text.contains("cache.meta"), "{text}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn kill_during_save_leaves_nothing_to_load() {
    let _g = heavy();
    let d = dir("kill");
    let file = d.join("cache");
    let tmp = d.join("cache.tmp");
    let args = ["-m", "1200", "-I", "2m", "-e", file.to_str().unwrap()];
    let (mut l, _) = Larder::start_capturing_stderr(&args);
    let mut c = l.connect();
    // About 1 GiB: a save that takes a while.
    let mut v = Vec::new();
    for i in 0..1000u32 {
        make_value(&mut v, i, 1, MIB);
        c.send(format!("set big:{i} 0 0 {}\r\n", v.len()).as_bytes());
        c.send(&v);
        c.send(b"\r\n");
    }
    for _ in 0..1000 {
        assert_eq!(c.line(), "STORED\r\n");
    }
    Command::new("kill").args(["-USR1", &l.pid().to_string()]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(&tmp).map(|m| m.len()).unwrap_or(0) < 64 << 20 {
        assert!(Instant::now() < deadline && !file.exists(), "the save was not caught in progress");
        std::thread::sleep(Duration::from_millis(1));
    }
    Command::new("kill").args(["-KILL", &l.pid().to_string()]).status().unwrap();
    l.wait_exit(Duration::from_secs(10)).expect("killed");
    assert!(!file.exists(), "a killed save must not leave a snapshot");
    assert!(tmp.exists());
    let (l, err) = Larder::start_capturing_stderr(&args);
    let text = err.wait_for("no snapshot", Duration::from_secs(5)).unwrap_or_else(|| err.text());
    assert!(text.contains("did not finish") && text.contains("no snapshot"), "{text}");
    assert!(!tmp.exists());
    let mut c = l.connect();
    for i in (0..1000).step_by(37) {
        assert_eq!(gets(&mut c, &format!("big:{i}")), None);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The snapshot an earlier larder wrote, kept in the repository: every later
/// larder must load it and serve exactly what it held (or refuse it by its
/// format version, which this test would then show). Written with
/// `LARDER_WRITE_FIXTURE=1 cargo test --release -p larder-server --test
/// warm_restart snapshot_from_an_earlier_larder` by larder 0.1.0 (snapshot
/// format 1); regenerate only when the format changes on purpose, and keep
/// the old file's test beside the new one.
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/snapshot-v1.bin");
const FIXTURE_MANIFEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/snapshot-v1.manifest");
/// An absolute expiry far in the future (2038-01-13; memcached and larder read
/// exptime as a signed 32-bit number): kept across any restart until then.
const FAR: u64 = 2_147_000_000;

/// The fixture's items: (key id, value length, flags, exptime).
fn fixture_specs() -> Vec<Spec> {
    (0..48u32)
        .map(|i| {
            let len = [40, 41, 300, 1500, 9000, 64][i as usize % 6];
            let flags = [0, 7, 0xffff_ffff][i as usize % 3];
            let exp = if i % 4 == 0 { FAR } else { 0 };
            (i, len, flags, exp)
        })
        .collect()
}

#[test]
fn snapshot_from_an_earlier_larder_is_served_unchanged() {
    let d = dir("fixture");
    let file = d.join("cache");
    let args = ["-m", "64", "-e", file.to_str().unwrap()];
    if std::env::var_os("LARDER_WRITE_FIXTURE").is_some() {
        let (mut l, _) = Larder::start_capturing_stderr(&args);
        let mut c = l.connect();
        let mut v = Vec::new();
        let mut manifest = String::from("# key flags cas exptime length (values: larder_testkit::values::make_value(id, 1, length))\n");
        for &(id, len, flags, exp) in &fixture_specs() {
            make_value(&mut v, id, 1, len);
            set(&mut c, &key(id), flags, exp, &v);
            let (f, cas, _) = gets(&mut c, &key(id)).unwrap();
            manifest.push_str(&format!("{} {f} {cas} {exp} {len}\n", key(id)));
        }
        assert!(l.signal_and_wait("USR1").success());
        std::fs::create_dir_all(Path::new(FIXTURE).parent().unwrap()).unwrap();
        std::fs::copy(&file, FIXTURE).unwrap();
        std::fs::write(FIXTURE_MANIFEST, manifest).unwrap();
    }
    std::fs::copy(FIXTURE, &file).expect("the committed snapshot fixture");
    let manifest = std::fs::read_to_string(FIXTURE_MANIFEST).unwrap();
    let (l, err) = Larder::start_capturing_stderr(&args);
    assert!(err.wait_for("[restart] loaded", Duration::from_secs(5)).is_some(), "{}", err.text());
    let mut c = l.connect();
    let mut v = Vec::new();
    let mut checked = 0;
    for line in manifest.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split(' ').collect();
        let (k, flags, cas, exp, len): (&str, u32, u64, u64, usize) =
            (f[0], f[1].parse().unwrap(), f[2].parse().unwrap(), f[3].parse().unwrap(), f[4].parse().unwrap());
        let id: u32 = k.strip_prefix("warm:").unwrap().parse().unwrap();
        make_value(&mut v, id, 1, len);
        let got = gets(&mut c, k).unwrap_or_else(|| panic!("{k} lost"));
        assert_eq!((got.0, got.1), (flags, cas), "{k}: flags and CAS");
        assert!(got.2 == v, "{k}: value differs");
        let t = ttl(&mut c, k);
        if exp == 0 {
            assert_eq!(t, -1, "{k}");
        } else {
            let left = exp as i64 - std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
            assert!((t - left).abs() <= 2, "{k}: ttl {t}, expected about {left}");
        }
        checked += 1;
    }
    assert_eq!(checked, fixture_specs().len());
    assert_eq!(c.stat("curr_items"), checked as u64);
    drop(l);
    let _ = std::fs::remove_dir_all(&d);
}

/// A gibibyte of self-checking values of mixed sizes (100 B to 6 MiB),
/// stopped gracefully and started again: every item comes back with its
/// value (checked byte for byte against its key), flags and CAS.
#[test]
fn a_gibibyte_of_mixed_items_survives_a_restart() {
    let _g = heavy();
    let d = dir("gib");
    let file = d.join("cache");
    let args = ["-m", "1400", "-I", "8m", "-t", "2", "-e", file.to_str().unwrap()];
    let (mut l, err) = Larder::start_capturing_stderr(&args);
    let mut c = l.connect();
    let mut rng = larder_testkit::XorShift64(0x5eed);
    let mut v = Vec::new();
    let mut items: Vec<(u32, u32, u64)> = Vec::new(); // (id, flags, cas)
    let mut total = 0usize;
    let mut id = 0u32;
    while total < 1 << 30 {
        let len = match id % 10 {
            0..=5 => 100 + rng.below(3900) as usize,
            6..=8 => 16 << 10 | rng.below(240 << 10) as usize,
            _ => MIB + rng.below(5 * MIB as u64) as usize,
        };
        make_value(&mut v, id, 1, len);
        let flags = (id.wrapping_mul(2_654_435_761)) >> 7;
        // One write per set (three small ones would wait on Nagle and
        // delayed ACKs, 40 ms a set).
        let mut req = format!("set gib:{id} {flags} 0 {len}\r\n").into_bytes();
        req.extend_from_slice(&v);
        req.extend_from_slice(b"\r\n");
        c.send(&req);
        assert_eq!(c.line(), "STORED\r\n", "set gib:{id}");
        items.push((id, flags, 0));
        total += len;
        id += 1;
    }
    for it in items.iter_mut() {
        it.2 = gets(&mut c, &format!("gib:{}", it.0)).expect("stored").1;
    }
    assert_eq!(c.stat("curr_items"), items.len() as u64, "-m 1400 holds the whole GiB");
    assert!(l.signal_and_wait("USR1").success());
    assert!(err.wait_for("[restart] saved", Duration::from_secs(30)).is_some(), "{}", err.text());
    let (l2, err2) = Larder::start_capturing_stderr(&args);
    assert!(err2.wait_for("[restart] loaded", Duration::from_secs(60)).is_some(), "{}", err2.text());
    let mut c = l2.connect();
    for &(id, flags, cas) in &items {
        let (f, k, value) = gets(&mut c, &format!("gib:{id}")).unwrap_or_else(|| panic!("gib:{id} lost"));
        assert_eq!((f, k), (flags, cas), "gib:{id}: flags and CAS");
        larder_testkit::values::check_value(id, &value).unwrap_or_else(|e| panic!("gib:{id}: {e}"));
    }
    assert_eq!(c.stat("curr_items"), items.len() as u64);
    drop(l2);
    let _ = std::fs::remove_dir_all(&d);
}
