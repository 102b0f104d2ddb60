//! `watch`: memcached's live log stream (the "logger").
//!
//! A client that sends `watch [fetchers] [mutations] [evictions]
//! [connevents] ...` stops being a normal connection: it gets `OK\r\n` and
//! from then on one line per event of the kinds it asked for, from every
//! worker, until it disconnects. Line formats are memcached 1.6.18's (the
//! encoders and their quirks live in `larder_observe::watch`).
//!
//! # How events travel
//!
//! ```text
//! worker ──encode line──▶ its ThreadLog (bounded, own mutex) ──┐
//! worker ──encode line──▶ its ThreadLog                        ├─▶ logger thread ──▶ each watcher's
//! store departures (evictions, reported to the calling worker) ┘    (swap, route)      bounded buffer ──▶ socket
//! ```
//!
//! A worker reaches its own buffer through its [`WorkerLog`], which it
//! owns and passes down explicitly (in the request context, and in the
//! departure sink the store reports evictions to): no thread-local state.
//!
//! * **Nobody watching costs one relaxed atomic load** per potential event:
//!   [`Logger::on`] reads the union of the kinds all current watchers asked
//!   for. Only when a bit is set does a worker take the slow path (a gid
//!   from one global counter, the wall clock, its own uncontended mutex).
//! * **Workers never wait for watchers.** Each thread encodes finished
//!   lines into its own buffer (`-o worker_logbuf_size`, 64 KiB as
//!   memcached); when it is full the line is dropped and counted
//!   (`log_worker_dropped`), nothing else happens. Encoding in the worker
//!   (memcached copies a binary record and formats it later) keeps the
//!   logger thread trivial; it only happens while someone watches.
//! * **One logger thread** (started with the first watcher) swaps each
//!   thread's buffer out under its lock, routes every line to the watchers
//!   that asked for its kind (and were added before it: `min_gid`, as
//!   memcached), and writes watcher buffers to their sockets without
//!   blocking. It wakes every 1 ms while lines flow, backing off to 50 ms
//!   when idle; with no watcher it sleeps until one arrives.
//! * **A slow watcher loses lines, not the server.** Each watcher has a
//!   bounded buffer (`-o watcher_logbuf_size`, 256 KiB). A line that does not
//!   fit (with room to spare for a notice) is skipped and counted
//!   (`log_watcher_skipped`); before the next line that fits, the watcher is
//!   told `skipped=<n>\n`, exactly as memcached does.
//! * The watcher's socket moves from its worker to the logger thread
//!   ([`Logger::adopt`]); anything it sends afterwards is read and ignored,
//!   and its disconnect ends it. At most 20 watchers (memcached's limit).
//!
//! # What is logged where (as memcached 1.6.18 does)
//!
//! * `fetchers`: every item lookup a command makes: get/gets/gat/gats per
//!   key, touch, delete, incr/decr, and the lookup every storage command
//!   makes before it writes (so a `set` logs an `item_get` then its
//!   `item_store`); meta `mg`/`md`/`ma`/`me` and `ms`; binary gets, touch,
//!   delete, incr/decr and stores. `status=` is `found`, `not_found`,
//!   `expired` or `flushed` (the item was there but dead).
//! * `mutations`: one `item_store` per storage command (text, meta `ms`,
//!   binary; `ma`/binary incr that create a counter log an `add`), with
//!   memcached's `cmd=` (a `C`/CAS turns set/replace into `cas`). incr,
//!   decr, touch and delete log no `item_store`.
//! * `evictions`: one line per item evicted to make room (the store's
//!   departure reports); items that expired or were flushed are not logged,
//!   as memcached logs only LRU evictions.
//! * `deletions` (memcached 1.6.20): one `type=deleted` line per item a
//!   text `delete` (`cmd=delete`) or a meta `md` (`cmd=md`) removed, with
//!   the removed value's size; `md x` logs the emptied item (`size=0`). As
//!   in memcached, misses, CAS mismatches, `md I` (the item stays, marked
//!   stale) and binary deletes log nothing.
//! * `connevents`: `conn_new` when a worker adopts a TCP or Unix
//!   connection, `conn_close` with memcached's reason (`normal`: the
//!   client closed or sent `quit`; `idle_timeout`; `shutdown`; `error`:
//!   everything else, e.g. a protocol error).
//! * `sysevents`, `rawcmds`, `proxy*`: accepted (`OK`); larder has no LRU
//!   crawler, slab mover, raw command log or proxy, so nothing is logged.
//!
//! Where the store call itself does not say what it found before it wrote
//! (storage commands, delete, incr/decr), the server looks first with
//! [`Store::peek`](larder_store::Store::peek), which changes nothing but
//! does remove an item that is already dead, as the command's own lookup
//! would. Only while someone watches fetchers (or mutations, for the size and
//! TTL of an append). Between that look and the write another client may
//! change the key; the line then shows what the look saw.
//!
//! Fields larder cannot mean the same way: `clsid` is 1 for an item (larder
//! has one size class; `stats items` reports class 1) and 0 for a miss, as
//! memcached prints for a miss. For a storage command refused before it
//! reads its data (too large, out of memory), memcached 1.6.18 passes its
//! arguments shifted: `clsid` is the client fd mod 256 and `cfd` is
//! uninitialised; larder prints the fd mod 256 there too and the real fd as
//! `cfd`. (memcached crashes on a too-large *binary* set while someone
//! watches mutations; larder logs it like the text one.)

use crate::net::registry::{ConnInfo, ConnState};
use crate::net::stream::Stream;
use larder_observe::watch::{self as enc, DeleteCmd, GetStatus, StoreCmd, StoreStatus, Timestamp, WatchFlags};
use larder_store::{DepartedItem, Departures, Lookup, Mode, Reporting, StoreResult, Time};
use mio::{Events, Poll, Token, Waker};
use std::cell::OnceCell;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Event kinds a watcher can ask for (bits of [`Logger::on`]).
pub const FETCHERS: u32 = 1 << 0;
pub const MUTATIONS: u32 = 1 << 1;
pub const EVICTIONS: u32 = 1 << 2;
pub const CONNEVENTS: u32 = 1 << 3;
/// Accepted kinds larder never logs (sysevents, rawcmds, proxy*): a watcher
/// of only these gets `OK` and silence.
const SILENT: u32 = 1 << 4;
pub const DELETIONS: u32 = 1 << 5;

/// memcached's limit on simultaneous watchers.
const WATCHER_LIMIT: usize = 20;
/// Room one encoded line may need: a 250-byte key URI-encodes to 750 bytes,
/// the other fields of the longest line take under 200.
const MAX_LINE: usize = 1024;
/// Per entry in a thread buffer: kind (1), gid (8), line length (4).
const ENTRY_HEAD: usize = 13;
/// memcached keeps this much room free in a watcher buffer besides the line
/// (for a `skipped=` notice).
const SKIP_ROOM: usize = 128;
/// Defaults of `-o worker_logbuf_size` / `-o watcher_logbuf_size` (KiB in
/// the flags), memcached's.
pub const WORKER_BUF_DEFAULT: usize = 64 * 1024;
pub const WATCHER_BUF_DEFAULT: usize = 256 * 1024;
/// The logger thread's sleep between passes: short while lines flow, longer
/// when idle (memcached: 1 ms to 1 s; 50 ms keeps a human's `watch` snappy).
const MIN_SLEEP: Duration = Duration::from_millis(1);
const MAX_SLEEP: Duration = Duration::from_millis(50);
const WAKER: Token = Token(usize::MAX);

/// Why a connection closed (`conn_close reason=`), memcached's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    Error,
    Normal,
    IdleTimeout,
    Shutdown,
}

impl CloseReason {
    fn name(self) -> &'static [u8] {
        match self {
            CloseReason::Error => b"error",
            CloseReason::Normal => b"normal",
            CloseReason::IdleTimeout => b"idle_timeout",
            CloseReason::Shutdown => b"shutdown",
        }
    }
}

/// One thread's encoded entries, waiting for the logger thread.
struct ThreadLog {
    buf: Mutex<Entries>,
}

struct Entries {
    /// `[kind u8][gid u64 LE][len u32 LE][line]...`
    data: Vec<u8>,
    written: u64,
    dropped: u64,
}

/// `stats` figures (memcached's `log_*`).
#[derive(Default)]
struct LogStats {
    worker_dropped: AtomicU64,
    worker_written: AtomicU64,
    watcher_skipped: AtomicU64,
    watcher_sent: AtomicU64,
}

/// A watcher slot taken by [`Logger::reserve`], before its socket arrives.
#[derive(Clone, Copy, Debug)]
pub struct Reserved {
    slot: usize,
    kinds: u32,
    min_gid: u64,
}

struct NewWatcher {
    stream: Stream,
    info: Arc<ConnInfo>,
    r: Reserved,
    /// Replies the connection had not sent yet, sent before its `OK`.
    unsent: Vec<u8>,
}

/// What the workers and the logger thread share under one lock (taken when
/// watchers come and go, never per event).
struct Shared {
    /// Kinds of each watcher slot; 0 = free.
    slots: [u32; WATCHER_LIMIT],
    pending: Vec<NewWatcher>,
    /// The logger thread's waker, once it runs.
    waker: Option<Arc<Waker>>,
}

/// The server's logger: see the module docs.
pub struct Logger {
    enabled: bool,
    /// Union of the kinds current watchers asked for.
    want: AtomicU32,
    /// memcached's global log entry id (`gid=`).
    gid: AtomicU64,
    watchers: AtomicUsize,
    threads: Mutex<Vec<Arc<ThreadLog>>>,
    /// Bumped when `threads` grows, so the logger thread refreshes its copy.
    threads_gen: AtomicUsize,
    shared: Mutex<Shared>,
    stats: LogStats,
    worker_buf: usize,
    watcher_buf: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a watcher could not be added (memcached's replies).
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    TooMany,
    Failed,
}

impl Logger {
    pub fn new(enabled: bool, worker_buf: usize, watcher_buf: usize) -> Logger {
        Logger {
            enabled,
            want: AtomicU32::new(0),
            gid: AtomicU64::new(0),
            watchers: AtomicUsize::new(0),
            threads: Mutex::new(Vec::new()),
            threads_gen: AtomicUsize::new(0),
            shared: Mutex::new(Shared { slots: [0; WATCHER_LIMIT], pending: Vec::new(), waker: None }),
            stats: LogStats::default(),
            worker_buf: worker_buf.max(MAX_LINE + ENTRY_HEAD),
            watcher_buf: watcher_buf.max(MAX_LINE + SKIP_ROOM),
        }
    }

    /// `watch` is allowed (not `-W`).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether anyone watches any of `kinds`: the request path's only cost.
    #[inline]
    pub fn on(&self, kinds: u32) -> bool {
        self.want.load(Relaxed) & kinds != 0
    }

    /// `(log_worker_dropped, log_worker_written, log_watcher_skipped,
    /// log_watcher_sent, log_watchers)`.
    pub fn stats(&self) -> [u64; 5] {
        let s = &self.stats;
        [
            s.worker_dropped.load(Relaxed),
            s.worker_written.load(Relaxed),
            s.watcher_skipped.load(Relaxed),
            s.watcher_sent.load(Relaxed),
            self.watchers.load(Relaxed) as u64,
        ]
    }

    /// `stats reset` (the watcher count is a gauge and stays).
    pub fn reset_stats(&self) {
        let s = &self.stats;
        for c in [&s.worker_dropped, &s.worker_written, &s.watcher_skipped, &s.watcher_sent] {
            c.store(0, Relaxed);
        }
    }

    // ---------------------------------------------------------------------
    // Events (callers check `on` first through the inline wrappers).

    /// Appends one entry to thread buffer `t`, or counts it dropped.
    fn put(&self, t: &ThreadLog, kind: u32, encode: &mut dyn FnMut(&mut Vec<u8>, Timestamp, u64)) {
        let mut e = lock(&t.buf);
        if e.data.len() + ENTRY_HEAD + MAX_LINE > self.worker_buf {
            e.dropped += 1;
            return;
        }
        let gid = self.gid.fetch_add(1, Relaxed) + 1;
        let at = e.data.len();
        e.data.push(kind as u8);
        e.data.extend_from_slice(&gid.to_le_bytes());
        e.data.extend_from_slice(&[0; 4]);
        encode(&mut e.data, Timestamp::now(), gid);
        let len = (e.data.len() - at - ENTRY_HEAD) as u32;
        e.data[at + 9..at + ENTRY_HEAD].copy_from_slice(&len.to_le_bytes());
        e.written += 1;
    }

    /// A worker's handle on this logger (see [`WorkerLog`]).
    pub fn worker_log(self: &Arc<Logger>) -> WorkerLog {
        WorkerLog { log: self.clone(), buf: OnceCell::new() }
    }

    fn register_thread(&self) -> Arc<ThreadLog> {
        // Slack past the limit: a line is checked against MAX_LINE before it
        // is encoded, so the buffer never reallocates.
        let data = Vec::with_capacity(self.worker_buf + MAX_LINE);
        let t = Arc::new(ThreadLog { buf: Mutex::new(Entries { data, written: 0, dropped: 0 }) });
        lock(&self.threads).push(t.clone());
        self.threads_gen.fetch_add(1, Relaxed);
        t
    }

    // ---------------------------------------------------------------------
    // Watchers.

    /// Take a watcher slot for `flags` (the `watch` command); the caller then
    /// hands over the socket with [`adopt`](Self::adopt). From now on events
    /// of these kinds are logged.
    pub fn reserve(&self, flags: &WatchFlags) -> Result<Reserved, Refused> {
        let mut kinds = 0;
        for (on, k) in [
            (flags.fetchers, FETCHERS),
            (flags.mutations, MUTATIONS),
            (flags.evictions, EVICTIONS),
            (flags.connevents, CONNEVENTS),
            (flags.deletions, DELETIONS),
        ] {
            if on {
                kinds |= k;
            }
        }
        if kinds == 0 {
            kinds = SILENT;
        }
        let mut sh = lock(&self.shared);
        let Some(slot) = sh.slots.iter().position(|&k| k == 0) else { return Err(Refused::TooMany) };
        if !self.enabled {
            return Err(Refused::Failed);
        }
        sh.slots[slot] = kinds;
        self.watchers.fetch_add(1, Relaxed);
        // memcached: a watcher sees only entries logged after it was added.
        let min_gid = self.gid.fetch_add(1, Relaxed) + 1;
        self.want.store(sh.slots.iter().fold(0, |a, k| a | k), Relaxed);
        Ok(Reserved { slot, kinds, min_gid })
    }

    /// The socket of a reserved watcher moves to the logger thread, which
    /// greets it with `OK`.
    pub fn adopt(&self, stream: Stream, info: Arc<ConnInfo>, r: Reserved, unsent: Vec<u8>) {
        info.set_state(ConnState::Watch);
        let mut sh = lock(&self.shared);
        sh.pending.push(NewWatcher { stream, info, r, unsent });
        if let Some(w) = &sh.waker {
            let _ = w.wake();
        }
    }

    /// A watcher left: free its slot and stop logging kinds nobody wants.
    fn release(&self, slot: usize) {
        let mut sh = lock(&self.shared);
        sh.slots[slot] = 0;
        self.watchers.fetch_sub(1, Relaxed);
        self.want.store(sh.slots.iter().fold(0, |a, k| a | k), Relaxed);
    }
}

/// One worker's side of the logger: its own entry buffer (registered with
/// the logger the first time the worker logs, so a server nobody watches
/// holds none) and the event methods, each taking what the line needs —
/// the client's fd (`cfd=`), the request's time — from its caller. Owned by
/// the worker and passed down explicitly; not shared between threads.
pub struct WorkerLog {
    log: Arc<Logger>,
    buf: OnceCell<Arc<ThreadLog>>,
}

impl WorkerLog {
    /// Whether anyone watches any of `kinds` (see [`Logger::on`]).
    #[inline]
    pub fn on(&self, kinds: u32) -> bool {
        self.log.on(kinds)
    }

    #[cold]
    #[inline(never)]
    fn put(&self, kind: u32, encode: &mut dyn FnMut(&mut Vec<u8>, Timestamp, u64)) {
        let t = self.buf.get_or_init(|| self.log.register_thread());
        self.log.put(t, kind, encode);
    }

    /// `type=item_get` for connection `fd`; `size`: the value length of a
    /// found item.
    #[inline]
    pub fn item_get(&self, fd: i32, key: &[u8], status: GetStatus, size: usize) {
        if self.on(FETCHERS) {
            let clsid = (status == GetStatus::Found) as u32;
            self.put(FETCHERS, &mut |out, ts, gid| enc::item_get(out, ts, gid, key, status, clsid, fd, size as u64));
        }
    }

    /// `type=item_store` of a command that reached the store.
    #[inline]
    pub fn item_store(&self, fd: i32, key: &[u8], status: StoreStatus, cmd: StoreCmd, ttl: u32, size: usize) {
        if self.on(MUTATIONS) {
            self.put(MUTATIONS, &mut |out, ts, gid| enc::item_store(out, ts, gid, key, status, cmd, ttl, 1, fd, size as u64));
        }
    }

    /// `type=item_store` of a command refused before its item existed
    /// (memcached's shifted arguments: see the module docs).
    fn item_store_refused(&self, fd: i32, key: &[u8], status: StoreStatus, cmd: StoreCmd) {
        if self.on(MUTATIONS) {
            self.put(MUTATIONS, &mut |out, ts, gid| enc::item_store(out, ts, gid, key, status, cmd, 0, fd as u32 & 0xff, fd, 0));
        }
    }

    /// `type=eviction` of an item evicted by a store call made at `now`
    /// (reported through the worker's departure sink).
    #[inline]
    pub fn eviction(&self, key: &[u8], it: &DepartedItem, now: Time) {
        if self.on(EVICTIONS) {
            let ttl = if it.exptime == 0 { -1 } else { it.exptime as i64 - now as i64 };
            let la = it.idle(now);
            self.put(EVICTIONS, &mut |out, ts, gid| enc::eviction(out, ts, gid, key, it.fetched, ttl, la, 1, it.value_len as u64));
        }
    }

    /// `type=deleted`: `cmd` removed `key`, whose value was `size` bytes.
    #[inline]
    pub fn deleted(&self, key: &[u8], cmd: DeleteCmd, size: usize) {
        if self.on(DELETIONS) {
            self.put(DELETIONS, &mut |out, ts, gid| enc::deleted(out, ts, gid, key, cmd, 1, size as u64));
        }
    }

    /// `type=conn_new` for a client connection (`addr`: the registry's
    /// label, `tcp:1.2.3.4:5`, `tcp6:[::1]:5` or `unix:...`).
    pub fn conn_new(&self, fd: i32, addr: &str) {
        if self.on(CONNEVENTS) {
            self.put(CONNEVENTS, &mut |out, ts, gid| conn_line(out, ts, gid, b"conn_new", addr, None, fd));
        }
    }

    /// `type=conn_close`.
    pub fn conn_close(&self, fd: i32, addr: &str, reason: CloseReason) {
        if self.on(CONNEVENTS) {
            self.put(CONNEVENTS, &mut |out, ts, gid| conn_line(out, ts, gid, b"conn_close", addr, Some(reason), fd));
        }
    }
}

/// Who logs a request's lines: the worker's log and the client's fd.
#[derive(Clone, Copy)]
pub struct Trace<'a> {
    pub log: &'a WorkerLog,
    pub fd: i32,
}

impl Trace<'_> {
    #[inline]
    fn on(&self, kinds: u32) -> bool {
        self.log.on(kinds)
    }

    #[inline]
    fn item_get(&self, key: &[u8], status: GetStatus, size: usize) {
        self.log.item_get(self.fd, key, status, size);
    }
}

/// `conn_new` / `conn_close` line (memcached's format).
fn conn_line(out: &mut Vec<u8>, ts: Timestamp, gid: u64, ty: &[u8], addr: &str, reason: Option<CloseReason>, fd: i32) {
    // `tcp:1.2.3.4:5` / `tcp6:[::1]:5` / `unix:/path`; memcached prints a
    // Unix socket peer as rip=unix rport=0 transport=local.
    let (rip, rport, transport): (&str, &str, &[u8]) = match addr.split_once(':') {
        Some(("tcp" | "tcp6", rest)) => {
            let (ip, port) = rest.rsplit_once(':').unwrap_or((rest, "0"));
            (ip.trim_start_matches('[').trim_end_matches(']'), port, b"tcp")
        }
        _ => ("unix", "0", b"local"),
    };
    enc::conn_event(out, ts, gid, ty, rip.as_bytes(), rport.as_bytes(), transport, reason.map(CloseReason::name), fd);
}

// -------------------------------------------------------------------------
// Call-site helpers for the executors: each is one line at its call site and
// costs one relaxed load when nobody watches.

/// What a key held just before a command changed it.
#[derive(Clone, Copy, Debug)]
pub struct Prior {
    status: GetStatus,
    vlen: usize,
    exptime: Time,
}

fn peek(store: &mut Reporting<'_, impl Departures>, key: &[u8], now: Time) -> Prior {
    match store.peek(key, now, |it| (it.value.len(), it.exptime)) {
        Lookup::Hit((vlen, exptime)) => Prior { status: GetStatus::Found, vlen, exptime },
        Lookup::Miss => Prior { status: GetStatus::NotFound, vlen: 0, exptime: 0 },
        Lookup::Expired => Prior { status: GetStatus::Expired, vlen: 0, exptime: 0 },
        Lookup::Flushed => Prior { status: GetStatus::Flushed, vlen: 0, exptime: 0 },
    }
}

/// A lookup's `item_get` line; `hit` gives a found item's value length, or
/// `None` when the hit counts as a miss (an item `mg … N` just created).
#[inline]
pub fn fetched<R>(log: Trace<'_>, key: &[u8], found: &Lookup<R>, hit: impl FnOnce(&R) -> Option<usize>) {
    if log.on(FETCHERS) {
        let (status, size) = match found {
            Lookup::Hit(r) => hit(r).map_or((GetStatus::NotFound, 0), |n| (GetStatus::Found, n)),
            Lookup::Miss => (GetStatus::NotFound, 0),
            Lookup::Expired => (GetStatus::Expired, 0),
            Lookup::Flushed => (GetStatus::Flushed, 0),
        };
        log.item_get(key, status, size);
    }
}

/// The `item_get` of a command whose store call does not report what it
/// found (delete, incr/decr, md, ma): looked up first.
#[inline]
pub fn fetch_first(log: Trace<'_>, store: &mut Reporting<'_, impl Departures>, key: &[u8], now: Time) {
    if log.on(FETCHERS) {
        let p = peek(store, key, now);
        log.item_get(key, p.status, p.vlen);
    }
}

/// Before a delete's store call: its `item_get` (watch `fetchers`) and, if
/// a `deleted` line may follow (watch `deletions`), what it will remove.
#[inline]
pub fn before_delete(log: Trace<'_>, store: &mut Reporting<'_, impl Departures>, key: &[u8], now: Time) -> Option<Prior> {
    if log.on(FETCHERS | DELETIONS) {
        let p = peek(store, key, now);
        if log.on(FETCHERS) {
            log.item_get(key, p.status, p.vlen);
        }
        Some(p)
    } else {
        None
    }
}

/// After a delete removed `key`: its `deleted` line, sized as the look
/// before the delete saw it.
#[inline]
pub fn after_delete(log: Trace<'_>, key: &[u8], cmd: DeleteCmd, prior: Option<Prior>) {
    if let Some(p) = prior {
        log.log.deleted(key, cmd, if p.status == GetStatus::Found { p.vlen } else { 0 });
    }
}

/// Before a storage command's store call: what its lookup will find, if a
/// line will need it.
#[inline]
pub fn before_store(log: Trace<'_>, store: &mut Reporting<'_, impl Departures>, key: &[u8], now: Time, mode: Mode) -> Option<Prior> {
    let concat = matches!(mode, Mode::Append | Mode::Prepend);
    if log.on(FETCHERS) || (concat && log.on(MUTATIONS)) {
        Some(peek(store, key, now))
    } else {
        None
    }
}

/// After a storage command's store call: its `item_get` and `item_store`.
/// `exptime`: the expiry the command gave (store time); `vlen`: its data.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn after_store(
    log: Trace<'_>,
    key: &[u8],
    prior: Option<Prior>,
    cmd: StoreCmd,
    result: &StoreResult,
    exptime: Time,
    vlen: usize,
    now: Time,
) {
    if log.on(FETCHERS | MUTATIONS) {
        stored_slow(log, key, prior, cmd, result, exptime, vlen, now);
    }
}

#[allow(clippy::too_many_arguments)]
#[cold]
fn stored_slow(log: Trace<'_>, key: &[u8], prior: Option<Prior>, cmd: StoreCmd, result: &StoreResult, exptime: Time, vlen: usize, now: Time) {
    let status = match result {
        StoreResult::Stored(_) => StoreStatus::Stored,
        StoreResult::NotStored => StoreStatus::NotStored,
        StoreResult::Exists => StoreStatus::Exists,
        StoreResult::NotFound => StoreStatus::NotFound,
        StoreResult::TooLarge => StoreStatus::TooLarge,
        StoreResult::OutOfMemory => StoreStatus::NoMemory,
    };
    if matches!(status, StoreStatus::TooLarge | StoreStatus::NoMemory) {
        // memcached failed to allocate before looking: the store line, then
        // (set) the lookup that unlinks the old value.
        refused(log, key, prior, cmd, status);
        return;
    }
    if let Some(p) = prior {
        log.item_get(key, p.status, p.vlen);
    }
    // An append/prepend that stored made one item of both: the old one's
    // expiry, both lengths.
    let (exptime, size) = match (status, cmd, prior) {
        (StoreStatus::Stored, StoreCmd::Append | StoreCmd::Prepend, Some(p)) => (p.exptime, p.vlen + vlen),
        _ => (exptime, vlen),
    };
    log.log.item_store(log.fd, key, status, cmd, ttl(exptime, now), size);
}

fn refused(log: Trace<'_>, key: &[u8], prior: Option<Prior>, cmd: StoreCmd, status: StoreStatus) {
    log.log.item_store_refused(log.fd, key, status, cmd);
    if cmd == StoreCmd::Set {
        if let Some(p) = prior {
            log.item_get(key, p.status, p.vlen);
        }
    }
}

/// A storage command refused at parse time (too large), before the old
/// value of a `set` is dropped.
#[inline]
pub fn rejected_store(log: Trace<'_>, store: &mut Reporting<'_, impl Departures>, key: &[u8], cmd: StoreCmd, now: Time) {
    if log.on(FETCHERS | MUTATIONS) {
        let prior = (cmd == StoreCmd::Set && log.on(FETCHERS)).then(|| peek(store, key, now));
        refused(log, key, prior, cmd, StoreStatus::TooLarge);
    }
}

/// `ttl=` of an item_store: seconds from now to the expiry, as memcached's
/// unsigned arithmetic prints it (an already-expired item wraps).
fn ttl(exptime: Time, now: Time) -> u32 {
    if exptime == 0 {
        0
    } else {
        exptime.wrapping_sub(now)
    }
}

/// `cmd=` of a store in `mode`; `cas`: a CAS was given (meta `C` on a set
/// or replace makes it a cas, as in memcached).
pub fn store_cmd(mode: Mode, cas: bool) -> StoreCmd {
    match mode {
        Mode::Set | Mode::Replace if cas => StoreCmd::Cas,
        Mode::Set => StoreCmd::Set,
        Mode::Add => StoreCmd::Add,
        Mode::Replace => StoreCmd::Replace,
        Mode::Append => StoreCmd::Append,
        Mode::Prepend => StoreCmd::Prepend,
        Mode::Cas(_) => StoreCmd::Cas,
    }
}

/// `cmd=` of a text storage command.
pub fn text_cmd(c: larder_proto::StoreCommand) -> StoreCmd {
    use larder_proto::StoreCommand as S;
    match c {
        S::Set => StoreCmd::Set,
        S::Add => StoreCmd::Add,
        S::Replace => StoreCmd::Replace,
        S::Append => StoreCmd::Append,
        S::Prepend => StoreCmd::Prepend,
        S::Cas(_) => StoreCmd::Cas,
    }
}

// -------------------------------------------------------------------------
// The logger thread.

struct Watcher {
    stream: Stream,
    info: Arc<ConnInfo>,
    r: Reserved,
    /// Bytes `start..` of `out` are unsent.
    out: Vec<u8>,
    start: usize,
    skipped: u64,
    /// A write found the socket full during this pass: skip without retrying.
    blocked: bool,
}

impl Watcher {
    fn room(&mut self, cap: usize) -> usize {
        if self.start > 0 && self.out.len() + MAX_LINE > cap {
            self.out.drain(..self.start);
            self.start = 0;
        }
        cap.saturating_sub(self.out.len())
    }

    /// Write what the socket takes; false when the connection is gone.
    fn flush(&mut self) -> bool {
        // TLS records encrypted earlier go first.
        match self.stream.send_pending() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
        while self.start < self.out.len() {
            match stream_write(&mut self.stream, &self.out[self.start..]) {
                Ok(0) => return false,
                Ok(n) => self.start += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
        self.out.clear();
        self.start = 0;
        true
    }

    /// Read and ignore whatever the watcher sends; false once it closed.
    fn drain_input(&mut self) -> bool {
        let mut buf = [0u8; 512];
        loop {
            match stream_read(&mut self.stream, &mut buf) {
                Ok(0) => return false,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }
}

fn stream_write(s: &mut Stream, b: &[u8]) -> io::Result<usize> {
    s.write(b)
}

fn stream_read(s: &mut Stream, b: &mut [u8]) -> io::Result<usize> {
    s.read(b)
}

fn register(poll: &Poll, s: &mut Stream, token: Token) -> io::Result<()> {
    s.register_both(poll.registry(), token)
}

fn deregister(poll: &Poll, s: &mut Stream) {
    let _ = s.deregister(poll.registry());
}

/// Start the logger thread (at server start unless `-W`: like memcached's,
/// it sleeps until the first watcher arrives).
pub fn start(log: Arc<Logger>, host: Arc<dyn WatcherHost>) -> io::Result<()> {
    let poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    lock(&log.shared).waker = Some(waker);
    std::thread::Builder::new().name("larder-log".into()).spawn(move || run(&log, &*host, poll))?;
    Ok(())
}

/// What the logger thread needs from the server that owns it.
pub trait WatcherHost: Send + Sync {
    /// The server is shutting down: the thread ends.
    fn stopping(&self) -> bool;
    /// A watcher's connection is about to close: forget it (registry,
    /// `curr_connections`) while its fd is still ours.
    fn watcher_closed(&self, info: &ConnInfo);
}

fn run(log: &Logger, host: &dyn WatcherHost, mut poll: Poll) {
    let mut watchers: Vec<Option<Watcher>> = (0..WATCHER_LIMIT).map(|_| None).collect();
    let mut events = Events::with_capacity(64);
    let mut threads: Vec<Arc<ThreadLog>> = Vec::new();
    let mut threads_gen = usize::MAX;
    // Swapped with each thread's buffer: same capacity, so neither side
    // reallocates.
    let mut batch: Vec<u8> = Vec::with_capacity(log.worker_buf + MAX_LINE);
    let mut sleep = MIN_SLEEP;
    loop {
        let any = watchers.iter().any(Option::is_some) || !lock(&log.shared).pending.is_empty();
        let timeout = if any { Some(sleep) } else { None };
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                eprintln!("larder: logger poll failed: {e}");
                return;
            }
        }
        if host.stopping() {
            return;
        }
        // Watchers that sent something or hung up.
        let mut gone: Vec<usize> = Vec::new();
        for ev in events.iter() {
            let slot = ev.token().0;
            if let Some(Some(w)) = watchers.get_mut(slot) {
                if (ev.is_readable() && !w.drain_input()) || ev.is_error() {
                    gone.push(slot);
                }
            }
        }
        for slot in gone.drain(..) {
            close(log, host, &poll, &mut watchers, slot);
        }
        // New watchers.
        let new = std::mem::take(&mut lock(&log.shared).pending);
        for mut nw in new {
            let slot = nw.r.slot;
            if register(&poll, &mut nw.stream, Token(slot)).is_err() {
                drop_watcher(log, host, nw.stream, &nw.info, slot);
                continue;
            }
            let mut out = Vec::with_capacity(log.watcher_buf);
            out.extend_from_slice(&nw.unsent);
            out.extend_from_slice(b"OK\r\n");
            watchers[slot] =
                Some(Watcher { stream: nw.stream, info: nw.info, r: nw.r, out, start: 0, skipped: 0, blocked: false });
        }
        // Route every thread's lines.
        if log.threads_gen.load(Relaxed) != threads_gen {
            threads_gen = log.threads_gen.load(Relaxed);
            threads = lock(&log.threads).clone();
        }
        for w in watchers.iter_mut().flatten() {
            w.blocked = false;
        }
        let mut found = false;
        for t in &threads {
            {
                let mut e = lock(&t.buf);
                std::mem::swap(&mut e.data, &mut batch);
                log.stats.worker_written.fetch_add(std::mem::take(&mut e.written), Relaxed);
                log.stats.worker_dropped.fetch_add(std::mem::take(&mut e.dropped), Relaxed);
            }
            found |= !batch.is_empty();
            route(log, &batch, &mut watchers);
            batch.clear();
        }
        // Send.
        for slot in 0..WATCHER_LIMIT {
            if let Some(w) = &mut watchers[slot] {
                if !w.flush() {
                    close(log, host, &poll, &mut watchers, slot);
                }
            }
        }
        sleep = if found { (sleep / 2).max(MIN_SLEEP) } else { (sleep + sleep / 8).min(MAX_SLEEP) };
    }
}

/// Hand every entry of one thread's batch to the watchers that want it.
fn route(log: &Logger, batch: &[u8], watchers: &mut [Option<Watcher>]) {
    let mut pos = 0;
    while pos + ENTRY_HEAD <= batch.len() {
        let kind = batch[pos] as u32;
        let gid = u64::from_le_bytes(batch[pos + 1..pos + 9].try_into().unwrap());
        let len = u32::from_le_bytes(batch[pos + 9..pos + 13].try_into().unwrap()) as usize;
        let line = &batch[pos + ENTRY_HEAD..pos + ENTRY_HEAD + len];
        pos += ENTRY_HEAD + len;
        for w in watchers.iter_mut().flatten() {
            if w.r.kinds & kind == 0 || gid < w.r.min_gid {
                continue;
            }
            let need = line.len() + SKIP_ROOM;
            if !w.blocked && w.room(log.watcher_buf) < need {
                // Full: try to make room by writing now, once per pass.
                let alive = w.flush();
                if !alive || w.room(log.watcher_buf) < need {
                    w.blocked = true;
                }
            }
            if w.blocked {
                w.skipped += 1;
                log.stats.watcher_skipped.fetch_add(1, Relaxed);
                continue;
            }
            if w.skipped > 0 {
                w.out.extend_from_slice(b"skipped=");
                larder_proto::reply::push_u64(&mut w.out, w.skipped);
                w.out.push(b'\n');
                w.skipped = 0;
            }
            w.out.extend_from_slice(line);
            log.stats.watcher_sent.fetch_add(1, Relaxed);
        }
    }
}

fn close(log: &Logger, host: &dyn WatcherHost, poll: &Poll, watchers: &mut [Option<Watcher>], slot: usize) {
    if let Some(mut w) = watchers[slot].take() {
        deregister(poll, &mut w.stream);
        drop_watcher(log, host, w.stream, &w.info, slot);
    }
}

/// Close a watcher's connection and give its slot back.
fn drop_watcher(log: &Logger, host: &dyn WatcherHost, stream: Stream, info: &ConnInfo, slot: usize) {
    // Out of the registry while the fd is still ours (a new connection may
    // reuse the number as soon as it is closed).
    host.watcher_closed(info);
    drop(stream);
    log.release(slot);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nobody_watching_logs_nothing() {
        let log = Arc::new(Logger::new(true, WORKER_BUF_DEFAULT, WATCHER_BUF_DEFAULT));
        assert!(!log.on(FETCHERS | MUTATIONS | EVICTIONS | CONNEVENTS));
        log.worker_log().item_get(5, b"k", GetStatus::Found, 1);
        assert_eq!(log.stats(), [0; 5]);
        assert!(lock(&log.threads).is_empty());
    }

    #[test]
    fn reserve_sets_the_mask_and_limits_watchers() {
        let log = Logger::new(true, WORKER_BUF_DEFAULT, WATCHER_BUF_DEFAULT);
        let f = WatchFlags { mutations: true, evictions: true, ..Default::default() };
        let r = log.reserve(&f).unwrap();
        assert!(log.on(MUTATIONS) && log.on(EVICTIONS) && !log.on(FETCHERS));
        assert_eq!(r.min_gid, 1);
        let silent = WatchFlags { sysevents: true, ..Default::default() };
        let mut all = vec![r];
        for _ in 1..WATCHER_LIMIT {
            all.push(log.reserve(&silent).unwrap());
        }
        assert_eq!(log.reserve(&f).unwrap_err(), Refused::TooMany);
        log.release(r.slot);
        assert!(!log.on(MUTATIONS | EVICTIONS | FETCHERS | CONNEVENTS));
        assert_eq!(log.stats()[4], WATCHER_LIMIT as u64 - 1);
    }

    #[test]
    fn full_thread_buffer_drops_and_routing_reports_skips() {
        let log = Arc::new(Logger::new(true, 4096, 4096));
        let r = log.reserve(&WatchFlags { fetchers: true, ..Default::default() }).unwrap();
        let mine = log.worker_log();
        for _ in 0..100 {
            mine.item_get(5, &[b'k'; 200], GetStatus::NotFound, 0);
        }
        let t = lock(&log.threads)[0].clone();
        let mut e = lock(&t.buf);
        assert!(e.written > 0 && e.dropped > 0 && e.written + e.dropped == 100);
        assert!(e.data.len() <= 4096);
        // Route into a watcher whose buffer is nearly full: the first lines
        // are skipped; once there is room, a notice precedes the next line.
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let stream = Stream::Unix(mio::net::UnixStream::from_std(a));
        let info = Arc::new(ConnInfo::new(-1, "unix:x".into(), None, ConnState::Watch, 0));
        let mut w = Watcher { stream, info, r, out: vec![b'x'; 4096 - 300], start: 0, skipped: 0, blocked: false };
        w.blocked = true; // as if a write had just failed
        let mut ws = vec![Some(w)];
        let data = std::mem::take(&mut e.data);
        route(&log, &data, &mut ws);
        let w = ws[0].as_mut().unwrap();
        assert_eq!(w.skipped, e.written);
        w.out.clear();
        w.blocked = false;
        route(&log, &data[..data.len()], &mut ws);
        let w = ws[0].as_ref().unwrap();
        let text = String::from_utf8_lossy(&w.out);
        assert!(text.starts_with(&format!("skipped={}\nts=", e.written)), "{}", &text[..60]);
    }

    #[test]
    fn conn_lines() {
        let ts = Timestamp { secs: 5, usecs: 7 };
        let mut out = Vec::new();
        conn_line(&mut out, ts, 3, b"conn_new", "tcp:127.0.0.1:5555", None, 9);
        conn_line(&mut out, ts, 4, b"conn_close", "tcp6:[::1]:80", Some(CloseReason::Normal), 9);
        conn_line(&mut out, ts, 5, b"conn_close", "unix:/tmp/s", Some(CloseReason::IdleTimeout), 10);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ts=5.7 gid=3 type=conn_new rip=127.0.0.1 rport=5555 transport=tcp cfd=9\n\
             ts=5.7 gid=4 type=conn_close rip=::1 rport=80 transport=tcp reason=normal cfd=9\n\
             ts=5.7 gid=5 type=conn_close rip=unix rport=0 transport=local reason=idle_timeout cfd=10\n"
        );
    }

    #[test]
    fn ttl_wraps_like_memcached() {
        assert_eq!(ttl(0, 50), 0);
        assert_eq!(ttl(150, 50), 100);
        assert_eq!(ttl(1, 3), u32::MAX - 1);
    }
}
