package dev.larder.client;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The near cache: Caffeine, bounded in bytes (Window TinyLFU: frequency- and size-aware),
 * each entry living no longer than the server's remaining TTL less a second (the server
 * counts whole seconds) and no longer than the configured maximum; plus the race rule's
 * pending tokens. Token check + insert and invalidation take the same stripe lock, so an
 * invalidation is never overtaken by the insert of the value it invalidates.
 */
final class NearCache {
    private static final int ENTRY_OVERHEAD = 96;
    private static final int STRIPES = 16;

    private record Entry(byte[] value, long ttlNanos) {}

    private final Cache<String, Entry> cache;
    private final List<HashMap<String, Long>> pending = new ArrayList<>(STRIPES);
    private final AtomicLong nextToken = new AtomicLong(1);
    private final Duration maxTtl;
    private final Metrics metrics;

    NearCache(long maxBytes, Duration maxTtl, Metrics metrics) {
        this.maxTtl = maxTtl;
        this.metrics = metrics;
        for (int i = 0; i < STRIPES; i++) {
            pending.add(new HashMap<>());
        }
        cache = Caffeine.newBuilder()
                .maximumWeight(maxBytes)
                .weigher((String k, Entry e) -> (int) Math.min(Integer.MAX_VALUE, (long) k.length() + e.value().length + ENTRY_OVERHEAD))
                .expireAfter(new Expiry<String, Entry>() {
                    @Override
                    public long expireAfterCreate(String k, Entry e, long now) {
                        return e.ttlNanos();
                    }

                    @Override
                    public long expireAfterUpdate(String k, Entry e, long now, long left) {
                        return e.ttlNanos();
                    }

                    @Override
                    public long expireAfterRead(String k, Entry e, long now, long left) {
                        return left;
                    }
                })
                .build();
    }

    /** The TTL a copy gets, or null if the item is too close to expiry to copy. */
    static Duration nearTtl(Long serverTtl, Duration max) {
        if (serverTtl == null || serverTtl == -1) {
            return max;
        }
        if (serverTtl > 1) {
            Duration d = Duration.ofSeconds(serverTtl - 1);
            return d.compareTo(max) < 0 ? d : max;
        }
        return null;
    }

    private HashMap<String, Long> stripe(String key) {
        return pending.get(Math.floorMod(key.hashCode(), STRIPES));
    }

    byte[] get(String key) {
        Entry e = cache.getIfPresent(key);
        return e == null ? null : e.value();
    }

    long begin(String key) {
        long t = nextToken.getAndIncrement();
        HashMap<String, Long> s = stripe(key);
        synchronized (s) {
            s.put(key, t);
        }
        return t;
    }

    boolean complete(String key, long token, byte[] value, Long serverTtl) {
        HashMap<String, Long> s = stripe(key);
        synchronized (s) {
            Long t = s.get(key);
            if (t == null || t != token) {
                return false;
            }
            s.remove(key);
            Duration ttl = nearTtl(serverTtl, maxTtl);
            if (ttl == null) {
                return false;
            }
            cache.put(key, new Entry(value, ttl.toNanos()));
            return true;
        }
    }

    void abandon(String key, long token) {
        HashMap<String, Long> s = stripe(key);
        synchronized (s) {
            Long t = s.get(key);
            if (t != null && t == token) {
                s.remove(key);
            }
        }
    }

    void invalidate(String key) {
        HashMap<String, Long> s = stripe(key);
        synchronized (s) {
            s.remove(key);
            cache.invalidate(key);
        }
    }

    /** Every entry and every pending token goes, all stripes held meanwhile. */
    void flush() {
        flushStripe(0);
        metrics.flushes.increment();
    }

    private void flushStripe(int i) {
        if (i == STRIPES) {
            cache.invalidateAll();
            return;
        }
        synchronized (pending.get(i)) {
            pending.get(i).clear();
            flushStripe(i + 1);
        }
    }

    long weightedSize() {
        cache.cleanUp();
        return cache.policy().eviction().orElseThrow().weightedSize().orElse(0);
    }

    long entries() {
        cache.cleanUp();
        return cache.estimatedSize();
    }

    int pendingTokens() {
        int n = 0;
        for (HashMap<String, Long> s : pending) {
            synchronized (s) {
                n += s.size();
            }
        }
        return n;
    }
}
