//! Connection memory, in one place: what connections may hold outside `-m`,
//! and the buffers they hold it in.
//!
//! * [`budget`]: the server-wide connection-memory budget every
//!   connection's buffers are charged to, and its `stats`.
//! * [`shelf`]: grown read and write buffers kept for reuse, so a large
//!   request does not allocate twice.
//! * [`pool`]: each worker's cache of resting-size buffers, lent to
//!   connections only while they have work in flight.
//! * [`output`]: a connection's (or a UDP reply's) output: reply bytes,
//!   values held in the store instead of copied, back-pressure marks.

pub mod budget;
pub mod output;
pub mod pool;
pub mod shelf;
