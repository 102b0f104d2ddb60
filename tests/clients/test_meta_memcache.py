"""meta-memcache (the meta-protocol client from PyPI) against the server under test.

Covers plain use and the client's stampede helpers, which rely on the
server's meta-protocol machinery: leases (mg N -> W/Z), early recache
(mg R), and stale-while-revalidate (md I, ms C I).
"""

import pytest
from meta_memcache import (
    CacheClient,
    Key,
    LeasePolicy,
    RecachePolicy,
    ServerAddress,
    StalePolicy,
    connection_pool_factory_builder,
)


@pytest.fixture
def mc(server):
    return CacheClient.cache_client_from_servers(
        servers=[ServerAddress(host="127.0.0.1", port=server.port)],
        connection_pool_factory_fn=connection_pool_factory_builder(recv_timeout=5, connection_timeout=5),
    )


def second_client(server):
    return CacheClient.cache_client_from_servers(
        servers=[ServerAddress(host="127.0.0.1", port=server.port)],
        connection_pool_factory_fn=connection_pool_factory_builder(recv_timeout=5, connection_timeout=5),
    )


def test_set_get_delete_touch(mc, key):
    assert mc.set(key(), {"a": [1, 2, 3]}, ttl=100)
    assert mc.get(key()) == {"a": [1, 2, 3]}
    assert mc.set(key("b"), b"\x00\r\nbinary", ttl=100)
    assert mc.get(key("b")) == b"\x00\r\nbinary"
    assert mc.touch(key(), ttl=500)
    assert mc.delete(key())
    assert mc.get(key()) is None
    assert mc.multi_get([key("b"), key("missing")]) == {Key(key("b")): b"\x00\r\nbinary", Key(key("missing")): None}


def test_unicode_and_long_keys_travel_base64(mc, key):
    k = Key(key() + "🍺")
    assert mc.set(k, "beer", ttl=100)
    assert mc.get(k) == "beer"
    long_key = Key(key() + "x" * 400)  # longer than 250: the client sends it hashed and base64
    assert mc.set(long_key, 42, ttl=100)
    assert mc.get(long_key) == 42


def test_cas(mc, key):
    token = mc.set_cas(key(), "v1", ttl=100)
    assert token is not None
    value, cas = mc.get_cas(key())
    assert (value, cas) == ("v1", token)
    assert mc.set(key(), "v2", ttl=100, cas_token=cas)
    assert not mc.set(key(), "v3", ttl=100, cas_token=cas), "a stale CAS must be refused"
    assert mc.get(key()) == "v2"


def test_counters(mc, key):
    assert mc.delta_initialize(key(), delta=5, initial_value=10, initial_ttl=100)
    assert mc.delta_and_get(key(), delta=5) == 15
    assert mc.delta(key(), delta=-3)
    assert mc.get(key()) == "12"  # counters have client flags 0: the client decodes them as text
    assert not mc.delta(key("missing"), delta=1)


def test_lease_one_winner_on_a_miss(mc, server, key):
    other = second_client(server)
    policy = LeasePolicy(ttl=30, miss_retries=1, miss_retry_wait=0.05, miss_max_retry_wait=0.05)
    # The first caller wins the lease and is told to compute the value...
    assert mc.get_or_lease(key(), lease_policy=policy) is None
    # ...the next one is a loser: it retries once, still finds no value, gives up.
    assert other.get_or_lease(key(), lease_policy=policy) is None
    # The winner fills it; now everyone gets it.
    assert mc.set(key(), "computed", ttl=100)
    assert other.get_or_lease(key(), lease_policy=policy) == "computed"


def test_recache_one_winner_others_keep_the_value(mc, server, key):
    other = second_client(server)
    assert mc.set(key(), "v", ttl=20)
    recache = RecachePolicy(ttl=60)  # TTL left (20 s) is below 60 s: one client refreshes
    assert mc.get(key(), recache_policy=recache) is None, "the first reader wins the recache (reported as a miss)"
    assert other.get(key(), recache_policy=recache) == "v", "others keep the current value"
    assert other.get(key(), recache_policy=recache) == "v"


def test_stale_while_revalidate_after_invalidation(mc, server, key):
    other = second_client(server)
    stale = StalePolicy(mark_stale_on_deletion_ttl=30, mark_stale_on_cas_mismatch=True)
    assert mc.set(key(), "old", ttl=100)
    _, cas_before = mc.get_cas(key())
    # Invalidation marks the value stale instead of deleting it.
    assert mc.invalidate(key(), stale_policy=stale)
    # One reader is told to recompute (a miss); the others get the stale value at once.
    assert mc.get(key()) is None
    assert other.get(key()) == "old"
    assert other.get(key()) == "old"
    # A refill computed from data read before the invalidation (older CAS) is
    # kept but remains stale, so the next reader recomputes again.
    assert mc.set(key(), "late", ttl=100, cas_token=cas_before, stale_policy=stale)
    # A fresh write ends it.
    assert mc.set(key(), "fresh", ttl=100)
    assert other.get(key()) == "fresh"

