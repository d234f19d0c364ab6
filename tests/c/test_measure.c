/*
 * test_measure.c - C unit tests of the measuring parts: the latency histogram
 * (against exact sorted values) and the /proc CPU readers (a busy loop moves
 * utime, a vanished pid and a zombie are not ok, /proc/stat sums), built with
 * ASan+UBSan and TSan by tests/test_native_sanitized.py.  Two threads record
 * into their own histograms and read their own counters at once; the main
 * thread merges.  Prints "ok N" and exits 0 on success.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "histogram.h"
#include "procstat.h"

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/** The exact p-th percentile of sorted v (the ceil(p% * n)-th value). */
static int64_t exact(const int64_t *v, size_t n, double p) {
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return v[rank - 1];
}

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_histogram(void) {
    kb_hist *h = calloc(1, sizeof(*h));
    CHECK(h != NULL);
    if (!h)
        return;
    kb_hist_reset(h);
    CHECK(kb_hist_percentile(h, 50) == -1 && h->total == 0);
    enum { N = 20000 };
    int64_t *v = malloc(N * sizeof(*v));
    CHECK(v != NULL);
    if (!v) {
        free(h);
        return;
    }
    for (size_t i = 0; i < N; i++) {
        /* log-uniform from 1 ns to ~60 s: every bucket range */
        int shift = (int)(next() % 36);
        v[i] = (int64_t)(next() % ((uint64_t)1 << shift)) + 1;
        kb_hist_record(h, v[i]);
    }
    kb_hist_record(h, -5);               /* underflow, never stored */
    kb_hist_record(h, KB_HIST_MAX_NS + 1); /* overflow, never stored */
    CHECK(h->total == N && h->underflow == 1 && h->overflow == 1);
    qsort(v, N, sizeof(*v), cmp64);
    CHECK(h->min == v[0] && h->max == v[N - 1]);
    const double ps[] = {0, 1, 10, 50, 90, 99, 99.9, 99.99, 100};
    int64_t prev = -1;
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        int64_t got = kb_hist_percentile(h, ps[i]), want = exact(v, N, ps[i]);
        /* the bucket's highest equivalent value: at or above the exact value, within 1/1024 */
        CHECK(got >= want);
        CHECK((double)(got - want) <= (double)want / 1024.0 + 1.0);
        CHECK(got >= prev);
        prev = got;
    }
    CHECK(kb_hist_percentile(h, 100) == v[N - 1]);
    /* every index's range holds the values that map to it */
    for (int i = 0; i < KB_HIST_LEN; i += 97) {
        int64_t lo = kb_hist_lowest_at(i), hi = kb_hist_highest_at(i);
        if (lo > KB_HIST_MAX_NS)
            break;
        CHECK(lo <= hi && kb_hist_index(lo) == i && kb_hist_index(hi) == i);
    }
    kb_hist *g = calloc(1, sizeof(*g));
    CHECK(g != NULL);
    if (g) {
        kb_hist_reset(g);
        kb_hist_record(g, 7);
        kb_hist_merge(g, h);
        CHECK(g->total == N + 1 && g->min == (v[0] < 7 ? v[0] : 7) && g->max == v[N - 1]);
        free(g);
    }
    kb_hist_reset(h);
    CHECK(h->total == 0 && h->underflow == 0 && kb_hist_percentile(h, 99) == -1);
    free(v);
    free(h);
}

static double spin(double seconds_of_cpu) {
    kb_cpu_rec a, b;
    kb_read_pid_cpu(getpid(), (int)syscall(SYS_gettid), &a, NULL);
    volatile double x = 0; /* volatile: the loop is not optimised away */
    for (;;) {
        for (int i = 0; i < 200000; i++)
            x += (double)i * 1e-9;
        kb_read_pid_cpu(getpid(), (int)syscall(SYS_gettid), &b, NULL);
        if (!a.ok || !b.ok || x < 0)
            return -1;
        if (b.utime_s + b.stime_s - a.utime_s - a.stime_s >= seconds_of_cpu)
            return b.utime_s + b.stime_s - a.utime_s - a.stime_s;
    }
}

typedef struct {
    kb_hist *h;
    double cpu;
} worker_arg;

static void *worker(void *p) {
    worker_arg *w = p;
    for (int64_t i = 1; i <= 5000; i++)
        kb_hist_record(w->h, i * 1000);
    w->cpu = spin(0.05);
    return NULL;
}

static void test_procstat(void) {
    kb_cpu_rec r;
    CHECK(kb_read_pid_cpu(getpid(), 0, &r, NULL) == 0 && r.ok && r.pid == getpid() && r.tid == 0);
    CHECK(strcmp(r.comm, "test_measure") == 0 || strncmp(r.comm, "test_measure", 15) == 0);
    CHECK(r.utime_s >= 0 && r.stime_s >= 0);
    /* this thread's counters move with its own CPU */
    double used = spin(0.05);
    CHECK(used >= 0.05 && used < 5.0);
    /* a pid that does not exist is not ok, never zero seconds */
    CHECK(kb_read_pid_cpu(0x3ffffff0, 0, &r, NULL) == KB_EIO && r.ok == 0);
    CHECK(kb_read_pid_cpu(getpid(), 0x3ffffff0, &r, NULL) == KB_EIO && r.ok == 0);
    /* a zombie's counters are frozen: treated as gone */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    CHECK(child > 0);
    if (child > 0) {
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        /* wait until it has exited, but leave it a zombie (WNOWAIT) */
        CHECK(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT) == 0);
        CHECK(kb_read_pid_cpu(child, 0, &r, NULL) == KB_EIO && r.ok == 0);
        CHECK(waitpid(child, NULL, 0) == child);
    }
    kb_sys_cpu s0, s1;
    CHECK(kb_read_sys_cpu(&s0, NULL) == 0 && s0.ok);
    CHECK(s0.total > 0 && s0.steal >= 0 && s0.idle >= 0);
    CHECK(s0.total + 1e-6 >= s0.user + s0.nice + s0.system + s0.idle + s0.iowait + s0.irq + s0.softirq + s0.steal);
    spin(0.02);
    CHECK(kb_read_sys_cpu(&s1, NULL) == 0 && s1.total >= s0.total && s1.user + s1.system >= s0.user + s0.system);
}

static void test_threads(void) {
    /* two threads, each with its own histogram and counters; merged after join */
    kb_hist *hs[2];
    worker_arg args[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        hs[i] = calloc(1, sizeof(kb_hist));
        CHECK(hs[i] != NULL);
        if (!hs[i])
            return;
        kb_hist_reset(hs[i]);
        args[i].h = hs[i];
        args[i].cpu = 0;
        CHECK(pthread_create(&th[i], NULL, worker, &args[i]) == 0);
    }
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    kb_hist_merge(hs[0], hs[1]);
    CHECK(hs[0]->total == 10000 && hs[0]->max == 5000 * 1000 && hs[0]->min == 1000);
    CHECK(args[0].cpu >= 0.05 && args[1].cpu >= 0.05);
    free(hs[0]);
    free(hs[1]);
}

int main(void) {
    test_histogram();
    test_procstat();
    test_threads();
    if (failures) {
        fprintf(stderr, "%d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("ok %d\n", checks);
    return 0;
}
