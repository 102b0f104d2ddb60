"""A client the soak kills with SIGKILL in the middle of a request.

    victim.py PORT MODE TLS SEED KEY...

MODE set:  sends a big `set` (1-16 MiB) in small slices, slowly
     get:  asks for big values (KEY... are the soak's big keys) and reads slowly
     bin:  a binary SET of a big value, sliced
     pipe: pipelines many small sets and gets without reading
Its keys (vk/...) are checked by no one; the point is what the server does
with a connection whose client dies mid-value.
"""

import random
import socket
import ssl
import struct
import sys
import time


def main():
    port, mode, tls, seed = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
    keys = [k.encode() for k in sys.argv[5:]]
    rng = random.Random(seed)
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    if tls:
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        c.check_hostname = False
        c.verify_mode = ssl.CERT_NONE
        s = c.wrap_socket(s)
    key = b"vk/%d" % rng.randint(0, 50)
    if mode in ("set", "bin"):
        n = rng.randint(1 << 20, 16 << 20)
        if mode == "set":
            s.sendall(b"set %s 0 0 %d\r\n" % (key, n))
        else:
            s.sendall(struct.pack(">BBHBBHIIQ", 0x80, 0x01, len(key), 8, 0, 0, len(key) + 8 + n, 0, 0) + struct.pack(">II", 0, 0) + key)
        chunk = b"v" * 65536
        sent = 0
        while sent < n:
            s.sendall(chunk[: min(len(chunk), n - sent)])
            sent += len(chunk)
            time.sleep(0.001)
        s.sendall(b"\r\n")
        time.sleep(5)
    elif mode == "get":
        s.sendall(b"get " + b" ".join(keys or [key]) + b"\r\n")
        while True:
            d = s.recv(4096)
            if not d:
                break
            time.sleep(0.002)
    else:
        while True:
            for i in range(200):
                s.sendall(b"set vk/p%d 0 0 5\r\nhello\r\nget vk/p%d vk/p%d\r\n" % (i, i, i + 1))
            time.sleep(0.001)


if __name__ == "__main__":
    try:
        main()
    except (OSError, KeyboardInterrupt):
        pass
