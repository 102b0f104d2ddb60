//! Properties of the `track` grammar ([`crate::track`]) checked by the
//! `track_parse` cargo-fuzz target and by this crate's tests over the same
//! seeds, so both exercise one contract. Panics on a violation. Not part of
//! the API.
//!
//! * `track <args>` reaches [`track::parse`] through the text parser as the
//!   server reads it (`Request::Admin { command: Track, args }`), and the
//!   whole stream keeps [`crate::invariants::check_stream`]'s properties;
//! * [`track::parse`] is deterministic, its prefixes are slices of the
//!   arguments within [`track::MAX_PREFIXES`] and [`track::MAX_PREFIX`],
//!   and an accepted command written back in canonical form parses to the
//!   same command;
//! * [`track::stream_input`] consumes only whole `mn` lines, answers
//!   `Incomplete` only for a line with no newline within
//!   [`track::STREAM_LINE_MAX`], and a stream of lines is read with progress.

use crate::invariants::check_stream;
use crate::text::{parse, AdminCommand, Limits, Parsed, Request};
use crate::track::{self, StreamInput, TrackCommand};

/// `track_parse`: the first byte picks what the rest is (bit 0 clear: the
/// arguments of a `track` line, fed through the text parser and then the
/// grammar; bit 0 set: a stream connection's input). Bit 1 set, for
/// arguments, also feeds them to the grammar directly, without the text
/// parser's trimming and checks in front.
pub fn fuzz_track(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else { return };
    if pick & 1 == 1 {
        check_stream_input(rest);
        return;
    }
    let mut line = b"track ".to_vec();
    line.extend_from_slice(rest);
    line.extend_from_slice(b"\r\n");
    check_stream(&line, &Limits::default());
    if let Parsed::Request { request: Request::Admin { command: AdminCommand::Track, args, .. }, .. } = parse(&line, &Limits::default()) {
        check_command(args);
    }
    if pick & 2 == 2 {
        check_command(rest);
    }
}

/// The grammar's promises for one argument string.
pub fn check_command(args: &[u8]) {
    let parsed = track::parse(args);
    assert_eq!(parsed, track::parse(args), "deterministic");
    let Ok(cmd) = parsed else { return };
    let mut canonical = b"stream".to_vec();
    match &cmd {
        TrackCommand::Stream => {}
        TrackCommand::Broadcast(prefixes) => {
            assert!(prefixes.len() <= track::MAX_PREFIXES, "{} prefixes accepted", prefixes.len());
            canonical.extend_from_slice(b" bcast");
            for p in prefixes {
                assert!(!p.is_empty() && p.len() <= track::MAX_PREFIX, "prefix of {} bytes", p.len());
                assert!(!p.contains(&b' '), "a prefix holds a space");
                let inside = args.as_ptr_range();
                assert!(inside.start <= p.as_ptr() && p.as_ptr_range().end <= inside.end, "a prefix outside the arguments");
                canonical.push(b' ');
                canonical.extend_from_slice(p);
            }
        }
        TrackCommand::Attach { sid, noloop } => {
            canonical = format!("attach {sid}{}", if *noloop { " noloop" } else { "" }).into_bytes();
        }
        TrackCommand::Detach => canonical = b"detach".to_vec(),
    }
    assert_eq!(track::parse(&canonical).as_ref(), Ok(&cmd), "canonical form {:?}", String::from_utf8_lossy(&canonical));
}

/// A stream connection's input read line by line, as the driver does: each
/// `mn` consumed exactly, then whatever ends the reading.
pub fn check_stream_input(input: &[u8]) {
    let mut at = 0;
    loop {
        let buf = &input[at..];
        match track::stream_input(buf) {
            StreamInput::Mn(n) => {
                assert!(n == 3 || n == 4, "mn consumed {n} bytes");
                assert!(n <= buf.len(), "consumed past the input");
                let line = &buf[..n];
                assert!(line == b"mn\r\n" || line == b"mn\n", "consumed {:?} as mn", String::from_utf8_lossy(line));
                at += n;
            }
            StreamInput::Incomplete => {
                assert!(!buf.contains(&b'\n') && buf.len() <= track::STREAM_LINE_MAX, "incomplete with a whole line");
                return;
            }
            StreamInput::Quit => {
                let nl = buf.iter().position(|&b| b == b'\n').expect("quit without a line");
                assert!(&buf[..nl] == b"quit" || &buf[..nl] == b"quit\r");
                return;
            }
            StreamInput::Other => {
                let first = buf.iter().position(|&b| b == b'\n');
                assert!(first.is_some() || buf.len() > track::STREAM_LINE_MAX, "refused an incomplete short line");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms_and_stream_lines_keep_the_contract() {
        for args in [&b"stream"[..], b"stream bcast", b"stream bcast  user: item:", b"attach 18446744073709551615 noloop", b"detach", b"attach 00"] {
            check_command(args);
            let mut data = vec![2];
            data.extend_from_slice(args);
            fuzz_track(&data);
        }
        for input in [&b"mn\r\nmn\nquit\r\n"[..], b"mn\r\nget k\r\n", b"mn", &vec![b'x'; track::STREAM_LINE_MAX + 1][..]] {
            check_stream_input(input);
        }
    }

    /// The committed seeds and regressions of `track_parse` (skipped where
    /// the repository is not around the crate).
    #[test]
    fn fuzz_seeds_replay() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
        for dir in ["corpus", "regressions"] {
            let Ok(files) = std::fs::read_dir(root.join(dir).join("track_parse")) else { continue };
            for file in files {
                let path = file.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                if let Err(e) = std::panic::catch_unwind(|| fuzz_track(&data)) {
                    panic!("{}: {:?}", path.display(), e.downcast_ref::<String>());
                }
            }
        }
    }
}
