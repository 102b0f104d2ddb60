//! What the server shares between its threads: the settings
//! ([`config`], parsed from memcached's flags), the [`server::Server`]
//! aggregate (store, clock, counters, observer, watch logger, grace
//! winners, connection registry), the [`clock`], the request [`stats`] and
//! grace mode's winner table ([`grace`]), coalesced cold misses
//! ([`coalesce`]) and the key hash both use ([`keyhash`]), the connection-memory budget ([`budget`]), the warm
//! restart's snapshot file ([`persist`]), `-Y`'s credentials
//! ([`authfile`]), `-S`'s Cyrus SASL library ([`sasl`]) and `-Z`'s TLS
//! settings and rustls configuration ([`tls`]).

pub mod authfile;
pub mod budget;
pub mod clock;
pub mod coalesce;
pub mod config;
pub mod grace;
pub mod keyhash;
pub mod persist;
pub mod sasl;
pub mod server;
pub mod shelf;
pub mod stats;
pub mod sync;
pub mod tls;
