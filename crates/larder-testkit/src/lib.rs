//! # larder-testkit
//!
//! What larder's test suites share, so that each helper exists once: a fix
//! to how a server is started or how a reply is read reaches every test.
//! Used only as a `[dev-dependencies]` entry; never published.
//!
//! | module | what | used by |
//! |---|---|---|
//! | [`larder`] | start the built `larder` binary on a free port, wait until it answers, kill it on drop; optionally collect its stderr | larder-server's integration tests (through `tests/common/mod.rs`) |
//! | [`memcached`] | the same for the reference memcached (`/usr/bin/memcached` or `$MEMCACHED_BIN`) | tests that compare with memcached |
//! | [`binary`] | binary-protocol request frames | tests that talk binary |
//! | [`client`] | a raw text-protocol client: send bytes, read lines, exact lengths, or until a terminator, with timeouts | every test that talks to a server |
//! | [`launch`] | free ports, the start-and-check-the-pid loop both launchers share, and [`eventually`] (poll a figure until it settles) | the launchers; tests that need several ports or wait for a server to settle |
//! | [`rng`] | the seeded generators the tests use (xorshift64, xorshift64*, splitmix64) | random workloads and values |
//! | [`values`] | self-describing values that expose tearing, truncation and misdirection | large-value tests of the store and the server |
//! | [`scratch`] | directories under /tmp that are removed when a test is done with them | the TLS PKI, the snapshot tests |
//! | [`tls`] | a throwaway CA and certificates (the `openssl` command), a blocking TLS client (rustls) | the TLS tests |
//! | `flaw` (only with `--cfg larder_loom`) | the one switch for the deliberate bugs each crate plants for its loom models | larder-store's and larder-server's `sync::flaw` |
//! | `loom` (only with `--cfg larder_loom`) | run a loom model over every interleaving and count them; show that a deliberate flaw fails it | the loom models of larder-store and larder-server (scripts/loom) |
//! | [`policy`] | [`require_or_skip`]: what a test does when memcached or Python is missing (fail under CI, `SKIPPED:` elsewhere) | tests with outside dependencies |
//!
//! Everything is blocking std I/O on 127.0.0.1; no test here touches another
//! machine.

#![forbid(unsafe_code)]

pub mod binary;
pub mod client;
#[cfg(larder_loom)]
pub mod flaw;
pub mod larder;
pub mod launch;
#[cfg(larder_loom)]
pub mod loom;
pub mod memcached;
pub mod policy;
pub mod rng;
pub mod scratch;
pub mod tls;
pub mod values;

pub use client::{figure, Client};
pub use larder::{find_larder_binary, larder_binary, Larder, Stderr};
pub use launch::{eventually, free_port, free_ports, running_as_root, user_args};
pub use memcached::Memcached;
pub use policy::require_or_skip;
pub use rng::{splitmix64, SplitMix64, XorShift64, XorShift64Star};
