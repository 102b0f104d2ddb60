package dev.larder.client;

import static dev.larder.client.TrackFixture.eventually;
import static dev.larder.client.TrackFixture.s;
import static dev.larder.client.TrackFixture.trackedClient;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The JVM client's invalidation machinery over real sockets, against {@link FakeTrackServer}:
 * IV, IA, LOST, the barrier, loss and resubscription with a new sid, lazy re-attach, and an IV
 * overtaking the reply it invalidates.
 */
class FakeTrackTest {
    private static LarderClient client(FakeTrackServer f) throws InterruptedException {
        return trackedClient(f.addr());
    }

    @Test
    void ivFromAnotherWriterDropsTheCopy() throws Exception {
        try (FakeTrackServer f = new FakeTrackServer(); LarderClient c = client(f)) {
            f.write("k", "v1");
            assertEquals("v1", s(c.getIfPresent("k").join()));
            assertEquals("v1", s(c.getIfPresent("k").join()));
            assertEquals(1, c.metrics().nearHits());
            f.write("k", "v2");
            c.syncInvalidations(Duration.ofSeconds(5));
            assertEquals("v2", s(c.getIfPresent("k").join()));
            Metrics.Snapshot m = c.metrics();
            assertEquals(List.of(1L, 2L, 1L), List.of(m.nearHits(), m.serverHits(), m.invalidations()), m.toString());
        }
    }

    @Test
    void anIvThatOvertakesItsReplyKeepsTheOldValueOut() throws Exception {
        try (FakeTrackServer f = new FakeTrackServer(); LarderClient c = client(f)) {
            f.write("race", "old");
            synchronized (f) {
                f.overtake.add("race");
            }
            assertEquals("old", s(c.getIfPresent("race").join()));
            synchronized (f) {
                f.values.put("race", "new".getBytes(StandardCharsets.UTF_8));
            }
            assertEquals("new", s(c.getIfPresent("race").join()), "the overtaken reply was not cached");
            assertEquals(0, c.metrics().nearHits());
        }
    }

    @Test
    void iaAndLostFlushAndTheStreamStays() throws Exception {
        try (FakeTrackServer f = new FakeTrackServer(); LarderClient c = client(f)) {
            for (String line : List.of("IA\r\n", "LOST\r\n")) {
                f.write("a", "1");
                c.getIfPresent("a").join();
                assertEquals(1, c.nearEntries());
                long flushes = c.metrics().flushes();
                f.pushAll(line);
                c.syncInvalidations(Duration.ofSeconds(5));
                assertEquals(0, c.nearEntries(), line);
                assertEquals(flushes + 1, c.metrics().flushes());
            }
            assertEquals(1, f.subscriptions());
        }
    }

    @Test
    void streamLossFlushesResubscribesAndReattachesLazily() throws Exception {
        try (FakeTrackServer f = new FakeTrackServer(); LarderClient c = client(f)) {
            f.write("x", "1");
            c.getIfPresent("x").join();
            assertEquals(1, c.nearEntries());
            f.killStreams();
            eventually(() -> c.nearEntries() == 0, "flush on loss");
            eventually(c::streamsUp, "resubscribed");
            assertEquals("1", s(c.getIfPresent("x").join()));
            synchronized (f) {
                assertEquals(List.of(1L, 2L), f.attaches);
            }
            f.write("x", "2");
            c.syncInvalidations(Duration.ofSeconds(5));
            assertEquals("2", s(c.getIfPresent("x").join()));
        }
    }
}
