package dev.larder.client;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * A larder/memcached cluster client with a Caffeine-style asynchronous API: every operation
 * returns a {@link CompletableFuture}; blocking socket I/O runs on the client's own I/O threads,
 * never on the caller's; near-cache hits complete at once on the caller's thread.
 *
 * <p>{@link #get(String, Function)} loads a missing value once per key in the process (single
 * flight) and once across processes (the server's {@code mg N} leases: {@code W} loads,
 * {@code Z} waits without holding a thread).
 */
public final class LarderClient implements AutoCloseable {
    /** How the near cache is kept correct. */
    public enum Invalidation {
        /** larder's tracking mode: the server pushes IV for every key this process read. */
        TRACKING,
        /** larder's broadcast mode for the configured prefixes. */
        BROADCAST,
        /** No stream: copies may be stale until their TTL (Caffeine alone). */
        TTL_ONLY
    }

    private final List<Node> nodes = new ArrayList<>();
    private final Ketama ring;
    private final NearCache near;
    private final boolean tracked;
    private final Metrics metrics = new Metrics();
    private final ConcurrentHashMap<String, CompletableFuture<byte[]>> flights = new ConcurrentHashMap<>();
    private final ExecutorService io;
    private final Executor loaderExecutor;
    private final Builder cfg;
    private volatile boolean closed;

    private LarderClient(Builder b) {
        this.cfg = b;
        if (b.servers.isEmpty()) {
            throw new IllegalArgumentException("no servers");
        }
        List<Ketama.HostPort> hps = new ArrayList<>();
        for (String s : b.servers) {
            Ketama.HostPort hp = Ketama.HostPort.parse(s);
            hps.add(hp);
            nodes.add(new Node(s, new InetSocketAddress(hp.host(), hp.port()), b.poolSize, (int) b.timeout.toMillis()));
        }
        ring = new Ketama(hps, b.hash);
        AtomicInteger n = new AtomicInteger();
        // One I/O thread per pooled connection: blocking calls queue for a thread instead of
        // piling up threads that would only wait for a connection.
        io = Executors.newFixedThreadPool(b.servers.size() * Math.max(1, b.poolSize), r -> {
            Thread t = new Thread(r, "larder-io-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        loaderExecutor = b.loaderExecutor != null ? b.loaderExecutor : ForkJoinPool.commonPool();
        near = b.nearMaxBytes > 0 ? new NearCache(b.nearMaxBytes, b.nearMaxTtl, metrics) : null;
        tracked = near != null && b.invalidation != Invalidation.TTL_ONLY;
        if (tracked) {
            List<String> prefixes = b.invalidation == Invalidation.BROADCAST ? List.copyOf(b.prefixes) : null;
            for (Node node : nodes) {
                Thread t = new Thread(() -> node.runStream(near, metrics, prefixes, () -> closed), "larder-stream " + node.name);
                t.setDaemon(true);
                t.start();
            }
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The index (in the server list) of the node {@code key} lives on. */
    public int nodeIndex(String key) {
        return ring.serverFor(key);
    }

    public Metrics.Snapshot metrics() {
        return metrics.snapshot();
    }

    public long nearBytes() {
        return near == null ? 0 : near.weightedSize();
    }

    public long nearEntries() {
        return near == null ? 0 : near.entries();
    }

    /** True when every node's invalidation stream is subscribed. */
    public boolean streamsUp() {
        return tracked && nodes.stream().allMatch(n -> n.liveGeneration() >= 0);
    }

    /** Waits until every invalidation for writes acknowledged before this call is applied. */
    public void syncInvalidations(Duration timeout) throws IOException, InterruptedException {
        for (Node n : nodes) {
            n.barrier(timeout.toMillis());
        }
    }

    /** Closes node {@code i}'s stream as a network failure would (tests, fault drills). */
    public void dropStream(int i) {
        nodes.get(i).closeStream();
    }

    int poolAvailable(int i) {
        return nodes.get(i).pool.available();
    }

    int poolIdle(int i) {
        return nodes.get(i).pool.idleCount();
    }

    // ---- operations ----

    /** The value, or null on a miss. */
    public CompletableFuture<byte[]> getIfPresent(String key) {
        checkKey(key);
        byte[] v = nearGet(key);
        if (v != null) {
            return CompletableFuture.completedFuture(v);
        }
        return CompletableFuture.supplyAsync(() -> blocking(() -> fetch(key, "mg " + key + " v t\r\n", true).value()), io);
    }

    /** Stores {@code value} for {@code ttlSeconds} (0: none). */
    public CompletableFuture<Void> set(String key, byte[] value, int ttlSeconds) {
        checkKey(key);
        Objects.requireNonNull(value);
        return CompletableFuture.runAsync(() -> blocking(() -> {
            store(key, value, ttlSeconds);
            return null;
        }), io);
    }

    /** Deletes {@code key}; true if it was there. */
    public CompletableFuture<Boolean> delete(String key) {
        checkKey(key);
        return CompletableFuture.supplyAsync(() -> blocking(() -> remove(key)), io);
    }

    /** The values of the keys present: near hits first, the rest pipelined per node. */
    public CompletableFuture<Map<String, byte[]>> getAll(Collection<String> keys) {
        Map<String, byte[]> out = new HashMap<>();
        List<List<String>> perNode = new ArrayList<>();
        for (int i = 0; i < nodes.size(); i++) {
            perNode.add(new ArrayList<>());
        }
        for (String k : new LinkedHashSet<>(keys)) {
            checkKey(k);
            byte[] v = nearGet(k);
            if (v != null) {
                out.put(k, v);
            } else {
                perNode.get(nodeIndex(k)).add(k);
            }
        }
        List<CompletableFuture<Map<String, byte[]>>> parts = new ArrayList<>();
        for (int i = 0; i < nodes.size(); i++) {
            List<String> ks = perNode.get(i);
            if (!ks.isEmpty()) {
                Node node = nodes.get(i);
                parts.add(CompletableFuture.supplyAsync(() -> blocking(() -> multiGet(node, ks)), io));
            }
        }
        return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0])).thenApply(x -> {
            for (CompletableFuture<Map<String, byte[]>> p : parts) {
                out.putAll(p.join());
            }
            return out;
        });
    }

    /**
     * The value of {@code key}, loading it with {@code loader} (run on the loader executor) on a
     * miss and storing it for the builder's {@code loadTtl}. Caffeine's
     * {@code AsyncCache.get(key, mappingFunction)}.
     */
    public CompletableFuture<byte[]> get(String key, Function<String, byte[]> loader) {
        return get(key, (k, ex) -> CompletableFuture.supplyAsync(() -> loader.apply(k), ex));
    }

    /** As {@link #get(String, Function)} with an asynchronous loader. */
    public CompletableFuture<byte[]> get(String key, BiFunction<String, Executor, CompletableFuture<byte[]>> loader) {
        checkKey(key);
        byte[] v = nearGet(key);
        if (v != null) {
            return CompletableFuture.completedFuture(v);
        }
        CompletableFuture<byte[]> mine = new CompletableFuture<>();
        CompletableFuture<byte[]> prev = flights.putIfAbsent(key, mine);
        if (prev != null) {
            return prev.copy();
        }
        long deadline = System.nanoTime() + cfg.leaseWait.toNanos();
        io.execute(() -> leaseAttempt(key, loader, mine, deadline, 2));
        return mine.copy();
    }

    private void leaseAttempt(String key, BiFunction<String, Executor, CompletableFuture<byte[]>> loader,
                              CompletableFuture<byte[]> mine, long deadline, long pauseMillis) {
        try {
            Fetched f = fetch(key, "mg " + key + " v c t N" + cfg.leaseTtlSeconds + "\r\n", false);
            Reply.Flags fl = f.flags();
            if (f.value() == null) {
                throw new Reply.ProtocolException("mg N answered a miss");
            }
            if (fl.win()) {
                loadAndStore(key, loader, mine, leaseCas(fl));
            } else if (!fl.z() || fl.stale()) {
                done(key, mine, f.value(), null);
            } else if (System.nanoTime() - deadline >= 0) {
                loadAndStore(key, loader, mine, leaseCas(fl)); // the winner never stored: load ourselves
            } else {
                Executor later = CompletableFuture.delayedExecutor(pauseMillis, TimeUnit.MILLISECONDS, io);
                later.execute(() -> leaseAttempt(key, loader, mine, deadline, Math.min(pauseMillis * 2, 50)));
            }
        } catch (Throwable e) {
            done(key, mine, null, e);
        }
    }

    /**
     * The CAS that gates the store after a load: the stub a {@code W} created (or the stale item
     * it marked), or, when we give up on a {@code Z}, whatever the absent winner left. Any write
     * after this reply changes it, and our older loaded value then loses.
     */
    private static long leaseCas(Reply.Flags fl) throws Reply.ProtocolException {
        if (fl.cas() == 0) {
            throw new Reply.ProtocolException("mg N reply without its CAS (c)");
        }
        return fl.cas();
    }

    /** Ends a flight: out of the table first, so a caller woken by the result starts a new one. */
    private void done(String key, CompletableFuture<byte[]> mine, byte[] v, Throwable e) {
        flights.remove(key, mine);
        if (e != null) {
            mine.completeExceptionally(e instanceof CompletionException && e.getCause() != null ? e.getCause() : e);
        } else {
            mine.complete(v);
        }
    }

    /**
     * Loads and stores under the lease ({@code ms ... C<cas>}), so a set or delete by another
     * process between the lease and the store wins over the value loaded before it. On
     * {@code EX}/{@code NF} the caller still gets the loaded value (it was current when the load
     * began) but it is stored nowhere, neither on the server nor in the near cache; counted in
     * {@code leaseLost}.
     */
    private void loadAndStore(String key, BiFunction<String, Executor, CompletableFuture<byte[]>> loader,
                              CompletableFuture<byte[]> mine, long cas) {
        metrics.loads.increment();
        CompletableFuture<byte[]> loading;
        try {
            loading = loader.apply(key, loaderExecutor);
        } catch (Throwable t) {
            loading = CompletableFuture.failedFuture(t);
        }
        loading.whenCompleteAsync((v, e) -> {
            try {
                if (e != null || v == null) {
                    // Give the lease back so another caller can try at once: only our own stub
                    // (same CAS), never a value someone stored meanwhile.
                    removeIfCas(key, cas);
                    done(key, mine, null, e != null ? e : new NullPointerException("loader returned null for " + key));
                } else {
                    if (!storeUnderLease(key, v, cfg.loadTtlSeconds, cas)) {
                        metrics.leaseLost.increment();
                    }
                    done(key, mine, v, null);
                }
            } catch (Throwable t) {
                done(key, mine, null, t);
            }
        }, io);
    }

    // ---- blocking internals (run on io threads) ----

    private record Fetched(byte[] value, Reply.Flags flags) {}

    private byte[] nearGet(String key) {
        if (near == null) {
            return null;
        }
        byte[] v = near.get(key);
        if (v != null) {
            metrics.nearHits.increment();
        }
        return v;
    }

    /** Prepares a read for the near cache: attach if needed, then a pending token; -1: don't fill. */
    private long ticket(Node node, Connection c, String key) throws IOException {
        if (near == null) {
            return -1;
        }
        if (!tracked) {
            return near.begin(key);
        }
        long g = node.ensureAttached(c);
        if (g < 0) {
            return -1;
        }
        long token = near.begin(key);
        // A loss between the attach and the token flushed before the token existed.
        if (node.liveGeneration() != g) {
            near.abandon(key, token);
            return -1;
        }
        return token;
    }

    private void settle(String key, long token, byte[] value, Reply.Flags f) {
        if (near == null || token < 0) {
            return;
        }
        if (value != null && !f.stale() && !f.z() && !f.win()) {
            near.complete(key, token, value, f.ttl());
        } else {
            near.abandon(key, token);
        }
    }

    /**
     * One {@code mg}. {@code idempotent}: a plain read, which is repeated once on another
     * connection if it fails with an I/O error on a connection that had served earlier requests
     * (the server restarted or closed it between the checkout's liveness check and the send).
     * A lease request ({@code N}) is not repeated: its bytes may have reached the server and
     * taken the lease.
     */
    private Fetched fetch(String key, String cmd, boolean idempotent) throws IOException {
        for (int attempt = 0; ; attempt++) {
            Node node = nodes.get(nodeIndex(key));
            Connection c = node.pool.checkout();
            boolean broken = true;
            long token = -1;
            try {
                token = ticket(node, c, key);
                c.send(cmd);
                Reply r = c.reply();
                broken = false;
                if (r.kind() == Reply.Kind.VA) {
                    boolean lease = r.flags().win() || (r.flags().z() && !r.flags().stale());
                    if (!lease) {
                        metrics.serverHits.increment();
                    } else if (r.flags().win()) {
                        metrics.misses.increment();
                    }
                    settle(key, token, r.value(), r.flags());
                    token = -1;
                    return new Fetched(r.value(), r.flags());
                }
                if (r.kind() == Reply.Kind.EN) {
                    metrics.misses.increment();
                    return new Fetched(null, Reply.Flags.NONE);
                }
                broken = true;
                throw new Reply.ProtocolException("unexpected reply to mg: " + r.kind());
            } catch (IOException e) {
                if (!idempotent || !c.reused || attempt > 0) {
                    throw e;
                }
                metrics.retries.increment();
            } finally {
                if (token >= 0) {
                    near.abandon(key, token);
                }
                node.pool.release(c, broken);
            }
        }
    }

    private void store(String key, byte[] value, int ttl) throws IOException {
        Reply.Kind k = storeWith(key, value, " T" + ttl);
        if (k != Reply.Kind.HD) {
            throw new IOException("ms " + key + ": " + k);
        }
    }

    /** {@code ms key <len> T<ttl> C<cas>}: true if stored, false if the lease was lost (EX, NF). */
    private boolean storeUnderLease(String key, byte[] value, int ttl, long cas) throws IOException {
        Reply.Kind k = storeWith(key, value, " T" + ttl + " C" + Long.toUnsignedString(cas));
        if (k == Reply.Kind.HD) {
            return true;
        }
        if (k == Reply.Kind.EX || k == Reply.Kind.NF) {
            return false;
        }
        throw new IOException("ms " + key + " C: " + k);
    }

    /** One {@code ms} with these flags; the reply's kind (a connection answering otherwise is dropped). */
    private Reply.Kind storeWith(String key, byte[] value, String flags) throws IOException {
        localInvalidate(key);
        Node node = nodes.get(nodeIndex(key));
        Connection c = node.pool.checkout();
        boolean broken = true;
        try {
            byte[] head = ("ms " + key + " " + value.length + flags + "\r\n").getBytes(StandardCharsets.UTF_8);
            byte[] cmd = new byte[head.length + value.length + 2];
            System.arraycopy(head, 0, cmd, 0, head.length);
            System.arraycopy(value, 0, cmd, head.length, value.length);
            cmd[cmd.length - 2] = '\r';
            cmd[cmd.length - 1] = '\n';
            c.send(cmd);
            Reply r = c.reply();
            broken = switch (r.kind()) {
                case HD, NS, EX, NF -> false;
                default -> true;
            };
            return r.kind();
        } finally {
            node.pool.release(c, broken);
            // Writes on attached connections are noloop: drop our own copy after the write, so
            // a read that raced it cannot leave the old value. The near cache is filled only by
            // tracked reads, never by what we stored.
            localInvalidate(key);
        }
    }

    private boolean remove(String key) throws IOException {
        return removeWith(key, "");
    }

    /** {@code md key C<cas>}: deletes only if the item is still the one with {@code cas}. */
    private boolean removeIfCas(String key, long cas) throws IOException {
        return removeWith(key, " C" + Long.toUnsignedString(cas));
    }

    private boolean removeWith(String key, String flags) throws IOException {
        localInvalidate(key);
        Node node = nodes.get(nodeIndex(key));
        Connection c = node.pool.checkout();
        boolean broken = true;
        try {
            c.send("md " + key + flags + "\r\n");
            Reply r = c.reply();
            if (r.kind() == Reply.Kind.HD || r.kind() == Reply.Kind.NF || r.kind() == Reply.Kind.EX) {
                broken = false;
                return r.kind() == Reply.Kind.HD;
            }
            throw new IOException("md " + key + ": " + r.kind());
        } finally {
            node.pool.release(c, broken);
            localInvalidate(key);
        }
    }

    /** A pipelined multi-get on one node; repeated once as {@link #fetch} repeats a read. */
    private Map<String, byte[]> multiGet(Node node, List<String> keys) throws IOException {
        for (int attempt = 0; ; attempt++) {
            Map<String, byte[]> out = new HashMap<>();
            Map<String, Long> tokens = new HashMap<>();
            Connection c = node.pool.checkout();
            boolean broken = true;
            try {
                StringBuilder cmd = new StringBuilder();
                for (String k : keys) {
                    tokens.put(k, ticket(node, c, k));
                    cmd.append("mg ").append(k).append(" v t k q\r\n");
                }
                cmd.append("mn\r\n");
                c.send(cmd.toString());
                while (true) {
                    Reply r = c.reply();
                    if (r.kind() == Reply.Kind.MN) {
                        break;
                    }
                    if (r.kind() != Reply.Kind.VA || r.flags().key() == null || !tokens.containsKey(r.flags().key())) {
                        throw new Reply.ProtocolException("unexpected reply in multi-get: " + r.kind());
                    }
                    String k = r.flags().key();
                    metrics.serverHits.increment();
                    settle(k, tokens.remove(k), r.value(), r.flags());
                    out.put(k, r.value());
                }
                broken = false;
                metrics.misses.add(tokens.size());
                return out;
            } catch (IOException e) {
                if (!c.reused || attempt > 0) {
                    throw e;
                }
                metrics.retries.increment();
            } finally {
                if (near != null) {
                    tokens.forEach((k, t) -> near.abandon(k, t));
                }
                node.pool.release(c, broken);
            }
        }
    }

    private void localInvalidate(String key) {
        if (near != null) {
            near.invalidate(key);
        }
    }

    private interface IoCall<T> {
        T call() throws IOException;
    }

    private static <T> T blocking(IoCall<T> f) {
        try {
            return f.call();
        } catch (IOException e) {
            throw new CompletionException(e);
        }
    }

    static void checkKey(String key) {
        byte[] b = key.getBytes(StandardCharsets.UTF_8);
        boolean ok = b.length > 0 && b.length <= 250;
        for (byte x : b) {
            ok &= (x & 0xff) > ' ' && x != 0x7f;
        }
        if (!ok) {
            throw new IllegalArgumentException("bad key: " + key);
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Node n : nodes) {
            n.closeStream();
        }
        io.shutdown();
    }

    /** Configuration, Caffeine-builder style. */
    public static final class Builder {
        private final List<String> servers = new ArrayList<>();
        private KeyHash hash = KeyHash.ONE_AT_A_TIME;
        private int poolSize = 8;
        private Duration timeout = Duration.ofSeconds(2);
        private int leaseTtlSeconds = 30;
        private Duration leaseWait = Duration.ofSeconds(5);
        private int loadTtlSeconds = 300;
        private long nearMaxBytes;
        private Duration nearMaxTtl = Duration.ofMinutes(5);
        private Invalidation invalidation = Invalidation.TRACKING;
        private final List<String> prefixes = new ArrayList<>();
        private Executor loaderExecutor;

        /** {@code host:port}, in the order the cluster's other clients list them. */
        public Builder servers(String... s) {
            servers.addAll(List.of(s));
            return this;
        }

        public Builder servers(Collection<String> s) {
            servers.addAll(s);
            return this;
        }

        public Builder keyHash(KeyHash h) {
            hash = h;
            return this;
        }

        public Builder poolSize(int n) {
            poolSize = n;
            return this;
        }

        public Builder timeout(Duration d) {
            timeout = d;
            return this;
        }

        /** The lease taken on a miss ({@code mg N<seconds>}). */
        public Builder leaseTtlSeconds(int s) {
            leaseTtlSeconds = s;
            return this;
        }

        /** How long to wait for another process's load before loading ourselves. */
        public Builder leaseWait(Duration d) {
            leaseWait = d;
            return this;
        }

        /** The TTL of values stored by {@code get(key, loader)}. */
        public Builder loadTtlSeconds(int s) {
            loadTtlSeconds = s;
            return this;
        }

        /** Turns the near cache on, bounded to {@code bytes} of keys + values + ~96 B per entry. */
        public Builder nearCacheMaxBytes(long bytes) {
            nearMaxBytes = bytes;
            return this;
        }

        /** No near copy lives longer than this (nor past the server's TTL). */
        public Builder nearCacheMaxTtl(Duration d) {
            nearMaxTtl = d;
            return this;
        }

        public Builder invalidation(Invalidation i) {
            invalidation = i;
            return this;
        }

        /** Broadcast mode's key prefixes (none: every key). */
        public Builder broadcastPrefixes(String... p) {
            invalidation = Invalidation.BROADCAST;
            prefixes.addAll(List.of(p));
            return this;
        }

        /** Where {@code get(key, Function)} runs loaders (default: the common pool). */
        public Builder loaderExecutor(Executor e) {
            loaderExecutor = e;
            return this;
        }

        public LarderClient build() {
            return new LarderClient(this);
        }
    }
}
