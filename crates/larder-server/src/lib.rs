//! larder-server: a memcached-compatible cache server, as a library (the
//! `larder` binary is `main.rs` around it; tests can run a server in-process).
//!
//! # The request path
//!
//! A listener (`conn::listen`) accepts a connection and hands it to a worker
//! thread (`conn::worker`, one epoll each). The worker's session
//! (`conn::session`) reads bytes and hands the front of its buffer to the
//! connection's `wire::Conversation`, whose driver (`wire::gate` for `-Y`,
//! `wire::text` with `wire::meta`, `wire::binary`) parses one request and
//! calls the one executor for that command (`exec::*`), whatever protocol it
//! came in. The executor runs it against the store (`larder_store`),
//! records it once (counters in `counters`, `watch` lines in `trace::watch`,
//! per-prefix and hot-key accounting in `trace::observe`) and returns its
//! outcome, which the driver encodes into the session's output
//! (`connmem::output`), then tells the session what to do next
//! (`wire::Step`). Everything a request runs with is in its context
//! (`exec::Ctx`): the server, the worker's counters and its
//! `trace::WorkerTrace` (accounting and `watch` buffer, owned by the worker
//! and lent to the request), the client's fd, the time. Store calls go
//! through `Ctx::store`, which hands the store that worker's sink for what
//! leaves it during the call (evictions, expiries): no per-thread state is
//! hidden anywhere.
//!
//! # Where a change goes
//!
//! Each folder is one layer or one feature's home:
//!
//! * `admin/`: the HTTP listener (`/metrics`, dashboard, JSON API).
//! * `conn/`: sockets, workers, sessions' buffers and back-pressure, UDP,
//!   panic containment.
//! * `wire/`: protocol drivers (the `-Y` gate, text with meta, binary with
//!   the SASL gate, metadump streaming): how a request is spelled.
//! * `exec/`: what each command does, for every protocol; `stats` replies.
//! * `state/`: the server aggregate every thread shares, and the clock.
//! * `restart/`: the warm-restart snapshot file.
//! * `auth/`: `-Y`'s credentials, `-S`'s Cyrus library and SASL commands,
//!   a connection's authentication state.
//! * `config/`: memcached's flags, TLS settings.
//! * `track/`: near-cache invalidation: the tracking table and subscribers'
//!   push queues (docs/near-cache.md).
//! * `stampede/`: grace mode and coalesced cold misses.
//! * `connmem/`: connection memory: the budget, kept buffers, the output.
//! * `counters`: the request counters behind `stats`.
//! * `trace/`: `watch` and larder-observe's accounting.
//! * `net/`: streams, TLS records, the connection registry.
//!
//! Modules import only downwards, in that order (`sync` and `alloc_count`
//! are leaves anyone may use); `tests/layers.rs` checks it.
//! docs/architecture.md has a section per layer.

//! # Failure policy
//!
//! A panic is a bug, never an expected outcome: bad input gets memcached's
//! error reply, and every length, offset and count a client or a file
//! gives is checked before it indexes, slices or allocates. If serving one
//! connection panics anyway, that connection ends and the worker goes on
//! serving its others (`conn/contain.rs`): the panic is logged once on
//! stderr with its backtrace and counted in `stats` as
//! `larder_conn_panics`; what the connection held (budget, a value being
//! received, pinned values, a parked ticket) is given back by drop. The
//! store's locks recover from poisoning, so no data a panicking request
//! touched is served half-written. A panic in a worker's own loop, outside
//! any connection, still stops the whole server (the process exits
//! non-zero) rather than leaving a listener that hands new connections to
//! a thread that no longer serves them.

#[cfg(feature = "alloc-count")]
pub mod alloc_count;
pub mod admin;
pub mod auth;
pub mod config;
pub mod conn;
pub mod connmem;
pub mod counters;
pub mod exec;
pub mod net;
pub mod restart;
pub mod stampede;
pub mod state;
pub mod sync;
pub mod trace;
pub mod track;
pub mod wire;

pub use config::{help_text, parse_args, Command, Settings};
pub use state::server::Shutdown;
use state::server::Server;
use std::sync::Arc;

/// A server whose sockets are bound and store created, not yet serving.
/// (The binary drops privileges and writes its pid file in between.)
pub struct Prepared {
    settings: Settings,
    store: larder_store::Store,
    bound: conn::listen::Bound,
    metrics: Option<std::net::TcpListener>,
    /// The server's clock, started before a warm restart's load so that
    /// restored expiry times and the server's time agree.
    clock: state::clock::Clock,
    restart: restart::RestartStats,
    /// `-Y`: the authfile, read before anything else can fail on it.
    auth: Option<auth::authfile::Credentials>,
    /// `-S`: Cyrus SASL, loaded and initialised before anything is bound.
    sasl: Option<&'static auth::cyrus::Cyrus>,
    /// `-Z`: certificates and key loaded, rustls configured.
    tls: Option<Arc<config::tls::TlsContext>>,
}

impl Prepared {
    /// The TCP addresses the server listens on (with `-p -1`: the ports
    /// the system chose).
    pub fn tcp_addrs(&self) -> Vec<std::net::SocketAddr> {
        self.bound.tcp_addrs()
    }
}

/// Create the store, bind every listener `settings` asks for, and with
/// `-e` load the warm-restart snapshot (after binding: a start that fails
/// to bind must not consume the snapshot).
pub fn prepare(settings: Settings) -> Result<Prepared, String> {
    let auth = match &settings.auth_file {
        Some(path) => {
            let file = auth::authfile::AuthFile::load(path).map_err(|e| e.to_string())?;
            Some(auth::authfile::Credentials::new(path.clone(), file))
        }
        None => None,
    };
    let sasl = if settings.sasl { Some(auth::cyrus::init(settings.verbose)?) } else { None };
    let store_config = larder_store::Config {
        memory_limit: settings.memory_limit,
        item_size_max: settings.item_size_max,
        evict: settings.evictions,
        ..larder_store::Config::default()
    };
    let new_store = || larder_store::Store::new(store_config.clone()).map_err(|e| format!("larder: {}", e.0));
    let mut store = new_store()?;
    let bound = conn::listen::bind_all(&settings)?;
    let metrics = match settings.observe.metrics_port {
        0 => None,
        port => Some(admin::metrics::bind(&settings.observe.metrics_addr, port)?),
    };
    let clock = state::clock::Clock::new();
    let tls = match settings.tls.enabled {
        true => Some(Arc::new(config::tls::TlsContext::new(&settings.tls, clock.now())?)),
        false => None,
    };
    let mut restart = restart::RestartStats::default();
    if let Some(path) = &settings.memory_file {
        let now = larder_store::SnapshotClock { now: clock.now(), unix_now: clock.unix_now() };
        let loaded = restart::load(&store, path, now)?;
        if loaded.discard_store {
            store = new_store()?;
        }
        restart = loaded.stats;
    }
    Ok(Prepared { settings, store, bound, metrics, clock, restart, auth, sasl, tls })
}

/// Per-prefix accounting and the big-key list learn about the items a warm
/// restart loaded (they only see commands), so that `stats prefixes` counts
/// them and a later delete does not take out what was never added.
fn account_restored(srv: &Server) {
    let mut w = srv.insight().observer.worker();
    let now = srv.clock().now();
    let unix = |t: larder_store::Time| (srv.clock().unix_now() - now as i64 + t as i64).max(0) as u64;
    for shard in 0..srv.store().shard_count() {
        srv.store().for_each_item_in_shard(shard, now, |key, it| {
            w.on_restored(key, it.size, unix(now), if it.exptime == 0 { 0 } else { unix(it.exptime) });
        });
    }
}

/// A serving server.
pub struct Running {
    srv: Arc<Server>,
    inboxes: Vec<Arc<conn::worker::Inbox>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    acceptor: std::thread::JoinHandle<()>,
    /// The UDP sockets as bound. Workers serve clones of them, but
    /// `stats conns` lists each under this fd: closed, the fd went to the
    /// next client, whose entry replaced the UDP listener's (memcached's
    /// t/stats-conns.t then failed about one run in four).
    _udp: Vec<std::net::UdpSocket>,
}

/// Start the worker, acceptor, logger and admin threads.
pub fn start(p: Prepared, shutdown: Shutdown) -> Result<Running, String> {
    let Prepared { settings, store, bound, metrics, clock, restart, auth, sasl, tls } = p;
    let listeners_count = bound.listeners.len() + bound.udp.len();
    let access = state::server::Access { credentials: auth, sasl, tls };
    let srv = Server::new(settings, store, state::server::Startup { listeners: listeners_count, shutdown, clock, restart, access });
    if srv.insight().restart.loaded && srv.settings().observe.enabled {
        account_restored(&srv);
    }
    let srv = Arc::new(srv);
    conn::contain::install_hook();
    conn::listen::register_listeners(&srv, &bound.listeners, &bound.udp);
    if srv.settings().watch_enabled {
        trace::watch::start(srv.insight().log.clone(), srv.clone()).map_err(|e| format!("larder: cannot start the logger thread: {e}"))?;
    }
    if let Some(l) = metrics {
        admin::metrics::spawn(srv.clone(), l)?;
    }
    let mut inboxes = Vec::new();
    let mut workers = Vec::new();
    for id in 0..srv.settings().threads {
        let udp = conn::listen::udp_for_worker(&bound.udp).map_err(|e| format!("larder: udp: {e}"))?;
        let (worker, inbox) = conn::worker::Worker::new(id, srv.clone(), udp).map_err(|e| format!("larder: worker: {e}"))?;
        inboxes.push(inbox);
        let stop_all = srv.shutdown().clone();
        workers.push(
            std::thread::Builder::new()
                .name(format!("larder-worker-{id}"))
                .spawn(move || {
                    // Failure policy (crate docs): a dead worker stops the
                    // server instead of silently losing its share of clients.
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run()));
                    if outcome.is_err() {
                        eprintln!("larder: worker {id} panicked; shutting down");
                        stop_all.fail();
                    }
                })
                .map_err(|e| format!("larder: cannot start worker thread: {e}"))?,
        );
    }
    // Coalesced cold misses wake the workers that hold parked requests.
    srv.stampede().coalescer.set_wakers(inboxes.iter().map(|i| i.waker()).collect());
    let acceptor = {
        let srv = srv.clone();
        let inboxes = inboxes.clone();
        let listeners = bound.listeners;
        std::thread::Builder::new()
            .name("larder-accept".into())
            .spawn(move || conn::listen::run_acceptor(srv, listeners, inboxes))
            .map_err(|e| format!("larder: cannot start acceptor: {e}"))?
    };
    if srv.verbosity() > 0 {
        eprintln!("larder: ready, {} worker threads", srv.settings().threads);
    }
    Ok(Running { srv, inboxes, workers, acceptor, _udp: bound.udp })
}

/// Reloads what memcached reloads on SIGHUP, from any thread while the
/// server runs: the `-Y` authfile, then (memcached 1.6.40) the TLS
/// certificate, key and CA files, through `refresh_certs`'s own path.
#[derive(Clone)]
pub struct Reloader(Arc<Server>);

impl Reloader {
    /// Read the authfile and the TLS files again; each that fails keeps
    /// what was in use and gives a line for the log (the other is still
    /// reloaded, as memcached does). Empty when everything reloaded.
    pub fn reload(&self) -> Vec<String> {
        let mut failed = Vec::new();
        if let Some(c) = &self.0.access().credentials {
            if let Err(e) = c.reload() {
                // memcached says nothing here; larder says why.
                failed.push(format!("SIGHUP: {e}; keeping the previous authfile"));
            }
        }
        if let Some(tls) = &self.0.access().tls {
            if let Err(e) = tls.refresh(self.0.clock().now()) {
                // memcached 1.6.40's words, then what larder keeps.
                failed.push(format!("Could not reload TLS certificates on SIGHUP: {e}; keeping the previous certificates"));
            }
        }
        failed
    }
}

impl Running {
    /// A handle for SIGHUP's reload.
    pub fn reloader(&self) -> Reloader {
        Reloader(self.srv.clone())
    }

    /// Block until a shutdown is requested (the [`Shutdown`] handle, the
    /// `shutdown` command, or a failed worker), then stop.
    /// Err when a worker failed or a warm-restart save failed.
    pub fn wait_and_stop(self) -> Result<(), String> {
        let failed = self.srv.shutdown().wait();
        let saved = self.stop_and_save();
        if failed {
            Err("larder: a worker thread failed".into())
        } else {
            saved
        }
    }

    /// Stop serving: close every connection, join every thread, remove the
    /// Unix socket; after a graceful stop ([`Shutdown::request_graceful`],
    /// SIGUSR1) with `-e`, save the items for the next start.
    pub fn stop(self) {
        if let Err(e) = self.stop_and_save() {
            eprintln!("{e}");
        }
    }

    fn stop_and_save(self) -> Result<(), String> {
        let srv = self.srv.clone();
        self.stop_serving();
        if !srv.shutdown().graceful() {
            return Ok(());
        }
        eprintln!("Gracefully stopping");
        let Some(path) = srv.settings().memory_file.as_deref() else {
            return Ok(());
        };
        let now = larder_store::SnapshotClock { now: srv.clock().now(), unix_now: srv.clock().unix_now() };
        let (rep, secs) = restart::save(srv.store(), path, now)?;
        eprintln!("[restart] saved {} items ({} bytes) to {path} in {secs:.3} s", rep.items, rep.bytes);
        Ok(())
    }

    fn stop_serving(self) {
        let srv = self.srv;
        srv.mark_stopping();
        for inbox in &self.inboxes {
            inbox.wake();
        }
        for t in self.workers {
            let _ = t.join();
        }
        let _ = self.acceptor.join();
        if let Some(path) = &srv.settings().unix_socket {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Prepare, start, and serve until `shutdown` is requested.
pub fn run(settings: Settings, shutdown: Shutdown) -> Result<(), String> {
    start(prepare(settings)?, shutdown)?.wait_and_stop()
}
