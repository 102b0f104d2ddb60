package dev.larder.client;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A larder started from the workspace's release binary on a free port (or, with {@link
 * #memcached()}, the reference memcached, a server without {@code track}); killed on close.
 */
final class LarderServer implements AutoCloseable {
    final int port;
    private final boolean memcached;
    private Process process;

    LarderServer() throws Exception {
        this(freePort());
    }

    LarderServer(int port) throws Exception {
        this(port, false);
    }

    private LarderServer(int port, boolean memcached) throws Exception {
        this.port = port;
        this.memcached = memcached;
        start();
    }

    /** memcached ({@code -Dmemcached.bin}, default /usr/bin/memcached; scripts/test installs it). */
    static LarderServer memcached() throws Exception {
        return new LarderServer(freePort(), true);
    }

    static Path binary() {
        Path bin = Path.of(System.getProperty("larder.bin", "../../target/release/larder"));
        if (!Files.isExecutable(bin)) {
            throw new IllegalStateException("no larder binary at " + bin + " (cargo build --release -p larder-server)");
        }
        return bin;
    }

    private void start() throws Exception {
        String bin = memcached ? System.getProperty("memcached.bin", "/usr/bin/memcached") : binary().toString();
        if (memcached && !Files.isExecutable(Path.of(bin))) {
            throw new IllegalStateException("no memcached at " + bin + " (apt-get install memcached; scripts/test does)");
        }
        List<String> cmd = new ArrayList<>(List.of(bin, "-p", String.valueOf(port), "-U", "0", "-l", "127.0.0.1"));
        if ("root".equals(System.getProperty("user.name"))) {
            // memcached refuses to run as root; larder accepts -u root.
            cmd.addAll(List.of("-u", memcached ? "nobody" : "root"));
        }
        process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            try {
                new Socket("127.0.0.1", port).close();
                return;
            } catch (IOException e) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    throw new IllegalStateException(bin + " did not start on " + port, e);
                }
                Thread.sleep(20);
            }
        }
    }

    String addr() {
        return "127.0.0.1:" + port;
    }

    void kill() {
        process.destroyForcibly();
        try {
            process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    void restart() throws Exception {
        kill();
        start();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Sends raw text and reads until the reply ends with {@code end}. */
    String raw(String cmd, String end) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5000);
            s.getOutputStream().write(cmd.getBytes());
            StringBuilder sb = new StringBuilder();
            byte[] buf = new byte[4096];
            while (!sb.toString().endsWith(end)) {
                int n = s.getInputStream().read(buf);
                if (n < 0) {
                    break;
                }
                sb.append(new String(buf, 0, n));
            }
            return sb.toString();
        }
    }

    @Override
    public void close() {
        kill();
    }
}
