//! The library target: a server started in-process on a port the system
//! chooses (`-p -1`), served, and stopped through its `Shutdown` handle or
//! by the `shutdown` command — without signalling the embedding process.

use larder_server::{parse_args, Command, Shutdown};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

fn settings(extra: &[&str]) -> larder_server::Settings {
    let mut args: Vec<String> = ["-p", "-1", "-U", "0", "-l", "127.0.0.1", "-t", "2"].iter().map(|s| s.to_string()).collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    match parse_args(args) {
        Ok(Command::Run(s)) => s,
        _ => panic!("flags refused"),
    }
}

fn roundtrip(port: u16, req: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(req).unwrap();
    let mut r = BufReader::new(s);
    let mut out = String::new();
    loop {
        let mut l = String::new();
        if r.read_line(&mut l).unwrap() == 0 {
            break;
        }
        out.push_str(&l);
        if l == "END\r\n" || l == "STORED\r\n" {
            break;
        }
    }
    out
}

#[test]
fn serves_on_a_chosen_port_and_stops_on_request() {
    let prepared = larder_server::prepare(settings(&[])).unwrap();
    let port = prepared.tcp_addrs()[0].port();
    assert_ne!(port, 0);
    let shutdown = Shutdown::new();
    let running = larder_server::start(prepared, shutdown.clone()).unwrap();
    assert_eq!(roundtrip(port, b"set k 3 0 2\r\nhi\r\n"), "STORED\r\n");
    assert_eq!(roundtrip(port, b"get k\r\n"), "VALUE k 3 2\r\nhi\r\nEND\r\n");
    shutdown.request();
    running.wait_and_stop().unwrap();
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err(), "still listening after stop");
}

#[test]
fn the_shutdown_command_stops_only_this_server() {
    let prepared = larder_server::prepare(settings(&["-A"])).unwrap();
    let port = prepared.tcp_addrs()[0].port();
    let shutdown = Shutdown::new();
    let running = larder_server::start(prepared, shutdown.clone()).unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"shutdown\r\n").unwrap();
    // The test process is still here (no SIGTERM was raised) and the server stops.
    running.wait_and_stop().unwrap();
    assert!(shutdown.requested());
}
