//! larder's TLS record layer (`net::tls_record`, driven by `net::tls`)
//! against a real rustls client, in-process over loopback TCP: every
//! suite of TLS 1.2 and 1.3 the configuration allows, records split over
//! reads and many per read, a 1 MiB value each way, client key updates,
//! tampered records, unexpected records and close_notify. A wrong nonce,
//! additional data or sequence number would fail to decrypt on one side
//! or the other.

mod common;
mod tls_support;

use rustls::AlertDescription;
use std::io;
use tls_support::{records, suites, until, Pair};

fn name(s: rustls::SupportedCipherSuite) -> String {
    format!("{:?}", s.suite())
}

#[test]
fn every_suite_round_trips_requests_and_replies() {
    for suite in suites() {
        let mut p = Pair::new(suite);
        for i in 0..20 {
            let req = format!("get key-{i}\r\n");
            assert_eq!(p.send_to_server(req.as_bytes()), req.as_bytes(), "{}", name(suite));
            let reply = format!("VALUE key-{i} 0 1\r\n{i}\r\nEND\r\n");
            assert_eq!(p.send_to_client(reply.as_bytes()), reply.as_bytes(), "{}", name(suite));
        }
    }
}

/// 100 records in one socket read, and the 100 replies in one.
#[test]
fn many_records_per_read() {
    for suite in suites() {
        let mut p = Pair::new(suite);
        let mut want = Vec::new();
        for i in 0..100 {
            let r = format!("incr n {i}\r\n");
            p.client_send(r.as_bytes()); // one record per write
            want.extend_from_slice(r.as_bytes());
        }
        let wire = p.client_wire();
        assert_eq!(records(&wire).len(), 100, "{}", name(suite));
        p.send_raw(&wire);
        let mut got = Vec::new();
        while got.len() < want.len() {
            got.extend(p.server_read().unwrap());
        }
        assert_eq!(got, want, "{}", name(suite));
    }
}

/// A record arriving a byte at a time: nothing is delivered before its
/// last byte (the tag) is there, then all of it.
#[test]
fn records_split_across_reads() {
    for suite in suites() {
        let mut p = Pair::new(suite);
        let msg: Vec<u8> = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
        p.client_send(&msg);
        p.client_send(b"second\r\n");
        let wire = p.client_wire();
        let first_len = 5 + records(&wire)[0].1;
        let mut got = Vec::new();
        for (i, b) in wire.iter().enumerate() {
            p.send_raw(std::slice::from_ref(b));
            let mut read = p.server_read().unwrap();
            if read.is_empty() && (i + 1 == first_len || i + 1 == wire.len()) {
                read = until("the record's last byte", || Some(p.server_read().unwrap()).filter(|r| !r.is_empty()));
            }
            if i + 1 < first_len {
                assert!(read.is_empty(), "{}: plaintext delivered before the record was whole", name(suite));
            }
            got.extend(read);
            if i + 1 == first_len {
                assert!(got == msg, "{}: first record: {} bytes", name(suite), got.len());
            }
        }
        assert!(got == [&msg[..], b"second\r\n"].concat(), "{}: {} bytes", name(suite), got.len());
    }
}

/// A 1 MiB value each way (64 full records and more): what `set` and
/// `get` of a large value do.
#[test]
fn a_one_mebibyte_value_each_way() {
    for suite in suites() {
        let mut p = Pair::new(suite);
        let value: Vec<u8> = (0..1u32 << 20).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
        assert!(p.send_to_server(&value) == value, "{}: client to server", name(suite));
        assert!(p.send_to_client(&value) == value, "{}: server to client", name(suite));
    }
}

/// The client updates its keys (asking the server to update its own) 100
/// times, with a request and reply between: the server reads under each
/// new key, and answers each request for an update with a KeyUpdate
/// record of its own before the reply, which the client reads under the
/// server's new key.
#[test]
fn client_key_updates_are_followed_both_ways() {
    for suite in suites().into_iter().filter(|s| s.version() == &rustls::version::TLS13) {
        let mut p = Pair::new(suite);
        for i in 0..100 {
            p.client.refresh_traffic_keys().unwrap();
            let req = format!("get k{i}\r\n");
            assert_eq!(p.send_to_server(req.as_bytes()), req.as_bytes(), "{}", name(suite));
            let reply = format!("reply {i}\r\n");
            let mut sent = 0;
            while sent < reply.len() {
                sent += p.server.write(&reply.as_bytes()[sent..]).unwrap();
            }
            let mut raw = Vec::new();
            until("the server's KeyUpdate and reply", || {
                raw.extend(p.client_raw());
                (records(&raw).len() >= 2).then_some(())
            });
            // Our KeyUpdate (27 bytes sealed) and the reply: two records.
            assert_eq!(records(&raw).len(), 2, "{}: round {i}: {:?}", name(suite), records(&raw));
            assert_eq!(p.client_feed(&raw).unwrap(), reply.as_bytes(), "{}", name(suite));
        }
    }
}

/// The records-per-key limit (the suite's confidentiality limit, lowered
/// to 5 here): TLS 1.3 sends a KeyUpdate and goes on under the new key
/// (the client reads every reply); TLS 1.2 cannot renew its key and
/// closes with close_notify instead of sealing past the limit.
#[test]
fn the_records_per_key_limit_renews_the_key_or_closes() {
    for suite in suites() {
        let mut p = Pair::new(suite);
        p.server.limit_records_per_key(5);
        let tls13 = suite.version() == &rustls::version::TLS13;
        let mut raw_all = Vec::new();
        let mut closed = false;
        for i in 0..12 {
            let reply = format!("reply {i}\r\n");
            match p.server.write(reply.as_bytes()) {
                Ok(n) => assert_eq!(n, reply.len()),
                Err(e) => {
                    assert!(!tls13, "{}: TLS 1.3 failed at record {i}: {e}", name(suite));
                    // Sequence number 0 went to the server's Finished.
                    assert_eq!(i, 4, "{}: TLS 1.2 closed at record {i}", name(suite));
                    closed = true;
                    break;
                }
            }
            let mut raw = Vec::new();
            until("the reply", || {
                raw.extend(p.client_raw());
                (!records(&raw).is_empty()).then_some(())
            });
            raw_all.extend_from_slice(&raw);
            assert_eq!(p.client_feed(&raw).unwrap(), reply.as_bytes(), "{}", name(suite));
        }
        if tls13 {
            // Replies 0-4 under the first key, then a KeyUpdate before
            // reply 5 and another before reply 10.
            assert_eq!(records(&raw_all).len(), 14, "{}", name(suite));
        } else {
            assert!(closed, "{}: TLS 1.2 sealed past the limit", name(suite));
            until("close_notify", || {
                p.client_recv().unwrap();
                let mut b = [0u8; 1];
                match p.client.reader().read(&mut b) {
                    Ok(0) => Some(()),
                    _ => None,
                }
            });
        }
    }
}

/// Key updates without data between them: 32 are taken (as rustls takes
/// them), the 33rd ends the connection.
#[test]
fn a_key_update_flood_is_cut_off() {
    let mut p = Pair::new(rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256);
    for _ in 0..33 {
        p.client.refresh_traffic_keys().unwrap();
    }
    p.client_flush();
    let err = until("the server to refuse the 33rd key update in a row", || p.server_read().err());
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
}

/// One flipped bit in a record: the server delivers none of it, sends
/// bad_record_mac and closes; nothing more is read.
#[test]
fn a_tampered_record_closes_the_connection_and_delivers_nothing() {
    for suite in suites() {
        for flip in ["ciphertext", "tag", "header"] {
            let mut p = Pair::new(suite);
            assert_eq!(p.send_to_server(b"before\r\n"), b"before\r\n");
            p.client_send(b"set k 0 0 5\r\nvalue\r\n");
            let mut wire = p.client_wire();
            let at = match flip {
                "ciphertext" => 5 + 10,
                "tag" => wire.len() - 1,
                // the length's low bit: the record no longer ends where
                // the tag is (the header is authenticated in TLS 1.3, its
                // length bounds the tag in 1.2)
                _ => 4,
            };
            wire[at] ^= 1;
            if flip == "header" {
                wire.push(0); // one byte more, so the longer record is whole
            }
            p.send_raw(&wire);
            until("the server to refuse the record", || match p.server_read() {
                Ok(r) if r.is_empty() => None,
                Ok(r) => panic!("{} ({flip}): tampered record delivered {} bytes", name(suite), r.len()),
                Err(e) => Some(e),
            });
            assert!(p.server_read().is_err(), "{} ({flip}): the connection goes on", name(suite));
            match until("the alert", || match p.client_recv() {
                Ok(r) if r.is_empty() => None,
                other => Some(other),
            }) {
                Err(rustls::Error::AlertReceived(a)) => assert_eq!(a, AlertDescription::BadRecordMac, "{} ({flip})", name(suite)),
                other => panic!("{} ({flip}): client saw {other:?}", name(suite)),
            }
        }
    }
}

/// A record of a type not allowed after the handshake (an unencrypted
/// change_cipher_spec) ends the connection with unexpected_message.
#[test]
fn an_unexpected_record_type_closes_the_connection() {
    for suite in suites() {
        let mut p = Pair::new(suite);
        assert_eq!(p.send_to_server(b"hi\r\n"), b"hi\r\n");
        p.send_raw(&[20, 3, 3, 0, 1, 1]);
        until("the server to refuse the record", || match p.server_read() {
            Ok(r) => {
                assert!(r.is_empty(), "{}", name(suite));
                None
            }
            Err(e) => Some(e),
        });
        match until("the alert", || match p.client_recv() {
            Ok(r) if r.is_empty() => None,
            other => Some(other),
        }) {
            // TLS 1.3: the outer type must be application_data; TLS 1.2:
            // the record fails to open (it is not sealed).
            Err(rustls::Error::AlertReceived(a)) => {
                assert!(matches!(a, AlertDescription::UnexpectedMessage | AlertDescription::BadRecordMac), "{}: {a:?}", name(suite))
            }
            other => panic!("{}: client saw {other:?}", name(suite)),
        }
    }
}

/// close_notify after data: the data, then end of stream; the server's
/// own close_notify reaches the client when it closes.
#[test]
fn close_notify_ends_the_stream_after_the_data() {
    for suite in suites() {
        let mut p = Pair::new(suite);
        p.client_send(b"quit\r\n");
        p.client.send_close_notify();
        p.client_flush();
        let mut got = Vec::new();
        until("close_notify", || {
            got.extend(p.server_read().unwrap());
            p.server_eof.then_some(())
        });
        assert_eq!(got, b"quit\r\n", "{}", name(suite));
        let mut buf = [0u8; 16];
        assert_eq!(p.server.read(&mut buf).unwrap(), 0, "{}: still ended", name(suite));
        // The server's own close_notify: sent when the connection ends.
        let mut q = Pair::new(suite);
        q.server.abandon();
        until("the server's close_notify", || {
            assert_eq!(q.client_recv().unwrap(), b"");
            let mut plain = [0u8; 1];
            match q.client.reader().read(&mut plain) {
                Ok(0) => Some(()),
                Ok(_) => panic!("{}: data instead of close_notify", name(suite)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
                Err(e) => panic!("{}: {e}", name(suite)),
            }
        });
    }
}

/// Data the client sends right behind its Finished (in the same write)
/// reaches the session: rustls decrypts it during the handshake, larder
/// hands it on first.
#[test]
fn data_right_after_the_handshake_is_not_lost() {
    for suite in suites() {
        let mut p = tls_support::Pair::connect(tls_support::server_config(|_| {}), tls_support::client_config(suite));
        p.client_send(b"early get\r\n"); // queued until the handshake is done
        let mut got = Vec::new();
        let start = std::time::Instant::now();
        while got.len() < 11 {
            assert!(start.elapsed() < std::time::Duration::from_secs(10), "{}: got {got:?}", name(suite));
            p.client_flush();
            got.extend(p.server_read().unwrap());
            p.client_recv().unwrap();
            std::thread::yield_now();
        }
        assert_eq!(got, b"early get\r\n", "{}", name(suite));
        assert_eq!(p.send_to_client(b"ok\r\n"), b"ok\r\n");
    }
}

use std::io::Read;

