//! Fuzz SASL (`-S`) as a binary connection lives it: the input is the
//! connection's byte stream, parsed with `larder_proto::binary::parse_sasl`
//! (gated by whether the connection has authenticated), and every SASL
//! request is run by the server's executor, `larder_server::auth::sasl`,
//! against a real in-process `Server` and the real Cyrus library: Cyrus is
//! dlopened (`libsasl2.so.2`) with a config made here (PLAIN and CRAM-MD5
//! against a sasldb holding `fuzzuser` / `fuzz pass`, written with
//! `saslpasswd2` when it is installed).
//!
//! Checked: no panic (nor memory error, under the sanitizer, in what larder
//! hands Cyrus: mechanism names of any bytes, data of any length);
//! a connection is authenticated exactly after an `Authenticated` reply
//! (every SASL command first makes it unauthenticated again), and only
//! version gets through unauthenticated (the parser's gate).
//!
//! Without libsasl2 (or with it failing to initialise) the target still
//! runs, with `access().sasl` unset: every command then fails, which exercises
//! the parser and the executor's state but not Cyrus; it says so once on
//! stderr.
#![no_main]

use larder_proto::binary::{self, BinParsed, SaslCommand};
use larder_server::auth::sasl::{sasl, ConnAuth, SaslReply};
use larder_server::state::server::{Access, Server, Shutdown, Startup};
use larder_server::Settings;
use libfuzzer_sys::fuzz_target;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The Cyrus config: memcached.conf naming the mechanisms and a sasldb.
fn configure() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("larder-fuzz-sasl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("sasldb");
    std::fs::write(dir.join("memcached.conf"), format!("mech_list: plain cram-md5\nsasldb_path: {}\n", db.display())).unwrap();
    let tool = ["/usr/sbin/saslpasswd2", "/usr/bin/saslpasswd2"].into_iter().find(|p| std::path::Path::new(p).exists());
    match tool {
        Some(tool) => {
            let mut child = Command::new(tool)
                .args(["-f", db.to_str().unwrap(), "-a", "memcached", "-c", "-p", "fuzzuser"])
                .stdin(Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(b"fuzz pass").unwrap();
            assert!(child.wait().unwrap().success(), "saslpasswd2 failed");
        }
        None => eprintln!("sasl_step: no saslpasswd2 (apt-get install sasl2-bin): no user can authenticate"),
    }
    dir
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = configure();
        std::env::set_var("SASL_CONF_PATH", &dir);
        let lib = match larder_server::auth::cyrus::init(0) {
            Ok(lib) => Some(lib),
            Err(e) => {
                eprintln!("sasl_step: Cyrus SASL unavailable ({e}): fuzzing the parser and executor without it");
                None
            }
        };
        let settings = Settings { sasl: true, threads: 1, memory_limit: 8 << 20, ..Settings::default() };
        let store = larder_store::Store::new(larder_store::Config { memory_limit: 8 << 20, ..larder_store::Config::default() }).unwrap();
        let access = Access { sasl: lib, ..Access::default() };
        Server::new(settings, store, Startup { access, ..Startup::bare(Shutdown::new()) })
    })
}

fuzz_target!(|data: &[u8]| {
    let srv = server();
    {
        let ws = &srv.counters().workers[0];
        let mut auth = ConnAuth::new(true);
        let mut rest = data;
        for _ in 0..64 {
            match binary::parse_sasl(rest, &srv.conns().limits, auth.authenticated()) {
                BinParsed::Sasl { request, consumed } => {
                    let reply = sasl(srv.access().sasl, srv.settings().verbose > 0, ws, &mut auth, &request);
                    let done = match reply {
                        SaslReply::Authenticated => true,
                        SaslReply::Mechanisms(list) => {
                            assert_eq!(request.command, SaslCommand::ListMechs);
                            assert!(!list.is_empty() && !list.contains(&0));
                            false
                        }
                        SaslReply::Continue(_) | SaslReply::Failed => false,
                    };
                    assert_eq!(auth.authenticated(), done, "authenticated exactly after Authenticated");
                    rest = &rest[consumed..];
                }
                BinParsed::Request { request, consumed } => {
                    assert!(auth.authenticated() || request.opcode == binary::Opcode::Version);
                    rest = &rest[consumed..];
                }
                BinParsed::Error { close: false, consumed, swallow, .. } => rest = &rest[(consumed + swallow).min(rest.len())..],
                BinParsed::Error { close: true, .. } | BinParsed::Incomplete { .. } | BinParsed::Close => break,
            }
        }
    }
});
