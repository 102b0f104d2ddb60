//! Key placement exactly as libmemcached's ketama places keys (distribution
//! `MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA`, unweighted: what pylibmc's
//! `ketama` behaviour and PHP's `Memcached::OPT_LIBKETAMA_COMPATIBLE` off give),
//! so this client shares a cluster with PHP/Python clients key for key.
//!
//! The continuum: for each server, 100 points, the hash of `host:port-i`
//! (`host-i` when the port is 11211) for i in 0..100, sorted by value (ties by
//! server index). A key goes to the first point whose value is >= the key's
//! hash, wrapping to the first point. One server: always that server. The key
//! hash and the point hash are the same function, libmemcached's default
//! (Jenkins one-at-a-time) unless `hash` is set (md5).

use md5::{Digest, Md5};

/// Points per server of unweighted ketama (libmemcached's MEMCACHED_POINTS_PER_SERVER).
const POINTS_PER_SERVER: u32 = 100;
/// libmemcached leaves the port out of a point's name for the default port.
const DEFAULT_PORT: u16 = 11211;

/// The hash libmemcached applies to keys and continuum points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KeyHash {
    /// libmemcached's default (`hash: default` in pylibmc): one-at-a-time.
    #[default]
    OneAtATime,
    /// `hash: md5`: the first four digest bytes, little-endian.
    Md5,
}

impl KeyHash {
    pub fn hash(self, bytes: &[u8]) -> u32 {
        match self {
            KeyHash::OneAtATime => one_at_a_time(bytes),
            KeyHash::Md5 => {
                let d = Md5::digest(bytes);
                u32::from_le_bytes([d[0], d[1], d[2], d[3]])
            }
        }
    }
}

/// Jenkins one-at-a-time as libhashkit computes it. libhashkit reads the key
/// through a (signed) `char` and widens it to u32, so bytes >= 0x80 are
/// sign-extended: kept here, or non-ASCII keys would land elsewhere.
pub fn one_at_a_time(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &b in bytes {
        h = h.wrapping_add(b as i8 as i32 as u32);
        h = h.wrapping_add(h << 10);
        h ^= h >> 6;
    }
    h = h.wrapping_add(h << 3);
    h ^= h >> 11;
    h.wrapping_add(h << 15)
}

/// A sorted ring of (point, server index).
#[derive(Clone, Debug)]
pub struct Continuum {
    points: Vec<(u32, usize)>,
    servers: usize,
    hash: KeyHash,
}

impl Continuum {
    /// `servers`: (host, port) in the order the application lists them (the
    /// index each key maps to is the index in this list).
    pub fn new(servers: &[(String, u16)], hash: KeyHash) -> Continuum {
        let mut points = Vec::with_capacity(servers.len() * POINTS_PER_SERVER as usize);
        for (idx, (host, port)) in servers.iter().enumerate() {
            for i in 0..POINTS_PER_SERVER {
                let name = if *port == DEFAULT_PORT { format!("{host}-{i}") } else { format!("{host}:{port}-{i}") };
                points.push((hash.hash(name.as_bytes()), idx));
            }
        }
        points.sort_unstable();
        Continuum { points, servers: servers.len(), hash }
    }

    /// The index of the server `key` belongs to.
    pub fn server_for(&self, key: &[u8]) -> usize {
        if self.servers <= 1 {
            return 0;
        }
        let h = self.hash.hash(key);
        let i = self.points.partition_point(|&(v, _)| v < h);
        self.points.get(i).unwrap_or(&self.points[0]).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_at_a_time_known_values() {
        // Jenkins' one-at-a-time of "a" and of the empty string, computed by hand
        // from the algorithm's definition.
        assert_eq!(one_at_a_time(b""), 0);
        assert_eq!(one_at_a_time(b"a"), 0xca2e9442);
    }

    #[test]
    fn wraps_and_single_server() {
        let one = Continuum::new(&[("h".into(), 1)], KeyHash::OneAtATime);
        assert_eq!(one.server_for(b"anything"), 0);
        let three: Vec<(String, u16)> = (0..3).map(|i| ("127.0.0.1".to_string(), 20000 + i)).collect();
        let c = Continuum::new(&three, KeyHash::Md5);
        let mut counts = [0usize; 3];
        for i in 0..3000 {
            counts[c.server_for(format!("k{i}").as_bytes())] += 1;
        }
        assert!(counts.iter().all(|&n| n > 500), "{counts:?}");
        // a hash above every point wraps to the first point's server
        let last = c.points.last().unwrap().0;
        assert!(last < u32::MAX);
        let first_server = c.points[0].1;
        let i = c.points.partition_point(|&(v, _)| v < u32::MAX);
        assert_eq!(c.points.get(i).unwrap_or(&c.points[0]).1, first_server);
    }
}
