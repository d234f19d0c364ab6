package kbench.driver;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * kbench's Java driver: one client role per process, speaking the driver protocol of
 * docs/drivers.md.  Reads one JSON job line on stdin; prints STARTED (producer) or READY
 * (consumer), then one RESULT line (or one ERROR line) on stdout.  Nothing else is written to
 * stdout.
 */
public final class Main {
    static final int PROTOCOL = 1;
    private static final PrintStream OUT =
            new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);

    private Main() {}

    static void say(String line) {
        synchronized (OUT) {
            OUT.print(line + "\n");
            OUT.flush();
        }
    }

    /** Wall clock in ns since the epoch (for windows; never used for latency). */
    static long wallNs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    /** The protocol's client object: library, version, runtime and its flags. */
    static Map<String, Object> clientInfo() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", "java");
        m.put("library", "kafka-clients");
        m.put("version", AppInfoParser.getVersion());
        m.put("runtime", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        m.put("runtime_flags", ManagementFactory.getRuntimeMXBean().getInputArguments());
        return m;
    }

    /** Add one occurrence of an error name to a counter map. */
    /** One poll of a consumer, at most 100 ms and not past the deadline (ns); null when it threw
     *  (the exception counted in errors). */
    static ConsumerRecords<byte[], byte[]> poll(KafkaConsumer<byte[], byte[]> c, long deadline, long now,
            ConcurrentHashMap<String, AtomicLong> errors) {
        try {
            return c.poll(Duration.ofMillis(Math.min(100, (deadline - now) / 1_000_000 + 1)));
        } catch (RuntimeException e) {
            count(errors, e);
            return null;
        }
    }

    static void count(ConcurrentHashMap<String, AtomicLong> m, Throwable e) {
        String name = e.getClass().getSimpleName();
        m.computeIfAbsent(name, k -> new AtomicLong()).incrementAndGet();
    }

    static Map<String, Object> counts(ConcurrentHashMap<String, AtomicLong> m) {
        Map<String, Object> out = new LinkedHashMap<>();
        m.forEach((k, v) -> out.put(k, v.get()));
        return out;
    }

    /** A window of monotonic and wall times. */
    static Map<String, Object> window(long startMono, long endMono, long startWall, long endWall) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("start_mono_ns", startMono);
        m.put("end_mono_ns", endMono);
        m.put("start_wall_ns", startWall);
        m.put("end_wall_ns", endWall);
        return m;
    }

    /** CPU over the steady window: from skip_s after start() to stop(). */
    static final class CpuWindow {
        private final ThreadCpu cpu;
        private final long skipNs;
        private volatile ThreadCpu.Snap a;
        private volatile long tA;
        private volatile long wallA;
        private Thread timer;

        CpuWindow(ThreadCpu cpu, double skipS) {
            this.cpu = cpu;
            this.skipNs = (long) (skipS * 1e9);
        }

        private void mark() {
            tA = System.nanoTime();
            wallA = wallNs();
            a = cpu.snapshot();
        }

        void start() {
            if (skipNs <= 0) {
                mark();
                return;
            }
            long until = System.nanoTime() + skipNs;
            timer = new Thread(() -> {
                long left;
                while ((left = until - System.nanoTime()) > 0) {
                    try {
                        Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                mark();
            }, "kbench-window");
            timer.setDaemon(true);
            timer.start();
        }

        /** Ends the window; returns {cpu, window}. */
        Map<String, Object> stop() {
            if (timer != null) {
                timer.interrupt();
                try {
                    timer.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            ThreadCpu.Snap b = cpu.snapshot();
            long tB = System.nanoTime();
            long wallB = wallNs();
            Map<String, Object> m = new LinkedHashMap<>();
            ThreadCpu.Snap a0 = a;
            m.put("cpu", cpu.window(a0, b, a0 == null ? 0.0 : (tB - tA) / 1e9, ""));
            m.put("window", a0 == null ? null : window(tA, tB, wallA, wallB));
            return m;
        }
    }

    /** The "histogram" role (a self-test): record job.values (ns) and return the histogram object. */
    static Map<String, Object> histogram(Map<String, Object> job) {
        KbHistogram h = new KbHistogram();
        Object vs = job.get("values");
        if (vs instanceof Iterable) {
            for (Object v : (Iterable<?>) vs) {
                h.record(((Number) v).longValue());
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("histogram", h.summary());
        return m;
    }

    /** stdin: the job's line, then (a held group member) nothing until the runner closes it. */
    private static final BufferedReader IN = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    /** A held group member (job.hold) after READY: wait until the runner closes stdin, the release. */
    static void awaitRelease() {
        try {
            while (IN.read() >= 0) {
                // nothing more is sent: only the end of stdin counts
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("stdin, waiting for the release: " + e.getMessage(), e);
        }
    }

    public static void main(String[] args) throws Exception {
        String line = IN.readLine();
        int rc = 0;
        try {
            if (line == null) {
                throw new IllegalArgumentException("no job on stdin; the runner sends one JSON line");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> job = (Map<String, Object>) Json.parse(line);
            long proto = Json.lng(job, "protocol", PROTOCOL);
            if (proto != PROTOCOL) {
                throw new IllegalArgumentException("protocol " + proto + " is not supported; this driver speaks " + PROTOCOL);
            }
            String role = Json.str(job, "role", "");
            Map<String, Object> out;
            if (role.equals("producer")) {
                out = ProducerRole.run(job);
            } else if (role.equals("consumer")) {
                out = ConsumerRole.run(job);
            } else if (role.equals("histogram")) {
                out = histogram(job);
            } else {
                throw new IllegalArgumentException("unknown role '" + role + "'; use producer or consumer");
            }
            out.put("protocol", PROTOCOL);
            out.put("client", clientInfo());
            say("RESULT " + Json.write(out));
        } catch (Exception e) {
            String msg = e.getMessage() == null ? e.getClass().getSimpleName() : e.getClass().getSimpleName() + ": " + e.getMessage();
            say("ERROR " + Json.write(msg));
            rc = 1;
        }
        System.exit(rc);
    }
}
