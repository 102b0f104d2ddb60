//! A bounded pool of connections to one node: at most `max` open, idle ones
//! reused, a broken one (any I/O or protocol error) dropped instead of being
//! returned, so a half-read reply never reaches the next caller, and an idle
//! one the server has closed meanwhile (a restart) dropped at checkout
//! instead of being handed out.

use std::net::SocketAddr;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::conn::Conn;
use crate::Error;

pub struct Pool {
    addr: SocketAddr,
    max: usize,
    timeout: Duration,
    state: Mutex<State>,
    freed: Condvar,
}

struct State {
    idle: Vec<Conn>,
    open: usize,
}

/// A checked-out connection; goes back to the pool on drop unless `broken`.
pub struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
    pub broken: bool,
    /// Taken from the idle list (it served requests before) rather than
    /// opened for this checkout.
    pub reused: bool,
}

impl Pool {
    pub fn new(addr: SocketAddr, max: usize, timeout: Duration) -> Pool {
        Pool { addr, max: max.max(1), timeout, state: Mutex::new(State { idle: Vec::new(), open: 0 }), freed: Condvar::new() }
    }

    pub fn checkout(&self) -> Result<Pooled<'_>, Error> {
        let deadline = Instant::now() + self.timeout;
        let mut st = self.state.lock().unwrap();
        loop {
            while let Some(c) = st.idle.pop() {
                if c.is_alive() {
                    return Ok(Pooled { pool: self, conn: Some(c), broken: false, reused: true });
                }
                st.open -= 1;
            }
            if st.open < self.max {
                st.open += 1;
                drop(st);
                return match Conn::connect(&self.addr, self.timeout) {
                    Ok(c) => Ok(Pooled { pool: self, conn: Some(c), broken: false, reused: false }),
                    Err(e) => {
                        self.state.lock().unwrap().open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::PoolTimeout);
            }
            st = self.freed.wait_timeout(st, deadline - now).unwrap().0;
        }
    }

    /// (open, idle) connections.
    pub fn counts(&self) -> (usize, usize) {
        let st = self.state.lock().unwrap();
        (st.open, st.idle.len())
    }
}

impl Pooled<'_> {
    pub fn conn(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("connection present until drop")
    }

    /// Runs `f` on the connection; any error marks it broken.
    pub fn run<T>(&mut self, f: impl FnOnce(&mut Conn) -> Result<T, Error>) -> Result<T, Error> {
        let r = f(self.conn());
        if r.is_err() {
            self.broken = true;
        }
        r
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let mut st = self.pool.state.lock().unwrap();
        match self.conn.take() {
            Some(c) if !self.broken => st.idle.push(c),
            _ => st.open -= 1,
        }
        drop(st);
        self.pool.freed.notify_one();
    }
}
