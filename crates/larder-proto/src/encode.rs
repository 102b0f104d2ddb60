//! Request encoders: the bytes a client sends for a parsed request. Test
//! support, not part of the API: the round-trip property of
//! [`crate::invariants`] (what parses re-encodes to bytes that parse to an
//! equivalent request) and the fuzz targets (`fuzz/`) use them.
//!
//! Each encoder writes one canonical spelling: single spaces between
//! tokens, numbers in decimal as the parser stored them (a truncated or
//! wrapped number is written as its stored value, which reads back the
//! same), `\r\n` line ends, a base64 key (meta `b`) re-encoded canonically,
//! and binary packets whose body is exactly extras + key + value. So the
//! encoding is usually not the bytes that were parsed, only equivalent to
//! them.

use crate::binary::{BinRequest, Extras, SaslRequest, HEADER_LEN, REQUEST_MAGIC};
use crate::meta::{self, MetaCommand, MetaRequest};
use crate::reply::push_u64;
use crate::text::{AdminCommand, Request, StoreCommand};

fn push_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    push_u64(out, n.unsigned_abs());
}

fn token(out: &mut Vec<u8>, t: &[u8]) {
    out.push(b' ');
    out.extend_from_slice(t);
}

fn number(out: &mut Vec<u8>, n: u64) {
    out.push(b' ');
    push_u64(out, n);
}

fn signed(out: &mut Vec<u8>, n: i64) {
    out.push(b' ');
    push_i64(out, n);
}

fn noreply(out: &mut Vec<u8>, yes: bool) {
    if yes {
        out.extend_from_slice(b" noreply");
    }
}

/// The command name of an administrative command.
pub fn admin_name(command: AdminCommand) -> &'static [u8] {
    match command {
        AdminCommand::Slabs => b"slabs",
        AdminCommand::Lru => b"lru",
        AdminCommand::LruCrawler => b"lru_crawler",
        AdminCommand::Watch => b"watch",
        AdminCommand::Extstore => b"extstore",
        AdminCommand::RefreshCerts => b"refresh_certs",
        AdminCommand::Track => b"track",
    }
}

/// Append a text-protocol (or meta) request, data block included.
pub fn text_request(out: &mut Vec<u8>, request: &Request<'_>) {
    match *request {
        Request::Get { keys, cas } => {
            out.extend_from_slice(if cas { b"gets" } else { b"get" });
            for key in keys {
                token(out, key);
            }
        }
        Request::Gat { exptime, keys, cas } => {
            out.extend_from_slice(if cas { b"gats" } else { b"gat" });
            signed(out, exptime);
            for key in keys {
                token(out, key);
            }
        }
        Request::Store { command, key, flags, exptime, data, noreply: quiet } => {
            out.extend_from_slice(match command {
                StoreCommand::Set => b"set",
                StoreCommand::Add => b"add",
                StoreCommand::Replace => b"replace",
                StoreCommand::Append => b"append",
                StoreCommand::Prepend => b"prepend",
                StoreCommand::Cas(_) => b"cas",
            });
            token(out, key);
            number(out, u64::from(flags));
            signed(out, exptime);
            number(out, data.len() as u64);
            if let StoreCommand::Cas(unique) = command {
                number(out, unique);
            }
            noreply(out, quiet);
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(data);
        }
        Request::Delete { key, noreply: quiet } => {
            out.extend_from_slice(b"delete");
            token(out, key);
            noreply(out, quiet);
        }
        Request::Arith { key, incr, delta, noreply: quiet } => {
            out.extend_from_slice(if incr { b"incr" } else { b"decr" });
            token(out, key);
            number(out, delta);
            noreply(out, quiet);
        }
        Request::Touch { key, exptime, noreply: quiet } => {
            out.extend_from_slice(b"touch");
            token(out, key);
            signed(out, exptime);
            noreply(out, quiet);
        }
        Request::FlushAll { delay, noreply: quiet } => {
            out.extend_from_slice(b"flush_all");
            signed(out, delay);
            noreply(out, quiet);
        }
        Request::Version => out.extend_from_slice(b"version"),
        Request::Quit => out.extend_from_slice(b"quit"),
        Request::Verbosity { level, noreply: quiet } => {
            out.extend_from_slice(b"verbosity");
            number(out, u64::from(level));
            noreply(out, quiet);
        }
        Request::Stats { args } => {
            out.extend_from_slice(b"stats");
            if !args.is_empty() {
                token(out, args);
            }
        }
        Request::Shutdown { graceful } => {
            out.extend_from_slice(b"shutdown");
            if graceful {
                out.extend_from_slice(b" graceful");
            }
        }
        Request::CacheMemlimit { megabytes, noreply: quiet } => {
            out.extend_from_slice(b"cache_memlimit");
            number(out, megabytes);
            noreply(out, quiet);
        }
        Request::DebugTime { offset } => {
            out.extend_from_slice(b"debugtime");
            signed(out, offset);
        }
        Request::Admin { command, args, .. } => {
            out.extend_from_slice(admin_name(command));
            if !args.is_empty() {
                token(out, args);
            }
        }
        Request::Meta(ref m) => return meta_request(out, m),
    }
    out.extend_from_slice(b"\r\n");
}

/// Append a meta request (`ms`: with its data block).
pub fn meta_request(out: &mut Vec<u8>, m: &MetaRequest<'_>) {
    out.extend_from_slice(match m.command {
        MetaCommand::Get => b"mg",
        MetaCommand::Set => b"ms",
        MetaCommand::Delete => b"md",
        MetaCommand::Arith => b"ma",
        MetaCommand::Noop => b"mn",
        MetaCommand::Debug => b"me",
    });
    if m.command == MetaCommand::Noop {
        out.extend_from_slice(b"\r\n");
        return;
    }
    out.push(b' ');
    if m.key_binary() {
        meta::base64_encode(out, m.key());
    } else {
        out.extend_from_slice(m.key());
    }
    if m.command == MetaCommand::Debug {
        if m.key_binary() {
            out.extend_from_slice(b" b");
        }
        out.extend_from_slice(b"\r\n");
        return;
    }
    if m.command == MetaCommand::Set {
        number(out, m.data.len() as u64);
    }
    let f = &m.flags;
    for &letter in f.order() {
        out.push(b' ');
        match letter {
            b'O' => {
                out.extend_from_slice(f.opaque);
                continue;
            }
            b'M' => {
                out.push(b'M');
                out.push(f.mode.expect("M was parsed"));
                continue;
            }
            _ => out.push(letter),
        }
        let n = |v: Option<i32>| i64::from(v.expect("a parsed flag has its value"));
        match letter {
            b'N' => push_i64(out, n(f.vivify_ttl)),
            b'T' => push_i64(out, n(f.ttl)),
            b'R' => push_i64(out, n(f.recache_ttl)),
            b'F' => push_u64(out, u64::from(f.client_flags)),
            b'C' => push_u64(out, f.cas.expect("C was parsed")),
            b'E' => push_u64(out, f.new_cas.expect("E was parsed")),
            b'J' => push_u64(out, f.initial),
            b'D' => push_u64(out, f.delta),
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
    if m.command == MetaCommand::Set {
        out.extend_from_slice(m.data);
        out.extend_from_slice(b"\r\n");
    }
}

/// A binary request packet: `opcode`, extras, key and value, body length
/// exactly their sum.
pub fn binary_packet(out: &mut Vec<u8>, opcode: u8, extras: &[u8], key: &[u8], value: &[u8], opaque: u32, cas: u64) {
    let body = extras.len() + key.len() + value.len();
    out.reserve(HEADER_LEN + body);
    out.extend_from_slice(&[REQUEST_MAGIC, opcode]);
    out.extend_from_slice(&(key.len() as u16).to_be_bytes());
    out.push(extras.len() as u8);
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(&(body as u32).to_be_bytes());
    out.extend_from_slice(&opaque.to_be_bytes());
    out.extend_from_slice(&cas.to_be_bytes());
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// Append a binary request.
pub fn binary_request(out: &mut Vec<u8>, r: &BinRequest<'_>) {
    let mut extras = [0u8; 20];
    let extras: &[u8] = match r.extras {
        Extras::None => &[],
        Extras::Store { flags, exptime } => {
            extras[..4].copy_from_slice(&flags.to_be_bytes());
            extras[4..8].copy_from_slice(&exptime.to_be_bytes());
            &extras[..8]
        }
        Extras::Arith { delta, initial, exptime } => {
            extras[..8].copy_from_slice(&delta.to_be_bytes());
            extras[8..16].copy_from_slice(&initial.unwrap_or(0).to_be_bytes());
            extras[16..20].copy_from_slice(&exptime.to_be_bytes());
            &extras[..20]
        }
        Extras::Touch { exptime } | Extras::Flush { exptime } => {
            extras[..4].copy_from_slice(&exptime.to_be_bytes());
            &extras[..4]
        }
    };
    binary_packet(out, r.opcode.code(), extras, r.key, r.value, r.opaque, r.cas);
}

/// Append a SASL request (`-S`): the mechanism as the key, the data as
/// the value.
pub fn sasl_request(out: &mut Vec<u8>, r: &SaslRequest<'_>) {
    binary_packet(out, r.opcode, &[], r.mech, r.data, r.opaque, 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{parse, Limits, Parsed};

    fn round_trip(line: &[u8]) -> Vec<u8> {
        let limits = Limits::default();
        let Parsed::Request { request, .. } = parse(line, &limits) else { panic!("{line:?}") };
        let mut out = Vec::new();
        text_request(&mut out, &request);
        out
    }

    #[test]
    fn canonical_spellings() {
        assert_eq!(round_trip(b"get  a   b \r\n"), b"get a b\r\n");
        assert_eq!(round_trip(b"set k 4294967297 -1 3 noreply\r\nabc\r\n"), b"set k 1 -1 3 noreply\r\nabc\r\n");
        assert_eq!(round_trip(b"cas k 0 0 1 99\r\nx\r\n"), b"cas k 0 0 1 99\r\nx\r\n");
        assert_eq!(round_trip(b"mg Zm9v b v O123 T-5 kk\r\n"), b"mg Zm9v b v O123 T-5 k\r\n");
        assert_eq!(round_trip(b"ms k 2 MS F7 I\r\nhi\r\n"), b"ms k 2 MS F7 I\r\nhi\r\n");
        assert_eq!(round_trip(b"mn whatever\r\n"), b"mn\r\n");
        assert_eq!(round_trip(b"me Zm9v b\r\n"), b"me Zm9v b\r\n");
        assert_eq!(round_trip(b"stats  slabs  \r\n"), b"stats slabs\r\n");
    }
}
