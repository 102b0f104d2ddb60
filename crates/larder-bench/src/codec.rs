//! memcached text and meta protocol, client side: encode requests into a buffer, and cut
//! replies into frames.
//!
//! Encoding appends to a caller-owned `Vec<u8>` (the connection's write buffer), so nothing is
//! allocated per request once the buffer has grown to its working size.
//!
//! Decoding is incremental and stateless: [`parse_frame`] looks at the unread bytes and returns
//! either one complete frame and how many bytes it used, `Ok(None)` when more bytes are needed
//! (a reply split across reads), or an error when the bytes cannot be a reply. A multi-key
//! `get` reply is several frames (`VALUE` ... then `END`); the connection state machine
//! knows which request each frame belongs to.

use std::ops::Range;

use crate::workload::Workload;

/// Lines longer than this without a `\r\n` are a protocol error.
pub const MAX_LINE: usize = 8 * 1024;

/// One reply unit. Ranges index into the buffer given to [`parse_frame`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// `VALUE <key> <flags> <len>[ <cas>]` + data, or meta `VA <len> ... k<key>` + data.
    Value { key: Range<usize>, data: Range<usize> },
    /// `END` (end of a get reply).
    End,
    /// Meta miss `EN`.
    MetaMiss,
    /// Meta success without value `HD`.
    MetaHd,
    /// Meta `NS`, `EX`, `NF`.
    MetaFail,
    Stored,
    NotStored,
    Exists,
    NotFound,
    Deleted,
    /// Reply to incr/decr.
    Number(u64),
    /// `ERROR`, `CLIENT_ERROR ...`, `SERVER_ERROR ...`.
    Error,
}

#[derive(Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

fn find_crlf(buf: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = buf[from..].iter().position(|&b| b == b'\n') {
        let at = from + i;
        if at > 0 && buf[at - 1] == b'\r' {
            return Some(at - 1);
        }
        from = at + 1;
    }
    None
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    Some(v)
}

/// Cuts one frame from the front of `buf`.
pub fn parse_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, ProtocolError> {
    let Some(eol) = find_crlf(&buf[..buf.len().min(MAX_LINE + 2)]) else {
        if buf.len() > MAX_LINE {
            return Err(ProtocolError("reply line too long".into()));
        }
        return Ok(None);
    };
    let line = &buf[..eol];
    let after = eol + 2;
    let err = || ProtocolError(format!("bad reply line {:?}", String::from_utf8_lossy(&line[..line.len().min(80)])));
    let mut words = line.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let first = words.next().unwrap_or(b"");
    let simple = |f: Frame| Ok(Some((f, after)));
    match first {
        b"VALUE" => {
            let key = words.next().ok_or_else(err)?;
            let _flags = words.next().and_then(parse_u64).ok_or_else(err)?;
            let len = words.next().and_then(parse_u64).ok_or_else(err)? as usize;
            let key_start = key.as_ptr() as usize - buf.as_ptr() as usize;
            data_frame(buf, key_start..key_start + key.len(), after, len)
        }
        b"VA" => {
            let len = words.next().and_then(parse_u64).ok_or_else(err)? as usize;
            let mut key = 0..0;
            for w in words {
                if w[0] == b'k' {
                    let s = w.as_ptr() as usize - buf.as_ptr() as usize + 1;
                    key = s..s + w.len() - 1;
                }
            }
            data_frame(buf, key, after, len)
        }
        b"END" => simple(Frame::End),
        b"EN" => simple(Frame::MetaMiss),
        b"HD" => simple(Frame::MetaHd),
        b"NS" | b"EX" | b"NF" => simple(Frame::MetaFail),
        b"STORED" => simple(Frame::Stored),
        b"NOT_STORED" => simple(Frame::NotStored),
        b"EXISTS" => simple(Frame::Exists),
        b"NOT_FOUND" => simple(Frame::NotFound),
        b"DELETED" => simple(Frame::Deleted),
        b"ERROR" | b"CLIENT_ERROR" | b"SERVER_ERROR" => simple(Frame::Error),
        _ => match parse_u64(first) {
            Some(n) if line.len() == first.len() => simple(Frame::Number(n)),
            _ => Err(err()),
        },
    }
}

fn data_frame(buf: &[u8], key: Range<usize>, start: usize, len: usize) -> Result<Option<(Frame, usize)>, ProtocolError> {
    let end = start + len;
    if buf.len() < end + 2 {
        return Ok(None);
    }
    if &buf[end..end + 2] != b"\r\n" {
        return Err(ProtocolError("value not terminated by \\r\\n".into()));
    }
    Ok(Some((Frame::Value { key, data: start..end }, end + 2)))
}

// ---- encoding ----

fn push_num(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// `get k1 k2 ...\r\n` for the given key indexes.
pub fn encode_get(out: &mut Vec<u8>, w: &Workload, keys: impl Iterator<Item = u64>) {
    out.extend_from_slice(b"get");
    for k in keys {
        out.push(b' ');
        w.write_key(out, k);
    }
    out.extend_from_slice(b"\r\n");
}

/// `set <key> 0 0 <len>\r\n<value>\r\n`.
pub fn encode_set(out: &mut Vec<u8>, w: &Workload, key: u64, len: usize) {
    out.extend_from_slice(b"set ");
    let kstart = out.len();
    w.write_key(out, key);
    let kend = out.len();
    out.extend_from_slice(b" 0 0 ");
    push_num(out, len as u64);
    out.extend_from_slice(b"\r\n");
    let vstart = out.len();
    out.resize(vstart + len, 0);
    let (head, tail) = out.split_at_mut(vstart);
    tail.copy_from_slice(w.values.value(&head[kstart..kend], len));
    out.extend_from_slice(b"\r\n");
}

/// `delete <key>\r\n`.
pub fn encode_delete(out: &mut Vec<u8>, w: &Workload, key: u64) {
    out.extend_from_slice(b"delete ");
    w.write_key(out, key);
    out.extend_from_slice(b"\r\n");
}

/// `incr <counter key> 1\r\n`.
pub fn encode_incr(out: &mut Vec<u8>, w: &Workload, key: u64) {
    out.extend_from_slice(b"incr ");
    w.write_counter_key(out, key);
    out.extend_from_slice(b" 1\r\n");
}

/// `set <counter key> 0 0 1\r\n0\r\n` (preloading counters).
pub fn encode_set_counter(out: &mut Vec<u8>, w: &Workload, key: u64) {
    out.extend_from_slice(b"set ");
    w.write_counter_key(out, key);
    out.extend_from_slice(b" 0 0 1\r\n0\r\n");
}

/// `mg <key> k v\r\n` (return key and value).
pub fn encode_mg(out: &mut Vec<u8>, w: &Workload, key: u64) {
    out.extend_from_slice(b"mg ");
    w.write_key(out, key);
    out.extend_from_slice(b" k v\r\n");
}

/// `ms <key> <len>\r\n<value>\r\n`.
pub fn encode_ms(out: &mut Vec<u8>, w: &Workload, key: u64, len: usize) {
    out.extend_from_slice(b"ms ");
    let kstart = out.len();
    w.write_key(out, key);
    let kend = out.len();
    out.push(b' ');
    push_num(out, len as u64);
    out.extend_from_slice(b"\r\n");
    let vstart = out.len();
    out.resize(vstart + len, 0);
    let (head, tail) = out.split_at_mut(vstart);
    tail.copy_from_slice(w.values.value(&head[kstart..kend], len));
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::{KeyDist, SizeDist};
    use crate::workload::{KeySource, Mix, OpKind, Values};

    fn frames(mut buf: &[u8]) -> Vec<Frame> {
        let mut out = Vec::new();
        while let Some((f, used)) = parse_frame(buf).unwrap() {
            // make ranges absolute-free for comparison by rebasing to 0
            out.push(f);
            buf = &buf[used..];
        }
        assert!(buf.is_empty(), "leftover {:?}", String::from_utf8_lossy(buf));
        out
    }

    #[test]
    fn simple_replies() {
        let got = frames(b"STORED\r\nNOT_STORED\r\nEND\r\nDELETED\r\nNOT_FOUND\r\n42\r\nERROR\r\nSERVER_ERROR out of memory storing object\r\nCLIENT_ERROR bad data chunk\r\nEN\r\nHD\r\nNS\r\nEXISTS\r\n");
        use Frame::*;
        assert_eq!(got, vec![Stored, NotStored, End, Deleted, NotFound, Number(42), Error, Error, Error, MetaMiss, MetaHd, MetaFail, Exists]);
    }

    #[test]
    fn value_frames() {
        let buf = b"VALUE foo 5 3\r\nabc\r\nVALUE bar 0 0 99\r\n\r\nEND\r\n";
        let (f, used) = parse_frame(buf).unwrap().unwrap();
        assert_eq!(f, Frame::Value { key: 6..9, data: 15..18 });
        assert_eq!(&buf[6..9], b"foo");
        let rest = &buf[used..];
        let (f, used2) = parse_frame(rest).unwrap().unwrap();
        match f {
            Frame::Value { key, data } => {
                assert_eq!(&rest[key], b"bar");
                assert!(data.is_empty());
            }
            _ => panic!(),
        }
        assert_eq!(parse_frame(&rest[used2..]).unwrap().unwrap().0, Frame::End);
        // a value containing \r\n is length-delimited
        let buf = b"VALUE k 0 4\r\n\r\n\r\n\r\n";
        assert_eq!(parse_frame(buf).unwrap().unwrap().0, Frame::Value { key: 6..7, data: 13..17 });
        // meta
        let buf = b"VA 2 kmykey f0\r\nhi\r\n";
        let (f, used) = parse_frame(buf).unwrap().unwrap();
        assert_eq!(used, buf.len());
        match f {
            Frame::Value { key, data } => {
                assert_eq!(&buf[key], b"mykey");
                assert_eq!(&buf[data], b"hi");
            }
            _ => panic!(),
        }
    }

    #[test]
    fn split_reads_at_every_byte() {
        let buf: &[u8] = b"VALUE foo 0 10\r\n0123456789\r\nEND\r\nSTORED\r\nVA 3 kx\r\nabc\r\n";
        let whole = frames(buf).len();
        // Feed the bytes one at a time: every prefix either yields the frames so far or waits.
        let mut got = 0;
        let mut start = 0;
        for end in 0..=buf.len() {
            while let Some((_, used)) = parse_frame(&buf[start..end]).unwrap() {
                start += used;
                got += 1;
            }
        }
        assert_eq!(got, whole);
        assert_eq!(start, buf.len());
        // a partial value never parses early, even when the cut falls in the trailing \r\n
        assert_eq!(parse_frame(b"VALUE foo 0 3\r\nabc\r").unwrap(), None);
        assert_eq!(parse_frame(b"VALUE foo 0 3\r\nab").unwrap(), None);
        assert_eq!(parse_frame(b"STORED\r").unwrap(), None);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(parse_frame(b"HELLO\r\n").is_err());
        assert!(parse_frame(b"VALUE foo x 3\r\nabc\r\n").is_err());
        assert!(parse_frame(b"VALUE foo 0 3\r\nabcd\r\n").is_err());
        assert!(parse_frame(&[b'x'; MAX_LINE + 10]).is_err());
        assert!(parse_frame(b"12 3\r\n").is_err());
    }

    #[test]
    fn encodings() {
        let w = Workload {
            key_size: 4,
            keys: KeySource::Random(KeyDist::Uniform { n: 10 }),
            sizes: SizeDist::Fixed(5),
            mix: Mix::single(OpKind::Get),
            multiget_keys: 1,
            verify_every: 1,
            values: Values::new(100),
        };
        let mut out = Vec::new();
        encode_get(&mut out, &w, [1u64, 22].into_iter());
        assert_eq!(out, b"get k001 k022\r\n");
        out.clear();
        encode_set(&mut out, &w, 3, 5);
        assert!(out.starts_with(b"set k003 0 0 5\r\n"));
        assert!(w.values.verify(b"k003", &out[16..21]));
        assert!(out.ends_with(b"\r\n") && out.len() == 23);
        out.clear();
        encode_ms(&mut out, &w, 3, 5);
        assert!(out.starts_with(b"ms k003 5\r\n"));
        assert_eq!(&out[11..16], w.values.value(b"k003", 5));
        out.clear();
        encode_mg(&mut out, &w, 7);
        encode_delete(&mut out, &w, 7);
        encode_incr(&mut out, &w, 7);
        assert_eq!(out, b"mg k007 k v\r\ndelete k007\r\nincr n007 1\r\n");
    }
}
