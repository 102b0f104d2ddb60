"""memcached 1.6.38 (Debian trixie) as a second reference server, from its chroot.

scripts/test builds a minimal trixie chroot with debootstrap under
tests/.work/trixie (memcached installed inside; its binary needs trixie's
glibc, so it runs through `chroot`, which needs root). This module gives the
suites a path they can treat like any other server binary: a small wrapper
script, written on first use, that execs `chroot <dir> /usr/bin/memcached
"$@"`. chroot execs memcached in place, so the wrapper's pid is memcached's
and larder_servers' process-group kill stops it.

Only TCP on 127.0.0.1 is meaningful across the chroot boundary (a unix socket
or file path given to this memcached is resolved inside the chroot).

    import memcached_1638
    with memcached_1638.server(["-m", "64"]) as s:   # a larder_servers.Server
        ... 127.0.0.1:s.port ...

`python3 tests/lib/memcached_1638.py [PORT]` starts one in the foreground.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import larder_servers  # noqa: E402

VERSION = "1.6.38"
CHROOT = os.environ.get("MEMCACHED_1638_CHROOT") or os.path.join(larder_servers.ROOT, "tests", ".work", "trixie")
WRAPPER = os.path.join(larder_servers.ROOT, "tests", ".work", "bin", "memcached-1.6.38")


def available():
    """Why memcached 1.6.38 cannot run here, or None when it can."""
    if not os.path.isfile(os.path.join(CHROOT, "usr", "bin", "memcached")):
        return f"no memcached in the trixie chroot {CHROOT} (scripts/test builds it with debootstrap)"
    if os.geteuid() != 0:
        return "running memcached 1.6.38 through chroot needs root"
    return None


def binary():
    """Path of an executable that runs the chroot's memcached with the given arguments."""
    why = available()
    if why:
        raise RuntimeError(why)
    text = ("#!/bin/sh\n# written by tests/lib/memcached_1638.py: memcached 1.6.38 from Debian trixie\n"
            f"exec chroot '{CHROOT}' /usr/bin/memcached \"$@\"\n")
    try:
        with open(WRAPPER) as f:
            current = f.read()
    except OSError:
        current = None
    if current != text:
        os.makedirs(os.path.dirname(WRAPPER), exist_ok=True)
        tmp = WRAPPER + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, WRAPPER)
    return WRAPPER


SRC = os.path.join(larder_servers.ROOT, "tests", ".work", "src-1638", f"memcached-{VERSION}")
CHROOT_TLS_DIR = "/tmp/larder-tls-files"


def t_file(name):
    """A file of memcached 1.6.38's t/ (its test certificates: server_crt.pem, server_key.pem,
    cacert.pem, client_crt.pem, client_key.pem), from the source package scripts/test unpacks."""
    path = os.path.join(SRC, "t", name)
    if not os.path.isfile(path):
        raise RuntimeError(f"no {path}: scripts/test unpacks memcached {VERSION}'s source package there")
    return path


def tls_path(name, binary):
    """The path `binary` must be given for t/`name`: the host's for larder, a copy inside the
    chroot for memcached 1.6.38 (it resolves paths there)."""
    host = t_file(name)
    if binary != WRAPPER:
        return host
    inside = os.path.join(CHROOT_TLS_DIR, name)
    dest = os.path.join(CHROOT, inside.lstrip("/"))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(host, "rb") as f:
        data = f.read()
    try:
        with open(dest, "rb") as f:
            same = f.read() == data
    except OSError:
        same = False
    if not same:
        with open(dest + ".tmp", "wb") as f:
            f.write(data)
        os.replace(dest + ".tmp", dest)
    return inside


def tls_args(binary, ca=False):
    """-Z with memcached t/'s server certificate (and its CA with `ca`), paths as `binary` sees them."""
    args = ["-Z", "-o", f"ssl_chain_cert={tls_path('server_crt.pem', binary)}",
            "-o", f"ssl_key={tls_path('server_key.pem', binary)}"]
    if ca:
        args += ["-o", f"ssl_ca_cert={tls_path('cacert.pem', binary)}"]
    return args


class PlainProbeServer(larder_servers.Server):
    """A server started with -Z whose harness listener stays plain (`-l notls:127.0.0.1` on its
    port, memcached's prefix), so it can be probed and driven in plain text; TLS listeners
    are named in its own arguments."""

    def command(self, port):
        cmd = super().command(port)
        cmd[cmd.index("-l") + 1] = "notls:127.0.0.1"
        return cmd


def version():
    """The chroot's memcached -V (e.g. 'memcached 1.6.38')."""
    return subprocess.run([binary(), "-V"], capture_output=True, text=True, timeout=10).stdout.strip()


def server(args=(), name="memcached-1.6.38", env=None):
    """A larder_servers.Server for memcached 1.6.38 on a free 127.0.0.1 port (not yet started:
    use it as a context manager or call .start())."""
    return larder_servers.Server(binary(), list(args), name=name, env=env)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else None
    s = server(sys.argv[2:]).start(port=port)
    print(f"{version()} on 127.0.0.1:{s.port} (pid {s.proc.pid}); Ctrl-C stops it", flush=True)
    try:
        s.proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        s.stop()
