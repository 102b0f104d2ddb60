package dev.larder.client;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * A bounded pool of connections to one node: at most {@code max} open, idle ones reused, a
 * connection that saw any error closed instead of returned (a half-read reply never reaches
 * the next caller), and an idle one the server has closed meanwhile (a restart) closed at
 * checkout instead of being handed out.
 */
final class NodePool {
    private final InetSocketAddress addr;
    private final int timeoutMillis;
    private final Semaphore permits;
    private final ConcurrentLinkedDeque<Connection> idle = new ConcurrentLinkedDeque<>();

    NodePool(InetSocketAddress addr, int max, int timeoutMillis) {
        this.addr = addr;
        this.timeoutMillis = timeoutMillis;
        this.permits = new Semaphore(Math.max(1, max));
    }

    Connection checkout() throws IOException {
        try {
            if (!permits.tryAcquire(timeoutMillis, TimeUnit.MILLISECONDS)) {
                throw new IOException("no pooled connection free within " + timeoutMillis + " ms");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        for (Connection c = idle.pollFirst(); c != null; c = idle.pollFirst()) {
            if (c.isAlive()) {
                c.reused = true;
                return c;
            }
            c.close();
        }
        try {
            return new Connection(addr, timeoutMillis);
        } catch (IOException | RuntimeException e) {
            permits.release();
            throw e;
        }
    }

    void release(Connection c, boolean broken) {
        if (broken) {
            c.close();
        } else {
            idle.addFirst(c);
        }
        permits.release();
    }

    int idleCount() {
        return idle.size();
    }

    int available() {
        return permits.availablePermits();
    }
}
