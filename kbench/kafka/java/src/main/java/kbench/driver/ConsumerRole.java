package kbench.driver;

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

/**
 * The consumer role: the same checks as csrc/core/consumer.c.  Assigns every partition of the
 * topic at its end offset (resolved before READY), then reads records carrying the kb header of
 * this run: end-to-end latency (now - the header's send time), unique / duplicate sequence
 * numbers, until every expected sequence number is seen or the timeout passes.
 */
final class ConsumerRole {
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
        RecordTally tally = new RecordTally(job, runId);
        BitSet seen = new BitSet();
        ConcurrentHashMap<String, AtomicLong> errors = new ConcurrentHashMap<>();
        long samplesSeen = 0;
        long sampleDuplicates = 0;
        long outOfRange = 0;
        boolean timedOut = false;
        int partitions;
        long tStart;
        long startWall;
        Map<String, Object> steady;
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
            tally.startSeries(job, tStart);
            long deadline = tStart + (long) (timeoutS * 1e9);
            while (expected == 0 || tally.records < expected || samplesSeen < samplesExpected) {
                long now = System.nanoTime();
                if (now >= deadline) {
                    timedOut = true;
                    break;
                }
                ConsumerRecords<byte[], byte[]> batch = Main.poll(c, deadline, now, errors);
                if (batch == null) {
                    continue;
                }
                tally.tick(System.nanoTime());
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    now = System.nanoTime();
                    RecordTally.Kb kb = RecordTally.header(r);
                    if (tally.foreign(kb)) {
                        continue; // a sampled record of another run: not ours
                    }
                    tally.counted(now, r.value() == null ? 0 : r.value().length);
                    tally.sample(now, kb);
                    if (kb == null) {
                        continue;
                    }
                    long seq = kb.seq();
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
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("records", tally.records);
        out.put("bytes", tally.bytes);
        long duplicates = Math.max(sampleDuplicates, expected > 0 ? tally.records - expected : 0);
        long unique = tally.records - duplicates;
        long samplesMissing = samplesExpected - samplesSeen;
        out.put("unique", unique);
        out.put("duplicates", duplicates);
        out.put("lost", expected > 0 ? Math.max(0, Math.max(expected - unique, samplesMissing)) : 0);
        out.put("samples_missing", samplesMissing);
        out.put("stored_records", -1);
        out.put("out_of_range", outOfRange);
        out.put("partitions", partitions);
        out.put("timed_out", timedOut);
        out.put("errors", Main.counts(errors));
        out.put("cpu", steady.get("cpu"));
        tally.putCounts(out);
        tally.putWindows(out, tStart, tEnd, startWall, endWall, steady);
        return out;
    }
}
