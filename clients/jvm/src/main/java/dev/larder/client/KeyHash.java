package dev.larder.client;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** The hash libmemcached applies to keys and ketama points. */
public enum KeyHash {
    /** libmemcached's default (pylibmc {@code hash: default}): Jenkins one-at-a-time. */
    ONE_AT_A_TIME,
    /** {@code hash: md5}: the first four digest bytes, little-endian. */
    MD5;

    public int hash(byte[] b) {
        if (this == ONE_AT_A_TIME) {
            return oneAtATime(b);
        }
        try {
            byte[] d = MessageDigest.getInstance("MD5").digest(b);
            return (d[0] & 0xff) | (d[1] & 0xff) << 8 | (d[2] & 0xff) << 16 | (d[3] & 0xff) << 24;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has MD5", e);
        }
    }

    public int hash(String s) {
        return hash(s.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * One-at-a-time as libhashkit computes it: each byte is read through a signed char and
     * widened, so bytes >= 0x80 are sign-extended (Java's byte already is).
     */
    static int oneAtATime(byte[] b) {
        int h = 0;
        for (byte x : b) {
            h += x;
            h += h << 10;
            h ^= h >>> 6;
        }
        h += h << 3;
        h ^= h >>> 11;
        h += h << 15;
        return h;
    }
}
