//! The meta-protocol replies this client reads (`VA`, `HD`, `EN`, `NF`, `NS`,
//! `EX`, `MN`, errors) and the flags it asks for, parsed from one line.
//! Commands are written by `conn`; this module only understands answers.

use crate::Error;

/// The largest value this client accepts from a server (a length read from the
/// network is checked before anything is allocated for it).
pub const MAX_VALUE_LEN: usize = 1 << 30;
/// The longest reply line accepted (a meta header with every flag is < 1 KiB).
pub const MAX_LINE: usize = 8192;

/// The flags of a `VA` or `HD` reply that this client uses.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MetaFlags {
    /// `c`: the item's CAS.
    pub cas: Option<u64>,
    /// `t`: remaining seconds, -1 for never.
    pub ttl: Option<i64>,
    /// `k`: the key (multi-get matches replies to keys by it).
    pub key: Option<String>,
    /// `W`: this client won the lease and must load.
    pub win: bool,
    /// `Z`: another client holds the lease.
    pub z: bool,
    /// `X`: the value is stale (invalidated with `md I`).
    pub stale: bool,
}

/// One reply header.
#[derive(Debug, PartialEq, Eq)]
pub enum Header {
    /// `VA <len> <flags>`: a value of `len` bytes follows.
    Value(usize, MetaFlags),
    /// `HD <flags>`
    Hd(MetaFlags),
    /// `EN`: miss
    En,
    /// `NF`: not found (delete)
    Nf,
    /// `NS`: not stored
    Ns,
    /// `EX`: CAS mismatch
    Ex,
    /// `MN`: the end of a pipelined batch
    Mn,
}

/// Parses one reply line, without its `\r\n`.
pub fn parse_header(line: &[u8]) -> Result<Header, Error> {
    let text = std::str::from_utf8(line).map_err(|_| Error::Protocol("reply is not UTF-8".into()))?;
    let mut words = text.split(' ');
    let head = words.next().unwrap_or("");
    match head {
        "VA" => {
            let len = words.next().ok_or_else(|| Error::Protocol(format!("VA without length: {text}")))?;
            let len: usize = len.parse().map_err(|_| Error::Protocol(format!("bad VA length: {text}")))?;
            if len > MAX_VALUE_LEN {
                return Err(Error::Protocol(format!("value of {len} bytes is over the limit")));
            }
            Ok(Header::Value(len, parse_flags(words)?))
        }
        "HD" => Ok(Header::Hd(parse_flags(words)?)),
        "EN" => Ok(Header::En),
        "NF" => Ok(Header::Nf),
        "NS" => Ok(Header::Ns),
        "EX" => Ok(Header::Ex),
        "MN" => Ok(Header::Mn),
        _ => Err(Error::Server(text.to_string())),
    }
}

fn parse_flags<'a>(words: impl Iterator<Item = &'a str>) -> Result<MetaFlags, Error> {
    let mut f = MetaFlags::default();
    for w in words {
        let (c, rest) = match w.as_bytes().first() {
            Some(&c) => (c, &w[1..]),
            None => continue,
        };
        let bad = || Error::Protocol(format!("bad meta flag {w}"));
        match c {
            b'c' => f.cas = Some(rest.parse().map_err(|_| bad())?),
            b't' => f.ttl = Some(rest.parse().map_err(|_| bad())?),
            b'k' => f.key = Some(rest.to_string()),
            b'W' => f.win = true,
            b'Z' => f.z = true,
            b'X' => f.stale = true,
            _ => {}
        }
    }
    Ok(f)
}

/// A key this client can send in a text command: 1..=250 bytes, no spaces or
/// control characters (the server would split or reject it).
pub fn check_key(key: &str) -> Result<(), Error> {
    let ok = !key.is_empty() && key.len() <= 250 && key.bytes().all(|b| b > b' ' && b != 0x7f);
    if ok {
        Ok(())
    } else {
        Err(Error::BadKey(key.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_replies() {
        assert_eq!(
            parse_header(b"VA 2 c33 t100 kfoo W").unwrap(),
            Header::Value(2, MetaFlags { cas: Some(33), ttl: Some(100), key: Some("foo".into()), win: true, ..Default::default() })
        );
        assert_eq!(parse_header(b"VA 0 c1 t-1 Z").unwrap(), Header::Value(0, MetaFlags { cas: Some(1), ttl: Some(-1), z: true, ..Default::default() }));
        assert_eq!(parse_header(b"HD").unwrap(), Header::Hd(MetaFlags::default()));
        assert_eq!(parse_header(b"EN").unwrap(), Header::En);
        assert_eq!(parse_header(b"MN").unwrap(), Header::Mn);
        assert!(matches!(parse_header(b"SERVER_ERROR out of memory"), Err(Error::Server(_))));
        assert!(matches!(parse_header(b"VA 99999999999 t1"), Err(Error::Protocol(_))));
        assert!(matches!(parse_header(b"VA x"), Err(Error::Protocol(_))));
    }

    #[test]
    fn keys() {
        assert!(check_key("a:b").is_ok());
        assert!(check_key("a b").is_err());
        assert!(check_key("").is_err());
        assert!(check_key(&"x".repeat(251)).is_err());
    }
}
