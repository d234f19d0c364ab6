package kbench.driver;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The producer role: the same loop as csrc/core/producer.c.  Fixed-rate: message i is due at
 * t0 + i/rate; the loop parks (LockSupport.parkNanos, never spins) until its next wake, the later
 * of the next due time and the previous wake + tick (csrc/core/pacing.c), and then sends every
 * message that is due.  Saturated: sends as fast as send() returns.  Latencies
 * (ns, System.nanoTime = CLOCK_MONOTONIC): service = ack - actual send, delay = actual send - due,
 * corrected = ack - due.
 */
final class ProducerRole {
    static final String HEADER = "kb";

    private ProducerRole() {}

    /** Records of a lenprefixed corpus file: 4-byte big-endian length, then the bytes. */
    static List<byte[]> readCorpus(Path p, String format) throws IOException {
        if (!format.equals("lenprefixed")) {
            throw new IllegalArgumentException("corpus_format '" + format + "' is not supported; use lenprefixed");
        }
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(p));
        List<byte[]> out = new ArrayList<>();
        while (b.remaining() >= 4) {
            int n = b.getInt();
            if (n < 0 || n > b.remaining()) {
                throw new IllegalArgumentException("corpus file " + p + " is truncated or not lenprefixed");
            }
            byte[] r = new byte[n];
            b.get(r);
            out.add(r);
        }
        if (b.remaining() != 0 || out.isEmpty()) {
            throw new IllegalArgumentException("corpus file " + p + " has no records or a truncated tail");
        }
        return out;
    }

    static byte[] header(long sent, long seq, long runId) {
        return ByteBuffer.allocate(24).putLong(sent).putLong(seq).putLong(runId).array();
    }

    static Properties props(Map<String, Object> job, String ser) {
        Properties p = new Properties();
        Json.obj(job, "props").forEach((k, v) -> p.put(k, String.valueOf(v)));
        p.put(ser.equals("producer") ? ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG : "key.deserializer",
                ser.equals("producer") ? ByteArraySerializer.class.getName()
                        : "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put(ser.equals("producer") ? ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG : "value.deserializer",
                ser.equals("producer") ? ByteArraySerializer.class.getName()
                        : "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        return p;
    }

    /** Delivery outcomes, written by the client's I/O thread (and by send() on early errors). */
    static final class Acks {
        final KbHistogram service = new KbHistogram();
        final KbHistogram corrected = new KbHistogram();
        final AtomicLong delivered = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final ConcurrentHashMap<String, AtomicLong> errors = new ConcurrentHashMap<>();

        volatile Intervals series; // docs/drivers.md section 4.4 (null: none)
        // the latency window (job latency_skip_s): messages due (fixed rate) or sent (saturated)
        // before this instant stay out of service/corrected/delay; set before the first send
        volatile long latFrom = Long.MIN_VALUE;

        synchronized void ok(long now, long sent, long due) {
            delivered.incrementAndGet();
            if ((due >= 0 ? due : sent) >= latFrom) {
                service.record(now - sent);
                if (due >= 0) {
                    corrected.record(now - due);
                }
            }
            Intervals iv = series;
            if (iv != null) {
                iv.latency(now, due >= 0 ? now - due : now - sent, true);
            }
        }

        void fail(Exception e) {
            failed.incrementAndGet();
            Main.count(errors, e);
            Intervals iv = series;
            if (iv != null) {
                iv.failed(System.nanoTime());
            }
        }
    }

    static Map<String, Object> run(Map<String, Object> job) throws IOException {
        String topic = Json.str(job, "topic", null);
        if (topic == null) {
            throw new IllegalArgumentException("job.topic: missing");
        }
        String mode = Json.str(job, "mode", "fixed-rate");
        boolean fixed = mode.equals("fixed-rate");
        if (!fixed && !mode.equals("saturated")) {
            throw new IllegalArgumentException("job.mode: '" + mode + "' is unknown; use fixed-rate or saturated");
        }
        double rate = Json.dbl(job, "rate", 0);
        long count = Json.lng(job, "count", 0);
        double duration = Json.dbl(job, "duration", 0);
        if ((count <= 0 && duration <= 0) || (fixed && !(rate > 0))) {
            throw new IllegalArgumentException("bad producer arguments (count/duration or rate)");
        }
        long runId = Json.lng(job, "run_id", 0);
        long headerEvery = Math.max(1, Json.lng(job, "header_sample", 1000));
        double tickS = Json.dbl(job, "tick_s", 0.002);
        if (!(tickS >= 0 && tickS <= 1)) {
            throw new IllegalArgumentException("job.tick_s: must be within 0..1 s, got " + tickS);
        }
        long tick = (long) (tickS * 1e9);
        String keysPolicy = Json.str(job, "keys", "none");
        long nkeys = Json.lng(job, "nkeys", 0);
        long partition = Json.lng(job, "partition", -1);
        List<byte[]> records = readCorpus(Path.of(Json.str(job, "corpus_file", "")),
                Json.str(job, "corpus_format", "lenprefixed"));
        byte[][] recs = records.toArray(new byte[0][]);
        byte[][] keys = null;
        if (!keysPolicy.equals("none") && nkeys > 0) {
            keys = new byte[(int) nkeys][];
            for (int k = 0; k < nkeys; k++) {
                keys[k] = ("key-" + k).getBytes(StandardCharsets.US_ASCII);
            }
        }
        boolean random = keysPolicy.equals("random");

        ThreadCpu cpu = new ThreadCpu(ThreadCpu.currentTid());
        Acks acks = new Acks();
        KbHistogram delay = new KbHistogram();
        ConcurrentHashMap<String, AtomicLong> clientErrors = new ConcurrentHashMap<>();
        long sent = 0;
        long wakes = 0; // fixed rate: times the loop woke up
        long sampled = 0; // messages sent with the kb header
        long bytes = 0;
        long t0;
        long tFirst = 0;
        long tLast = 0;
        long tLastDue = 0;
        long startWall;
        long tStart;
        long tEnd;
        Map<String, Object> steady;
        Map<String, Object> stats = new LinkedHashMap<>();
        List<Object> seriesRows = null;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props(job, "producer"))) {
            producer.partitionsFor(topic); // metadata before STARTED: the topic must exist
            Main.CpuWindow w = new Main.CpuWindow(cpu, Json.dbl(job, "skip_s", 0));
            Main.say("STARTED");
            tStart = System.nanoTime();
            startWall = Main.wallNs();
            w.start();
            long rnd = 0x9E3779B97F4A7C15L ^ runId;
            t0 = System.nanoTime() + 1_000_000L; // first message due 1 ms from now
            long latSkip = (long) (Json.dbl(job, "latency_skip_s", 0) * 1e9);
            acks.latFrom = latSkip > 0 ? t0 + latSkip : Long.MIN_VALUE; // no skip: every message
            acks.series = Intervals.of((long) (Json.dbl(job, "interval_s", 0) * 1e9), t0 - 1_000_000L);
            long end = duration > 0 ? t0 + (long) (duration * 1e9) : Long.MAX_VALUE;
            double period = fixed ? 1e9 / rate : 0;
            Integer part = partition >= 0 ? Integer.valueOf((int) partition) : null;
            int rec = 0;
            long wake = t0 - tick; // the first wake is max(due(0), wake + tick) = t0
            long wokeAt = Long.MIN_VALUE; // the clock at the last wake: everything due by it is sent

            for (long seq = 0;; seq++) {
                if (count > 0 && seq >= count) {
                    break;
                }
                long due = -1;
                if (fixed) {
                    due = t0 + (long) ((double) seq * period);
                    if (due >= end) {
                        break;
                    }
                    if (due > wokeAt) {
                        // not due at the last wake: sleep to the next one, at the later of this due
                        // time and the last wake + tick, then send every message due by then
                        wake = Math.max(due, wake + tick);
                        long left;
                        while ((left = wake - System.nanoTime()) > 0) {
                            LockSupport.parkNanos(left); // never spins; a late wake sends all that is due
                        }
                        wokeAt = System.nanoTime();
                        wakes++;
                        if (acks.series != null) {
                            acks.series.tick(wokeAt); // close intervals with no event in them too
                        }
                    }
                } else if ((seq & 1023) == 0 && System.nanoTime() >= end) {
                    break;
                }
                byte[] key = null;
                if (keys != null) {
                    long k;
                    if (random) {
                        rnd ^= rnd << 13;
                        rnd ^= rnd >>> 7;
                        rnd ^= rnd << 17;
                        k = Long.remainderUnsigned(rnd, nkeys);
                    } else {
                        k = seq % nkeys;
                    }
                    key = keys[(int) k];
                }
                byte[] val = recs[rec];
                if (++rec == recs.length) {
                    rec = 0;
                }
                long s = System.nanoTime();
                boolean withHeader = seq % headerEvery == 0;
                Iterable<Header> hdrs = withHeader ? List.of(new RecordHeader(HEADER, header(s, seq, runId))) : null;
                final long dueF = due;
                try {
                    producer.send(new ProducerRecord<>(topic, part, null, key, val, hdrs), (md, ex) -> {
                        long now = System.nanoTime();
                        if (ex != null) {
                            acks.fail(ex);
                        } else {
                            acks.ok(now, s, dueF);
                        }
                    });
                } catch (RuntimeException e) {
                    Main.count(clientErrors, e);
                    acks.fail(e);
                    continue;
                }
                if (sent == 0) {
                    tFirst = s;
                }
                tLast = s;
                sent++;
                if (acks.series != null) {
                    acks.series.counted(s, val.length);
                }
                sampled += withHeader ? 1 : 0;
                bytes += val.length;
                if (fixed) {
                    if (due >= acks.latFrom) {
                        delay.record(s - due);
                    }
                    tLastDue = due;
                }
            }
            producer.flush();
            tEnd = System.nanoTime();
            if (acks.series != null) {
                seriesRows = acks.series.finish(tEnd);
            }
            steady = w.stop();
            for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
                MetricName n = e.getKey();
                if (n.group().equals("producer-metrics") && STATS.contains(n.name())) {
                    Object v = e.getValue().metricValue();
                    stats.put(n.name(), v instanceof Double && ((Double) v).isNaN() ? null : v);
                }
            }
            producer.close(Duration.ofSeconds(10));
        }
        long endWall = Main.wallNs();
        long delivered = acks.delivered.get();
        long failed = acks.failed.get();
        double sendSeconds = Math.max(0.0, (tLast - (fixed ? t0 : tFirst)) / 1e9);
        double span = (tEnd - tFirst) / 1e9;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", sent);
        out.put("delivered", delivered);
        out.put("failed", failed);
        out.put("undelivered", Math.max(0, sent - delivered - (failed - sumOf(clientErrors))));
        out.put("bytes", bytes);
        out.put("sampled", sampled);
        out.put("wakes", fixed ? wakes : 0);
        out.put("achieved_rate", sent >= 2 && sendSeconds > 0 ? (sent - 1) / sendSeconds : 0.0);
        out.put("delivered_rate", span > 0 ? delivered / span : 0.0);
        out.put("send_seconds", sendSeconds);
        out.put("delivery_errors", Main.counts(acks.errors));
        out.put("client_errors", Main.counts(clientErrors));
        out.put("service", acks.service.summary());
        out.put("delay", fixed ? delay.summary() : null);
        out.put("corrected", fixed ? acks.corrected.summary() : null);
        out.put("cpu", steady.get("cpu"));
        Map<String, Object> windows = new LinkedHashMap<>();
        windows.put("run", Main.window(tStart, tEnd, startWall, endWall));
        long sendStart = fixed ? t0 : tFirst;
        windows.put("send", Main.window(sendStart, tLast, startWall + (sendStart - tStart), startWall + (tLast - tStart)));
        windows.put("cpu", steady.get("window"));
        windows.put("last_due_mono_ns", fixed ? tLastDue : null);
        out.put("windows", windows);
        Map<String, Object> cs = new LinkedHashMap<>();
        Object wire = stats.get("outgoing-byte-total");
        cs.put("wire_bytes", wire instanceof Number ? ((Number) wire).longValue() : null);
        cs.put("batch_fill", null);
        cs.put("raw", stats);
        out.put("client_stats", cs);
        if (seriesRows != null) {
            out.put("intervals", seriesRows);
            out.put("intervals_latency", fixed ? "corrected" : "service");
        }
        return out;
    }

    private static long sumOf(ConcurrentHashMap<String, AtomicLong> m) {
        long s = 0;
        for (AtomicLong v : m.values()) {
            s += v.get();
        }
        return s;
    }

    static final java.util.Set<String> STATS = java.util.Set.of(
            "outgoing-byte-total", "batch-size-avg", "batch-size-max", "records-per-request-avg",
            "compression-rate-avg", "record-size-avg", "request-total", "record-send-total",
            "bufferpool-wait-time-ns-total", "request-latency-avg");
}
