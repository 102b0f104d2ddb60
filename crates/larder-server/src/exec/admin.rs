//! Server administration: `verbosity`, `shutdown`, `cache_memlimit`,
//! `refresh_certs`, `debugtime` and `stats reset`. (`version` is a constant, `stats` a report:
//! see `report.rs`.)

use super::Ctx;

/// `shutdown` was refused (no `-A`).
#[derive(Debug)]
pub struct ShutdownNotEnabled;

/// Ask the process to stop, as SIGTERM would; `graceful` (`shutdown
/// graceful`) as SIGUSR1 would: with `-e`, the items are saved for the
/// next start.
pub fn shutdown(cx: &mut Ctx<'_>, graceful: bool) -> Result<(), ShutdownNotEnabled> {
    if !cx.srv.settings().enable_shutdown {
        return Err(ShutdownNotEnabled);
    }
    cx.srv.request_shutdown(graceful);
    Ok(())
}

pub fn verbosity(cx: &mut Ctx<'_>, level: u32) {
    cx.srv.set_verbosity(level);
}

/// Why `cache_memlimit` refused (memcached's replies).
#[derive(Debug, PartialEq, Eq)]
pub enum MemlimitRefused {
    /// Below 8 MiB.
    TooSmall,
    /// A number that only makes sense in bytes.
    NotMegabytes,
    /// The store could not take the new limit.
    Failed,
}

/// `cache_memlimit <megabytes>`.
pub fn cache_memlimit(cx: &mut Ctx<'_>, megabytes: u64) -> Result<(), MemlimitRefused> {
    if megabytes < 8 {
        return Err(MemlimitRefused::TooSmall);
    }
    if megabytes > 1_000_000_000 {
        return Err(MemlimitRefused::NotMegabytes);
    }
    cx.srv.store().set_memory_limit((megabytes as usize) << 20).map_err(|_| MemlimitRefused::Failed)
}

/// `refresh_certs`: read the TLS certificate, key and CA files again for
/// the connections accepted from now on. The error is memcached's message
/// (`Error TLS not enabled` without `-Z`; otherwise which file failed and
/// why; the configuration in use stays).
pub fn refresh_certs(cx: &mut Ctx<'_>) -> Result<(), String> {
    match &cx.srv.access().tls {
        None => Err("Error TLS not enabled".to_string()),
        Some(tls) => tls.refresh(cx.srv.clock().now()),
    }
}

/// `debugtime <offset>`, allowed only with `-o debug_time` (tests move the
/// server's clock instead of sleeping). Whether it was allowed.
pub fn debug_time(cx: &mut Ctx<'_>, offset: i64) -> bool {
    if cx.srv.settings().debug_time {
        cx.srv.clock().shift(offset);
        true
    } else {
        false
    }
}

/// `stats reset`.
pub fn reset_stats(cx: &mut Ctx<'_>) {
    cx.srv.reset_stats();
}
