"""Where libmemcached's ketama puts keys, observed on real servers: writes keys
through pylibmc (ketama behaviour, as tests/cluster/test_ketama_client.py
configures it) to the servers given, then asks each server directly which keys
it holds. Prints one "key<TAB>server index" line per key, the index being the
position of the server on the command line. The larder clients' tests compare
their own placement with this, key for key.

usage: pylibmc_placement.py HASH N HOST:PORT...   (HASH: default or md5)
"""

import socket
import sys

import pylibmc


def holder(servers, key):
    found = []
    for i, (host, port) in enumerate(servers):
        with socket.create_connection((host, port), timeout=5) as s:
            # mg without flags: HD on a hit, EN on a miss, one line either way
            s.sendall(b"mg " + key.encode() + b"\r\n")
            buf = b""
            while not buf.endswith(b"\r\n"):
                chunk = s.recv(4096)
                if not chunk:
                    raise RuntimeError(f"server {i} closed")
                buf += chunk
            if buf not in (b"HD\r\n", b"EN\r\n"):
                raise RuntimeError(f"server {i}: {buf!r}")
            if buf == b"HD\r\n":
                found.append(i)
    if len(found) != 1:
        raise RuntimeError(f"{key} is on servers {found}, expected exactly one")
    return found[0]


def main():
    hash_name, n, addrs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    behaviors = {"ketama": True, "tcp_nodelay": True}
    if hash_name != "default":
        behaviors["hash"] = hash_name
    mc = pylibmc.Client(addrs, behaviors=behaviors)
    # keys of several shapes, including a non-ASCII one (libhashkit hashes
    # signed chars)
    keys = [f"k{i}" for i in range(n)] + [f"user:{i}:profile" for i in range(n // 4)] + ["caf\u00e9:1", "x" * 250]
    for k in keys:
        if not mc.set(k, b"v"):
            raise RuntimeError(f"pylibmc could not set {k}")
    servers = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in addrs]
    for k in keys:
        print(f"{k}\t{holder(servers, k)}")


if __name__ == "__main__":
    main()
