package dev.larder.client;

import java.util.concurrent.atomic.LongAdder;

/** The client's counters: near hits, server hits, misses, loads, invalidations, flushes,
 * retries (reads repeated on another connection after a pooled one failed), leaseLost (a
 * {@code get(key, loader)} whose CAS-gated store lost to another write). */
final class Metrics {
    final LongAdder nearHits = new LongAdder();
    final LongAdder serverHits = new LongAdder();
    final LongAdder misses = new LongAdder();
    final LongAdder loads = new LongAdder();
    final LongAdder invalidations = new LongAdder();
    final LongAdder flushes = new LongAdder();
    final LongAdder retries = new LongAdder();
    final LongAdder leaseLost = new LongAdder();

    Snapshot snapshot() {
        return new Snapshot(nearHits.sum(), serverHits.sum(), misses.sum(), loads.sum(), invalidations.sum(), flushes.sum(), retries.sum(),
                leaseLost.sum());
    }

    /** A copy of the counters at one moment. */
    public record Snapshot(long nearHits, long serverHits, long misses, long loads, long invalidations, long flushes, long retries,
                           long leaseLost) {}
}
