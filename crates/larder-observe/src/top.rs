//! `larder top --server host:port`: a top-like view of a running server.
//!
//! Every interval (default 1 s) it sends, over one connection:
//!
//! * `stats` (any memcached-compatible server): ops/s, gets/s, sets/s, hit
//!   ratio, evictions/s, network in/out per second, all computed from the
//!   deltas of the counters between two samples (the first screen shows
//!   lifetime averages); memory use against `limit_maxbytes`, items,
//!   connections.
//! * `stats prefixes`, `stats hotkeys`, `stats bigkeys` (larder only; the
//!   formats are documented in [`crate::prefix`], [`crate::hotkeys`],
//!   [`crate::bigkeys`]). A server that answers anything but `STAT` lines
//!   and `END` (memcached says `ERROR`) is not asked again; those panels are
//!   left out.
//!
//! Keys and prefixes arrive escaped ([`crate::escape`]: printable ASCII,
//! `%XX` for other bytes and `%`). `top` shows a key decoded when the
//! decoded text is printable (UTF-8 without control characters or
//! whitespace, so `caf%C3%A9` shows as `café`), and as sent otherwise, so
//! no key can put control bytes or terminal escapes on the screen
//! ([`display_key`]). The reply reader relies on the escaping too: no key
//! can end a reply early with a forged `END`.
//!
//! and redraws the terminal with ANSI `ESC[H ESC[2J` (no curses). The
//! leading prefixes are listed by memory, by requests/s and by bytes
//! sent/s; hot keys by requests and by bytes; big keys by size.
//!
//! Options: `--server host:port` (default `127.0.0.1:11211`),
//! `--interval <secs>` (default 1), `--iterations <n>` (stop after n
//! screens; default 0 = until interrupted), `--rows <n>` (rows per table,
//! default 10), `--no-clear` (append screens instead of redrawing; for
//! logs and tests).
//!
//! The pieces are pure and tested on canned replies: [`parse_stats`],
//! [`Sample`], [`render`].

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Parses `STAT <name> <value>` lines (value = rest of the line) up to
/// `END`. Other lines are ignored.
pub fn parse_stats(text: &str) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(rest) = line.strip_prefix("STAT ") {
            let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
            v.push((name.to_string(), value.to_string()));
        } else if line == "END" {
            break;
        }
    }
    v
}

/// How `top` shows a key or prefix that the server sent escaped: decoded
/// when that gives printable text (no control characters, no whitespace),
/// else as sent (already printable ASCII).
pub fn display_key(escaped: &str) -> String {
    match crate::escape::unescape(escaped.as_bytes()).map(String::from_utf8) {
        Some(Ok(text)) if !text.chars().any(|c| c.is_control() || c.is_whitespace()) => text,
        _ => escaped.chars().map(|c| if c.is_ascii_graphic() { c } else { '?' }).collect(),
    }
}

/// One row of `stats prefixes`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrefixInfo {
    /// The row as the server names it (`prefix:<escaped>`, `other`,
    /// `unprefixed`): unique, matches rows across samples.
    pub id: String,
    /// What the screen shows ([`display_key`] of the prefix, `(other)`,
    /// `(no prefix)`).
    pub name: String,
    pub fields: HashMap<String, i64>,
}

impl PrefixInfo {
    pub fn get(&self, f: &str) -> i64 {
        self.fields.get(f).copied().unwrap_or(0)
    }
}

/// One hot or big key line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyInfo {
    /// Empty when the server hides key names (`-X`: no `key` line).
    pub key: String,
    /// The key's prefix, when the server sent one ([`display_key`]ed).
    pub prefix: Option<String>,
    pub fields: HashMap<String, String>,
}

impl KeyInfo {
    /// What the screen shows: the key, or for a server started with `-X`
    /// (it lists sizes and counts but no key names) `(hidden)` with the
    /// prefix when known.
    pub fn shown(&self) -> String {
        match (&self.key[..], &self.prefix) {
            ("", Some(p)) => format!("(hidden: {p})"),
            ("", None) => "(hidden)".to_string(),
            (k, _) => k.to_string(),
        }
    }

    pub fn num(&self, f: &str) -> i64 {
        self.fields.get(f).and_then(|v| v.parse().ok()).unwrap_or(0)
    }
}

/// Everything fetched in one refresh.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// Seconds since an arbitrary origin (for rates).
    pub at: f64,
    pub stats: HashMap<String, String>,
    /// `None`: the server does not support `stats prefixes`.
    pub prefixes: Option<Vec<PrefixInfo>>,
    pub hot_requests: Option<Vec<KeyInfo>>,
    pub hot_bytes: Option<Vec<KeyInfo>>,
    pub hot_window: Option<i64>,
    pub big: Option<Vec<KeyInfo>>,
}

impl Sample {
    pub fn num(&self, name: &str) -> f64 {
        self.stats.get(name).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
    }

    /// Fills `prefixes` from a `stats prefixes` reply.
    pub fn set_prefixes(&mut self, pairs: &[(String, String)]) {
        let mut rows: Vec<PrefixInfo> = Vec::new();
        // by the row as sent (`prefix:<escaped>`, `other`, `unprefixed`),
        // so a real prefix named like a fold's display name stays apart
        let mut pos: HashMap<&str, usize> = HashMap::new();
        for (name, value) in pairs {
            let Some((row, field)) = name.rsplit_once(':') else { continue };
            let shown = if let Some(p) = row.strip_prefix("prefix:") {
                display_key(p)
            } else if row == "other" {
                "(other)".to_string()
            } else if row == "unprefixed" {
                "(no prefix)".to_string()
            } else {
                continue;
            };
            let i = *pos.entry(row).or_insert_with(|| {
                rows.push(PrefixInfo { id: row.to_string(), name: shown, fields: HashMap::new() });
                rows.len() - 1
            });
            rows[i].fields.insert(field.to_string(), value.parse().unwrap_or(0));
        }
        self.prefixes = Some(rows);
    }

    /// Fills the hot-key lists from a `stats hotkeys` reply.
    pub fn set_hotkeys(&mut self, pairs: &[(String, String)]) {
        let mut req = Vec::new();
        let mut byt = Vec::new();
        for (name, value) in pairs {
            if name == "hotkeys_window" {
                self.hot_window = value.parse().ok();
            }
            let Some(rest) = name.strip_prefix("hotkey:") else { continue };
            let parts: Vec<&str> = rest.split(':').collect();
            let [kind, rank, field] = parts[..] else { continue };
            let list = if kind == "requests" { &mut req } else { &mut byt };
            key_field(list, rank, field, value);
        }
        self.hot_requests = Some(req);
        self.hot_bytes = Some(byt);
    }

    /// Fills `big` from a `stats bigkeys` reply.
    pub fn set_bigkeys(&mut self, pairs: &[(String, String)]) {
        let mut big = Vec::new();
        for (name, value) in pairs {
            let Some(rest) = name.strip_prefix("bigkey:") else { continue };
            let Some((rank, field)) = rest.split_once(':') else { continue };
            key_field(&mut big, rank, field, value);
        }
        self.big = Some(big);
    }
}

fn key_field(list: &mut Vec<KeyInfo>, rank: &str, field: &str, value: &str) {
    let Ok(r) = rank.parse::<usize>() else { return };
    if r == 0 || r > 10_000 {
        return;
    }
    while list.len() < r {
        list.push(KeyInfo::default());
    }
    if field == "key" {
        list[r - 1].key = display_key(value);
    } else {
        if field == "prefix" {
            list[r - 1].prefix = Some(display_key(value));
        }
        list[r - 1].fields.insert(field.to_string(), value.to_string());
    }
}

/// `1.5 KiB`, `3.0 MiB`...
pub fn human_bytes(v: f64) -> String {
    const U: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = v;
    let mut i = 0;
    while v.abs() >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

fn human_secs(s: f64) -> String {
    let s = s as u64;
    if s >= 86400 {
        format!("{}d{:02}h", s / 86400, (s % 86400) / 3600)
    } else if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
        t.push('~');
        t
    }
}

const OPS: [&str; 11] = [
    "cmd_get",
    "cmd_set",
    "cmd_touch",
    "delete_hits",
    "delete_misses",
    "incr_hits",
    "incr_misses",
    "decr_hits",
    "decr_misses",
    "cas_hits",
    "cas_misses",
];

/// Draws one screen (no ANSI codes; [`run`] adds them). With `prev`, rates
/// are deltas over the interval; without, lifetime averages (uptime).
pub fn render(cur: &Sample, prev: Option<&Sample>, server: &str, rows: usize) -> String {
    let mut o = String::new();
    type Delta<'a> = Box<dyn Fn(&str) -> f64 + 'a>;
    let (dt, delta): (f64, Delta) = match prev {
        Some(p) if cur.at > p.at => (cur.at - p.at, Box::new(move |n: &str| (cur.num(n) - p.num(n)).max(0.0))),
        _ => (cur.num("uptime").max(1.0), Box::new(move |n: &str| cur.num(n))),
    };
    let rate = |n: &str| delta(n) / dt;
    let ops: f64 = OPS.iter().map(|n| delta(n)).sum::<f64>() / dt;
    let gets = delta("get_hits") + delta("get_misses");
    let hit_ratio = if gets > 0.0 { format!("{:.1}%", 100.0 * delta("get_hits") / gets) } else { "-".into() };
    let version = cur.stats.get("version").map(String::as_str).unwrap_or("?");
    let _ = writeln!(
        o,
        "larder top - {server} - version {version} - uptime {} - {}",
        human_secs(cur.num("uptime")),
        if prev.is_some() { format!("rates over {dt:.1}s") } else { "lifetime averages".into() }
    );
    let _ = writeln!(
        o,
        "ops/s {:.0}  get/s {:.0}  set/s {:.0}  hit ratio {}  evictions/s {:.0}  in {}/s  out {}/s",
        ops,
        rate("cmd_get"),
        rate("cmd_set"),
        hit_ratio,
        rate("evictions"),
        human_bytes(rate("bytes_read")),
        human_bytes(rate("bytes_written")),
    );
    let used = cur.num("bytes");
    let limit = cur.num("limit_maxbytes");
    let pct = if limit > 0.0 { format!(" ({:.1}%)", 100.0 * used / limit) } else { String::new() };
    let _ = writeln!(
        o,
        "memory {} / {}{}  items {:.0}  connections {:.0}",
        human_bytes(used),
        human_bytes(limit),
        pct,
        cur.num("curr_items"),
        cur.num("curr_connections"),
    );

    if let Some(pfx) = &cur.prefixes {
        let prev_row = |id: &str| prev.and_then(|p| p.prefixes.as_ref()).and_then(|v| v.iter().find(|r| r.id == id));
        let prate = |r: &PrefixInfo, f: &str| -> f64 {
            match (prev, prev_row(&r.id)) {
                (Some(_), Some(p)) => (r.get(f) - p.get(f)).max(0) as f64 / dt,
                (Some(_), None) => r.get(f) as f64 / dt,
                _ => r.get(f) as f64 / dt,
            }
        };
        let total: i64 = pfx.iter().map(|r| r.get("bytes")).sum();
        let mut by_mem: Vec<&PrefixInfo> = pfx.iter().collect();
        by_mem.sort_by(|a, b| b.get("bytes").cmp(&a.get("bytes")).then_with(|| a.name.cmp(&b.name)));
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{:<24} {:>10} {:>11} {:>6} {:>9} {:>6} {:>9} {:>11}",
            "PREFIX", "ITEMS", "MEMORY", "%MEM", "GET/s", "HIT%", "SET/s", "SENT/s"
        );
        for r in by_mem.iter().take(rows) {
            let g = prate(r, "gets");
            let h = prate(r, "hits");
            let _ = writeln!(
                o,
                "{:<24} {:>10} {:>11} {:>6} {:>9.0} {:>6} {:>9.0} {:>11}",
                clip(&r.name, 24),
                r.get("items"),
                human_bytes(r.get("bytes") as f64),
                if total > 0 { format!("{:.1}%", 100.0 * r.get("bytes") as f64 / total as f64) } else { "-".into() },
                g,
                if g > 0.0 { format!("{:.1}%", 100.0 * h / g) } else { "-".into() },
                prate(r, "sets"),
                human_bytes(prate(r, "bytes_sent")) + "/s",
            );
        }
        let mut by_req: Vec<(&PrefixInfo, f64)> =
            pfx.iter().map(|r| (r, prate(r, "gets") + prate(r, "sets") + prate(r, "deletes"))).collect();
        by_req.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.name.cmp(&b.0.name)));
        let mut by_sent: Vec<(&PrefixInfo, f64)> = pfx.iter().map(|r| (r, prate(r, "bytes_sent"))).collect();
        by_sent.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.name.cmp(&b.0.name)));
        let _ = writeln!(o);
        let _ = writeln!(o, "{:<24} {:>12}   {:<24} {:>12}", "PREFIX BY REQUESTS", "REQ/s", "PREFIX BY BYTES SENT", "SENT/s");
        for i in 0..rows.min(5).min(pfx.len()) {
            let _ = writeln!(
                o,
                "{:<24} {:>12.0}   {:<24} {:>12}",
                clip(&by_req[i].0.name, 24),
                by_req[i].1,
                clip(&by_sent[i].0.name, 24),
                human_bytes(by_sent[i].1) + "/s"
            );
        }
    }

    if let (Some(req), Some(byt)) = (&cur.hot_requests, &cur.hot_bytes) {
        let _ = writeln!(o);
        let w = cur.hot_window.map(|w| format!(" (last {w}s)")).unwrap_or_default();
        let _ = writeln!(o, "{:<32} {:>10}   {:<32} {:>11}", format!("HOT KEYS BY REQUESTS{w}"), "REQUESTS", "HOT KEYS BY BYTES SENT", "BYTES");
        for i in 0..rows.min(req.len().max(byt.len())) {
            let (a, an) = req.get(i).map(|k| (clip(&k.shown(), 32), k.num("count").to_string())).unwrap_or_default();
            let (b, bn) = byt.get(i).map(|k| (clip(&k.shown(), 32), human_bytes(k.num("count") as f64))).unwrap_or_default();
            let _ = writeln!(o, "{a:<32} {an:>10}   {b:<32} {bn:>11}");
        }
    }

    if let Some(big) = &cur.big {
        let _ = writeln!(o);
        let _ = writeln!(o, "{:<40} {:>11} {:>10} {:>10}", "BIG KEYS", "SIZE", "AGE", "TTL");
        for k in big.iter().take(rows) {
            let ttl = k.num("ttl");
            let _ = writeln!(
                o,
                "{:<40} {:>11} {:>10} {:>10}",
                clip(&k.shown(), 40),
                human_bytes(k.num("size") as f64),
                human_secs(k.num("age") as f64),
                if ttl < 0 { "never".to_string() } else { human_secs(ttl as f64) }
            );
        }
    }
    o
}

/// A connection that sends commands and reads `STAT` replies.
pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(server: &str, timeout: Duration) -> std::io::Result<Self> {
        let addr = server
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address"))?;
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let _ = stream.set_nodelay(true);
        Ok(Client { stream, buf: Vec::new() })
    }

    /// Sends `cmd` (without `\r\n`) and returns the `STAT` pairs, or
    /// `Ok(None)` when the server answers an error line instead.
    pub fn stats(&mut self, cmd: &str) -> std::io::Result<Option<Vec<(String, String)>>> {
        self.stream.write_all(format!("{cmd}\r\n").as_bytes())?;
        self.buf.clear();
        let mut chunk = [0u8; 16384];
        loop {
            // complete when the last line is END, or the first line is an error
            if self.buf.ends_with(b"END\r\n") && (self.buf.len() == 5 || self.buf[..self.buf.len() - 5].ends_with(b"\r\n")) {
                let text = String::from_utf8_lossy(&self.buf);
                return Ok(Some(parse_stats(&text)));
            }
            if let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
                let first = &self.buf[..nl];
                if !first.starts_with(b"STAT ") && first != b"END\r" {
                    return Ok(None);
                }
            }
            if self.buf.len() > 64 << 20 {
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "reply too large"));
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "server closed the connection"));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

struct Options {
    server: String,
    interval: f64,
    iterations: u64,
    rows: usize,
    clear: bool,
}

const USAGE: &str = "usage: larder top [--server host:port] [--interval secs] [--iterations n] [--rows n] [--no-clear]";

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options { server: "127.0.0.1:11211".into(), interval: 1.0, iterations: 0, rows: 10, clear: true };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut val = |name: &str| inline.clone().or_else(|| it.next().cloned()).ok_or(format!("{name} needs a value"));
        match flag {
            "--server" | "-s" => o.server = val("--server")?,
            "--interval" | "-i" => {
                o.interval = val("--interval")?.parse().map_err(|_| "--interval: not a number".to_string())?;
                if o.interval.is_nan() || o.interval <= 0.0 {
                    return Err("--interval must be > 0".into());
                }
            }
            "--iterations" | "-n" => o.iterations = val("--iterations")?.parse().map_err(|_| "--iterations: not a number".to_string())?,
            "--rows" => o.rows = val("--rows")?.parse().map_err(|_| "--rows: not a number".to_string())?,
            "--no-clear" => o.clear = false,
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !o.server.contains(':') {
        o.server.push_str(":11211");
    }
    Ok(o)
}

/// `larder top [options]`: `args` are the arguments after `top`. Returns
/// the process exit code (0 ok, 1 connection or protocol error, 2 usage).
pub fn run(args: &[String]) -> i32 {
    let o = match parse_args(args) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("larder top: {e}");
            }
            eprintln!("{USAGE}");
            return if e.is_empty() { 0 } else { 2 };
        }
    };
    let mut client = match Client::connect(&o.server, Duration::from_secs(5)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("larder top: cannot connect to {}: {e}", o.server);
            return 1;
        }
    };
    let origin = Instant::now();
    let mut prev: Option<Sample> = None;
    let (mut has_prefixes, mut has_hot, mut has_big) = (true, true, true);
    let mut n = 0u64;
    let stdout = std::io::stdout();
    loop {
        let mut s = Sample { at: origin.elapsed().as_secs_f64(), ..Default::default() };
        let res: std::io::Result<()> = (|| {
            s.stats = client.stats("stats")?.unwrap_or_default().into_iter().collect();
            if has_prefixes {
                match client.stats("stats prefixes")? {
                    Some(p) => s.set_prefixes(&p),
                    None => has_prefixes = false,
                }
            }
            if has_hot {
                match client.stats("stats hotkeys")? {
                    Some(p) => s.set_hotkeys(&p),
                    None => has_hot = false,
                }
            }
            if has_big {
                match client.stats("stats bigkeys")? {
                    Some(p) => s.set_bigkeys(&p),
                    None => has_big = false,
                }
            }
            Ok(())
        })();
        if let Err(e) = res {
            eprintln!("larder top: {}: {e}", o.server);
            return 1;
        }
        let screen = render(&s, prev.as_ref(), &o.server, o.rows);
        {
            let mut out = stdout.lock();
            if o.clear {
                let _ = out.write_all(b"\x1b[H\x1b[2J");
            }
            let _ = out.write_all(screen.as_bytes());
            if !o.clear {
                let _ = out.write_all(b"\n");
            }
            let _ = out.flush();
        }
        n += 1;
        if o.iterations > 0 && n >= o.iterations {
            return 0;
        }
        prev = Some(s);
        std::thread::sleep(Duration::from_secs_f64(o.interval));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATS1: &str = "STAT pid 1\r\nSTAT uptime 100\r\nSTAT version 1.6.18\r\nSTAT curr_connections 3\r\n\
STAT cmd_get 1000\r\nSTAT cmd_set 100\r\nSTAT get_hits 900\r\nSTAT get_misses 100\r\nSTAT bytes_read 10000\r\n\
STAT bytes_written 50000\r\nSTAT limit_maxbytes 67108864\r\nSTAT bytes 33554432\r\nSTAT curr_items 10\r\nSTAT evictions 0\r\nEND\r\n";
    const STATS2: &str = "STAT pid 1\r\nSTAT uptime 102\r\nSTAT version 1.6.18\r\nSTAT curr_connections 3\r\n\
STAT cmd_get 3000\r\nSTAT cmd_set 300\r\nSTAT get_hits 2500\r\nSTAT get_misses 500\r\nSTAT bytes_read 12048\r\n\
STAT bytes_written 52048\r\nSTAT limit_maxbytes 67108864\r\nSTAT bytes 33554432\r\nSTAT curr_items 10\r\nSTAT evictions 4\r\nEND\r\n";

    fn pairs(s: &str) -> Vec<(String, String)> {
        parse_stats(s)
    }

    #[test]
    fn parses_and_renders_rates() {
        let a = Sample { at: 10.0, stats: pairs(STATS1).into_iter().collect(), ..Default::default() };
        let b = Sample { at: 12.0, stats: pairs(STATS2).into_iter().collect(), ..Default::default() };
        let first = render(&a, None, "h:1", 10);
        assert!(first.contains("lifetime averages"), "{first}");
        assert!(first.contains("ops/s 11  get/s 10  set/s 1  hit ratio 90.0%"), "{first}");
        let screen = render(&b, Some(&a), "h:1", 10);
        let lines: Vec<&str> = screen.lines().collect();
        assert_eq!(lines[0], "larder top - h:1 - version 1.6.18 - uptime 1m42s - rates over 2.0s");
        assert_eq!(lines[1], "ops/s 1100  get/s 1000  set/s 100  hit ratio 80.0%  evictions/s 2  in 1.0 KiB/s  out 1.0 KiB/s");
        assert_eq!(lines[2], "memory 32.0 MiB / 64.0 MiB (50.0%)  items 10  connections 3");
        assert_eq!(lines.len(), 3, "memcached: no larder panels");
    }

    #[test]
    fn larder_panels() {
        let st = crate::prefix::PrefixStats::new(Default::default());
        let mut w = st.worker();
        for i in 0..10 {
            w.on_set(format!("user:{i}").as_bytes(), 1000, None);
            w.on_set(format!("item:{i}").as_bytes(), 100, None);
        }
        let mut p1 = Vec::new();
        st.render_prefixes(&mut p1);
        for i in 0..10 {
            w.on_get(format!("item:{i}").as_bytes(), true, 5000);
            w.on_get(format!("item:{i}").as_bytes(), true, 5000);
        }
        let mut p2 = Vec::new();
        st.render_prefixes(&mut p2);

        let hk = crate::hotkeys::HotKeys::new(16, 60);
        let mut hw = hk.worker();
        for _ in 0..30 {
            hw.on_request(b"item:3", 5000, 1000);
        }
        hw.on_request(b"user:1", 10, 1000);
        let mut h = Vec::new();
        hk.render(&mut h, 1001, 5);
        let bk = crate::bigkeys::BigKeys::new(5, 1);
        bk.on_store(b"item:huge", 10 << 20, 990, 0);
        let mut b = Vec::new();
        bk.render(&mut b, 1000, b':', |_, _| true);

        let mk = |at: f64, stats: &str, p: &[u8]| {
            let mut s = Sample { at, stats: pairs(stats).into_iter().collect(), ..Default::default() };
            s.set_prefixes(&parse_stats(std::str::from_utf8(p).unwrap()));
            s.set_hotkeys(&parse_stats(std::str::from_utf8(&h).unwrap()));
            s.set_bigkeys(&parse_stats(std::str::from_utf8(&b).unwrap()));
            s
        };
        let a = mk(10.0, STATS1, &p1);
        let c = mk(12.0, STATS2, &p2);
        assert_eq!(c.prefixes.as_ref().unwrap()[0].name, "user");
        assert_eq!(c.prefixes.as_ref().unwrap()[0].get("bytes"), 10_000);
        let screen = render(&c, Some(&a), "h:1", 10);
        let lines: Vec<&str> = screen.lines().collect();
        let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}\n{screen}"));
        let t = at("PREFIX   ");
        assert_eq!(
            lines[t + 1],
            "user                             10     9.8 KiB  90.9%         0      -         0       0 B/s"
        );
        assert_eq!(
            lines[t + 2],
            "item                             10      1000 B   9.1%        10 100.0%         0  48.8 KiB/s"
        );
        let r = at("PREFIX BY REQUESTS");
        assert!(lines[r + 1].starts_with("item  "), "{screen}");
        assert!(lines[r + 1].contains("item                       48.8 KiB/s"), "{screen}");
        let hot = at("HOT KEYS BY REQUESTS (last 1s)");
        assert!(lines[hot + 1].starts_with("item:3  "), "{screen}");
        assert!(lines[hot + 1].contains(" 30   item:3 "), "{screen}");
        let big = at("BIG KEYS");
        assert_eq!(lines[big + 1], format!("{:<40} {:>11} {:>10} {:>10}", "item:huge", "10.0 MiB", "0m10s", "never"));
    }

    /// A server started with -X lists no key names: the panels show
    /// `(hidden)` with the prefix, and the figures.
    #[test]
    fn hidden_key_names() {
        let hk = crate::hotkeys::HotKeys::new(16, 60);
        let mut hw = hk.worker();
        for _ in 0..30 {
            hw.on_request(b"item:3", 5000, 1000);
        }
        hw.on_request(b"plain", 10, 1000);
        let mut h = Vec::new();
        hk.render_hiding_keys(&mut h, 1001, 5, b':');
        let bk = crate::bigkeys::BigKeys::new(5, 1);
        bk.on_store(b"item:huge", 10 << 20, 990, 0);
        let mut b = Vec::new();
        bk.render_hiding_keys(&mut b, 1000, b':', |_, _| true);
        let mut s = Sample { at: 1.0, stats: pairs(STATS1).into_iter().collect(), ..Default::default() };
        s.set_hotkeys(&parse_stats(std::str::from_utf8(&h).unwrap()));
        s.set_bigkeys(&parse_stats(std::str::from_utf8(&b).unwrap()));
        let screen = render(&s, None, "h:1", 10);
        assert!(!screen.contains("item:3") && !screen.contains("item:huge"), "{screen}");
        let lines: Vec<&str> = screen.lines().collect();
        let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}\n{screen}"));
        let hot = at("HOT KEYS BY REQUESTS");
        assert!(lines[hot + 1].starts_with("(hidden: item) ") && lines[hot + 1].contains(" 30 "), "{screen}");
        assert!(lines[hot + 2].starts_with("(hidden) "), "{screen}");
        let big = at("BIG KEYS");
        assert_eq!(lines[big + 1], format!("{:<40} {:>11} {:>10} {:>10}", "(hidden: item)", "10.0 MiB", "0m10s", "never"));
    }

    #[test]
    fn args() {
        let a = |v: &[&str]| parse_args(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let o = a(&["--server", "10.0.0.1:1234", "--iterations=2", "--no-clear"]).unwrap();
        assert_eq!((o.server.as_str(), o.iterations, o.clear), ("10.0.0.1:1234", 2, false));
        assert_eq!(a(&["-s", "myhost"]).unwrap().server, "myhost:11211");
        assert!(a(&["--bogus"]).is_err());
        assert!(a(&["--interval", "0"]).is_err());
        assert_eq!(run(&["--bogus".to_string()]), 2);
    }
}
