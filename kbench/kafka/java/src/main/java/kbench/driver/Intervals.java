package kbench.driver;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The time series of docs/drivers.md section 4.4: counts and a latency histogram per interval of
 * System.nanoTime() (CLOCK_MONOTONIC on Linux), interval k spanning [k * width, (k + 1) * width).
 * Each event costs a compare and a counter (under this object's lock: the loop thread counts
 * sends, the client's I/O thread acknowledgements); an interval is closed once per width, its
 * histogram's summary taken and a new histogram started (no allocation per record).
 */
final class Intervals {
    private final long width;
    private final long wallOffset;
    private long start;
    private long next;
    private long count;
    private long bytes;
    private long acked;
    private long failed;
    private KbHistogram cur = new KbHistogram();
    private final List<Object> rows = new ArrayList<>();

    /** A series from startNs with intervals of widthNs (> 0); null when widthNs <= 0 (no series). */
    static Intervals of(long widthNs, long startNs) {
        return widthNs > 0 ? new Intervals(widthNs, startNs) : null;
    }

    private Intervals(long widthNs, long startNs) {
        width = widthNs;
        start = startNs;
        next = Math.floorDiv(startNs, widthNs) * widthNs + widthNs;
        wallOffset = Main.wallNs() - System.nanoTime();
    }

    private void at(long now) {
        while (now >= next) {
            close(next);
            next += width;
        }
    }

    private void close(long end) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("start_mono_ns", start);
        m.put("end_mono_ns", end);
        m.put("start_wall_ns", start + wallOffset);
        m.put("count", count);
        m.put("acked", acked);
        m.put("failed", failed);
        m.put("bytes", bytes);
        m.put("latency", cur.summary());
        rows.add(m);
        cur = new KbHistogram();
        count = bytes = acked = failed = 0;
        start = end;
    }

    /** A message sent (producer) or a record read (consumer) at now, of b value bytes. */
    synchronized void counted(long now, long b) {
        at(now);
        count++;
        bytes += b;
    }

    /** A latency recorded at now (an acknowledgement's, or a sampled record's end to end). */
    synchronized void latency(long now, long ns, boolean ack) {
        at(now);
        if (ack) {
            acked++;
        }
        cur.record(ns);
    }

    /** A delivery that failed, reported at now. */
    synchronized void failed(long now) {
        at(now);
        failed++;
    }

    /** Close intervals that ended by now (a loop calls it when it wakes without an event). */
    synchronized void tick(long now) {
        at(now);
    }

    /** Close every interval up to end and the current one, cut at end; the list of section 4.4. */
    synchronized List<Object> finish(long end) {
        at(end);
        if (end > start) {
            close(end);
        }
        return rows;
    }
}
