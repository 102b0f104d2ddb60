//! The invalidation stream's client side: the `track stream` handshake, the
//! push-line grammar (`IV <key>`, `IV <base64> b`, `IA`, `LOST`, `MN`), and the
//! consumer loop that applies pushes to a sink until the stream ends. Any line
//! it cannot parse ends the stream (treated as a loss: the caller flushes and
//! reconnects), because a gap in invalidations must never go unnoticed.

use std::io::{BufRead, Write};

use crate::conn::read_line;
use crate::Error;

/// One push line.
#[derive(Debug, PartialEq, Eq)]
pub enum Push {
    /// `IV`: this key may have changed.
    Invalidate(Vec<u8>),
    /// `IA`: everything may have changed.
    InvalidateAll,
    /// `LOST`: pushes were discarded; flush everything.
    Lost,
    /// `MN`: the barrier asked for with `mn`.
    Barrier,
}

/// Which stream to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamMode {
    /// Tracking: the server remembers what the attached connections read.
    Tracking,
    /// Broadcast: every change under these prefixes (empty: every key).
    Broadcast(Vec<String>),
}

/// Reacts to pushes (the near cache and the node's barrier counter).
pub trait Sink {
    fn invalidate(&self, key: &[u8]);
    fn flush(&self);
    fn barrier(&self);
}

pub fn parse_push(line: &[u8]) -> Result<Push, Error> {
    let bad = || Error::Protocol(format!("bad push line {:?}", String::from_utf8_lossy(line)));
    let mut words = line.split(|&b| b == b' ');
    let head = words.next().unwrap_or(b"");
    let rest: Vec<&[u8]> = words.collect();
    match (head, rest.as_slice()) {
        (b"IV", [key]) if !key.is_empty() => Ok(Push::Invalidate(key.to_vec())),
        (b"IV", [key, b"b"]) => base64_decode(key).filter(|k| !k.is_empty()).map(Push::Invalidate).ok_or_else(bad),
        (b"IA", []) => Ok(Push::InvalidateAll),
        (b"LOST", []) => Ok(Push::Lost),
        (b"MN", []) => Ok(Push::Barrier),
        _ => Err(bad()),
    }
}

/// Sends the subscription and reads `OK <sid>`.
pub fn handshake(r: &mut impl BufRead, w: &mut impl Write, mode: &StreamMode) -> Result<u64, Error> {
    let cmd = match mode {
        StreamMode::Tracking => "track stream\r\n".to_string(),
        StreamMode::Broadcast(p) if p.is_empty() => "track stream bcast\r\n".to_string(),
        StreamMode::Broadcast(p) => format!("track stream bcast {}\r\n", p.join(" ")),
    };
    w.write_all(cmd.as_bytes())?;
    w.flush()?;
    let line = read_line(r)?;
    let text = String::from_utf8_lossy(&line);
    match text.strip_prefix("OK ").and_then(|s| s.parse::<u64>().ok()) {
        Some(sid) => Ok(sid),
        None => Err(Error::Server(format!("track stream refused: {text}"))),
    }
}

/// Applies pushes from `r` to `sink` until the stream ends; returns why it
/// ended (EOF, an I/O error, a line outside the grammar). The caller treats
/// every end as a loss.
pub fn consume(r: &mut impl BufRead, sink: &impl Sink) -> Error {
    loop {
        let line = match read_line(r) {
            Ok(l) => l,
            Err(e) => return e,
        };
        match parse_push(&line) {
            Ok(Push::Invalidate(k)) => sink.invalidate(&k),
            Ok(Push::InvalidateAll) | Ok(Push::Lost) => sink.flush(),
            Ok(Push::Barrier) => sink.barrier(),
            Err(e) => return e,
        }
    }
}

/// Standard base64 (with `=` padding) as the server encodes binary keys.
pub fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    if s.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for (i, chunk) in s.chunks(4).enumerate() {
        let last = i == s.len() / 4 - 1;
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = (n << 6) | val(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::io::Cursor;

    #[derive(Default)]
    struct Log(RefCell<Vec<String>>);
    impl Sink for Log {
        fn invalidate(&self, key: &[u8]) {
            self.0.borrow_mut().push(format!("iv {}", String::from_utf8_lossy(key)));
        }
        fn flush(&self) {
            self.0.borrow_mut().push("flush".into());
        }
        fn barrier(&self) {
            self.0.borrow_mut().push("mn".into());
        }
    }

    #[test]
    fn grammar() {
        assert_eq!(parse_push(b"IV foo").unwrap(), Push::Invalidate(b"foo".to_vec()));
        assert_eq!(parse_push(b"IV AAEC/w== b").unwrap(), Push::Invalidate(vec![0, 1, 2, 255]));
        assert_eq!(parse_push(b"IA").unwrap(), Push::InvalidateAll);
        assert_eq!(parse_push(b"LOST").unwrap(), Push::Lost);
        assert_eq!(parse_push(b"MN").unwrap(), Push::Barrier);
        for bad in [&b"IV"[..], b"IV ", b"IV a b c", b"IV !!!! b", b"IA x", b"OK 5", b"", b"iv foo"] {
            assert!(parse_push(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn base64() {
        assert_eq!(base64_decode(b"aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode(b"aGVsbG8h").unwrap(), b"hello!");
        assert_eq!(base64_decode(b"aGk=").unwrap(), b"hi");
        assert_eq!(base64_decode(b"aA==").unwrap(), b"h");
        assert!(base64_decode(b"aGk").is_none());
        assert!(base64_decode(b"a===").is_none());
        assert!(base64_decode(b"aA==aGk=").is_none());
    }

    #[test]
    fn consumer_applies_pushes_then_reports_the_end() {
        let log = Log::default();
        let bytes = b"IV a\r\nIV YiBj b\r\nIA\r\nMN\r\nLOST\r\nIV z\r\n".to_vec();
        let end = consume(&mut Cursor::new(bytes), &log);
        assert!(matches!(end, Error::Io(ref e) if e.kind() == std::io::ErrorKind::UnexpectedEof));
        assert_eq!(*log.0.borrow(), ["iv a", "iv b c", "flush", "mn", "flush", "iv z"]);
    }

    #[test]
    fn consumer_stops_at_a_line_outside_the_grammar_or_a_torn_line() {
        let log = Log::default();
        let end = consume(&mut Cursor::new(b"IV a\r\nSERVER_ERROR x\r\nIV b\r\n".to_vec()), &log);
        assert!(matches!(end, Error::Protocol(_)));
        assert_eq!(*log.0.borrow(), ["iv a"]);
        let log = Log::default();
        let end = consume(&mut Cursor::new(b"IV a\r\nIV b".to_vec()), &log);
        assert!(matches!(end, Error::Protocol(_)), "{end:?}");
        assert_eq!(*log.0.borrow(), ["iv a"]);
    }

    #[test]
    fn handshake_reads_the_sid() {
        let mut out = Vec::new();
        let sid = handshake(&mut Cursor::new(b"OK 42\r\n".to_vec()), &mut out, &StreamMode::Tracking).unwrap();
        assert_eq!((sid, &out[..]), (42, &b"track stream\r\n"[..]));
        let mut out = Vec::new();
        handshake(&mut Cursor::new(b"OK 7\r\n".to_vec()), &mut out, &StreamMode::Broadcast(vec!["a:".into(), "b:".into()])).unwrap();
        assert_eq!(out, b"track stream bcast a: b:\r\n");
        let err = handshake(&mut Cursor::new(b"ERROR\r\n".to_vec()), &mut Vec::new(), &StreamMode::Tracking);
        assert!(matches!(err, Err(Error::Server(_))));
    }
}
