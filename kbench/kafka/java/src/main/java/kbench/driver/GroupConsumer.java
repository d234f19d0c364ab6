package kbench.driver;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * The consumer role in a consumer group (job.group): the rules of csrc/core/consumer.c's group
 * mode.  The group's start offsets are committed first where it has none (the low watermark with
 * job.from_beginning, else the high one), then READY, then (job.hold: once the runner closes stdin)
 * subscribe; a revoked partition's position is committed synchronously, the assigned ones' every
 * 500 ms; it stops once the group's
 * committed offsets hold `expected` records past the start offsets (0: every record stored at the
 * start).  Per partition it reports the offsets it read as sorted disjoint [lo, hi) runs.
 */
final class GroupConsumer {
    private GroupConsumer() {}

    /** What this member read of one partition. */
    static final class Part {
        final int partition;
        long start;
        long end = -1;
        long records;
        long bytes;
        long next = -1;
        long committed = -1;
        final List<long[]> runs = new ArrayList<>();

        Part(int partition) {
            this.partition = partition;
        }

        void read(long offset, int len) {
            records++;
            bytes += len;
            long[] last = runs.isEmpty() ? null : runs.get(runs.size() - 1);
            if (last != null && last[1] == offset) {
                last[1] = offset + 1;
            } else {
                runs.add(new long[] {offset, offset + 1});
            }
            next = offset + 1;
        }

        /** Sort and merge the runs; the distinct offsets read. */
        long normalize() {
            runs.sort((a, b) -> Long.compare(a[0], b[0]));
            List<long[]> out = new ArrayList<>();
            for (long[] r : runs) {
                long[] last = out.isEmpty() ? null : out.get(out.size() - 1);
                if (last != null && r[0] <= last[1]) {
                    last[1] = Math.max(last[1], r[1]);
                } else {
                    out.add(new long[] {r[0], r[1]});
                }
            }
            runs.clear();
            runs.addAll(out);
            long n = 0;
            for (long[] r : runs) {
                n += r[1] - r[0];
            }
            return n;
        }
    }

    private static void commit(KafkaConsumer<byte[], byte[]> c, Map<TopicPartition, Part> parts,
            Collection<TopicPartition> which, long[] errors) {
        Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
        for (TopicPartition tp : which) {
            Part p = parts.get(tp);
            if (p != null && p.next >= 0 && p.next != p.committed) {
                m.put(tp, new OffsetAndMetadata(p.next));
            }
        }
        if (m.isEmpty()) {
            return;
        }
        try {
            c.commitSync(m);
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : m.entrySet()) {
                parts.get(e.getKey()).committed = e.getValue().offset();
            }
        } catch (RuntimeException e) {
            errors[0]++;
        }
    }

    private static long committedPast(KafkaConsumer<byte[], byte[]> c, Map<TopicPartition, Part> parts) {
        Map<TopicPartition, OffsetAndMetadata> got = c.committed(parts.keySet(), Duration.ofSeconds(5));
        long n = 0;
        for (Map.Entry<TopicPartition, Part> e : parts.entrySet()) {
            OffsetAndMetadata o = got.get(e.getKey());
            if (o != null && o.offset() > e.getValue().start) {
                n += o.offset() - e.getValue().start;
            }
        }
        return n;
    }

    static Map<String, Object> run(Map<String, Object> job, Properties p, String topic, long runId, long expected,
            double timeoutS) {
        boolean fromBeginning = Boolean.TRUE.equals(job.get("from_beginning"));
        p.put("enable.auto.commit", "false");
        ThreadCpu cpu = new ThreadCpu(ThreadCpu.currentTid());
        RecordTally tally = new RecordTally(job, runId);
        ConcurrentHashMap<String, AtomicLong> errors = new ConcurrentHashMap<>();
        Map<TopicPartition, Part> parts = new LinkedHashMap<>();
        Set<TopicPartition> assigned = new HashSet<>();
        long[] commitErrors = {0};
        long[] rebalances = {0};
        long stored = -1;
        boolean timedOut = false;
        long tStart;
        long startWall;
        Map<String, Object> steady;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds((long) Json.dbl(job, "connect_timeout", 10) + 1));
            if (infos == null || infos.isEmpty()) {
                throw new IllegalArgumentException("topic '" + topic + "' not available; create it first");
            }
            for (PartitionInfo pi : infos) {
                TopicPartition tp = new TopicPartition(topic, pi.partition());
                parts.put(tp, new Part(pi.partition()));
            }
            Map<TopicPartition, Long> lo = c.beginningOffsets(parts.keySet(), Duration.ofSeconds(30));
            Map<TopicPartition, Long> hi = c.endOffsets(parts.keySet(), Duration.ofSeconds(30));
            Map<TopicPartition, OffsetAndMetadata> have = c.committed(parts.keySet(), Duration.ofSeconds(30));
            for (int attempt = 0; attempt < 5; attempt++) {
                Map<TopicPartition, OffsetAndMetadata> missing = new HashMap<>();
                for (TopicPartition tp : parts.keySet()) {
                    if (have.get(tp) == null) {
                        missing.put(tp, new OffsetAndMetadata(fromBeginning ? lo.get(tp) : hi.get(tp)));
                    }
                }
                if (missing.isEmpty()) {
                    break;
                }
                try {
                    c.commitSync(missing); // another member may commit first: read the offsets again
                } catch (RuntimeException e) {
                    Main.count(errors, e);
                }
                have = c.committed(parts.keySet(), Duration.ofSeconds(30));
            }
            long storedNow = 0;
            for (Map.Entry<TopicPartition, Part> e : parts.entrySet()) {
                OffsetAndMetadata o = have.get(e.getKey());
                if (o == null) {
                    throw new IllegalStateException("could not commit the group's start offsets of " + topic);
                }
                e.getValue().start = o.offset();
                storedNow += Math.max(0, hi.get(e.getKey()) - o.offset());
            }
            long target = expected > 0 ? expected : storedNow;
            Main.CpuWindow w = new Main.CpuWindow(cpu, Json.dbl(job, "skip_s", 0));
            Main.say("READY");
            if (Boolean.TRUE.equals(job.get("hold"))) {
                Main.awaitRelease(); // every member of the group subscribes at one instant
            }
            tStart = System.nanoTime();
            startWall = Main.wallNs();
            w.start();
            tally.startSeries(job, tStart);
            c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    commit(c, parts, tps, commitErrors); // what was read here is the next owner's start
                    assigned.removeAll(tps);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    rebalances[0]++;
                    assigned.addAll(tps);
                }
            });
            long deadline = tStart + (long) (timeoutS * 1e9);
            long nextCommit = tStart + 500_000_000L;
            long nextCheck = 0;
            boolean rechecked = false;
            boolean idle = false;
            while (true) {
                long now = System.nanoTime();
                if (now >= deadline) {
                    timedOut = true;
                    break;
                }
                if (now >= nextCommit) {
                    commit(c, parts, assigned, commitErrors);
                    nextCommit = now + 500_000_000L;
                }
                if (now >= nextCheck) {
                    nextCheck = now + (idle ? 100_000_000L : 1_000_000_000L);
                    commit(c, parts, assigned, commitErrors);
                    if (committedPast(c, parts) >= target) {
                        if (rechecked) {
                            break;
                        }
                        rechecked = true; // were more records (duplicates) stored than that?
                        Map<TopicPartition, Long> end = c.endOffsets(parts.keySet(), Duration.ofSeconds(5));
                        long s = 0;
                        for (Map.Entry<TopicPartition, Part> e : parts.entrySet()) {
                            s += end.get(e.getKey()) - e.getValue().start;
                        }
                        target = Math.max(target, s);
                        nextCheck = 0;
                        continue;
                    }
                }
                ConsumerRecords<byte[], byte[]> batch = Main.poll(c, deadline, now, errors);
                if (batch == null) {
                    continue;
                }
                idle = batch.isEmpty();
                tally.tick(System.nanoTime());
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    now = System.nanoTime();
                    int len = r.value() == null ? 0 : r.value().length;
                    Part part = parts.get(new TopicPartition(r.topic(), r.partition()));
                    if (part != null) {
                        part.read(r.offset(), len); // every record of a partition counts for loss
                    }
                    tally.counted(now, len);
                    RecordTally.Kb kb = RecordTally.header(r);
                    if (!tally.foreign(kb)) {
                        tally.sample(now, kb);
                    }
                }
            }
            commit(c, parts, assigned, commitErrors);
            Map<TopicPartition, Long> end = c.endOffsets(parts.keySet(), Duration.ofSeconds(5));
            stored = 0;
            for (Map.Entry<TopicPartition, Part> e : parts.entrySet()) {
                e.getValue().end = end.get(e.getKey());
                stored += e.getValue().end - e.getValue().start;
            }
            steady = w.stop();
        }
        long tEnd = System.nanoTime();
        long endWall = Main.wallNs();
        long distinct = 0;
        List<Object> partsOut = new ArrayList<>();
        long lost = 0;
        for (Part pt : parts.values()) {
            long d = pt.normalize();
            distinct += d;
            lost += Math.max(0, Math.max(0, pt.end - pt.start) - d);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("partition", (long) pt.partition);
            m.put("start", pt.start);
            m.put("end", pt.end);
            m.put("records", pt.records);
            m.put("bytes", pt.bytes);
            List<Object> runs = new ArrayList<>();
            for (long[] r : pt.runs) {
                runs.add(List.of(r[0], r[1]));
            }
            m.put("runs", runs);
            partsOut.add(m);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("records", tally.records);
        out.put("bytes", tally.bytes);
        out.put("unique", distinct);
        out.put("duplicates", tally.records - distinct);
        out.put("lost", lost); // this member alone; the group's loss is the merge of every member
        out.put("samples_missing", 0L);
        out.put("stored_records", stored);
        out.put("out_of_range", 0L);
        out.put("partitions", (long) parts.size());
        out.put("timed_out", timedOut);
        out.put("errors", Main.counts(errors));
        out.put("cpu", steady.get("cpu"));
        tally.putCounts(out);
        out.put("parts", partsOut);
        out.put("rebalances", rebalances[0]);
        out.put("commit_errors", commitErrors[0]);
        tally.putWindows(out, tStart, tEnd, startWall, endWall, steady);
        return out;
    }
}
