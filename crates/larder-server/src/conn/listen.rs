//! Listening sockets and the acceptor thread.
//!
//! Sockets are bound before privileges are dropped (so `-p` below 1024
//! works with `-u`). The acceptor enforces `-c`: a connection past the limit
//! is told `ERROR Too many open connections` and closed, and counted in
//! `rejected_connections`, as memcached does. Accepted connections are dealt
//! round-robin to the workers. A TLS listener's connections get their
//! rustls state here, from the configuration current at accept for the
//! listener's client-certificate rule (`-l btls:`/`mtls:`,
//! `config::listen_mode`; `refresh_certs` and SIGHUP change it for later
//! connections only); the handshake itself runs on the worker, like any
//! other read and write.

use crate::config::listen_mode::{ListenMode, PeerRule};
use crate::config::Settings;
use crate::net::registry::{ConnInfo, ConnState};
use crate::state::server::Server;
use crate::net::stream::Stream;
use crate::net::tls::TlsStream;
use crate::conn::worker::{Inbox, NewConn};
use mio::net::{TcpListener, UdpSocket, UnixListener};
use mio::{Events, Interest, Poll, Token};
use std::io::{self, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

pub enum Listener {
    /// A TCP listener, its `stats conns` label, and the client-certificate
    /// rule of its TLS connections (`None`: plain; `-Z` makes every
    /// listener TLS unless `-l notls:…`).
    Tcp(TcpListener, String, Option<PeerRule>),
    Unix(UnixListener, String),
}

/// Everything bound at start-up.
pub struct Bound {
    pub listeners: Vec<Listener>,
    pub udp: Vec<std::net::UdpSocket>,
}

impl Bound {
    /// The addresses of the TCP listeners.
    pub fn tcp_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| match l {
                Listener::Tcp(t, ..) => t.local_addr().ok(),
                Listener::Unix(..) => None,
            })
            .collect()
    }
}

/// Resolve `-l` entries (`host`, `host:port`, `[v6]:port`) to addresses.
fn resolve(entry: &str, default_port: u16) -> io::Result<Vec<SocketAddr>> {
    let with_port = if entry.starts_with('[') {
        if entry.contains("]:") { entry.to_string() } else { format!("{entry}:{default_port}") }
    } else if entry.matches(':').count() == 1 {
        entry.to_string()
    } else if entry.contains(':') {
        format!("[{entry}]:{default_port}")
    } else {
        format!("{entry}:{default_port}")
    };
    let addrs: Vec<SocketAddr> = with_port.to_socket_addrs()?.collect();
    if addrs.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("cannot resolve '{entry}'")));
    }
    Ok(addrs)
}

fn bind_tcp(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    let domain = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // std's TcpListener::bind fixes the backlog at 128; memcached honours -b,
    // so the socket is made by hand.
    // SAFETY: plain socket syscalls on a fd we own; every result is checked.
    unsafe {
        let fd = libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let listener = <std::net::TcpListener as std::os::fd::FromRawFd>::from_raw_fd(fd);
        let one: libc::c_int = 1;
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &one as *const _ as *const libc::c_void, 4);
        if addr.is_ipv6() {
            libc::setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, &one as *const _ as *const libc::c_void, 4);
        }
        let (sa, len) = sockaddr(addr);
        if libc::bind(fd, &sa as *const _ as *const libc::sockaddr, len) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::listen(fd, backlog.max(1)) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TcpListener::from_std(listener))
    }
}

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data, large enough for either family.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            (storage, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t)
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            (storage, std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t)
        }
    }
}

/// Label an address as memcached's `stats conns` does.
pub fn label(proto: &str, addr: &SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("{proto}:{}:{}", a.ip(), a.port()),
        SocketAddr::V6(a) => format!("{proto}6:[{}]:{}", a.ip(), a.port()),
    }
}

/// Bind every listener the settings ask for.
pub fn bind_all(s: &Settings) -> Result<Bound, String> {
    let mut listeners = Vec::new();
    let mut udp = Vec::new();
    if let Some(path) = &s.unix_socket {
        // A stale socket file from a previous run would make bind fail.
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            use std::os::unix::fs::FileTypeExt;
            if meta.file_type().is_socket() {
                let _ = std::fs::remove_file(path);
            }
        }
        let l = UnixListener::bind(path).map_err(|e| format!("failed to listen on UNIX socket \"{path}\": {e}"))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(s.unix_mask))
            .map_err(|e| format!("failed to set permissions on \"{path}\": {e}"))?;
        listeners.push(Listener::Unix(l, format!("unix:{path}")));
        return Ok(Bound { listeners, udp });
    }
    let entries: Vec<String> = if s.listen.is_empty() { vec!["127.0.0.1".to_string()] } else { s.listen.clone() };
    // -1: any free port (the kernel picks one: port 0)
    let (tcp_port, udp_port) = (s.port.max(0) as u16, s.udp_port.max(0) as u16);
    for entry in &entries {
        // memcached's `notls:`, `btls:` and `mtls:` prefixes (checked
        // against -Z when the settings were parsed).
        let (mode, entry) = ListenMode::split(entry);
        let tls = mode.tls(s.tls.enabled);
        let addrs = resolve(entry, tcp_port).map_err(|e| format!("failed to resolve -l {entry}: {e}"))?;
        for addr in addrs {
            if s.port != 0 || entry.contains(':') {
                let l = bind_tcp(addr, s.backlog).map_err(|e| format!("failed to listen on TCP {addr}: {e}"))?;
                let local = l.local_addr().unwrap_or(addr);
                listeners.push(Listener::Tcp(l, label("tcp", &local), tls));
            }
            if s.udp_port != 0 {
                let mut ua = addr;
                ua.set_port(udp_port);
                // Two -l entries for one interface (a TLS and a `notls:`
                // port, say) share its one UDP socket.
                if udp.iter().any(|u: &std::net::UdpSocket| u.local_addr().ok() == Some(ua)) {
                    continue;
                }
                let u = std::net::UdpSocket::bind(ua).map_err(|e| format!("failed to listen on UDP {ua}: {e}"))?;
                u.set_nonblocking(true).map_err(|e| e.to_string())?;
                udp.push(u);
            }
        }
    }
    if listeners.is_empty() && udp.is_empty() {
        // memcached starts anyway (its t/issue_67.t checks that it does)
        eprintln!("larder: warning: -p 0 and -U 0: listening on nothing");
    }
    if let Some(path) = std::env::var_os("MEMCACHED_PORT_FILENAME") {
        // memcached only complains when it cannot write the file
        if let Err(e) = write_port_file(std::path::Path::new(&path), &listeners, &udp) {
            eprintln!("larder: {e}");
        }
    }
    Ok(Bound { listeners, udp })
}

/// memcached's `MEMCACHED_PORT_FILENAME`: the ports actually bound (what
/// test harnesses read after starting a server with `-p -1`), one line per
/// socket, `TCP INET: 11211`, `UDP INET6: 11211`, ..., TCP first. Written
/// to `<path>.lck` and renamed, so a reader never sees half of it.
fn write_port_file(path: &std::path::Path, listeners: &[Listener], udp: &[std::net::UdpSocket]) -> Result<(), String> {
    let mut text = String::new();
    let mut line = |proto: &str, addr: io::Result<SocketAddr>| {
        if let Ok(a) = addr {
            let family = if a.is_ipv4() { "INET" } else { "INET6" };
            text.push_str(&format!("{proto} {family}: {}\n", a.port()));
        }
    };
    for l in listeners {
        if let Listener::Tcp(t, ..) = l {
            line("TCP", t.local_addr());
        }
    }
    for u in udp {
        line("UDP", u.local_addr());
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".lck");
    std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, path)).map_err(|e| format!("failed to write the port file {}: {e}", path.display()))
}

const REJECT: &[u8] = larder_proto::reply::TOO_MANY_CONNECTIONS_LINE;

/// Accept connections forever (until the server stops), dealing them out.
pub fn run_acceptor(srv: Arc<Server>, mut listeners: Vec<Listener>, inboxes: Vec<Arc<Inbox>>) {
    let mut poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("larder: acceptor: {e}");
            return;
        }
    };
    for (i, l) in listeners.iter_mut().enumerate() {
        let r = match l {
            Listener::Tcp(t, ..) => poll.registry().register(t, Token(i), Interest::READABLE),
            Listener::Unix(u, _) => poll.registry().register(u, Token(i), Interest::READABLE),
        };
        if let Err(e) = r {
            eprintln!("larder: acceptor: {e}");
            return;
        }
    }
    let mut events = Events::with_capacity(64);
    let mut next = 0usize;
    let mut backoff = false;
    while !srv.stopping() {
        let timeout = if backoff { Duration::from_millis(10) } else { Duration::from_millis(500) };
        let _ = poll.poll(&mut events, Some(timeout));
        // Edge-triggered: always drain every listener, not only the ready ones,
        // so a connection left behind by an earlier error is not forgotten.
        backoff = false;
        for l in &listeners {
            loop {
                let accepted = match l {
                    Listener::Tcp(t, label_l, tls) => t.accept().and_then(|(s, peer)| {
                        let _ = s.set_nodelay(true);
                        let stream = match tls {
                            Some(rule) => tls_stream(&srv, s, *rule)?,
                            None => Stream::Tcp(s),
                        };
                        Ok((stream, label("tcp", &peer), label_l.clone()))
                    }),
                    Listener::Unix(u, label_l) => u.accept().map(|(s, _)| (Stream::Unix(s), label_l.clone(), label_l.clone())),
                };
                match accepted {
                    Ok((stream, peer, listen_label)) => {
                        dispatch(&srv, stream, peer, listen_label, &inboxes, &mut next);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        // Out of descriptors or similar: back off and retry.
                        if srv.verbosity() > 0 {
                            eprintln!("larder: accept failed: {e}");
                        }
                        backoff = true;
                        break;
                    }
                }
            }
        }
    }
}

/// The server side of a TLS connection (its handshake runs on the worker).
fn tls_stream(srv: &Server, s: mio::net::TcpStream, rule: PeerRule) -> io::Result<Stream> {
    let ctx = srv.access().tls.as_ref().ok_or_else(|| io::Error::other("TLS listener without a TLS context"))?;
    let conn = ctx.accept_unbuffered(rule).map_err(io::Error::other)?;
    Ok(Stream::Tls(Box::new(TlsStream::new(s, conn, ctx.counters.clone(), ctx.settings.wbuf_size))))
}

fn dispatch(srv: &Server, mut stream: Stream, peer: String, listen: String, inboxes: &[Arc<Inbox>], next: &mut usize) {
    let conns = &srv.counters().conns;
    if conns.curr_connections.load(Relaxed) as usize >= srv.settings().max_connections {
        conns.rejected_connections.fetch_add(1, Relaxed);
        // In plain text even on a TLS listener, as memcached (which rejects
        // before its handshake): a TLS client then fails on a bad record
        // version and gives up quietly, where a bare close makes OpenSSL
        // clients send an alert into a closed socket (SIGPIPE for a client
        // that does not ignore it; memcached's t/maxconns.t is one).
        let _ = match &mut stream {
            Stream::Tcp(s) => s.write(REJECT),
            Stream::Unix(s) => s.write(REJECT),
            Stream::Tls(t) => t.socket().write(REJECT),
        };
        return;
    }
    conns.curr_connections.fetch_add(1, Relaxed);
    conns.total_connections.fetch_add(1, Relaxed);
    let fd = match &stream {
        Stream::Tcp(s) => s.as_raw_fd(),
        Stream::Unix(s) => s.as_raw_fd(),
        Stream::Tls(s) => s.tcp().as_raw_fd(),
    };
    let structures = conns.connection_structures.load(Relaxed).max(conns.curr_connections.load(Relaxed));
    conns.connection_structures.store(structures, Relaxed);
    let info = Arc::new(ConnInfo::new(fd, peer, Some(listen), ConnState::Waiting, srv.clock().now()));
    srv.conns().registry.add(info.clone());
    let inbox = &inboxes[*next % inboxes.len()];
    *next = next.wrapping_add(1);
    inbox.push(NewConn { stream, info });
}

/// Register listeners in `stats conns`.
pub fn register_listeners(srv: &Server, listeners: &[Listener], udp: &[std::net::UdpSocket]) {
    let now = srv.clock().now();
    for l in listeners {
        let (fd, label_l) = match l {
            Listener::Tcp(t, s, _) => (t.as_raw_fd(), s.clone()),
            Listener::Unix(u, s) => (u.as_raw_fd(), s.clone()),
        };
        srv.conns().registry.add(Arc::new(ConnInfo::new(fd, label_l, None, ConnState::Listening, now)));
    }
    for u in udp {
        if let Ok(addr) = u.local_addr() {
            srv.conns().registry.add(Arc::new(ConnInfo::new(u.as_raw_fd(), label("udp", &addr), None, ConnState::Waiting, now)));
        }
    }
}

/// Give each worker its own handle on every UDP socket.
pub fn udp_for_worker(udp: &[std::net::UdpSocket]) -> io::Result<Vec<UdpSocket>> {
    udp.iter().map(|u| Ok(UdpSocket::from_std(u.try_clone()?))).collect()
}
