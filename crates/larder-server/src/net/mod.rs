//! The bottom layer: what a connection is, independent of what it speaks.
//!
//! * [`stream`]: one `Stream` type for TCP, TLS and Unix-domain connections.
//! * [`tls`]: a TLS connection over a non-blocking socket (rustls's
//!   handshake, then [`tls_record`]: larder's own record layer, and
//!   [`tls_traffic`]: alerts, key updates, renegotiation).
//! * [`registry`]: every open connection's shared description (`stats conns`).
//!
//! Binding listeners and accepting connections need the settings and the
//! workers, so they live in `conn::listen`.

pub mod registry;
pub mod stream;
pub mod tls;
pub mod tls_record;
pub mod tls_traffic;
