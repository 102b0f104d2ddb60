package dev.larder.client;

import java.util.Arrays;
import java.util.List;

/**
 * Key placement exactly as libmemcached's unweighted ketama places keys (pylibmc's
 * {@code ketama} behaviour): 100 points per server, each the hash of {@code host:port-i}
 * ({@code host-i} on port 11211), sorted by unsigned value, ties by server index; a key
 * goes to the first point whose value is >= the key's hash, wrapping to the first.
 */
public final class Ketama {
    private static final int POINTS_PER_SERVER = 100;
    private static final int DEFAULT_PORT = 11211;

    // (value << 32 | server index) with the sign bit flipped, so a signed sort orders by the
    // unsigned value, then by index, as libmemcached's qsort does
    private final long[] points;
    private final int servers;
    private final KeyHash hash;

    public Ketama(List<HostPort> servers, KeyHash hash) {
        this.servers = servers.size();
        this.hash = hash;
        points = new long[servers.size() * POINTS_PER_SERVER];
        int n = 0;
        for (int idx = 0; idx < servers.size(); idx++) {
            HostPort s = servers.get(idx);
            for (int i = 0; i < POINTS_PER_SERVER; i++) {
                String name = s.port() == DEFAULT_PORT ? s.host() + "-" + i : s.host() + ":" + s.port() + "-" + i;
                points[n++] = ((Integer.toUnsignedLong(hash.hash(name)) << 32) | idx) ^ Long.MIN_VALUE;
            }
        }
        Arrays.sort(points);
    }

    /** The index (in the server list) of the server {@code key} belongs to. */
    public int serverFor(String key) {
        if (servers <= 1) {
            return 0;
        }
        long h = Integer.toUnsignedLong(hash.hash(key));
        int lo = 0, hi = points.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (((points[mid] ^ Long.MIN_VALUE) >>> 32) < h) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return (int) (points[lo == points.length ? 0 : lo] & 0xffffffffL);
    }

    /** A server as listed by the application. */
    public record HostPort(String host, int port) {
        public static HostPort parse(String s) {
            int i = s.lastIndexOf(':');
            if (i <= 0) {
                throw new IllegalArgumentException(s + ": want host:port");
            }
            return new HostPort(s.substring(0, i), Integer.parseInt(s.substring(i + 1)));
        }
    }
}
