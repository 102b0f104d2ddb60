//! Connections: listening and accepting ([`listen`]), the worker threads
//! and their event loops ([`worker`]), one TCP/Unix client's buffers and
//! framing ([`session`]), and UDP datagrams ([`udp`]). Requests are handed
//! to the protocol front ends (`crate::wire`).

pub mod contain;
pub mod harness;
pub mod listen;
pub mod session;
pub mod udp;
pub mod worker;
