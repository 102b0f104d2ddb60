//! The admin listener's HTTP server: hyper 1.x (HTTP/1.1 only) on a tokio
//! current-thread runtime, in one thread of its own (`larder-admin`), off
//! the request path: the cache workers never wait for it and it never runs
//! on their threads. What it serves is [`route`]d here; what the pages
//! contain is in [`super::metrics`] and [`super::dashboard`].
//!
//! # Limits (docs/admin-listener.md)
//!
//! * Threads: this one, plus the dashboard's history sampler. The runtime
//!   has no worker or blocking pool (no `spawn_blocking`, no DNS, no files
//!   but the credentials file, read in place).
//! * Connections: at most `-o metrics_max_conns` (default 1024) at once.
//!   A connection accepted past it closes the one **least recently used**
//!   (accepted or served longest ago): a flood of connections that never
//!   finish a request cannot lock out a scraper, whose connection is always
//!   the newest one; each such close is counted
//!   (`larder_admin_connections_evicted_total`).
//! * Time: a request's head must arrive within `-o metrics_header_timeout`
//!   (default 10 s; a new connection's first request counts from the
//!   accept, later ones from their first byte; a TLS handshake is bounded
//!   the same way); a kept-alive connection may wait
//!   `-o metrics_idle_timeout` (default 60 s) for its next request, and a
//!   response not taken by its reader within that time is dropped. Both
//!   are counted (`larder_admin_timeouts_total{kind}`).
//! * Memory per connection: hyper's read buffer (8 KiB, growing to at most
//!   [`MAX_BUF`] for a long head), its 8 KiB write buffer, the task and the
//!   connection's state: about 20 KiB at rest. A head longer than
//!   [`MAX_HEAD_BYTES`] gets 400 (as before hyper), past [`MAX_BUF`] hyper's
//!   431. With `metrics_tls`, rustls's buffers are bounded by
//!   `ssl_wbuf_size`. The test `tests/admin_slow_clients.rs` measures what
//!   1,000 stalled connections cost (figures in docs/admin-listener.md).
//!
//! # Keep-alive
//!
//! HTTP/1.1's rule: a connection stays open after a response unless the
//! request says `Connection: close` (then the response says it too and the
//! connection ends). Prometheus's Go client sends no `Connection` header
//! and so keeps one connection across scrapes; the dashboard polls three
//! documents a second over one. HTTP/1.0 keeps a connection only when it
//! asks with `Connection: keep-alive` (hyper's rule). A client that reads a
//! response to the end of the stream must therefore send
//! `Connection: close`, or read `Content-Length` bytes: every response has
//! one. Idle kept-alive connections are bounded by the idle timeout and
//! the connection cap above.
//!
//! # Access
//!
//! When authentication is required (`Settings::metrics_auth_required`),
//! every path — `/metrics`, the page, its scripts, the JSON API — needs a
//! verified client certificate (`metrics_tls` with `ssl_verify_mode`) or an
//! `Authorization` header that `-o metrics_auth_file` accepts
//! ([`super::auth`]); anything else gets 401 with `WWW-Authenticate`
//! challenges for the kinds the file holds (a browser then asks for a user
//! and password), or 403 when only certificates are accepted.

use super::auth::{AuthFile, Kinds};
use super::dashboard;
use super::history::History;
use crate::state::server::Server;
use crate::config::tls::TlsContext;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// A request head (request line and headers) longer than this gets 400.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// hyper's read buffer never grows past this (a longer head: 431).
pub const MAX_BUF: usize = 32 * 1024;
/// How often the accept loop looks whether the server is stopping.
const STOP_CHECK: Duration = Duration::from_millis(250);

/// What the listener counts (exposed on `/metrics` as `larder_admin_*`).
#[derive(Default, Debug)]
pub struct Counters {
    /// Connections open now.
    pub open: AtomicU64,
    pub accepted: AtomicU64,
    /// Closed to make room for a newer one at `metrics_max_conns`.
    pub evicted: AtomicU64,
    pub header_timeouts: AtomicU64,
    pub idle_timeouts: AtomicU64,
    /// TLS handshakes that failed or timed out (`metrics_tls`).
    pub tls_failures: AtomicU64,
    pub requests: AtomicU64,
    /// Requests answered 401/403 for want of credentials.
    pub unauthorized: AtomicU64,
    /// `accept` errors (out of descriptors, ...).
    pub accept_errors: AtomicU64,
}

/// The listener's configuration and shared state.
pub struct Admin {
    pub srv: Arc<Server>,
    pub history: Arc<History>,
    pub counters: Arc<Counters>,
    auth_required: bool,
    auth: Option<AuthFile>,
    max_conns: usize,
    header_timeout: Duration,
    idle_timeout: Duration,
    /// Time zero for [`Activity`]'s millisecond stamps.
    epoch: std::time::Instant,
}

impl Admin {
    /// From the server's settings, with the credentials file `main` read
    /// before dropping privileges (or read now).
    pub fn new(srv: Arc<Server>, history: Arc<History>, counters: Arc<Counters>) -> Result<Admin, String> {
        let o = &srv.settings().observe;
        let auth = match &o.metrics_auth_file {
            Some(path) => Some(AuthFile::take_or_load(path)?),
            None => None,
        };
        Ok(Admin {
            auth_required: srv.settings().metrics_auth_required(),
            auth,
            max_conns: o.metrics_max_conns.max(1),
            header_timeout: Duration::from_secs(o.metrics_header_timeout.max(1) as u64),
            idle_timeout: Duration::from_secs(o.metrics_idle_timeout.max(1) as u64),
            epoch: std::time::Instant::now(),
            srv,
            history,
            counters,
        })
    }

    fn tls(&self) -> Option<&Arc<TlsContext>> {
        self.srv.access().tls.as_ref().filter(|_| self.srv.settings().tls.metrics)
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn at(&self, ms: u64) -> Instant {
        Instant::from_std(self.epoch + Duration::from_millis(ms))
    }
}

/// Serve until the server stops (blocks the calling thread: run it in the
/// admin thread).
pub fn run(admin: Arc<Admin>, listener: std::net::TcpListener) -> Result<(), String> {
    listener.set_nonblocking(true).map_err(|e| format!("larder: metrics listener: {e}"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("larder: cannot start the admin listener's runtime: {e}"))?;
    rt.block_on(accept_loop(admin, listener))
}

/// One open connection, as the accept loop sees it.
struct Slot {
    activity: Arc<Activity>,
    abort: tokio::task::AbortHandle,
}

type Registry = Arc<Mutex<HashMap<u64, Slot>>>;

/// Removes its connection from the registry when the task ends, however
/// it ends (done, timed out, evicted, runtime dropped).
struct Leave {
    id: u64,
    registry: Registry,
    counters: Arc<Counters>,
}

impl Drop for Leave {
    fn drop(&mut self) {
        self.registry.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
        self.counters.open.fetch_sub(1, Relaxed);
    }
}

async fn accept_loop(admin: Arc<Admin>, listener: std::net::TcpListener) -> Result<(), String> {
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| format!("larder: metrics listener: {e}"))?;
    let registry: Registry = Arc::new(Mutex::new(HashMap::new()));
    let mut next_id = 0u64;
    let mut tick = tokio::time::interval(STOP_CHECK);
    loop {
        let accepted = poll_fn(|cx| {
            if let Poll::Ready(r) = listener.poll_accept(cx) {
                return Poll::Ready(Some(r));
            }
            if tick.poll_tick(cx).is_ready() {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await;
        let stream = match accepted {
            None if admin.srv.stopping() => return Ok(()),
            None => continue,
            Some(Ok((stream, _))) => stream,
            Some(Err(_)) => {
                // Out of descriptors or memory: the connection stays in the
                // backlog; try again shortly instead of spinning.
                admin.counters.accept_errors.fetch_add(1, Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        admin.counters.accepted.fetch_add(1, Relaxed);
        make_room(&admin, &registry);
        let id = next_id;
        next_id += 1;
        let activity = Arc::new(Activity::new(admin.now_ms()));
        admin.counters.open.fetch_add(1, Relaxed);
        let leave = Leave { id, registry: registry.clone(), counters: admin.counters.clone() };
        let task = tokio::spawn(connection(admin.clone(), stream, activity.clone(), leave));
        // Current-thread runtime: the task cannot run (and leave) before
        // this insert; it runs when this loop next awaits.
        registry.lock().unwrap_or_else(|e| e.into_inner()).insert(id, Slot { activity, abort: task.abort_handle() });
    }
}

/// At the cap, close the least recently used connection.
fn make_room(admin: &Admin, registry: &Registry) {
    let mut r = registry.lock().unwrap_or_else(|e| e.into_inner());
    while r.len() >= admin.max_conns {
        let Some(victim) = r.iter().min_by_key(|(id, s)| (s.activity.last_used(), **id)).map(|(id, _)| *id) else { return };
        if let Some(s) = r.remove(&victim) {
            s.abort.abort();
            admin.counters.evicted.fetch_add(1, Relaxed);
        }
    }
}

/// When a connection last did something that bounds its life (milliseconds
/// since [`Admin::epoch`]).
struct Activity {
    /// Accepted, or its last request's head was complete.
    since: AtomicU64,
    /// 1 + when the first byte of a request arrived after `since` (0: none).
    head: AtomicU64,
    served: AtomicU64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timeout {
    Header,
    Idle,
}

impl Activity {
    fn new(now: u64) -> Self {
        Activity { since: AtomicU64::new(now), head: AtomicU64::new(0), served: AtomicU64::new(0) }
    }

    fn last_used(&self) -> u64 {
        self.since.load(Relaxed)
    }

    fn on_bytes(&self, now: u64) {
        if self.head.load(Relaxed) == 0 {
            self.head.store(now + 1, Relaxed);
        }
    }

    fn on_request(&self, now: u64) {
        self.since.store(now, Relaxed);
        self.head.store(0, Relaxed);
        self.served.fetch_add(1, Relaxed);
    }

    /// When the connection must be closed unless something happens first.
    fn deadline(&self, a: &Admin) -> (Instant, Timeout) {
        let since = self.since.load(Relaxed);
        let head = self.head.load(Relaxed);
        if self.served.load(Relaxed) == 0 {
            (a.at(since) + a.header_timeout, Timeout::Header)
        } else if head != 0 {
            (a.at(head - 1) + a.header_timeout, Timeout::Header)
        } else {
            (a.at(since) + a.idle_timeout, Timeout::Idle)
        }
    }
}

/// The socket, telling [`Activity`] when bytes arrive.
struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
    admin: Arc<Admin>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.on_bytes(self.admin.now_ms());
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

async fn connection(admin: Arc<Admin>, stream: tokio::net::TcpStream, activity: Arc<Activity>, _leave: Leave) {
    let _ = stream.set_nodelay(true);
    let io = Tracked { inner: stream, activity: activity.clone(), admin: admin.clone() };
    match admin.tls() {
        None => serve(admin, io, activity, false).await,
        Some(tls) => {
            // `refresh_certs` swaps the configuration: take the current one.
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.config(crate::config::listen_mode::PeerRule::Global));
            let limit = tls.settings.wbuf_size.max(16 * 1024 + 512);
            let handshake = acceptor.accept_with(io, |c| c.set_buffer_limit(Some(limit)));
            let (deadline, _) = activity.deadline(&admin);
            match tokio::time::timeout_at(deadline, handshake).await {
                Ok(Ok(stream)) => {
                    // Verified by rustls against ssl_ca_cert during the
                    // handshake (ssl_verify_mode >= 1); absent otherwise.
                    let cert = stream.get_ref().1.peer_certificates().is_some_and(|c| !c.is_empty());
                    serve(admin, stream, activity, cert).await
                }
                Ok(Err(_)) | Err(_) => {
                    admin.counters.tls_failures.fetch_add(1, Relaxed);
                }
            }
        }
    }
}

/// HTTP/1.1 on `io` until the client or a timeout ends it.
async fn serve<I>(admin: Arc<Admin>, io: I, activity: Arc<Activity>, cert: bool)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (a, act) = (admin.clone(), activity.clone());
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        act.on_request(a.now_ms());
        std::future::ready(Ok::<_, std::convert::Infallible>(respond(&a, &req, cert)))
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // Header names as the listener always wrote them (Content-Type, ...);
    // the timeouts are ours ([`Activity`]), which know keep-alive from a
    // slow head.
    builder.title_case_headers(true).max_buf_size(MAX_BUF).header_read_timeout(None::<Duration>);
    let mut conn = pin!(builder.serve_connection(hyper_util::rt::TokioIo::new(io), service));
    let mut sleep = pin!(tokio::time::sleep_until(activity.deadline(&admin).0));
    let ended = poll_fn(|cx| {
        if let Poll::Ready(r) = conn.as_mut().poll(cx) {
            return Poll::Ready(Ok(r));
        }
        loop {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let (deadline, kind) = activity.deadline(&admin);
            if deadline <= Instant::now() {
                return Poll::Ready(Err(kind));
            }
            sleep.as_mut().reset(deadline);
        }
    })
    .await;
    match ended {
        Ok(_) => {}
        Err(Timeout::Header) => {
            admin.counters.header_timeouts.fetch_add(1, Relaxed);
        }
        Err(Timeout::Idle) => {
            admin.counters.idle_timeouts.fetch_add(1, Relaxed);
        }
    }
}

type Body = Full<Bytes>;

const JSON: &str = "application/json";

/// The answer to one request.
fn respond(admin: &Admin, req: &Request<Incoming>, cert: bool) -> Response<Body> {
    admin.counters.requests.fetch_add(1, Relaxed);
    let head_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len())
        + req.headers().iter().map(|(n, v)| n.as_str().len() + v.len() + 4).sum::<usize>();
    if head_len > MAX_HEAD_BYTES {
        return close(plain(StatusCode::BAD_REQUEST, "bad request\n"));
    }
    let keep_alive = wants_keep_alive(req);
    let mut r = if admin.auth_required && !cert && !authenticated(admin, req) {
        admin.counters.unauthorized.fetch_add(1, Relaxed);
        refusal(admin)
    } else {
        route(admin, req.method(), req.uri().path())
    };
    if !keep_alive {
        r = close(r);
    }
    r
}

fn authenticated(admin: &Admin, req: &Request<Incoming>) -> bool {
    let Some(file) = &admin.auth else { return false };
    let mut values = req.headers().get_all(header::AUTHORIZATION).iter();
    let (Some(v), None) = (values.next(), values.next()) else {
        return false; // none, or several: a client sends one
    };
    file.check(Some(v.as_bytes())).0
}

/// 401 with the challenges of the kinds the file holds (Basic first: a
/// browser then asks for a user and a password), or 403 when only client
/// certificates would do.
fn refusal(admin: &Admin) -> Response<Body> {
    let kinds = admin.auth.as_ref().map_or(Kinds::default(), |f| f.check(None).1);
    if !kinds.basic && !kinds.bearer {
        return plain(StatusCode::FORBIDDEN, "a verified client certificate is required\n");
    }
    let mut r = plain(StatusCode::UNAUTHORIZED, "authentication required\n");
    if kinds.basic {
        r.headers_mut().append(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"larder admin\", charset=\"UTF-8\""));
    }
    if kinds.bearer {
        r.headers_mut().append(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"larder admin\""));
    }
    r
}

/// Unless the request's `Connection` header has the `close` token (see the
/// module docs). HTTP/1.0 without `keep-alive` is closed by hyper itself.
fn wants_keep_alive(req: &Request<Incoming>) -> bool {
    !req.headers()
        .get_all(header::CONNECTION)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
}

fn close(mut r: Response<Body>) -> Response<Body> {
    r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    page(status, "text/plain; charset=utf-8", Bytes::from_static(text.as_bytes()))
}

/// A response with the headers every answer carries. The dashboard's pages
/// may use nothing but this listener (no CDN, no fonts): the
/// Content-Security-Policy says so.
fn page(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Body> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
    );
    r
}

/// `method path`: the pages (HEAD as GET; hyper sends no body for HEAD).
fn route(admin: &Admin, method: &Method, path: &str) -> Response<Body> {
    if method != Method::GET && method != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let (srv, history) = (&*admin.srv, &*admin.history);
    let stat = |s: &'static str| Bytes::from_static(s.as_bytes());
    let (ctype, body): (&'static str, Bytes) = match path {
        "/metrics" => (larder_observe::prometheus::CONTENT_TYPE, super::metrics::render_with(srv, Some(&admin.counters)).into()),
        "/" | "/index.html" => ("text/html; charset=utf-8", stat(dashboard::INDEX_HTML)),
        "/dashboard.js" => ("text/javascript; charset=utf-8", stat(dashboard::DASHBOARD_JS)),
        "/dashboard.css" => ("text/css; charset=utf-8", stat(dashboard::DASHBOARD_CSS)),
        "/favicon.svg" => ("image/svg+xml", stat(dashboard::FAVICON_SVG)),
        "/api/v1/summary" => (JSON, dashboard::summary_json(srv, history).into()),
        "/api/v1/prefixes" => (JSON, dashboard::prefixes_json(srv).into()),
        "/api/v1/keys" => (JSON, dashboard::keys_json(srv).into()),
        "/api/v1/history" => (JSON, dashboard::history_json(history).into()),
        _ => return plain(StatusCode::NOT_FOUND, "not found: try / or /metrics\n"),
    };
    page(StatusCode::OK, ctype, body)
}
