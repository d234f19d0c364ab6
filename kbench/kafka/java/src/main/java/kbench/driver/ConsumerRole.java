package kbench.driver;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;

/**
 * The consumer role: the same checks as csrc/core/consumer.c.  Assigns every partition of the
 * topic at its end offset (resolved before READY), then reads records carrying the kb header of
 * this run: end-to-end latency (now - the header's send time), unique / duplicate sequence
 * numbers, until every expected sequence number is seen or the timeout passes.
 */
final class ConsumerRole {
    /**
     * The consumer's latency window (job {@code latency_skip_s}): e2e records only records sent at
     * or after the first kb header's send time + the skip, so a start-up backlog stays out of the
     * steady-state figures (the interval histograms keep every record). One consumer thread uses it.
     */
    static final class LatencyWindow {
        private final long skipNs;
        private long from;
        private boolean open;

        LatencyWindow(Map<String, Object> job) {
            skipNs = (long) (Json.dbl(job, "latency_skip_s", 0) * 1e9);
        }

        boolean inside(long sentAt) {
            if (!open) {
                // no skip: every record (partitions are read in no order of send time)
                from = skipNs > 0 ? sentAt + skipNs : Long.MIN_VALUE;
                open = true;
            }
            return sentAt >= from;
        }
    }

    private ConsumerRole() {}

    static Map<String, Object> run(Map<String, Object> job) {
        String topic = Json.str(job, "topic", null);
        if (topic == null) {
            throw new IllegalArgumentException("job.topic: missing");
        }
        long runId = Json.lng(job, "run_id", 0);
        long expected = Json.lng(job, "expected", 0);
        long every = Math.max(1, Json.lng(job, "header_sample", 1000));
        double timeoutS = Json.dbl(job, "timeout", 60);
        long samplesExpected = expected > 0 ? (expected + every - 1) / every : 0; // headed sequence numbers
        Properties p = ProducerRole.props(job, "consumer");
        p.putIfAbsent("group.id", String.format("kbench-%016x", runId));
        if (Boolean.TRUE.equals(job.get("group"))) {
            return GroupConsumer.run(job, p, topic, runId, expected, timeoutS);
        }
        p.put("enable.auto.commit", "false");
        p.putIfAbsent("auto.offset.reset", "latest");
        ThreadCpu cpu = new ThreadCpu(ThreadCpu.currentTid());
        KbHistogram e2e = new KbHistogram();
        LatencyWindow window = new LatencyWindow(job);
        BitSet seen = new BitSet();
        ConcurrentHashMap<String, AtomicLong> errors = new ConcurrentHashMap<>();
        long records = 0;
        long bytes = 0;
        long sampled = 0;
        long samplesSeen = 0;
        long sampleDuplicates = 0;
        long outOfRange = 0;
        long foreign = 0;
        long noHeader = 0;
        long tFirst = 0;
        long tLast = 0;
        boolean timedOut = false;
        int partitions;
        long tStart;
        long startWall;
        Map<String, Object> steady;
        Intervals series = null;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<PartitionInfo> parts = c.partitionsFor(topic, Duration.ofSeconds((long) Json.dbl(job, "connect_timeout", 10) + 1));
            if (parts == null || parts.isEmpty()) {
                throw new IllegalArgumentException("topic '" + topic + "' not available; create it first");
            }
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : parts) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
            partitions = tps.size();
            c.assign(tps);
            c.seekToEnd(tps);
            for (TopicPartition tp : tps) {
                c.position(tp, Duration.ofSeconds(30)); // resolve the end offsets now, before READY
            }
            Main.CpuWindow w = new Main.CpuWindow(cpu, Json.dbl(job, "skip_s", 0));
            Main.say("READY");
            tStart = System.nanoTime();
            startWall = Main.wallNs();
            w.start();
            series = Intervals.of((long) (Json.dbl(job, "interval_s", 0) * 1e9), tStart);
            long deadline = tStart + (long) (timeoutS * 1e9);
            while (expected == 0 || records < expected || samplesSeen < samplesExpected) {
                long now = System.nanoTime();
                if (now >= deadline) {
                    timedOut = true;
                    break;
                }
                ConsumerRecords<byte[], byte[]> batch;
                try {
                    batch = c.poll(Duration.ofMillis(Math.min(100, (deadline - now) / 1_000_000 + 1)));
                } catch (RuntimeException e) {
                    Main.count(errors, e);
                    continue;
                }
                if (series != null) {
                    series.tick(System.nanoTime()); // also while nothing arrives: a stall is a run of empty intervals
                }
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    now = System.nanoTime();
                    Header h = r.headers().lastHeader(ProducerRole.HEADER);
                    long t = -1;
                    long seq = -1;
                    long run = 0;
                    if (h != null && h.value() != null && h.value().length == 24) {
                        ByteBuffer b = ByteBuffer.wrap(h.value());
                        t = b.getLong();
                        seq = b.getLong();
                        run = b.getLong();
                    }
                    if (t >= 0 && seq >= 0 && runId != 0 && run != runId) {
                        foreign++; // a sampled record of another run: not ours
                        continue;
                    }
                    if (records == 0) {
                        tFirst = now;
                    }
                    tLast = now;
                    records++;
                    bytes += r.value() == null ? 0 : r.value().length;
                    if (series != null) {
                        series.counted(now, r.value() == null ? 0 : r.value().length);
                    }
                    if (t < 0 || seq < 0) {
                        noHeader++;
                        continue;
                    }
                    sampled++;
                    if (window.inside(t)) {
                        e2e.record(now - t);
                    }
                    if (series != null) {
                        series.latency(now, now - t, false);
                    }
                    if (samplesExpected > 0) {
                        if (seq % every != 0 || seq / every >= samplesExpected) {
                            outOfRange++;
                        } else if (seen.get((int) (seq / every))) {
                            sampleDuplicates++;
                        } else {
                            seen.set((int) (seq / every));
                            samplesSeen++;
                        }
                    }
                }
            }
            steady = w.stop();
        }
        long tEnd = System.nanoTime();
        long endWall = Main.wallNs();
        List<Object> seriesRows = series != null ? series.finish(tEnd) : null;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("records", records);
        out.put("bytes", bytes);
        long duplicates = Math.max(sampleDuplicates, expected > 0 ? records - expected : 0);
        long unique = records - duplicates;
        long samplesMissing = samplesExpected - samplesSeen;
        out.put("unique", unique);
        out.put("duplicates", duplicates);
        out.put("lost", expected > 0 ? Math.max(0, Math.max(expected - unique, samplesMissing)) : 0);
        out.put("sampled", sampled);
        out.put("samples_missing", samplesMissing);
        out.put("stored_records", -1);
        out.put("out_of_range", outOfRange);
        out.put("foreign", foreign);
        out.put("no_header", noHeader);
        out.put("partitions", partitions);
        out.put("timed_out", timedOut);
        out.put("errors", Main.counts(errors));
        out.put("e2e", e2e.summary());
        out.put("cpu", steady.get("cpu"));
        Map<String, Object> windows = new LinkedHashMap<>();
        windows.put("run", Main.window(tStart, tEnd, startWall, endWall));
        windows.put("receive", records == 0 ? null
                : Main.window(tFirst, tLast, startWall + (tFirst - tStart), startWall + (tLast - tStart)));
        windows.put("cpu", steady.get("window"));
        out.put("windows", windows);
        if (seriesRows != null) {
            out.put("intervals", seriesRows);
            out.put("intervals_latency", "e2e");
        }
        return out;
    }
}
