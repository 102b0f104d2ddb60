#!/usr/bin/env python3
"""Helpers of tests/package/run.sh (the Debian package test).

  helper.py unit UNIT                 the [Service] settings the test emulates, as
                                      shell assignments (ExecStart as U_EXEC_0.. N)
  helper.py mdwe-exec PROG ARG...     prctl(PR_SET_MDWE, REFUSE_EXEC_GAIN), then exec:
                                      the kernel's form of MemoryDenyWriteExecute=
  helper.py free-port                 a free TCP port on 127.0.0.1 (not 11211)
  helper.py wait-port PORT SECS       until 127.0.0.1:PORT accepts
  helper.py talk PORT                 set/get/gets/delete/stats over TCP; prints stats pid
  helper.py trace-check LOG UNIT WRAPPER
                                      the strace -f log of the wrapper and larder against
                                      what the unit's sandbox allows (system calls,
                                      address families, W^X, /proc, /dev and writes)
  helper.py execve-argv LOG PROG      the argv PROG was exec'd with in an strace log
  helper.py kv ADDR set|get KEY [VALUE]
                                      one set (prints STORED) or get (prints the value
                                      or MISS); ADDR is a TCP port on 127.0.0.1 or a
                                      Unix socket path
  helper.py wait-unix PATH SECS       until the Unix socket PATH accepts
"""
import ctypes
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time


def unit_settings(path):
    """key -> list of values of the [Service] section (repeated keys kept in order)."""
    section, out = None, {}
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            k, v = line.split("=", 1)
            out.setdefault(k.strip(), []).append(v.strip())
    return out


def cmd_unit(path):
    s = unit_settings(path)
    execs = [v for v in s.get("ExecStart", []) if v]
    if len(execs) != 1:
        sys.exit(f"unit: want one ExecStart=, found {execs}")
    cmd = execs[0]
    if re.search(r"[%$]", cmd) or cmd[:1] in "-@:+!":
        sys.exit(f"unit: ExecStart with specifiers, variables or prefixes is not emulated: {cmd}")
    argv = shlex.split(cmd)
    print(f"U_EXEC_N={len(argv)}")
    for i, a in enumerate(argv):
        print(f"U_EXEC_{i}={shlex.quote(a)}")
    for key in ("User", "Group", "LimitNOFILE", "UMask", "WorkingDirectory", "RuntimeDirectory",
                "RuntimeDirectoryMode", "NoNewPrivileges", "CapabilityBoundingSet",
                "MemoryDenyWriteExecute", "SyslogIdentifier"):
        v = s.get(key, [""])[-1]
        print(f"U_{key}={shlex.quote(v)}")


def cmd_mdwe_exec(argv):
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1
    if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        print(f"mdwe-exec: PR_SET_MDWE failed ({os.strerror(err)}); running without it", file=sys.stderr)
    os.execv(argv[0], argv)


def cmd_free_port():
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port != 11211:
            print(port)
            return


def cmd_wait_port(port, secs):
    end = time.time() + float(secs)
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"nothing accepts on 127.0.0.1:{port} after {secs}s")


def connect(addr):
    if addr.startswith("/"):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(addr)
        return s
    return socket.create_connection(("127.0.0.1", int(addr)), timeout=10)


def cmd_wait_unix(path, secs):
    end = time.time() + float(secs)
    while time.time() < end:
        try:
            connect(path).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"nothing accepts on {path} after {secs}s")


def cmd_kv(addr, op, key, value=None):
    s = connect(addr)
    f = s.makefile("rwb")
    if op == "set":
        v = value.encode()
        f.write(f"set {key} 0 0 {len(v)}\r\n".encode() + v + b"\r\n")
        f.flush()
        print(f.readline().decode().strip())
    else:
        f.write(f"get {key}\r\n".encode())
        f.flush()
        head = f.readline().decode().split()
        if head == ["END"]:
            print("MISS")
        else:
            print(f.read(int(head[3]) + 2)[:-2].decode())
            f.readline()
    s.close()


def cmd_talk(port):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
    f = s.makefile("rwb")

    def req(line, data=None):
        f.write(line.encode() + b"\r\n")
        if data is not None:
            f.write(data + b"\r\n")
        f.flush()

    def readline():
        line = f.readline()
        if not line:
            sys.exit("connection closed")
        return line.rstrip(b"\r\n")

    value = b"packaged larder \x00\xff" + os.urandom(8).hex().encode()
    req(f"set pkg:test 42 0 {len(value)}", value)
    got = readline()
    if got != b"STORED":
        sys.exit(f"set: {got!r}")
    req("get pkg:test")
    head = readline()
    if head != f"VALUE pkg:test 42 {len(value)}".encode():
        sys.exit(f"get: {head!r}")
    data = f.read(len(value) + 2)
    if data[:-2] != value or readline() != b"END":
        sys.exit(f"get: wrong value {data!r}")
    req("delete pkg:test")
    if readline() != b"DELETED":
        sys.exit("delete failed")
    req("get pkg:test")
    if readline() != b"END":
        sys.exit("deleted key still there")
    req("stats")
    stats = {}
    while True:
        line = readline()
        if line == b"END":
            break
        _, k, v = line.decode().split(" ", 2)
        stats[k] = v
    req("quit")
    s.close()
    print(f"pid={stats.get('pid')} version={stats.get('version')} "
          f"max_connections={stats.get('max_connections')} threads={stats.get('threads')}")


# ---------------------------------------------------------------------------
# strace -f log checks

LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. (\w+) resumed>(.*)|(\w+)\((.*))$")
RESULT = re.compile(r"\)\s+=\s+(-?\d+|\?)")


def syscall_groups():
    """@group -> set of syscalls, every nested @group expanded."""
    out = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager"],
                         capture_output=True, text=True, check=True).stdout
    raw, group = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            group = line.split()[0]
            raw[group] = []
        elif group and line.startswith("    ") and not line.strip().startswith("#"):
            raw[group].append(line.strip())

    def expand(g, seen=()):
        calls = set()
        for item in raw.get(g, []):
            if item.startswith("@"):
                if item not in seen:
                    calls |= expand(item, seen + (g,))
            else:
                calls.add(item)
        return calls

    return {g: expand(g) for g in raw}


def allowed_syscalls(unit):
    groups = syscall_groups()

    def resolve(words):
        calls = set()
        for w in words:
            calls |= groups[w] if w.startswith("@") else {w}
        return calls

    allow = None
    for v in unit.get("SystemCallFilter", []):
        if not v:
            allow = None
            continue
        deny = v.startswith("~")
        words = v.lstrip("~").split()
        if deny:
            allow = (allow if allow is not None else groups["@known"]) - resolve(words)
        else:
            allow = (allow or set()) | resolve(words)
    return allow


def parse_trace(log, first_exec):
    """The (pid, name, args) of every call the process that exec'd first_exec
    made from that exec on, and of its descendants."""
    events, children = [], {}
    start = None
    with open(log, errors="replace") as f:
        for n, line in enumerate(f):
            m = LINE.match(line.rstrip("\n"))
            if not m:
                continue
            pid = int(m.group(1))
            if m.group(2):
                name, rest, resumed = m.group(2), m.group(3), True
            else:
                name, rest, resumed = m.group(4), m.group(5), False
            if name in ("clone", "clone3", "fork", "vfork"):
                r = RESULT.search(rest)
                if r and r.group(1) not in ("?",) and int(r.group(1)) > 0:
                    children.setdefault(pid, []).append(int(r.group(1)))
            if resumed:
                continue
            if start is None and name == "execve" and rest.startswith(f'"{first_exec}"') and re.search(r"= 0$", rest):
                start = (pid, len(events))
            events.append((pid, name, rest))
    if start is None:
        sys.exit(f"trace-check: no successful execve of {first_exec} in {log}")
    root, first = start
    tracked, todo = set(), [root]
    while todo:
        p = todo.pop()
        if p not in tracked:
            tracked.add(p)
            todo.extend(children.get(p, []))
    return [e for i, e in enumerate(events) if e[0] in tracked and (e[0] != root or i >= first)]


def cmd_trace_check(log, unit_path, wrapper):
    unit = unit_settings(unit_path)
    events = parse_trace(log, wrapper)
    failures = []
    names = {}
    for _, name, _ in events:
        names[name] = names.get(name, 0) + 1

    allow = allowed_syscalls(unit)
    if allow is not None:
        outside = sorted(n for n in names if n not in allow)
        if outside:
            failures.append(f"system calls outside SystemCallFilter: {outside}")
    families = set()
    fam_allowed = set(" ".join(unit.get("RestrictAddressFamilies", [])).split())
    for _, name, args in events:
        if name in ("socket", "socketpair"):
            families.add(args.split(",", 1)[0].strip())
    if fam_allowed and not families <= fam_allowed:
        failures.append(f"address families outside RestrictAddressFamilies: {sorted(families - fam_allowed)}")

    # MemoryDenyWriteExecute=, as systemd's seccomp rule: no mmap W+X, no
    # mprotect/pkey_mprotect adding X, no shmat SHM_EXEC.
    if unit.get("MemoryDenyWriteExecute", [""])[-1] in ("yes", "true", "1", "on"):
        for pid, name, args in events:
            if name == "mmap" and "PROT_WRITE" in args and "PROT_EXEC" in args:
                failures.append(f"W+X mapping: {pid} mmap({args}")
            if name in ("mprotect", "pkey_mprotect") and "PROT_EXEC" in args:
                failures.append(f"mprotect to executable: {pid} {name}({args}")
            if name == "shmat" and "SHM_EXEC" in args:
                failures.append(f"SHM_EXEC: {pid} shmat({args}")

    # Files: ProcSubset=pid (only /proc/self, /proc/<pid>), PrivateDevices=
    # (only pseudo devices), ProtectHome=, ProtectSystem=strict (writes only
    # under /run/<RuntimeDirectory>, /dev and the private /tmp, /var/tmp).
    opened = set()
    runtime = ["/run/" + d for d in " ".join(unit.get("RuntimeDirectory", [])).split()]
    writable = ["/dev/", "/tmp/", "/var/tmp/"] + [r + "/" for r in runtime]
    pseudo = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
    for pid, name, args in events:
        if name not in ("open", "openat", "openat2", "creat", "mkdir", "mkdirat", "unlink", "unlinkat",
                        "rename", "renameat", "renameat2", "bind", "execve", "stat", "newfstatat",
                        "statx", "access", "faccessat", "faccessat2", "readlink", "readlinkat"):
            continue
        m = re.search(r'"(/[^"]*)"', args)
        if not m:
            continue
        path = m.group(1)
        if name == "bind" and "sun_path" not in args:
            continue
        failed = re.search(r"= -1 ", args)
        opened.add((name, path, bool(failed)))
        if path.startswith("/proc/") and not re.match(r"^/proc/(self|thread-self|\d+)(/|$)", path) and not failed:
            failures.append(f"ProcSubset=pid hides {path} ({name})")
        if path.startswith("/dev/") and not failed and not (
                path in pseudo or path.startswith(("/dev/pts/", "/dev/shm/", "/dev/fd/"))):
            failures.append(f"PrivateDevices= hides {path} ({name})")
        if path.startswith(("/home/", "/root/", "/run/user/")) and not failed:
            failures.append(f"ProtectHome= hides {path} ({name})")
        writes = (name in ("creat", "mkdir", "mkdirat", "unlink", "unlinkat", "rename", "renameat",
                           "renameat2", "bind")
                  or (name.startswith("open") and re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", args)))
        if writes and not any(path.startswith(w) or path == w.rstrip("/") for w in writable):
            failures.append(f"ProtectSystem=strict: writes {path} ({name}{' failed' if failed else ''})")

    print(f"trace: {len(events)} calls, {len(names)} distinct system calls, "
          f"address families {sorted(families) or '-'}, {len(opened)} paths looked at")
    print("trace: system calls: " + " ".join(f"{n}:{c}" for n, c in sorted(names.items())))
    if allow is not None:
        print(f"trace: the unit's SystemCallFilter allows {len(allow)} calls")
    for f in failures:
        print("trace: FAIL: " + f)
    sys.exit(1 if failures else 0)


def cmd_execve_argv(log, prog):
    """argv of the successful execve of prog, from strace -s big -e trace=execve."""
    with open(log, errors="replace") as f:
        for line in f:
            m = re.search(r'execve\("' + re.escape(prog) + r'", \[(.*)\], .*\) = 0$', line)
            if m:
                # strace quotes like C; these words are ASCII
                words = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))
                for w in words:
                    print(w.encode().decode("unicode_escape"))
                return
    sys.exit(f"no execve of {prog} in {log}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "unit":
        cmd_unit(*args)
    elif cmd == "mdwe-exec":
        cmd_mdwe_exec(args)
    elif cmd == "free-port":
        cmd_free_port()
    elif cmd == "wait-port":
        cmd_wait_port(*args)
    elif cmd == "talk":
        cmd_talk(*args)
    elif cmd == "trace-check":
        cmd_trace_check(*args)
    elif cmd == "kv":
        cmd_kv(*args)
    elif cmd == "wait-unix":
        cmd_wait_unix(*args)
    elif cmd == "execve-argv":
        cmd_execve_argv(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
