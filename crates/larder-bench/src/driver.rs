//! The load loop: a few threads, each running one epoll event loop (mio) over many
//! connections, in closed loop (each connection keeps `depth` requests in flight) or open
//! loop (requests are due at a fixed total rate whatever the server does).
//!
//! Open loop and coordinated omission: each connection has a schedule of intended send times
//! (`interval = connections / rate` apart, connections staggered). Latency is measured from
//! the intended time, not from when the request actually went out, so if the server (or the
//! generator) falls behind, the queueing delay shows up in the percentiles. A timerfd with
//! absolute deadlines wakes the loop with microsecond precision (epoll's own timeout has
//! millisecond granularity).
//!
//! Timing: requests sent during the warm-up are not counted; requests sent in the measurement
//! window are counted when their reply arrives, even after the window (the loop drains for
//! up to `drain` after the end, then counts the rest as timeouts with the time waited as
//! their latency). Throughput is counted requests / window length.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use crate::conn::{Conn, Window};
use crate::stats::Stats;
use crate::workload::{KeySource, Workload};

/// How requests are paced.
#[derive(Clone, Copy, Debug)]
pub enum Pacing {
    /// Each connection keeps `depth` requests in flight.
    Closed { depth: usize },
    /// `rate` requests per second in total; at most `max_inflight` per connection.
    Open { rate: f64, max_inflight: usize },
}

#[derive(Clone, Debug)]
pub struct LoadConfig {
    pub addr: SocketAddr,
    pub connections: usize,
    pub threads: usize,
    pub pacing: Pacing,
    pub warmup: Duration,
    pub duration: Duration,
    /// How long to wait for outstanding replies after the end.
    pub drain: Duration,
    pub seed: u64,
    /// Never sleep in epoll: poll with a zero timeout (burns the generator's CPU, avoids the
    /// wake-up latency of an idle CPU, which on a VM can reach milliseconds).
    pub busy_poll: bool,
    /// Open loop: wake up at most once per quantum (ns) and send everything due by then
    /// (0 = wake for every request). Fewer wake-ups per request, at the price of up to one
    /// quantum of (measured) delay.
    pub quantum_ns: u64,
}

/// Monotonic clock in ns (CLOCK_MONOTONIC, the clock timerfd uses).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs the load and returns the merged stats. Sequential key sources end when every key has
/// been sent and answered (`duration` is then an upper bound).
pub fn run(cfg: &LoadConfig, w: Arc<Workload>) -> Result<Stats, String> {
    let threads = cfg.threads.clamp(1, cfg.connections.max(1));
    let barrier = Arc::new(Barrier::new(threads));
    let start = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for t in 0..threads {
        let (cfg, w, barrier, start) = (cfg.clone(), w.clone(), barrier.clone(), start.clone());
        // connections t, t+threads, t+2*threads, ...
        let ids: Vec<usize> = (t..cfg.connections).step_by(threads).collect();
        handles.push(std::thread::spawn(move || thread_main(&cfg, &w, &ids, &barrier, &start)));
    }
    let mut total = Stats::new();
    let mut err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(s)) => total.merge(&s),
            Ok(Err(e)) => err = Some(e),
            Err(_) => err = Some("generator thread panicked".to_string()),
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(total),
    }
}

struct Timer {
    fd: OwnedFd,
}

impl Timer {
    fn new() -> Result<Timer, String> {
        // SAFETY: plain syscall; the fd is owned below.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(format!("timerfd_create: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: fd is a fresh descriptor we own.
        Ok(Timer { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    fn arm_at(&self, ns: u64) {
        let ns = ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ },
        };
        // SAFETY: valid fd and itimerspec.
        unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
    }

    fn drain(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into a local buffer.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, 8) };
    }
}

const TIMER: Token = Token(usize::MAX - 1);

fn thread_main(cfg: &LoadConfig, w: &Workload, ids: &[usize], barrier: &Barrier, start_at: &AtomicU64) -> Result<Stats, String> {
    // Timer slack of 1 ns so timerfd wake-ups are not batched by the kernel (default 50 us).
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let mut poll = Poll::new().map_err(|e| e.to_string())?;
    let timer = Timer::new()?;
    poll.registry()
        .register(&mut SourceFd(&timer.fd.as_raw_fd()), TIMER, Interest::READABLE)
        .map_err(|e| e.to_string())?;
    let total_conns = cfg.connections as u64;
    let mut conns = Vec::with_capacity(ids.len());
    let mut connect_err = None;
    for (i, &id) in ids.iter().enumerate() {
        let seq = match w.keys {
            KeySource::Sequential { n } => (n * id as u64 / total_conns, n * (id as u64 + 1) / total_conns),
            KeySource::Random(_) => (0, 0),
        };
        match std::net::TcpStream::connect_timeout(&cfg.addr, Duration::from_secs(5)) {
            Ok(s) => {
                // (plain, or TLS with its handshake done: `--tls-ca`)
                let mut s = crate::tls::Stream::open(s).map_err(|e| format!("connect {}: {e}", cfg.addr))?;
                poll.registry()
                    .register(s.socket(), Token(i), Interest::READABLE | Interest::WRITABLE)
                    .map_err(|e| e.to_string())?;
                conns.push(Conn::new(s, cfg.seed.wrapping_add(id as u64 * 7919), seq));
            }
            Err(e) => connect_err = Some(format!("connect {}: {e}", cfg.addr)),
        }
    }
    // All threads start together.
    if barrier.wait().is_leader() {
        start_at.store(now_ns() + 1_000_000, Ordering::SeqCst);
    }
    barrier.wait();
    if let Some(e) = connect_err {
        return Err(e);
    }
    let t0 = start_at.load(Ordering::SeqCst);
    let sequential = matches!(w.keys, KeySource::Sequential { .. });
    let measure_start = if sequential { t0 } else { t0 + cfg.warmup.as_nanos() as u64 };
    let end = measure_start + cfg.duration.as_nanos() as u64;
    let win = Window { start: measure_start, end };
    let drain_deadline = end + cfg.drain.as_nanos() as u64;
    if let Pacing::Open { rate, .. } = cfg.pacing {
        let interval = (total_conns as f64 * 1e9 / rate) as u64;
        for (i, c) in conns.iter_mut().enumerate() {
            c.next_send_ns = t0 + interval * ids[i] as u64 / total_conns;
        }
    }
    let interval = match cfg.pacing {
        Pacing::Open { rate, .. } => (total_conns as f64 * 1e9 / rate).max(1.0) as u64,
        Pacing::Closed { .. } => 0,
    };
    let mut st = Stats::new();
    let mut events = Events::with_capacity(1024);
    while now_ns() < t0 {
        std::hint::spin_loop();
    }
    let mut armed_for = 0u64;
    loop {
        let now = now_ns();
        let sending = now < end;
        let mut next_due = u64::MAX;
        let mut busy = false;
        for c in conns.iter_mut() {
            if c.dead {
                continue;
            }
            if sending {
                match cfg.pacing {
                    Pacing::Closed { depth } => {
                        while c.pending.len() < depth && c.issue(w, now) {}
                    }
                    Pacing::Open { max_inflight, .. } => {
                        while c.next_send_ns <= now && c.pending.len() < max_inflight {
                            if !c.issue(w, c.next_send_ns) {
                                break;
                            }
                            if c.next_send_ns >= win.start && c.next_send_ns < win.end {
                                st.send_lag.saturating_record((now - c.next_send_ns).max(1));
                            }
                            c.next_send_ns += interval;
                        }
                        if c.pending.len() < max_inflight {
                            next_due = next_due.min(c.next_send_ns);
                        }
                    }
                }
            }
            if c.has_output() && c.writable && c.flush().is_err() {
                st.conn_errors += 1;
                c.dead = true;
                continue;
            }
            if !c.pending.is_empty() || (sending && !c.exhausted(w)) {
                busy = true;
            }
        }
        if !busy {
            break;
        }
        if now >= drain_deadline {
            for c in &conns {
                for p in &c.pending {
                    if p.start_ns >= win.start && p.start_ns < win.end {
                        st.timeouts += 1;
                        st.record_latency(now - p.start_ns);
                    }
                }
            }
            break;
        }
        // Sleep until I/O, the next due request, the end of the window or the drain deadline.
        let mut wake = if sending { end } else { drain_deadline };
        if next_due < wake {
            wake = next_due;
            if cfg.quantum_ns > 0 {
                wake = t0 + (wake - t0).div_ceil(cfg.quantum_ns) * cfg.quantum_ns;
            }
        }
        let timeout = if cfg.busy_poll {
            Some(Duration::ZERO)
        } else if wake > now + 2_000_000 {
            // far away: the epoll timeout (ms granularity) is precise enough
            Some(Duration::from_nanos((wake - now).min(100_000_000)))
        } else {
            if armed_for != wake {
                timer.arm_at(wake);
                armed_for = wake;
            }
            None
        };
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("poll: {e}"));
            }
        }
        for ev in events.iter() {
            if ev.token() == TIMER {
                timer.drain();
                armed_for = 0;
                continue;
            }
            let c = &mut conns[ev.token().0];
            if c.dead {
                continue;
            }
            if ev.is_writable() {
                c.writable = true;
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                c.on_readable(w, &win, &mut st, now_ns);
            }
        }
    }
    st.seconds = if sequential { (now_ns().min(end) - t0) as f64 / 1e9 } else { cfg.duration.as_secs_f64() };
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::{KeyDist, SizeDist};
    use crate::workload::{Mix, OpKind, Values};
    use std::io::{BufRead, BufReader, Write};

    /// A fake server answering `get` with the right value, except every `bad_every`-th reply
    /// which has one byte flipped; replies are written in small pieces to force split reads.
    fn fake_server(bad_every: u64) -> SocketAddr {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(s) = s else { return };
                std::thread::spawn(move || {
                    let values = Values::new(100);
                    let mut w = s.try_clone().unwrap();
                    let r = BufReader::new(s);
                    let mut n = 0u64;
                    for line in r.lines() {
                        let Ok(line) = line else { return };
                        let mut out = Vec::new();
                        for key in line.split(' ').skip(1) {
                            n += 1;
                            let mut v = values.value(key.as_bytes(), 100).to_vec();
                            if n % bad_every == 0 {
                                v[50] ^= 1;
                            }
                            out.extend_from_slice(format!("VALUE {key} 0 100\r\n").as_bytes());
                            out.extend_from_slice(&v);
                            out.extend_from_slice(b"\r\n");
                        }
                        out.extend_from_slice(b"END\r\n");
                        for piece in out.chunks(7) {
                            if w.write_all(piece).is_err() {
                                return;
                            }
                            let _ = w.flush();
                        }
                    }
                });
            }
        });
        addr
    }

    fn load(addr: SocketAddr, pacing: Pacing, mix: OpKind) -> Stats {
        let w = Workload {
            key_size: 12,
            keys: KeySource::Random(KeyDist::Uniform { n: 1000 }),
            sizes: SizeDist::Fixed(100),
            mix: Mix::single(mix),
            multiget_keys: 5,
            verify_every: 1,
            values: Values::new(100),
        };
        let cfg = LoadConfig {
            addr,
            connections: 4,
            threads: 2,
            pacing,
            warmup: Duration::from_millis(50),
            duration: Duration::from_millis(300),
            drain: Duration::from_secs(2),
            seed: 5,
            busy_poll: false,
            quantum_ns: 0,
        };
        run(&cfg, Arc::new(w)).unwrap()
    }

    #[test]
    fn counts_hits_and_detects_corruption_through_split_reads() {
        let addr = fake_server(10);
        let st = load(addr, Pacing::Closed { depth: 4 }, OpKind::MultiGet);
        assert!(st.ops > 10, "ops {}", st.ops);
        assert_eq!(st.keys, st.ops * 5);
        assert_eq!(st.misses, 0);
        assert_eq!(st.protocol_errors + st.conn_errors + st.timeouts, 0);
        assert!(st.verified > 0);
        let share = st.corrupt as f64 / st.verified as f64;
        assert!((0.05..0.15).contains(&share), "corrupt {} of {}", st.corrupt, st.verified);
    }

    #[test]
    fn clean_values_are_not_flagged_and_open_loop_holds_its_rate() {
        let addr = fake_server(u64::MAX);
        let st = load(addr, Pacing::Open { rate: 2000.0, max_inflight: 64 }, OpKind::Get);
        assert_eq!(st.corrupt, 0);
        assert!(st.verified > 0);
        // 2000/s over a 0.3 s window
        assert!((500..=700).contains(&st.ops), "ops {}", st.ops);
        assert_eq!(st.hits, st.ops);
    }
}
