//! larder-client: a blocking client for larder (and memcached) clusters.
//!
//! - a bounded connection pool per node;
//! - key placement identical to libmemcached's ketama ([`ketama`]), so keys
//!   land where pylibmc/php-memcached put them;
//! - meta-protocol `get`/`set`/`delete`/`get_multi`;
//! - [`Client::get_or_load`]: one loader per key in the process
//!   (single flight) and one across processes (the server's `mg N` leases);
//! - an optional near cache ([`NearConfig`]): bounded in bytes, TinyLFU
//!   eviction (moka), each entry's TTL capped by the server's remaining TTL
//!   and a maximum, kept correct by larder's invalidation stream
//!   (docs/near-cache.md) with the pending-token rule against the
//!   invalidation/reply race.
//!
//! See README.md in this crate for the guarantees and where they differ from
//! Redis client-side caching (Lettuce, rueidis).

mod client;
mod conn;
mod flight;
pub mod ketama;
mod metrics;
mod near;
mod node;
mod pool;
mod proto;
pub mod stream;

pub use client::{Client, Config, Invalidation, NearConfig};
pub use ketama::KeyHash;
pub use metrics::MetricsSnapshot;
pub use near::{near_ttl, Value};

/// Everything that can go wrong.
#[derive(Debug)]
pub enum Error {
    Io(std::io::Error),
    /// The server said something outside the protocol (or over a limit).
    Protocol(String),
    /// An error line from the server (`SERVER_ERROR ...`, `CLIENT_ERROR ...`, `ERROR`).
    Server(String),
    /// A key a text command cannot carry.
    BadKey(String),
    NotStored,
    /// No pooled connection became free in time.
    PoolTimeout,
    /// No invalidation stream is up.
    NoStream,
    /// The loader failed (its message; followers get the leader's).
    Load(String),
    Config(String),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(e)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "I/O: {e}"),
            Error::Protocol(s) => write!(f, "protocol: {s}"),
            Error::Server(s) => write!(f, "server: {s}"),
            Error::BadKey(k) => write!(f, "bad key {k:?}"),
            Error::NotStored => write!(f, "not stored"),
            Error::PoolTimeout => write!(f, "timed out"),
            Error::NoStream => write!(f, "no invalidation stream"),
            Error::Load(s) => write!(f, "loader failed: {s}"),
            Error::Config(s) => write!(f, "config: {s}"),
        }
    }
}

impl std::error::Error for Error {}
