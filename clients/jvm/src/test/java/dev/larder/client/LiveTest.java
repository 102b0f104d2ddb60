package dev.larder.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The JVM client against real larder servers (target/release/larder). */
class LiveTest {
    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String s(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    @ParameterizedTest
    @CsvSource({"ONE_AT_A_TIME,default", "MD5,md5"})
    void placementMatchesLibmemcachedKetama(KeyHash hash, String name) throws Exception {
        Path py = Path.of(System.getProperty("larder.python", "../../tests/.work/venv/bin/python"));
        Path script = Path.of(System.getProperty("larder.placementScript", "../../crates/larder-client/tests/pylibmc_placement.py"));
        if (!Files.isExecutable(py)) {
            fail("no Python with pylibmc at " + py + " (scripts/test creates tests/.work/venv)");
        }
        try (LarderServer a = new LarderServer(); LarderServer b = new LarderServer(); LarderServer c = new LarderServer()) {
            List<String> cmd = new ArrayList<>(List.of(py.toString(), script.toString(), name, "1200", a.addr(), b.addr(), c.addr()));
            Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            List<String> lines = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).lines().toList();
            assertEquals(0, p.waitFor(), "pylibmc script failed");
            try (LarderClient client = LarderClient.builder().servers(a.addr(), b.addr(), c.addr()).keyHash(hash).build()) {
                int[] per = new int[3];
                for (String line : lines) {
                    String[] kv = line.split("\t");
                    int idx = Integer.parseInt(kv[1]);
                    assertEquals(idx, client.nodeIndex(kv[0]), "key " + kv[0]);
                    per[idx]++;
                }
                assertTrue(lines.size() > 1500, lines.size() + " keys");
                for (int n : per) {
                    assertTrue(n > lines.size() / 6, Arrays.toString(per));
                }
                for (String line : lines.subList(0, 200)) {
                    assertEquals("v", s(client.getIfPresent(line.split("\t")[0]).join()));
                }
            }
        }
    }

    @Test
    void crudAndMultiGet() throws Exception {
        try (LarderServer a = new LarderServer(); LarderServer b = new LarderServer(); LarderServer c = new LarderServer();
             LarderClient client = LarderClient.builder().servers(a.addr(), b.addr(), c.addr()).build()) {
            assertNull(client.getIfPresent("nope").join());
            client.set("a", b("one"), 0).join();
            assertEquals("one", s(client.getIfPresent("a").join()));
            byte[] big = new byte[300_000];
            Arrays.fill(big, (byte) 7);
            client.set("big", big, 0).join();
            assertArrayEquals(big, client.getIfPresent("big").join());
            assertTrue(client.delete("a").join());
            assertFalse(client.delete("a").join());
            assertNull(client.getIfPresent("a").join());
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                keys.add("mk" + i);
                if (i % 2 == 0) {
                    client.set("mk" + i, b("val-" + i), 0).join();
                }
            }
            Map<String, byte[]> got = client.getAll(keys).join();
            assertEquals(150, got.size());
            for (int i = 0; i < 300; i += 2) {
                assertEquals("val-" + i, s(got.get("mk" + i)));
            }
            assertEquals(3, keys.stream().mapToInt(client::nodeIndex).distinct().count());
            assertEquals("val-0", s(client.getIfPresent("mk0").join()));
        }
    }

    @Test
    void poolIsBoundedAndReused() throws Exception {
        try (LarderServer a = new LarderServer(); LarderClient client = LarderClient.builder().servers(a.addr()).poolSize(3).build()) {
            client.set("p", b("v"), 0).join();
            List<CompletableFuture<byte[]>> fs = new ArrayList<>();
            for (int i = 0; i < 2000; i++) {
                fs.add(client.getIfPresent("p"));
                assertTrue(client.poolAvailable(0) >= 0);
            }
            for (CompletableFuture<byte[]> f : fs) {
                assertEquals("v", s(f.join()));
            }
            assertEquals(3, client.poolAvailable(0));
            int idle = client.poolIdle(0);
            assertTrue(idle >= 1 && idle <= 3, "idle " + idle);
            String stats = a.raw("stats\r\n", "END\r\n");
            int conns = Integer.parseInt(stats.lines().filter(l -> l.startsWith("STAT curr_connections ")).findFirst().orElseThrow().split(" ")[2]);
            assertTrue(conns <= 3 + 1 + 2, "server sees " + conns + " connections");
        }
    }

    @Test
    void singleFlightOneLoadAndCallersNeverBlock() throws Exception {
        try (LarderServer a = new LarderServer(); LarderClient client = LarderClient.builder().servers(a.addr()).build()) {
            AtomicInteger loads = new AtomicInteger();
            CountDownLatch release = new CountDownLatch(1);
            List<CompletableFuture<byte[]>> fs = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int i = 0; i < 64; i++) {
                fs.add(client.get("hot", k -> {
                    loads.incrementAndGet();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    return b("loaded");
                }));
            }
            // 64 calls returned while the loader is still held: nobody's thread was blocked
            assertTrue(System.nanoTime() - t0 < 2_000_000_000L);
            assertTrue(fs.stream().noneMatch(CompletableFuture::isDone));
            release.countDown();
            for (CompletableFuture<byte[]> f : fs) {
                assertEquals("loaded", s(f.join()));
            }
            assertEquals(1, loads.get());
            assertEquals(1, client.metrics().loads());
            assertEquals("loaded", s(client.getIfPresent("hot").join()));
        }
    }

    @Test
    void leasesOneLoadAcrossClients() throws Exception {
        try (LarderServer a = new LarderServer()) {
            AtomicInteger loads = new AtomicInteger();
            List<LarderClient> clients = new ArrayList<>();
            List<CompletableFuture<byte[]>> fs = new ArrayList<>();
            for (int c = 0; c < 4; c++) {
                clients.add(LarderClient.builder().servers(a.addr()).build());
            }
            for (int i = 0; i < 6; i++) {
                for (LarderClient c : clients) {
                    fs.add(c.get("shared", k -> {
                        loads.incrementAndGet();
                        try {
                            Thread.sleep(300);
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                        return b("once");
                    }));
                }
            }
            for (CompletableFuture<byte[]> f : fs) {
                assertEquals("once", s(f.join()));
            }
            assertEquals(1, loads.get());
            clients.forEach(LarderClient::close);
        }
    }

    @Test
    void aZWaiterGetsTheWinnersValueAndAFailedLoadFreesTheLease() throws Exception {
        try (LarderServer a = new LarderServer(); LarderClient client = LarderClient.builder().servers(a.addr()).build();
             java.net.Socket other = new java.net.Socket("127.0.0.1", a.port)) {
            other.setSoTimeout(5000);
            other.getOutputStream().write(b("mg lk v c t N30\r\n"));
            byte[] buf = new byte[256];
            int n = other.getInputStream().read(buf);
            assertTrue(new String(buf, 0, n).contains(" W"), new String(buf, 0, n));
            CompletableFuture<byte[]> waiter = client.get("lk", k -> b("mine"));
            Thread.sleep(150);
            assertFalse(waiter.isDone());
            other.getOutputStream().write(b("ms lk 6 T60\r\ntheirs\r\n"));
            assertEquals("theirs", s(waiter.join()));
            assertEquals(0, client.metrics().loads());

            CompletionException e = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class,
                    () -> client.get("fails", k -> {
                        throw new IllegalStateException("backend down");
                    }).join());
            assertInstanceOf(IllegalStateException.class, e.getCause());
            long t0 = System.nanoTime();
            assertEquals("ok", s(client.get("fails", k -> b("ok")).join()));
            assertTrue(System.nanoTime() - t0 < 1_000_000_000L, "the failed loader gave the lease back");
        }
    }

    @Test
    void nearCacheTtlIsCappedByTheServerAndTheMaximum() throws Exception {
        try (LarderServer a = new LarderServer();
             LarderClient client = LarderClient.builder().servers(a.addr()).nearCacheMaxBytes(1 << 20)
                     .nearCacheMaxTtl(Duration.ofMillis(1500)).invalidation(LarderClient.Invalidation.TTL_ONLY).build()) {
            a.raw("set s3 0 3 1\r\na\r\nset forever 0 0 1\r\nb\r\n", "STORED\r\nSTORED\r\n");
            client.getIfPresent("s3").join();
            client.getIfPresent("forever").join();
            assertEquals(2, client.metrics().serverHits());
            client.getIfPresent("s3").join();
            client.getIfPresent("forever").join();
            assertEquals(2, client.metrics().nearHits());
            Thread.sleep(1700);
            client.getIfPresent("forever").join();
            assertEquals(3, client.metrics().serverHits(), client.metrics().toString());
            long t0 = System.nanoTime();
            client.getIfPresent("s3").join(); // t is now 1 or 2: a copy of at most 1 s
            long near = client.metrics().nearHits();
            Thread.sleep(Math.max(0, 1100 - (System.nanoTime() - t0) / 1_000_000));
            client.getIfPresent("s3").join();
            assertEquals(near, client.metrics().nearHits(), "no near hit past the server's TTL");
            Thread.sleep(1200);
            assertNull(client.getIfPresent("s3").join());
        }
    }

    @Test
    void nearCacheByteBoundAndFrequency() throws Exception {
        long max = 64 * 1024;
        try (LarderServer a = new LarderServer();
             LarderClient client = LarderClient.builder().servers(a.addr()).nearCacheMaxBytes(max)
                     .invalidation(LarderClient.Invalidation.TTL_ONLY).build()) {
            byte[] val = new byte[1000];
            for (int i = 0; i < 400; i++) {
                client.set("cold" + i, val, 0).join();
            }
            client.set("hot", val, 0).join();
            for (int i = 0; i < 30; i++) {
                client.getIfPresent("hot").join();
            }
            for (int i = 0; i < 400; i++) {
                client.getIfPresent("cold" + i).join();
                client.getIfPresent("cold" + i).join();
                if (i % 20 == 0) {
                    client.getIfPresent("hot").join();
                }
                assertTrue(client.nearBytes() <= max, "near cache holds " + client.nearBytes());
            }
            long entries = client.nearEntries();
            assertTrue(entries > 20 && entries < 64, entries + " entries");
            long before = client.metrics().nearHits();
            client.getIfPresent("hot").join();
            assertEquals(before + 1, client.metrics().nearHits(), "the frequently read key survived the scan");
        }
    }

    @Test
    void nearHitLatency() throws Exception {
        try (LarderServer a = new LarderServer();
             LarderClient client = LarderClient.builder().servers(a.addr()).nearCacheMaxBytes(16 << 20)
                     .invalidation(LarderClient.Invalidation.TTL_ONLY).build()) {
            for (int i = 0; i < 1000; i++) {
                client.set("lat" + i, new byte[100], 0).join();
                client.getIfPresent("lat" + i).join();
            }
            long[] samples = new long[200_000];
            int n = 0;
            for (int r = 0; r < 200; r++) {
                for (int i = 0; i < 1000; i++) {
                    long t = System.nanoTime();
                    byte[] v = client.getIfPresent("lat" + i).join();
                    samples[n++] = System.nanoTime() - t;
                    assertTrue(v != null);
                }
            }
            Arrays.sort(samples);
            long p50 = samples[n / 2], p99 = samples[n * 99 / 100];
            System.out.printf("JVM near hit p50 %d ns, p99 %d ns (200,000 hits, 1,000 keys, first rounds include JIT warm-up)%n", p50, p99);
            assertTrue(client.metrics().nearHits() >= 200_000);
            assertTrue(p50 < 20_000, "near hit p50 " + p50 + " ns");
        }
    }

    @Test
    void trackingWithoutServerSupportNeverFillsTheNearCache() throws Exception {
        // memcached answers `track stream` with ERROR: no stream, so no read may be cached.
        try (LarderServer a = LarderServer.memcached();
             LarderClient client = LarderClient.builder().servers(a.addr()).nearCacheMaxBytes(1 << 20).build()) {
            client.set("t", b("1"), 0).join();
            for (int i = 0; i < 5; i++) {
                assertEquals("1", s(client.getIfPresent("t").join()));
            }
            Thread.sleep(200); // the stream thread has had its ERROR by now (it retries with backoff)
            assertFalse(client.streamsUp());
            assertEquals("1", s(client.getIfPresent("t").join()));
            assertEquals(0, client.metrics().nearHits());
            assertEquals(6, client.metrics().serverHits());
            assertEquals(0, client.nearEntries());
        }
    }
}
