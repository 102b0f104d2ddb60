//! One server of the cluster: its connection pool and, with a tracked near
//! cache, its invalidation stream (a thread per node that subscribes, applies
//! pushes, and on any loss flushes the near cache and resubscribes). Pool
//! connections attach to the stream's current sid lazily: each remembers the
//! stream generation it attached to and re-attaches when that changes.

use std::io::BufReader;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::conn::Conn;
use crate::metrics::{inc, Metrics};
use crate::near::NearCache;
use crate::pool::Pool;
use crate::stream::{self, Sink, StreamMode};
use crate::Error;

pub struct Node {
    pub name: String,
    pub addr: SocketAddr,
    pub pool: Pool,
    stream: Mutex<StreamState>,
    stream_changed: Condvar,
    /// The stream socket's write half (for `mn` and for closing it).
    writer: Mutex<Option<TcpStream>>,
}

#[derive(Default)]
struct StreamState {
    /// Bumped on every subscribe and every loss.
    gen: u64,
    sid: Option<u64>,
    mn_sent: u64,
    mn_seen: u64,
}

impl Node {
    pub fn new(name: String, addr: SocketAddr, pool_size: usize, timeout: Duration) -> Node {
        Node {
            name,
            addr,
            pool: Pool::new(addr, pool_size, timeout),
            stream: Mutex::new(StreamState::default()),
            stream_changed: Condvar::new(),
            writer: Mutex::new(None),
        }
    }

    /// The current stream generation, if a stream is up.
    pub fn live_generation(&self) -> Option<u64> {
        let st = self.stream.lock().unwrap();
        st.sid.map(|_| st.gen)
    }

    /// Makes `conn` attached to the live stream. `Some(gen)`: reads on it now
    /// register for that generation; `None`: no stream (reads must not fill
    /// the near cache).
    pub fn ensure_attached(&self, conn: &mut Conn) -> Result<Option<u64>, Error> {
        let (gen, sid) = {
            let st = self.stream.lock().unwrap();
            match st.sid {
                Some(sid) => (st.gen, sid),
                None => return Ok(None),
            }
        };
        if conn.attached_gen == gen {
            return Ok(Some(gen));
        }
        conn.send(format!("track attach {sid} noloop\r\n").as_bytes())?;
        let line = conn.line()?;
        if line == b"OK" {
            conn.attached_gen = gen;
            Ok(Some(gen))
        } else {
            // The sid just died (its stream thread will resubscribe): no tracking now.
            Ok(None)
        }
    }

    /// Waits until every invalidation for writes acknowledged before this call
    /// has been applied (`mn` on the stream, then its `MN`). Err if no stream
    /// is up or it is lost meanwhile.
    pub fn barrier(&self, timeout: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + timeout;
        let (gen, target) = {
            let mut w = self.writer.lock().unwrap();
            let ws = w.as_mut().ok_or(Error::NoStream)?;
            let mut st = self.stream.lock().unwrap();
            use std::io::Write;
            ws.write_all(b"mn\r\n")?;
            st.mn_sent += 1;
            (st.gen, st.mn_sent)
        };
        let mut st = self.stream.lock().unwrap();
        loop {
            if st.gen != gen {
                return Err(Error::NoStream);
            }
            if st.mn_seen >= target {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::PoolTimeout);
            }
            st = self.stream_changed.wait_timeout(st, deadline - now).unwrap().0;
        }
    }

    /// Closes the stream socket (the stream thread sees EOF).
    pub fn close_stream(&self) {
        if let Some(w) = self.writer.lock().unwrap().as_ref() {
            let _ = w.shutdown(Shutdown::Both);
        }
    }

    /// The stream thread: subscribe, consume, and on every end flush and retry
    /// (backing off while the server refuses or is away), until `stop`.
    pub fn run_stream(self: Arc<Node>, near: Arc<NearCache>, metrics: Arc<Metrics>, mode: StreamMode, stop: Arc<AtomicBool>, timeout: Duration) {
        let mut backoff = Duration::from_millis(10);
        while !stop.load(Ordering::Acquire) {
            match self.subscribe(&mode, timeout) {
                Ok((mut reader, sid)) => {
                    backoff = Duration::from_millis(10);
                    {
                        let mut st = self.stream.lock().unwrap();
                        st.gen += 1;
                        st.sid = Some(sid);
                    }
                    if stop.load(Ordering::Acquire) {
                        self.close_stream();
                    }
                    let sink = NodeSink { node: &self, near: &near, metrics: &metrics };
                    let _why = stream::consume(&mut reader, &sink);
                    self.lost(&near);
                }
                Err(_) => {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    fn subscribe(&self, mode: &StreamMode, timeout: Duration) -> Result<(BufReader<TcpStream>, u64), Error> {
        let s = TcpStream::connect_timeout(&self.addr, timeout)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        let mut w = s.try_clone()?;
        let mut r = BufReader::new(s);
        let sid = stream::handshake(&mut r, &mut w, mode)?;
        // A push stream is quiet for as long as nothing changes.
        r.get_ref().set_read_timeout(None)?;
        *self.writer.lock().unwrap() = Some(w);
        Ok((r, sid))
    }

    /// The stream ended: no sid (reads stop filling the near cache), then the
    /// whole near cache and every pending token go.
    fn lost(&self, near: &NearCache) {
        *self.writer.lock().unwrap() = None;
        {
            let mut st = self.stream.lock().unwrap();
            st.gen += 1;
            st.sid = None;
        }
        self.stream_changed.notify_all();
        near.flush();
    }
}

struct NodeSink<'a> {
    node: &'a Node,
    near: &'a NearCache,
    metrics: &'a Metrics,
}

impl Sink for NodeSink<'_> {
    fn invalidate(&self, key: &[u8]) {
        inc(&self.metrics.invalidations);
        // Only text keys are ever cached; a key that is not UTF-8 cannot be here.
        if let Ok(k) = std::str::from_utf8(key) {
            self.near.invalidate(k);
        }
    }
    fn flush(&self) {
        self.near.flush();
    }
    fn barrier(&self) {
        self.node.stream.lock().unwrap().mn_seen += 1;
        self.node.stream_changed.notify_all();
    }
}
