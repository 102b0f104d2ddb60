#!/usr/bin/env python3
"""scripts/soak DURATION — a soak test of larder with injected faults.

Starts its own larder on free loopback ports (plain and TLS listeners,
-m 64 -c 2000 -t 2 -I 32m, a warm-restart file in a temporary directory),
drives text, meta and binary traffic over plain TCP and TLS from several
worker processes for DURATION (e.g. 180, 90s, 10m, 1h), injects faults on
a schedule, checks every reply against what was written (model.py,
check.py), watches the server's RSS, and prints a summary ending in
`soak: PASS` or `soak: FAIL` (exit status 0 / 1; 2 for a bad invocation or
a server that would not start).

Environment: LARDER_BIN (default target/release/larder), SOAK_SEED (the
schedule and the traffic's random choices; threads interleave as they will),
SOAK_KEEP=1 keeps the run directory even when the run passes.
"""

import argparse
import bisect
import collections
import multiprocessing as mp
import os
import pickle
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import check  # noqa: E402
import events as ev  # noqa: E402
import faults  # noqa: E402
import proto  # noqa: E402
import worker  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
MIB = 1 << 20
KIB = 1 << 10

# the server's limits
M_MB = 64
CONNS = 2000
THREADS = 2
ITEM_MAX = "32m"
BUDGET_MB = 64           # -o read_buf_mem_limit: the connection budget
GRACE_OPTS = "grace=5s,coalesce=2s"
GRACE_S = 5.0

# the RSS bound (README, "Memory"): -m + 32 KiB per connection (resting
# input and output buffers) + the connection budget + a fixed amount; TLS
# connections hold one record's receive buffer (~18 KiB) and ssl_wbuf_size
# (16 KiB) more
# the eviction watcher (`watch evictions connevents`) must not lose lines
# to a burst of segment evictions: bigger log buffers than the default
# (64 KiB per worker thread, 256 KiB per watcher), inside the allowance
WORKER_LOGBUF_KIB = 1024
WATCHER_LOGBUF_KIB = 4096
PER_CONN = 32 * KIB
PER_TLS = 34 * KIB
ALLOWANCE = 40 * MIB

PROCS = 3
WRITERS = 5
READERS = 5


def parse_duration(s):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*", s)
    if not m:
        raise argparse.ArgumentTypeError("duration like 180, 90s, 10m, 1h: %r" % s)
    v = float(m.group(1)) * {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]
    if v < 20:
        raise argparse.ArgumentTypeError("at least 20 seconds")
    return v


def free_port(avoid=()):
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        s.close()
        if p != 11211 and p not in avoid:
            return p


def fmt(n):
    return "{:,}".format(int(n))


class Server:
    def __init__(self, binary, rundir, crt, key):
        self.binary = binary
        self.rundir = rundir
        self.snap = os.path.join(rundir, "warm.snapshot")
        self.log = os.path.join(rundir, "server.log")
        self.crt, self.key = crt, key
        p = free_port()
        self.ports = {"plain": p, "tls": free_port({p})}
        self.proc = None
        self.life = 0
        self.grace = False
        self.pidfile = None

    def command(self, grace):
        opts = "ssl_chain_cert=%s,ssl_key=%s,read_buf_mem_limit=%d,worker_logbuf_size=%d,watcher_logbuf_size=%d" % (
            self.crt, self.key, BUDGET_MB, WORKER_LOGBUF_KIB, WATCHER_LOGBUF_KIB)
        if grace:
            opts += "," + GRACE_OPTS
        cmd = [self.binary, "-p", str(self.ports["tls"]),
               "-l", "notls:127.0.0.1:%d,127.0.0.1:%d" % (self.ports["plain"], self.ports["tls"]),
               "-U", "0", "-m", str(M_MB), "-c", str(CONNS), "-t", str(THREADS), "-I", ITEM_MAX,
               "-e", self.snap, "-Z", "-o", opts]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]
        return cmd

    def start(self, grace, timeout=60.0):
        self.grace = grace
        self.life += 1
        cmd = self.command(grace)
        with open(self.log, "ab") as log:
            log.write(("\n==== life %d: %s\n" % (self.life, " ".join(cmd))).encode())
            log.flush()
            self.log_mark = log.tell()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        if self.pidfile:
            with open(self.pidfile, "w") as f:
                f.write("%d\n" % self.proc.pid)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if proto.wait_version(self.ports, 0.5):
                return True
        return False

    def log_since_start(self):
        try:
            with open(self.log, "rb") as f:
                f.seek(self.log_mark)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, n=3000):
        try:
            with open(self.log, "rb") as f:
                d = f.read()
            return d[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self):
        p = self.proc
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGCONT)
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass

    def stop(self):
        p = self.proc
        if p is None or p.poll() is not None:
            return
        try:
            os.kill(p.pid, signal.SIGCONT)
            os.kill(p.pid, signal.SIGTERM)
            p.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            self.kill()


def proc_status(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0]) * KIB
    except (OSError, ValueError):
        pass
    return out


def stats_of(conn, group=b""):
    conn.send(b"stats%s\r\n" % (b" " + group if group else b""))
    out = {}
    while True:
        line = conn.readline()
        if line == b"END":
            return out
        p = line.split(b" ", 2)
        if len(p) == 3 and p[0] == b"STAT":
            out[p[1].decode()] = p[2].decode()


class Soak:
    def __init__(self, args):
        self.args = args
        self.duration = args.duration
        self.seed = args.seed
        self.rng = random.Random(self.seed)
        self.rundir = tempfile.mkdtemp(prefix="larder-soak-")
        self.events = ev.EventTable()
        self.counters = ev.Counters()
        self.lock = threading.Lock()
        self.server_lock = threading.RLock()
        self.planned_down = False
        self.done = False
        self.faults = collections.Counter()
        self.miss_causes = collections.Counter()
        self.life_larder = {}
        self.judge_final = threading.Event()
        self.timeline = []
        self.fault_notes = collections.defaultdict(list)
        self.violations = collections.Counter()
        self.samples = []
        self.evict_samples = []
        self.ev_offset = 0
        self.ev_life = None
        self.ev_last = 0
        self.server_conns_peak = 0
        self.evicted = collections.defaultdict(list)
        self.watch_lines = 0
        self.watch_skipped = 0
        self.watch_dropped = 0
        self.rss_peak = (0, 0.0, 0)
        self.hwm_peak = (0, 0)
        self.rss_over = 0
        self.recent_hostile = collections.deque(maxlen=400)
        self.crashes = 0
        self.crash_candidates = []
        self.replays = []
        self.server_gone = False
        self.lives = []
        self.panics = 0
        self.restart_log = []
        self.memlimit_replies = collections.Counter()
        self.last_alive = time.monotonic()
        self.threads = []
        self.workers = []
        self.watch_gap_row = -1
        self.close_reasons = collections.Counter()
        self.watch_caught_up = 0.0
        # the watch stream's ts= is the server's wall clock
        self.wall_offset = time.time() - time.monotonic()
        self.conn_log = []
        self.closed_ports = {}

    # ---------------------------------------------------------------- utils

    def violation(self, kind, msg):
        with self.lock:
            self.violations[kind] += 1
            if sum(1 for s in self.samples if s[0] == kind) < 20:
                self.samples.append((kind, time.monotonic() - self.t_start, msg))

    def fault(self, kind, note=None):
        with self.lock:
            self.timeline.append((time.monotonic() - self.t_start, kind, note or ""))
            self.faults[kind] += 1
            if note:
                self.fault_notes[kind].append(note)

    def admin(self, timeout=10.0):
        return proto.Conn(self.server.ports, False, self.counters, timeout=timeout)

    def bound(self):
        a = self.counters.snapshot()
        conns = max(a[2], self.server_conns_peak)
        return M_MB * MIB + BUDGET_MB * MIB + conns * PER_CONN + a[3] * PER_TLS + ALLOWANCE, conns, a[3]

    # ---------------------------------------------------------------- setup

    def make_cert(self):
        crt = os.path.join(self.rundir, "server.crt")
        key = os.path.join(self.rundir, "server.key")
        r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=127.0.0.1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode != 0:
            raise SystemExit("soak: openssl failed: %s" % r.stderr.decode(errors="replace"))
        os.chmod(key, 0o644)
        return crt, key

    def start_life(self, grace):
        self.events.add(ev.LIFE, time.monotonic(), x=GRACE_S if grace else 0.0, y=2.0 if grace else 0.0)
        ok = self.server.start(grace)
        self.lives.append((time.monotonic() - self.t_start, grace))
        return ok

    # ---------------------------------------------------------------- background threads

    def thread(self, fn, name):
        t = threading.Thread(target=self._guard, args=(fn, name), name=name, daemon=True)
        t.start()
        self.threads.append(t)
        return t

    def _guard(self, fn, name):
        try:
            fn()
        except Exception:
            self.violation("soak_bug", "%s: %s" % (name, traceback.format_exc()))

    def watchdog(self):
        while not self.done:
            with self.server_lock:
                p = self.server.proc
                if not self.planned_down and not self.server_gone and p is not None:
                    if p.poll() is None:
                        self.last_alive = time.monotonic()
                    else:
                        self.crashed(p)
            time.sleep(0.1)

    def crashed(self, p):
        now = time.monotonic()
        self.crashes += 1
        rc = p.returncode
        how = ("killed by signal %d (%s)" % (-rc, signal.Signals(-rc).name)) if rc < 0 else "exit status %d" % rc
        life_start = self.lives[-1][0] + self.t_start if self.lives else 0.0
        recent = [h for h in self.recent_hostile if h[0] >= max(self.last_alive - 3.0, life_start)]
        path = os.path.join(self.rundir, "crash-%d-hostile-payloads.txt" % self.crashes)
        with open(path, "w") as f:
            f.write("# payloads sent in the 3 s before the server was last seen alive, oldest first\n")
            f.write("# each: time since start, kind, bytes sent 0.2 s later, reset, tls, python bytes literal\n")
            for t, kind, payload, then, reset, tls in recent:
                f.write("%.3f %s %d %s %s %r\n" % (t - self.t_start, kind, then, reset, tls, payload))
        self.crash_candidates.append((self.crashes, recent))
        self.events.add(ev.CRASH, self.last_alive, now)
        log = self.server.log_since_start()
        m = re.search(r"^.*panicked at .*$(\n.*$)?", log, re.M)
        self.violation("server_died", "at t=%.1f s the server (life %d) died: %s; %s\n  hostile payloads sent in the "
                       "3 s before: %s (the crash is replayed against a fresh server at the end)" % (
                           now - self.t_start, self.server.life, how,
                           ("its log: " + m.group(0).strip()) if m else "last log lines:\n" + log[-800:], path))
        if self.crashes >= 5 or now > self.deadline - 5:
            self.give_up()
            return
        self.planned_down = True
        try:
            if not self.start_life(self.server.grace):
                self.violation("server_died", "could not restart the server after the crash:\n%s" % self.server.log_tail())
                self.give_up()
        finally:
            self.planned_down = False

    def give_up(self):
        """No more restarts: faults stop, workers stop."""
        self.done_faults = True
        self.server_gone = True
        self.events.abort.value = 1

    def poller(self):
        conn = None
        life = None
        n = 0
        dropped = None
        prev_t = time.monotonic()
        while not self.done:
            if self.planned_down:
                if conn is not None:
                    conn.close()
                    conn = None
                time.sleep(0.05)
                continue
            try:
                if conn is None or life != self.server.life:
                    if conn is not None:
                        conn.close()
                    life = self.server.life
                    conn = self.admin(timeout=5.0)
                s = stats_of(conn)
                t = time.monotonic()
                e = int(s.get("evictions", "0"))
                with self.lock:
                    if life != self.ev_life:
                        self.ev_offset += self.ev_last
                        self.ev_life = life
                        self.ev_last = 0
                    self.ev_last = e
                    self.evict_samples.append((t, self.ev_offset + e))
                    self.server_conns_peak = max(self.server_conns_peak, int(s.get("curr_connections", "0")))
                    self.last_stats = s
                d = (life, int(s.get("log_worker_dropped", "0")) + int(s.get("log_watcher_skipped", "0")))
                if dropped is not None and d[0] == dropped[0] and d[1] > dropped[1]:
                    self.events.add(ev.WATCH_GAP, prev_t - 1.0, t + 1.0)
                    self.watch_dropped += d[1] - dropped[1]
                dropped = d
                prev_t = t
                n += 1
                if n % 5 == 0:
                    sl = stats_of(conn, b"larder")
                    self.last_stats_larder = sl
                    with self.lock:
                        self.life_larder[life] = sl
                    p = int(sl.get("larder_conn_panics", "0"))
                    if p > 0 and p > self.panics:
                        self.violation("panic", "stats larder: larder_conn_panics %d (life %d)" % (p, life))
                        self.panics = p
            except (proto.ConnLost, proto.ProtocolError, ValueError):
                if conn is not None:
                    conn.close()
                conn = None
                time.sleep(0.1)
            time.sleep(0.2)
        if conn is not None:
            conn.close()

    def rss_sampler(self):
        while not self.done:
            p = self.server.proc
            if p is not None and p.poll() is None:
                st = proc_status(p.pid)
                rss = st.get("VmRSS")
                if rss:
                    b, conns, tls = self.bound()
                    t = time.monotonic() - self.t_start
                    if rss > self.rss_peak[0]:
                        self.rss_peak = (rss, t, b)
                    if rss > b:
                        self.rss_over += 1
                        self.violation("rss", "t=%.1f s: VmRSS %.1f MiB over the bound %.1f MiB (%d connections, %d TLS)" % (
                            t, rss / MIB, b / MIB, conns, tls))
                    hwm = st.get("VmHWM", 0)
                    if hwm > self.hwm_peak[0]:
                        self.hwm_peak = (hwm, b)
            time.sleep(0.25)

    def watcher(self):
        """`watch evictions connevents`: which keys the server evicted, and
        when (by the server's own timestamps)."""
        self.watch_gap_row = self.events.add(ev.WATCH_GAP, time.monotonic())
        while not self.done:
            if self.watch_gap_row >= 0:
                # not watching: misses meanwhile fall under the gap's rule
                self.watch_caught_up = time.monotonic()
            if self.planned_down:
                time.sleep(0.05)
                continue
            life = self.server.life
            try:
                s = socket.create_connection(("127.0.0.1", self.server.ports["plain"]), timeout=5)
            except OSError:
                time.sleep(0.1)
                continue
            self.counters(+1, False)
            try:
                s.sendall(b"watch evictions connevents\r\n")
                buf = b""
                while b"\r\n" not in buf:
                    d = s.recv(4096)
                    if not d:
                        raise OSError("closed")
                    buf += d
                first, buf = buf.split(b"\r\n", 1)
                if first != b"OK":
                    self.violation("protocol", "watch evictions answered %r" % first)
                    time.sleep(1)
                    continue
                self.events.update(self.watch_gap_row, b=time.monotonic())
                self.watch_gap_row = -1
                s.settimeout(0.5)
                while not self.done and life == self.server.life:
                    before = time.monotonic()
                    try:
                        d = s.recv(1 << 16)
                    except socket.timeout:
                        # nothing for 0.5 s: every line logged before we
                        # began waiting has arrived (the server's logger
                        # passes over the workers' buffers every <= 50 ms)
                        self.watch_caught_up = max(self.watch_caught_up, before - 0.1)
                        continue
                    if not d:
                        break
                    buf += d
                    t = time.monotonic()
                    # re-measured per read: the wall clock may be slewed
                    self.wall_offset = time.time() - t
                    if len(d) < 1 << 15:
                        self.watch_caught_up = max(self.watch_caught_up, t - 0.3)
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        self.watch_line(line, t)
            except OSError:
                pass
            finally:
                s.close()
                self.counters(-1, False)
            if self.watch_gap_row < 0:
                self.watch_gap_row = self.events.add(ev.WATCH_GAP, time.monotonic())

    def watch_line(self, line, t):
        self.watch_lines += 1
        if b"skipped=" in line:
            self.watch_skipped += 1
            self.events.add(ev.WATCH_GAP, t - 5.0, t)
            return
        if b"type=eviction" in line:
            key = te = None
            for tok in line.split(b" "):
                if tok.startswith(b"key="):
                    key = urllib.parse.unquote_to_bytes(tok[4:])
                elif tok.startswith(b"ts="):
                    # "<seconds>.<microseconds>", the microseconds not
                    # zero-padded (memcached's "%d.%d")
                    try:
                        sec, _, usec = tok[3:].partition(b".")
                        te = int(sec) + int(usec or b"0") / 1e6 - self.wall_offset
                    except ValueError:
                        pass
            if key is not None:
                # workers' log buffers interleave: keep each key's times sorted
                bisect.insort(self.evicted[key], te if te is not None else t)
            return
        if b"type=conn_" in line:
            self.conn_log.append(b"%.3f %s" % (t - self.t_start, line))
        if b"type=conn_close" in line:
            f = dict(tok.split(b"=", 1) for tok in line.split(b" ") if b"=" in tok)
            reason = f.get(b"reason", b"?").decode()
            self.close_reasons[reason] += 1
            try:
                self.closed_ports[int(f.get(b"rport", b"0"))] = (t, reason)
            except ValueError:
                pass

    def judge_misses(self):
        """Misses no write of their own explains, judged a few seconds
        after they happened (once the watch stream and the evictions
        counter have caught up): check.py has the rules."""
        import queue as q
        pending = []
        workers_done = False
        while True:
            time.sleep(1.0)
            try:
                while True:
                    pending.extend(self.miss_queue.get_nowait())
            except q.Empty:
                pass
            except (EOFError, OSError):
                pass
            now = time.monotonic()
            final = self.judge_final.is_set()
            if final and not workers_done:
                # drain what the workers shipped last, and let the watcher
                # catch up with the last of it
                workers_done = True
                last = max((m[2] for m in pending), default=0.0)
                wait_until = time.monotonic() + 10.0
                while self.watch_caught_up < last + 0.2 and time.monotonic() < wait_until:
                    time.sleep(0.1)
                continue
            horizon = min(now - 2.0, self.watch_caught_up - 0.2)
            ripe = [m for m in pending if final or m[2] < horizon]
            if ripe:
                pending = [m for m in pending if not (final or m[2] < horizon)]
                with self.lock:
                    samples = list(self.evict_samples)
                judge = check.Judge(self.events.all(), samples, self.evicted, now)
                for key, t0, t1, since, exp_lb, via in ripe:
                    m = check.MissRec(key, t0, t1, since, exp_lb, via)
                    why = judge.miss(m)
                    self.miss_causes[why] += 1
                    if why == "unexplained" and any(since < r[1] < t1 for r in self.events.all() if int(r[0]) == ev.RESTART):
                        # An acknowledged write sent just before a warm
                        # restart, missing just after it although the
                        # restart saved = loaded + expired: seen twice in a
                        # one-hour run (72 restarts), not yet understood.
                        # Its own kind, so that a run may tolerate it by
                        # name (SOAK_TOLERATE) while it is investigated.
                        why = "restart_boundary_miss"
                    if why in ("unexplained", "evicted_unreported", "restart_boundary_miss"):
                        kind = {"unexplained": "unexplained_miss"}.get(why, why)
                        self.violation(kind,
                                       "%s %s missed over [%.3f, %.3f] s; its last write was sent at %.3f s; evictions %d -> %d; "
                                       "the watch named it evicted at %s" % (
                                           via, key.decode(), t0 - self.t_start, t1 - self.t_start, since - self.t_start,
                                           judge.evictions_at(since), judge.evictions_at(t1, after=True),
                                           ", ".join("%.3f" % (x - self.t_start) for x in self.evicted.get(key, [])[-6:]) or "never"))
            if final and workers_done:
                return

    # ---------------------------------------------------------------- faults run by the controller

    def warm_restart(self):
        with self.server_lock:
            self.planned_down = True
            try:
                old = self.server.proc
                st = proc_status(old.pid)
                if st.get("VmHWM", 0) > self.hwm_peak[0]:
                    self.hwm_peak = (st["VmHWM"], self.bound()[0])
                sent = time.monotonic()
                row = self.events.add(ev.RESTART, sent)
                os.kill(old.pid, signal.SIGUSR1)
                try:
                    rc = old.wait(60)
                except subprocess.TimeoutExpired:
                    self.violation("restart", "the server did not stop within 60 s of SIGUSR1")
                    self.server.kill()
                    rc = None
                log = self.server.log_since_start()
                m = re.search(r"saved (\d+) items", log)
                saved = int(m.group(1)) if m else -1
                if rc != 0 or saved < 0 or "Gracefully stopping" not in log:
                    self.violation("restart", "SIGUSR1: exit %s, log:\n%s" % (rc, log[-1500:]))
                if not os.path.exists(self.server.snap):
                    self.violation("restart", "no snapshot at %s after SIGUSR1" % self.server.snap)
                grace = not self.server.grace
                if not self.start_life(grace):
                    self.violation("restart", "the server did not come back after a warm restart:\n%s" % self.server.log_since_start()[-2000:])
                    self.events.update(row, b=time.monotonic())
                    self.give_up()
                    return
                up = time.monotonic()
                loaded = expired = skipped = -1
                try:
                    c = self.admin()
                    sl = stats_of(c, b"larder")
                    c.close()
                    loaded = int(sl.get("larder_restart_items_loaded", -1))
                    expired = int(sl.get("larder_restart_items_expired", -1))
                    skipped = int(sl.get("larder_restart_items_skipped", -1))
                except (proto.ConnLost, proto.ProtocolError, ValueError):
                    pass
                loss = max(0, saved - loaded - expired) if saved >= 0 and loaded >= 0 else 0
                self.events.update(row, b=up, x=saved, y=loaded, z=loss)
                self.restart_log.append("t=%.1f s: saved %d, loaded %d, expired %d, skipped %d, down %.2f s, now %s" % (
                    sent - self.t_start, saved, loaded, expired, skipped, up - sent,
                    "with -o " + GRACE_OPTS if grace else "without grace/coalesce"))
                if saved >= 0 and loaded >= 0 and loaded + expired + skipped != saved and loaded + expired != saved:
                    self.violation("restart", "saved %d items but loaded %d + expired %d + skipped %d" % (saved, loaded, expired, skipped))
                if os.path.exists(self.server.snap):
                    self.violation("restart", "the snapshot is still there after it was loaded (docs/warm-restart.md: deleted)")
                self.fault("warm_restart")
            finally:
                self.planned_down = False

    def flush_all(self):
        binary = self.rng.random() < 0.3
        try:
            c = self.admin()
        except proto.ConnLost:
            return
        sent = time.monotonic()
        row = self.events.add(ev.FLUSH, sent)
        try:
            if binary:
                c.send(proto.bin_req(proto.OP_FLUSH))
                r = proto.bin_read(c)
                ok = r[1] == 0
            else:
                c.send(b"flush_all\r\n")
                ok = c.readline() == b"OK"
            self.events.update(row, b=time.monotonic())
            if not ok:
                self.violation("protocol", "flush_all not OK")
            self.fault("flush_all" + (" (binary)" if binary else ""))
        except (proto.ConnLost, proto.ProtocolError) as e:
            self.fault("flush_all (interrupted: %s)" % e)
        finally:
            c.close()

    def memlimit(self, mb):
        try:
            c = self.admin()
        except proto.ConnLost:
            return
        sent = time.monotonic()
        try:
            c.send(b"cache_memlimit %d\r\n" % mb)
            r = c.readline()
            self.events.add(ev.MEMLIMIT, sent, time.monotonic(), x=mb)
            self.memlimit_replies["%d MB: %s" % (mb, r.decode(errors="replace"))] += 1
            if r != b"OK":
                self.violation("protocol", "cache_memlimit %d: %r" % (mb, r))
            self.fault("cache_memlimit")
        except (proto.ConnLost, proto.ProtocolError):
            pass
        finally:
            c.close()

    def sigstop(self):
        p = self.server.proc
        if p is None or p.poll() is not None:
            return
        pause = self.rng.uniform(0.2, 1.5)
        row = self.events.add(ev.SIGSTOP, time.monotonic())
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(pause)
        os.kill(p.pid, signal.SIGCONT)
        self.events.update(row, b=time.monotonic())
        self.fault("sigstop_sigcont")

    def hostile(self):
        n = self.rng.randint(4, 16)
        for kind, payload in faults.hostile_payloads(self.rng, n):
            if self.planned_down:
                return
            tls = self.rng.random() < 0.15 and not payload.startswith(b"\x80")
            then, reset = faults.plan_hostile(self.rng, payload)
            t = time.monotonic()
            r = faults.send_hostile(self.server.ports, payload, then, reset, self.counters, tls)
            if r == "sent":
                self.recent_hostile.append((t, kind, payload, then, reset, tls))
                self.fault("hostile:" + kind)

    def flood(self, over):
        if self.planned_down:
            return
        n = CONNS + 100 if over else self.rng.randint(200, 800)
        ntls = 0 if over else self.rng.randint(10, 60)
        t0 = time.monotonic()
        row = self.events.add(ev.FLOOD, t0, x=n + ntls, y=1.0 if over else 0.0)
        before = None
        try:
            c = self.admin()
            before = int(stats_of(c).get("rejected_connections", "0"))
            c.close()
        except (proto.ConnLost, proto.ProtocolError, ValueError):
            pass
        res = faults.flood(self.server.ports, n, self.counters, ntls, over)
        self.events.update(row, b=time.monotonic())
        self.fault("connection_flood" + (" over -c" if over else ""), "%d+%d TLS: %s" % (n, ntls, res))
        if over:
            after = None
            try:
                c = self.admin()
                after = int(stats_of(c).get("rejected_connections", "0"))
                c.close()
            except (proto.ConnLost, proto.ProtocolError, ValueError):
                pass
            if res["rejected"] == 0 or (before is not None and after is not None and after - before < res["rejected"]):
                self.violation("limits", "a flood over -c %d: %s, rejected_connections %s -> %s" % (CONNS, res, before, after))
        elif res["other"] or res["rejected"]:
            t1 = time.monotonic()
            outage = any(int(r[0]) in (ev.RESTART, ev.CRASH) and r[1] <= t1 and r[2] >= t0 for r in self.events.all())
            if not outage and not self.planned_down:
                self.violation("limits", "a flood under -c %d was not served: %s" % (CONNS, res))

    def slow_reader(self):
        keys = []
        for _ in range(self.rng.randint(20, 100)):
            p = self.rng.randrange(PROCS)
            r = self.rng.random()
            if r < 0.5:
                keys.append(b"ck/%d/m/m%d" % (p, self.rng.randrange(8)))
            elif r < 0.6:
                keys.append(b"ck/0/h/h%d" % self.rng.randrange(3))
            else:
                keys.append(b"ck/%d/%d/%s%d" % (p, self.rng.randrange(WRITERS), self.rng.choice([b"p", b"a", b"n"]), self.rng.randrange(20)))
        hold = self.rng.uniform(4, 10)
        tls = self.rng.random() < 0.3
        checked, problems, err = faults.slow_reader(self.server.ports, keys, hold, tls, self.counters)
        for p in problems:
            self.violation("wrong_value", p)
        self.fault("slow_reader", "%d keys held %.1f s%s: %d values checked%s" % (
            len(keys), hold, " (TLS)" if tls else "", checked, (", " + err) if err else ""))
        with self.lock:
            self.slow_checked = getattr(self, "slow_checked", 0) + checked

    def victim(self):
        if self.planned_down:
            return
        big = [b"ck/%d/m/m%d" % (p, i) for p in range(PROCS) for i in range(8)] + [b"ck/0/h/h%d" % i for i in range(3)]
        mode = faults.run_victim(self.server.ports, self.rng, big)
        self.fault("client_killed_mid_request:" + mode)

    # ---------------------------------------------------------------- schedule

    def schedule(self):
        D = self.duration
        lo, hi = 6.0, D - 10.0
        ex = []

        def spread(n, kind, jitter=0.08):
            for i in range(n):
                t = lo + (hi - lo) * (i + 0.5) / n + self.rng.uniform(-jitter, jitter) * (hi - lo) / n
                ex.append((min(hi, max(lo, t)), kind))

        spread(max(1, int(D / 50)), "warm_restart", 0.02)
        spread(max(1, int(D / 40)), "flush_all")
        nm = max(1, int(D / 60))
        for i in range(nm):
            t = lo + (hi - lo) * (i + 0.3) / nm
            ex.append((t, "memlimit_down"))
            ex.append((min(hi, t + 8.0), "memlimit_up"))
        spread(max(2, int(D / 12)), "sigstop", 0.3)
        ex.sort()
        con = []
        t = lo
        while t < hi:
            con.append((t, "hostile"))
            t += self.rng.uniform(1.0, 3.0)
        t = lo + 1
        while t < hi:
            con.append((t, "victim"))
            t += self.rng.uniform(1.5, 4.0)
        n = max(1, int(D / 20))
        for i in range(n):
            con.append((lo + (hi - lo) * (i + 0.7) / n, "slow_reader"))
        n = max(1, int(D / 25))
        for i in range(n):
            con.append((lo + (hi - lo) * (i + 0.45) / n, "flood"))
        if D >= 60:
            con.append((lo + (hi - lo) * 0.58, "flood_over"))
        con.sort()
        return ex, con

    def run_schedule(self, items):
        for t, kind in items:
            while not self.done and not self.done_faults and time.monotonic() - self.t_start < t:
                time.sleep(0.05)
            if self.done or self.done_faults:
                return
            if kind == "warm_restart":
                self.warm_restart()
            elif kind == "flush_all":
                self.flush_all()
            elif kind == "memlimit_down":
                self.memlimit(self.rng.choice([24, 32, 40]))
            elif kind == "memlimit_up":
                self.memlimit(M_MB)
            elif kind == "sigstop":
                self.sigstop()
            elif kind == "hostile":
                self.hostile()
            elif kind == "victim":
                self.thread(self.victim, "victim")
            elif kind == "slow_reader":
                self.thread(self.slow_reader, "slow-reader")
            elif kind == "flood":
                self.flood(False)
            elif kind == "flood_over":
                self.flood(True)

    # ---------------------------------------------------------------- main

    def run(self):
        binary = self.args.binary
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            print("soak: no executable at %s (cargo build --release, or set LARDER_BIN)" % binary, file=sys.stderr)
            return 2
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < 8192 and hard > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
        crt, key = self.make_cert()
        # the binary under test is the one found at start: a copy, so that a
        # rebuild during the run does not change what a warm restart starts
        copy = os.path.join(self.rundir, "larder")
        shutil.copy2(binary, copy)
        self.server = Server(copy, self.rundir, crt, key)
        self.server.pidfile = os.environ.get("SOAK_PIDFILE")
        self.t_start = time.monotonic()
        self.deadline = self.t_start + self.duration
        self.done_faults = False
        print("soak: %s for %d s, seed %d, run directory %s" % (binary, self.duration, self.seed, self.rundir), flush=True)
        print("soak: server: %s" % " ".join(self.server.command(False)), flush=True)
        if not self.start_life(False):
            print("soak: the server did not start:\n%s" % self.server.log_tail(), file=sys.stderr)
            return 2
        c = self.admin()
        seg = int(stats_of(c, b"larder").get("larder_segment_size", "1048576"))
        c.close()
        ctx = mp.get_context("fork")
        self.miss_queue = ctx.Queue()
        for p in range(PROCS):
            cfg = {"proc": p, "controller": os.getpid(), "ports": self.server.ports, "deadline": self.deadline, "start": self.t_start,
                   "segment_size": seg, "seed": self.seed, "writers": WRITERS, "readers": READERS,
                   "result": os.path.join(self.rundir, "worker-%d.pickle" % p)}
            w = ctx.Process(target=worker.main, args=(cfg, self.events, self.counters, self.miss_queue), daemon=True)
            w.start()
            self.workers.append((w, cfg))
        self.thread(self.judge_misses, "judge")
        self.thread(self.watchdog, "watchdog")
        self.thread(self.poller, "poller")
        self.thread(self.rss_sampler, "rss")
        self.thread(self.watcher, "watcher")
        ex, con = self.schedule()
        t1 = self.thread(lambda: self.run_schedule(ex), "faults-exclusive")
        t2 = self.thread(lambda: self.run_schedule(con), "faults-concurrent")
        next_report = self.t_start + 30
        while time.monotonic() < self.deadline and not self.server_gone:
            time.sleep(0.5)
            if time.monotonic() >= next_report:
                next_report += 30
                self.progress()
        t1.join(60)
        t2.join(60)
        for w, cfg in self.workers:
            w.join(max(5.0, self.deadline + 150 - time.monotonic()))
            if w.is_alive():
                self.violation("hang", "worker %d did not finish its audit" % cfg["proc"])
                w.kill()
        for t in self.threads:
            if t.name.startswith(("slow-reader", "victim")):
                t.join(30)
        self.judge_final.set()
        for t in self.threads:
            if t.name == "judge":
                t.join(120)
        self.done = True
        final = {}
        try:
            c = self.admin()
            final = stats_of(c)
            final.update(stats_of(c, b"larder"))
            c.close()
        except (proto.ConnLost, proto.ProtocolError):
            pass
        alive = self.server.proc.poll() is None
        st = proc_status(self.server.proc.pid) if alive else {}
        if st.get("VmHWM", 0) > self.hwm_peak[0]:
            self.hwm_peak = (st["VmHWM"], self.bound()[0])
        if not alive and not self.violations["server_died"]:
            self.violation("server_died", "the server was not running at the end:\n%s" % self.server.log_tail())
        self.server.stop()
        for t in self.threads:
            t.join(5)
        self.replay_crashes()
        return self.summary(final)

    def progress(self):
        el = time.monotonic() - self.t_start
        rss = self.rss_peak[0] / MIB
        print("soak: %4.0f s: faults %s, violations %d, peak RSS %.1f MiB" % (
            el, sum(self.faults.values()), sum(self.violations.values()), rss), flush=True)

    def replay_crashes(self):
        """Send each payload of the seconds before a crash, newest first, to
        a fresh server with the same flags (one server per payload): the one
        that kills it, twice in a row, is the reproduction (written as a
        script into the run directory)."""
        for n, recent in self.crash_candidates[:3]:
            rdir = os.path.join(self.rundir, "replay-%d" % n)
            os.makedirs(rdir, exist_ok=True)
            srv = Server(self.server.binary, rdir, self.server.crt, self.server.key)
            srv.pidfile = self.server.pidfile

            def kills(payload, then, reset, tls):
                if not srv.start(False):
                    return None
                faults.send_hostile(srv.ports, payload, then, reset, self.counters, tls)
                deadline = time.monotonic() + 1.5
                while time.monotonic() < deadline and srv.proc.poll() is None:
                    time.sleep(0.05)
                dead = srv.proc.poll() is not None
                log = srv.log_since_start()
                srv.kill()
                return log if dead else None

            found = None
            tried = 0
            for t, kind, payload, then, reset, tls in reversed(recent[-40:]):
                tried += 1
                log = kills(payload, then, reset, tls)
                if log is not None and kills(payload, then, reset, tls) is not None:
                    found = (kind, payload, then, reset, tls, log)
                    break
            if not found:
                self.replays.append("crash %d: none of the %d payloads sent before it kills a fresh server on its own" % (n, tried))
                continue
            kind, payload, then, reset, tls, log = found
            script = os.path.join(self.rundir, "crash-%d-repro.py" % n)
            with open(script, "w") as f:
                f.write("# larder crash %d of a soak run: start larder as\n#   %s\n# then run: python3 %s PORT  (PORT: %s)\n" % (
                    n, " ".join(srv.command(False)), script, "the TLS port, given with -p" if tls else "the plain port, the notls: one of -l"))
                f.write("import socket, ssl, sys, time\n")
                f.write("s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n")
                if tls:
                    f.write("c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE; s = c.wrap_socket(s)\n")
                f.write("s.sendall(%r)\n" % payload)
                f.write("time.sleep(0.2)\n")
                if then:
                    f.write("s.sendall(b'\\0' * %d)\n" % then)
                f.write("time.sleep(0.5)\n")
            m = re.search(r"^.*panicked at .*$(\n.*$)?", log, re.M)
            self.replays.append("crash %d reproduced twice on a fresh server by one %s payload (%d bytes%s%s%s): %s\n    script: %s\n    server said: %s" % (
                n, kind, len(payload), ", then %d zero bytes" % then if then else "", ", TLS" if tls else "",
                ", closed with a reset" if reset else "",
                repr(payload[:100]) + ("..." if len(payload) > 100 else ""),
                script, m.group(0).strip() if m else log[-300:].strip()))

    # ---------------------------------------------------------------- summary

    def summary(self, final):
        results = []
        for w, cfg in self.workers:
            try:
                with open(cfg["result"], "rb") as f:
                    results.append(pickle.load(f))
            except (OSError, EOFError, pickle.UnpicklingError):
                self.violation("soak_bug", "worker %d left no results" % cfg["proc"])
        requests = collections.Counter()
        counts = collections.Counter()
        for r in results:
            requests.update(r["requests"])
            counts.update(r["counts"])
            for k, v in r["violations"].items():
                self.violations[k] += v
            for kind, t, msg in r["samples"]:
                if sum(1 for s in self.samples if s[0] == kind) < 20:
                    self.samples.append((kind, t - self.t_start, msg))
        ended = time.monotonic()
        judge = check.Judge(self.events.all(), self.evict_samples, self.evicted, ended)
        causes = collections.Counter(self.miss_causes)
        for k, v in counts.items():
            if k.startswith("miss:"):
                causes["absent (%s)" % k[5:]] += v
        outages = collections.Counter()
        for r in results:
            for t, err, lport, opened in r["disconnects"]:
                # an idle connection notices only at its next request that
                # a restart closed it: any outage since it opened explains it
                why = judge.outage(opened, t, err)
                outages[why or "unexplained"] += 1
                if why is None:
                    srv = self.closed_ports.get(lport)
                    self.violation("unexpected_disconnect", "t=%.3f s: %s; the server's watch: %s" % (
                        t - self.t_start, err, "conn_close reason=%s at %.3f s" % (srv[1], srv[0] - self.t_start) if srv else "no conn_close seen"))
            for a, b, err in r["unreachable"]:
                why = judge.outage(a, b, err)
                if why is None:
                    self.violation("unreachable", "[%.3f, %.3f] s: %s" % (a - self.t_start, b - self.t_start, err))
        for k, v in counts.items():
            if k.startswith("fault:"):
                self.faults[k[6:]] += v

        out = []
        p = out.append
        el = ended - self.t_start
        p("")
        p("==== soak summary (%s, %.0f s planned, %.0f s run, seed %d)" % (self.args.binary, self.duration, el, self.seed))
        p("server lives: %d (%s)" % (len(self.lives), ", ".join("from %.0f s %s" % (t, "-o " + GRACE_OPTS if g else "plain") for t, g in self.lives)))
        for line in self.restart_log:
            p("  warm restart %s" % line)
        total = sum(requests.values())
        p("requests: %s (%s/s), by command (a multi-get counts once; get[20]: 2-20 keys, get[100]: 21-100)" % (fmt(total), fmt(total / max(1.0, self.duration))))
        groups = collections.defaultdict(lambda: [0, 0])
        for k, v in requests.items():
            tls = k.startswith("tls:")
            groups[k[4:] if tls else k][1 if tls else 0] += v
        for k in sorted(groups):
            a, b = groups[k]
            p("  %-28s %12s  (plain %s, TLS %s)" % (k, fmt(a + b), fmt(a), fmt(b)))
        p("faults injected: %s" % fmt(sum(self.faults.values())))
        for k in sorted(self.faults):
            p("  %-44s %8s" % (k, fmt(self.faults[k])))
        for k in ("connection_flood", "connection_flood over -c", "slow_reader"):
            for note in self.fault_notes.get(k, [])[:6]:
                p("    %s: %s" % (k, note))
        if self.memlimit_replies:
            p("  cache_memlimit replies: %s" % dict(self.memlimit_replies))
        p("checks:")
        p("  values checked against the writers' histories: %s hits, %s misses (%s keys; %s more by the slow readers)" % (
            fmt(counts["checked_hits"]), fmt(counts["checked_misses"]), fmt(sum(r["keys"] for r in results)),
            fmt(getattr(self, "slow_checked", 0))))
        p("  final audit after the traffic stopped: %s keys read" % fmt(counts["audit_reads"]))
        p("  wrong values: %d" % self.violations["wrong_value"])
        p("  misses by cause:")
        for k in sorted(causes, key=lambda k: -causes[k]):
            p("    %-36s %10s" % (k, fmt(causes[k])))
        p("  stores refused for memory (SERVER_ERROR out of memory): %s; reads refused: %s" % (
            fmt(counts["store_refused_oom"]), fmt(counts["read_refused_oom"])))
        p("  stale-while-revalidate: owner won W %s, lost to a reader %s; readers won %s; vivified %s" % (
            fmt(counts["swr_owner_won"]), fmt(counts["swr_owner_lost"]), fmt(counts["swr_reader_won"]),
            fmt(counts["swr_vivified_W"] + counts["swr_vivified_Z"])))
        feat = collections.Counter()
        for sl in self.life_larder.values():
            for k, v in sl.items():
                if k.startswith(("larder_grace_", "larder_coalesce_")) and k != "larder_coalesce_parked":
                    try:
                        feat[k[7:]] += int(v)
                    except ValueError:
                        pass
        p("  grace/coalesce at work (stats larder, summed over the lives with them): %s" % (
            ", ".join("%s %s" % (k, fmt(v)) for k, v in sorted(feat.items())) or "none"))
        p("  connections lost by the workers: %s; conn_close reasons seen by the server's watch: %s" % (
            dict(outages) or "none", dict(self.close_reasons)))
        p("  evictions: %s by the counter over all lives; %s watch lines, %s keys named, %s skipped-notices" % (
            fmt(self.ev_offset + self.ev_last), fmt(self.watch_lines), fmt(len(self.evicted)), fmt(self.watch_skipped)))
        p("    log lines the server dropped or skipped for the watcher (log_worker_dropped + log_watcher_skipped): %s" % fmt(self.watch_dropped))
        if final:
            p("  server at the end: curr_connections %s, total_connections %s, rejected_connections %s, curr_items %s, "
              "larder_conn_panics %s, larder_conn_budget_used %s" % (
                  final.get("curr_connections"), final.get("total_connections"), final.get("rejected_connections"),
                  final.get("curr_items"), final.get("larder_conn_panics"), final.get("larder_conn_budget_used")))
        b, conns, tls = self.bound()
        p("memory: peak VmRSS %.1f MiB at %.0f s (sampled 4/s; bound then %.1f MiB); peak VmHWM %.1f MiB" % (
            self.rss_peak[0] / MIB, self.rss_peak[1], self.rss_peak[2] / MIB, self.hwm_peak[0] / MIB))
        p("  bound = -m %d MiB + read_buf_mem_limit %d MiB + %d connections x 32 KiB + %d TLS x 34 KiB + %d MiB fixed = %.1f MiB" % (
            M_MB, BUDGET_MB, conns, tls, ALLOWANCE // MIB, b / MIB))
        if self.hwm_peak[0] > self.hwm_peak[1] > 0:
            self.violation("rss", "VmHWM %.1f MiB over the bound %.1f MiB" % (self.hwm_peak[0] / MIB, self.hwm_peak[1] / MIB))
        try:
            with open(self.server.log, "rb") as f:
                log = f.read().decode("utf-8", "replace")
            n = log.count("panicked")
            if n:
                self.violation("panic", "%d 'panicked' lines in the server log, e.g.: %s" % (
                    n, log[log.index("panicked") - 200:log.index("panicked") + 400]))
        except OSError:
            pass
        with open(os.path.join(self.rundir, "timeline.txt"), "w") as f:
            for t, kind, note in sorted(self.timeline):
                f.write("%8.3f %s %s\n" % (t, kind, note))
            for r in self.events.all():
                names = {ev.LIFE: "life", ev.FLUSH: "flush_all", ev.SIGSTOP: "sigstop", ev.RESTART: "warm_restart",
                         ev.CRASH: "crash", ev.MEMLIMIT: "cache_memlimit", ev.FLOOD: "flood", ev.WATCH_GAP: "watch_gap"}
                f.write("%8.3f event %s until %.3f %s\n" % (r[1] - self.t_start, names.get(int(r[0]), r[0]), r[2] - self.t_start, r[3:]))
        with open(os.path.join(self.rundir, "watch-connevents.log"), "wb") as f:
            f.write(b"\n".join(self.conn_log) + b"\n")
        tolerated = {k for k in os.environ.get("SOAK_TOLERATE", "").split(",") if k}
        bad = {k: v for k, v in self.violations.items() if v and k not in tolerated}
        for k in sorted(tolerated):
            if self.violations.get(k):
                p("tolerated (SOAK_TOLERATE), not failing the run: %s %d" % (k, self.violations[k]))
                for kind, t, msg in sorted(self.samples, key=lambda s: s[1]):
                    if kind == k:
                        p("  [%s at %.1f s] %s" % (kind, t, msg))
        for r in self.replays:
            p("crash replay: " + r)
        if bad:
            p("violations:")
            for k in sorted(bad):
                p("  %-24s %d" % (k, bad[k]))
            for kind, t, msg in sorted(self.samples, key=lambda s: s[1]):
                p("  [%s at %.1f s] %s" % (kind, t, msg))
            p("run directory kept: %s (server.log, crash payloads)" % self.rundir)
        p("soak: %s" % ("FAIL" if bad else "PASS"))
        print("\n".join(out), flush=True)
        if not bad and not os.environ.get("SOAK_KEEP"):
            shutil.rmtree(self.rundir, ignore_errors=True)
        return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(prog="scripts/soak", description=__doc__.split("\n\n")[0])
    ap.add_argument("duration", type=parse_duration, help="how long to drive traffic: 180, 90s, 10m, 1h")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED", "0")) or random.randrange(1, 1 << 30))
    ap.add_argument("--binary", default=os.environ.get("LARDER_BIN") or os.path.join(ROOT, "target", "release", "larder"))
    args = ap.parse_args()
    soak = Soak(args)

    def on_signal(signum, frame):
        raise KeyboardInterrupt()

    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    rc = 2
    try:
        rc = soak.run()
    except KeyboardInterrupt:
        print("soak: interrupted", file=sys.stderr)
        rc = 130
        if not os.environ.get("SOAK_KEEP"):
            shutil.rmtree(soak.rundir, ignore_errors=True)
    finally:
        soak.done = True
        if getattr(soak, "server", None):
            soak.server.kill()
        for w, _ in soak.workers:
            if w.is_alive():
                w.kill()
    sys.exit(rc)


if __name__ == "__main__":
    main()
