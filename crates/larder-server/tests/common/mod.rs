//! Test support for larder-server's integration tests: the shared test kit
//! (crates/larder-testkit) under the names these tests have always used, so
//! `mod common; use common::{Larder, Client, free_port, binary};` keeps
//! working. New helpers belong in the test kit, not here.

// Each test file uses a different part of the kit.
#![allow(dead_code, unused_imports)]

pub use larder_testkit::*;

/// The `larder` binary cargo built for these tests (known at compile time
/// here; the kit's `larder_binary()` finds the same file at run time).
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_larder")
}

pub mod sasl;
