"""memcached 1.6.38's built-in proxy with its bundled route library (routelib) in front of
cluster nodes, for the cluster suite.

The proxy is the trixie chroot's memcached (tests/lib/memcached_1638.py) started with
`-o proxy_config=routelib,proxy_arg=<config>`: routelib is compiled into Debian's
binary, so only the route configuration (a Lua file) is ours. memcached reads that file
inside its chroot, so it is written under the chroot's /tmp. The configurations are the
ones docs/clusters.md shows operators:

  sharded(nodes)     one pool over every node, keys spread by the pool's hash
  replicated(a, b)   two pools; writes go to both (route_allsync), reads try the first
                     pool and fall back to the second on an error or a miss
                     (route_failover with miss = true)
"""

import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import larder_servers  # noqa: E402
import memcached_1638  # noqa: E402

# How quickly the proxy notices a dead backend and tries it again: short, so that a
# killed-and-restarted node is back within a test's deadline.
SETTINGS = """settings{
    backend_connect_timeout = 1,
    backend_read_timeout = 2,
    backend_retry_waittime = 1,
    backend_failure_limit = 1,
}
"""

# the commands a replicated pair reads with failover (everything else is written to both)
READS = ("get", "gets", "mg", "gat", "gats")


def _backends(nodes):
    return ", ".join(f'"127.0.0.1:{n.port}"' for n in nodes)


def sharded(nodes):
    return SETTINGS + f"""pools{{
    shard = {{ backends = {{ {_backends(nodes)} }} }},
}}
routes{{
    default = route_direct{{ child = "shard" }},
}}
"""


def replicated(first, second):
    reads = "\n".join(f'        {c} = route_failover{{ children = {{ "first", "second" }}, miss = true }},'
                      for c in READS)
    return SETTINGS + f"""pools{{
    first = {{ backends = {{ {_backends(first)} }} }},
    second = {{ backends = {{ {_backends(second)} }} }},
}}
routes{{
    cmap = {{
{reads}
    }},
    default = route_allsync{{ children = {{ "first", "second" }} }},
}}
"""


class Proxy(larder_servers.Server):
    """memcached 1.6.38 in proxy mode with `config` (a routelib Lua text) on a free port."""

    def __init__(self, config, threads=2):
        why = memcached_1638.available()
        if why:
            import pytest
            pytest.fail(why)  # scripts/test installs it: never a skip
        self.dir = tempfile.mkdtemp(prefix="larder-mcproxy-", dir=os.path.join(memcached_1638.CHROOT, "tmp"))
        os.chmod(self.dir, 0o755)
        self.config_path = os.path.join(self.dir, "routes.lua")
        with open(self.config_path, "w") as f:
            f.write(config)
        inside = "/" + os.path.relpath(self.config_path, memcached_1638.CHROOT)
        super().__init__(memcached_1638.binary(), ["-t", str(threads), "-o",
                                                   f"proxy_config=routelib,proxy_arg={inside}"],
                         name="memcached-1.6.38-proxy")

    def stop(self):
        super().stop()
        shutil.rmtree(self.dir, ignore_errors=True)
