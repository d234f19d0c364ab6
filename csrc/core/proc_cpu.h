/*
 * proc_cpu.h - CPU counters from /proc: utime/stime per process or thread
 * (/proc/<pid>/stat, /proc/<pid>/task/<tid>/stat) and system-wide
 * user/system/idle/iowait/steal (/proc/stat), in seconds (clock ticks divided
 * by sysconf(_SC_CLK_TCK)).  Pure C (csrc/core/procstat.c); the Python
 * bindings and the sampler thread are in csrc/python/procstat.c.
 */
#ifndef KBENCH_PROC_CPU_H
#define KBENCH_PROC_CPU_H

/** One process's or thread's CPU counters; ok = 0 when it vanished or was unreadable. */
typedef struct {
    int pid, tid; /* tid 0 = the whole process */
    int ok;
    double utime_s, stime_s;
    char comm[32];
} kb_cpu_rec;

/** System-wide CPU counters (all CPUs summed), seconds; ok = 0 when /proc/stat was unreadable. */
typedef struct {
    int ok;
    double user, nice, system, idle, iowait, irq, softirq, steal, total;
} kb_sys_cpu;

/** Read /proc/<pid>/stat (tid 0) or /proc/<pid>/task/<tid>/stat into r; 0 or -1 (r->ok = 0). */
int kb_read_pid_cpu(int pid, int tid, kb_cpu_rec *r);

/** Read the first line of /proc/stat into s; 0 or -1 (s->ok = 0). */
int kb_read_sys_cpu(kb_sys_cpu *s);

#endif
