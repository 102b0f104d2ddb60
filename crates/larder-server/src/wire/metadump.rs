//! `lru_crawler metadump`, streamed: a few segments of one store shard at a
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

/// Where a metadump is: the shard being walked, the last segment
/// generation done in it, and the prefix filter.
pub struct Dump {
    shard: usize,
    after_gen: u64,
    prefix: Option<Vec<u8>>,
}

/// Answer `lru_crawler metadump <args>` as memcached does, or start a dump.
pub fn start(srv: &Server, words: &[&[u8]], pipelined: bool, out: &mut Vec<u8>) -> Option<Dump> {
    let Some(args) = larder_observe::metadump::MetadumpArgs::parse(words) else {
        out.extend_from_slice(larder_proto::reply::ERROR);
        return None;
    };
    if !srv.settings.lru_crawler {
        larder_proto::reply::line(out, larder_proto::reply::LRU_CRAWLER_DISABLED);
        return None;
    }
    if !srv.settings.dump_enabled {
        larder_proto::reply::line(out, larder_proto::reply::METADUMP_NOT_ALLOWED);
        return None;
    }
    if pipelined {
        larder_proto::reply::line(out, larder_proto::reply::METADUMP_PIPELINED);
        return None;
    }
    Some(Dump { shard: 0, after_gen: 0, prefix: args.prefix.map(<[u8]>::to_vec) })
}

/// Stream the next step of the dump in `slot` (or its `END`, which ends
/// it); [`Step::Blocked`] while the output must drain first.
pub fn step(slot: &mut Option<Dump>, cx: &mut Ctx<'_>, out: &mut Output) -> Step {
    let Some(d) = slot else { return Step::Streamed };
    if out.past_pause() {
        return Step::Blocked;
    }
    let srv = cx.srv;
    if d.shard >= srv.store.shard_count() {
        larder_observe::metadump::write_end(&mut out.buf);
        *slot = None;
        return Step::Streamed;
    }
    let delimiter = srv.settings.prefix_delimiter;
    let obs = &*cx.obs;
    let buf = &mut out.buf;
    let prefix = d.prefix.as_deref();
    let walked = srv.store.for_each_item_in_shard_from(d.shard, cx.now, d.after_gen, SEGMENTS_PER_STEP, |key, it| {
        if let Some(p) = prefix {
            if larder_observe::key_prefix(key, delimiter) != Some(p) {
                return;
            }
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
                size: it.size,
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
