//! `-Y <authfile>`: the users and passwords of memcached's ASCII
//! authentication, read with memcached's rules, checked in constant time.
//!
//! The file is `user:password` lines. memcached reads it with a
//! buffer whose bounds shape what it accepts, and larder reproduces that
//! exactly so that one file authenticates the same credentials on both:
//!
//! * at most 8 entries; lines after the 8th are ignored;
//! * a line is read 255 bytes at a time (longer lines are cut there, and
//!   reading stops after a cut line);
//! * each read is also bounded by what remains of a buffer one byte larger
//!   than the file (memcached 1.6.38; 1.6.18's was the file's size, so it
//!   never read the last byte of a one-line file: `foo:bar` without a
//!   newline gave the password `ba`, and `foo:bar\r\n` alone left a lone
//!   `\n` line, which is malformed), which advances by one byte less than
//!   the line per line read;
//! * the user is everything before the first `:`; a line without one (an
//!   empty line too) makes the whole file malformed;
//! * the password runs from the `:` to the first `\n`, `\r` or NUL; the
//!   rest of the line is ignored; a NUL ends the file.
//!
//! memcached reloads the file on SIGHUP, keeping the old entries if the new
//! file is refused; so does larder ([`Credentials::reload`]).

use std::sync::{Arc, RwLock};

/// memcached's bound on entries ("not supposed to be a huge database").
const MAX_ENTRIES: usize = 8;
/// memcached's line buffer: a read takes at most this many bytes minus one.
const MAX_ENTRY_LEN: usize = 256;

/// One `user:password` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    user: Vec<u8>,
    pass: Vec<u8>,
}

/// A loaded authfile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthFile {
    entries: Vec<Entry>,
}

/// Why a file was refused; `Display` is memcached's start-up message.
#[derive(Debug)]
pub enum LoadError {
    Open(String, std::io::Error),
    Malformed(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // memcached prints strerror twice (its own text, then perror's).
            LoadError::Open(path, e) => {
                let msg = std::io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(0));
                let text = msg.to_string();
                let text = text.split(" (os error").next().unwrap_or(&text);
                write!(f, "Could not open authfile [{path}] for reading, error {text}: {text}")
            }
            LoadError::Malformed(path) => {
                write!(f, "Authfile [{path}] has a malformed entry. Should be 'user:password'")
            }
        }
    }
}

impl AuthFile {
    /// Read and parse `path`.
    pub fn load(path: &str) -> Result<AuthFile, LoadError> {
        let bytes = std::fs::read(path).map_err(|e| LoadError::Open(path.to_string(), e))?;
        AuthFile::parse(&bytes).ok_or_else(|| LoadError::Malformed(path.to_string()))
    }

    /// Parse a file's bytes; `None` if malformed. Follows the reading
    /// rules in the module docs: `pos` is where the next read starts in the
    /// file, `room` what is left of memcached's buffer for it.
    pub fn parse(file: &[u8]) -> Option<AuthFile> {
        let mut entries = Vec::new();
        let mut pos = 0;
        // memcached 1.6.38 (ascii-auth2.t) sizes the buffer one byte
        // larger, so the last byte of a file without a final newline is read.
        let mut room = file.len() + 1;
        loop {
            // A read of at most `limit - 1` bytes that stops after '\n';
            // with no room left, or nothing left to read, it reads nothing.
            let limit = room.min(MAX_ENTRY_LEN);
            let line: &[u8] = match limit {
                0 => break,
                1 => &[],
                _ => {
                    let rest = &file[pos..];
                    if rest.is_empty() {
                        break;
                    }
                    let max = rest.len().min(limit - 1);
                    let len = rest[..max].iter().position(|&b| b == b'\n').map_or(max, |i| i + 1);
                    &rest[..len]
                }
            };
            // The line as memcached's buffer holds it: its bytes, then a NUL.
            let at = |i: usize| line.get(i).copied().unwrap_or(0);
            let colon = (0..line.len()).take_while(|&i| at(i) != 0).find(|&i| at(i) == b':')?;
            let end = (colon + 1..=line.len()).find(|&i| matches!(at(i), b'\n' | b'\r' | 0)).unwrap_or(line.len());
            entries.push(Entry { user: line[..colon].to_vec(), pass: line[colon + 1..end].to_vec() });
            if entries.len() == MAX_ENTRIES || at(end) == 0 {
                break;
            }
            pos += line.len();
            room -= end;
        }
        Some(AuthFile { entries })
    }

    /// Whether `user` and `pass` match an entry. Every entry is compared,
    /// and the bytes of each in constant time, so timing says nothing about
    /// how much of a guess was right (lengths, as in memcached, may show).
    pub fn check(&self, user: &[u8], pass: &[u8]) -> bool {
        let mut found = false;
        for e in &self.entries {
            let ok = ct_eq(user, &e.user) & ct_eq(pass, &e.pass);
            found |= ok;
        }
        found
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Equal bytes, without an early exit on the first difference.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // Keep the compiler from turning the fold back into a short-circuit.
    std::hint::black_box(diff) == 0
}

/// The server's credentials: the file's path and its current entries,
/// replaced as a whole on reload (connections checking meanwhile see the
/// old or the new set, never a mix).
pub struct Credentials {
    path: String,
    current: RwLock<Arc<AuthFile>>,
}

impl Credentials {
    pub fn new(path: String, file: AuthFile) -> Credentials {
        Credentials { path, current: RwLock::new(Arc::new(file)) }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn check(&self, user: &[u8], pass: &[u8]) -> bool {
        let file = self.current.read().unwrap_or_else(|e| e.into_inner()).clone();
        file.check(user, pass)
    }

    /// Read the file again (SIGHUP). A refused file leaves the old entries
    /// in place, as memcached does.
    pub fn reload(&self) -> Result<(), LoadError> {
        let file = AuthFile::load(&self.path)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(file);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(f: &[u8]) -> Option<Vec<(String, String)>> {
        AuthFile::parse(f).map(|a| {
            a.entries
                .iter()
                .map(|e| (String::from_utf8_lossy(&e.user).into_owned(), String::from_utf8_lossy(&e.pass).into_owned()))
                .collect()
        })
    }

    fn p(list: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(list.iter().map(|(u, p)| (u.to_string(), p.to_string())).collect())
    }

    // Each case below was checked against memcached 1.6.18 started with
    // the same file (which credentials it accepts, or that it refuses it),
    // and those 1.6.38 reads differently against 1.6.38.
    #[test]
    fn reads_like_memcached() {
        assert_eq!(pairs(b"foo:bar\nbaaaz:quux\n"), p(&[("foo", "bar"), ("baaaz", "quux")]));
        // memcached 1.6.18 did not read the last byte of a one-line file;
        // 1.6.38 does (t/ascii-auth2.t).
        assert_eq!(pairs(b"foo:bar"), p(&[("foo", "bar")]));
        assert_eq!(pairs(b"foo:bar\n"), p(&[("foo", "bar")]));
        // 1.6.18 refused this file (its last read was a lone `\n`); 1.6.38
        // reads the `\r\n` whole and accepts it.
        assert_eq!(pairs(b"foo:bar\r\n"), p(&[("foo", "bar")]));
        assert_eq!(pairs(b"a:b\r\nc:d\r\n"), p(&[("a", "b"), ("c", "d")]));
        assert_eq!(pairs(b"a:b c\nu:p\n"), p(&[("a", "b c"), ("u", "p")]));
        assert_eq!(pairs(b"u:p\rjunk\nfoo:bar\n"), p(&[("u", "p"), ("foo", "bar")]));
        assert_eq!(pairs(b":x\nu:p\n"), p(&[("", "x"), ("u", "p")]));
        assert_eq!(pairs(b"a:b:c\n\nu:p\n"), None);
        assert_eq!(pairs(b"x\n"), None);
        // 1.6.18 accepted an empty file (no entries); 1.6.38's one-byte
        // read of it finds an empty line and refuses the file.
        assert_eq!(pairs(b""), None);
    }

    #[test]
    fn bounds() {
        let many: String = (0..10).map(|i| format!("u{i}:p{i}\n")).collect();
        assert_eq!(AuthFile::parse(many.as_bytes()).unwrap().len(), MAX_ENTRIES);
        // A long line is cut at 255 bytes and ends the file.
        let long = format!("u:{}\nv:w\n", "x".repeat(300));
        let a = AuthFile::parse(long.as_bytes()).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a.entries[0].pass.len(), 253);
        // A NUL in the password ends the file; in the user, it is malformed.
        assert_eq!(pairs(b"a:b\0c\nu:p\n"), p(&[("a", "b")]));
        assert_eq!(pairs(b"a\0:b\n"), None);
    }

    #[test]
    fn check_is_exact() {
        let a = AuthFile::parse(b"foo:bar\nbaaaz:quux\n").unwrap();
        assert!(a.check(b"foo", b"bar"));
        assert!(a.check(b"baaaz", b"quux"));
        assert!(!a.check(b"foo", b"quux"));
        assert!(!a.check(b"foo", b"ba"));
        let one = AuthFile::parse(b"foo:bar").unwrap();
        assert!(one.check(b"foo", b"bar"));
        assert!(!one.check(b"foo", b"ba"));
        assert!(!a.check(b"foo", b"barr"));
        assert!(!a.check(b"", b""));
    }
}
