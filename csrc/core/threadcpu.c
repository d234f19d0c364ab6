/*
 * threadcpu.c - per-thread CPU of this process from /proc (see threadcpu.h).
 */
#define _GNU_SOURCE
#include "threadcpu.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"

int kb_gettid(void) {
    return (int)syscall(SYS_gettid);
}

/** utime and stime (clock ticks) from a stat file; 0 or -1. */
static int read_stat(const char *path, unsigned long long *ut, unsigned long long *st) {
    char buf[1024];
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    /* comm may hold spaces and parentheses: the fields resume after the last ')' */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* after ") ": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15) */
    return sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", ut, st) == 2 ? 0 : -1;
}

/** The comm of a thread into buf (newline stripped); 0 or -1. */
static int read_comm(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = 0;
    char *nl = strchr(buf, '\n');
    if (nl)
        *nl = 0;
    return 0;
}

int kb_thread_cpu_read(int loop_tid, const char *client_prefix, kb_thread_cpu *out, kb_error *e) {
    memset(out, 0, sizeof(*out));
    out->t_ns = kb_now_ns();
    double tick = (double)sysconf(_SC_CLK_TCK);
    if (!(tick > 0))
        tick = 100;
    /* the process total from getrusage: the same counters as /proc/self/stat (every thread, live
     * and exited) in microseconds, not 10 ms ticks, so that a consumer's 20 ms in a short window
     * does not read 0 (the kernel scales its exact runtime by the ticks' user/system split) */
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) < 0)
        return kb_error_set(e, KB_EIO, -1, "getrusage(RUSAGE_SELF): %s", strerror(errno));
    out->proc_usr = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    out->proc_sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    unsigned long long ut, st;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return kb_error_set(e, KB_EIO, -1, "cannot list /proc/self/task: %s", strerror(errno));
    size_t plen = client_prefix ? strlen(client_prefix) : 0;
    struct dirent *de;
    char path[96], comm[64];
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        int tid = atoi(de->d_name);
        snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
        if (read_stat(path, &ut, &st) < 0)
            continue; /* the thread exited meanwhile */
        snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
        if (read_comm(path, comm, sizeof(comm)) < 0)
            continue;
        double u = (double)ut / tick, s = (double)st / tick;
        if (plen && strncmp(comm, client_prefix, plen) == 0) {
            out->client_usr += u;
            out->client_sys += s;
            out->client_threads++;
        } else {
            out->other_usr += u;
            out->other_sys += s;
        }
        if (tid == loop_tid) {
            out->loop_usr = u;
            out->loop_sys = s;
        }
    }
    closedir(d);
    out->ok = 1;
    return 0;
}
