//! What larder does against cache stampedes, in one place: the policies a
//! read of a missing or expiring key runs under.
//!
//! * [`grace`]: `-o grace`: serve an expired item for a while and let one
//!   client refresh it (the winner table).
//! * [`coalesce`]: `-o coalesce`: park the gets of a cold key while one
//!   client refills it, then release them together.
//! * [`keyhash`]: the key hash both tables use.
//!
//! The executors decide when a read consults them (`exec::read`,
//! `exec::store`); docs/stampede.md describes the behaviour.

pub mod coalesce;
pub mod grace;
pub mod keyhash;
