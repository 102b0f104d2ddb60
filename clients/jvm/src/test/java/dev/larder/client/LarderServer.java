package dev.larder.client;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** A larder started from the workspace's release binary on a free port; killed on close. */
final class LarderServer implements AutoCloseable {
    final int port;
    private Process process;

    LarderServer() throws Exception {
        this(freePort());
    }

    LarderServer(int port) throws Exception {
        this.port = port;
        start();
    }

    static Path binary() {
        Path bin = Path.of(System.getProperty("larder.bin", "../../target/release/larder"));
        if (!Files.isExecutable(bin)) {
            throw new IllegalStateException("no larder binary at " + bin + " (cargo build --release -p larder-server)");
        }
        return bin;
    }

    private void start() throws Exception {
        List<String> cmd = new ArrayList<>(List.of(binary().toString(), "-p", String.valueOf(port), "-U", "0"));
        if ("root".equals(System.getProperty("user.name"))) {
            cmd.addAll(List.of("-u", "root"));
        }
        process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            try {
                new Socket("127.0.0.1", port).close();
                return;
            } catch (IOException e) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    throw new IllegalStateException("larder did not start on " + port, e);
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
