//! `lru_crawler metadump` and `lru_crawler mgdump` (memcached 1.6.19: one
//! `mg <key>\r\n` per item, `mg <base64> b\r\n` for a binary key, then
//! `EN\r\n`; like memcached 1.6.43 and later, larder begins both dumps with
//! `OK\r\n`, which 1.6.19-1.6.42 did not send: docs/differences.md),
//! streamed: a few segments of one store shard at a
//! time ([`SEGMENTS_PER_STEP`], under that shard's lock only) are encoded
//! into the output; past the high-water mark the dump waits for the client
//! like any other output, and each step counts against the `-R` allowance
//! so other connections of the worker keep being served. Requests
//! pipelined behind it run after its `END`.

use crate::connmem::output::Output;
use crate::exec::Ctx;
use crate::state::server::Server;
use crate::wire::Step;

/// Segments walked per metadump step (one hold of a shard lock).
const SEGMENTS_PER_STEP: usize = 4;

/// Which dump: `metadump`'s `key=...` lines or `mgdump`'s `mg` lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Meta,
    Mg,
}

/// Where a metadump is: the shard being walked, the last segment
/// generation done in it, and the prefix filter.
pub struct Dump {
    kind: Kind,
    shard: usize,
    after_gen: u64,
    prefix: Option<Vec<u8>>,
}

/// Answer `lru_crawler metadump|mgdump <args>` as memcached does, or start
/// a dump.
pub fn start(srv: &Server, kind: Kind, words: &[&[u8]], pipelined: bool, out: &mut Vec<u8>) -> Option<Dump> {
    let Some(args) = larder_observe::metadump::MetadumpArgs::parse(words) else {
        out.extend_from_slice(larder_proto::reply::ERROR);
        return None;
    };
    let (what, name) = match kind {
        Kind::Meta => ("metadump", "metadump"),
        Kind::Mg => ("key dump", "mgdump"),
    };
    if !srv.settings().lru_crawler {
        larder_proto::reply::line(out, larder_proto::reply::LRU_CRAWLER_DISABLED);
        return None;
    }
    if !srv.settings().dump_enabled {
        larder_proto::reply::line(out, &format!("ERROR {what} not allowed"));
        return None;
    }
    if pipelined {
        larder_proto::reply::line(out, &format!("ERROR cannot pipeline other commands before {name}"));
        return None;
    }
    // Checked when memcached's crawler starts, after the above.
    match crate::exec::tuning::classes(args.classes) {
        Some(_) => {}
        None => {
            let empty = args.classes.split(|&b| b == b',').all(<[u8]>::is_empty);
            larder_proto::reply::line(out, if empty { "NOTSTARTED no items to crawl" } else { "BADCLASS invalid class id" });
            return None;
        }
    }
    // memcached 1.6.43 and later begin both dumps with it.
    out.extend_from_slice(larder_proto::reply::OK);
    Some(Dump { kind, shard: 0, after_gen: 0, prefix: args.prefix.map(<[u8]>::to_vec) })
}

/// Stream the next step of the dump in `slot` (or its `END`, which ends
/// it); [`Step::Blocked`] while the output must drain first.
pub fn step(slot: &mut Option<Dump>, cx: &mut Ctx<'_>, out: &mut Output) -> Step {
    let Some(d) = slot else { return Step::Streamed };
    if out.past_pause() {
        return Step::Blocked;
    }
    let srv = cx.srv;
    if d.shard >= srv.store().shard_count() {
        match d.kind {
            Kind::Meta => larder_observe::metadump::write_end(&mut out.buf),
            Kind::Mg => out.buf.extend_from_slice(b"EN\r\n"),
        }
        *slot = None;
        return Step::Streamed;
    }
    let delimiter = srv.settings().prefix_delimiter;
    let obs = &*cx.obs;
    let buf = &mut out.buf;
    let prefix = d.prefix.as_deref();
    let kind = d.kind;
    let walked = srv.store().for_each_item_in_shard_from(d.shard, cx.now, d.after_gen, SEGMENTS_PER_STEP, |key, it| {
        if let Some(p) = prefix {
            if larder_observe::key_prefix(key, delimiter) != Some(p) {
                return;
            }
        }
        if kind == Kind::Mg {
            buf.extend_from_slice(b"mg ");
            if it.key_binary {
                larder_proto::meta::base64_encode(buf, key);
                buf.extend_from_slice(b" b\r\n");
            } else {
                buf.extend_from_slice(key);
                buf.extend_from_slice(b"\r\n");
            }
            return;
        }
        larder_observe::metadump::write_line(
            buf,
            &larder_observe::metadump::MetadumpItem {
                key,
                exptime: (it.exptime != 0).then(|| obs.unix_time(it.exptime)),
                last_access: obs.unix_time(it.last_access),
                cas: crate::exec::cas_shown(srv, it.cas),
                fetched: it.fetched,
                class: 1,
                // memcached's item size, as `me` reports it (not the
                // bytes larder's segment charges).
                size: larder_proto::text::item_size(key.len(), it.flags, it.value_len as usize) as u64,
                flags: it.flags,
            },
        );
    });
    match walked {
        Some((_, last)) => d.after_gen = last,
        None => {
            d.shard += 1;
            d.after_gen = 0;
        }
    }
    Step::Streamed
}
