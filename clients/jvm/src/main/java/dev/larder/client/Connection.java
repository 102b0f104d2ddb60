package dev.larder.client;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/** One blocking connection to a node: writes commands, reads meta replies with every length checked. */
final class Connection implements AutoCloseable {
    static final int MAX_LINE = 8192;

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    /** The stream generation this connection is attached to ({@code track attach}); 0: none. */
    long attachedGen;
    /** Taken from the pool's idle list (it served requests before) rather than opened for this checkout. */
    boolean reused;

    Connection(InetSocketAddress addr, int timeoutMillis) throws IOException {
        // Opened as a channel so that isAlive() can look at it without blocking; its socket
        // adaptor still honours SO_TIMEOUT for the blocking reads below (JDK 13+).
        socket = SocketChannel.open().socket();
        socket.connect(addr, timeoutMillis);
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(timeoutMillis);
        in = new BufferedInputStream(socket.getInputStream(), 16384);
        out = socket.getOutputStream();
    }

    /**
     * False when the server has closed this idle connection (a restart, an idle timeout) or
     * left bytes on it that no request asked for. Checked before an idle connection is reused,
     * so that a request is never sent on a connection already known to be dead (pymemcache and
     * libmemcached likewise reconnect before sending rather than failing the request).
     */
    boolean isAlive() {
        try {
            if (in.available() > 0) {
                return false;
            }
            SocketChannel ch = socket.getChannel();
            ch.configureBlocking(false);
            int n = ch.read(ByteBuffer.allocate(1));
            ch.configureBlocking(true);
            return n == 0;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    void send(String s) throws IOException {
        out.write(s.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    void send(byte[] b) throws IOException {
        out.write(b);
        out.flush();
    }

    byte[] line() throws IOException {
        return readLine(in);
    }

    Reply reply() throws IOException {
        Reply r = Reply.parse(line());
        if (r.kind() != Reply.Kind.VA) {
            return r;
        }
        byte[] v = in.readNBytes(r.length());
        if (v.length != r.length() || in.read() != '\r' || in.read() != '\n') {
            throw new Reply.ProtocolException("value not followed by \\r\\n");
        }
        return r.withValue(v);
    }

    /** One {@code \r\n}-terminated line (without it) of at most MAX_LINE bytes. */
    static byte[] readLine(InputStream in) throws IOException {
        byte[] buf = new byte[128];
        int n = 0;
        while (true) {
            int c = in.read();
            if (c < 0) {
                if (n == 0) {
                    throw new EOFException("connection closed");
                }
                throw new Reply.ProtocolException("line not ended by \\r\\n");
            }
            if (c == '\n') {
                if (n == 0 || buf[n - 1] != '\r') {
                    throw new Reply.ProtocolException("line not ended by \\r\\n");
                }
                return java.util.Arrays.copyOf(buf, n - 1);
            }
            if (n == MAX_LINE) {
                throw new Reply.ProtocolException("line too long");
            }
            if (n == buf.length) {
                buf = java.util.Arrays.copyOf(buf, buf.length * 2);
            }
            buf[n++] = (byte) c;
        }
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing a broken socket: nothing left to do
        }
    }
}
