"""Start and stop memcached-compatible servers for the black-box tests.

Every server gets its own free port on 127.0.0.1 (never 11211), runs in its own
process group, logs to a file, and is killed when the test ends or the Python
process exits, whatever happened. Used by tests/clients, tests/differential,
tests/observe and tests/dashboard; `Server` is also the base of other
processes the tests run beside a server (tests/observe's memcached_exporter).
"""

import atexit
import os
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEMCACHED_BIN = os.environ.get("MEMCACHED_BIN", "/usr/bin/memcached")

_live = set()


def larder_bin():
    """The server under test: $LARDER_BIN, else the release build of this workspace."""
    if os.environ.get("LARDER_BIN"):
        return os.environ["LARDER_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    return os.path.join(target, "release", "larder")


def free_port(kind=socket.SOCK_STREAM):
    """A TCP (or, with kind=socket.SOCK_DGRAM, UDP) port on 127.0.0.1 that was
    free a moment ago (never 11211)."""
    while True:
        s = socket.socket(socket.AF_INET, kind)
        try:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        finally:
            s.close()
        if port != 11211:
            return port


class Server:
    """One server process listening on 127.0.0.1:<port>, TCP only."""

    def __init__(self, binary, args=(), name=None, start_timeout=10.0, env=None):
        self.binary = binary
        self.args = list(args)
        self.name = name or os.path.basename(binary)
        self.start_timeout = start_timeout
        # extra environment variables (e.g. SASL_CONF_PATH for -S)
        self.env = dict(env or {})
        # -S speaks only the binary protocol: probe readiness with a binary version
        self.binary_probe = "-S" in self.args or "--enable-sasl" in self.args
        self.proc = None
        self.port = None
        self.log_path = None

    def command(self, port):
        cmd = [self.binary, "-p", str(port), "-U", "0", "-l", "127.0.0.1"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]
        return cmd + self.args

    def start(self, port=None):
        """Start on a free port, or on `port` (a restart on the port it had: one try)."""
        if not (os.path.isfile(self.binary) and os.access(self.binary, os.X_OK)):
            raise RuntimeError(f"{self.name}: no executable at {self.binary}")
        last = ""
        # another process may grab the port between free_port() and bind: try others
        for _ in range(1 if port else 5):
            port = port or free_port()
            fd, self.log_path = tempfile.mkstemp(prefix=f"{self.name}-{port}-", suffix=".log")
            log = os.fdopen(fd, "wb")
            cmd = self.command(port)
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, env={**os.environ, **self.env})
            log.close()
            _live.add(self)
            self.port = port
            if self._wait_ready():
                return self
            last = self.log_text()
            self.stop()
            port = None
        raise RuntimeError(f"{self.name} did not start: {' '.join(self.command('PORT'))}\n{last}")

    def _wait_ready(self):
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
                    s.settimeout(2.0)
                    if self.binary_probe:
                        # binary VERSION (0x0b): allowed before SASL authentication
                        s.sendall(b"\x80\x0b" + bytes(22))
                        ready = s.recv(100)[:2] == b"\x81\x0b"
                    else:
                        s.sendall(b"version\r\n")
                        ready = s.recv(100).startswith(b"VERSION ")
                    if ready:
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-4000:].decode("utf-8", "replace")
        except (OSError, TypeError):
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        try:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(5)
        except ProcessLookupError:
            pass
        _live.discard(self)
        if self.log_path and os.path.exists(self.log_path):
            os.unlink(self.log_path)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


@atexit.register
def _kill_all():
    for s in list(_live):
        s.stop()


def _on_term(signum, frame):
    _kill_all()
    # not SystemExit: pytest would report it as one test's failure and go on starting servers
    os._exit(128 + signum)


# An interrupted or timed-out run still takes its servers down.
for _sig in (signal.SIGTERM, signal.SIGHUP):
    try:
        if signal.getsignal(_sig) in (signal.SIG_DFL, None):
            signal.signal(_sig, _on_term)
    except ValueError:  # not the main thread
        pass
