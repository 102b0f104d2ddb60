package dev.larder.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The parts that need no server: hashing, reply and push grammar, the consumer, the race rule. */
class UnitTest {
    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void oneAtATimeMatchesTheRustClient() {
        assertEquals(0, KeyHash.oneAtATime(b("")));
        assertEquals(0xca2e9442, KeyHash.oneAtATime(b("a")));
    }

    @Test
    void replies() {
        Reply r = Reply.parse(b("VA 2 c33 t100 kfoo W"));
        assertEquals(Reply.Kind.VA, r.kind());
        assertEquals(2, r.length());
        assertEquals(new Reply.Flags(33, 100L, "foo", true, false, false), r.flags());
        assertEquals(Reply.Kind.EN, Reply.parse(b("EN")).kind());
        assertThrows(Reply.ServerException.class, () -> Reply.parse(b("SERVER_ERROR out of memory")));
        assertThrows(Reply.ProtocolException.class, () -> Reply.parse(b("VA 99999999999 t1")));
        assertThrows(Reply.ProtocolException.class, () -> Reply.parse(b("VA -1")));
    }

    @Test
    void pushGrammar() {
        assertEquals(new InvalidationStream.Invalidate(b("foo")), InvalidationStream.parse(b("IV foo")));
        assertEquals(new InvalidationStream.Invalidate(new byte[] {0, 1, 2, (byte) 255}), InvalidationStream.parse(b("IV AAEC/w== b")));
        assertInstanceOf(InvalidationStream.InvalidateAll.class, InvalidationStream.parse(b("IA")));
        assertInstanceOf(InvalidationStream.Lost.class, InvalidationStream.parse(b("LOST")));
        assertInstanceOf(InvalidationStream.Barrier.class, InvalidationStream.parse(b("MN")));
        for (String bad : List.of("IV", "IV ", "IV a b c", "IV !!!! b", "IA x", "OK 5", "", "iv foo")) {
            assertThrows(RuntimeException.class, () -> InvalidationStream.parse(b(bad)), bad);
        }
    }

    private static final class Log implements InvalidationStream.Sink {
        final List<String> events = new ArrayList<>();

        @Override
        public void invalidate(byte[] key) {
            events.add("iv " + new String(key, StandardCharsets.UTF_8));
        }

        @Override
        public void flush() {
            events.add("flush");
        }

        @Override
        public void barrier() {
            events.add("mn");
        }
    }

    @Test
    void consumerAppliesPushesAndReportsTheEnd() {
        Log log = new Log();
        Exception end = InvalidationStream.consume(new ByteArrayInputStream(b("IV a\r\nIV YiBj b\r\nIA\r\nMN\r\nLOST\r\nIV z\r\n")), log);
        assertInstanceOf(EOFException.class, end);
        assertEquals(List.of("iv a", "iv b c", "flush", "mn", "flush", "iv z"), log.events);

        Log log2 = new Log();
        end = InvalidationStream.consume(new ByteArrayInputStream(b("IV a\r\nSERVER_ERROR x\r\nIV b\r\n")), log2);
        assertInstanceOf(Reply.ProtocolException.class, end);
        assertEquals(List.of("iv a"), log2.events);

        Log log3 = new Log();
        end = InvalidationStream.consume(new ByteArrayInputStream(b("IV a\r\nIV b")), log3);
        assertInstanceOf(Reply.ProtocolException.class, end);
        assertEquals(List.of("iv a"), log3.events);
    }

    @Test
    void handshake() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(42, InvalidationStream.handshake(new ByteArrayInputStream(b("OK 42\r\n")), out, null));
        assertEquals("track stream\r\n", out.toString());
        out.reset();
        InvalidationStream.handshake(new ByteArrayInputStream(b("OK 7\r\n")), out, List.of("a:", "b:"));
        assertEquals("track stream bcast a: b:\r\n", out.toString());
        assertThrows(Reply.ServerException.class,
                () -> InvalidationStream.handshake(new ByteArrayInputStream(b("ERROR\r\n")), new ByteArrayOutputStream(), null));
    }

    @Test
    void raceRuleAndFlush() {
        Metrics m = new Metrics();
        NearCache n = new NearCache(1 << 20, Duration.ofMinutes(1), m);
        long t = n.begin("k");
        n.invalidate("k"); // the IV overtook the reply
        assertFalse(n.complete("k", t, b("old"), -1L));
        assertNull(n.get("k"));
        t = n.begin("k");
        assertTrue(n.complete("k", t, b("new"), -1L));
        assertArrayEquals(b("new"), n.get("k"));
        long t2 = n.begin("other");
        n.flush();
        assertNull(n.get("k"));
        assertFalse(n.complete("other", t2, b("x"), null));
        assertEquals(0, n.pendingTokens());
        assertEquals(1, m.snapshot().flushes());
    }

    @Test
    void ttlRule() {
        Duration max = Duration.ofSeconds(30);
        assertEquals(max, NearCache.nearTtl(-1L, max));
        assertEquals(Duration.ofSeconds(9), NearCache.nearTtl(10L, max));
        assertEquals(max, NearCache.nearTtl(100L, max));
        assertNull(NearCache.nearTtl(1L, max));
    }

    @Test
    void keys() {
        LarderClient.checkKey("a:b");
        assertThrows(IllegalArgumentException.class, () -> LarderClient.checkKey("a b"));
        assertThrows(IllegalArgumentException.class, () -> LarderClient.checkKey(""));
        assertThrows(IllegalArgumentException.class, () -> LarderClient.checkKey("x".repeat(251)));
    }
}
