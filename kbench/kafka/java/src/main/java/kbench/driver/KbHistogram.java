package kbench.driver;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * kbench's log-linear latency histogram (csrc/core/histogram.h), value for value: 2048
 * sub-buckets per power of two, 1 ns to 2^36 - 1 ns, negative values counted as underflow and
 * larger ones as overflow.  {@link #encode()} writes the KBH1 encoding docs/drivers.md specifies,
 * which Python reads back with {@code kbench._native.Histogram.decode}.  Not thread-safe: one
 * writer thread per histogram.
 */
final class KbHistogram {
    static final int SUB_BITS = 11;
    static final int SUB_HALF_BITS = SUB_BITS - 1;
    static final int SUB_HALF = 1 << SUB_HALF_BITS;
    static final long SUB_MASK = (1L << SUB_BITS) - 1;
    static final int MAX_BITS = 36;
    static final long MAX_NS = (1L << MAX_BITS) - 1;
    static final int BUCKETS = MAX_BITS - SUB_BITS + 1;
    static final int LEN = (BUCKETS + 1) << SUB_HALF_BITS;

    final long[] counts = new long[LEN];
    long total;
    long underflow;
    long overflow;
    long min = Long.MAX_VALUE;
    long max = -1;
    double sum;

    static int index(long v) {
        int pow2ceil = 64 - Long.numberOfLeadingZeros(v | SUB_MASK);
        int bucket = pow2ceil - SUB_BITS;
        int sub = (int) (v >>> bucket);
        return ((bucket + 1) << SUB_HALF_BITS) + (sub - SUB_HALF);
    }

    static long lowestAt(int i) {
        int bucket = (i >> SUB_HALF_BITS) - 1;
        int sub = (i & (SUB_HALF - 1)) + SUB_HALF;
        if (bucket < 0) {
            sub -= SUB_HALF;
            bucket = 0;
        }
        return ((long) sub) << bucket;
    }

    static long highestAt(int i) {
        int bucket = (i >> SUB_HALF_BITS) - 1;
        if (bucket < 0) {
            bucket = 0;
        }
        return lowestAt(i) + (1L << bucket) - 1;
    }

    void record(long v) {
        if (v < 0) {
            underflow++;
            return;
        }
        if (v > MAX_NS) {
            overflow++;
            return;
        }
        counts[index(v)]++;
        total++;
        sum += (double) v;
        if (v < min) {
            min = v;
        }
        if (v > max) {
            max = v;
        }
    }

    /** Value at percentile p, exactly as kb_hist_percentile; -1 when empty. */
    long percentile(double p) {
        if (total == 0) {
            return -1;
        }
        p = Math.max(0, Math.min(100, p));
        long rank = (long) Math.ceil(p / 100.0 * (double) total);
        if (rank < 1) {
            rank = 1;
        }
        long acc = 0;
        for (int i = 0; i < LEN; i++) {
            acc += counts[i];
            if (acc >= rank) {
                long v = highestAt(i);
                return Math.max(min, Math.min(v, max));
            }
        }
        return max;
    }

    /** KBH1: magic, six little-endian 8-byte fields, uint32 n, then n (uint32 index, int64 count). */
    byte[] encode() {
        int nz = 0;
        for (long c : counts) {
            if (c != 0) {
                nz++;
            }
        }
        ByteBuffer b = ByteBuffer.allocate(4 + 6 * 8 + 4 + nz * 12).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {'K', 'B', 'H', '1'});
        b.putLong(total).putLong(underflow).putLong(overflow).putLong(min).putLong(max).putDouble(sum);
        b.putInt(nz);
        for (int i = 0; i < LEN; i++) {
            if (counts[i] != 0) {
                b.putInt(i).putLong(counts[i]);
            }
        }
        return b.array();
    }

    private Double us(long ns) {
        return ns < 0 ? null : ns / 1000.0;
    }

    /** The protocol's histogram object: count, out_of_range, percentiles in µs, encoded. */
    Map<String, Object> summary() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("count", total);
        m.put("out_of_range", underflow + overflow);
        m.put("p50_us", us(percentile(50)));
        m.put("p95_us", us(percentile(95)));
        m.put("p99_us", us(percentile(99)));
        m.put("p999_us", us(percentile(99.9)));
        m.put("max_us", total == 0 ? null : us(max));
        m.put("encoded", Base64.getEncoder().encodeToString(encode()));
        return m;
    }
}
