//! The grammar of larder's near-cache invalidation commands (not
//! memcached's; docs/near-cache.md is the reference): `track stream`,
//! `track attach`, `track detach` on a text connection, and what a stream
//! connection may send once it is one (`mn`, `quit`).

/// The reply to a malformed `track` line, or to a stream connection that
/// sends anything but `mn` or `quit` (memcached's wording for a bad line).
pub const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format";
/// `track attach` named no live subscriber.
pub const UNKNOWN_SUBSCRIBER: &str = "CLIENT_ERROR unknown subscriber";

/// Most prefixes a broadcast subscription may name.
pub const MAX_PREFIXES: usize = 16;
/// Longest prefix (a key's longest).
pub const MAX_PREFIX: usize = 250;
/// Longest line a stream connection may send before it is refused.
pub const STREAM_LINE_MAX: usize = 2048;

/// A `track` command's arguments (the words after `track`).
#[derive(Debug, PartialEq, Eq)]
pub enum TrackCommand<'a> {
    /// `track stream`: tracking mode.
    Stream,
    /// `track stream bcast [<prefix> ...]`: broadcast mode (no prefix:
    /// every key).
    Broadcast(Vec<&'a [u8]>),
    /// `track attach <sid> [noloop]`.
    Attach { sid: u64, noloop: bool },
    /// `track detach`.
    Detach,
}

/// Parse the words after `track`; `Err` is memcached's reply to a bad
/// line (`CLIENT_ERROR bad command line format`).
pub fn parse(args: &[u8]) -> Result<TrackCommand<'_>, &'static str> {
    let mut words = args.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let bad = Err(BAD_FORMAT);
    match (words.next(), words.next()) {
        (Some(b"stream"), None) => Ok(TrackCommand::Stream),
        (Some(b"stream"), Some(b"bcast")) => {
            let prefixes: Vec<&[u8]> = words.collect();
            if prefixes.len() > MAX_PREFIXES || prefixes.iter().any(|p| p.len() > MAX_PREFIX) {
                return bad;
            }
            Ok(TrackCommand::Broadcast(prefixes))
        }
        (Some(b"attach"), Some(sid)) => {
            let sid = std::str::from_utf8(sid).ok().and_then(|s| s.parse::<u64>().ok());
            let noloop = match (words.next(), words.next()) {
                (None, _) => false,
                (Some(b"noloop"), None) => true,
                _ => return bad,
            };
            match sid {
                Some(sid) => Ok(TrackCommand::Attach { sid, noloop }),
                None => bad,
            }
        }
        (Some(b"detach"), None) => Ok(TrackCommand::Detach),
        _ => bad,
    }
}

/// What a stream connection sent at the front of its input.
#[derive(Debug, PartialEq, Eq)]
pub enum StreamInput {
    /// No whole line yet.
    Incomplete,
    /// `mn`: a barrier; `consumed` bytes.
    Mn(usize),
    /// `quit`.
    Quit,
    /// Anything else (or a line past [`STREAM_LINE_MAX`]): refused, and the
    /// stream closes.
    Other,
}

/// Read one line of a stream connection's input.
pub fn stream_input(buf: &[u8]) -> StreamInput {
    let Some(nl) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() > STREAM_LINE_MAX { StreamInput::Other } else { StreamInput::Incomplete };
    };
    let line = buf[..nl].strip_suffix(b"\r").unwrap_or(&buf[..nl]);
    match line {
        b"mn" => StreamInput::Mn(nl + 1),
        b"quit" => StreamInput::Quit,
        _ => StreamInput::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!(parse(b"stream"), Ok(TrackCommand::Stream));
        assert_eq!(parse(b"stream bcast"), Ok(TrackCommand::Broadcast(vec![])));
        assert_eq!(parse(b"stream bcast user: item:"), Ok(TrackCommand::Broadcast(vec![&b"user:"[..], &b"item:"[..]])));
        assert_eq!(parse(b"attach 7"), Ok(TrackCommand::Attach { sid: 7, noloop: false }));
        assert_eq!(parse(b"attach 7 noloop"), Ok(TrackCommand::Attach { sid: 7, noloop: true }));
        assert_eq!(parse(b"detach"), Ok(TrackCommand::Detach));
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        for bad in [&b"stream x"[..], b"attach", b"attach x", b"attach -1", b"attach 7 loop", b"attach 7 noloop x", b"detach x", b"nonsense"] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let many = [&b"stream bcast"[..], &b" p".repeat(MAX_PREFIXES + 1)].concat();
        assert!(parse(&many).is_err());
        let long = [&b"stream bcast "[..], &vec![b'k'; MAX_PREFIX + 1]].concat();
        assert!(parse(&long).is_err());
    }

    #[test]
    fn reads_stream_lines() {
        assert_eq!(stream_input(b"m"), StreamInput::Incomplete);
        assert_eq!(stream_input(b"mn\r\nmn\r\n"), StreamInput::Mn(4));
        assert_eq!(stream_input(b"mn\n"), StreamInput::Mn(3));
        assert_eq!(stream_input(b"quit\r\n"), StreamInput::Quit);
        assert_eq!(stream_input(b"get k\r\n"), StreamInput::Other);
        assert_eq!(stream_input(&vec![b'x'; STREAM_LINE_MAX + 1]), StreamInput::Other);
    }
}
