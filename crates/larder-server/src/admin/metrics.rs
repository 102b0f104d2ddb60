//! The admin HTTP listener: Prometheus `GET /metrics` and the dashboard
//! (`GET /` and its JSON API under `/api/v1/`: see [`super::dashboard`]), on
//! `-o metrics_port=N`, bound to `-o metrics_addr` (127.0.0.1 by default;
//! off by default); HTTPS with `-Z`'s certificate and settings when
//! `-o metrics_tls` is given.
//!
//! One thread of its own with blocking std sockets, one request at a time
//! (`Connection: close`): it is not on the request path, and a scrape every
//! few seconds plus a dashboard poll or two a second is all it serves. Each
//! connection gets a 2-second read/write timeout, so a client that connects
//! and says nothing cannot hold it for long; requests are bounded by
//! larder-observe's request parser (400 past 8 KiB of headers). A second
//! small thread samples the dashboard's history ([`super::history`]).
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
//!   request are not seen).

use crate::state::server::Server;
use super::dashboard;
use super::history::{self, History};
use larder_observe::prometheus::{parse_request, Exposition, MetricType, CONTENT_TYPE};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

/// Bind the listener (before privileges are dropped).
pub fn bind(addr: &str, port: u16) -> Result<TcpListener, String> {
    let ip: IpAddr = addr.parse().map_err(|_| format!("larder: bad metrics_addr '{addr}'"))?;
    TcpListener::bind(SocketAddr::new(ip, port)).map_err(|e| format!("larder: cannot listen for metrics on {addr}:{port}: {e}"))
}

/// Serve scrapes and the dashboard until the process exits; sample the
/// dashboard's history meanwhile.
pub fn spawn(srv: Arc<Server>, listener: TcpListener) -> Result<(), String> {
    let history = Arc::new(History::new(history::CAPACITY));
    history::spawn(srv.clone(), history.clone())?;
    std::thread::Builder::new()
        .name("larder-metrics".into())
        .spawn(move || {
            for conn in listener.incoming() {
                if srv.stopping() {
                    return;
                }
                if let Ok(s) = conn {
                    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
                    match &srv.tls {
                        // `-o metrics_tls`: HTTPS with -Z's certificate and settings.
                        Some(tls) if srv.settings.tls.metrics => {
                            let Ok(conn) = tls.accept() else { continue };
                            let mut stream = rustls::StreamOwned::new(conn, s);
                            serve(&srv, &history, &mut stream);
                            stream.conn.send_close_notify();
                            let _ = stream.flush();
                        }
                        _ => serve(&srv, &history, &mut { s }),
                    }
                }
            }
        })
        .map(|_| ())
        .map_err(|e| format!("larder: cannot start metrics thread: {e}"))
}

/// One request on a plain or TLS stream (with the 2-second socket timeouts
/// set: a TLS handshake that stalls ends the same way as a request that does).
fn serve(srv: &Server, history: &History, s: &mut (impl Read + Write)) {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        // parse_request answers Err past MAX_REQUEST_BYTES: buf stays bounded.
        let reply = match parse_request(&buf) {
            Ok(None) => match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    continue;
                }
            },
            Err(()) => response("400 Bad Request", "text/plain", b"bad request\n", false),
            Ok(Some(req)) => route(srv, history, req.method, req.path),
        };
        let _ = s.write_all(&reply);
        return;
    }
}

const JSON: &str = "application/json";

/// The answer to `method path`.
fn route(srv: &Server, history: &History, method: &str, path: &str) -> Vec<u8> {
    let head = method == "HEAD";
    if method != "GET" && !head {
        return response("405 Method Not Allowed", "text/plain", b"method not allowed\n", false);
    }
    let (ctype, body): (&str, std::borrow::Cow<'static, [u8]>) = match path {
        "/metrics" => (CONTENT_TYPE, render(srv).into_bytes().into()),
        "/" | "/index.html" => ("text/html; charset=utf-8", dashboard::INDEX_HTML.as_bytes().into()),
        "/dashboard.js" => ("text/javascript; charset=utf-8", dashboard::DASHBOARD_JS.as_bytes().into()),
        "/dashboard.css" => ("text/css; charset=utf-8", dashboard::DASHBOARD_CSS.as_bytes().into()),
        "/favicon.svg" => ("image/svg+xml", dashboard::FAVICON_SVG.as_bytes().into()),
        "/api/v1/summary" => (JSON, dashboard::summary_json(srv, history).into_bytes().into()),
        "/api/v1/prefixes" => (JSON, dashboard::prefixes_json(srv).into_bytes().into()),
        "/api/v1/keys" => (JSON, dashboard::keys_json(srv).into_bytes().into()),
        "/api/v1/history" => (JSON, dashboard::history_json(history).into_bytes().into()),
        _ => return response("404 Not Found", "text/plain", b"not found: try / or /metrics\n", head),
    };
    response("200 OK", ctype, &body, head)
}

/// A whole HTTP/1.1 response. The dashboard's pages may use nothing but
/// this listener (no CDN, no fonts): the Content-Security-Policy says so.
fn response(status: &str, content_type: &str, body: &[u8], head: bool) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
         Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head {
        r.extend_from_slice(body);
    }
    r
}

/// The exposition text.
pub fn render(srv: &Server) -> String {
    use crate::exec::report::{snapshot, Group, Value};
    let now = srv.clock.now();
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
    srv.observer.write_prometheus(&mut e);
    let st = srv.store.stats();
    e.family("larder_memory_bytes", "Memory by category (connections: their input and output buffers).", MetricType::Gauge);
    e.sample("larder_memory_bytes", &[("category", "items")], st.bytes as f64);
    e.sample("larder_memory_bytes", &[("category", "index")], st.index_bytes as f64);
    e.sample("larder_memory_bytes", &[("category", "dead")], st.bytes_dead as f64);
    let (read_bufs, write_bufs) = srv.budget.buffer_bytes();
    e.sample("larder_memory_bytes", &[("category", "connections")], (read_bufs + write_bufs) as f64);
    e.finish()
}
