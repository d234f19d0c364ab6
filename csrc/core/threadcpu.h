/*
 * threadcpu.h - this process's CPU split by thread: the calling (load
 * generator) thread, the client library's threads (named by a comm prefix,
 * librdkafka's are "rdk:main", "rdk:broker1", ...) and all other threads,
 * read from getrusage(RUSAGE_SELF) (the process, in microseconds) and
 * /proc/self/task/<tid>/{stat,comm} (each thread, in 10 ms ticks).
 */
#ifndef KBENCH_THREADCPU_H
#define KBENCH_THREADCPU_H

#include <stdint.h>

#include "error.h"

/** Cumulative CPU seconds (usr, sys) at one instant; ok = 0 when /proc was unreadable. */
typedef struct {
    int ok;
    int64_t t_ns;                   /* CLOCK_MONOTONIC when read */
    double proc_usr, proc_sys;      /* the whole process, exited threads included (microsecond resolution) */
    double loop_usr, loop_sys;      /* the thread loop_tid */
    double client_usr, client_sys;  /* live threads whose comm starts with the client prefix */
    double other_usr, other_sys;    /* every other live thread (loop thread included) */
    int client_threads;             /* how many client threads were live */
} kb_thread_cpu;

/** The Linux thread id of the caller. */
int kb_gettid(void);

/**
 * Read the counters now.  loop_tid: the load generator's thread (0 = none);
 * client_prefix: comm prefix of the client library's threads.  0, or KB_EIO
 * with e set (and out->ok = 0) when /proc/self could not be read.
 */
int kb_thread_cpu_read(int loop_tid, const char *client_prefix, kb_thread_cpu *out, kb_error *e);

#endif
