/*
 * clock.h - monotonic nanosecond clock shared by every timed loop.
 */
#ifndef KBENCH_CLOCK_H
#define KBENCH_CLOCK_H

#include <stdint.h>

/** CLOCK_MONOTONIC in nanoseconds. */
int64_t kb_now_ns(void);

/** CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID) in nanoseconds. */
int64_t kb_thread_cpu_ns(void);

#endif
