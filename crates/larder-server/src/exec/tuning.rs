//! memcached's slab and LRU tuning commands (`slabs automove ...`,
//! `lru tune|mode|temp_ttl ...`, `lru_crawler crawl|sleep|tocrawl ...`),
//! answered with memcached 1.6.38's replies and accepted without effect;
//! their numbers are read strictly, as memcached reads them from 1.6.40
//! (`larder_proto::number`; a class list keeps `strtoul`'s reading).
//!
//! larder has no slab classes, no slab mover, no segmented LRU and no
//! background crawler (expired items are reclaimed when met, and by
//! eviction): there is nothing for these knobs to turn. Tools and
//! operators' scripts send them anyway (memcached's own t/ files do, as do
//! config-management recipes), and a memcached that did not understand
//! them would answer `ERROR`, which such scripts treat as a failure. So
//! larder validates the arguments exactly as memcached does, answers what
//! memcached answers, and changes nothing; docs/differences.md says so.
//! `slabs reassign` is the one refused: memcached's reply when slab
//! reassignment is off, which `stats settings` reports (`slab_reassign no`).

use larder_proto::text::{safe_f64, safe_u32, strict_i32, strict_u32};

/// memcached's `set_noreply_maybe`: a final `noreply` token silences the
/// reply (whatever it is).
fn split(args: &[u8]) -> (Vec<&[u8]>, bool) {
    // memcached keeps the `noreply` token in place (it only flags the
    // reply): the counts below are memcached's, token for token.
    let words: Vec<&[u8]> = args.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
    let noreply = words.last() == Some(&&b"noreply"[..]);
    (words, noreply)
}

/// The reply (without `\r\n`), or `None` under `noreply`.
fn answer(reply: &'static str, noreply: bool) -> Option<&'static str> {
    (!noreply).then_some(reply)
}

/// `slabs <args>` (`args`: what follows `slabs`).
pub fn slabs(args: &[u8]) -> Option<&'static str> {
    let (w, noreply) = split(args);
    // memcached counts the terminal empty token: its `ntokens == 5` is
    // four words here.
    if w.len() == 3 && w[0] == b"reassign" {
        return Some("CLIENT_ERROR slab reassignment disabled");
    }
    if w.len() >= 2 && w[0] == b"automove" {
        return answer(automove(&w[1..]), noreply);
    }
    Some("ERROR")
}

/// `slabs automove <0|1|2>`, `slabs automove ratio|freeratio <r>`,
/// `slabs automove window <n>` (`w`: the words after `automove`).
fn automove(w: &[&[u8]]) -> &'static str {
    match w[0] {
        b"ratio" | b"freeratio" => {
            if w.len() < 2 || safe_f64(w[1]).is_none() {
                return "ERROR";
            }
        }
        b"window" => {
            if w.len() < 2 || strict_u32(w[1]).is_none() {
                return "CLIENT_ERROR bad command line format";
            }
        }
        level => match strict_u32(level) {
            None => return "CLIENT_ERROR bad command line format",
            Some(0..=2) => {}
            Some(_) => return "ERROR",
        },
    }
    "OK"
}

/// `lru <args>`: `tune <hot pct> <warm pct> <hot factor> <warm factor>`,
/// `mode flat|segmented`, `temp_ttl <ttl>`.
pub fn lru(args: &[u8]) -> Option<&'static str> {
    let (w, noreply) = split(args);
    let reply = match w.first().copied() {
        Some(b"tune") if w.len() >= 5 => {
            match (strict_u32(w[1]), strict_u32(w[2]), safe_f64(w[3]), safe_f64(w[4])) {
                (Some(hot), Some(warm), Some(hot_factor), Some(factor)) => {
                    if u64::from(hot) + u64::from(warm) > 80 {
                        "ERROR hot and warm pcts must not exceed 80"
                    } else if factor <= 0.0 || hot_factor <= 0.0 {
                        "ERROR hot/warm age factors must be greater than 0"
                    } else {
                        "OK"
                    }
                }
                _ => "ERROR",
            }
        }
        Some(b"mode") if w.len() >= 2 => match w[1] {
            b"flat" | b"segmented" => "OK",
            _ => "ERROR",
        },
        Some(b"temp_ttl") if w.len() >= 2 && strict_i32(w[1]).is_some() => "OK",
        _ => "ERROR",
    };
    answer(reply, noreply)
}

/// What a class selector of `lru_crawler crawl|metadump|mgdump` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Classes {
    /// `all`, or a list of valid class ids (larder's items are all class 1).
    All,
    /// `hash`: a walk of the hash table (the same items, in larder).
    Hash,
}

/// memcached's largest slab class id plus one (`MAX_NUMBER_OF_SLAB_CLASSES`).
const MAX_CLASSES: u32 = 64;

/// Parse a class selector as memcached's `lru_crawler_crawl` does; `None`
/// is its `BADCLASS invalid class id`.
pub fn classes(sel: &[u8]) -> Option<Classes> {
    match sel {
        b"all" => Some(Classes::All),
        b"hash" => Some(Classes::Hash),
        list => {
            let mut any = false;
            for id in list.split(|&b| b == b',').filter(|p| !p.is_empty()) {
                match safe_u32(id) {
                    Some(n) if (1..MAX_CLASSES).contains(&n) => any = true,
                    _ => return None,
                }
            }
            // strtok_r on an empty or all-comma list finds no token: every
            // class stays unselected and nothing starts.
            any.then_some(Classes::All)
        }
    }
}

/// `lru_crawler <args>` other than `metadump`/`mgdump` (streamed by the
/// text driver): `crawl <classes>`, `sleep <us>`, `tocrawl <n>`.
pub fn lru_crawler(args: &[u8], crawler_enabled: bool) -> Option<&'static str> {
    let (w, _) = split(args);
    // memcached's lru_crawler does not honour noreply.
    let reply = match w.as_slice() {
        [b"crawl", sel] => {
            if !crawler_enabled {
                "CLIENT_ERROR lru crawler disabled"
            } else {
                match classes(sel) {
                    // Expired items are reclaimed as they are met; a crawl
                    // has nothing left to find, but starts as memcached's.
                    Some(_) => "OK",
                    None if sel.split(|&b| b == b',').all(<[u8]>::is_empty) => "NOTSTARTED no items to crawl",
                    None => "BADCLASS invalid class id",
                }
            }
        }
        [b"tocrawl", n] => match strict_u32(n) {
            Some(_) => "OK",
            None => "CLIENT_ERROR bad command line format",
        },
        [b"sleep", n] => match strict_u32(n) {
            Some(us) if us > 1_000_000 => "CLIENT_ERROR sleep must be one second or less",
            Some(_) => "OK",
            None => "CLIENT_ERROR bad command line format",
        },
        _ => "ERROR",
    };
    Some(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_automove_as_memcached() {
        assert_eq!(slabs(b"automove 0"), Some("OK"));
        assert_eq!(slabs(b"automove 2"), Some("OK"));
        assert_eq!(slabs(b"automove 3"), Some("ERROR"));
        assert_eq!(slabs(b"automove invalid"), Some("CLIENT_ERROR bad command line format"));
        assert_eq!(slabs(b"automove ratio 0.5"), Some("OK"));
        assert_eq!(slabs(b"automove ratio x"), Some("ERROR"));
        assert_eq!(slabs(b"automove window x"), Some("CLIENT_ERROR bad command line format"));
        assert_eq!(slabs(b"automove 1 noreply"), None);
        assert_eq!(slabs(b"automove"), Some("ERROR"));
        assert_eq!(slabs(b"reassign 1 2"), Some("CLIENT_ERROR slab reassignment disabled"));
        assert_eq!(slabs(b"other"), Some("ERROR"));
    }

    #[test]
    fn lru_as_memcached() {
        assert_eq!(lru(b"mode flat"), Some("OK"));
        assert_eq!(lru(b"mode other"), Some("ERROR"));
        assert_eq!(lru(b"temp_ttl -1"), Some("OK"));
        assert_eq!(lru(b"temp_ttl x"), Some("ERROR"));
        assert_eq!(lru(b"tune 10 25 0.1 2"), Some("OK"));
        assert_eq!(lru(b"tune 50 40 0.1 2"), Some("ERROR hot and warm pcts must not exceed 80"));
        assert_eq!(lru(b"tune 10 25 0 2"), Some("ERROR hot/warm age factors must be greater than 0"));
        assert_eq!(lru(b"tune 10 25 0.1"), Some("ERROR"));
    }

    #[test]
    fn lru_crawler_as_memcached() {
        assert_eq!(lru_crawler(b"crawl all", true), Some("OK"));
        assert_eq!(lru_crawler(b"crawl 1,2", true), Some("OK"));
        assert_eq!(lru_crawler(b"crawl 99999", true), Some("BADCLASS invalid class id"));
        assert_eq!(lru_crawler(b"crawl 0", true), Some("BADCLASS invalid class id"));
        assert_eq!(lru_crawler(b"crawl all", false), Some("CLIENT_ERROR lru crawler disabled"));
        assert_eq!(lru_crawler(b"sleep 2000000", true), Some("CLIENT_ERROR sleep must be one second or less"));
        assert_eq!(lru_crawler(b"tocrawl x", true), Some("CLIENT_ERROR bad command line format"));
        assert_eq!(lru_crawler(b"tocrawl 10", true), Some("OK"));
        assert_eq!(lru_crawler(b"bogus", true), Some("ERROR"));
    }
}
