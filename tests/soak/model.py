"""What each key may hold, from its one writer's history.

Every key has exactly one writer thread. The writer records each operation
(`Op`) it sends: the state it leaves the key in, when it was sent, when its
reply arrived, and how it ended:

    acked      the server answered: the key is in `state` (from then on,
               until the next op; ops of one writer are sequential)
    failed     the server refused to store (SERVER_ERROR out of memory):
               the key holds the previous state or nothing (memcached
               unlinks the old item when a set cannot be stored)
    uncertain  the connection died before the reply (a restart): applied
               or not; the writer then rewrites the key absolutely
    noop       answered, but changed nothing (NOT_STORED, NOT_FOUND)

A read that began at t0 and whose reply arrived at t1 may see:

    the state of the last op acknowledged before t0 (the "base"; through
    `failed` ops also the state before them, or nothing), or
    the state of any op sent before t1 after the base (acked since,
    still pending, or uncertain).

Nothing else: not an older version, not a version never sent, not the
never-acknowledged half of a killed write. A miss is possible outright only
if "nothing" is among those (never written, deleted, failed set); otherwise
it is recorded with the times an explanation must fit (`miss_record`) and
judged by the controller against flushes, restarts, expiry and the
evictions the server reported (check.py).
"""

INF = float("inf")
CLOCK_SLACK = 1.5  # the server's clock counts whole seconds


class Op:
    __slots__ = ("state", "sent", "ack", "status", "exp_lb", "exp_ub", "what", "since")

    def __init__(self, state, sent, exp_lb, exp_ub, what):
        self.state = state
        self.sent = sent
        # a removal that explains a miss must come after this: the op's own
        # send time, except for `md k I`, which also succeeds on a vivified
        # placeholder (so it proves nothing about the value before it)
        self.since = sent
        self.ack = None
        self.status = "pending"
        self.exp_lb = exp_lb  # the key cannot expire before this (monotonic s)
        self.exp_ub = exp_ub  # ... and must be gone (no grace) after this
        self.what = what


class Key:
    """One key's history (guarded by its writer's lock)."""
    __slots__ = ("name", "kind", "ops", "lock", "believed", "exp", "certain", "abs_since")

    def __init__(self, name, kind, lock):
        self.name = name
        self.kind = kind
        self.lock = lock
        self.ops = []
        # the writer's view after its last op: state, expiry bounds, and
        # whether it is certain (no uncertain/failed op since the last ack)
        self.believed = None
        self.exp = (INF, INF)
        self.certain = True
        self.abs_since = 0.0  # when the last acked absolute write was sent

    # -- writer side

    def begin(self, state, sent, exp, what):
        op = Op(state, sent, exp[0], exp[1], what)
        with self.lock:
            self.ops.append(op)
        return op

    def end(self, op, status, ack):
        with self.lock:
            op.status = status
            op.ack = ack
            if status == "acked":
                if op.what in ("set", "add", "cas", "delete"):
                    self.abs_since = op.sent
                self.believed = op.state
                self.exp = (op.exp_lb, op.exp_ub)
                self.certain = True
            elif status in ("failed", "uncertain"):
                self.certain = False
            self._trim(ack)

    def _trim(self, now):
        # keep the last strong ack older than any read still running (reads
        # time out at 30 s) and everything after it
        ops = self.ops
        if len(ops) < 16:
            return
        horizon = now - 70.0
        keep = None
        for i in range(len(ops) - 1, -1, -1):
            o = ops[i]
            if o.status == "acked" and o.ack is not None and o.ack < horizon:
                keep = i
                break
        if keep:
            del ops[:keep]

    # -- reader side

    def candidates(self, t0, t1, exclude=None):
        """[(state, op or None)] this key may show to a read over [t0, t1]
        (`exclude`: the reading op itself, for replies to writes)."""
        with self.lock:
            ops = self.ops
            if exclude is not None:
                ops = [o for o in ops if o is not exclude]
            b = -1
            for i in range(len(ops) - 1, -1, -1):
                o = ops[i]
                if o.status in ("acked", "failed") and o.ack is not None and o.ack <= t0:
                    b = i
                    break
            out = []
            # the base, looking through failed ops to the state before them
            i = b
            while i >= 0:
                o = ops[i]
                if o.status == "acked":
                    out.append((o.state, o))
                    break
                if o.status == "failed":
                    out.append((None, o))
                i -= 1
            if i < 0:
                out.append((None, None))  # never written (or trimmed: see _trim)
            for o in ops[b + 1:]:
                if o.sent < t1 and o.status != "noop":
                    out.append((o.state, o))
                    if o.status == "failed":
                        out.append((None, o))
            return out


def miss_explained_locally(cands):
    """A miss is fine outright if nothing is among the candidate states."""
    return any(s is None for s, _ in cands)


def miss_record(key, cands, t0, t1, via):
    """What check.py needs to judge a miss: (key, t0, t1, since, exp_lb, via)
    where a removal must come after `since` and expiry cannot come before
    `exp_lb`."""
    since = min(o.since for _, o in cands if o is not None)
    exp_lb = min(o.exp_lb for _, o in cands if o is not None)
    return (key, t0, t1, since, exp_lb, via)


