//! A connection's output as the executors produce it: a byte buffer that
//! knows when to pause and how much it may grow.
//!
//! * `pause_at`: the session's bound on unsent output. Producers stop
//!   between requests and between the keys of a multi-get once the buffer
//!   reaches it ([`Output::should_pause`]), and resume when the socket has
//!   taken it. So many keys or a deep pipeline never pile up in memory.
//! * `room`: how many bytes the buffer may still grow by, from the worker's
//!   connection budget (`conn::budget`). A value is copied into the output
//!   whole (the store's item may change or move once its lock is released,
//!   so a reply cannot be left half-copied), so before a value is encoded
//!   the front end asks [`Output::reserve`]; a value that does not fit is
//!   not sent and the command answers memcached's `SERVER_ERROR out of
//!   memory writing get response` instead.

use std::ops::{Deref, DerefMut};

pub struct Output {
    pub buf: Vec<u8>,
    /// Buffer length at which producers pause (`usize::MAX`: never).
    pub pause_at: usize,
    /// Bytes the buffer may grow past its capacity (`usize::MAX`: no limit).
    pub room: usize,
    /// A value was refused for want of room since the last check.
    refused: bool,
    /// Values refused since the session last counted them.
    pub refusals: u64,
}

impl Deref for Output {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.buf
    }
}

impl DerefMut for Output {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl Output {
    pub fn new(capacity: usize) -> Output {
        Output { buf: Vec::with_capacity(capacity), pause_at: usize::MAX, room: usize::MAX, refused: false, refusals: 0 }
    }

    /// Whether to stop producing until the socket takes what is pending.
    #[inline]
    pub fn should_pause(&self) -> bool {
        self.buf.len() >= self.pause_at
    }

    /// Whether `n` more bytes fit (in spare capacity, or within `room`);
    /// if not, remembers the refusal for [`take_refused`](Self::take_refused).
    ///
    /// Growth is taken from `room` as it happens (the buffer may grow up to
    /// twice what was asked, as a `Vec` does; the session charges the real
    /// capacity to its budget after the request).
    #[inline]
    pub fn reserve(&mut self, n: usize) -> bool {
        let spare = self.buf.capacity() - self.buf.len();
        if n <= spare {
            return true;
        }
        if n - spare > self.room {
            self.refused = true;
            self.refusals += 1;
            return false;
        }
        let before = self.buf.capacity();
        self.buf.reserve(n);
        self.room = self.room.saturating_sub(self.buf.capacity() - before);
        true
    }

    /// Whether a value was refused since the last call.
    #[inline]
    pub fn take_refused(&mut self) -> bool {
        std::mem::take(&mut self.refused)
    }
}

/// Room a value's reply needs besides the value: its header line or packet.
pub const REPLY_HEAD: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_uses_spare_capacity_then_room() {
        let mut out = Output::new(100);
        out.room = 50;
        assert!(out.reserve(100));
        assert!(!out.reserve(151));
        assert!(out.take_refused());
        assert!(out.reserve(150));
        assert!(out.buf.capacity() >= 150);
        assert!(!out.take_refused());
        out.pause_at = 10;
        out.extend_from_slice(&[0; 10]);
        assert!(out.should_pause());
    }
}
