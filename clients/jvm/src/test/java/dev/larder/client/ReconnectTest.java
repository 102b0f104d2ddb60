package dev.larder.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * What a caller sees when a pooled connection dies under it: after a server restart the next
 * request goes out on a fresh connection instead of failing; a read whose connection fails
 * mid-request is repeated once on another connection; a write whose bytes may have reached the
 * server is not repeated.
 */
class ReconnectTest {
    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void requestsAfterAServerRestartUseFreshConnections() throws Exception {
        try (LarderServer a = new LarderServer();
             LarderClient c = LarderClient.builder().servers(a.addr()).poolSize(2).build()) {
            c.set("k", b("1"), 0).join();
            assertEquals("1", new String(c.getIfPresent("k").join(), StandardCharsets.UTF_8));
            a.restart();
            assertNull(c.getIfPresent("k").join(), "cold restart: empty");
            c.set("k", b("2"), 0).join();
            assertEquals("2", new String(c.getIfPresent("k").join(), StandardCharsets.UTF_8));
            assertEquals(0, c.metrics().retries(), "the dead idle connection was dropped at checkout");
        }
    }

    /**
     * Answers each connection's first request ({@code mg}: EN, {@code ms}: HD) and closes the
     * connection, unanswered, when the second arrives. Counts the {@code ms} it read.
     */
    private static final class OneAnswerPerConnection implements AutoCloseable {
        final ServerSocket listener = new ServerSocket(0);
        final AtomicInteger sets = new AtomicInteger();

        OneAnswerPerConnection() throws IOException {
            Thread t = new Thread(() -> {
                while (true) {
                    Socket s;
                    try {
                        s = listener.accept();
                    } catch (IOException e) {
                        return;
                    }
                    Thread h = new Thread(() -> serve(s));
                    h.setDaemon(true);
                    h.start();
                }
            });
            t.setDaemon(true);
            t.start();
        }

        private void serve(Socket s) {
            try (s) {
                BufferedReader r = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
                OutputStream w = s.getOutputStream();
                for (int n = 0; ; n++) {
                    String line = r.readLine();
                    if (line == null) {
                        return;
                    }
                    boolean set = line.startsWith("ms ");
                    if (set) {
                        sets.incrementAndGet();
                        r.readLine();
                    }
                    if (n > 0) {
                        return; // closes without answering
                    }
                    w.write((set ? "HD\r\n" : "EN\r\n").getBytes(StandardCharsets.US_ASCII));
                    w.flush();
                }
            } catch (IOException e) {
                // the client went away
            }
        }

        String addr() {
            return "127.0.0.1:" + listener.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            listener.close();
        }
    }

    @Test
    void aReadIsRetriedOnceAndAWriteIsNot() throws Exception {
        try (OneAnswerPerConnection srv = new OneAnswerPerConnection();
             LarderClient c = LarderClient.builder().servers(srv.addr()).poolSize(1).build()) {
            assertNull(c.getIfPresent("a").join());
            // Same pooled connection: the server reads the request and hangs up; the read goes
            // again on a new connection.
            assertNull(c.getIfPresent("a").join());
            assertEquals(1, c.metrics().retries());
            // That connection has served one request: the write reaches the server, which
            // hangs up. The caller gets the error and the write is not sent twice.
            CompletionException e = assertThrows(CompletionException.class, () -> c.set("b", b("v"), 0).join());
            assertInstanceOf(IOException.class, rootCause(e));
            assertEquals(1, srv.sets.get(), "the write was sent once");
            assertEquals(1, c.metrics().retries());
            c.set("b", b("v"), 0).join();
            assertEquals(2, srv.sets.get());
        }
    }

    private static Throwable rootCause(Throwable t) {
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }
}
