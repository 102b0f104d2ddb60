package dev.larder.client;

import static dev.larder.client.TrackFixture.b;
import static dev.larder.client.TrackFixture.eventually;
import static dev.larder.client.TrackFixture.s;
import static dev.larder.client.TrackFixture.trackedClient;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The invalidation stream end to end, against a real larder. */
class TrackingTest {
    private static LarderClient tracked(LarderServer... servers) throws InterruptedException {
        return trackedClient(java.util.Arrays.stream(servers).map(LarderServer::addr).toArray(String[]::new));
    }

    @Test
    void anotherWriterInvalidatesTheNearCopy() throws Exception {
        try (LarderServer a = new LarderServer(); LarderServer b2 = new LarderServer(); LarderServer c = new LarderServer();
             LarderClient reader = tracked(a, b2, c);
             LarderClient writer = LarderClient.builder().servers(a.addr(), b2.addr(), c.addr()).build()) {
            for (int i = 0; i < 50; i++) {
                writer.set("iv" + i, b("v1"), 0).join();
                reader.getIfPresent("iv" + i).join();
                assertEquals("v1", s(reader.getIfPresent("iv" + i).join()));
            }
            assertEquals(50, reader.metrics().nearHits());
            for (int i = 0; i < 50; i++) {
                writer.set("iv" + i, b("v2"), 0).join();
            }
            reader.syncInvalidations(Duration.ofSeconds(5));
            for (int i = 0; i < 50; i++) {
                assertEquals("v2", s(reader.getIfPresent("iv" + i).join()), "iv" + i + " stale");
            }
            assertTrue(reader.metrics().invalidations() >= 50);
        }
    }

    @Test
    void flushAllAndStreamLossFlushTheNearCache() throws Exception {
        try (LarderServer a = new LarderServer(); LarderClient c = tracked(a)) {
            c.set("f", b("1"), 0).join();
            c.getIfPresent("f").join();
            assertEquals(1, c.nearEntries());
            a.raw("flush_all\r\n", "OK\r\n");
            c.syncInvalidations(Duration.ofSeconds(5));
            assertEquals(0, c.nearEntries());
            assertNull(c.getIfPresent("f").join());

            c.set("f", b("2"), 0).join();
            c.getIfPresent("f").join();
            long flushes = c.metrics().flushes();
            c.dropStream(0);
            eventually(() -> c.metrics().flushes() > flushes, "a flush after the stream loss");
            assertEquals(0, c.nearEntries());
            eventually(c::streamsUp, "resubscribed");
            c.getIfPresent("f").join();
            try (LarderClient w = LarderClient.builder().servers(a.addr()).build()) {
                w.set("f", b("3"), 0).join();
            }
            c.syncInvalidations(Duration.ofSeconds(5));
            assertEquals("3", s(c.getIfPresent("f").join()), "the re-attached connection registered");
        }
    }

    @Test
    void serverRestartFlushesAndResubscribes() throws Exception {
        try (LarderServer a = new LarderServer(); LarderClient c = tracked(a)) {
            c.set("r", b("1"), 0).join();
            c.getIfPresent("r").join();
            a.restart();
            eventually(() -> c.nearEntries() == 0, "flush after the restart");
            eventually(c::streamsUp, "resubscribed");
            assertNull(c.getIfPresent("r").join(), "cold restart: empty, and no stale near copy");
        }
    }

    @Test
    void broadcastModeInvalidatesByPrefix() throws Exception {
        try (LarderServer a = new LarderServer();
             LarderClient c = LarderClient.builder().servers(a.addr()).nearCacheMaxBytes(1 << 20).broadcastPrefixes("user:").build();
             LarderClient w = LarderClient.builder().servers(a.addr()).build()) {
            eventually(c::streamsUp, "subscribed");
            w.set("user:1", b("a"), 0).join();
            c.getIfPresent("user:1").join();
            assertEquals("a", s(c.getIfPresent("user:1").join()));
            w.set("user:1", b("b"), 0).join();
            c.syncInvalidations(Duration.ofSeconds(5));
            assertEquals("b", s(c.getIfPresent("user:1").join()));
        }
    }

    /** {@link LarderServer#raw} from a loader, which may not throw checked exceptions. */
    private static String raw(LarderServer a, String cmd, String end) {
        try {
            return a.raw(cmd, end);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * The lease race: another process sets the key while our loader runs (deterministically
     * between the load and the store). The store is gated by the lease's CAS, so the newer
     * value stays; the loaded one is returned but cached nowhere. A plain ms overwrote it.
     */
    @Test
    void aSetBetweenTheLoadAndTheStoreWinsOverTheLoadedValue() throws Exception {
        try (LarderServer a = new LarderServer(); LarderClient c = tracked(a)) {
            byte[] v = c.get("race", k -> {
                assertEquals("HD\r\n", raw(a, "ms race 5 T60\r\nnewer\r\n", "\r\n"));
                return b("older");
            }).join();
            assertEquals("older", s(v), "the caller gets what it loaded");
            assertEquals(1, c.metrics().leaseLost());
            assertEquals("VA 5\r\nnewer\r\n", a.raw("mg race v\r\n", "newer\r\n"));
            c.syncInvalidations(Duration.ofSeconds(5));
            assertEquals("newer", s(c.getIfPresent("race").join()));
            assertEquals("newer", s(c.getIfPresent("race").join()), "now from the near cache");

            // the same when we stopped waiting for an absent winner (Z) and loaded ourselves
            String won = a.raw("mg late v c t N30\r\n", "\r\n\r\n");
            String cas = java.util.Arrays.stream(won.trim().split(" ")).filter(w -> w.startsWith("c"))
                    .map(w -> w.substring(1)).findFirst().orElseThrow(() -> new AssertionError(won));
            try (LarderClient c2 = LarderClient.builder().servers(a.addr()).leaseWait(Duration.ofMillis(100)).build()) {
                byte[] mine = c2.get("late", k -> {
                    assertEquals("HD\r\n", raw(a, "ms late 6 T60 C" + cas + "\r\ntheirs\r\n", "\r\n"));
                    return b("mine");
                }).join();
                assertEquals("mine", s(mine));
                assertEquals(1, c2.metrics().leaseLost());
                assertEquals("VA 6\r\ntheirs\r\n", a.raw("mg late v\r\n", "theirs\r\n"));

                // no race: the loaded value is stored
                c2.get("calm", k -> b("loaded")).join();
                assertEquals(1, c2.metrics().leaseLost());
                assertEquals("VA 6\r\nloaded\r\n", a.raw("mg calm v\r\n", "loaded\r\n"));
            }
        }
    }
}
