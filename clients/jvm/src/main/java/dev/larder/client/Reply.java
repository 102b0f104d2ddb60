package dev.larder.client;

import java.nio.charset.StandardCharsets;

/** One meta-protocol reply header (VA/HD/EN/NF/NS/EX/MN) and the flags this client uses. */
record Reply(Kind kind, int length, Flags flags, byte[] value) {
    enum Kind { VA, HD, EN, NF, NS, EX, MN }

    /** The flags of a VA or HD reply: c (cas), t (remaining seconds, -1 none), k, W, Z, X. */
    record Flags(long cas, Long ttl, String key, boolean win, boolean z, boolean stale) {
        static final Flags NONE = new Flags(0, null, null, false, false, false);
    }

    /** The largest value accepted from a server: a length from the network is checked first. */
    static final int MAX_VALUE = 1 << 30;

    Reply withValue(byte[] v) {
        return new Reply(kind, length, flags, v);
    }

    static Reply parse(byte[] line) {
        String text = new String(line, StandardCharsets.UTF_8);
        String[] w = text.split(" ");
        switch (w[0]) {
            case "VA": {
                if (w.length < 2) {
                    throw new ProtocolException("VA without length: " + text);
                }
                long len;
                try {
                    len = Long.parseLong(w[1]);
                } catch (NumberFormatException e) {
                    throw new ProtocolException("bad VA length: " + text);
                }
                if (len < 0 || len > MAX_VALUE) {
                    throw new ProtocolException("value length out of bounds: " + text);
                }
                return new Reply(Kind.VA, (int) len, flags(w, 2), null);
            }
            case "HD": return new Reply(Kind.HD, 0, flags(w, 1), null);
            case "EN": return new Reply(Kind.EN, 0, Flags.NONE, null);
            case "NF": return new Reply(Kind.NF, 0, Flags.NONE, null);
            case "NS": return new Reply(Kind.NS, 0, Flags.NONE, null);
            case "EX": return new Reply(Kind.EX, 0, Flags.NONE, null);
            case "MN": return new Reply(Kind.MN, 0, Flags.NONE, null);
            default: throw new ServerException(text);
        }
    }

    private static Flags flags(String[] w, int from) {
        long cas = 0;
        Long ttl = null;
        String key = null;
        boolean win = false, z = false, stale = false;
        for (int i = from; i < w.length; i++) {
            if (w[i].isEmpty()) {
                continue;
            }
            String rest = w[i].substring(1);
            try {
                switch (w[i].charAt(0)) {
                    case 'c' -> cas = Long.parseLong(rest);
                    case 't' -> ttl = Long.parseLong(rest);
                    case 'k' -> key = rest;
                    case 'W' -> win = true;
                    case 'Z' -> z = true;
                    case 'X' -> stale = true;
                    default -> { }
                }
            } catch (NumberFormatException e) {
                throw new ProtocolException("bad meta flag " + w[i]);
            }
        }
        return new Flags(cas, ttl, key, win, z, stale);
    }

    /** The server said something outside the protocol. */
    static final class ProtocolException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        ProtocolException(String m) {
            super(m);
        }
    }

    /** An error line from the server. */
    static final class ServerException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        ServerException(String m) {
            super(m);
        }
    }
}
