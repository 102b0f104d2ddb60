//! Who may use the admin listener: the credentials file of
//! `-o metrics_auth_file` (HTTP basic auth and bearer tokens, the two forms
//! Prometheus's `scrape_config` and browsers speak), checked in constant
//! time, and re-read when it changes.
//!
//! # The file
//!
//! ```text
//! # larder admin credentials (comments and blank lines are ignored)
//! basic prometheus:correct horse battery staple
//! basic alice:s3cret
//! bearer 8f7c3a0e5b2d4f6a9c1e3b5d7f9a2c4e
//! ```
//!
//! * `basic USER:PASSWORD`: `Authorization: Basic base64(USER:PASSWORD)`.
//!   The user is everything up to the first `:` (RFC 7617: a user-id has
//!   none), non-empty; the password is the rest of the line, exactly
//!   (spaces and `:` included; only a final `\r` is dropped), non-empty.
//! * `bearer TOKEN`: `Authorization: Bearer TOKEN`. The token is RFC 6750's
//!   `b64token`: letters, digits and `-._~+/`, then optional `=`s;
//!   at least 16 characters (a token is a secret, not a name).
//! * The keyword is case-insensitive; anything else on a line is an error
//!   that names the line. At most [`MAX_ENTRIES`] entries and
//!   [`MAX_FILE_BYTES`] bytes; a file with no entry is refused.
//!
//! The file is read when the listener starts (a bad file stops the start)
//! and again, at most once a second, when a request arrives after its size,
//! modification time or inode changed: tokens and passwords are rotated by
//! rewriting it (an atomic rename is best). A changed file that is refused
//! leaves the previous credentials in force, and says why on stderr once.
//! It is read by the user larder runs as (after `-u`), so that user must be
//! able to read it; nobody else should.
//!
//! # Checking
//!
//! Only SHA-256 digests of the credentials are kept (of `basic\0USER:PASSWORD`
//! and `bearer\0TOKEN`). A request's credential is hashed the same way and
//! compared with every entry's digest with `subtle`'s constant-time
//! equality, without stopping at a match: the time taken says nothing about
//! which bytes, which entry, or whether the user exists. A request carries
//! one `Authorization` header; a malformed one is simply not authenticated.

use ring::digest::{digest, SHA256};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};
use subtle::ConstantTimeEq;

/// Entries a file may hold (each request is compared with all of them).
pub const MAX_ENTRIES: usize = 1024;
/// Largest file read.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Shortest bearer token accepted.
pub const MIN_TOKEN_LEN: usize = 16;
/// How often a request may look at the file for changes.
const RECHECK: Duration = Duration::from_secs(1);

/// What kinds of credentials a file holds (for the `WWW-Authenticate`
/// challenges of a 401).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kinds {
    pub basic: bool,
    pub bearer: bool,
}

/// A parsed file: digests only.
#[derive(Clone, Debug, Default)]
pub struct Entries {
    digests: Vec<[u8; 32]>,
    pub kinds: Kinds,
}

fn sha256(kind: &[u8], secret: &[u8]) -> [u8; 32] {
    let mut m = Vec::with_capacity(kind.len() + 1 + secret.len());
    m.extend_from_slice(kind);
    m.push(0);
    m.extend_from_slice(secret);
    let d = digest(&SHA256, &m);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

fn is_b64token(t: &[u8]) -> bool {
    let body = t.iter().rposition(|&b| b != b'=').map_or(0, |i| i + 1);
    body > 0 && t[..body].iter().all(|&b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

impl Entries {
    /// Parse a file's text; the error names the line.
    pub fn parse(text: &[u8]) -> Result<Entries, String> {
        let mut e = Entries::default();
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            let n = i + 1;
            let trimmed = line.trim_ascii();
            if trimmed.is_empty() || trimmed.starts_with(b"#") {
                continue;
            }
            let line = line.trim_ascii_start();
            let Some(sp) = line.iter().position(|&b| b == b' ' || b == b'\t') else {
                return Err(format!("line {n}: want 'basic USER:PASSWORD' or 'bearer TOKEN'"));
            };
            let (kw, rest) = (&line[..sp], line[sp..].trim_ascii_start());
            if kw.eq_ignore_ascii_case(b"basic") {
                match rest.iter().position(|&b| b == b':') {
                    Some(c) if c > 0 && c + 1 < rest.len() => {}
                    _ => return Err(format!("line {n}: basic wants USER:PASSWORD, both non-empty")),
                }
                e.digests.push(sha256(b"basic", rest));
                e.kinds.basic = true;
            } else if kw.eq_ignore_ascii_case(b"bearer") {
                let token = rest.trim_ascii_end();
                if !is_b64token(token) {
                    return Err(format!("line {n}: a bearer token is letters, digits and -._~+/ (then optional =), nothing else"));
                }
                if token.len() < MIN_TOKEN_LEN {
                    return Err(format!("line {n}: a bearer token needs at least {MIN_TOKEN_LEN} characters"));
                }
                e.digests.push(sha256(b"bearer", token));
                e.kinds.bearer = true;
            } else {
                return Err(format!("line {n}: unknown kind '{}' (basic or bearer)", String::from_utf8_lossy(kw)));
            }
            if e.digests.len() > MAX_ENTRIES {
                return Err(format!("more than {MAX_ENTRIES} entries"));
            }
        }
        if e.digests.is_empty() {
            return Err("no credentials in it".into());
        }
        Ok(e)
    }

    /// Whether an `Authorization` header value matches an entry.
    pub fn check(&self, authorization: &[u8]) -> bool {
        let Some(presented) = presented_digest(authorization) else { return false };
        let mut ok = subtle::Choice::from(0u8);
        for d in &self.digests {
            ok |= d.ct_eq(&presented);
        }
        ok.into()
    }
}

/// The digest of the credential an `Authorization` value carries.
fn presented_digest(v: &[u8]) -> Option<[u8; 32]> {
    let v = v.trim_ascii();
    let sp = v.iter().position(|&b| b == b' ')?;
    let (scheme, cred) = (&v[..sp], v[sp..].trim_ascii_start());
    if scheme.eq_ignore_ascii_case(b"basic") {
        Some(sha256(b"basic", &base64_decode(cred)?))
    } else if scheme.eq_ignore_ascii_case(b"bearer") {
        Some(sha256(b"bearer", cred))
    } else {
        None
    }
}

/// Standard base64 (RFC 4648 alphabet, padding optional), as browsers and
/// Prometheus send basic credentials. None on any other byte.
fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    let s = s.strip_suffix(b"==").or_else(|| s.strip_suffix(b"=")).unwrap_or(s);
    if s.len() % 4 == 1 {
        return None;
    }
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// What identifies a version of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    ino: u64,
}

fn stamp(path: &PathBuf) -> std::io::Result<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok(Stamp { len: m.len(), modified: m.modified().ok(), ino: m.ino() })
}

fn read(path: &PathBuf) -> Result<(Entries, Stamp), String> {
    use std::io::Read;
    let shown = path.display();
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let st = stamp(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let mut text = Vec::new();
    f.take(MAX_FILE_BYTES + 1).read_to_end(&mut text).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("{shown}: larger than {MAX_FILE_BYTES} bytes"));
    }
    let e = Entries::parse(&text).map_err(|e| format!("{shown}: {e}"))?;
    Ok((e, st))
}

struct Loaded {
    entries: Entries,
    stamp: Stamp,
    checked: Instant,
    /// The stamp of a refused version (said once).
    refused: Option<Stamp>,
}

/// The file as `larder`'s `main` read it before dropping privileges
/// ([`AuthFile::preload`]), waiting for the admin listener to take it.
static PRELOADED: Mutex<Option<AuthFile>> = Mutex::new(None);

/// `-o metrics_auth_file`, kept current.
pub struct AuthFile {
    path: PathBuf,
    loaded: Mutex<Loaded>,
}

impl AuthFile {
    /// Read it at start-up; the error is the start-up message.
    pub fn load(path: &str) -> Result<AuthFile, String> {
        let path = PathBuf::from(path);
        let (entries, stamp) = read(&path).map_err(|e| format!("larder: -o metrics_auth_file: {e}"))?;
        Ok(AuthFile { path, loaded: Mutex::new(Loaded { entries, stamp, checked: Instant::now(), refused: None }) })
    }

    /// Read and check it at start-up **before** `-u` drops privileges (as
    /// memcached reads its files), so a file only root may read works and a
    /// bad one stops the start with this error instead of failing later as
    /// the unprivileged user. The admin listener takes it from here
    /// ([`AuthFile::take_or_load`]); later re-reads (when it changes) run as
    /// the user larder runs as.
    pub fn preload(path: &str) -> Result<(), String> {
        let f = AuthFile::load(path)?;
        *PRELOADED.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
        Ok(())
    }

    /// The file [`AuthFile::preload`] read for `path`, else a fresh read
    /// (servers started in-process, without `main`).
    pub fn take_or_load(path: &str) -> Result<AuthFile, String> {
        let mut pre = PRELOADED.lock().unwrap_or_else(|e| e.into_inner());
        if pre.as_ref().is_some_and(|f| f.path == std::path::Path::new(path)) {
            return Ok(pre.take().expect("checked just above"));
        }
        drop(pre);
        AuthFile::load(path)
    }

    /// Re-read the file if it changed (at most once per [`RECHECK`]).
    fn refresh(&self, l: &mut Loaded) {
        let now = Instant::now();
        if now.duration_since(l.checked) < RECHECK {
            return;
        }
        l.checked = now;
        let Ok(st) = stamp(&self.path) else {
            // Gone for now (being replaced?): keep what we have.
            return;
        };
        if st == l.stamp || Some(st) == l.refused {
            return;
        }
        match read(&self.path) {
            Ok((entries, stamp)) => {
                l.entries = entries;
                l.stamp = stamp;
                l.refused = None;
                eprintln!("larder: -o metrics_auth_file: {} re-read", self.path.display());
            }
            Err(e) => {
                l.refused = Some(st);
                eprintln!("larder: -o metrics_auth_file: {e}; keeping the previous credentials");
            }
        }
    }

    /// Whether the `Authorization` header value (if any) is accepted, and
    /// the kinds of credentials the file holds.
    pub fn check(&self, authorization: Option<&[u8]>) -> (bool, Kinds) {
        let mut l = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        self.refresh(&mut l);
        let ok = authorization.is_some_and(|a| l.entries.check(a));
        (ok, l.entries.kinds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let b = s.as_bytes();
        let mut o = String::new();
        for c in b.chunks(3) {
            let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
            for i in 0..4 {
                if i <= c.len() {
                    o.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    o.push('=');
                }
            }
        }
        o
    }

    const FILE: &str = "# comment\n\nbasic prom:pa ss:word\r\n  Bearer abcdefghijklmnop0123._~+/==\nBASIC alice:x\n";

    #[test]
    fn basic_and_bearer_lines() {
        let e = Entries::parse(FILE.as_bytes()).unwrap();
        assert_eq!(e.kinds, Kinds { basic: true, bearer: true });
        let basic = |c: &str| e.check(format!("Basic {}", b64(c)).as_bytes());
        assert!(basic("prom:pa ss:word"));
        assert!(basic("alice:x"));
        assert!(!basic("alice:y") && !basic("prom:pa ss:wor") && !basic("bob:x") && !basic("prom:pa ss:word "));
        assert!(e.check(b"bearer abcdefghijklmnop0123._~+/=="));
        assert!(e.check(b"Bearer   abcdefghijklmnop0123._~+/==  "));
        assert!(!e.check(b"Bearer abcdefghijklmnop0123._~+/="));
        // A token is not a password, nor the other way round.
        assert!(!e.check(format!("Basic {}", b64("abcdefghijklmnop0123._~+/==")).as_bytes()));
        assert!(!e.check(b"Bearer alice:x"));
        for bad in [&b""[..], b"Basic", b"Basic !!!!", b"Digest abc", b"Basic YWxpY2U6eA=x", b"Bearer"] {
            assert!(!e.check(bad), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn bad_files_name_the_line() {
        for (text, want) in [
            ("basic alice\n", "line 1: basic wants USER:PASSWORD"),
            ("\nbasic :pw\n", "line 2: basic wants"),
            ("basic alice:\n", "line 1: basic wants"),
            ("token abcdefghijklmnopq\n", "line 1: unknown kind 'token'"),
            ("alice:secret\n", "line 1: want 'basic USER:PASSWORD' or 'bearer TOKEN'"),
            ("bearer short\n", "at least 16"),
            ("bearer abcdefghijklmnop qrs\n", "line 1: a bearer token is"),
            ("# nothing\n", "no credentials"),
        ] {
            let e = Entries::parse(text.as_bytes()).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let many: String = (0..=MAX_ENTRIES).map(|i| format!("basic u{i}:p\n")).collect();
        assert!(Entries::parse(many.as_bytes()).unwrap_err().contains("more than"));
    }

    #[test]
    fn base64_as_browsers_send_it() {
        for s in ["", "a", "ab", "abc", "abcd", "user:pässword"] {
            assert_eq!(base64_decode(b64(s).as_bytes()).unwrap(), s.as_bytes(), "{s}");
            assert_eq!(base64_decode(b64(s).trim_end_matches('=').as_bytes()).unwrap(), s.as_bytes(), "{s}");
        }
        assert_eq!(base64_decode(b"A"), None);
        assert_eq!(base64_decode(b"AB-C"), None);
    }

    #[test]
    fn file_is_reread_when_it_changes_and_kept_when_refused() {
        let path = std::env::temp_dir().join(format!("larder-admin-auth-{}", std::process::id()));
        std::fs::write(&path, "basic a:one\n").unwrap();
        let f = AuthFile::load(path.to_str().unwrap()).unwrap();
        let basic = |c: &str| Some(format!("Basic {}", b64(c)).into_bytes());
        assert!(f.check(basic("a:one").as_deref()).0);
        std::fs::write(&path, "basic a:two-longer\n").unwrap();
        f.loaded.lock().unwrap().checked -= RECHECK;
        assert!(f.check(basic("a:two-longer").as_deref()).0);
        assert!(!f.check(basic("a:one").as_deref()).0);
        std::fs::write(&path, "nonsense\n").unwrap();
        f.loaded.lock().unwrap().checked -= RECHECK;
        assert!(f.check(basic("a:two-longer").as_deref()).0, "a refused file keeps the old entries");
        assert!(!f.check(None).0);
        let _ = std::fs::remove_file(&path);
        let Err(e) = AuthFile::load(path.to_str().unwrap()) else { panic!("a missing file loads") };
        assert!(e.contains("metrics_auth_file: cannot read"), "{e}");
    }

    #[test]
    fn a_preloaded_file_is_taken_without_reading_it_again() {
        let path = std::env::temp_dir().join(format!("larder-admin-preload-{}", std::process::id()));
        let p = path.to_str().unwrap();
        std::fs::write(&path, "basic a:one\n").unwrap();
        AuthFile::preload(p).unwrap();
        // Gone now (as a file the dropped user cannot read): still served.
        std::fs::remove_file(&path).unwrap();
        let f = AuthFile::take_or_load(p).unwrap();
        assert!(f.check(Some(format!("Basic {}", b64("a:one")).as_bytes())).0);
        // Taken once: the next listener reads the file itself.
        let Err(e) = AuthFile::take_or_load(p) else { panic!("taken twice") };
        assert!(e.contains("cannot read"), "{e}");
        assert!(AuthFile::preload(p).unwrap_err().contains("metrics_auth_file: cannot read"));
    }
}
