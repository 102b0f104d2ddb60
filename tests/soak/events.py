"""The controller's event table, shared with the worker processes.

Rows of 6 doubles in shared memory: (type, a, b, x, y, z). The controller
appends a row, then bumps the count; workers read rows below the count. All
times are time.monotonic() (CLOCK_MONOTONIC, the same in every process).
"""

import multiprocessing as mp

LIFE = 1       # a server process started: a=start, x=grace seconds (0: off), y=coalesce seconds
FLUSH = 2      # flush_all: a=sent, b=acked (inf if never)
SIGSTOP = 3    # a=stopped, b=continued
RESTART = 4    # warm restart: a=SIGUSR1 sent, b=serving again, x=items saved, y=items loaded, z=load loss (saved - loaded - expired)
CRASH = 5      # the server died unplanned: a=last seen alive, b=death noticed
MEMLIMIT = 6   # cache_memlimit: a=sent, b=acked, x=MB
FLOOD = 7      # connection flood: a=start, b=end, x=connections, y=1 if over -c
WATCH_GAP = 8  # the eviction watcher may have missed lines in [a, b]

ROWS = 8192


class EventTable:
    def __init__(self):
        self.rows = mp.RawArray("d", ROWS * 6)
        self.count = mp.RawValue("l", 0)
        self.lock = mp.Lock()
        # set when the server is gone for good: the workers stop
        self.abort = mp.RawValue("i", 0)

    def add(self, typ, a, b=float("inf"), x=0.0, y=0.0, z=0.0):
        with self.lock:
            n = self.count.value
            if n >= ROWS:
                return -1
            self.rows[n * 6:n * 6 + 6] = [float(typ), a, b, x, y, z]
            self.count.value = n + 1
            return n

    def update(self, idx, **kw):
        if idx < 0:
            return
        cols = {"a": 1, "b": 2, "x": 3, "y": 4, "z": 5}
        with self.lock:
            for k, v in kw.items():
                self.rows[idx * 6 + cols[k]] = v

    def all(self, typ=None):
        n = self.count.value
        flat = self.rows[:n * 6]
        out = []
        for i in range(n):
            r = flat[i * 6:i * 6 + 6]
            if typ is None or int(r[0]) == typ:
                out.append(tuple(r))
        return out


class Counters:
    """Open connections of the soak's own clients (plain, TLS), across
    processes, and their peaks: the connection part of the RSS bound."""

    def __init__(self):
        self.a = mp.RawArray("l", 4)  # open plain, open tls, peak plain+tls, peak tls
        self.lock = mp.Lock()

    def __call__(self, delta, tls):
        with self.lock:
            a = self.a
            a[1 if tls else 0] += delta
            tot = a[0] + a[1]
            if tot > a[2]:
                a[2] = tot
            if a[1] > a[3]:
                a[3] = a[1]

    def snapshot(self):
        with self.lock:
            return list(self.a)
