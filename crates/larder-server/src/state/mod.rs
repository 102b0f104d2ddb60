//! What every thread of the server shares: the [`server::Server`] aggregate
//! (settings, store, clock, counters, observer, watch logger, stampede
//! tables, credentials, connection registry and budget) and the server's
//! [`clock`].
//!
//! The features the aggregate holds have homes of their own: `config/`
//! (flags and TLS settings), `auth/`, `stampede/`, `connmem/`, `restart/`
//! (warm restart's snapshot), `counters` (the request counters behind
//! `stats`).

pub mod clock;
pub mod server;
