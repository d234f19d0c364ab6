/*
 * procstat.c - /proc CPU counters and the background sampler.
 *
 * A pid that vanished or cannot be read yields "not ok", which Python turns
 * into None (NA): never 0.  The sampler thread reads the counters of a fixed
 * pid list every interval into a growing array; stop() wakes it at once.
 */
#define _GNU_SOURCE
#include "procstat.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/** Python dict of a system sample, or None when not ok. */
static PyObject *sys_obj(const kb_sys_cpu *s) {
    if (!s->ok)
        Py_RETURN_NONE;
    return Py_BuildValue("{s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "user", s->user, "nice", s->nice, "system",
                         s->system, "idle", s->idle, "iowait", s->iowait, "irq", s->irq, "softirq", s->softirq,
                         "steal", s->steal, "total", s->total);
}

/** (pid, tid|None, comm|None, utime_s|None, stime_s|None) for r. */
static PyObject *rec_obj(const kb_cpu_rec *r) {
    PyObject *tid = r->tid ? PyLong_FromLong(r->tid) : Py_NewRef(Py_None);
    if (!tid)
        return NULL;
    if (!r->ok)
        return Py_BuildValue("(iNOOO)", r->pid, tid, Py_None, Py_None, Py_None);
    return Py_BuildValue("(iNsdd)", r->pid, tid, r->comm, r->utime_s, r->stime_s);
}

/** Convert a Python sequence of ints to a malloc'd array; -1 with a Python error. */
static int pid_array(PyObject *seq, int **out, Py_ssize_t *n) {
    PyObject *fast = PySequence_Fast(seq, "pids must be a sequence of ints");
    if (!fast)
        return -1;
    *n = PySequence_Fast_GET_SIZE(fast);
    *out = malloc(sizeof(int) * (size_t)(*n ? *n : 1));
    if (!*out) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if ((v == -1 && PyErr_Occurred()) || v <= 0 || v > 0x7fffffff) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "bad pid %ld", v);
            free(*out);
            *out = NULL;
            Py_DECREF(fast);
            return -1;
        }
        (*out)[i] = (int)v;
    }
    Py_DECREF(fast);
    return 0;
}

PyDoc_STRVAR(snapshot_doc,
             "proc_snapshot(pids, threads=False) -> (t_ns, system, records)\n\n"
             "system: dict of seconds (user, nice, system, idle, iowait, irq, softirq, steal, total) or None;\n"
             "records: (pid, tid, comm, utime_s, stime_s) per pid (tid None) and, with threads, per thread;\n"
             "comm/utime/stime are None when the pid vanished or was unreadable.");

static PyObject *py_snapshot(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"pids", "threads", NULL};
    PyObject *pids;
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:proc_snapshot", kwlist, &pids, &threads))
        return NULL;
    int *pa;
    Py_ssize_t n;
    if (pid_array(pids, &pa, &n) < 0)
        return NULL;
    PyObject *recs = PyList_New(0);
    kb_sys_cpu sys;
    int64_t t = kb_now_ns();
    kb_read_sys_cpu(&sys);
    for (Py_ssize_t i = 0; recs && i < n; i++) {
        kb_cpu_rec r;
        kb_read_pid_cpu(pa[i], 0, &r);
        PyObject *o = rec_obj(&r);
        if (!o || PyList_Append(recs, o) < 0)
            Py_CLEAR(recs);
        Py_XDECREF(o);
        if (!recs || !threads || !r.ok)
            continue;
        char dpath[64];
        snprintf(dpath, sizeof(dpath), "/proc/%d/task", pa[i]);
        DIR *d = opendir(dpath);
        struct dirent *de;
        while (d && recs && (de = readdir(d))) {
            int tid = atoi(de->d_name);
            if (tid <= 0)
                continue;
            kb_cpu_rec tr;
            kb_read_pid_cpu(pa[i], tid, &tr);
            if (!tr.ok)
                continue; /* a thread that ended between readdir and read */
            PyObject *to = rec_obj(&tr);
            if (!to || PyList_Append(recs, to) < 0)
                Py_CLEAR(recs);
            Py_XDECREF(to);
        }
        if (d)
            closedir(d);
    }
    free(pa);
    if (!recs)
        return NULL;
    return Py_BuildValue("(LNN)", (long long)t, sys_obj(&sys), recs);
}

/* ------------------------------------------------------------ the sampler */

typedef struct {
    int64_t t;
    kb_sys_cpu sys;
} kb_sample_head;

typedef struct {
    PyObject_HEAD int *pids;
    Py_ssize_t npids;
    double interval_s;
    pthread_t thread;
    int started;
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* samples: heads[k] and recs[k * npids .. (k+1) * npids) */
    kb_sample_head *heads;
    kb_cpu_rec *recs;
    size_t n, cap, max_samples;
} SamplerObject;

/** Take one sample into the arrays (grows them; drops samples past max_samples). */
static void take_sample(SamplerObject *o) {
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
    kb_read_sys_cpu(&o->heads[o->n].sys);
    for (Py_ssize_t i = 0; i < o->npids; i++)
        kb_read_pid_cpu(o->pids[i], 0, &o->recs[o->n * (size_t)o->npids + (size_t)i]);
    o->n++;
}

static void *sampler_main(void *arg) {
    SamplerObject *o = arg;
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

static PyObject *sampler_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"pids", "interval", "max_samples", NULL};
    PyObject *pids;
    double interval = 1.0;
    long long max_samples = 1000000;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|dL:ProcSampler", kwlist, &pids, &interval, &max_samples))
        return NULL;
    if (!(interval >= 0.001) || max_samples < 1) {
        PyErr_SetString(PyExc_ValueError, "interval must be >= 0.001 s and max_samples >= 1");
        return NULL;
    }
    SamplerObject *o = (SamplerObject *)type->tp_alloc(type, 0);
    if (!o)
        return NULL;
    if (pid_array(pids, &o->pids, &o->npids) < 0) {
        Py_DECREF(o);
        return NULL;
    }
    o->interval_s = interval;
    o->max_samples = (size_t)max_samples;
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
    return (PyObject *)o;
}

/** Stop and join the thread if it runs (GIL released while joining). */
static void sampler_join(SamplerObject *o) {
    if (!o->started)
        return;
    pthread_mutex_lock(&o->mu);
    atomic_store(&o->stop, 1);
    pthread_cond_signal(&o->cv);
    pthread_mutex_unlock(&o->mu);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(o->thread, NULL);
    Py_END_ALLOW_THREADS
    o->started = 0;
}

static void sampler_dealloc(SamplerObject *o) {
    sampler_join(o);
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    free(o->pids);
    free(o->heads);
    free(o->recs);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyObject *sampler_start(SamplerObject *o, PyObject *unused) {
    (void)unused;
    if (o->started || o->n) {
        PyErr_SetString(PyExc_RuntimeError, "a ProcSampler starts once");
        return NULL;
    }
    atomic_store(&o->stop, 0);
    int rc = pthread_create(&o->thread, NULL, sampler_main, o);
    if (rc) {
        PyErr_Format(PyExc_OSError, "cannot start the sampler thread: %s", strerror(rc));
        return NULL;
    }
    o->started = 1;
    Py_RETURN_NONE;
}

static PyObject *sampler_stop(SamplerObject *o, PyObject *unused) {
    (void)unused;
    sampler_join(o);
    PyObject *out = PyList_New(0);
    for (size_t k = 0; out && k < o->n; k++) {
        PyObject *recs = PyList_New(o->npids);
        for (Py_ssize_t i = 0; recs && i < o->npids; i++) {
            PyObject *r = rec_obj(&o->recs[k * (size_t)o->npids + (size_t)i]);
            if (!r) {
                Py_CLEAR(recs);
                break;
            }
            PyList_SET_ITEM(recs, i, r);
        }
        PyObject *s = recs ? Py_BuildValue("(LNN)", (long long)o->heads[k].t, sys_obj(&o->heads[k].sys), recs) : NULL;
        if (!s || PyList_Append(out, s) < 0)
            Py_CLEAR(out);
        Py_XDECREF(s);
    }
    return out;
}

static PyMethodDef sampler_methods[] = {
    {"start", (PyCFunction)sampler_start, METH_NOARGS, "start(): begin sampling in a background thread"},
    {"stop", (PyCFunction)sampler_stop, METH_NOARGS,
     "stop() -> list[(t_ns, system, records)]: stop the thread and return every sample"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SamplerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kbench._native.ProcSampler",
    .tp_basicsize = sizeof(SamplerObject),
    .tp_dealloc = (destructor)sampler_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ProcSampler(pids, interval=1.0, max_samples=1000000): samples /proc CPU counters in a C thread.",
    .tp_methods = sampler_methods,
    .tp_new = sampler_new,
};

static PyMethodDef methods[] = {
    {"proc_snapshot", (PyCFunction)(void (*)(void))py_snapshot, METH_VARARGS | METH_KEYWORDS, snapshot_doc},
    {NULL, NULL, 0, NULL},
};

int kb_procstat_init(PyObject *m) {
    if (PyType_Ready(&SamplerType) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "ProcSampler", (PyObject *)&SamplerType) < 0)
        return -1;
    return PyModule_AddFunctions(m, methods);
}
