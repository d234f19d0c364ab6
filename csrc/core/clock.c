/*
 * clock.c - monotonic and per-thread CPU clocks.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include "clock.h"

#include <time.h>

int64_t kb_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t kb_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
