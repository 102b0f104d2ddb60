//! The admin HTTP listener: Prometheus `GET /metrics` and the dashboard
//! (`GET /` and its JSON API under `/api/v1/`: see [`super::dashboard`]), on
//! `-o metrics_port=N`, bound to `-o metrics_addr` (127.0.0.1 by default;
//! off by default); HTTPS with `-Z`'s certificate and settings when
//! `-o metrics_tls` is given; access-controlled by [`super::auth`]. The
//! HTTP server itself (hyper on a current-thread tokio runtime, its
//! connection cap and timeouts) is [`super::server`]; this file starts it
//! and renders the exposition. A second small thread samples the
//! dashboard's history ([`super::history`]).
//!
//! What a scrape shows:
//! * every numeric general `stats` figure, from the same rendering as the
//!   text `stats` reply (memcached's names as `larder_<name>` gauges or
//!   `larder_<name>_total` counters; larder's own `larder_*` figures as
//!   gauges, except its counters `larder_grace_*`, `larder_coalesce_*`
//!   (but the gauge `larder_coalesce_parked`), `larder_allocations`,
//!   `larder_compactions`);
//! * the observer's series: per-prefix (the top prefixes by bytes, the rest
//!   folded), the request latency histogram, the accounting structures' heap;
//! * `larder_memory_bytes{category}`: `items` (live item bytes, the store's
//!   `bytes`), `index` (index tables), `dead` (bytes of dead items not yet
//!   reclaimed), `connections` (an estimate: curr_connections x the two
//!   resting per-connection buffers, 2 x 16 KiB; buffers grown for a large
//!   request are not seen);
//! * the admin listener's own figures, `larder_admin_*`: connections open,
//!   accepted, evicted at the cap, timed out, refused for want of
//!   credentials, TLS handshakes failed, requests.

use super::history::{self, History};
use super::server::{Admin, Counters};
use crate::state::server::Server;
use larder_observe::prometheus::{Exposition, MetricType};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Bind the listener (before privileges are dropped).
pub fn bind(addr: &str, port: u16) -> Result<TcpListener, String> {
    let ip: IpAddr = addr.parse().map_err(|_| format!("larder: bad metrics_addr '{addr}'"))?;
    TcpListener::bind(SocketAddr::new(ip, port)).map_err(|e| format!("larder: cannot listen for metrics on {addr}:{port}: {e}"))
}

/// Read the credentials file, then serve scrapes and the dashboard in a
/// thread of their own until the server stops; sample the dashboard's
/// history meanwhile. Err (the server does not start) when the credentials
/// file is refused.
pub fn spawn(srv: Arc<Server>, listener: TcpListener) -> Result<(), String> {
    let history = Arc::new(History::new(history::CAPACITY));
    let admin = Arc::new(Admin::new(srv.clone(), history.clone(), Arc::new(Counters::default()))?);
    make_room_for_descriptors(&srv);
    history::spawn(srv, history)?;
    std::thread::Builder::new()
        .name("larder-admin".into())
        .spawn(move || {
            if let Err(e) = super::server::run(admin, listener) {
                eprintln!("{e}");
            }
        })
        .map(|_| ())
        .map_err(|e| format!("larder: cannot start the admin thread: {e}"))
}

/// The binary raises the descriptor limit for `-c` connections; admin
/// connections need their own `metrics_max_conns` on top, or a flood of
/// them would leave the cache port unable to accept. Raised within the hard
/// limit (no privilege needed); a warning when that is too low.
fn make_room_for_descriptors(srv: &Server) {
    let s = &srv.settings();
    let want = (s.max_connections + 64 + s.observe.metrics_max_conns + 16) as libc::rlim_t;
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 || rl.rlim_cur >= want {
            return;
        }
        let raised = libc::rlimit { rlim_cur: want.min(rl.rlim_max), rlim_max: rl.rlim_max };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 || raised.rlim_cur < want {
            eprintln!(
                "larder: warning: descriptor limit {} is below -c {} + metrics_max_conns {} + 80",
                raised.rlim_cur.max(rl.rlim_cur),
                s.max_connections,
                s.observe.metrics_max_conns
            );
        }
    }
}

/// The exposition text (without the admin listener's own figures).
pub fn render(srv: &Server) -> String {
    render_with(srv, None)
}

/// The exposition text, with the admin listener's figures when given.
pub fn render_with(srv: &Server, admin: Option<&Counters>) -> String {
    use crate::exec::report::{snapshot, Group, Value};
    let now = srv.clock().now();
    let mut e = Exposition::new();
    // memcached's figures, then larder's own: typed, never re-parsed.
    for (name, value) in &snapshot(srv, Group::General, now).stats {
        match value {
            Value::Str(v) if name == "version" => larder_observe::prometheus::write_version(&mut e, v),
            Value::Str(_) => {}
            Value::U64(v) => larder_observe::prometheus::write_stat(&mut e, name, *v as f64),
            Value::F64(v) => larder_observe::prometheus::write_stat(&mut e, name, *v),
        }
    }
    for (name, value) in &snapshot(srv, Group::Larder, now).stats {
        let v = match value {
            Value::U64(v) => *v as f64,
            Value::F64(v) => *v,
            Value::Str(_) => continue,
        };
        let coalesce_counter = name.starts_with("larder_coalesce_") && name != "larder_coalesce_parked";
        if name.starts_with("larder_grace_") || coalesce_counter || name == "larder_allocations" || name == "larder_compactions" {
            e.counter(&format!("{name}_total"), "larder stat.", v);
        } else {
            e.gauge(name, "larder stat.", v);
        }
    }
    srv.insight().observer.write_prometheus(&mut e);
    let st = srv.store().stats();
    e.family("larder_memory_bytes", "Memory by category (connections: their input and output buffers).", MetricType::Gauge);
    e.sample("larder_memory_bytes", &[("category", "items")], st.bytes as f64);
    e.sample("larder_memory_bytes", &[("category", "index")], st.index_bytes as f64);
    e.sample("larder_memory_bytes", &[("category", "dead")], st.bytes_dead as f64);
    let (read_bufs, write_bufs) = srv.conns().budget.buffer_bytes();
    e.sample("larder_memory_bytes", &[("category", "connections")], (read_bufs + write_bufs) as f64);
    if let Some(c) = admin {
        write_admin(&mut e, c);
    }
    e.finish()
}

/// `larder_admin_*`: what the admin listener itself is doing.
fn write_admin(e: &mut Exposition, c: &Counters) {
    let v = |a: &std::sync::atomic::AtomicU64| a.load(Relaxed) as f64;
    e.gauge("larder_admin_connections", "Admin listener connections open.", v(&c.open));
    e.counter("larder_admin_connections_accepted_total", "Admin listener connections accepted.", v(&c.accepted));
    e.counter(
        "larder_admin_connections_evicted_total",
        "Admin connections closed at metrics_max_conns to make room for a newer one (least recently used first).",
        v(&c.evicted),
    );
    e.family("larder_admin_timeouts_total", "Admin connections closed by a timeout (header: metrics_header_timeout; idle: metrics_idle_timeout).", MetricType::Counter);
    e.sample("larder_admin_timeouts_total", &[("kind", "header")], v(&c.header_timeouts));
    e.sample("larder_admin_timeouts_total", &[("kind", "idle")], v(&c.idle_timeouts));
    e.counter("larder_admin_tls_failures_total", "Admin TLS handshakes that failed or timed out.", v(&c.tls_failures));
    e.counter("larder_admin_requests_total", "Admin requests answered.", v(&c.requests));
    e.counter("larder_admin_unauthorized_total", "Admin requests refused for want of credentials (401/403).", v(&c.unauthorized));
    e.counter("larder_admin_accept_errors_total", "Admin listener accept errors (out of descriptors, ...).", v(&c.accept_errors));
}
