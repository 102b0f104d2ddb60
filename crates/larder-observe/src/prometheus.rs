//! Prometheus text exposition format 0.0.4, and a tiny HTTP/1.1 responder
//! for `GET /metrics`.
//!
//! # Writing metrics
//!
//! [`Exposition`] is a streaming writer: declare a family (`# HELP` and
//! `# TYPE` lines) with [`Exposition::family`], then write its samples with
//! [`Exposition::sample`]; histograms in one call with
//! [`Exposition::histogram`]. It escapes what the format requires (`\\`,
//! `\n` in HELP; `\\`, `"`, `\n` in label values), writes floats the way
//! Prometheus parses them (`+Inf`, `-Inf`, `NaN`, shortest round-trip
//! decimal otherwise) and never emits a family twice (a second `family`
//! call with the same name is ignored, so samples still group).
//! [`write_stats`] turns the server's `stats` name/value pairs into
//! `larder_<name>` series (counters with `_total`, a known list of gauges).
//!
//! # Serving them
//!
//! The server owns the admin socket; [`respond`] is pure: give it the bytes
//! read so far and a closure that renders the exposition, and it answers
//! [`HttpReply::NeedMore`] (headers not complete yet) or the full response
//! bytes to write before closing the connection (`Connection: close`, one
//! request per connection, which is all a scraper needs):
//!
//! * `GET /metrics` (query string ignored) and `HEAD /metrics`: `200`,
//!   `Content-Type: text/plain; version=0.0.4; charset=utf-8`;
//! * any other path: `404`; another method: `405`; a malformed request or
//!   headers longer than [`MAX_REQUEST_BYTES`]: `400`.

use std::collections::HashSet;
use std::fmt::Write as _;

/// The `Content-Type` of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Requests whose headers do not end within this many bytes get a 400.
pub const MAX_REQUEST_BYTES: usize = 8192;

/// A metric family's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Untyped,
}

impl MetricType {
    fn as_str(self) -> &'static str {
        match self {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Histogram => "histogram",
            MetricType::Untyped => "untyped",
        }
    }
}

/// Streaming writer of the text exposition format.
#[derive(Default)]
pub struct Exposition {
    out: String,
    seen: HashSet<String>,
}

/// Formats a sample value as Prometheus parses it.
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Replaces characters not allowed in a metric name with `_`.
pub fn sanitize_name(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == ':' { c } else { '_' })
        .collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    /// `# HELP` and `# TYPE` for `name` (once per name).
    pub fn family(&mut self, name: &str, help: &str, ty: MetricType) {
        if !self.seen.insert(name.to_string()) {
            return;
        }
        self.out.push_str("# HELP ");
        self.out.push_str(name);
        self.out.push(' ');
        for c in help.chars() {
            match c {
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                c => self.out.push(c),
            }
        }
        self.out.push('\n');
        let _ = writeln!(self.out, "# TYPE {} {}", name, ty.as_str());
    }

    /// One sample line: `name{l1="v1",...} value`.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        self.labels(labels, None);
        self.out.push(' ');
        self.out.push_str(&format_value(value));
        self.out.push('\n');
    }

    fn labels(&mut self, labels: &[(&str, &str)], le: Option<f64>) {
        if labels.is_empty() && le.is_none() {
            return;
        }
        self.out.push('{');
        let mut first = true;
        for (k, v) in labels {
            if !first {
                self.out.push(',');
            }
            first = false;
            self.out.push_str(k);
            self.out.push_str("=\"");
            escape_label(&mut self.out, v);
            self.out.push('"');
        }
        if let Some(le) = le {
            if !first {
                self.out.push(',');
            }
            self.out.push_str("le=\"");
            self.out.push_str(&format_value(le));
            self.out.push('"');
        }
        self.out.push('}');
    }

    /// A counter family with one unlabelled sample (`name` should end in
    /// `_total`).
    pub fn counter(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, help, MetricType::Counter);
        self.sample(name, &[], value);
    }

    /// A gauge family with one unlabelled sample.
    pub fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, help, MetricType::Gauge);
        self.sample(name, &[], value);
    }

    /// The samples of one histogram series: `buckets` are `(le, cumulative
    /// count)` in increasing `le` order, without `+Inf` (added here, equal to
    /// `count`). Declare the family first with [`MetricType::Histogram`].
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], buckets: &[(f64, u64)], sum: f64, count: u64) {
        let b = format!("{name}_bucket");
        for &(le, c) in buckets {
            self.out.push_str(&b);
            self.labels(labels, Some(le));
            let _ = writeln!(self.out, " {c}");
        }
        self.out.push_str(&b);
        self.labels(labels, Some(f64::INFINITY));
        let _ = writeln!(self.out, " {count}");
        self.sample(&format!("{name}_sum"), labels, sum);
        self.sample(&format!("{name}_count"), labels, count as f64);
    }

    /// The text written so far.
    pub fn as_str(&self) -> &str {
        &self.out
    }

    pub fn finish(self) -> String {
        self.out
    }
}

fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// memcached `stats` names whose values are levels, not running totals.
pub const GAUGE_STATS: &[&str] = &[
    "pid",
    "uptime",
    "time",
    "pointer_size",
    "curr_connections",
    "max_connections",
    "connection_structures",
    "reserved_fds",
    "curr_items",
    "bytes",
    "limit_maxbytes",
    "threads",
    "accepting_conns",
    "hash_power_level",
    "hash_bytes",
    "hash_is_expanding",
    "slab_reassign_running",
    "lru_crawler_running",
    "log_watchers",
    "slab_global_page_pool",
    "total_malloced",
    "response_obj_bytes",
    "read_buf_bytes",
    "read_buf_bytes_free",
    "curr_unfinished_connections",
    "detail_enabled",
    // Seconds since the certificates were (re)loaded: reset by
    // `refresh_certs`, so not a counter.
    "time_since_server_cert_refresh",
];

/// Writes the server's `stats` (name, value) pairs as `larder_<name>`:
/// numeric values only; names in [`GAUGE_STATS`] are gauges, every other
/// numeric stat is a counter named `larder_<name>_total`; `rusage_user` /
/// `rusage_system` (`sec.usec`) become `larder_rusage_*_seconds_total`.
/// `version` becomes `larder_info{version="..."} 1`.
pub fn write_stats(e: &mut Exposition, stats: &[(&str, &str)]) {
    for &(name, value) in stats {
        if name == "version" {
            write_version(e, value);
            continue;
        }
        let v: f64 = match value {
            "yes" => 1.0,
            "no" => 0.0,
            _ => match value.parse::<f64>() {
                Ok(v) => v,
                Err(_) => continue,
            },
        };
        write_stat(e, name, v);
    }
}

/// The server version, as the `larder_info` gauge's label.
pub fn write_version(e: &mut Exposition, version: &str) {
    e.family("larder_info", "Server version.", MetricType::Gauge);
    e.sample("larder_info", &[("version", version)], 1.0);
}

/// One numeric memcached stat, named and typed as [`write_stats`] does
/// (for servers that hold their figures as numbers, not text).
pub fn write_stat(e: &mut Exposition, name: &str, v: f64) {
    let base = sanitize_name(name);
    let help = format!("memcached stat {name}.");
    if name.starts_with("rusage_") {
        let n = format!("larder_{base}_seconds_total");
        e.counter(&n, &help, v);
    } else if GAUGE_STATS.contains(&name) {
        e.gauge(&format!("larder_{base}"), &help, v);
    } else {
        let n = if base.ends_with("_total") { format!("larder_{base}") } else { format!("larder_{base}_total") };
        e.counter(&n, &help, v);
    }
}

/// What [`respond`] made of the request bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum HttpReply {
    /// The request headers are not complete yet: read more.
    NeedMore,
    /// Write these bytes, then close the connection.
    Reply(Vec<u8>),
}

/// A parsed request line.
#[derive(Debug, PartialEq, Eq)]
pub struct RequestLine<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub version: &'a str,
}

/// Parses `METHOD SP target SP HTTP/x.y` once the header block is complete
/// (`\r\n\r\n`, or bare `\n\n`). `Ok(None)`: incomplete; `Err(())`: malformed.
#[allow(clippy::result_unit_err)]
pub fn parse_request(buf: &[u8]) -> Result<Option<RequestLine<'_>>, ()> {
    let end = find(buf, b"\r\n\r\n").or_else(|| find(buf, b"\n\n"));
    if end.is_none() {
        return if buf.len() > MAX_REQUEST_BYTES { Err(()) } else { Ok(None) };
    }
    let line_end = buf.iter().position(|&b| b == b'\n').ok_or(())?;
    let line = &buf[..line_end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = std::str::from_utf8(line).map_err(|_| ())?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(());
    };
    if method.is_empty() || !version.starts_with("HTTP/1.") || !target.starts_with('/') {
        return Err(());
    }
    let path = target.split('?').next().unwrap_or(target);
    Ok(Some(RequestLine { method, path, version }))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn response(status: &str, content_type: &str, body: &str, head: bool) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head {
        r.extend_from_slice(body.as_bytes());
    }
    r
}

/// Answers one scrape: see the module docs.
pub fn respond(buf: &[u8], render: impl FnOnce() -> String) -> HttpReply {
    let req = match parse_request(buf) {
        Ok(None) => return HttpReply::NeedMore,
        Err(()) => return HttpReply::Reply(response("400 Bad Request", "text/plain", "bad request\n", false)),
        Ok(Some(r)) => r,
    };
    let head = req.method == "HEAD";
    if req.method != "GET" && !head {
        return HttpReply::Reply(response("405 Method Not Allowed", "text/plain", "method not allowed\n", head));
    }
    if req.path != "/metrics" {
        return HttpReply::Reply(response("404 Not Found", "text/plain", "not found: try /metrics\n", head));
    }
    HttpReply::Reply(response("200 OK", CONTENT_TYPE, &render(), head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_text() {
        let mut e = Exposition::new();
        e.counter("larder_cmd_get_total", "Get commands.\nSecond \\ line", 42.0);
        e.family("larder_prefix_bytes", "Bytes by prefix.", MetricType::Gauge);
        e.sample("larder_prefix_bytes", &[("prefix", "we\"ird\\\n")], 1.5);
        e.family("larder_prefix_bytes", "again", MetricType::Gauge);
        e.sample("larder_prefix_bytes", &[("prefix", "b")], f64::NAN);
        e.family("lat_seconds", "Latency.", MetricType::Histogram);
        e.histogram("lat_seconds", &[("cmd", "get")], &[(0.001, 3), (0.01, 5)], 0.0123, 6);
        assert_eq!(
            e.finish(),
            "# HELP larder_cmd_get_total Get commands.\\nSecond \\\\ line\n\
             # TYPE larder_cmd_get_total counter\n\
             larder_cmd_get_total 42\n\
             # HELP larder_prefix_bytes Bytes by prefix.\n\
             # TYPE larder_prefix_bytes gauge\n\
             larder_prefix_bytes{prefix=\"we\\\"ird\\\\\\n\"} 1.5\n\
             larder_prefix_bytes{prefix=\"b\"} NaN\n\
             # HELP lat_seconds Latency.\n\
             # TYPE lat_seconds histogram\n\
             lat_seconds_bucket{cmd=\"get\",le=\"0.001\"} 3\n\
             lat_seconds_bucket{cmd=\"get\",le=\"0.01\"} 5\n\
             lat_seconds_bucket{cmd=\"get\",le=\"+Inf\"} 6\n\
             lat_seconds_sum{cmd=\"get\"} 0.0123\n\
             lat_seconds_count{cmd=\"get\"} 6\n"
        );
    }

    #[test]
    fn stats_mapping() {
        let mut e = Exposition::new();
        write_stats(
            &mut e,
            &[("pid", "12"), ("version", "1.6.18"), ("libevent", "2.1.12-stable"), ("cmd_get", "7"), ("rusage_user", "0.5"), ("detail_enabled", "no")],
        );
        let t = e.finish();
        assert!(t.contains("# TYPE larder_pid gauge\nlarder_pid 12\n"));
        assert!(t.contains("larder_info{version=\"1.6.18\"} 1\n"));
        assert!(!t.contains("libevent"));
        assert!(t.contains("# TYPE larder_cmd_get_total counter\nlarder_cmd_get_total 7\n"));
        assert!(t.contains("larder_rusage_user_seconds_total 0.5\n"));
        assert!(t.contains("larder_detail_enabled 0\n"));
    }

    #[test]
    fn http() {
        let r = || "m 1\n".to_string();
        assert_eq!(respond(b"GET /metrics HTTP/1.1\r\nHost: x\r\n", r), HttpReply::NeedMore);
        let HttpReply::Reply(ok) = respond(b"GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", r) else { panic!() };
        assert_eq!(
            String::from_utf8(ok).unwrap(),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: 4\r\nConnection: close\r\n\r\nm 1\n"
        );
        let HttpReply::Reply(head) = respond(b"HEAD /metrics HTTP/1.0\r\n\r\n", r) else { panic!() };
        assert!(String::from_utf8(head).unwrap().ends_with("Content-Length: 4\r\nConnection: close\r\n\r\n"));
        let HttpReply::Reply(nf) = respond(b"GET / HTTP/1.1\r\n\r\n", r) else { panic!() };
        assert!(nf.starts_with(b"HTTP/1.1 404 Not Found\r\n"));
        let HttpReply::Reply(m) = respond(b"POST /metrics HTTP/1.1\r\n\r\n", r) else { panic!() };
        assert!(m.starts_with(b"HTTP/1.1 405 "));
        let HttpReply::Reply(bad) = respond(b"hello\r\n\r\n", r) else { panic!() };
        assert!(bad.starts_with(b"HTTP/1.1 400 "));
        let big = vec![b'a'; MAX_REQUEST_BYTES + 1];
        assert!(matches!(respond(&big, r), HttpReply::Reply(b) if b.starts_with(b"HTTP/1.1 400 ")));
    }
}
