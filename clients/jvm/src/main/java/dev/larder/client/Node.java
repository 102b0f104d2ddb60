package dev.larder.client;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * One server: its connection pool and, with a tracked near cache, its invalidation stream (a
 * daemon thread that subscribes, applies pushes, and on any loss flushes the near cache and
 * resubscribes with a new sid). Pool connections re-attach lazily: each remembers the stream
 * generation it attached to and attaches again when that changes.
 */
final class Node {
    final String name;
    final InetSocketAddress addr;
    final NodePool pool;
    private final int timeoutMillis;

    private final Object lock = new Object();
    private long gen; // bumped on every subscribe and every loss
    private Long sid; // null: no stream up
    private long mnSent, mnSeen;
    private Socket streamSocket;

    Node(String name, InetSocketAddress addr, int poolSize, int timeoutMillis) {
        this.name = name;
        this.addr = addr;
        this.pool = new NodePool(addr, poolSize, timeoutMillis);
        this.timeoutMillis = timeoutMillis;
    }

    /** The live stream generation, or -1 if no stream is up. */
    long liveGeneration() {
        synchronized (lock) {
            return sid == null ? -1 : gen;
        }
    }

    /** Attaches {@code c} to the live stream if needed; its generation, or -1: no tracking now. */
    long ensureAttached(Connection c) throws IOException {
        long g, s;
        synchronized (lock) {
            if (sid == null) {
                return -1;
            }
            g = gen;
            s = sid;
        }
        if (c.attachedGen == g) {
            return g;
        }
        c.send("track attach " + Long.toUnsignedString(s) + " noloop\r\n");
        byte[] line = c.line();
        if (new String(line, StandardCharsets.UTF_8).equals("OK")) {
            c.attachedGen = g;
            return g;
        }
        return -1; // the sid just died; the stream thread resubscribes
    }

    /** Sends {@code mn} on the stream and waits for its {@code MN}. */
    void barrier(long timeoutMillis) throws IOException, InterruptedException {
        long g, target;
        synchronized (lock) {
            if (streamSocket == null || sid == null) {
                throw new IOException("no invalidation stream on " + name);
            }
            streamSocket.getOutputStream().write("mn\r\n".getBytes(StandardCharsets.US_ASCII));
            g = gen;
            target = ++mnSent;
        }
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000;
        synchronized (lock) {
            while (mnSeen < target) {
                if (gen != g) {
                    throw new IOException("invalidation stream lost on " + name);
                }
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    throw new IOException("no MN within " + timeoutMillis + " ms on " + name);
                }
                lock.wait(left);
            }
        }
    }

    void closeStream() {
        Socket s;
        synchronized (lock) {
            s = streamSocket;
        }
        if (s != null) {
            try {
                s.close();
            } catch (IOException ignored) {
                // already broken
            }
        }
    }

    /** The stream thread's body: subscribe, consume, flush on every end, retry until closed. */
    void runStream(NearCache near, Metrics metrics, List<String> prefixes, java.util.function.BooleanSupplier stopped) {
        long backoff = 10;
        while (!stopped.getAsBoolean()) {
            Socket s = new Socket();
            try {
                s.connect(addr, timeoutMillis);
                s.setTcpNoDelay(true);
                s.setSoTimeout(timeoutMillis);
                InputStream in = new BufferedInputStream(s.getInputStream());
                OutputStream out = s.getOutputStream();
                long newSid = InvalidationStream.handshake(in, out, prefixes);
                s.setSoTimeout(0); // a push stream is quiet while nothing changes
                synchronized (lock) {
                    streamSocket = s;
                    gen++;
                    sid = newSid;
                }
                if (stopped.getAsBoolean()) {
                    s.close();
                }
                backoff = 10;
                InvalidationStream.consume(in, new InvalidationStream.Sink() {
                    @Override
                    public void invalidate(byte[] key) {
                        metrics.invalidations.increment();
                        near.invalidate(new String(key, StandardCharsets.UTF_8));
                    }

                    @Override
                    public void flush() {
                        near.flush();
                    }

                    @Override
                    public void barrier() {
                        synchronized (lock) {
                            mnSeen++;
                            lock.notifyAll();
                        }
                    }
                });
                lost(near);
            } catch (IOException | RuntimeException e) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // nothing to do
                }
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException ie) {
                    return;
                }
                backoff = Math.min(backoff * 2, 1000);
            }
        }
    }

    /** The stream ended: no sid (reads stop filling the near cache), then flush everything. */
    private void lost(NearCache near) {
        synchronized (lock) {
            try {
                if (streamSocket != null) {
                    streamSocket.close();
                }
            } catch (IOException ignored) {
                // already closed
            }
            streamSocket = null;
            gen++;
            sid = null;
            lock.notifyAll();
        }
        near.flush();
    }
}
