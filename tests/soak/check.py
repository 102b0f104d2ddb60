"""End-of-run judging: misses, disconnects and outages against what the
controller recorded (events, the evictions counter, the watch stream).

A miss of a key that its writer's history says must be present (model.py)
is explained, in this order, by:

    expired      the key's TTL may have run out: t1 >= earliest expiry
    flush        a flush_all that ended after the write was sent and began
                 before the read ended
    crash        the server died (unplanned) between write and read
    restart      a warm restart between write and read whose load lost
                 items (saved - loaded - expired > 0)
    evicted      the server's `watch evictions` stream named this key, with
                 a timestamp (the line's ts=, the server's clock) after the
                 write was sent and before the read's reply arrived
    evicted (watch gap)
                 the watcher was not connected or reported skipped lines
                 for part of that span, and the `evictions` counter rose
Anything else is a violation, including a miss while the counter rose but
the stream, complete over the span, never named the key
("evicted_unreported").
"""

import bisect
import collections

from events import CRASH, FLUSH, FLOOD, RESTART, WATCH_GAP

CLOCK_EPS = 0.05  # the server's ts= against this process's clock

MissRec = collections.namedtuple("MissRec", "key t0 t1 since exp_lb via")


class Judge:
    def __init__(self, events, evict_samples, evicted_keys, ended):
        self.flushes = [(r[1], r[2]) for r in events if int(r[0]) == FLUSH]
        self.crashes = [(r[1], r[2]) for r in events if int(r[0]) == CRASH]
        self.restarts = [(r[1], r[2], r[3], r[4], r[5]) for r in events if int(r[0]) == RESTART]
        self.floods = [(r[1], r[2], r[4]) for r in events if int(r[0]) == FLOOD]
        self.gaps = [(r[1], r[2] if r[2] != float("inf") else ended) for r in events if int(r[0]) == WATCH_GAP]
        self.ev_t = [t for t, _ in evict_samples]
        self.ev_v = [v for _, v in evict_samples]
        self.evicted = evicted_keys  # key -> sorted receive times

    def evictions_at(self, t, after=False):
        if not self.ev_t:
            return 0
        if after:
            i = bisect.bisect_left(self.ev_t, t)
            return self.ev_v[min(i, len(self.ev_v) - 1)]
        i = bisect.bisect_right(self.ev_t, t) - 1
        return self.ev_v[i] if i >= 0 else 0

    def miss(self, m):
        exp_lb = m.exp_lb
        if any(m.since < a < m.t1 for a, *_ in self.restarts):
            # a restored item's expiry went through whole Unix seconds
            exp_lb -= 1.0
        if exp_lb <= m.t1:
            return "expired"
        for a, b in self.flushes:
            if a < m.t1 and b > m.since:
                return "flush"
        for a, b in self.crashes:
            if b > m.since and a < m.t1:
                return "crash"
        for a, _b, _saved, _loaded, loss in self.restarts:
            if m.since < a < m.t1 and loss > 0:
                return "restart_load_loss"
        times = self.evicted.get(m.key)
        if times:
            i = bisect.bisect_right(times, m.since - CLOCK_EPS)
            if i < len(times) and times[i] <= m.t1 + CLOCK_EPS:
                return "evicted"
        rose = self.evictions_at(m.t1, after=True) > self.evictions_at(m.since)
        if rose:
            for a, b in self.gaps:
                if a < m.t1 and b > m.since:
                    return "evicted_watch_gap"
            return "evicted_unreported"
        return "unexplained"

    def outage(self, a, b, err=""):
        """A connection lost at a (or unreachable over [a, b])."""
        for s, u, *_ in self.restarts:
            if s - 0.5 <= b and a <= u + 1.0:
                return "restart"
        for s, u in self.crashes:
            if s - 1.0 <= b and a <= u + 1.0:
                return "crash"
        # over -c the server answers a new connection with memcached's
        # "ERROR Too many open connections" and closes it (in plain text,
        # also on the TLS port: the client's handshake fails)
        for s, u, over in self.floods:
            if over and s - 0.5 <= b and a <= u + 1.0:
                return "flood_over_limit"
        return None
