//! Near-cache invalidation tracking (issue #28; the protocol is
//! docs/near-cache.md): which subscriber read which key, and the bounded
//! push queues that tell subscribers what changed.
//!
//! This is the server-side core, independent of the connection drivers:
//! the stream driver owns a [`Subscriber`] (from [`Tracker::subscribe`]),
//! data connections hold an [`Attachment`] (from [`Tracker::attach`]),
//! reads on a registering attachment call [`Tracker::before_read`] before
//! their store lookup and [`Tracker::register_read`] after a hit, writes
//! call [`Tracker::invalidate`] and `flush_all` calls
//! [`Tracker::invalidate_all`].
//!
//! # Costs
//!
//! * **No subscriber: one relaxed atomic load** per `invalidate` /
//!   `invalidate_all` (the count of live subscribers), no lock, no
//!   allocation. Reads pay nothing unless their connection attached.
//! * **With subscribers**, a write hashes its key once (std's keyed
//!   SipHash: a client cannot aim keys at one chain), bumps one of
//!   4096 write generations, locks one of 16 table shards and, if the key
//!   is tracked, takes the subscriber map's read lock and each tracking
//!   subscriber's queue lock. Broadcast subscribers cost a read lock and a
//!   prefix comparison each. Nothing allocates on that path; a
//!   subscriber's queue grows on demand up to its bound and then keeps
//!   its buffer.
//! * **Allocation** happens when a read registers a key the table does not
//!   hold yet (the entry's copy of the key; slab and bucket arrays grow
//!   amortised, bounded by the limit), when more than two subscribers
//!   track one key (their sids spill to a `Vec`), and in `subscribe` /
//!   `attach` (once per connection, not per request).
//!
//! # The read/write race
//!
//! A read looks the store up, then registers; a write changes the store,
//! then looks at the table. If the write looked at the table between the
//! read's lookup and its registration, the read holds the old value and no
//! `IV` would come. So every write first bumps its key's *generation* (a
//! slot chosen by the key's hash), then looks at the table; every read
//! notes the generation before its lookup ([`ReadSnap`]) and, under the
//! shard lock, registers only if it has not moved, else queues `IV` at
//! once (a write of another key sharing the slot costs at most that
//! spurious `IV`). `tests/loom_track.rs` checks this over every
//! interleaving, and that each half of it is needed.
//!
//! # Bounds
//!
//! * The table ([`table`]) counts key bytes plus a fixed per-entry
//!   overhead; each of the [`SHARDS`] shards holds at most its share of
//!   `-o track_table_mb` and evicts its oldest entries (queuing `IV` for
//!   each) to take a new one.
//! * Each subscriber's queue ([`queue`]) holds at most `-o
//!   track_stream_kb` of pushes, and all queues together at most half the
//!   connection budget (`-o read_buf_mem_limit`): their buffers are charged
//!   to it ([`charge`]), and a growth refused there overflows the queue
//!   too. On overflow it is cleared, one `LOST` is
//!   queued, and the subscriber's table entries are dropped (by the call
//!   that overflowed it, after it has let go of its shard lock); `LOST`
//!   leaves only after that, so a re-registration after the client's
//!   flush cannot be purged by mistake.
//!
//! # Delivery
//!
//! Modelled on `trace::watch`, but the subscriber's connection stays with
//! its worker (the `watch` logger thread's buffers and socket handling are
//! private to it and move the socket away): a push marks the subscriber
//! ready and, once until the owner looks, calls its [`Wake`] (the worker's
//! `mio::Waker`); the worker then calls [`Subscriber::take_ready`] on its
//! stream sessions and [`Subscriber::drain_into`] their output buffers.
//!
//! # Lock order
//!
//! shard → subscriber map (read) → one subscriber's queue. Subscribing and
//! unsubscribing take the map's write lock holding nothing else; purges
//! take shard locks holding nothing else.

pub mod charge;
pub mod limits;
pub mod line;
pub mod queue;
pub mod stats;
pub mod subscriber;
pub mod sync;
pub mod table;
pub mod tracker;

pub use limits::{parse_stream_kb, parse_table_mb, Limits};

/// A stream connection's kernel send buffer (`net::stream::Stream::
/// cap_send_buffer`): what a subscriber that never reads holds in the
/// kernel, beside its queue. Ample for one that reads.
pub const STREAM_SNDBUF: usize = 64 << 10;
pub use stats::TrackStats;
pub use subscriber::{Attachment, Mode, Subscriber, Wake};
pub use tracker::{ReadSnap, Tracker, SHARDS};

#[cfg(test)]
mod tests;
