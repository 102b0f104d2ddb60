//! Command-line flags: memcached's flags with memcached's meanings.
//!
//! Parsing is getopt-like (`-p 11211`, `-p11211`, `-vv`, `--port=11211`,
//! `--port 11211`) so init scripts written for memcached work unchanged. A
//! flag larder does not support is a start-up error that names it; a flag
//! that only tunes memcached's slab allocator (which larder does not have) is
//! accepted with a warning saying it has no effect.
//!
//! `-Z`'s TLS settings and rustls configuration are in [`tls`]; the `-l`
//! prefixes that choose a listener's TLS mode in [`listen_mode`].

pub mod listen_mode;
pub mod tls;

use std::fmt;

/// The server's settings after parsing and validation.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `-p`/`-U` as memcached keeps them: 0 = off, -1 = any free port.
    pub port: i32,
    pub udp_port: i32,
    pub unix_socket: Option<String>,
    pub unix_mask: u32,
    pub enable_shutdown: bool,
    /// Interfaces to listen on; `host` or `host:port`.
    pub listen: Vec<String>,
    pub daemonize: bool,
    pub user: Option<String>,
    /// `-Y`: the authfile; connections must authenticate before any
    /// command (`auth::authfile`, `wire::gate`).
    pub auth_file: Option<String>,
    /// `-S`: binary-protocol clients must authenticate with SASL
    /// (`auth::cyrus`, `auth::sasl`).
    pub sasl: bool,
    pub memory_limit: usize,
    pub evictions: bool,
    pub max_connections: usize,
    pub verbose: u32,
    pub pidfile: Option<String>,
    /// `-e`: warm restart. SIGUSR1 stops gracefully and saves the items to
    /// this file (meant for a RAM disk); the next start with the same `-e`
    /// loads them (`restart/mod.rs`).
    pub memory_file: Option<String>,
    pub threads: usize,
    pub reqs_per_event: usize,
    pub cas_enabled: bool,
    pub backlog: i32,
    pub protocol: Protocol,
    pub item_size_max: usize,
    pub flush_enabled: bool,
    pub dump_enabled: bool,
    pub watch_enabled: bool,
    /// `-o worker_logbuf_size` / `-o watcher_logbuf_size` (given in KiB):
    /// the `watch` buffers of each worker and of each watcher.
    pub worker_logbuf_size: usize,
    pub watcher_logbuf_size: usize,
    pub prefix_delimiter: u8,
    pub detail_enabled: bool,
    pub idle_timeout: u32,
    /// `-o read_buf_mem_limit=MB` (memcached's name and unit): the budget
    /// for connection buffers beyond each connection's resting buffers, in
    /// bytes, split over the workers. 0: larder's default (see
    /// [`Settings::conn_budget`]).
    pub read_buf_mem_limit: usize,
    pub relaxed_privileges: bool,
    /// Enables memcached's debug-build `debugtime` command (tests only).
    pub debug_time: bool,
    pub maxconns_fast: bool,
    pub coredumps: bool,
    /// memcached's LRU crawler / maintainer switches. larder has neither
    /// thread; the switches only decide whether `stats` lists their
    /// (zero) counters, as memcached does when they are off.
    pub lru_crawler: bool,
    pub lru_maintainer: bool,
    /// Grace mode (`-o grace=`, `grace_prefix=`, `grace_lease=`).
    pub grace: crate::stampede::grace::GraceConfig,
    /// Coalesced cold misses (`-o coalesce=`, `coalesce_max_key=`,
    /// `coalesce_max=`), for the keys grace covers.
    pub coalesce: crate::stampede::coalesce::CoalesceConfig,
    /// Near-cache invalidation's bounds (`-o track_table_mb=`,
    /// `track_stream_kb=`; docs/near-cache.md).
    pub track: crate::track::limits::Limits,
    /// Observability (`-o prefix_stats_max=`, `bigkeys=`, `hotkeys_window=`,
    /// `hotkeys_sample=`, `observe=off`).
    pub observe: ObserveSettings,
    /// `-Z` and `-o ssl_*` (`config::tls`).
    pub tls: crate::config::tls::TlsSettings,
    /// Warnings to print at start-up (flags accepted but without effect).
    pub warnings: Vec<String>,
}

/// Sizes of the accounting structures and the admin listener.
#[derive(Clone, Debug)]
pub struct ObserveSettings {
    /// `observe=off`: no per-request accounting at all (for measuring its cost).
    pub enabled: bool,
    pub prefix_stats_max: usize,
    pub bigkeys: usize,
    /// Items smaller than this never enter the big-key list. Writes of
    /// list members take the list's lock and a new member copies its key, so
    /// this keeps the big-key list off the path of ordinary small items.
    pub bigkeys_min_size: u64,
    pub hotkeys_window: u64,
    /// One request in this many; 0 = `auto` (adaptive, the default).
    pub hotkeys_sample: u64,
    /// `/metrics` listener port (0 = off).
    pub metrics_port: u16,
    pub metrics_addr: String,
    /// `-o metrics_auth_file=PATH`: the credentials the admin listener
    /// accepts (`admin::auth`: `basic user:password` and `bearer TOKEN`
    /// lines).
    pub metrics_auth_file: Option<String>,
    /// `-o metrics_auth=none|required` (see [`MetricsAuth`]).
    pub metrics_auth: MetricsAuth,
    /// `-o metrics_max_conns=N`: admin connections open at once; a new one
    /// past it closes the least recently used.
    pub metrics_max_conns: usize,
    /// `-o metrics_header_timeout=S`: seconds a request head may take, from
    /// the connection (or its first byte after a response).
    pub metrics_header_timeout: u32,
    /// `-o metrics_idle_timeout=S`: seconds a kept-alive connection may wait
    /// for its next request.
    pub metrics_idle_timeout: u32,
}

/// Whether the admin listener asks for credentials (`-o metrics_auth=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricsAuth {
    /// Unset: required when `metrics_auth_file` is given or the cache port
    /// requires authentication ([`Settings::cache_requires_auth`]).
    Auto,
    /// `none`: anyone who reaches the port is served (an explicit choice;
    /// needed to serve unauthenticated when the cache port requires auth).
    None,
    /// `required`: always (credentials from the file and/or verified
    /// client certificates with `metrics_tls`).
    Required,
}

impl Default for ObserveSettings {
    fn default() -> Self {
        ObserveSettings {
            enabled: true,
            prefix_stats_max: 1024,
            bigkeys: 20,
            bigkeys_min_size: 1024,
            hotkeys_window: 60,
            hotkeys_sample: 0,
            metrics_port: 0,
            metrics_addr: "127.0.0.1".to_string(),
            metrics_auth_file: None,
            metrics_auth: MetricsAuth::Auto,
            metrics_max_conns: 1024,
            metrics_header_timeout: 10,
            metrics_idle_timeout: 60,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Auto,
    Ascii,
    Binary,
}

impl Protocol {
    pub fn stats_name(self) -> &'static str {
        match self {
            Protocol::Auto => "auto-negotiate",
            Protocol::Ascii => "ascii",
            Protocol::Binary => "binary",
        }
    }
}

impl Settings {
    /// Whether the cache port lets in only authenticated clients: `-Y`,
    /// `-S`, or `-Z` with a client certificate required
    /// (`ssl_verify_mode` 2 or 3; 1 only asks for one).
    pub fn cache_requires_auth(&self) -> bool {
        self.auth_file.is_some() || self.sasl || (self.tls.enabled && self.tls.verify_mode >= 2)
    }

    /// Whether the admin listener serves only authenticated requests.
    pub fn metrics_auth_required(&self) -> bool {
        match self.observe.metrics_auth {
            MetricsAuth::None => false,
            MetricsAuth::Required => true,
            MetricsAuth::Auto => self.observe.metrics_auth_file.is_some() || self.cache_requires_auth(),
        }
    }

    /// The connection budget in bytes: `read_buf_mem_limit`, by default
    /// the larger of 64 MiB and 8 items of `-I` (a few clients moving the
    /// largest values at once); never below one largest item and its reply
    /// head, so any value `-I` admits can be read and written.
    pub fn conn_budget(&self) -> usize {
        let floor = self.item_size_max + (64 << 10);
        match self.read_buf_mem_limit {
            0 => (64 << 20).max(8 * self.item_size_max),
            set => set.max(floor),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            port: 11211,
            udp_port: 0,
            unix_socket: None,
            unix_mask: 0o700,
            enable_shutdown: false,
            listen: Vec::new(),
            daemonize: false,
            user: None,
            auth_file: None,
            sasl: false,
            memory_limit: 64 << 20,
            evictions: true,
            max_connections: 1024,
            verbose: 0,
            pidfile: None,
            memory_file: None,
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4),
            reqs_per_event: 20,
            cas_enabled: true,
            backlog: 1024,
            protocol: Protocol::Auto,
            item_size_max: 1 << 20,
            flush_enabled: true,
            dump_enabled: true,
            watch_enabled: true,
            worker_logbuf_size: crate::trace::watch::WORKER_BUF_DEFAULT,
            watcher_logbuf_size: crate::trace::watch::WATCHER_BUF_DEFAULT,
            prefix_delimiter: b':',
            detail_enabled: false,
            idle_timeout: 0,
            track: crate::track::limits::Limits::default(),
            read_buf_mem_limit: 0,
            relaxed_privileges: false,
            debug_time: false,
            maxconns_fast: true,
            coredumps: false,
            lru_crawler: true,
            lru_maintainer: true,
            grace: crate::stampede::grace::GraceConfig { lease: 5, ..Default::default() },
            coalesce: Default::default(),
            observe: ObserveSettings::default(),
            tls: Default::default(),
            warnings: Vec::new(),
        }
    }
}

/// What the command line asks for.
// Built once at start-up: the size difference costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    Run(Settings),
    Help,
    Version,
}

/// A start-up error, printed as is; `.1` is the exit status memcached
/// 1.6.38 gives the same error: 1 for what its option loop refuses (a bad
/// `-o` suboption or value, `-c 0`, `-t 0`, an unknown flag ...), 64
/// (EX_USAGE) for the checks after the loop and for `-B` and `-I`'s.
#[derive(Debug)]
pub struct UsageError(pub String, pub i32);

/// memcached's exit status for errors of its option loop.
const OPTION_LOOP_STATUS: i32 = 1;
/// sysexits.h EX_USAGE: memcached's status for the checks after the loop.
pub const EX_USAGE: i32 = 64;
/// sysexits.h EX_OSERR: memcached's status when it cannot set up a
/// listener (a TLS prefix of `-l` without `-Z` is refused there).
pub const EX_OSERR: i32 = 71;

impl UsageError {
    /// An error of the checks after the option loop (exit 64).
    fn new(msg: String) -> UsageError {
        UsageError(msg, EX_USAGE)
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError::new(msg.into()))
}

/// An error memcached reports from inside its option loop, keeping 64
/// (EX_USAGE) where memcached exits with it there (`-B`, `-I`).
fn in_loop(e: UsageError, keep_usage: bool) -> UsageError {
    if keep_usage {
        e
    } else {
        UsageError(e.0, OPTION_LOOP_STATUS)
    }
}

/// Long option names and the short flag each stands for.
const LONG_OPTIONS: &[(&str, char)] = &[
    ("port", 'p'),
    ("udp-port", 'U'),
    ("unix-socket", 's'),
    ("unix-mask", 'a'),
    ("enable-shutdown", 'A'),
    ("listen", 'l'),
    ("daemon", 'd'),
    ("enable-coredumps", 'r'),
    ("user", 'u'),
    ("memory-limit", 'm'),
    ("disable-evictions", 'M'),
    ("conn-limit", 'c'),
    ("lock-memory", 'k'),
    ("verbose", 'v'),
    ("help", 'h'),
    ("license", 'i'),
    ("version", 'V'),
    ("pidfile", 'P'),
    ("slab-growth-factor", 'f'),
    ("slab-min-size", 'n'),
    ("enable-largepages", 'L'),
    ("threads", 't'),
    ("max-reqs-per-event", 'R'),
    ("disable-cas", 'C'),
    ("listen-backlog", 'b'),
    ("protocol", 'B'),
    ("max-item-size", 'I'),
    ("enable-sasl", 'S'),
    ("disable-flush-all", 'F'),
    ("disable-dumping", 'X'),
    ("disable-watch", 'W'),
    ("auth-file", 'Y'),
    ("memory-file", 'e'),
    ("enable-ssl", 'Z'),
    ("extended", 'o'),
    ("napi_ids", 'N'),
];

/// Flags that take an argument.
const WITH_ARGUMENT: &str = "pUsalumcPfntRbBIDYeoN";

/// Parse `args` (without the program name).
pub fn parse_args<I: IntoIterator<Item = String>>(args: I) -> Result<Command, UsageError> {
    let args: Vec<String> = args.into_iter().collect();
    let mut s = Settings::default();
    let (mut tcp_specified, mut udp_specified) = (false, false);
    let mut protocol_specified = false;
    let mut help = false;
    let mut version = false;
    let mut i = 0;
    // memcached exits 1 on what its option loop refuses (64 for -B and -I).
    let looped = (|| -> Result<(), UsageError> {
        while i < args.len() {
            let arg = &args[i];
            i += 1;
            // Collect (flag, optional inline value) pairs from this argument.
            let mut flags: Vec<(char, Option<String>)> = Vec::new();
            if let Some(long) = arg.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (long, None),
                };
                let Some(&(_, flag)) = LONG_OPTIONS.iter().find(|(n, _)| *n == name) else {
                    return err(format!("larder: unrecognized option '--{name}'"));
                };
                flags.push((flag, value));
            } else if let Some(short) = arg.strip_prefix('-') {
                if short.is_empty() {
                    return err("larder: '-' is not an option");
                }
                let chars: Vec<char> = short.chars().collect();
                let mut j = 0;
                while j < chars.len() {
                    let c = chars[j];
                    j += 1;
                    if WITH_ARGUMENT.contains(c) {
                        let rest: String = chars[j..].iter().collect();
                        flags.push((c, if rest.is_empty() { None } else { Some(rest) }));
                        break;
                    }
                    flags.push((c, None));
                }
            } else {
                return err(format!("larder: unexpected argument '{arg}'"));
            }
            for (flag, inline) in flags {
                let value = if WITH_ARGUMENT.contains(flag) {
                    match inline {
                        Some(v) => Some(v),
                        None => {
                            if i >= args.len() {
                                return err(format!("larder: option requires an argument -- '{flag}'"));
                            }
                            i += 1;
                            Some(args[i - 1].clone())
                        }
                    }
                } else {
                    None
                };
                let v = value.as_deref().unwrap_or("");
                match flag {
                    'p' => {
                        s.port = parse_port(v, "-p")?;
                        tcp_specified = true;
                    }
                    'U' => {
                        s.udp_port = parse_port(v, "-U")?;
                        udp_specified = true;
                    }
                    's' => s.unix_socket = Some(v.to_string()),
                    'a' => {
                        s.unix_mask = u32::from_str_radix(v, 8)
                            .map_err(|_| UsageError::new(format!("larder: -a wants an octal mask, got '{v}'")))?
                    }
                    'A' => s.enable_shutdown = true,
                    'l' => s.listen.extend(v.split(',').filter(|a| !a.is_empty()).map(str::to_string)),
                    'd' => s.daemonize = true,
                    'r' => s.coredumps = true,
                    'u' => s.user = Some(v.to_string()),
                    'm' => s.memory_limit = parse_memory_limit(v)?,
                    'M' => s.evictions = false,
                    'c' => {
                        let n: i64 = v.parse().map_err(|_| UsageError::new(format!("larder: bad -c value '{v}'")))?;
                        if n <= 0 {
                            return err("Maximum connections must be greater than 0");
                        }
                        s.max_connections = n as usize;
                    }
                    'v' => s.verbose += 1,
                    'h' => help = true,
                    'V' => version = true,
                    'P' => s.pidfile = Some(v.to_string()),
                    'f' | 'n' => s.warnings.push(format!(
                        "-{flag} tunes memcached's slab classes; larder stores items without size classes, so it has no effect"
                    )),
                    't' => {
                        let n: i64 = v.parse().map_err(|_| UsageError::new(format!("larder: bad -t value '{v}'")))?;
                        if n <= 0 {
                            return err("Number of threads must be greater than 0");
                        }
                        if n > 256 {
                            return err("Number of threads must be 256 or fewer");
                        }
                        s.threads = n as usize;
                    }
                    'R' => {
                        let n: i64 = v.parse().map_err(|_| UsageError::new(format!("larder: bad -R value '{v}'")))?;
                        if n <= 0 {
                            return err("Number of requests per event must be greater than 0");
                        }
                        s.reqs_per_event = n as usize;
                    }
                    'C' => s.cas_enabled = false,
                    'b' => {
                        s.backlog = v.parse().map_err(|_| UsageError::new(format!("larder: bad -b value '{v}'")))?
                    }
                    'B' => {
                        protocol_specified = true;
                        s.protocol = match v {
                            "auto" => Protocol::Auto,
                            "ascii" => Protocol::Ascii,
                            "binary" => Protocol::Binary,
                            _ => return err(format!("Invalid value for binding protocol: {v}\n -- should be one of auto, binary, or ascii")),
                        }
                    }
                    'I' => s.item_size_max = parse_item_size(v)?,
                    'F' => s.flush_enabled = false,
                    'X' => s.dump_enabled = false,
                    'W' => s.watch_enabled = false,
                    'D' => {
                        let b = v.as_bytes();
                        if b.len() != 1 {
                            return err("larder: -D takes a single character");
                        }
                        s.prefix_delimiter = b[0];
                        s.detail_enabled = true;
                    }
                    'o' => parse_extended(v, &mut s)?,
                    'S' => s.sasl = true,
                    'Y' => s.auth_file = Some(v.to_string()),
                    'Z' => s.tls.enabled = true,
                    'e' => {
                        if v.is_empty() {
                            return err("larder: -e needs a file name");
                        }
                        // Absolute: `-d` changes the directory to / before the
                        // file is read or written.
                        let abs = std::path::absolute(v).map_err(|e| UsageError::new(format!("larder: -e {v}: {e}")))?;
                        s.memory_file = Some(abs.to_string_lossy().into_owned());
                    }
                    'k' => return err("larder: -k (lock memory) is not supported"),
                    'L' => return err("larder: -L (large pages) is not supported"),
                    'i' => return err("larder: -i (license) is not supported; see the LICENSE file"),
                    'N' => return err("larder: -N (napi ids) is not supported"),
                    other => return err(format!("larder: illegal argument \"{other}\"")),
                }
            }
        }
        Ok(())
    })();
    if let Err(e) = looped {
        let keep_usage = e.0.starts_with("Invalid value for binding protocol") || e.0.starts_with("Item max size")
            || e.0.contains("item size limit") || e.0.contains("-I value")
            // memcached accepts these (-k, -L ...); larder's own refusal stays a usage error.
            || e.0.contains("is not supported");
        return Err(in_loop(e, keep_usage));
    }
    if help {
        return Ok(Command::Help);
    }
    if version {
        return Ok(Command::Version);
    }
    // memcached: `-U` without `-p` puts TCP on the UDP port too.
    if udp_specified && s.udp_port != 0 && !tcp_specified {
        s.port = s.udp_port;
    }
    if s.sasl {
        // memcached: SASL is binary-only. Without -B the binding protocol
        // becomes binary; -B ascii or auto is refused, as is UDP.
        if !protocol_specified {
            s.protocol = Protocol::Binary;
        } else if s.protocol != Protocol::Binary {
            return err("ERROR: You cannot allow the ASCII protocol while using SASL.");
        }
        if s.udp_port != 0 {
            return err("ERROR: Cannot enable UDP while using binary SASL authentication.");
        }
    }
    if s.auth_file.is_some() {
        // memcached: -Y speaks ASCII only. Without -B the binding protocol
        // becomes ascii (so a binary-looking first byte is just a bad text
        // command); -B binary or -B auto is refused, as is UDP, which has
        // no connection to authenticate.
        if !protocol_specified {
            s.protocol = Protocol::Ascii;
        } else if s.protocol != Protocol::Ascii {
            return err("ERROR: You cannot allow the BINARY protocol while using ascii authentication tokens.");
        }
        if s.udp_port != 0 {
            return err("Cannot use UDP with ascii authentication enabled (-U 0 to disable)");
        }
    }
    validate(&s)?;
    if s.tls.enabled && s.tls.ca_cert.is_none() && s.listen.iter().any(|l| listen_mode::ListenMode::split(l).0 == listen_mode::ListenMode::Peer) {
        // memcached starts too, and fails every handshake on that listener.
        s.warnings.push("an mtls: listener without -o ssl_ca_cert: no client certificate can be verified, so every TLS handshake on it fails".into());
    }
    Ok(Command::Run(s))
}

/// A port, or -1 for "any free port" (memcached's ephemeral port).
fn parse_port(v: &str, flag: &str) -> Result<i32, UsageError> {
    match v.parse::<i32>() {
        Ok(p) if (-1..=65535).contains(&p) => Ok(p),
        _ => Err(UsageError::new(format!("larder: bad port for {flag}: '{v}'"))),
    }
}

/// `-m`: megabytes, or a number with a k/m/g suffix as memcached 1.6 accepts.
fn parse_memory_limit(v: &str) -> Result<usize, UsageError> {
    let bad = || UsageError::new(format!("larder: bad -m value '{v}'"));
    let (digits, mult) = split_unit(v, 1 << 20);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let bytes = n.checked_mul(mult).ok_or_else(bad)?;
    if bytes == 0 {
        return err("larder: -m must be greater than 0");
    }
    Ok(bytes as usize)
}

/// Largest `-I` memcached accepts (`ITEM_SIZE_MAX_UPPER_LIMIT`).
const ITEM_SIZE_MAX_UPPER: usize = 1 << 30;

/// `-I`: bytes, with an optional k/m suffix (larder also takes g: `1g`,
/// which memcached 1.6.18 misreads as 1 byte and refuses); at least 1 KiB.
/// The upper bounds (half of `-m`, then 1 GiB) are checked in [`validate`],
/// in memcached's order.
fn parse_item_size(v: &str) -> Result<usize, UsageError> {
    let bad = || UsageError::new(format!("larder: bad -I value '{v}'"));
    let (digits, mult) = split_unit(v, 1);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let bytes = n.checked_mul(mult).filter(|&b| b <= usize::MAX as u64).ok_or_else(bad)?;
    if bytes < 1024 {
        return err("Item max size cannot be less than 1024 bytes.");
    }
    Ok(bytes as usize)
}

/// Split a trailing k/m/g unit; a bare number is multiplied by `default`.
fn split_unit(v: &str, default: u64) -> (&str, u64) {
    match v.as_bytes().last() {
        Some(b'k' | b'K') => (&v[..v.len() - 1], 1 << 10),
        Some(b'm' | b'M') => (&v[..v.len() - 1], 1 << 20),
        Some(b'g' | b'G') => (&v[..v.len() - 1], 1 << 30),
        _ => (v, default),
    }
}

/// `-o key=value,flag,...`
fn parse_extended<'a>(list: &'a str, s: &mut Settings) -> Result<(), UsageError> {
    for opt in list.split(',').filter(|o| !o.is_empty()) {
        let (name, value) = match opt.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (opt, None),
        };
        let need = |v: Option<&'a str>| -> Result<&'a str, UsageError> {
            v.ok_or_else(|| UsageError::new(format!("larder: -o {name} needs a value ({name}=...)")))
        };
        if s.tls.parse_option(name, value, &mut s.warnings).map_err(UsageError::new)? {
            continue;
        }
        match name {
            "track_table_mb" => {
                s.track.table_bytes = crate::track::limits::parse_table_mb(need(value)?).map_err(UsageError::new)?;
            }
            "track_stream_kb" => {
                s.track.stream_bytes = crate::track::limits::parse_stream_kb(need(value)?).map_err(UsageError::new)?;
            }
            "idle_timeout" => {
                let v = need(value)?;
                s.idle_timeout =
                    v.parse().map_err(|_| UsageError::new(format!("larder: bad idle_timeout '{v}'")))?;
            }
            "relaxed_privileges" => s.relaxed_privileges = true,
            "grace" | "grace_lease" => {
                let v = need(value)?;
                let secs = crate::stampede::grace::parse_duration(v)
                    .ok_or_else(|| UsageError::new(format!("larder: bad duration for -o {name}: '{v}'")))?;
                if name == "grace" {
                    s.grace.default = secs;
                } else if secs == 0 {
                    return err("larder: -o grace_lease must be at least 1s");
                } else {
                    s.grace.lease = secs;
                }
            }
            "grace_prefix" => {
                // prefix:duration; the prefix may itself contain ':'.
                let v = need(value)?;
                let parsed = v.rsplit_once(':').and_then(|(p, d)| Some((p, crate::stampede::grace::parse_duration(d)?)));
                match parsed {
                    Some((p, secs)) if !p.is_empty() => s.grace.prefixes.push((p.as_bytes().to_vec(), secs)),
                    _ => return err(format!("larder: -o grace_prefix wants prefix:duration, got '{v}'")),
                }
            }
            "coalesce" => {
                let v = need(value)?;
                s.coalesce.window = crate::stampede::coalesce::parse_window(v)
                    .ok_or_else(|| UsageError::new(format!("larder: bad duration for -o coalesce: '{v}' (e.g. 500ms, 2s)")))?;
            }
            "coalesce_max_key" | "coalesce_max" => {
                let v = need(value)?;
                let n: u32 = v.parse().map_err(|_| UsageError::new(format!("larder: bad value for -o {name}: '{v}'")))?;
                if name == "coalesce_max" {
                    s.coalesce.max_total = n;
                } else {
                    s.coalesce.max_per_key = n;
                }
            }
            "hotkeys_sample" if value == Some("auto") => s.observe.hotkeys_sample = 0,
            "prefix_stats_max" | "bigkeys" | "bigkeys_min_size" | "hotkeys_window" | "hotkeys_sample" | "metrics_port"
            | "metrics_max_conns" | "metrics_header_timeout" | "metrics_idle_timeout" => {
                let v = need(value)?;
                let n: u64 = v.parse().map_err(|_| UsageError::new(format!("larder: bad value for -o {name}: '{v}'")))?;
                let o = &mut s.observe;
                match name {
                    "prefix_stats_max" => o.prefix_stats_max = n as usize,
                    "bigkeys" => o.bigkeys = n as usize,
                    "bigkeys_min_size" => o.bigkeys_min_size = n.max(1),
                    "hotkeys_window" if n >= 1 => o.hotkeys_window = n,
                    "hotkeys_sample" if n >= 1 => o.hotkeys_sample = n,
                    "metrics_port" if n <= u16::MAX as u64 => o.metrics_port = n as u16,
                    "metrics_max_conns" if (1..=65_536).contains(&n) => o.metrics_max_conns = n as usize,
                    "metrics_header_timeout" if (1..=3600).contains(&n) => o.metrics_header_timeout = n as u32,
                    "metrics_idle_timeout" if (1..=86_400).contains(&n) => o.metrics_idle_timeout = n as u32,
                    _ => return err(format!("larder: bad value for -o {name}: '{v}'")),
                }
            }
            "worker_logbuf_size" | "watcher_logbuf_size" => {
                // memcached: kilobytes.
                let v = need(value)?;
                let kib: u32 = v.parse().map_err(|_| UsageError::new(format!("larder: could not parse argument to {name}: '{v}'")))?;
                let bytes = kib as usize * 1024;
                if name == "worker_logbuf_size" {
                    s.worker_logbuf_size = bytes;
                } else {
                    s.watcher_logbuf_size = bytes;
                }
            }
            "metrics_addr" => {
                let v = need(value)?;
                if v.parse::<std::net::IpAddr>().is_err() {
                    return err(format!("larder: -o metrics_addr wants an IP address, got '{v}'"));
                }
                s.observe.metrics_addr = v.to_string();
            }
            "metrics_auth_file" => s.observe.metrics_auth_file = Some(need(value)?.to_string()),
            "metrics_auth" => match need(value)? {
                "none" => s.observe.metrics_auth = MetricsAuth::None,
                "required" => s.observe.metrics_auth = MetricsAuth::Required,
                v => return err(format!("larder: -o metrics_auth wants none or required, got '{v}'")),
            },
            "observe" => match need(value)? {
                "on" => s.observe.enabled = true,
                "off" => s.observe.enabled = false,
                v => return err(format!("larder: -o observe wants on or off, got '{v}'")),
            },
            "debugtime" => s.debug_time = true,
            "maxconns_fast" => s.maxconns_fast = true,
            "no_maxconns_fast" => s.maxconns_fast = false,
            "modern" | "no_modern" => {}
            "lru_crawler" | "no_lru_crawler" => s.lru_crawler = name == "lru_crawler",
            "lru_maintainer" | "no_lru_maintainer" => s.lru_maintainer = name == "lru_maintainer",
            "slab_chunk_max" | "slab_reassign" | "slab_automove" | "hashpower"
            | "slab_automove_ratio" | "slab_automove_window" | "slab_sizes" | "track_sizes"
            | "no_slab_reassign" | "no_slab_automove" | "no_chunked_items"
            | "inline_ascii_resp" | "no_inline_ascii_resp"
            | "hash_algorithm"
            | "hot_lru_pct" | "warm_lru_pct" | "hot_max_factor" | "warm_max_factor"
            | "temporary_ttl" | "tail_repair_time" | "no_hashexpand" | "lru_crawler_sleep"
            | "lru_crawler_tocrawl" => s.warnings.push(format!(
                "-o {name} tunes memcached's slab allocator/LRU, which larder does not have; it has no effect"
            )),
            "read_buf_mem_limit" => {
                let v = need(value)?;
                let mb: usize =
                    v.parse().map_err(|_| UsageError::new(format!("larder: could not parse argument to read_buf_mem_limit '{v}'")))?;
                s.read_buf_mem_limit = mb << 20;
            }
            // memcached 1.6 says the same: the one limit is read_buf_mem_limit.
            "resp_obj_mem_limit" => s.warnings.push(
                "DEPRECATED: resp_obj_mem_limit no longer used. See read_buf_mem_limit".to_string(),
            ),
            _ => return err(format!("larder: unsupported -o option '{name}'")),
        }
    }
    Ok(())
}

fn validate(s: &Settings) -> Result<(), UsageError> {
    // memcached 1.6.18's checks and messages, in its order: with `-m 64
    // -I 2000m` it names the memory limit, with `-m 4096 -I 1025m` the
    // gigabyte.
    if s.item_size_max > s.memory_limit / 2 {
        return err("Cannot set item size limit higher than 1/2 of memory max.");
    }
    if s.item_size_max > ITEM_SIZE_MAX_UPPER {
        return err("Cannot set item size limit higher than a gigabyte.");
    }
    if s.coalesce.enabled() && !s.grace.enabled() {
        return err("larder: -o coalesce applies to the keys grace mode covers: give -o grace= or -o grace_prefix= too");
    }
    if s.tls.enabled && s.port == 0 {
        return err("ERROR: You cannot enable SSL without a TCP port.");
    }
    if s.tls.metrics && !s.tls.enabled {
        return err("larder: -o metrics_tls needs -Z (it uses -Z's certificate and settings)");
    }
    validate_metrics_auth(s)?;
    if !s.tls.enabled {
        // memcached refuses these when it binds, and exits EX_OSERR.
        if let Some(msg) = s.listen.iter().find_map(|l| listen_mode::ListenMode::split(l).0.needs_tls_error()) {
            return Err(UsageError(msg.to_string(), EX_OSERR));
        }
    }
    if s.unix_socket.is_some() && s.udp_port != 0 && !s.listen.is_empty() {
        // memcached ignores network listeners when -s is given; so do we.
    }
    Ok(())
}

/// The admin listener's access rules (docs/admin-listener.md): when it must
/// authenticate, it needs a source of credentials; serving it open while the
/// cache port requires authentication takes an explicit `metrics_auth=none`.
fn validate_metrics_auth(s: &Settings) -> Result<(), UsageError> {
    let o = &s.observe;
    if o.metrics_auth == MetricsAuth::None && o.metrics_auth_file.is_some() {
        return err("larder: -o metrics_auth=none contradicts -o metrics_auth_file (give one or the other)");
    }
    if o.metrics_port == 0 || !s.metrics_auth_required() {
        return Ok(());
    }
    let certificates = s.tls.metrics && s.tls.verify_mode >= 1;
    if o.metrics_auth_file.is_some() || certificates {
        return Ok(());
    }
    let why = if o.metrics_auth == MetricsAuth::Required {
        "-o metrics_auth=required".to_string()
    } else {
        let by = [(s.auth_file.is_some(), "-Y"), (s.sasl, "-S"), (s.tls.enabled && s.tls.verify_mode >= 2, "-o ssl_verify_mode")];
        let by: Vec<&str> = by.iter().filter(|(on, _)| *on).map(|(_, f)| *f).collect();
        format!("the cache port requires authentication ({}), so the admin listener (-o metrics_port) must too", by.join(", "))
    };
    err(format!(
        "larder: {why}: give it credentials with -o metrics_auth_file=PATH (basic and bearer lines, \
         docs/admin-listener.md) or client certificates with -o metrics_tls and ssl_verify_mode, \
         or serve it to anyone who can reach it with -o metrics_auth=none"
    ))
}

/// The `-h` text. The memcached test suite reads it to learn what the server
/// supports, so it lists only what larder really has.
pub fn help_text() -> String {
    format!(
        "larder {version} (memcached {compat} compatible)
-p, --port=<num>          TCP port to listen on (default: 11211)
-U, --udp-port=<num>      UDP port to listen on (default: 0, off)
-s, --unix-socket=<file>  UNIX socket to listen on (disables network support)
-a, --unix-mask=<mask>    access mask for UNIX socket, in octal (default: 700)
-A, --enable-shutdown     enable ascii \"shutdown\" command
-l, --listen=<addr>       interface to listen on (default: 127.0.0.1)
-d, --daemon              run as a daemon
-r, --enable-coredumps    maximize core file limit
-u, --user=<user>         assume identity of <username> (only when run as root)
-m, --memory-limit=<num>  memory for items and index, in megabytes (default: 64)
-M, --disable-evictions   return error on memory exhausted instead of evicting
-c, --conn-limit=<num>    max simultaneous connections (default: 1024)
-v, --verbose             verbose (print errors/warnings while in event loop)
-vv                       very verbose (also print client commands/responses)
-h, --help                print this help and exit
-V, --version             print version and exit
-P, --pidfile=<file>      save PID in <file>, only used with -d option
-e, --memory-file=<file>  warm restart: SIGUSR1 stops and saves the items to
                          <file> (use a RAM disk); restarting with the same
                          -e serves them again
-f, -n                    accepted for compatibility; no effect (no slab classes)
-D <char>                 delimiter between key prefixes and IDs (default: \":\")
-t, --threads=<num>       number of worker threads (default: number of cores)
-R, --max-reqs-per-event  maximum number of requests per event (default: 20)
-C, --disable-cas         disable use of CAS
-b, --listen-backlog=<num> set the backlog queue limit (default: 1024)
-Y, --auth-file=<file>    require ASCII authentication with the user:password
                          lines of <file> (forces -B ascii; no UDP)
-B, --protocol=<name>     protocol - one of ascii, binary, or auto (default: auto-negotiate)
-S, --enable-sasl         turn on Sasl authentication (binary protocol; Cyrus
                          libsasl2, configured by SASL_CONF_PATH/memcached.conf)
-I, --max-item-size=<num> adjusts max item size
                          (default: 1m, min: 1k, max: 1024m)
-F, --disable-flush-all   disable flush_all command
-X, --disable-dumping     disable stats cachedump and lru_crawler metadump
-W, --disable-watch       disable watch commands (live logging)
-Z, --enable-ssl          enable TLS/SSL (TLS 1.2 and 1.3); with -l, a prefix sets
                          one listener's mode: 'notls:' plain, 'btls:' TLS without
                          client certificates, 'mtls:' TLS requiring a client
                          certificate (-l mtls:<ip>:<port>)
-o, --extended            comma separated list of extended options
   - idle_timeout:        timeout for idle connections, seconds (default: 0, no timeout)
   - read_buf_mem_limit:  megabytes for connection buffers beyond 32 KiB per connection
                          (default: the larger of 64 and 8 x -I; never less than -I + 64 KiB)
   - maxconns_fast:       immediately close new connections after limit (default: enabled)
   - watcher_logbuf_size: size in kilobytes of per-watcher write buffer (default: 256)
   - worker_logbuf_size:  size in kilobytes of per-worker-thread buffer
                          read by background thread, then written to watchers (default: 64)
   - relaxed_privileges:  accepted for compatibility
   - grace:               serve an expired value for this long (e.g. 30s) to all
                          but one getter while that one refills it (default: off)
   - grace_prefix:        grace for keys with a prefix, e.g. grace_prefix=page:30s
   - grace_lease:         time the refilling getter has before another is chosen
                          (default: 5s)
   - coalesce:            park other plain gets of an absent key in grace's scope
                          while the first getter refills it, for at most this
                          long (e.g. 500ms, 2s; default: off)
   - coalesce_max_key:    requests parked per key at most (default: 1024)
   - coalesce_max:        requests parked in all at most (default: 16384)
   - prefix_stats_max:    key prefixes accounted separately in stats prefixes /
                          stats detail dump (default: 1024; more fold into 'other')
   - bigkeys:             largest items listed by stats bigkeys (default: 20)
   - bigkeys_min_size:    smallest item (bytes) stats bigkeys lists (default: 1024)
   - hotkeys_window:      seconds of traffic behind stats hotkeys (default: 60)
   - hotkeys_sample:      hot keys see one request in this many, or auto: all
                          below 2048 requests/s per worker, ~2048 a second
                          above (default: auto)
   - metrics_port:        serve Prometheus /metrics on this port (default: 0, off)
   - metrics_addr:        address for metrics_port (default: 127.0.0.1)
   - metrics_tls:         serve metrics_port over HTTPS with -Z's certificate and
                          ssl_* settings (needs -Z); with ssl_verify_mode, a verified
                          client certificate authenticates a request
   - metrics_auth_file:   credentials for metrics_port, one per line: 'basic
                          user:password' or 'bearer TOKEN' (re-read when it changes);
                          every request must then authenticate
   - metrics_auth:        none: serve metrics_port without authentication even when
                          the cache port requires it (-Y, -S, ssl_verify_mode 2/3;
                          without this, start-up fails there unless credentials are
                          given); required: always authenticate
   - metrics_max_conns:   admin connections at once; past it a new connection closes
                          the least recently used one (default: 1024)
   - metrics_header_timeout: seconds to receive a request's headers (default: 10)
   - metrics_idle_timeout: seconds a kept-alive admin connection may stay idle
                          (default: 60)
   - observe:             on|off: per-request accounting (default: on)
   - debugtime:           (tests only) enable the debugtime clock command
   - ssl_chain_cert:      certificate chain file in PEM format
   - ssl_key:             private key, if not part of the -ssl_chain_cert
   - ssl_keyformat:       private key format (1 PEM, 2 DER) (default: 1, PEM)
   - ssl_verify_mode:     peer certificate verification mode, default is 0(None).
                          valid values are 0(None), 1(Request), 2(Require)
                          or 3(Once: the same as 2, there is no renegotiation)
   - ssl_ciphers:         TLS 1.2 cipher suites, OpenSSL names separated by ':'
   - ssl_ca_cert:         PEM format file of acceptable client CA's
   - ssl_wbuf_size:       size in kilobytes of per-connection TLS output buffer
                          (default: 16)
   - ssl_session_cache:   enable server-side TLS session cache, to support session
                          resumption
   - ssl_kernel_tls:      accepted; kernel TLS offload is not available (warning)
   - ssl_handshake_timeout: seconds a TLS handshake may take before the
                          connection is closed (default: 10)
   - ssl_min_version:     minimum protocol version to accept (default: tlsv1.2)
                          valid values are 0(tlsv1.0), 1(tlsv1.1), 2(tlsv1.2), or 3(tlsv1.3);
                          0 and 1 accept TLS 1.2 and up (no TLS 1.0/1.1 here)
",
        version = env!("CARGO_PKG_VERSION"),
        compat = crate::counters::VERSION,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Settings, UsageError> {
        match parse_args(args.iter().map(|s| s.to_string()))? {
            Command::Run(s) => Ok(s),
            _ => panic!("not a run"),
        }
    }

    /// memcached's port rules (its t/issue_67.t): -1 is any free port, and
    /// `-U` without `-p` moves TCP to the UDP port.
    #[test]
    fn ports_as_memcached_reads_them() {
        assert_eq!((run(&[]).unwrap().port, run(&[]).unwrap().udp_port), (11211, 0));
        let s = run(&["-U", "11222"]).unwrap();
        assert_eq!((s.port, s.udp_port), (11222, 11222));
        let s = run(&["-U", "-1"]).unwrap();
        assert_eq!((s.port, s.udp_port), (-1, -1));
        let s = run(&["-p", "11242", "-U", "11243"]).unwrap();
        assert_eq!((s.port, s.udp_port), (11242, 11243));
        let s = run(&["-U", "0"]).unwrap();
        assert_eq!((s.port, s.udp_port), (11211, 0));
        assert_eq!(run(&["-p", "-1"]).unwrap().port, -1);
        assert!(run(&["-p", "65536"]).is_err());
        assert!(run(&["-p", "-2"]).is_err());
    }

    #[test]
    fn parses_memcached_style_flags() {
        let s = run(&["-p", "1234", "-U0", "-vv", "-m", "128", "-I", "2m", "-o", "idle_timeout=3,relaxed_privileges", "-c", "10", "-t", "2", "-l", "127.0.0.1,::1"]).unwrap();
        assert_eq!(s.port, 1234);
        assert_eq!(s.udp_port, 0);
        assert_eq!(s.verbose, 2);
        assert_eq!(s.memory_limit, 128 << 20);
        assert_eq!(s.item_size_max, 2 << 20);
        assert_eq!(s.idle_timeout, 3);
        assert!(s.relaxed_privileges);
        assert_eq!(s.max_connections, 10);
        assert_eq!(s.threads, 2);
        assert_eq!(s.listen, vec!["127.0.0.1", "::1"]);
        let s = run(&["--port=99", "--memory-limit", "256", "-I", "32m"]).unwrap();
        assert_eq!((s.port, s.memory_limit, s.item_size_max), (99, 256 << 20, 32 << 20));
    }

    #[test]
    fn parses_grace_options() {
        let s = run(&["-o", "grace=30s,grace_prefix=page:1m,grace_prefix=a:b:10,grace_lease=3"]).unwrap();
        assert_eq!(s.grace.default, 30);
        assert_eq!(s.grace.lease, 3);
        assert_eq!(s.grace.prefixes, vec![(b"page".to_vec(), 60), (b"a:b".to_vec(), 10)]);
        assert!(run(&["-o", "grace=soon"]).is_err());
        assert!(run(&["-o", "grace_prefix=30s"]).is_err());
    }

    #[test]
    fn parses_coalesce_options() {
        let s = run(&["-o", "grace=30s,coalesce=250ms,coalesce_max_key=8,coalesce_max=100"]).unwrap();
        assert_eq!(s.coalesce.window, std::time::Duration::from_millis(250));
        assert_eq!((s.coalesce.max_per_key, s.coalesce.max_total), (8, 100));
        assert!(run(&["-o", "grace=30s,coalesce=later"]).is_err());
        // Coalescing covers grace's keys: without grace it has none.
        assert!(run(&["-o", "coalesce=1s"]).is_err());
    }

    #[test]
    fn rejects_what_memcached_rejects() {
        for bad in [&["-c", "0"][..], &["-c", "-1"], &["-t", "0"], &["-I", "1000"], &["-I", "2g"], &["-B", "http"], &["-m", "64", "-I", "33m"], &["-o", "frobnicate"], &["-Z", "-p", "0"], &["-Z", "-o", "ssl_verify_mode=4"], &["-o", "ssl_min_version=9"], &["-o", "metrics_tls"], &["-l", "notls:127.0.0.1:1"], &["-q"]] {
            assert!(run(bad).is_err(), "{bad:?} should fail");
        }
    }

    /// memcached 1.6.30+'s `-l` TLS prefixes: refused without -Z with its
    /// messages (the 'otls' of mtls: included) and EX_OSERR, as it refuses
    /// them when binding; with -Z an mtls: listener without a CA warns.
    #[test]
    fn listener_tls_prefixes_need_tls() {
        for (entry, word) in [("notls:127.0.0.1:1", "notls"), ("btls:127.0.0.1:1", "btls"), ("127.0.0.1:2,mtls:127.0.0.1:1", "otls")] {
            let e = run(&["-l", entry]).unwrap_err();
            assert_eq!((e.0.as_str(), e.1), (format!("'{word}' option is valid only when SSL is enabled").as_str(), EX_OSERR), "-l {entry}");
        }
        let s = run(&["-Z", "-l", "notls:127.0.0.1:1,mtls:127.0.0.1:2", "-l", "btls:127.0.0.1:3"]).unwrap();
        assert_eq!(s.listen, vec!["notls:127.0.0.1:1", "mtls:127.0.0.1:2", "btls:127.0.0.1:3"]);
        assert!(s.warnings.iter().any(|w| w.contains("mtls: listener without -o ssl_ca_cert")), "{:?}", s.warnings);
        let s = run(&["-Z", "-o", "ssl_ca_cert=/ca.pem", "-l", "mtls:127.0.0.1:2"]).unwrap();
        assert!(!s.warnings.iter().any(|w| w.contains("mtls:")), "{:?}", s.warnings);
    }

    #[test]
    fn item_size_limits_and_messages_match_memcached() {
        // Messages and precedence as printed by memcached 1.6.18.
        let msg = |args: &[&str]| run(args).unwrap_err().0;
        assert_eq!(msg(&["-m", "4096", "-I", "1025m"]), "Cannot set item size limit higher than a gigabyte.");
        assert_eq!(msg(&["-m", "4096", "-I", "1073741825"]), "Cannot set item size limit higher than a gigabyte.");
        assert_eq!(msg(&["-m", "64", "-I", "2000m"]), "Cannot set item size limit higher than 1/2 of memory max.");
        assert_eq!(msg(&["-m", "2047", "-I", "1024m"]), "Cannot set item size limit higher than 1/2 of memory max.");
        assert_eq!(msg(&["-m", "255", "-I", "128m"]), "Cannot set item size limit higher than 1/2 of memory max.");
        assert_eq!(msg(&["-I", "1023"]), "Item max size cannot be less than 1024 bytes.");
        // The largest accepted: 1 GiB, with -m at least twice that.
        for i in ["1024m", "1073741824", "1g", "1048576k"] {
            assert_eq!(run(&["-m", "2048", "-I", i]).unwrap().item_size_max, 1 << 30, "-I {i}");
        }
        assert_eq!(run(&["-m", "256", "-I", "128m"]).unwrap().item_size_max, 128 << 20);
    }

    #[test]
    fn memory_file() {
        assert_eq!(run(&["-e", "/dev/shm/cache"]).unwrap().memory_file.as_deref(), Some("/dev/shm/cache"));
        assert_eq!(run(&["--memory-file=/x"]).unwrap().memory_file.as_deref(), Some("/x"));
        assert_eq!(run(&[]).unwrap().memory_file, None);
        let rel = run(&["-e", "cache.snap"]).unwrap().memory_file.unwrap();
        assert!(rel.starts_with('/') && rel.ends_with("/cache.snap"), "{rel}");
        assert!(run(&["-e", ""]).is_err());
    }

    #[test]
    fn names_unsupported_flags() {
        let e = run(&["-k"]).unwrap_err();
        assert!(e.0.contains("-k"), "{}", e.0);
        let e = run(&["-o", "ext_path=/tmp/x:64m"]).unwrap_err();
        assert!(e.0.contains("ext_path"), "{}", e.0);
    }

    #[test]
    fn auth_file_speaks_ascii_only() {
        let s = run(&["-Y", "/x"]).unwrap();
        assert_eq!((s.auth_file.as_deref(), s.protocol), (Some("/x"), Protocol::Ascii));
        assert_eq!(run(&["-Y", "/x", "-B", "ascii"]).unwrap().protocol, Protocol::Ascii);
        for bad in [&["-Y", "/x", "-B", "binary"][..], &["-Y", "/x", "-B", "auto"], &["-Y", "/x", "-U", "11211"]] {
            assert!(run(bad).is_err(), "{bad:?}");
        }
    }

    /// The admin listener's options, and when it must authenticate.
    #[test]
    fn admin_listener_options() {
        let s = run(&["-o", "metrics_port=9150,metrics_max_conns=64,metrics_header_timeout=3,metrics_idle_timeout=30"]).unwrap();
        let o = &s.observe;
        assert_eq!((o.metrics_max_conns, o.metrics_header_timeout, o.metrics_idle_timeout), (64, 3, 30));
        assert!(!s.metrics_auth_required());
        let s = run(&["-o", "metrics_port=9150,metrics_auth_file=/x"]).unwrap();
        assert!(s.metrics_auth_required() && !s.cache_requires_auth());
        let s = run(&["-Y", "/y", "-o", "metrics_port=9150,metrics_auth=none"]).unwrap();
        assert!(s.cache_requires_auth() && !s.metrics_auth_required());
        // Without metrics_port nothing is asked of it.
        assert!(run(&["-Y", "/y"]).is_ok());
        for bad in [
            &["-Y", "/y", "-o", "metrics_port=1"][..],
            &["-S", "-o", "metrics_port=1"],
            &["-o", "metrics_port=1,metrics_auth=required"],
            &["-o", "metrics_port=1,metrics_auth=none,metrics_auth_file=/x"],
            &["-o", "metrics_auth=maybe"],
            &["-o", "metrics_max_conns=0"],
            &["-o", "metrics_header_timeout=0"],
        ] {
            assert!(run(bad).is_err(), "{bad:?}");
        }
    }

    /// memcached 1.6.18's rules and messages (`memcached -S -B auto`: exit 64).
    #[test]
    fn sasl_speaks_binary_only() {
        let s = run(&["-S"]).unwrap();
        assert_eq!((s.sasl, s.protocol), (true, Protocol::Binary));
        assert_eq!(run(&["--enable-sasl", "-B", "binary"]).unwrap().protocol, Protocol::Binary);
        for bad in [&["-S", "-B", "auto"][..], &["-S", "-B", "ascii"], &["-S", "-B", "binary", "-B", "ascii"]] {
            assert_eq!(run(bad).unwrap_err().0, "ERROR: You cannot allow the ASCII protocol while using SASL.", "{bad:?}");
        }
        assert_eq!(run(&["-S", "-U", "11211"]).unwrap_err().0, "ERROR: Cannot enable UDP while using binary SASL authentication.");
        // As memcached: -Y without -B then makes it ascii (SASL never applies).
        assert_eq!(run(&["-S", "-Y", "/x"]).unwrap().protocol, Protocol::Ascii);
        // memcached -h lists -S; its t/binary-sasl.t looks for "sasl" there.
        assert!(help_text().to_lowercase().contains("sasl"));
    }

    #[test]
    fn help_does_not_claim_missing_features() {
        let h = help_text();
        for word in ["ext_path", "proxy_config", "no_drop_privileges"] {
            assert!(!h.to_lowercase().contains(word), "help mentions {word}");
        }
        assert!(h.contains("unix-socket"));
        // memcached's t/lib/MemcachedTest.pm runs TLS tests only if -h says so.
        assert!(h.contains("enable-ssl"));
    }
}
