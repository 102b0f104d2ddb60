package dev.larder.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;

/**
 * The invalidation stream's client side: the {@code track stream} handshake, the push-line
 * grammar ({@code IV <key>}, {@code IV <base64> b}, {@code IA}, {@code LOST}, {@code MN}) and
 * the consumer loop. A line outside the grammar ends the stream (the caller treats it as a
 * loss: flush and resubscribe), because a gap in invalidations must never go unnoticed.
 */
final class InvalidationStream {
    private InvalidationStream() {}

    /** Reacts to pushes. */
    interface Sink {
        void invalidate(byte[] key);

        void flush();

        void barrier();
    }

    sealed interface Push permits Invalidate, InvalidateAll, Lost, Barrier {}

    record Invalidate(byte[] key) implements Push {
        @Override
        public boolean equals(Object o) {
            return o instanceof Invalidate i && Arrays.equals(key, i.key);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(key);
        }
    }

    record InvalidateAll() implements Push {}

    record Lost() implements Push {}

    record Barrier() implements Push {}

    static Push parse(byte[] line) {
        String text = new String(line, StandardCharsets.ISO_8859_1);
        String[] w = text.split(" ", -1);
        if (w[0].equals("IV") && w.length == 2 && !w[1].isEmpty()) {
            return new Invalidate(Arrays.copyOfRange(line, 3, line.length));
        }
        if (w[0].equals("IV") && w.length == 3 && w[2].equals("b") && !w[1].isEmpty()) {
            try {
                byte[] k = Base64.getDecoder().decode(w[1]);
                if (k.length > 0) {
                    return new Invalidate(k);
                }
            } catch (IllegalArgumentException e) {
                // falls through to the error below
            }
        }
        if (w.length == 1) {
            switch (w[0]) {
                case "IA": return new InvalidateAll();
                case "LOST": return new Lost();
                case "MN": return new Barrier();
                default: break;
            }
        }
        throw new Reply.ProtocolException("bad push line " + text);
    }

    /** Sends the subscription ({@code prefixes} null: tracking mode) and reads {@code OK <sid>}. */
    static long handshake(InputStream in, OutputStream out, List<String> prefixes) throws IOException {
        String cmd;
        if (prefixes == null) {
            cmd = "track stream\r\n";
        } else if (prefixes.isEmpty()) {
            cmd = "track stream bcast\r\n";
        } else {
            cmd = "track stream bcast " + String.join(" ", prefixes) + "\r\n";
        }
        out.write(cmd.getBytes(StandardCharsets.UTF_8));
        out.flush();
        String line = new String(Connection.readLine(in), StandardCharsets.UTF_8);
        if (line.startsWith("OK ")) {
            try {
                return Long.parseUnsignedLong(line.substring(3));
            } catch (NumberFormatException e) {
                // refused below
            }
        }
        throw new Reply.ServerException("track stream refused: " + line);
    }

    /** Applies pushes to {@code sink} until the stream ends; returns why it ended. */
    static Exception consume(InputStream in, Sink sink) {
        while (true) {
            try {
                Push p = parse(Connection.readLine(in));
                if (p instanceof Invalidate iv) {
                    sink.invalidate(iv.key());
                } else if (p instanceof InvalidateAll || p instanceof Lost) {
                    sink.flush();
                } else {
                    sink.barrier();
                }
            } catch (IOException | RuntimeException e) {
                return e;
            }
        }
    }
}
