package kbench.driver;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * CPU of this JVM from /proc: the whole process (/proc/self/stat: every thread, live and
 * exited) and each live thread (/proc/self/task/TID/stat), grouped into the protocol's thread
 * groups: app (the thread running the loop), client (Kafka's threads: kafka-producer-network-thread,
 * the consumer's background threads), runtime (JIT compilers, GC, VM threads) and other.
 */
final class ThreadCpu {
    /** USER_HZ: the unit of utime/stime in /proc, 100 on every Linux kbench runs on. */
    static final double TICKS_PER_S = 100.0;

    /** One snapshot: process usr/sys ticks and per-thread (group, usr, sys) ticks. */
    static final class Snap {
        long usr;
        long sys;
        boolean ok;
        final Map<Long, long[]> threads = new HashMap<>();
        final Map<Long, String> groups = new HashMap<>();
    }

    private final long appTid;

    ThreadCpu(long appTid) {
        this.appTid = appTid;
    }

    /** The kernel thread id of the calling thread (/proc/thread-self -> PID/task/TID). */
    static long currentTid() {
        try {
            Path p = Files.readSymbolicLink(Path.of("/proc/thread-self"));
            return Long.parseLong(p.getFileName().toString());
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** utime and stime (fields 14 and 15) of a stat line; the comm may hold spaces and ')'. */
    private static long[] times(String stat) {
        int close = stat.lastIndexOf(')');
        String[] f = stat.substring(close + 2).trim().split(" ");
        // f[0] is field 3 (state): utime is field 14 -> f[11], stime field 15 -> f[12]
        return new long[] {Long.parseLong(f[11]), Long.parseLong(f[12])};
    }

    private static String comm(String stat) {
        return stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    }

    String group(long tid, String comm) {
        if (tid == appTid) {
            return "app";
        }
        if (comm.startsWith("kafka-") || comm.startsWith("consumer_")) {
            return "client";
        }
        if (comm.startsWith("C1 Compiler") || comm.startsWith("C2 Compiler") || comm.startsWith("GC ")
                || comm.startsWith("G1 ") || comm.startsWith("VM ") || comm.startsWith("Sweeper")
                || comm.startsWith("Common-Cleaner") || comm.startsWith("Reference Handl")
                || comm.startsWith("Finalizer") || comm.startsWith("Signal Dispatch")
                || comm.startsWith("Service Thread") || comm.startsWith("Monitor Deflati")
                || comm.startsWith("Notification Th")) {
            return "runtime";
        }
        return "other";
    }

    Snap snapshot() {
        Snap s = new Snap();
        try {
            long[] t = times(Files.readString(Path.of("/proc/self/stat")));
            s.usr = t[0];
            s.sys = t[1];
            s.ok = true;
        } catch (IOException | RuntimeException e) {
            s.ok = false;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path d : ds) {
                try {
                    String st = Files.readString(d.resolve("stat"));
                    long tid = Long.parseLong(d.getFileName().toString());
                    s.threads.put(tid, times(st));
                    s.groups.put(tid, group(tid, comm(st)));
                } catch (IOException | RuntimeException e) {
                    // the thread exited between listing and reading: its CPU stays in the process total
                }
            }
        } catch (IOException e) {
            // no per-thread view; the process total remains
        }
        return s;
    }

    /** The protocol's cpu object for the window a..b. */
    Map<String, Object> window(Snap a, Snap b, double wallS, String note) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (a == null || b == null || !a.ok || !b.ok) {
            m.put("usr_s", null);
            m.put("sys_s", null);
            m.put("wall_s", 0.0);
            m.put("note", a == null ? "run shorter than the steady-window skip" : "unreadable");
            return m;
        }
        m.put("usr_s", (b.usr - a.usr) / TICKS_PER_S);
        m.put("sys_s", (b.sys - a.sys) / TICKS_PER_S);
        m.put("wall_s", wallS);
        m.put("note", note);
        Map<String, long[]> g = new LinkedHashMap<>();
        for (String k : new String[] {"app", "client", "runtime", "other"}) {
            g.put(k, new long[2]);
        }
        for (Map.Entry<Long, long[]> e : b.threads.entrySet()) {
            long[] before = a.threads.getOrDefault(e.getKey(), new long[2]);
            long[] now = e.getValue();
            if (now[0] < before[0] || now[1] < before[1]) {
                before = new long[2]; // a new thread that reused an exited thread's id
            }
            long[] acc = g.get(b.groups.get(e.getKey()));
            acc[0] += now[0] - before[0];
            acc[1] += now[1] - before[1];
        }
        Map<String, Object> threads = new LinkedHashMap<>();
        for (Map.Entry<String, long[]> e : g.entrySet()) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("usr_s", e.getValue()[0] / TICKS_PER_S);
            t.put("sys_s", e.getValue()[1] / TICKS_PER_S);
            threads.put(e.getKey(), t);
        }
        m.put("threads", threads);
        return m;
    }
}
