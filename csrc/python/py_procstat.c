/*
 * py_procstat.c - proc_snapshot() and the ProcSampler type over csrc/core/procstat.c.
 */
#include "py_procstat.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "procstat.h"
#include "py_error.h"

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
    kb_read_sys_cpu(&sys, NULL); /* unreadable: ok = 0, reported as data (None) */
    for (Py_ssize_t i = 0; recs && i < n; i++) {
        kb_cpu_rec r;
        kb_read_pid_cpu(pa[i], 0, &r, NULL); /* vanished: ok = 0, reported as data */
        PyObject *o = rec_obj(&r);
        if (!o || PyList_Append(recs, o) < 0)
            Py_CLEAR(recs);
        Py_XDECREF(o);
        if (!recs || !threads || !r.ok)
            continue;
        kb_cpu_rec *tr = NULL;
        size_t nt = 0;
        kb_read_task_cpu(pa[i], &tr, &nt, NULL); /* unlistable: no thread rows */
        for (size_t k = 0; recs && k < nt; k++) {
            PyObject *to = rec_obj(&tr[k]);
            if (!to || PyList_Append(recs, to) < 0)
                Py_CLEAR(recs);
            Py_XDECREF(to);
        }
        free(tr);
    }
    free(pa);
    if (!recs)
        return NULL;
    return Py_BuildValue("(LNN)", (long long)t, sys_obj(&sys), recs);
}

/* ------------------------------------------------------------ the sampler */

typedef struct {
    PyObject_HEAD kb_sampler s;
    int ready; /* s was initialised */
} SamplerObject;

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
    int *pa;
    Py_ssize_t n;
    if (pid_array(pids, &pa, &n) < 0)
        return NULL;
    SamplerObject *o = (SamplerObject *)type->tp_alloc(type, 0);
    if (!o) {
        free(pa);
        return NULL;
    }
    kb_sampler_init(&o->s, pa, (size_t)n, interval, (size_t)max_samples);
    o->ready = 1;
    return (PyObject *)o;
}

/** Stop and join the thread if it runs (GIL released while joining). */
static void sampler_join(SamplerObject *o) {
    if (!o->s.started)
        return;
    Py_BEGIN_ALLOW_THREADS
    kb_sampler_join(&o->s);
    Py_END_ALLOW_THREADS
}

static void sampler_dealloc(SamplerObject *o) {
    if (o->ready) {
        sampler_join(o);
        kb_sampler_free(&o->s);
    }
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyObject *sampler_start(SamplerObject *o, PyObject *unused) {
    (void)unused;
    if (o->s.started || o->s.n) {
        PyErr_SetString(PyExc_RuntimeError, "a ProcSampler starts once");
        return NULL;
    }
    kb_error err = KB_ERROR_INIT;
    if (kb_sampler_start(&o->s, &err) < 0)
        return kb_py_raise(PyExc_OSError, &err);
    Py_RETURN_NONE;
}

static PyObject *sampler_stop(SamplerObject *o, PyObject *unused) {
    (void)unused;
    sampler_join(o);
    const kb_sampler *s = &o->s;
    PyObject *out = PyList_New(0);
    for (size_t k = 0; out && k < s->n; k++) {
        PyObject *recs = PyList_New((Py_ssize_t)s->npids);
        for (size_t i = 0; recs && i < s->npids; i++) {
            PyObject *r = rec_obj(&s->recs[k * s->npids + i]);
            if (!r) {
                Py_CLEAR(recs);
                break;
            }
            PyList_SET_ITEM(recs, (Py_ssize_t)i, r);
        }
        PyObject *t = recs ? Py_BuildValue("(LNN)", (long long)s->heads[k].t, sys_obj(&s->heads[k].sys), recs) : NULL;
        if (!t || PyList_Append(out, t) < 0)
            Py_CLEAR(out);
        Py_XDECREF(t);
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

int kb_py_procstat_init(PyObject *m) {
    if (PyType_Ready(&SamplerType) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "ProcSampler", (PyObject *)&SamplerType) < 0)
        return -1;
    return PyModule_AddFunctions(m, methods);
}
