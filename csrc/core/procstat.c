/*
 * procstat.c - CPU counters from /proc (pure C, no Python): utime/stime of a
 * process or thread and the system-wide counters.  A pid that vanished, a
 * zombie or an unreadable file yields ok = 0 (NA upstream), never 0 seconds.
 */
#define _GNU_SOURCE
#include "proc_cpu.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static double tick_s(void) {
    long t = sysconf(_SC_CLK_TCK);
    return 1.0 / (double)(t > 0 ? t : 100);
}

int kb_read_pid_cpu(int pid, int tid, kb_cpu_rec *r) {
    char path[96], buf[1024];
    memset(r, 0, sizeof(*r));
    r->pid = pid;
    r->tid = tid;
    if (tid)
        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
    else
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    /* comm is in parentheses and may contain spaces or ')': the last ')' ends it */
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    if (!lp || !rp || rp < lp)
        return -1;
    size_t cl = (size_t)(rp - lp - 1);
    if (cl >= sizeof(r->comm))
        cl = sizeof(r->comm) - 1;
    memcpy(r->comm, lp + 1, cl);
    r->comm[cl] = 0;
    /* after ") ": field 3 state, ... field 14 utime, 15 stime */
    char state;
    unsigned long long ut, st;
    if (sscanf(rp + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &state, &ut, &st) != 3)
        return -1;
    if (state == 'Z' || state == 'X') /* a zombie's counters are frozen: treat as gone */
        return -1;
    double t = tick_s();
    r->utime_s = (double)ut * t;
    r->stime_s = (double)st * t;
    r->ok = 1;
    return 0;
}

int kb_read_sys_cpu(kb_sys_cpu *s) {
    memset(s, 0, sizeof(*s));
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                   &v[7]);
    fclose(f);
    if (n < 8)
        return -1;
    double t = tick_s();
    s->user = v[0] * t;
    s->nice = v[1] * t;
    s->system = v[2] * t;
    s->idle = v[3] * t;
    s->iowait = v[4] * t;
    s->irq = v[5] * t;
    s->softirq = v[6] * t;
    s->steal = v[7] * t;
    s->total = (double)(v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]) * t;
    s->ok = 1;
    return 0;
}
