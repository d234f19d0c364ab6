/*
 * procstat.h - CPU counters from /proc: utime/stime per process or thread
 * (/proc/<pid>/stat, /proc/<pid>/task/<tid>/stat) and system-wide
 * user/system/idle/iowait/steal (/proc/stat), in seconds (clock ticks divided
 * by sysconf(_SC_CLK_TCK)); plus a background sampler thread.
 */
#ifndef KBENCH_PROCSTAT_H
#define KBENCH_PROCSTAT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/** One process's or thread's CPU counters; ok = 0 when it vanished or was unreadable (a per-row
 *  status: data, not a failure of the caller). */
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

/** Read /proc/<pid>/stat (tid 0) or /proc/<pid>/task/<tid>/stat into r; 0, or KB_EIO with e set (r->ok = 0). */
int kb_read_pid_cpu(int pid, int tid, kb_cpu_rec *r, kb_error *e);

/** Read the first line of /proc/stat into s; 0, or KB_EIO with e set (s->ok = 0). */
int kb_read_sys_cpu(kb_sys_cpu *s, kb_error *e);

/**
 * Read the counters of every thread of pid (/proc/<pid>/task/<tid>/stat) into a malloc'd array
 * (*out, *n; free() it); threads that end meanwhile are left out.  0, or < 0 with e set when the
 * task directory cannot be listed or memory runs out (*out NULL, *n 0).
 */
int kb_read_task_cpu(int pid, kb_cpu_rec **out, size_t *n, kb_error *e);

/** Time and system counters of one sampler sample. */
typedef struct {
    int64_t t;
    kb_sys_cpu sys;
} kb_sample_head;

/** A background thread sampling the counters of a fixed pid list every interval_s. */
typedef struct {
    int *pids; /* owned */
    size_t npids;
    double interval_s;
    pthread_t thread;
    int started;
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* samples: heads[k] and recs[k * npids .. (k+1) * npids) */
    kb_sample_head *heads;
    kb_cpu_rec *recs;
    size_t n, cap, max_samples; /* samples past max_samples (or past memory) are dropped */
} kb_sampler;

/** Set up s for pids (taken over: freed by kb_sampler_free) without starting it. */
void kb_sampler_init(kb_sampler *s, int *pids, size_t npids, double interval_s, size_t max_samples);

/** Start the thread; 0, or KB_EIO with e set (pthread_create's reason). */
int kb_sampler_start(kb_sampler *s, kb_error *e);

/** Stop the thread (woken at once) and join it; no-op when not running.  Blocks: release the GIL. */
void kb_sampler_join(kb_sampler *s);

/** Join and free everything s owns. */
void kb_sampler_free(kb_sampler *s);

#endif
