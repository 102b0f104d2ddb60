//! The tracker's behaviour as the protocol promises it (docs/near-cache.md):
//! modes, noloop, eviction, overflow, bounds under a hostile subscriber,
//! concurrency, and the zero-subscriber fast path.

use super::line;
use super::table::ENTRY_OVERHEAD;
use super::*;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

fn tracker(table_bytes: usize, stream_bytes: usize) -> Arc<Tracker> {
    Arc::new(Tracker::new(Limits { table_bytes, stream_bytes }))
}

fn drain(s: &Subscriber) -> String {
    let mut out = Vec::new();
    while s.drain_into(&mut out, usize::MAX) > 0 {}
    String::from_utf8(out).unwrap()
}

/// A read that hits `key` on `att`, as the executor will do it.
fn read(t: &Tracker, att: &Attachment, key: &[u8]) {
    let snap = t.before_read(key);
    t.register_read(att, snap, key);
}

#[test]
fn tracking_sends_iv_once_per_registration() {
    let t = tracker(1 << 20, 1 << 16);
    let s = t.subscribe(Mode::Tracking, None);
    let a = t.attach(s.sid(), false).unwrap();
    read(&t, &a, b"k1");
    read(&t, &a, b"k1");
    t.invalidate(b"k1", None);
    t.invalidate(b"k2", None); // never read: nothing
    assert_eq!(drain(&s), "IV k1\r\n");
    // Consumed: a second write sends nothing until it is read again.
    t.invalidate(b"k1", None);
    assert_eq!(drain(&s), "");
    read(&t, &a, b"k1");
    t.invalidate(b"k1", None);
    assert_eq!(drain(&s), "IV k1\r\n");
    let st = t.stats();
    assert_eq!((st.track_registrations, st.track_invalidations, st.track_keys), (2, 2, 0));
}

#[test]
fn two_subscribers_of_one_key_both_hear_and_binary_keys_go_base64() {
    let t = tracker(1 << 20, 1 << 16);
    let (s1, s2) = (t.subscribe(Mode::Tracking, None), t.subscribe(Mode::Tracking, None));
    assert_ne!(s1.sid(), s2.sid());
    let (a1, a2) = (t.attach(s1.sid(), false).unwrap(), t.attach(s2.sid(), false).unwrap());
    read(&t, &a1, b"a b");
    read(&t, &a2, b"a b");
    t.invalidate(b"a b", None);
    assert_eq!(drain(&s1), "IV YSBi b\r\n");
    assert_eq!(drain(&s2), "IV YSBi b\r\n");
}

#[test]
fn broadcast_announces_prefixes_without_table_memory() {
    let t = tracker(1 << 20, 1 << 16);
    let b = t.subscribe(Mode::broadcast(&["user:", "cart:"]).unwrap(), None);
    let all = t.subscribe(Mode::broadcast::<&[u8]>(&[]).unwrap(), None);
    let a = t.attach(b.sid(), false).unwrap();
    assert!(!a.registers());
    read(&t, &a, b"user:1"); // does not register
    t.invalidate(b"user:1", None);
    t.invalidate(b"item:9", None);
    t.invalidate(b"cart:7", None);
    t.invalidate(b"user:1", None); // every change, no registration needed
    assert_eq!(drain(&b), "IV user:1\r\nIV cart:7\r\nIV user:1\r\n");
    assert_eq!(drain(&all), "IV user:1\r\nIV item:9\r\nIV cart:7\r\nIV user:1\r\n");
    assert_eq!(t.stats().track_keys, 0);
    assert_eq!(Mode::broadcast(&vec!["p"; 17]), Err("too many prefixes"));
    assert_eq!(Mode::broadcast(&[""]), Err("bad prefix length"));
    assert_eq!(Mode::broadcast(&[vec![b'p'; 251]]), Err("bad prefix length"));
}

#[test]
fn noloop_spares_the_writer_only() {
    let t = tracker(1 << 20, 1 << 16);
    let (s1, s2) = (t.subscribe(Mode::Tracking, None), t.subscribe(Mode::Tracking, None));
    let a1 = t.attach(s1.sid(), true).unwrap();
    let a2 = t.attach(s2.sid(), false).unwrap();
    assert_eq!((a1.origin(), a2.origin()), (Some(s1.sid()), None));
    read(&t, &a1, b"k");
    read(&t, &a2, b"k");
    t.invalidate(b"k", a1.origin());
    assert_eq!(drain(&s1), "");
    assert_eq!(drain(&s2), "IV k\r\n");
    // Broadcast too.
    let b = t.subscribe(Mode::broadcast::<&[u8]>(&[]).unwrap(), None);
    let ab = t.attach(b.sid(), true).unwrap();
    t.invalidate(b"k", ab.origin());
    t.invalidate(b"j", None);
    assert_eq!(drain(&b), "IV j\r\n");
}

#[test]
fn flush_all_sends_ia_and_empties_the_table() {
    let t = tracker(1 << 20, 1 << 16);
    let s = t.subscribe(Mode::Tracking, None);
    let b = t.subscribe(Mode::broadcast(&["x"]).unwrap(), None);
    let a = t.attach(s.sid(), false).unwrap();
    for i in 0..100 {
        read(&t, &a, format!("k{i}").as_bytes());
    }
    t.invalidate_all();
    assert_eq!(drain(&s), "IA\r\n");
    assert_eq!(drain(&b), "IA\r\n");
    assert_eq!(t.audit(), (0, 0));
    t.invalidate(b"k1", None);
    assert_eq!(drain(&s), "");
    assert_eq!(t.stats().track_flushes, 2);
}

#[test]
fn mn_is_a_barrier_behind_earlier_pushes() {
    let t = tracker(1 << 20, 1 << 16);
    let s = t.subscribe(Mode::Tracking, None);
    let a = t.attach(s.sid(), false).unwrap();
    read(&t, &a, b"k");
    t.invalidate(b"k", None);
    s.push_mn();
    assert_eq!(drain(&s), "IV k\r\nMN\r\n");
}

#[test]
fn closed_stream_stops_registering_and_its_entries_go() {
    let t = tracker(1 << 20, 1 << 16);
    let s = t.subscribe(Mode::Tracking, None);
    let sid = s.sid();
    let a = t.attach(sid, false).unwrap();
    read(&t, &a, b"k");
    assert_eq!(t.stats().track_keys, 1);
    drop(s);
    assert_eq!(t.audit(), (0, 0));
    assert!(!a.alive() && !a.registers());
    read(&t, &a, b"k");
    assert_eq!(t.stats().track_keys, 0);
    assert!(t.attach(sid, false).is_none(), "a closed sid is unknown");
    assert!(t.attach(12345, false).is_none());
    // Sids are never reused.
    assert!(t.subscribe(Mode::Tracking, None).sid() > sid);
    assert_eq!(t.stats().track_subscribers, 0);
}

#[test]
fn eviction_sends_iv_never_forgets() {
    // Room for about 8 entries per shard.
    let per_entry = 8 + ENTRY_OVERHEAD;
    let t = tracker(per_entry * 8 * SHARDS, 1 << 20);
    let s = t.subscribe(Mode::Tracking, None);
    let a = t.attach(s.sid(), false).unwrap();
    let n = 2000;
    for i in 0..n {
        read(&t, &a, format!("key{i:05}").as_bytes());
        let (_, bytes) = t.audit();
        assert!(bytes <= t.limits().table_bytes);
    }
    let st = t.stats();
    assert!(st.track_evictions > 0);
    assert_eq!(st.track_evictions + st.track_keys, n as u64);
    // Every key read is either still tracked or was sent IV: write all of
    // them and each must have been announced exactly once.
    for i in 0..n {
        t.invalidate(format!("key{i:05}").as_bytes(), None);
    }
    let out = drain(&s);
    let mut seen: Vec<&str> = out.lines().map(|l| l.strip_prefix("IV ").unwrap()).collect();
    seen.sort_unstable();
    let want: Vec<String> = (0..n).map(|i| format!("key{i:05}")).collect();
    assert_eq!(seen, want.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn oldest_registrations_leave_first() {
    // One shard's worth of keys all in one shard is not controllable (the
    // hash is keyed), so look at the order of the evicted keys per shard:
    // within a shard they leave in the order they were read.
    let per_entry = 8 + ENTRY_OVERHEAD;
    let t = tracker(per_entry * 4 * SHARDS, 1 << 20);
    let s = t.subscribe(Mode::Tracking, None);
    let a = t.attach(s.sid(), false).unwrap();
    for i in 0..1000 {
        read(&t, &a, format!("key{i:05}").as_bytes());
    }
    let out = drain(&s);
    let evicted: Vec<usize> = out.lines().map(|l| l[7..].parse().unwrap()).collect();
    let mut last = vec![None::<usize>; SHARDS];
    let shard_of = |k: usize| {
        let key = format!("key{k:05}");
        (t.before_read(key.as_bytes()).hash_for_tests() >> 48) as usize % SHARDS
    };
    for k in evicted {
        let sh = shard_of(k);
        assert!(last[sh].is_none_or(|p| p < k), "shard {sh}: key {k} evicted after a younger one");
        last[sh] = Some(k);
    }
}

#[test]
fn a_table_of_zero_invalidates_every_read_at_once() {
    let t = Arc::new(Tracker::new(Limits { table_bytes: parse_table_mb("0").unwrap(), stream_bytes: 1 << 16 }));
    let s = t.subscribe(Mode::Tracking, None);
    let a = t.attach(s.sid(), false).unwrap();
    read(&t, &a, b"k");
    assert_eq!(drain(&s), "IV k\r\n");
    assert_eq!(t.stats().track_keys, 0);
}

#[test]
fn overflow_gives_one_lost_and_drops_the_entries() {
    let t = tracker(1 << 20, 1024);
    let s = t.subscribe(Mode::Tracking, None);
    let other = t.subscribe(Mode::Tracking, None);
    let a = t.attach(s.sid(), false).unwrap();
    let o = t.attach(other.sid(), false).unwrap();
    for i in 0..1000 {
        read(&t, &a, format!("k{i:04}").as_bytes());
    }
    read(&t, &o, b"k0500");
    assert_eq!(t.stats().track_keys, 1000);
    // Write keys until the queue overflows; well past that.
    for i in 0..400 {
        t.invalidate(format!("k{i:04}").as_bytes(), None);
    }
    assert_eq!(t.stats().track_lost, 1);
    // Its entries are gone, the other subscriber's stays.
    assert_eq!(t.audit().0, 1);
    t.invalidate(b"k0999", None);
    s.push_mn();
    assert_eq!(drain(&s), "LOST\r\nMN\r\n", "one LOST, no IV after it until it is read");
    // The stream stays open and tracking continues.
    read(&t, &a, b"k0001");
    t.invalidate(b"k0001", None);
    assert_eq!(drain(&s), "IV k0001\r\n");
    t.invalidate(b"k0500", None);
    assert_eq!(drain(&other), "IV k0500\r\n");
    assert_eq!(t.stats().track_lost, 1);
}

#[test]
fn a_lost_subscribers_reads_do_not_register_until_lost_is_out() {
    let t = tracker(1 << 20, 64);
    let s = t.subscribe(Mode::Tracking, None);
    let a = t.attach(s.sid(), false).unwrap();
    for i in 0..20 {
        read(&t, &a, format!("k{i}").as_bytes());
        t.invalidate(format!("k{i}").as_bytes(), None);
    }
    assert_eq!(t.stats().track_lost, 1);
    read(&t, &a, b"late");
    assert_eq!(t.stats().track_keys, 0);
    assert_eq!(drain(&s), "LOST\r\n");
    read(&t, &a, b"late");
    assert_eq!(t.stats().track_keys, 1);
}

/// The hostile subscriber: never reads its stream, its connections
/// read millions of distinct keys. Everything stays within the bounds by
/// the tracker's own count and by the buffers' real capacity.
#[test]
fn hostile_subscriber_stays_within_bounds() {
    let table = 256 << 10;
    let stream = 16 << 10;
    let t = tracker(table, stream);
    let hostile = t.subscribe(Mode::Tracking, None);
    let everything = t.subscribe(Mode::broadcast::<&[u8]>(&[]).unwrap(), None);
    let polite = t.subscribe(Mode::Tracking, None);
    let h = t.attach(hostile.sid(), false).unwrap();
    let p = t.attach(polite.sid(), false).unwrap();
    let mut key = Vec::with_capacity(64);
    let mut sink = Vec::new();
    for i in 0..2_000_000u64 {
        key.clear();
        key.extend_from_slice(b"hostile:");
        key.extend_from_slice(&i.to_le_bytes()); // binary: base64 lines
        read(&t, &h, &key);
        if i % 3 == 0 {
            read(&t, &p, &key);
        }
        if i % 5 == 0 {
            t.invalidate(&key, None);
        }
        if i % 1000 == 0 {
            // The polite one reads its stream; the others never do.
            sink.clear();
            while polite.drain_into(&mut sink, usize::MAX) > 0 {
                sink.clear();
            }
            let st = t.stats();
            assert!(st.track_bytes as usize <= table, "table {} > {table}", st.track_bytes);
            for s in [&hostile, &everything, &polite] {
                assert!(s.pending_bytes() <= stream + 64 && s.queue_capacity() <= stream + 64);
            }
        }
    }
    let (n, bytes) = t.audit();
    assert!(bytes <= table && n > 0);
    let st = t.stats();
    // The hostile subscriber is lost after its first 16 KiB of IVs and
    // registers nothing more until it reads LOST (never): the table churns
    // on the polite subscriber's 666,667 registrations.
    assert!(st.track_evictions > 500_000, "{st:?}");
    assert_eq!(st.track_lost, 2, "hostile and broadcast-everything overflow once each: {st:?}");
    assert_eq!(drain(&everything), "LOST\r\n");
}

#[test]
fn no_subscriber_means_no_slow_path() {
    let t = tracker(1 << 20, 1 << 16);
    for i in 0..1000 {
        t.invalidate(format!("k{i}").as_bytes(), None);
        t.invalidate(b"k", Some(7));
        t.invalidate_all();
    }
    assert_eq!(t.slow_calls.load(Relaxed), 0);
    let s = t.subscribe(Mode::Tracking, None);
    t.invalidate(b"k", None);
    assert_eq!(t.slow_calls.load(Relaxed), 1);
    drop(s);
    t.invalidate(b"k", None);
    t.invalidate_all();
    assert_eq!(t.slow_calls.load(Relaxed), 1, "back to the fast path once the last subscriber left");
}

#[test]
fn a_push_wakes_the_owner_once_until_it_looks() {
    #[derive(Default)]
    struct Count(std::sync::atomic::AtomicUsize);
    impl Wake for Count {
        fn wake(&self) {
            self.0.fetch_add(1, Relaxed);
        }
    }
    let t = tracker(1 << 20, 1 << 16);
    let w = Arc::new(Count::default());
    let s = t.subscribe(Mode::broadcast::<&[u8]>(&[]).unwrap(), Some(w.clone()));
    t.invalidate(b"a", None);
    t.invalidate(b"b", None);
    assert_eq!(w.0.load(Relaxed), 1);
    assert!(s.take_ready());
    assert!(!s.take_ready());
    assert_eq!(drain(&s), "IV a\r\nIV b\r\n");
    t.invalidate(b"c", None);
    assert_eq!(w.0.load(Relaxed), 2);
}

/// Several readers and writers on a small key space, one client process
/// with a near cache that follows the race rule: a value enters the near
/// cache only if no `IV` for its key (or `IA`/`LOST`) was read between the
/// request and the reply. Checked continuously: each time the client has
/// read its stream, no near-cached value may be older than a write that
/// was acknowledged (its `invalidate` returned) before that read, since
/// that write's `IV` was queued before it was acknowledged.
#[test]
fn concurrent_reads_and_writes_leave_no_stale_entry() {
    use std::collections::HashMap;
    use std::sync::atomic::AtomicU64;
    use std::sync::Mutex;
    const KEYS: usize = 48;
    struct Client {
        stream: Subscriber,
        /// key -> tokens of reads in flight
        pending: HashMap<usize, Vec<u64>>,
        near: HashMap<usize, u64>,
        buf: Vec<u8>,
        acked: Arc<Vec<AtomicU64>>,
    }
    impl Client {
        fn pump(&mut self) {
            let acked: Vec<u64> = self.acked.iter().map(|a| a.load(std::sync::atomic::Ordering::SeqCst)).collect();
            self.buf.clear();
            while self.stream.drain_into(&mut self.buf, usize::MAX) > 0 {}
            let text = String::from_utf8(std::mem::take(&mut self.buf)).unwrap();
            for l in text.lines() {
                if let Some(k) = l.strip_prefix("IV k") {
                    let k: usize = k.parse().unwrap();
                    self.pending.remove(&k);
                    self.near.remove(&k);
                } else if l == "IA" || l == "LOST" {
                    self.pending.clear();
                    self.near.clear();
                }
            }
            for (&k, &v) in &self.near {
                assert!(v >= acked[k], "k{k} near-cached at version {v}, but version {} was acknowledged before the stream was read: stale", acked[k]);
            }
        }
    }
    for round in 0..20 {
        let t = tracker(if round % 2 == 0 { 1 << 20 } else { 4 * (8 + ENTRY_OVERHEAD) * SHARDS }, 1 << 20);
        let stream = t.subscribe(Mode::Tracking, None);
        let sid = stream.sid();
        let acked: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
        let client = Arc::new(Mutex::new(Client { stream, pending: HashMap::new(), near: HashMap::new(), buf: Vec::new(), acked: acked.clone() }));
        let store: Arc<Vec<Mutex<u64>>> = Arc::new((0..KEYS).map(|_| Mutex::new(0)).collect());
        let next_token = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for r in 0..3 {
            let (t, client, store, next_token) = (t.clone(), client.clone(), store.clone(), next_token.clone());
            threads.push(std::thread::spawn(move || {
                let att = t.attach(sid, false).unwrap();
                for i in 0..3000 {
                    let k = (i * 3 + r) % KEYS; // each reader its own keys
                    let key = format!("k{k}");
                    let token = next_token.fetch_add(1, Relaxed);
                    client.lock().unwrap().pending.entry(k).or_default().push(token);
                    let snap = t.before_read(key.as_bytes());
                    let v = *store[k].lock().unwrap();
                    // Widen the window between lookup and registration,
                    // where a write must still produce an IV.
                    if i % 2 == 0 {
                        std::thread::yield_now();
                    }
                    t.register_read(&att, snap, key.as_bytes());
                    let mut c = client.lock().unwrap();
                    c.pump();
                    let still = c.pending.get_mut(&k).and_then(|ts| ts.iter().position(|&x| x == token).map(|i| ts.swap_remove(i)));
                    if still.is_some() {
                        c.near.insert(k, v);
                    }
                }
            }));
        }
        for w in 0..2 {
            let (t, store, acked) = (t.clone(), store.clone(), acked.clone());
            threads.push(std::thread::spawn(move || {
                for i in 0..3000 {
                    let k = (i * 5 + w) % KEYS;
                    let v = {
                        let mut s = store[k].lock().unwrap();
                        *s += 1;
                        *s
                    };
                    t.invalidate(format!("k{k}").as_bytes(), None);
                    acked[k].fetch_max(v, std::sync::atomic::Ordering::SeqCst);
                    if i % 1000 == 999 && w == 0 {
                        t.invalidate_all();
                    }
                }
            }));
        }
        for th in threads {
            th.join().unwrap();
        }
        client.lock().unwrap().pump();
        t.audit();
    }
}

#[test]
fn line_lengths_match_what_is_queued() {
    // The queue decides fit from iv_len; the bytes must agree.
    let t = tracker(1 << 20, 1 << 16);
    let s = t.subscribe(Mode::broadcast::<&[u8]>(&[]).unwrap(), None);
    let keys: [&[u8]; 3] = [b"plain", b"sp ace", &[0, 1, 2, 255]];
    for k in keys {
        t.invalidate(k, None);
        assert_eq!(s.pending_bytes(), line::iv_len(k));
        drain(&s);
    }
}
