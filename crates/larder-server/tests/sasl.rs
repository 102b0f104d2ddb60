//! `-S` over the wire, against the real Cyrus library (as memcached uses
//! it): start-up refusals compared with memcached 1.6.18 (message and exit
//! code), PLAIN and CRAM-MD5, the Cyrus callbacks (config path, logging),
//! and hostile clients: oversized SASL data, floods of failed attempts,
//! hundreds of connections each holding a Cyrus context, with the RSS
//! watched. These run every `unsafe` block of `auth/cyrus.rs`: loading and
//! initialising the library (and its config-path callback), a context per
//! connection, list, start, step, the log callback (`-vv`) and dispose.
//!
//! Needs libsasl2 with its PLAIN/CRAM-MD5 plugins and `saslpasswd2`
//! (Debian libsasl2-2, libsasl2-modules, sasl2-bin; scripts/test installs
//! them).

mod common;
use common::{require_or_skip, Memcached};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::sasl::{packet, packet_ext, Bin, Conf, Server, PASSWORD, USER};

fn memcached_bin() -> Option<PathBuf> {
    let (bin, exists) = Memcached::binary();
    require_or_skip(exists.then_some(bin), "memcached 1.6.18", "apt-get install memcached")
}

/// RFC 2104 HMAC-MD5, for the CRAM-MD5 client side (no crypto crate in
/// the workspace; MD5 below is RFC 1321, written out for this test).
fn hmac_md5(key: &[u8], msg: &[u8]) -> [u8; 16] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..16].copy_from_slice(&md5(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).chain(msg.iter().copied()).collect();
    let outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).chain(md5(&inner)).collect();
    md5(&outer)
}

fn md5(data: &[u8]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 4, 11, 16,
        23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let k: Vec<u32> = (0..64).map(|i| ((i as f64 + 1.0).sin().abs() * 4294967296.0) as u32).collect();
    let mut h: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_le_bytes());
    for chunk in msg.chunks(64) {
        let m: Vec<u32> = chunk.chunks(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        let (mut a, mut b, mut c, mut d) = (h[0], h[1], h[2], h[3]);
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let t = d;
            d = c;
            c = b;
            b = b.wrapping_add(a.wrapping_add(f).wrapping_add(k[i]).wrapping_add(m[g]).rotate_left(S[i]));
            a = t;
        }
        h = [h[0].wrapping_add(a), h[1].wrapping_add(b), h[2].wrapping_add(c), h[3].wrapping_add(d)];
    }
    let mut out = [0u8; 16];
    for (i, w) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}

#[test]
fn md5_matches_rfc1321() {
    let hex = |d: [u8; 16]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(hex(md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(hex(md5(b"message digest")), "f96b697d7cb7938d525a2f31aaf161d0");
    // RFC 2104's second test vector.
    assert_eq!(hex(hmac_md5(b"Jefe", b"what do ya want for nothing?")), "750c783e6ab0b503eaa86e310a5db738");
}

/// `-S` with ascii/auto/UDP, and `-S` with no config to find: the same
/// message and exit code as memcached 1.6.18.
#[test]
fn start_up_refusals_as_memcached() {
    let Some(mc) = memcached_bin() else { return };
    let cases: &[&[&str]] = &[
        &["-S", "-B", "auto"],
        &["-S", "-B", "ascii"],
        &["-S", "-B", "binary", "-B", "ascii"],
        &["-S", "-U", "11999"],
        &["-S", "-B", "binary", "-U", "11999"],
    ];
    for args in cases {
        let run = |bin: &Path| {
            let out = Command::new(bin).args(["-u", "root", "-p", "0", "-l", "127.0.0.1"]).args(*args).output().unwrap();
            (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
        };
        let (l, m) = (run(Path::new(common::binary())), run(&mc));
        assert_eq!(l, m, "{args:?}");
        assert_eq!(l.0, Some(64), "{args:?}");
    }
}

/// Cyrus found no `memcached.conf` anywhere (SASL_CONF_PATH unset and none
/// in /etc/sasl{,2}): memcached's "Error initializing sasl.", exit 1. Only
/// where the machine has no such file (else both would start).
#[test]
fn no_config_path_fails_as_memcached() {
    let Some(mc) = memcached_bin() else { return };
    let installed = ["/etc/sasl/memcached.conf", "/etc/sasl2/memcached.conf"].iter().any(|p| Path::new(p).exists());
    let run = |bin: &Path| {
        let out = Command::new(bin)
            .args(["-u", "root", "-p", "0", "-l", "127.0.0.1", "-S"])
            .env_remove("SASL_CONF_PATH")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    if installed {
        eprintln!("no_config_path_fails_as_memcached: this machine has a memcached.conf for Cyrus; not checked");
        return;
    }
    let (l, m) = (run(Path::new(common::binary())), run(&mc));
    assert_eq!(l, m);
    assert_eq!(l, (Some(1), "Error initializing sasl.\n".to_string()));
}

#[test]
fn plain_and_cram_md5_through_cyrus() {
    let Some(conf) = Conf::new() else { return };
    let srv = Server::larder(&conf, &[]);
    let mut c = srv.connect();
    let list = c.call(0x20, b"", b"");
    assert_eq!((list.status, &list.value[..]), (0, &b"PLAIN CRAM-MD5"[..]));
    let bad = c.plain("wrong");
    assert_eq!((bad.status, &bad.value[..]), (0x20, &b"Auth failure."[..]));
    let good = c.plain(PASSWORD);
    assert_eq!((good.status, &good.value[..]), (0, &b"Authenticated"[..]));
    let set = c.0.write_all(&packet_ext(0x01, b"k", &[0; 8], b"v", 1));
    set.unwrap();
    assert_eq!(c.reply().status, 0);
    // CRAM-MD5 on another connection: challenge, then the digest.
    let mut c2 = srv.connect();
    let challenge = c2.call(0x21, b"CRAM-MD5", b"");
    assert_eq!(challenge.status, 0x21);
    assert!(challenge.value.starts_with(b"<") && challenge.value.ends_with(b">"), "{:?}", challenge.value);
    let digest: String = hmac_md5(PASSWORD.as_bytes(), &challenge.value).iter().map(|b| format!("{b:02x}")).collect();
    let done = c2.call(0x22, b"CRAM-MD5", format!("{USER} {digest}").as_bytes());
    assert_eq!((done.status, &done.value[..]), (0, &b"Authenticated"[..]));
    let get = c2.call(0x00, b"k", b"");
    assert_eq!((get.status, &get.value[..]), (0, &b"v"[..]));
    // One success each, one failure.
    assert_eq!((c2.stat("auth_cmds"), c2.stat("auth_errors")), (3, 1));
}

/// The log callback: with -vv Cyrus's messages come out in memcached's format.
#[test]
fn cyrus_logs_through_the_callback() {
    let Some(conf) = Conf::new() else { return };
    let mut srv = Server::larder(&conf, &["-vv"]);
    let mut c = srv.connect();
    assert_eq!(c.plain("wrong").status, 0x20);
    drop(c);
    let mut stderr = srv.child.stderr.take().unwrap();
    let _ = srv.child.kill();
    let _ = srv.child.wait();
    let mut text = String::new();
    stderr.read_to_string(&mut text).unwrap();
    assert!(text.contains("Reading configuration from: <"), "{text}");
    assert!(text.contains("Initialized SASL."), "{text}");
    assert!(text.contains("SASL (severity "), "{text}");
}

/// Oversized SASL data: ENOMEM from the header alone, the data swallowed as
/// it arrives (never buffered), the connection kept; the same bytes as
/// memcached. A long mechanism name: EINVAL, also kept.
#[test]
fn oversized_sasl_data_is_swallowed_as_memcached() {
    let Some(conf) = Conf::new() else { return };
    let Some(mc) = memcached_bin() else { return };
    let mut replies = Vec::new();
    for srv in [Server::larder(&conf, &[]), Server::start(&mc, &conf, &[])] {
        let before = srv.rss_kib();
        let mut c = srv.connect();
        let mut header = packet(0x21, b"PLAIN", b"", 5);
        let data_len: u32 = 8 << 20;
        header[8..12].copy_from_slice(&(5 + data_len).to_be_bytes());
        c.send(&header);
        // Both servers send the ENOMEM only once the data is swallowed.
        let junk = vec![b'x'; 1 << 20];
        for _ in 0..8 {
            c.send(&junk);
        }
        let enomem = c.reply();
        let einval = c.call(0x21, &[b'M'; 33], b"\0u\0p");
        let list = c.call(0x20, b"", b"");
        assert_eq!(enomem.status, 0x82);
        assert_eq!(einval.status, 0x04);
        assert_eq!(list.status, 0);
        // 8 MiB went through without being held.
        assert!(srv.rss_kib() < before + 4 * 1024, "rss {} -> {} KiB", before, srv.rss_kib());
        replies.push((enomem.raw, einval.raw));
    }
    assert_eq!(replies[0], replies[1]);
}

/// A flood of failed attempts on one connection, pipelined: every one
/// answered, counted, nothing authenticated, memory flat.
#[test]
fn pipelined_failed_attempts() {
    let Some(conf) = Conf::new() else { return };
    let srv = Server::larder(&conf, &[]);
    let mut c = srv.connect();
    let mut batch = Vec::new();
    for i in 0..2000u32 {
        match i % 4 {
            0 => batch.extend(packet(0x21, b"PLAIN", format!("\0{USER}\0bad{i}").as_bytes(), i)),
            1 => batch.extend(packet(0x22, b"PLAIN", b"garbage", i)),
            2 => batch.extend(packet(0x21, b"NOSUCHMECH", b"x", i)),
            _ => batch.extend(packet(0x21, b"CRA\0M-MD5", b"", i)),
        }
    }
    let before = srv.rss_kib();
    c.send(&batch);
    let mut statuses = std::collections::BTreeMap::new();
    for _ in 0..2000 {
        *statuses.entry(c.reply().status).or_insert(0) += 1;
    }
    assert_eq!(statuses.get(&0), None, "{statuses:?}");
    // Still unauthenticated: a get is refused and closes.
    assert_eq!(c.call(0x00, b"k", b"").status, 0x20);
    assert!(c.closed());
    let mut a = srv.connect();
    assert_eq!(a.plain(PASSWORD).status, 0);
    assert!(a.stat("auth_errors") >= 1500);
    assert!(srv.rss_kib() < before + 8 * 1024, "rss {} -> {} KiB", before, srv.rss_kib());
}

/// Hundreds of connections, each with a Cyrus context (a list and a failed
/// attempt), open at once and then closed: the contexts are disposed (RSS
/// stops growing) and the server still authenticates.
#[test]
fn many_connections_with_contexts() {
    let Some(conf) = Conf::new() else { return };
    let srv = Server::larder(&conf, &["-c", "2000"]);
    let round = |n: usize| {
        let mut conns: Vec<Bin> = (0..n).map(|_| srv.connect()).collect();
        for c in &mut conns {
            assert_eq!(c.call(0x20, b"", b"").status, 0);
            assert_eq!(c.plain("nope").status, 0x20);
        }
        drop(conns);
        std::thread::sleep(Duration::from_millis(300));
    };
    // The allocator keeps some of what the first rounds freed (Cyrus's
    // allocations land between the session buffers), so RSS settles after
    // a few rounds rather than returning to the start: measured, 18 MiB
    // after the first round, 26-28 MiB from the fourth on, and now and then
    // one more step of 3-4 MiB later (3 of 10 runs at 1ac3f51 crossed a
    // single 3 MiB window). A context not disposed (several KiB each) adds
    // megabytes per round of 500 in every window, so the test fails only
    // if two windows of 2000 connections in a row both grow.
    for _ in 0..4 {
        round(500);
    }
    let mut rss = vec![srv.rss_kib()];
    for _ in 0..2 {
        for _ in 0..4 {
            round(500);
        }
        rss.push(srv.rss_kib());
    }
    let growth = rss.windows(2).map(|w| w[1].saturating_sub(w[0])).min().unwrap();
    assert!(growth < 3 * 1024, "contexts leak: RSS {rss:?} KiB, each 2000 more connections");
    let mut c = srv.connect();
    assert_eq!(c.plain(PASSWORD).status, 0);
}
