/*
 * procstat.c - /proc CPU counters and the background sampler.
 *
 * A pid that vanished or cannot be read yields "not ok" (the binding turns
 * it into None, NA): never 0.  The sampler thread reads the counters of a
 * fixed pid list every interval into a growing array; stopping wakes it at once.
 */
#define _GNU_SOURCE
#include "procstat.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"

static double tick_s(void) {
    long t = sysconf(_SC_CLK_TCK);
    return 1.0 / (double)(t > 0 ? t : 100);
}

int kb_read_pid_cpu(int pid, int tid, kb_cpu_rec *r, kb_error *e) {
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
        return kb_error_set(e, KB_EIO, -1, "cannot open %s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    /* comm is in parentheses and may contain spaces or ')': the last ')' ends it */
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    if (!lp || !rp || rp < lp)
        return kb_error_set(e, KB_EIO, -1, "%s: no (comm) field", path);
    size_t cl = (size_t)(rp - lp - 1);
    if (cl >= sizeof(r->comm))
        cl = sizeof(r->comm) - 1;
    memcpy(r->comm, lp + 1, cl);
    r->comm[cl] = 0;
    /* after ") ": field 3 state, ... field 14 utime, 15 stime */
    char state;
    unsigned long long ut, st;
    if (sscanf(rp + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &state, &ut, &st) != 3)
        return kb_error_set(e, KB_EIO, -1, "%s: cannot parse utime/stime", path);
    if (state == 'Z' || state == 'X') /* a zombie's counters are frozen: treat as gone */
        return kb_error_set(e, KB_EIO, -1, "%s: the task is a zombie (%c)", path, state);
    double t = tick_s();
    r->utime_s = (double)ut * t;
    r->stime_s = (double)st * t;
    r->ok = 1;
    return 0;
}

int kb_read_sys_cpu(kb_sys_cpu *s, kb_error *e) {
    memset(s, 0, sizeof(*s));
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return kb_error_set(e, KB_EIO, -1, "cannot open /proc/stat: %s", strerror(errno));
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                   &v[7]);
    fclose(f);
    if (n < 8)
        return kb_error_set(e, KB_EIO, -1, "/proc/stat: cannot parse the cpu line");
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

int kb_read_task_cpu(int pid, kb_cpu_rec **out, size_t *n, kb_error *e) {
    *out = NULL;
    *n = 0;
    char dpath[64];
    snprintf(dpath, sizeof(dpath), "/proc/%d/task", pid);
    DIR *d = opendir(dpath);
    if (!d)
        return kb_error_set(e, KB_EIO, -1, "cannot list %s: %s", dpath, strerror(errno));
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int tid = atoi(de->d_name);
        if (tid <= 0)
            continue;
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            kb_cpu_rec *r = realloc(*out, nc * sizeof(*r));
            if (!r) {
                free(*out);
                *out = NULL;
                *n = 0;
                closedir(d);
                return kb_error_set(e, KB_ENOMEM, -1, "out of memory for %zu threads", nc);
            }
            *out = r;
            cap = nc;
        }
        kb_read_pid_cpu(pid, tid, &(*out)[*n], NULL);
        if ((*out)[*n].ok) /* a thread that ended between readdir and read is left out */
            (*n)++;
    }
    closedir(d);
    return 0;
}

/* ------------------------------------------------------------ the sampler */

/** Take one sample into the arrays (grows them; drops samples past max_samples). */
static void take_sample(kb_sampler *o) {
    if (o->n >= o->max_samples)
        return;
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 64;
        kb_sample_head *h = realloc(o->heads, nc * sizeof(*h));
        if (!h)
            return;
        o->heads = h;
        kb_cpu_rec *r = realloc(o->recs, nc * (size_t)(o->npids ? o->npids : 1) * sizeof(*r));
        if (!r)
            return;
        o->recs = r;
        o->cap = nc;
    }
    o->heads[o->n].t = kb_now_ns();
    kb_read_sys_cpu(&o->heads[o->n].sys, NULL); /* unreadable: ok = 0 in the sample (data) */
    for (size_t i = 0; i < o->npids; i++)
        kb_read_pid_cpu(o->pids[i], 0, &o->recs[o->n * o->npids + i], NULL);
    o->n++;
}

static void *sampler_main(void *arg) {
    kb_sampler *o = arg;
    int64_t next = kb_now_ns();
    pthread_mutex_lock(&o->mu);
    while (!atomic_load(&o->stop)) {
        take_sample(o);
        next += (int64_t)(o->interval_s * 1e9);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts); /* condvar default clock */
        int64_t wait = next - kb_now_ns();
        if (wait < 0)
            wait = 0;
        int64_t abs_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + wait;
        ts.tv_sec = abs_ns / 1000000000LL;
        ts.tv_nsec = abs_ns % 1000000000LL;
        while (!atomic_load(&o->stop)) {
            int rc = pthread_cond_timedwait(&o->cv, &o->mu, &ts);
            if (rc == ETIMEDOUT)
                break;
        }
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

void kb_sampler_init(kb_sampler *s, int *pids, size_t npids, double interval_s, size_t max_samples) {
    memset(s, 0, sizeof(*s));
    s->pids = pids;
    s->npids = npids;
    s->interval_s = interval_s;
    s->max_samples = max_samples;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
}

int kb_sampler_start(kb_sampler *s, kb_error *e) {
    atomic_store(&s->stop, 0);
    int rc = pthread_create(&s->thread, NULL, sampler_main, s);
    if (rc)
        return kb_error_set(e, KB_EIO, -1, "cannot start the sampler thread: %s", strerror(rc));
    s->started = 1;
    return KB_OK;
}

void kb_sampler_join(kb_sampler *s) {
    if (!s->started)
        return;
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->stop, 1);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    s->started = 0;
}

void kb_sampler_free(kb_sampler *s) {
    kb_sampler_join(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->pids);
    free(s->heads);
    free(s->recs);
    s->pids = NULL;
    s->heads = NULL;
    s->recs = NULL;
}
