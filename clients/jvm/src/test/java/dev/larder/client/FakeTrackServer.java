package dev.larder.client;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A small in-process server speaking only what the track protocol draft gives a client
 * ({@code track stream}, pushes, {@code mn}, {@code track attach <sid> noloop}, {@code mg} and
 * {@code ms} with reads registering (key, sid)). It stands in for larder until larder has
 * {@code track}; what the tests check with it is the client.
 */
final class FakeTrackServer implements AutoCloseable {
    final int port;
    private final ServerSocket listener;
    final Map<String, byte[]> values = new HashMap<>();
    private long nextSid = 1;
    private final Map<Long, Socket> streams = new HashMap<>();
    private final Map<String, Set<Long>> tracked = new HashMap<>();
    final List<Long> attaches = new ArrayList<>();
    final Set<String> overtake = new HashSet<>();

    FakeTrackServer() throws IOException {
        listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        port = listener.getLocalPort();
        Thread t = new Thread(() -> {
            while (!listener.isClosed()) {
                try {
                    Socket s = listener.accept();
                    Thread c = new Thread(() -> serve(s));
                    c.setDaemon(true);
                    c.start();
                } catch (IOException e) {
                    return;
                }
            }
        });
        t.setDaemon(true);
        t.start();
    }

    String addr() {
        return "127.0.0.1:" + port;
    }

    private void push(long sid, String line) {
        Socket s = streams.get(sid);
        if (s != null) {
            try {
                s.getOutputStream().write(line.getBytes(StandardCharsets.UTF_8));
            } catch (IOException ignored) {
                // the stream is going away; its reader removes it
            }
        }
    }

    /** Another client's write: new value, IV to every sid tracking the key. */
    synchronized void write(String key, String v) {
        values.put(key, v.getBytes(StandardCharsets.UTF_8));
        for (long sid : tracked.getOrDefault(key, Set.of())) {
            push(sid, "IV " + key + "\r\n");
        }
        tracked.remove(key);
    }

    synchronized void pushAll(String line) {
        for (long sid : new ArrayList<>(streams.keySet())) {
            push(sid, line);
        }
        tracked.clear();
    }

    synchronized void killStreams() throws IOException {
        for (Socket s : streams.values()) {
            s.close();
        }
        streams.clear();
        tracked.clear();
    }

    synchronized long subscriptions() {
        return nextSid - 1;
    }

    private void serve(Socket s) {
        Long attached = null;
        try (s) {
            InputStream in = new BufferedInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            while (true) {
                String line = new String(Connection.readLine(in), StandardCharsets.UTF_8);
                String[] w = line.split(" ");
                if (line.equals("track stream")) {
                    long sid;
                    synchronized (this) {
                        sid = nextSid++;
                        out.write(("OK " + sid + "\r\n").getBytes(StandardCharsets.UTF_8));
                        streams.put(sid, s);
                    }
                    try {
                        while (true) {
                            String cmd = new String(Connection.readLine(in), StandardCharsets.UTF_8);
                            synchronized (this) {
                                if (cmd.equals("mn")) {
                                    push(sid, "MN\r\n");
                                }
                            }
                        }
                    } finally {
                        synchronized (this) {
                            streams.remove(sid);
                            tracked.values().forEach(set -> set.remove(sid));
                        }
                    }
                } else if (w.length == 4 && w[0].equals("track") && w[1].equals("attach")) {
                    long sid = Long.parseLong(w[2]);
                    synchronized (this) {
                        if (streams.containsKey(sid)) {
                            attached = sid;
                            attaches.add(sid);
                            out.write("OK\r\n".getBytes(StandardCharsets.UTF_8));
                        } else {
                            out.write("CLIENT_ERROR unknown subscriber\r\n".getBytes(StandardCharsets.UTF_8));
                        }
                    }
                } else if (w[0].equals("mg")) {
                    String key = w[1];
                    byte[] v;
                    boolean delay;
                    synchronized (this) {
                        v = values.get(key);
                        if (v == null) {
                            out.write("EN\r\n".getBytes(StandardCharsets.UTF_8));
                            continue;
                        }
                        if (attached != null && streams.containsKey(attached)) {
                            tracked.computeIfAbsent(key, k -> new HashSet<>()).add(attached);
                        }
                        delay = overtake.remove(key);
                        if (delay) {
                            // a write lands after this read was served: its IV leaves first
                            for (long sid : tracked.getOrDefault(key, Set.of())) {
                                push(sid, "IV " + key + "\r\n");
                            }
                            tracked.remove(key);
                        }
                    }
                    if (delay) {
                        Thread.sleep(100);
                    }
                    out.write(("VA " + v.length + " t-1\r\n").getBytes(StandardCharsets.UTF_8));
                    out.write(v);
                    out.write("\r\n".getBytes(StandardCharsets.UTF_8));
                } else if (w[0].equals("ms")) {
                    int len = Integer.parseInt(w[2]);
                    byte[] v = in.readNBytes(len + 2);
                    synchronized (this) {
                        values.put(w[1], java.util.Arrays.copyOf(v, len));
                        for (long sid : tracked.getOrDefault(w[1], Set.of())) {
                            if (attached == null || sid != attached) {
                                push(sid, "IV " + w[1] + "\r\n");
                            }
                        }
                        tracked.remove(w[1]);
                        out.write("HD\r\n".getBytes(StandardCharsets.UTF_8));
                    }
                } else {
                    out.write("ERROR\r\n".getBytes(StandardCharsets.UTF_8));
                }
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            // connection over
        }
    }

    @Override
    public void close() throws IOException {
        listener.close();
        killStreams();
    }
}
