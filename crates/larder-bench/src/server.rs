//! The server under test as a process: start it (pinned to a CPU with `taskset`), wait until
//! it accepts connections, read its CPU time and resident memory from /proc, ask it for
//! `stats`, and stop it.
//!
//! memcached and larder are started with the same flags (`-p -U 0 -l 127.0.0.1 -t -m -c`,
//! plus `-u root` when running as root, which memcached requires), so whatever is compared
//! differs only in the binary.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to start a server.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    /// Short name in reports: "memcached" or "larder".
    pub name: String,
    pub binary: String,
    pub threads: usize,
    pub memory_mb: usize,
    pub port: u16,
    /// CPU list for taskset (e.g. "0"); empty = no pinning.
    pub cpus: String,
    pub extra_args: Vec<String>,
}

impl ServerSpec {
    pub fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "-p".into(),
            self.port.to_string(),
            "-U".into(),
            "0".into(),
            "-l".into(),
            "127.0.0.1".into(),
            "-t".into(),
            self.threads.to_string(),
            "-m".into(),
            self.memory_mb.to_string(),
            "-c".into(),
            "1024".into(),
        ];
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            a.push("-u".into());
            a.push("root".into());
        }
        a.extend(self.extra_args.iter().cloned());
        a
    }

    /// The command line, as a person would type it.
    pub fn command_line(&self) -> String {
        let mut parts = Vec::new();
        if !self.cpus.is_empty() {
            parts.push(format!("taskset -c {}", self.cpus));
        }
        parts.push(self.binary.clone());
        parts.extend(self.args());
        parts.join(" ")
    }
}

/// A running server.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
}

impl Server {
    pub fn start(spec: &ServerSpec) -> Result<Server, String> {
        let mut cmd = if spec.cpus.is_empty() {
            Command::new(&spec.binary)
        } else {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(&spec.cpus).arg(&spec.binary);
            c
        };
        cmd.args(spec.args()).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("starting {}: {e}", spec.command_line()))?;
        let addr: SocketAddr = format!("127.0.0.1:{}", spec.port).parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                return Err(format!("{} exited with {status}: {}", spec.command_line(), err.trim()));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return Err(format!("{} did not accept connections within 10 s", spec.command_line()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The port was free when chosen, but another process may have taken it since: make
        // sure the server answering is ours (`stats` reports its pid).
        std::thread::sleep(Duration::from_millis(30));
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{} exited with {status}", spec.command_line()));
        }
        if let Ok(st) = stats(addr) {
            if let Some(pid) = stat_u64(&st, "pid") {
                if pid != child.id() as u64 {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("port {} is served by pid {pid}, not by our server", spec.port));
                }
            }
        }
        Ok(Server { child, addr })
    }

    /// Process id (taskset execs the server, so this is the server itself).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stop(mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// CPU time (user + system) of a process in seconds, from /proc/<pid>/stat.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some((utime + stime) / hz)
}

/// Busy CPU time of the whole machine in seconds (all CPUs; /proc/stat: everything except
/// idle and iowait).
pub fn machine_busy_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let total: f64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4)?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some((total - idle) / hz)
}

/// Measures the busy CPU of the whole machine over an interval, in % of one core.
pub struct MachineMeter {
    busy0: f64,
    t0: Instant,
}

impl MachineMeter {
    pub fn start() -> MachineMeter {
        MachineMeter { busy0: machine_busy_seconds().unwrap_or(f64::NAN), t0: Instant::now() }
    }

    pub fn finish(&self) -> f64 {
        100.0 * (machine_busy_seconds().unwrap_or(f64::NAN) - self.busy0) / self.t0.elapsed().as_secs_f64()
    }
}

/// Measures the CPU share of a process over an interval: call `start`, then `finish`.
pub struct CpuMeter {
    pid: u32,
    cpu0: f64,
    t0: Instant,
}

impl CpuMeter {
    pub fn start(pid: u32) -> CpuMeter {
        CpuMeter { pid, cpu0: cpu_seconds(pid).unwrap_or(f64::NAN), t0: Instant::now() }
    }

    /// Percent of one core (100 = one core fully busy).
    pub fn finish(&self) -> f64 {
        let cpu1 = cpu_seconds(self.pid).unwrap_or(f64::NAN);
        100.0 * (cpu1 - self.cpu0) / self.t0.elapsed().as_secs_f64()
    }
}

/// Resident set size in bytes (VmRSS from /proc/<pid>/status).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `stats` over a fresh connection, as (name, value) pairs.
pub fn stats(addr: SocketAddr) -> Result<Vec<(String, String)>, String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    s.write_all(b"stats\r\n").map_err(|e| e.to_string())?;
    let mut r = BufReader::new(s);
    let mut out = Vec::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("connection closed during stats".into());
        }
        let line = line.trim_end();
        if line == "END" {
            return Ok(out);
        }
        let mut parts = line.splitn(3, ' ');
        if parts.next() != Some("STAT") {
            return Err(format!("unexpected stats line {line:?}"));
        }
        if let (Some(k), Some(v)) = (parts.next(), parts.next()) {
            out.push((k.to_string(), v.to_string()));
        }
    }
}

/// One numeric stat, if present.
pub fn stat_u64(stats: &[(String, String)], name: &str) -> Option<u64> {
    stats.iter().find(|(k, _)| k == name).and_then(|(_, v)| v.parse().ok())
}

/// A port nobody listens on (bind to port 0, read it back, release it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(22122)
}

/// Pins the calling process (all its future threads) to a CPU list like "1" or "0,1".
pub fn pin_self(cpus: &str) -> Result<(), String> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for part in cpus.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b): (usize, usize) = (a.trim().parse().map_err(|_| format!("bad cpu list {cpus:?}"))?, b.trim().parse().map_err(|_| format!("bad cpu list {cpus:?}"))?);
            for c in a..=b {
                libc::CPU_SET(c, &mut set);
            }
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("sched_setaffinity({cpus}): {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Machine description for reports: nproc, CPU model, kernel, load average.
pub fn machine() -> (usize, String, String, String) {
    // SAFETY: sysconf has no preconditions. (available_parallelism would count only the CPUs
    // this process is pinned to.)
    let nproc = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(0) as usize;
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    (nproc, model, kernel, load)
}
