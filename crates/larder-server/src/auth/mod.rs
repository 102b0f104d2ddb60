//! Authentication, in one place: who may use the cache.
//!
//! * [`authfile`]: `-Y`'s credentials file (read at start, re-read on
//!   demand). The handshake a connection makes with it is the `-Y` gate
//!   driver, `wire::gate`.
//! * [`cyrus`]: `-S`'s Cyrus SASL library, loaded at start.
//! * [`sasl`]: the SASL commands (`SASL_LIST_MECHS`, `SASL_AUTH`,
//!   `SASL_STEP`) and a connection's authentication state
//!   ([`sasl::ConnAuth`]), which `-Y`'s gate shares. The binary driver
//!   (`wire::binary`) encodes their replies; which requests an
//!   unauthenticated binary connection may make is the parser's decision
//!   (`larder_proto::binary::parse_sasl`).

pub mod authfile;
pub mod cyrus;
pub mod sasl;
