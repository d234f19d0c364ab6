package kbench.driver;

import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * What both consumer roles count for the records they read (docs/drivers.md section 3, the rules
 * of csrc/core/consumer.c): records, bytes and the receive window, the kb header's classification
 * (foreign, no header, sampled), e2e latency inside the latency window, and the time series.  One
 * consumer thread uses it.
 */
final class RecordTally {
    /** A record's kb header: its send time and sequence number (both >= 0), and its run id. */
    record Kb(long sentAt, long seq, long run) {}

    final KbHistogram e2e = new KbHistogram();
    private final long runId;
    private final long latencySkipNs;
    private final long latencyFromSeq;
    private long latencyFrom;
    private boolean latencyOpen;
    private Intervals series;
    long records;
    long bytes;
    long sampled;
    long foreign;
    long noHeader;
    private long tFirst;
    private long tLast;

    RecordTally(Map<String, Object> job, long runId) {
        this.runId = runId;
        this.latencySkipNs = (long) (Json.dbl(job, "latency_skip_s", 0) * 1e9);
        this.latencyFromSeq = Json.lng(job, "latency_from_seq", 0);
    }

    /** The series (docs/drivers.md section 4.4), started at READY: null when the job asks for none. */
    void startSeries(Map<String, Object> job, long tStart) {
        series = Intervals.of((long) (Json.dbl(job, "interval_s", 0) * 1e9), tStart);
    }

    /** Closes the series' intervals up to now, also while nothing arrives (a stall is a run of empty ones). */
    void tick(long now) {
        if (series != null) {
            series.tick(now);
        }
    }

    /** The record's kb header, or null when it has none of 24 bytes or a negative time or sequence. */
    static Kb header(ConsumerRecord<byte[], byte[]> r) {
        Header h = r.headers().lastHeader(ProducerRole.HEADER);
        if (h == null || h.value() == null || h.value().length != 24) {
            return null;
        }
        ByteBuffer b = ByteBuffer.wrap(h.value());
        long t = b.getLong();
        long seq = b.getLong();
        long run = b.getLong();
        return t < 0 || seq < 0 ? null : new Kb(t, seq, run);
    }

    /** Whether a header belongs to another run (then counted as foreign, and nothing else of it). */
    boolean foreign(Kb kb) {
        if (kb != null && runId != 0 && kb.run() != runId) {
            foreign++;
            return true;
        }
        return false;
    }

    /** One record of this run read at {@code now}: counted, its bytes, the receive window, the series. */
    void counted(long now, int len) {
        if (records == 0) {
            tFirst = now;
        }
        tLast = now;
        records++;
        bytes += len;
        if (series != null) {
            series.counted(now, len);
        }
    }

    /**
     * A counted record's header: no header, or sampled with its e2e latency — in the run's histogram
     * once its send time is inside the latency window (the first header's send time + the skip; no
     * skip: every record, since partitions are read in no order of send time), in the series always.
     */
    void sample(long now, Kb kb) {
        if (kb == null) {
            noHeader++;
            return;
        }
        sampled++;
        if (inLatencyWindow(kb)) {
            e2e.record(now - kb.sentAt());
        }
        if (series != null) {
            series.latency(now, now - kb.sentAt(), false);
        }
    }

    /**
     * By sequence number when the job gives latency_from_seq (one producer at a fixed rate: exactly
     * its messages due from the skip), else by send time from the first header read + the skip.
     */
    private boolean inLatencyWindow(Kb kb) {
        if (latencyFromSeq > 0) {
            return kb.seq() >= latencyFromSeq;
        }
        if (!latencyOpen) {
            latencyFrom = latencySkipNs > 0 ? kb.sentAt() + latencySkipNs : Long.MIN_VALUE;
            latencyOpen = true;
        }
        return kb.sentAt() >= latencyFrom;
    }

    /** The result fields both roles share (records, bytes, sampled, foreign, no_header, e2e). */
    void putCounts(Map<String, Object> out) {
        out.put("sampled", sampled);
        out.put("foreign", foreign);
        out.put("no_header", noHeader);
        out.put("e2e", e2e.summary());
    }

    /** The run and receive windows, the CPU window, and the series (when recorded) into the result. */
    void putWindows(Map<String, Object> out, long tStart, long tEnd, long startWall, long endWall,
            Map<String, Object> steady) {
        Map<String, Object> windows = new LinkedHashMap<>();
        windows.put("run", Main.window(tStart, tEnd, startWall, endWall));
        windows.put("receive", records == 0 ? null
                : Main.window(tFirst, tLast, startWall + (tFirst - tStart), startWall + (tLast - tStart)));
        windows.put("cpu", steady.get("window"));
        out.put("windows", windows);
        List<Object> rows = series != null ? series.finish(tEnd) : null;
        if (rows != null) {
            out.put("intervals", rows);
            out.put("intervals_latency", "e2e");
        }
    }
}
