//! The meta protocol's front end (`mg ms md ma mn me`): flags to executor
//! arguments, outcomes to meta replies (`larder_proto::meta` encodes them).

use crate::connmem::output::Output;
use crate::exec::{self, Ctx};
use crate::counters::bump;
use larder_proto::meta::{self, MaItem, MaOutcome, MeItem, MetaCommand, MetaRequest, MetaStatus, MgItem};
use larder_proto::{reply, StoreCommand};
use larder_store::{DeleteOutcome, MetaGet, Mode, StoreResult, Time, WriteOptions};

pub fn execute(cx: &mut Ctx<'_>, req: &MetaRequest<'_>, out: &mut Output) {
    bump(&cx.ws.cmd_meta, 1);
    match req.command {
        MetaCommand::Get => get(cx, req, out),
        MetaCommand::Set => set(cx, req, out),
        MetaCommand::Delete => delete(cx, req, out),
        MetaCommand::Arith => arith(cx, req, out),
        MetaCommand::Noop => meta::mn(out),
        MetaCommand::Debug => debug(cx, req, out),
    }
}

/// Seconds left before `exptime` (`None`: never expires).
fn ttl(exptime: Time, now: Time) -> Option<i64> {
    (exptime != 0).then(|| exptime as i64 - now as i64)
}

fn get(cx: &mut Ctx<'_>, req: &MetaRequest<'_>, out: &mut Output) {
    let f = &req.flags;
    let opts = MetaGet {
        bump: !f.has(b'u'),
        touch: f.ttl.map(|t| cx.expiry(t as i64)),
        vivify: f.vivify_ttl.map(|t| cx.expiry(t as i64)),
        recache_before: f.recache_ttl.map(|t| cx.expiry(t as i64)),
        key_binary: req.key_binary(),
        new_cas: f.new_cas,
    };
    let now = cx.now;
    let found = exec::read::meta_get(cx, req.key(), &opts, |m, visible_cas| {
        let item = MgItem {
            value: m.item.value,
            client_flags: m.item.flags,
            cas: visible_cas,
            ttl: if m.created { None } else { ttl(m.exptime_before, now) },
            ttl_after: ttl(m.item.exptime, now),
            last_access: m.last_access as u64,
            fetched: m.fetched_before,
            // memcached echoes a hit's key as the item stored it.
            key_binary: m.key_binary,
            created: m.created,
            token_sent: m.token_sent_before,
            stale: m.stale,
            won: m.won,
        };
        out.send_value(&m.item, |out| meta::mg_hit_head(out, req, &item), b"\r\n");
    });
    if out.take_refused() {
        reply::line(out, reply::OUT_OF_MEMORY_WRITING_GET);
    } else if found == exec::read::MetaRead::Miss {
        meta::mg_miss(out, req);
    }
}

fn set(cx: &mut Ctx<'_>, req: &MetaRequest<'_>, out: &mut Output) {
    let f = &req.flags;
    let invalidate = f.has(b'I');
    // memcached: C makes set/replace a CAS store; append/prepend compare the
    // CAS themselves; add ignores it. With I, an older CAS stores stale.
    let (mode, cas) = match req.store_mode() {
        StoreCommand::Cas(c) if invalidate => (Mode::Set, Some(c)),
        StoreCommand::Cas(c) => (Mode::Cas(c), None),
        StoreCommand::Set => (Mode::Set, None),
        StoreCommand::Add => (Mode::Add, None),
        StoreCommand::Replace => (Mode::Replace, None),
        StoreCommand::Append => (Mode::Append, f.cas),
        StoreCommand::Prepend => (Mode::Prepend, f.cas),
    };
    let appending = matches!(mode, Mode::Append | Mode::Prepend);
    let write = exec::store::Write {
        mode,
        key: req.key(),
        flags: f.client_flags,
        exptime: f.ttl.map_or(0, |t| cx.expiry(t as i64)),
        data: req.data,
        // memcached's ms treats `E0` as no `E` (a fresh CAS), unlike the
        // other meta commands.
        opts: WriteOptions {
            cas,
            stale_if_older: invalidate,
            key_binary: req.key_binary(),
            new_cas: f.new_cas.filter(|&c| c != 0),
        },
    };
    let result = match f.vivify_ttl {
        // 1.6.20: append/prepend with N creates the item on a miss.
        Some(n) if appending => exec::store::append_or_create(cx, &write, cx.expiry(n as i64)),
        _ => exec::store::store(cx, &write),
    };
    let (status, cas) = match result {
        StoreResult::Stored(cas) => (MetaStatus::Hd, cas),
        // An append/prepend that found no item is "not stored", with or
        // without a C (memcached compares a CAS only with an item).
        StoreResult::NotStored | StoreResult::NotFound if appending => (MetaStatus::Ns, 0),
        StoreResult::NotStored => (MetaStatus::Ns, 0),
        StoreResult::Exists => (MetaStatus::Ex, 0),
        StoreResult::NotFound => (MetaStatus::Nf, 0),
        StoreResult::TooLarge => return reply::line(out, larder_proto::text::TOO_LARGE),
        StoreResult::OutOfMemory => return reply::line(out, reply::OUT_OF_MEMORY_STORING),
    };
    // `s` (1.6.20): the stored length, the combined one after an append.
    let mut size = req.data.len();
    if appending && status == MetaStatus::Hd && f.has(b's') {
        if let Some((now_cas, len)) = exec::read::peek(cx, req.key()) {
            // Another write may have landed since; only this write's
            // version tells this write's size.
            if now_cas == cas {
                size = len;
            }
        }
    }
    meta::ms(out, req, status, cx.visible_cas(cas), size);
}

fn delete(cx: &mut Ctx<'_>, req: &MetaRequest<'_>, out: &mut Output) {
    let f = &req.flags;
    let invalidate = f.has(b'I').then(|| exec::delete::Invalidate {
        exptime: f.ttl.map(|t| cx.expiry(t as i64)),
        new_cas: f.new_cas,
    });
    let outcome = if f.has(b'x') {
        // 1.6.27: empty the value, keep the item (flags F, TTL T).
        let to = exec::delete::Emptied {
            flags: f.client_flags,
            exptime: f.ttl.map_or(0, |t| cx.expiry(t as i64)),
            new_cas: f.new_cas,
        };
        exec::delete::empty_value(cx, req.key(), f.cas, to, invalidate)
    } else {
        exec::delete::delete(cx, exec::delete::Via::Meta, req.key(), f.cas, invalidate)
    };
    let status = match outcome {
        DeleteOutcome::Deleted => MetaStatus::Hd,
        DeleteOutcome::NotFound => MetaStatus::Nf,
        DeleteOutcome::Exists => MetaStatus::Ex,
    };
    meta::md(out, req, status);
}

fn arith(cx: &mut Ctx<'_>, req: &MetaRequest<'_>, out: &mut Output) {
    use exec::arith::Counted;
    let f = &req.flags;
    let now = cx.now;
    let a = exec::arith::Arith {
        key: req.key(),
        incr: req.incr(),
        delta: f.delta,
        cas: f.cas,
        new_cas: f.new_cas,
        touch: f.ttl.map(|t| cx.expiry(t as i64)),
        create: f.vivify_ttl.map(|t| (f.initial, cx.expiry(t as i64))),
        key_binary: req.key_binary(),
    };
    let outcome = match exec::arith::arith(cx, &a) {
        Counted::Value { value, cas, exptime_before, exptime_after } => MaOutcome::Item(MaItem {
            value,
            cas,
            ttl: ttl(exptime_before, now),
            ttl_after: ttl(exptime_after, now),
            created: false,
        }),
        Counted::Created { value, cas, exptime } => {
            MaOutcome::Item(MaItem { value, cas, ttl: None, ttl_after: ttl(exptime, now), created: true })
        }
        Counted::NotFound => MaOutcome::NotFound,
        Counted::Exists => MaOutcome::Exists,
        Counted::CreateNotStored => MaOutcome::NotStored,
        Counted::NonNumeric => return reply::line(out, meta::NON_NUMERIC),
        Counted::OutOfMemory => return reply::line(out, reply::OUT_OF_MEMORY),
        Counted::CreateOutOfMemory => return reply::line(out, reply::OUT_OF_MEMORY_ALLOCATING),
    };
    meta::ma(out, req, &outcome);
}

/// `me <key>`: what the store knows about one item.
fn debug(cx: &mut Ctx<'_>, req: &MetaRequest<'_>, out: &mut Output) {
    let key = req.key();
    let now = cx.now;
    let found = exec::read::inspect(cx, key, |m| {
        let item = MeItem {
            ttl: ttl(m.item.exptime, now),
            last_access: m.last_access as u64,
            cas: m.item.cas,
            fetched: m.fetched_before,
            class: 1,
            size: larder_proto::text::item_size(key.len(), m.item.flags, m.item.value.len()) as u64,
            key_binary: m.key_binary,
        };
        meta::me(out, key, &item);
    });
    if !found {
        meta::me_miss(out);
    }
}
