//! The state every worker shares: settings, the store, the clock, counters,
//! the observer (per-prefix accounting, big/hot keys, latency), the socket
//! registry and the shutdown switch.

use crate::state::clock::Clock;
use crate::config::Settings;
use crate::net::registry::Registry;
use crate::counters::ServerStats;
use larder_proto::Limits;
use larder_store::Store;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};

/// Asks a running server to stop, from any thread: the embedding program
/// (the binary on SIGTERM, or SIGUSR1 for a graceful stop), the `shutdown`
/// command, or a failed worker. Cloning shares the one request.
#[derive(Clone, Default)]
pub struct Shutdown(Arc<(Mutex<StopRequest>, Condvar)>);

#[derive(Default)]
struct StopRequest {
    requested: bool,
    failed: bool,
    /// Save the items for a warm restart (`-e`) once stopped.
    graceful: bool,
}

impl Shutdown {
    pub fn new() -> Shutdown {
        Shutdown::default()
    }

    /// Ask the server to stop.
    pub fn request(&self) {
        self.set(|r| r.requested = true);
    }

    /// Ask the server to stop and, with `-e`, save its items for the next
    /// start (memcached's SIGUSR1).
    pub fn request_graceful(&self) {
        self.set(|r| {
            r.requested = true;
            r.graceful = true;
        });
    }

    /// Stop because part of the server failed (a worker panicked).
    pub fn fail(&self) {
        self.set(|r| {
            r.requested = true;
            r.failed = true;
        });
    }

    fn set(&self, f: impl FnOnce(&mut StopRequest)) {
        let mut g = self.0 .0.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g);
        self.0 .1.notify_all();
    }

    /// Whether a stop was requested.
    pub fn requested(&self) -> bool {
        self.0 .0.lock().unwrap_or_else(|e| e.into_inner()).requested
    }

    /// Whether the stop asked for a warm-restart save (and nothing failed).
    pub fn graceful(&self) -> bool {
        let g = self.0 .0.lock().unwrap_or_else(|e| e.into_inner());
        g.graceful && !g.failed
    }

    /// Block until a stop is requested; whether it was a failure.
    pub fn wait(&self) -> bool {
        let mut g = self.0 .0.lock().unwrap_or_else(|e| e.into_inner());
        while !g.requested {
            g = self.0 .1.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        g.failed
    }
}

/// Who may talk to the server: `-Y` credentials, `-S` Cyrus SASL, `-Z` TLS.
/// Fixed at start-up (TLS contexts reload inside `TlsContext`).
#[derive(Default)]
pub struct Access {
    /// `-Y`: the credentials connections must present before any command.
    pub credentials: Option<crate::auth::authfile::Credentials>,
    /// `-S`: the Cyrus SASL library, initialised at start-up.
    pub sasl: Option<&'static crate::auth::cyrus::Cyrus>,
    /// `-Z`: the TLS configuration new connections start from, and the
    /// TLS counters of `stats`.
    pub tls: Option<Arc<crate::config::tls::TlsContext>>,
}

/// What the connections share: the memory they may hold, the socket
/// registry (`stats conns`, idle kicks) and the request limits.
pub struct Connections {
    /// The connection-memory budget (`connmem::budget`).
    pub budget: Arc<crate::connmem::budget::ConnBudget>,
    pub registry: Registry,
    pub limits: Limits,
    /// Listening sockets (TCP and UDP), for `reserved_fds`.
    listeners: usize,
}

/// The cache-stampede protections (`crate::stampede`).
pub struct Stampede {
    /// Grace mode: who is refilling which expired key.
    pub winners: crate::stampede::grace::Winners,
    /// Coalesced cold misses: who refills which absent key, and who waits.
    pub coalescer: crate::stampede::coalesce::Coalescer,
}

/// What the server reports about itself besides `stats`' counters.
pub struct Insight {
    /// Observability state shared by the workers (each has its own
    /// `ObserverWorker`, see `observe.rs`).
    pub observer: larder_observe::observer::Observer,
    /// `watch` log streams (`trace/watch.rs`); shared with the store's departure
    /// hook, hence the Arc.
    pub log: Arc<crate::trace::watch::Logger>,
    /// What the warm restart (`-e`) loaded at start-up.
    pub restart: crate::restart::RestartStats,
}

/// What start-up prepared besides the settings and the store (see `lib.rs`'s
/// `start`); [`Startup::bare`] for a server with no listener and no access
/// control (tests, the harness).
pub struct Startup {
    pub listeners: usize,
    pub shutdown: Shutdown,
    pub clock: Clock,
    pub restart: crate::restart::RestartStats,
    pub access: Access,
}

impl Startup {
    pub fn bare(shutdown: Shutdown) -> Startup {
        Startup { listeners: 0, shutdown, clock: Clock::new(), restart: Default::default(), access: Access::default() }
    }
}

/// The state every worker shares, in groups a reader can find: the store and
/// its clock, the settings, `stats` counters, [`Access`], [`Connections`],
/// [`Stampede`], [`Insight`] and near-cache tracking. Fields are private so
/// that what changes after start-up is only what the methods below change.
pub struct Server {
    settings: Settings,
    store: Store,
    clock: Clock,
    counters: ServerStats,
    access: Access,
    conns: Connections,
    stampede: Stampede,
    insight: Insight,
    /// Near-cache invalidation: who tracks which key, and the subscribers'
    /// push queues (`crate::track`).
    tracker: Arc<crate::track::tracker::Tracker>,
    /// How this server is asked to stop.
    shutdown: Shutdown,
    /// When the latest delayed `flush_all` takes effect (0: none pending).
    track_flush_at: AtomicU32,
    verbosity: AtomicU32,
    stopping: AtomicBool,
    /// With `-C`: the second of the last immediate `flush_all` (0 = none).
    nocas_flush_second: AtomicU32,
    /// Store counters at the last `stats reset`.
    store_baseline: Mutex<larder_store::Stats>,
}

impl Server {
    pub fn new(settings: Settings, store: Store, start: Startup) -> Server {
        let Startup { listeners, shutdown, clock, restart, access } = start;
        let limits = Limits { item_size_max: settings.item_size_max, ..Limits::default() };
        let o = &settings.observe;
        let observer = larder_observe::observer::Observer::new(larder_observe::observer::ObserverConfig {
            delimiter: settings.prefix_delimiter,
            max_prefixes: o.prefix_stats_max.max(1),
            bigkeys: o.bigkeys,
            bigkeys_min_size: o.bigkeys_min_size,
            hotkeys_window_secs: o.hotkeys_window,
            hotkeys_sample: o.hotkeys_sample,
            ..Default::default()
        });
        observer.prefixes.set_detail(settings.detail_enabled);
        let log = crate::trace::watch::Logger::new(settings.watch_enabled, settings.worker_logbuf_size, settings.watcher_logbuf_size);
        let mut budget = crate::connmem::budget::ConnBudget::new(settings.conn_budget());
        if settings.read_buf_mem_limit > 0 {
            let buffers = (settings.read_buf_mem_limit / settings.threads.max(1) / (16 << 10)).max(1);
            budget.resp_limit = buffers * 14;
        }
        let budget = Arc::new(budget);
        store.set_pin_spill(budget.clone());
        let coalescer = crate::stampede::coalesce::Coalescer::new(settings.coalesce.clone(), settings.threads);
        // Subscribers' pending pushes are connection output: charged to the
        // same budget, so their number cannot take memory past it.
        let queue_memory = crate::track::charge::QueueMemory::charged_to(budget.clone(), budget.limit());
        let tracker = Arc::new(crate::track::tracker::Tracker::charged(settings.track, Arc::new(queue_memory)));
        Server {
            verbosity: AtomicU32::new(settings.verbose),
            counters: ServerStats::new(settings.threads),
            access,
            conns: Connections { budget, registry: Registry::default(), limits, listeners },
            stampede: Stampede { winners: crate::stampede::grace::Winners::new(), coalescer },
            insight: Insight { observer, log: Arc::new(log), restart },
            settings,
            store,
            clock,
            tracker,
            shutdown,
            track_flush_at: AtomicU32::new(0),
            stopping: AtomicBool::new(false),
            nocas_flush_second: AtomicU32::new(0),
            store_baseline: Mutex::new(larder_store::Stats::default()),
        }
    }

    #[inline]
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    #[inline]
    pub fn store(&self) -> &Store {
        &self.store
    }

    #[inline]
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// `stats`' counters (`crate::counters`).
    #[inline]
    pub fn counters(&self) -> &ServerStats {
        &self.counters
    }

    #[inline]
    pub fn access(&self) -> &Access {
        &self.access
    }

    #[inline]
    pub fn conns(&self) -> &Connections {
        &self.conns
    }

    #[inline]
    pub fn stampede(&self) -> &Stampede {
        &self.stampede
    }

    #[inline]
    pub fn insight(&self) -> &Insight {
        &self.insight
    }

    #[inline]
    pub fn tracker(&self) -> &Arc<crate::track::tracker::Tracker> {
        &self.tracker
    }

    pub fn shutdown(&self) -> &Shutdown {
        &self.shutdown
    }

    pub fn verbosity(&self) -> u32 {
        self.verbosity.load(Relaxed)
    }

    pub fn set_verbosity(&self, level: u32) {
        self.verbosity.store(level, Relaxed);
    }

    /// Stop serving (the `shutdown` command): the same path as SIGTERM,
    /// or with `graceful` as SIGUSR1 (save for a warm restart).
    pub fn request_shutdown(&self, graceful: bool) {
        self.stopping.store(true, Relaxed);
        if graceful {
            self.shutdown.request_graceful();
        } else {
            self.shutdown.request();
        }
    }

    pub fn stopping(&self) -> bool {
        self.stopping.load(Relaxed)
    }

    pub fn mark_stopping(&self) {
        self.stopping.store(true, Relaxed);
    }

    /// `flush_all` taking effect at `at` (`at <= now`: at once).
    ///
    /// Without CAS (`-C`) memcached cannot tell items stored later in the
    /// flush's second from earlier ones, so it treats all of them as
    /// flushed; clients of `-C` servers (and memcached's flush-all.t) see
    /// that. larder reproduces it only under `-C`: reads hide items during
    /// that second and a second flush at the next second removes them.
    pub fn flush_all(&self, now: u32, at: u32) {
        self.store.flush_all(now, at);
        // Near caches drop everything now; a delayed flush tells them again
        // when it takes effect (`track_due_flush`), or they would keep
        // values read in between that the flush then removes.
        self.tracker.invalidate_all();
        if at > now {
            self.track_flush_at.fetch_max(at, Relaxed);
        }
        if self.stampede.coalescer.enabled() {
            self.stampede.coalescer.on_flush();
        }
        if !self.settings.cas_enabled && at <= now {
            self.store.flush_all(now, now + 1);
            self.nocas_flush_second.store(now, Relaxed);
        }
    }

    /// Worker 0, once a second: a delayed `flush_all` took effect, so every
    /// near cache is told again (`IA`).
    pub fn track_due_flush(&self, now: u32) {
        let at = self.track_flush_at.load(Relaxed);
        if at != 0 && at <= now && self.track_flush_at.compare_exchange(at, 0, Relaxed, Relaxed).is_ok() {
            self.tracker.invalidate_all();
        }
    }

    /// Whether reads must miss because of a `-C` flush in this very second.
    #[inline]
    pub fn in_nocas_flush_second(&self, now: u32) -> bool {
        !self.settings.cas_enabled && self.nocas_flush_second.load(Relaxed) == now
    }

    /// A key was written or deleted: end any grace round for it, and
    /// release requests parked waiting for it (`-o coalesce`).
    #[inline]
    pub fn note_write(&self, key: &[u8]) {
        if self.settings.grace.enabled() {
            self.stampede.winners.on_write(key);
            if self.stampede.coalescer.enabled() {
                self.stampede.coalescer.on_write(key);
            }
        }
    }

    /// File descriptors the server holds besides client connections
    /// (memcached reports these as `reserved_fds`).
    pub fn reserved_fds(&self) -> usize {
        // stdin/out/err, the listeners, one epoll + waker pair per worker and
        // the acceptor's.
        3 + self.conns.listeners + 2 * (self.settings.threads + 1)
    }

    /// Store figures with the counters relative to the last `stats reset`.
    pub fn store_stats(&self) -> larder_store::Stats {
        let mut s = self.store.stats();
        let b = self.store_baseline.lock().unwrap();
        s.total_items = s.total_items.saturating_sub(b.total_items);
        s.evictions = s.evictions.saturating_sub(b.evictions);
        s.reclaimed = s.reclaimed.saturating_sub(b.reclaimed);
        s.expired_unfetched = s.expired_unfetched.saturating_sub(b.expired_unfetched);
        s.evicted_unfetched = s.evicted_unfetched.saturating_sub(b.evicted_unfetched);
        s
    }

    /// `stats reset`.
    pub fn reset_stats(&self) {
        self.counters.reset();
        self.insight.observer.reset();
        self.insight.log.reset_stats();
        *self.store_baseline.lock().unwrap() = self.store.stats();
    }
}

/// The `watch` logger thread gives closed watcher connections back here.
impl crate::trace::watch::WatcherHost for Server {
    fn stopping(&self) -> bool {
        Server::stopping(self)
    }

    fn watcher_closed(&self, info: &crate::net::registry::ConnInfo) {
        self.conns.registry.remove(info.fd);
        self.counters.conns.curr_connections.fetch_sub(1, Relaxed);
    }
}
