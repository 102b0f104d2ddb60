//! One executor per command, shared by every protocol.
//!
//! The text, meta and binary front ends (`crate::wire`) only parse and
//! encode. What a command *does* — which store call it makes, grace mode,
//! the `-C` flush second, CAS rules, what a failed `set` drops, which
//! counters move, what `watch` and the per-prefix accounting are told — is
//! decided here, once:
//!
//! | module      | commands (text / meta / binary)                              |
//! |-------------|--------------------------------------------------------------|
//! | [`read`]    | get gets gat gats / mg me / GET GETQ GETK GETKQ GAT GATQ …   |
//! | [`store`]   | set add replace append prepend cas / ms / SET ADD REPLACE …  |
//! | [`delete`]  | delete / md / DELETE DELETEQ                                 |
//! | [`arith`]   | incr decr / ma / INCREMENT DECREMENT (and their quiet forms) |
//! | [`touch`]   | touch / — / TOUCH                                            |
//! | [`flush`]   | flush_all / — / FLUSH FLUSHQ                                 |
//! | [`admin`]   | version verbosity shutdown cache_memlimit debugtime …        |
//!
//! An executor takes the request context ([`Ctx`]) and the command's
//! arguments in the store's terms (expiry already converted to server
//! time), and returns the outcome for the front end to encode. Only reads
//! take an encoder: a hit's bytes are borrowed from the store under its
//! shard lock, so the front end's closure encodes them there, without a
//! copy.
//!
//! Each executor records its command once, from the outcome: counters
//! (`stats`), `watch` lines (`trace::watch`), per-prefix/hot-key accounting
//! (`trace::observe`) and the grace-mode winner table.
//!
//! The SASL commands (binary only, `-S`) are authentication's and live in
//! `auth::sasl`.

pub mod admin;
pub mod tuning;
pub mod arith;
pub mod delete;
pub mod flush;
pub mod read;
pub mod report;
pub mod store;
pub mod touch;

use crate::trace::observe::{Departed, Obs};
use crate::trace::watch::{Trace, WorkerLog};
use crate::trace::WorkerTrace;
use crate::state::server::Server;
use crate::counters::WorkerStats;
use crate::stampede::coalesce::Ticket;
use crate::track::subscriber::Attachment;
use crate::track::tracker::ReadSnap;
use larder_store::{Landing, Reporting, Time};

/// Everything a command runs with: the server, the calling worker's
/// counters, accounting and `watch` log, the client's fd (`cfd=` of its
/// watch lines), the request's server time, and whether a read may be
/// parked (`-o coalesce`).
pub struct Ctx<'a> {
    pub srv: &'a Server,
    pub ws: &'a WorkerStats,
    pub obs: &'a mut Obs,
    pub log: &'a WorkerLog,
    pub fd: i32,
    pub now: Time,
    pub parking: Parking,
    /// Set by a read that parked: what releases it (see [`After::Parked`]).
    pub ticket: Option<Ticket>,
    /// The request's value, if it was received into the store's buffer
    /// (`conn::session`): a write adopts it instead of copying.
    pub landed: Option<&'a Landing>,
    /// The connection's near-cache attachment (`track attach`), lent by its
    /// conversation for the request: reads register, writes name it as
    /// their origin (noloop).
    pub track: Option<Attachment>,
}

/// Whether a plain read that misses may wait for another client's refill
/// (`stampede::coalesce`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parking {
    /// No: UDP, and anything without a connection to hold the request.
    Never,
    /// Yes, on this connection (its id: a client never waits for itself).
    Allowed(u32),
    /// The request already waited once for its first read; that read
    /// answers what it finds now, later ones may wait again.
    Retry(u32),
}

impl<'a> Ctx<'a> {
    /// A request from client `fd` at `now`, served by the worker that owns
    /// `ws` and `tr`.
    pub fn new(srv: &'a Server, ws: &'a WorkerStats, tr: &'a mut WorkerTrace, fd: i32, now: Time) -> Ctx<'a> {
        let WorkerTrace { obs, log } = tr;
        Ctx { srv, ws, obs, log, fd, now, parking: Parking::Never, ticket: None, landed: None, track: None }
    }

    /// The store, reporting what leaves it during the call (evictions,
    /// expiries, …) to this worker's accounting and `watch` log.
    #[inline]
    pub fn store(&mut self) -> Reporting<'a, Departed<'_>> {
        self.srv.store().reporting(Departed { obs: &mut *self.obs, log: self.log, now: self.now })
    }

    /// Where this request's `watch` lines go.
    #[inline]
    pub fn trace(&self) -> Trace<'a> {
        Trace { log: self.log, fd: self.fd }
    }

    /// The same context, for a connection that can hold a parked request.
    pub fn parking(mut self, parking: Parking) -> Ctx<'a> {
        self.parking = parking;
        self
    }

    /// The request's value was received into `landing` (if `Some`).
    pub fn landed(mut self, landing: Option<&'a Landing>) -> Ctx<'a> {
        self.landed = landing;
        self
    }

    /// Before a read's store lookup: what near-cache tracking needs to
    /// register a hit (only on a connection whose reads register).
    #[inline]
    pub fn track_before(&self, key: &[u8]) -> Option<ReadSnap> {
        self.track.as_ref().filter(|a| a.registers()).map(|_| self.srv.tracker().before_read(key))
    }

    /// After a read hit, before its reply goes out: the key is tracked for
    /// this connection's subscriber.
    #[inline]
    pub fn track_hit(&self, snap: Option<ReadSnap>, key: &[u8]) {
        if let (Some(att), Some(snap)) = (&self.track, snap) {
            self.srv.tracker().register_read(att, snap, key);
        }
    }

    /// After a change of `key`'s value or lifetime, before the writer's
    /// reply: near caches that hold it are told (one relaxed load when no
    /// one subscribed).
    #[inline]
    pub fn track_changed(&self, key: &[u8]) {
        self.srv.tracker().invalidate(key, self.track.as_ref().and_then(|a| a.origin()));
    }

    /// The CAS a client may see: 0 under `-C` ([`cas_shown`]).
    #[inline]
    pub fn visible_cas(&self, cas: u64) -> u64 {
        cas_shown(self.srv, cas)
    }

    /// Whether every lookup must miss as flushed: under `-C`, memcached
    /// cannot tell items stored in the second of an immediate `flush_all`
    /// from earlier ones and hides them all (see `Server::flush_all`).
    /// Every executor that looks an item up asks this, whatever protocol
    /// the request came in.
    #[inline]
    pub fn in_flush_second(&self) -> bool {
        self.srv.in_nocas_flush_second(self.now)
    }

    /// A client-given relative or absolute expiry, in server time.
    #[inline]
    pub fn expiry(&self, exptime: i64) -> Time {
        self.srv.clock().expiry(exptime)
    }
}

/// What the connection should do after a request.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    Continue,
    /// `quit`, or an error after which memcached closes the connection.
    Close,
    /// A multi-key get stopped after this many keys until the output
    /// drains; run the same request again with it as `resume`.
    Paused(usize),
    /// A read of this key (its index in a multi-key get; 0 otherwise) was
    /// parked until another client refills it (`-o coalesce`, ticket in
    /// [`Ctx::ticket`]); nothing of it was answered. Run the same request
    /// again from that key once released.
    Parked(usize),
}

/// The CAS a client may see of an item whose CAS is `cas`: 0 under `-C`
/// (memcached keeps no CAS then). The one place this rule is written; every
/// reply and listing that shows a CAS goes through it.
#[inline]
pub fn cas_shown(srv: &Server, cas: u64) -> u64 {
    if srv.settings().cas_enabled {
        cas
    } else {
        0
    }
}
