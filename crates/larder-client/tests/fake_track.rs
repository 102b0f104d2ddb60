//! The client's invalidation machinery over real sockets, against a small
//! in-process server that speaks only what the track protocol draft
//! (docs/near-cache.md) gives a client: `track stream` / `OK <sid>`, pushes,
//! `mn`/`MN`, `track attach <sid> noloop`, and `mg`/`ms` on data connections
//! with reads registering (key, sid). It stands in for larder until larder has
//! `track` (the same cases run against larder in tests/live.rs, ignored until
//! then). What it checks is the client: subscription, IV/IA/LOST, loss and
//! resubscription with a new sid, lazy re-attach, the barrier, and the race
//! in which an IV overtakes the reply it invalidates.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use larder_client::{Client, Config, Invalidation, NearConfig};
use larder_testkit::eventually;

#[derive(Default)]
struct State {
    values: HashMap<String, Vec<u8>>,
    next_sid: u64,
    streams: HashMap<u64, TcpStream>,
    tracked: HashMap<String, HashSet<u64>>,
    attaches: Vec<u64>,
    /// Keys whose next read is answered only after an IV for them was pushed.
    overtake: HashSet<String>,
}

#[derive(Clone)]
struct Fake {
    port: u16,
    st: Arc<Mutex<State>>,
}

impl Fake {
    fn start() -> Fake {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let st = Arc::new(Mutex::new(State { next_sid: 1, ..Default::default() }));
        let f = Fake { port, st };
        let f2 = f.clone();
        thread::spawn(move || {
            for s in l.incoming().flatten() {
                let f = f2.clone();
                thread::spawn(move || f.serve(s));
            }
        });
        f
    }

    fn push(st: &mut State, sid: u64, line: &str) {
        if let Some(s) = st.streams.get_mut(&sid) {
            let _ = s.write_all(line.as_bytes());
        }
    }

    /// Another client's write: new value, IV to every sid tracking the key.
    fn write(&self, key: &str, v: &[u8]) {
        let mut st = self.st.lock().unwrap();
        st.values.insert(key.into(), v.to_vec());
        for sid in st.tracked.remove(key).unwrap_or_default() {
            Fake::push(&mut st, sid, &format!("IV {key}\r\n"));
        }
    }

    fn push_all(&self, line: &str) {
        let mut st = self.st.lock().unwrap();
        let sids: Vec<u64> = st.streams.keys().copied().collect();
        for sid in sids {
            Fake::push(&mut st, sid, line);
        }
        if line == "LOST\r\n" || line == "IA\r\n" {
            st.tracked.clear();
        }
    }

    fn kill_streams(&self) {
        let mut st = self.st.lock().unwrap();
        for (_, s) in st.streams.drain() {
            let _ = s.shutdown(Shutdown::Both);
        }
        st.tracked.clear();
    }

    fn serve(&self, s: TcpStream) {
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        let mut attached: Option<u64> = None;
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let words: Vec<&str> = line.trim_end().split(' ').collect();
            match words.as_slice() {
                ["track", "stream"] => {
                    let mut st = self.st.lock().unwrap();
                    let sid = st.next_sid;
                    st.next_sid += 1;
                    w.write_all(format!("OK {sid}\r\n").as_bytes()).unwrap();
                    st.streams.insert(sid, w.try_clone().unwrap());
                    drop(st);
                    // the stream: only mn (answered in order after queued pushes) and close
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            break;
                        }
                        let mut st = self.st.lock().unwrap();
                        if line == "mn\r\n" {
                            Fake::push(&mut st, sid, "MN\r\n");
                        }
                    }
                    let mut st = self.st.lock().unwrap();
                    st.streams.remove(&sid);
                    for v in st.tracked.values_mut() {
                        v.remove(&sid);
                    }
                    return;
                }
                ["track", "attach", sid, "noloop"] => {
                    let sid: u64 = sid.parse().unwrap();
                    let mut st = self.st.lock().unwrap();
                    if st.streams.contains_key(&sid) {
                        attached = Some(sid);
                        st.attaches.push(sid);
                        w.write_all(b"OK\r\n").unwrap();
                    } else {
                        w.write_all(b"CLIENT_ERROR unknown subscriber\r\n").unwrap();
                    }
                }
                ["mg", key, ..] => {
                    let key = key.to_string();
                    let mut st = self.st.lock().unwrap();
                    let Some(v) = st.values.get(&key).cloned() else {
                        w.write_all(b"EN\r\n").unwrap();
                        continue;
                    };
                    if let Some(sid) = attached.filter(|s| st.streams.contains_key(s)) {
                        st.tracked.entry(key.clone()).or_default().insert(sid);
                    }
                    if st.overtake.remove(&key) {
                        // a write lands after this read was served: its IV goes out on
                        // the stream before the (old) reply leaves on this connection
                        for sid in st.tracked.remove(&key).unwrap_or_default() {
                            Fake::push(&mut st, sid, &format!("IV {key}\r\n"));
                        }
                        drop(st);
                        thread::sleep(Duration::from_millis(100));
                    } else {
                        drop(st);
                    }
                    let mut out = format!("VA {} t-1\r\n", v.len()).into_bytes();
                    out.extend_from_slice(&v);
                    out.extend_from_slice(b"\r\n");
                    w.write_all(&out).unwrap();
                }
                ["ms", key, len, ..] => {
                    let mut v = vec![0u8; len.parse::<usize>().unwrap() + 2];
                    r.read_exact(&mut v).unwrap();
                    v.truncate(v.len() - 2);
                    // noloop: a write on an attached connection pushes to the others only
                    let mut st = self.st.lock().unwrap();
                    st.values.insert(key.to_string(), v);
                    for sid in st.tracked.remove(*key).unwrap_or_default() {
                        if Some(sid) != attached {
                            Fake::push(&mut st, sid, &format!("IV {key}\r\n"));
                        }
                    }
                    w.write_all(b"HD\r\n").unwrap();
                }
                _ => w.write_all(b"ERROR\r\n").unwrap(),
            }
        }
    }
}

fn client(f: &Fake) -> Client {
    let mut cfg = Config::new([format!("127.0.0.1:{}", f.port)]);
    cfg.near = Some(NearConfig { max_bytes: 1 << 20, max_ttl: Duration::from_secs(300), invalidation: Invalidation::Tracking });
    let c = Client::new(cfg).unwrap();
    assert!(eventually(Duration::from_secs(5), || c.streams_up()));
    c
}

fn get(c: &Client, k: &str) -> Option<Vec<u8>> {
    c.get(k).unwrap().map(|v| v.to_vec())
}

#[test]
fn iv_from_another_writer_drops_the_copy() {
    let f = Fake::start();
    let c = client(&f);
    f.write("k", b"v1");
    assert_eq!(get(&c, "k").unwrap(), b"v1");
    assert_eq!(get(&c, "k").unwrap(), b"v1");
    assert_eq!(c.metrics().near_hits, 1);
    f.write("k", b"v2");
    c.sync_invalidations(Duration::from_secs(5)).unwrap();
    assert_eq!(get(&c, "k").unwrap(), b"v2");
    let m = c.metrics();
    assert_eq!((m.near_hits, m.server_hits, m.invalidations), (1, 2, 1), "{m:?}");
}

#[test]
fn own_write_invalidates_locally_without_a_push() {
    let f = Fake::start();
    let c = client(&f);
    c.set("o", b"1", 0).unwrap();
    assert_eq!(get(&c, "o").unwrap(), b"1");
    c.set("o", b"2", 0).unwrap();
    assert_eq!(get(&c, "o").unwrap(), b"2");
    c.sync_invalidations(Duration::from_secs(5)).unwrap();
    assert_eq!(c.metrics().invalidations, 0);
}

#[test]
fn an_iv_that_overtakes_its_reply_keeps_the_old_value_out() {
    let f = Fake::start();
    let c = client(&f);
    f.write("race", b"old");
    f.st.lock().unwrap().overtake.insert("race".into());
    // the read returns the old value (it was current when served) ...
    assert_eq!(get(&c, "race").unwrap(), b"old");
    // ... but must not be cached: the IV arrived before it
    f.st.lock().unwrap().values.insert("race".into(), b"new".to_vec());
    assert_eq!(get(&c, "race").unwrap(), b"new");
    let m = c.metrics();
    assert_eq!((m.near_hits, m.server_hits), (0, 2), "{m:?}");
}

#[test]
fn ia_and_lost_flush_and_the_stream_stays() {
    let f = Fake::start();
    let c = client(&f);
    for line in ["IA\r\n", "LOST\r\n"] {
        f.write("a", b"1");
        get(&c, "a");
        assert_eq!(c.near_entries(), 1);
        let flushes = c.metrics().flushes;
        f.push_all(line);
        c.sync_invalidations(Duration::from_secs(5)).unwrap();
        assert_eq!(c.near_entries(), 0, "{line:?}");
        assert_eq!(c.metrics().flushes, flushes + 1);
    }
    assert_eq!(f.st.lock().unwrap().next_sid, 2, "one subscription throughout");
}

#[test]
fn stream_loss_flushes_resubscribes_and_reattaches_lazily() {
    let f = Fake::start();
    let c = client(&f);
    f.write("x", b"1");
    get(&c, "x");
    assert_eq!(c.near_entries(), 1);
    assert_eq!(f.st.lock().unwrap().attaches, vec![1]);
    f.kill_streams();
    assert!(eventually(Duration::from_secs(5), || c.near_entries() == 0), "flushed on loss");
    assert!(eventually(Duration::from_secs(5), || c.streams_up()), "resubscribed");
    // the pooled connection re-attaches to the new sid on its next use ...
    assert_eq!(get(&c, "x").unwrap(), b"1");
    assert_eq!(f.st.lock().unwrap().attaches, vec![1, 2]);
    // ... and its reads register again: another writer's change reaches us
    assert_eq!(get(&c, "x").unwrap(), b"1");
    f.write("x", b"2");
    c.sync_invalidations(Duration::from_secs(5)).unwrap();
    assert_eq!(get(&c, "x").unwrap(), b"2");
}

#[test]
fn the_client_drops_its_own_stream_and_recovers() {
    let f = Fake::start();
    let c = client(&f);
    f.write("d", b"1");
    get(&c, "d");
    let flushes = c.metrics().flushes;
    c.drop_stream(0);
    assert!(eventually(Duration::from_secs(5), || c.metrics().flushes > flushes));
    assert!(eventually(Duration::from_secs(5), || c.streams_up()));
    assert_eq!(c.near_entries(), 0);
}

#[test]
fn concurrent_readers_never_see_a_version_older_than_an_acknowledged_write_after_the_barrier() {
    // Four processes' worth of clients (each its own near cache and stream),
    // each hammered by two threads, while a writer bumps versions of ten keys;
    // after every acknowledged write and a barrier, each reader's next read of
    // the key returns at least that version. The hammering makes replies and
    // IVs cross on the wire all the time, but the window in which an IV is
    // applied before a reply already on the wire is read is microseconds: with
    // the pending-token check removed this test still passed (one run, 150
    // versions). The deterministic guard of that rule is
    // an_iv_that_overtakes_its_reply_keeps_the_old_value_out; this one checks
    // the whole (stream, attach, barrier, own writes) under concurrency.
    let f = Fake::start();
    let readers: Vec<Arc<Client>> = (0..4).map(|_| Arc::new(client(&f))).collect();
    let writer = Client::new(Config::new([format!("127.0.0.1:{}", f.port)])).unwrap();
    for k in 0..10 {
        writer.set(&format!("v{k}"), b"0", 0).unwrap();
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut hammers = Vec::new();
    for r in &readers {
        for t in 0..2u64 {
            let (r, stop) = (r.clone(), stop.clone());
            hammers.push(thread::spawn(move || {
                let mut x = t + 1;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = larder_testkit::splitmix64(x);
                    r.get(&format!("v{}", x % 10)).unwrap();
                }
            }));
        }
    }
    for v in 1u64..=150 {
        let key = format!("v{}", v % 10);
        writer.set(&key, v.to_string().as_bytes(), 0).unwrap();
        for r in &readers {
            r.sync_invalidations(Duration::from_secs(5)).unwrap();
            let got: u64 = String::from_utf8(get(r, &key).unwrap()).unwrap().parse().unwrap();
            assert!(got >= v, "a reader saw version {got} of {key} after {v} was acknowledged");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in hammers {
        h.join().unwrap();
    }
    let near: u64 = readers.iter().map(|r| r.metrics().near_hits).sum();
    let inv: u64 = readers.iter().map(|r| r.metrics().invalidations).sum();
    assert!(near > 0 && inv > 0, "the near caches served ({near}) and were invalidated ({inv})");
}
