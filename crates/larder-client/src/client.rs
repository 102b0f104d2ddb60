//! The client: configuration, routing by ketama, and the operations (get,
//! set, delete, multi-get, get-or-load) with the near cache in front when it
//! is configured.

use std::collections::HashMap;
use std::net::ToSocketAddrs;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::conn::{Conn, Reply};
use crate::flight::{Flights, Role};
use crate::ketama::{Continuum, KeyHash};
use crate::metrics::{inc, Metrics, MetricsSnapshot};
use crate::near::{NearCache, Value};
use crate::node::Node;
use crate::pool::Pooled;
use crate::proto::{check_key, Header, MetaFlags};
use crate::stream::StreamMode;
use crate::Error;

/// How the near cache is kept correct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invalidation {
    /// larder's tracking mode: the server pushes `IV` for every key this
    /// process read. The default.
    Tracking,
    /// larder's broadcast mode for these key prefixes (empty: all keys).
    Broadcast(Vec<String>),
    /// None: entries live until their TTL (at most `max_ttl`) and may be stale
    /// meanwhile (Caffeine-alone behaviour; for servers without `track`).
    TtlOnly,
}

#[derive(Clone, Debug)]
pub struct NearConfig {
    /// Bytes of keys + values + per-entry overhead.
    pub max_bytes: u64,
    /// No entry lives longer than this (nor longer than the server's TTL).
    pub max_ttl: Duration,
    pub invalidation: Invalidation,
}

#[derive(Clone, Debug)]
pub struct Config {
    /// `host:port`, in the order the other clients of the cluster list them.
    pub servers: Vec<String>,
    pub hash: KeyHash,
    /// Connections per node at most.
    pub pool_size: usize,
    /// Connect and I/O timeout; also the longest wait for a pooled connection.
    pub timeout: Duration,
    /// The lease `get_or_load` takes on a miss (`mg ... N<lease>`), seconds.
    pub lease_ttl: u32,
    /// How long `get_or_load` waits for another process's load before loading itself.
    pub lease_wait: Duration,
    pub near: Option<NearConfig>,
}

impl Config {
    pub fn new<S: Into<String>>(servers: impl IntoIterator<Item = S>) -> Config {
        Config {
            servers: servers.into_iter().map(Into::into).collect(),
            hash: KeyHash::default(),
            pool_size: 8,
            timeout: Duration::from_secs(2),
            lease_ttl: 30,
            lease_wait: Duration::from_secs(5),
            near: None,
        }
    }
}

pub struct Client {
    nodes: Vec<Arc<Node>>,
    ring: Continuum,
    near: Option<Arc<NearCache>>,
    tracked: bool,
    flights: Flights,
    metrics: Arc<Metrics>,
    stop: Arc<AtomicBool>,
    cfg: Config,
}

/// How a read ends up in the near cache: the token taken before sending, and
/// the node generation it was taken under (`None`: TTL-only, no stream).
struct Ticket {
    token: u64,
}

impl Client {
    pub fn new(cfg: Config) -> Result<Client, Error> {
        if cfg.servers.is_empty() {
            return Err(Error::Config("no servers".into()));
        }
        let metrics = Arc::new(Metrics::default());
        let mut hostports = Vec::new();
        let mut nodes = Vec::new();
        for s in &cfg.servers {
            let (host, port) = s.rsplit_once(':').ok_or_else(|| Error::Config(format!("{s}: want host:port")))?;
            let port: u16 = port.parse().map_err(|_| Error::Config(format!("{s}: bad port")))?;
            let addr = s.to_socket_addrs()?.next().ok_or_else(|| Error::Config(format!("{s}: no address")))?;
            hostports.push((host.to_string(), port));
            nodes.push(Arc::new(Node::new(s.clone(), addr, cfg.pool_size, cfg.timeout)));
        }
        let ring = Continuum::new(&hostports, cfg.hash);
        let stop = Arc::new(AtomicBool::new(false));
        let near = cfg.near.as_ref().map(|n| Arc::new(NearCache::new(n.max_bytes, n.max_ttl, metrics.clone())));
        let mode = match cfg.near.as_ref().map(|n| &n.invalidation) {
            Some(Invalidation::Tracking) => Some(StreamMode::Tracking),
            Some(Invalidation::Broadcast(p)) => Some(StreamMode::Broadcast(p.clone())),
            _ => None,
        };
        if let (Some(mode), Some(near)) = (&mode, &near) {
            for node in &nodes {
                let (node, near, metrics, mode, stop, t) = (node.clone(), near.clone(), metrics.clone(), mode.clone(), stop.clone(), cfg.timeout);
                std::thread::Builder::new()
                    .name(format!("larder-stream {}", node.name))
                    .spawn(move || node.run_stream(near, metrics, mode, stop, t))?;
            }
        }
        Ok(Client { nodes, ring, near, tracked: mode.is_some(), flights: Flights::default(), metrics, stop, cfg })
    }

    /// The index (in `Config::servers`) of the node `key` lives on.
    pub fn node_index(&self, key: &str) -> usize {
        self.ring.server_for(key.as_bytes())
    }

    fn node(&self, key: &str) -> &Arc<Node> {
        &self.nodes[self.node_index(key)]
    }

    pub fn metrics(&self) -> MetricsSnapshot {
        self.metrics.snapshot()
    }

    /// The near cache's size in bytes (0 without one).
    pub fn near_bytes(&self) -> u64 {
        self.near.as_ref().map_or(0, |n| n.weighted_size())
    }

    pub fn near_entries(&self) -> u64 {
        self.near.as_ref().map_or(0, |n| n.entry_count())
    }

    /// (open, idle) pooled connections of node `i`.
    pub fn pool_counts(&self, i: usize) -> (usize, usize) {
        self.nodes[i].pool.counts()
    }

    /// True when every node's invalidation stream is subscribed.
    pub fn streams_up(&self) -> bool {
        self.tracked && self.nodes.iter().all(|n| n.live_generation().is_some())
    }

    /// Waits until each node's stream has delivered every invalidation for
    /// writes acknowledged before this call (the `mn` barrier).
    pub fn sync_invalidations(&self, timeout: Duration) -> Result<(), Error> {
        for n in &self.nodes {
            n.barrier(timeout)?;
        }
        Ok(())
    }

    /// Closes node `i`'s invalidation stream, as a network failure would (tests
    /// and fault drills): the node flushes the near cache and resubscribes.
    pub fn drop_stream(&self, i: usize) {
        self.nodes[i].close_stream();
    }

    /// Prepares a read of `key` on `conn` for the near cache: attaches the
    /// connection to the node's stream if needed and takes a pending token.
    /// `None`: this read must not fill the near cache.
    fn ticket(&self, node: &Node, conn: &mut Conn, key: &str) -> Result<Option<Ticket>, Error> {
        let Some(near) = &self.near else { return Ok(None) };
        if !self.tracked {
            return Ok(Some(Ticket { token: near.begin(key) }));
        }
        let Some(gen) = node.ensure_attached(conn)? else { return Ok(None) };
        let token = near.begin(key);
        // A loss between the attach and the token would have flushed before
        // the token existed: the token must not outlive that generation.
        if node.live_generation() != Some(gen) {
            near.abandon(key, token);
            return Ok(None);
        }
        Ok(Some(Ticket { token }))
    }

    fn settle(&self, key: &str, ticket: Option<Ticket>, value: Option<(&Value, &MetaFlags)>) {
        if let (Some(near), Some(t)) = (&self.near, ticket) {
            match value {
                Some((v, f)) if !f.stale && !f.z && !f.win => {
                    near.complete(key, t.token, v.clone(), f.ttl);
                }
                _ => near.abandon(key, t.token),
            }
        }
    }

    pub fn get(&self, key: &str) -> Result<Option<Value>, Error> {
        check_key(key)?;
        if let Some(v) = self.near.as_ref().and_then(|n| n.get(key)) {
            inc(&self.metrics.near_hits);
            return Ok(Some(v));
        }
        let node = self.node(key);
        let mut ticket = None;
        let reply = self.read_retrying(node, |c| {
            c.run(|conn| {
                // A failed first attempt's token goes before the retry takes its own.
                self.settle(key, ticket.take(), None);
                ticket = self.ticket(node, conn, key)?;
                conn.send(format!("mg {key} v t f\r\n").as_bytes())?;
                match conn.reply()? {
                    Reply::Other(h) if h != Header::En => Err(Error::Protocol(format!("unexpected reply to mg: {h:?}"))),
                    r => Ok(r),
                }
            })
        });
        match reply {
            Ok(Reply::Value(v, flags)) => {
                let v: Value = v.into();
                inc(&self.metrics.server_hits);
                self.settle(key, ticket, Some((&v, &flags)));
                Ok(Some(v))
            }
            Ok(Reply::Other(_)) => {
                inc(&self.metrics.misses);
                self.settle(key, ticket, None);
                Ok(None)
            }
            Err(e) => {
                self.settle(key, ticket, None);
                Err(e)
            }
        }
    }

    /// Runs a read (`f`, which may run twice) on a pooled connection of
    /// `node`. If it fails with an I/O error on a connection that had served
    /// earlier requests (the server restarted or closed it between the
    /// checkout's liveness check and our send), it runs once more on another
    /// connection: a read is safe to repeat, and the caller should not see a
    /// failure that a fresh connection would not have had. Writes are never
    /// retried this way (their bytes may have reached the server), and
    /// neither is a read on a connection opened for it (the server is
    /// really unreachable or failing).
    fn read_retrying<T>(&self, node: &Node, mut f: impl FnMut(&mut Pooled<'_>) -> Result<T, Error>) -> Result<T, Error> {
        let mut c = node.pool.checkout()?;
        match f(&mut c) {
            Err(Error::Io(_)) if c.reused => {
                drop(c);
                inc(&self.metrics.retries);
                let mut c = node.pool.checkout()?;
                f(&mut c)
            }
            r => r,
        }
    }

    /// Stores `value` with a TTL in seconds (0: none).
    pub fn set(&self, key: &str, value: &[u8], ttl: u32) -> Result<(), Error> {
        check_key(key)?;
        self.meta_set(key, value, ttl, None, |reply| match reply {
            Reply::Other(Header::Hd(_)) => Some(Ok(())),
            Reply::Other(Header::Ns) => Some(Err(Error::NotStored)),
            _ => None,
        })
    }

    /// Sends `ms key <len> T<ttl>` (with `C<cas>` if given) and reads the
    /// reply with `read`; a reply `read` does not expect (`None`) marks the
    /// connection broken. The near cache drops its copy of `key` before the
    /// write and again after it: writes on attached connections are
    /// `noloop`, so a read that raced the write cannot leave the old value,
    /// and the near cache never holds what was written, only what a tracked
    /// read returns.
    fn meta_set<T>(
        &self,
        key: &str,
        value: &[u8],
        ttl: u32,
        cas: Option<u64>,
        read: impl FnOnce(&Reply) -> Option<Result<T, Error>>,
    ) -> Result<T, Error> {
        self.local_invalidate(key);
        let node = self.node(key);
        let mut c = node.pool.checkout()?;
        let r = c.run(|conn| {
            let mut cmd = format!("ms {key} {} T{ttl}", value.len()).into_bytes();
            if let Some(cas) = cas {
                cmd.extend_from_slice(format!(" C{cas}").as_bytes());
            }
            cmd.extend_from_slice(b"\r\n");
            cmd.extend_from_slice(value);
            cmd.extend_from_slice(b"\r\n");
            conn.send(&cmd)?;
            conn.reply()
        });
        self.local_invalidate(key);
        let reply = r?;
        read(&reply).unwrap_or_else(|| {
            c.broken = true;
            Err(Error::Protocol(format!("unexpected reply to ms: {reply:?}")))
        })
    }

    /// Deletes `key`; true if it was there.
    pub fn delete(&self, key: &str) -> Result<bool, Error> {
        check_key(key)?;
        self.local_invalidate(key);
        let node = self.node(key);
        let mut c = node.pool.checkout()?;
        let r = c.run(|conn| {
            conn.send(format!("md {key}\r\n").as_bytes())?;
            conn.reply()
        });
        self.local_invalidate(key);
        match r? {
            Reply::Other(Header::Hd(_)) => Ok(true),
            Reply::Other(Header::Nf) => Ok(false),
            other => {
                c.broken = true;
                Err(Error::Protocol(format!("unexpected reply to md: {other:?}")))
            }
        }
    }

    fn local_invalidate(&self, key: &str) {
        if let Some(n) = &self.near {
            n.invalidate(key);
        }
    }

    /// Fetches many keys: near hits first, the rest pipelined per node (one
    /// batch of `mg ... q k` and an `mn` per node). Missing keys are absent.
    pub fn get_multi(&self, keys: &[&str]) -> Result<HashMap<String, Value>, Error> {
        let mut out = HashMap::with_capacity(keys.len());
        let mut per_node: Vec<Vec<&str>> = vec![Vec::new(); self.nodes.len()];
        for &k in keys {
            check_key(k)?;
            if out.contains_key(k) {
                continue;
            }
            if let Some(v) = self.near.as_ref().and_then(|n| n.get(k)) {
                inc(&self.metrics.near_hits);
                out.insert(k.to_string(), v);
            } else if !per_node[self.node_index(k)].contains(&k) {
                per_node[self.node_index(k)].push(k);
            }
        }
        for (i, ks) in per_node.iter().enumerate().filter(|(_, ks)| !ks.is_empty()) {
            let node = &self.nodes[i];
            let mut tickets: HashMap<&str, Option<Ticket>> = HashMap::new();
            let res = self.read_retrying(node, |c| {
                c.run(|conn| {
                    // A failed first attempt's tokens go before the retry takes its own.
                    for (k, t) in tickets.drain() {
                        self.settle(k, t, None);
                    }
                    let mut cmd = Vec::new();
                    for &k in ks {
                        tickets.insert(k, self.ticket(node, conn, k)?);
                        cmd.extend_from_slice(format!("mg {k} v t f k q\r\n").as_bytes());
                    }
                    cmd.extend_from_slice(b"mn\r\n");
                    conn.send(&cmd)?;
                    loop {
                        match conn.reply()? {
                            Reply::Value(v, flags) => {
                                let key = flags.key.clone().ok_or_else(|| Error::Protocol("mg k reply without key".into()))?;
                                let Some(&k) = ks.iter().find(|&&k| k == key) else {
                                    return Err(Error::Protocol(format!("reply for a key not asked: {key}")));
                                };
                                let v: Value = v.into();
                                inc(&self.metrics.server_hits);
                                self.settle(k, tickets.remove(k).flatten(), Some((&v, &flags)));
                                out.insert(key, v);
                            }
                            Reply::Other(Header::Mn) => return Ok(()),
                            Reply::Other(h) => return Err(Error::Protocol(format!("unexpected reply in multi-get: {h:?}"))),
                        }
                    }
                })
            });
            for (k, t) in tickets.drain() {
                if res.is_ok() {
                    inc(&self.metrics.misses);
                }
                self.settle(k, t, None);
            }
            res?;
        }
        Ok(out)
    }

    /// The value of `key`, loading it with `loader` on a miss and storing it
    /// with `ttl` seconds. One loader per key in this process (other callers
    /// wait for it), and one across processes: the server's lease (`mg N`)
    /// lets one client win (`W`) while the others (`Z`) wait for its value.
    pub fn get_or_load<F, E>(&self, key: &str, ttl: u32, loader: F) -> Result<Value, Error>
    where
        F: FnOnce() -> Result<Vec<u8>, E>,
        E: std::fmt::Display,
    {
        check_key(key)?;
        if let Some(v) = self.near.as_ref().and_then(|n| n.get(key)) {
            inc(&self.metrics.near_hits);
            return Ok(v);
        }
        let guard = match self.flights.join(key) {
            Role::Follower(f) => return f.wait().map_err(Error::Load),
            Role::Leader(g) => g,
        };
        let r = self.lead_load(key, ttl, loader);
        guard.finish(r.as_ref().map(|v| v.clone()).map_err(|e| e.to_string()));
        r
    }

    fn lead_load<F, E>(&self, key: &str, ttl: u32, loader: F) -> Result<Value, Error>
    where
        F: FnOnce() -> Result<Vec<u8>, E>,
        E: std::fmt::Display,
    {
        let node = self.node(key);
        let deadline = Instant::now() + self.cfg.lease_wait;
        let mut pause = Duration::from_millis(2);
        loop {
            let mut c = node.pool.checkout()?;
            let (ticket, reply) = c.run(|conn| {
                let ticket = self.ticket(node, conn, key)?;
                conn.send(format!("mg {key} v c t N{}\r\n", self.cfg.lease_ttl).as_bytes())?;
                Ok((ticket, conn.reply()?))
            })?;
            drop(c);
            let (v, flags) = match reply {
                Reply::Value(v, f) => (Value::from(v), f),
                other => {
                    self.settle(key, ticket, None);
                    return Err(Error::Protocol(format!("unexpected reply to mg N: {other:?}")));
                }
            };
            self.settle(key, ticket, Some((&v, &flags)));
            // The lease's CAS gates the store: the stub `W` created (or the
            // stale item it marked), or, when we give up waiting on a `Z`,
            // whatever the absent winner left. A write by anyone after this
            // reply changes it, and our older value then loses.
            let lease_cas = || flags.cas.ok_or_else(|| Error::Protocol("mg N reply without its CAS (c)".into()));
            if flags.win {
                inc(&self.metrics.misses);
                return self.load_and_store(key, ttl, lease_cas()?, loader);
            }
            if !flags.z || flags.stale {
                // A value (fresh, or stale while someone else refreshes it).
                inc(&self.metrics.server_hits);
                return Ok(v);
            }
            // Another process holds the lease: wait for its value, then load
            // ourselves if it never comes (it may have died).
            if Instant::now() >= deadline {
                inc(&self.metrics.misses);
                return self.load_and_store(key, ttl, lease_cas()?, loader);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    /// Loads and stores under the lease: `ms ... C<cas>`, so a `set` (or
    /// delete) by another process between our lease and our store wins over
    /// the value we loaded before it. On `EX`/`NF` the caller still gets the
    /// loaded value (it was current when the load began, so returning it is
    /// no staler than a read that raced that write), but it is stored
    /// nowhere: not on the server, not in the near cache. Counted in
    /// `lease_lost`.
    fn load_and_store<F, E>(&self, key: &str, ttl: u32, cas: u64, loader: F) -> Result<Value, Error>
    where
        F: FnOnce() -> Result<Vec<u8>, E>,
        E: std::fmt::Display,
    {
        inc(&self.metrics.loads);
        match loader() {
            Ok(v) => {
                if !self.store_under_lease(key, &v, ttl, cas)? {
                    inc(&self.metrics.lease_lost);
                }
                Ok(v.into())
            }
            Err(e) => {
                // Give the lease back so another caller can try at once; only
                // our own stub (same CAS), never a value someone stored meanwhile.
                let _ = self.delete_if_cas(key, cas);
                Err(Error::Load(e.to_string()))
            }
        }
    }

    /// `ms key <len> T<ttl> C<cas>`: true if stored, false if the lease was
    /// lost (`EX`: someone wrote the key; `NF`: it was deleted or expired).
    fn store_under_lease(&self, key: &str, value: &[u8], ttl: u32, cas: u64) -> Result<bool, Error> {
        self.meta_set(key, value, ttl, Some(cas), |reply| match reply {
            Reply::Other(Header::Hd(_)) => Some(Ok(true)),
            Reply::Other(Header::Ex | Header::Nf) => Some(Ok(false)),
            Reply::Other(Header::Ns) => Some(Err(Error::NotStored)),
            _ => None,
        })
    }

    /// `md key C<cas>`: deletes only if the item is still the one with `cas`.
    fn delete_if_cas(&self, key: &str, cas: u64) -> Result<bool, Error> {
        self.local_invalidate(key);
        let node = self.node(key);
        let mut c = node.pool.checkout()?;
        let r = c.run(|conn| {
            conn.send(format!("md {key} C{cas}\r\n").as_bytes())?;
            conn.reply()
        });
        self.local_invalidate(key);
        match r? {
            Reply::Other(Header::Hd(_)) => Ok(true),
            Reply::Other(Header::Nf | Header::Ex) => Ok(false),
            other => {
                c.broken = true;
                Err(Error::Protocol(format!("unexpected reply to md C: {other:?}")))
            }
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        for n in &self.nodes {
            n.close_stream();
        }
    }
}
