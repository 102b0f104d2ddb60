//! The registry of open sockets, for `stats conns`.
//!
//! Each connection and listener has a [`ConnInfo`]; workers update its state
//! and last-command time with relaxed atomic stores on their own cache line.
//! The registry's lock is taken only when a socket opens or closes and when
//! `stats conns` is asked, never per request.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// memcached's connection state names, as `stats conns` prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ConnState {
    Listening = 0,
    /// Waiting for the next command.
    Waiting = 1,
    /// Parsing/executing commands.
    ParseCmd = 2,
    /// Reading a storage command's data block.
    Nread = 3,
    /// Discarding a rejected data block.
    Swallow = 4,
    /// Writing replies the client has not read yet.
    Write = 5,
    Closing = 6,
    /// Handed to the logger thread by `watch`.
    Watch = 7,
}

impl ConnState {
    fn from_u8(v: u8) -> ConnState {
        match v {
            0 => ConnState::Listening,
            1 => ConnState::Waiting,
            2 => ConnState::ParseCmd,
            3 => ConnState::Nread,
            4 => ConnState::Swallow,
            5 => ConnState::Write,
            7 => ConnState::Watch,
            _ => ConnState::Closing,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ConnState::Listening => "conn_listening",
            ConnState::Waiting => "conn_waiting",
            ConnState::ParseCmd => "conn_parse_cmd",
            ConnState::Nread => "conn_nread",
            ConnState::Swallow => "conn_swallow",
            ConnState::Write => "conn_mwrite",
            ConnState::Closing => "conn_closing",
            ConnState::Watch => "conn_watch",
        }
    }
}

/// What `stats conns` shows about one socket.
pub struct ConnInfo {
    pub fd: i32,
    /// `tcp:1.2.3.4:5`, `unix:/path`, `udp:...`.
    pub addr: String,
    /// The listener a client came through (None for listeners).
    pub listen_addr: Option<String>,
    state: AtomicU8,
    last_cmd: AtomicU32,
}

impl ConnInfo {
    pub fn new(fd: i32, addr: String, listen_addr: Option<String>, state: ConnState, now: u32) -> ConnInfo {
        ConnInfo { fd, addr, listen_addr, state: AtomicU8::new(state as u8), last_cmd: AtomicU32::new(now) }
    }

    pub fn set_state(&self, s: ConnState) {
        if self.state.load(Relaxed) != s as u8 {
            self.state.store(s as u8, Relaxed);
        }
    }

    pub fn state(&self) -> ConnState {
        ConnState::from_u8(self.state.load(Relaxed))
    }

    pub fn touch(&self, now: u32) {
        if self.last_cmd.load(Relaxed) != now {
            self.last_cmd.store(now, Relaxed);
        }
    }

    pub fn last_cmd(&self) -> u32 {
        self.last_cmd.load(Relaxed)
    }
}

#[derive(Default)]
pub struct Registry {
    by_fd: Mutex<BTreeMap<i32, Arc<ConnInfo>>>,
}

impl Registry {
    pub fn add(&self, info: Arc<ConnInfo>) {
        self.by_fd.lock().unwrap().insert(info.fd, info);
    }

    pub fn remove(&self, fd: i32) {
        self.by_fd.lock().unwrap().remove(&fd);
    }

    /// A copy of the current entries, ordered by fd.
    pub fn snapshot(&self) -> Vec<Arc<ConnInfo>> {
        self.by_fd.lock().unwrap().values().cloned().collect()
    }
}
