package dev.larder.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * The set-up the invalidation tests share, whichever server stands behind them (the in-process
 * {@link FakeTrackServer} or a real {@link LarderServer}): a tracking client with a near cache
 * whose streams are subscribed before the test starts, and the small helpers those tests use.
 */
final class TrackFixture {
    /** How long a test waits for an asynchronous effect (subscription, flush) before failing. */
    static final Duration PATIENCE = Duration.ofSeconds(5);

    private TrackFixture() {}

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String s(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    /** Polls {@code f} every 10 ms until it holds; fails naming {@code what} after {@link #PATIENCE}. */
    static void eventually(BooleanSupplier f, String what) throws InterruptedException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!f.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }

    /** A tracking-mode client with a 1 MiB near cache on these servers, every stream subscribed. */
    static LarderClient trackedClient(String... addrs) throws InterruptedException {
        LarderClient c = LarderClient.builder().servers(addrs).nearCacheMaxBytes(1 << 20).build();
        eventually(c::streamsUp, "streams subscribed");
        return c;
    }
}
