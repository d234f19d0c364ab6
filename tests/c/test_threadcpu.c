/*
 * test_threadcpu.c - per-thread CPU of this process (csrc/core/threadcpu.c),
 * built with ASan+UBSan by tests/test_c_asan.py: a thread named like
 * librdkafka's ("rdk:test") and the main thread burn 150 and 155 ms of CPU; the
 * reading must attribute each to its class, and the classes must sum to the
 * process total within /proc's tick rounding.  The process total is exact
 * (getrusage, microseconds): it equals CLOCK_PROCESS_CPUTIME_ID's advance over
 * the same span within 2 ms, which /proc's 10 ms ticks would miss.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "check.h"
#include "clock.h"
#include "threadcpu.h"

static volatile unsigned long sink;

static double process_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Burn ns of this thread's CPU time. */
static void burn(int64_t ns) {
    int64_t end = kb_thread_cpu_ns() + ns;
    while (kb_thread_cpu_ns() < end)
        for (int i = 0; i < 1000; i++)
            sink += (unsigned long)i * 2654435761u;
}

static pthread_barrier_t done;

static void *client(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "rdk:test");
    burn(150000000);
    pthread_barrier_wait(&done); /* stay alive until the main thread has read the counters */
    pthread_barrier_wait(&done);
    return NULL;
}

int main(void) {
    kb_thread_cpu a, b;
    double pa0 = process_cpu_s();
    CHECK(kb_thread_cpu_read(kb_gettid(), "rdk:", &a, NULL) == 0 && a.ok);
    double pa1 = process_cpu_s();
    CHECK(a.client_threads == 0);
    pthread_barrier_init(&done, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, client, NULL);
    burn(155000000); /* 305 ms in all: between two 10 ms ticks, where a tick count is 5 ms off */
    pthread_barrier_wait(&done);
    double pb0 = process_cpu_s();
    CHECK(kb_thread_cpu_read(kb_gettid(), "rdk:", &b, NULL) == 0 && b.ok);
    double pb1 = process_cpu_s();
    pthread_barrier_wait(&done);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&done);
    double client_s = (b.client_usr + b.client_sys) - (a.client_usr + a.client_sys);
    double loop_s = (b.loop_usr + b.loop_sys) - (a.loop_usr + a.loop_sys);
    double other_s = (b.other_usr + b.other_sys) - (a.other_usr + a.other_sys);
    double total_s = (b.proc_usr + b.proc_sys) - (a.proc_usr + a.proc_sys);
    /* the reads' own CPU (the /proc walk, under the sanitizers) lies between the clock reads */
    double lo = pb0 - pa1, hi = pb1 - pa0;
    printf("client %.3f s, loop %.3f s, other %.3f s, total %.6f s (process clock %.6f-%.6f s)\n", client_s, loop_s,
           other_s, total_s, lo, hi);
    CHECK(total_s >= lo - 0.002 && total_s <= hi + 0.002);
    CHECK(b.client_threads == 1);
    CHECK(client_s >= 0.10 && client_s <= 0.40); /* 150 ms of CPU (ticks of 10 ms, sanitizer overhead) */
    CHECK(loop_s >= 0.10 && loop_s <= 0.40);
    CHECK(other_s >= loop_s - 0.0001); /* the loop thread is one of the non-client threads */
    CHECK(client_s + other_s <= total_s + 0.03 && client_s + other_s >= total_s - 0.03);
    CHECK(b.t_ns > a.t_ns);
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
