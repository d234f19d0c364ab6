/*
 * py_histogram.c - Histogram type: record, merge, percentiles, buckets, CSV,
 * and a compact binary encoding (pickle uses it).
 *
 * Encoding: "KBH1", then little-endian int64 total, underflow, overflow, min,
 * max, double sum, uint32 number of non-zero counters, then (uint32 index,
 * int64 count) pairs.
 */
#include "py_histogram.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "py_error.h"

typedef struct {
    PyObject_HEAD kb_hist *h;
} HistObject;

static PyTypeObject HistType;

kb_hist *kb_hist_new(void) {
    kb_hist *h = malloc(sizeof(kb_hist));
    if (h)
        kb_hist_reset(h);
    return h;
}

PyObject *kb_py_hist_wrap(kb_hist *h) {
    HistObject *o = PyObject_New(HistObject, &HistType);
    if (!o) {
        free(h);
        return NULL;
    }
    o->h = h;
    return (PyObject *)o;
}

static PyObject *hist_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, ":Histogram", kwlist))
        return NULL;
    HistObject *o = (HistObject *)type->tp_alloc(type, 0);
    if (!o)
        return NULL;
    o->h = kb_hist_new();
    if (!o->h) {
        Py_DECREF(o);
        return PyErr_NoMemory();
    }
    return (PyObject *)o;
}

static void hist_dealloc(HistObject *o) {
    free(o->h);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyObject *hist_record(HistObject *o, PyObject *arg) {
    long long v = PyLong_AsLongLong(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    kb_hist_record(o->h, (int64_t)v);
    Py_RETURN_NONE;
}

static PyObject *hist_merge(HistObject *o, PyObject *arg) {
    if (!PyObject_TypeCheck(arg, &HistType)) {
        PyErr_SetString(PyExc_TypeError, "merge() takes a Histogram");
        return NULL;
    }
    kb_hist_merge(o->h, ((HistObject *)arg)->h);
    Py_RETURN_NONE;
}

static PyObject *hist_percentile(HistObject *o, PyObject *arg) {
    double p = PyFloat_AsDouble(arg);
    if (p == -1.0 && PyErr_Occurred())
        return NULL;
    if (!(p >= 0 && p <= 100)) {
        PyErr_Format(PyExc_ValueError, "percentile must be in [0, 100], got %g", p);
        return NULL;
    }
    int64_t v = kb_hist_percentile(o->h, p);
    if (v < 0)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(v);
}

static PyObject *hist_buckets(HistObject *o, PyObject *unused) {
    (void)unused;
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < KB_HIST_LEN; i++) {
        if (!o->h->counts[i])
            continue;
        PyObject *t = Py_BuildValue("(LLL)", (long long)kb_hist_lowest_at(i), (long long)kb_hist_highest_at(i),
                                    (long long)o->h->counts[i]);
        if (!t || PyList_Append(l, t) < 0)
            Py_CLEAR(l);
        Py_XDECREF(t);
    }
    return l;
}

static int put(char **p, const void *src, size_t n) {
    memcpy(*p, src, n);
    *p += n;
    return 0;
}

static PyObject *hist_encode(HistObject *o, PyObject *unused) {
    (void)unused;
    const kb_hist *h = o->h;
    uint32_t nz = 0;
    for (int i = 0; i < KB_HIST_LEN; i++)
        nz += h->counts[i] != 0;
    size_t len = 4 + 6 * 8 + 4 + (size_t)nz * 12;
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
    if (!b)
        return NULL;
    char *p = PyBytes_AS_STRING(b);
    put(&p, "KBH1", 4);
    put(&p, &h->total, 8);
    put(&p, &h->underflow, 8);
    put(&p, &h->overflow, 8);
    put(&p, &h->min, 8);
    put(&p, &h->max, 8);
    put(&p, &h->sum, 8);
    put(&p, &nz, 4);
    for (uint32_t i = 0; i < (uint32_t)KB_HIST_LEN; i++)
        if (h->counts[i]) {
            put(&p, &i, 4);
            put(&p, &h->counts[i], 8);
        }
    return b;
}

static PyObject *hist_decode(PyObject *cls, PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *ret = NULL;
    const char *p = b.buf;
    size_t n = (size_t)b.len;
    if (n < 56 || memcmp(p, "KBH1", 4) != 0) {
        PyErr_SetString(PyExc_ValueError, "not a kbench histogram encoding (bad magic or too short)");
        goto done;
    }
    kb_hist *h = kb_hist_new();
    if (!h) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(&h->total, p + 4, 8);
    memcpy(&h->underflow, p + 12, 8);
    memcpy(&h->overflow, p + 20, 8);
    memcpy(&h->min, p + 28, 8);
    memcpy(&h->max, p + 36, 8);
    memcpy(&h->sum, p + 44, 8);
    uint32_t nz;
    memcpy(&nz, p + 52, 4);
    if (n != 56 + (size_t)nz * 12) {
        free(h);
        PyErr_SetString(PyExc_ValueError, "kbench histogram encoding has the wrong length");
        goto done;
    }
    int64_t sum = 0;
    for (uint32_t k = 0; k < nz; k++) {
        uint32_t i;
        int64_t c;
        memcpy(&i, p + 56 + k * 12, 4);
        memcpy(&c, p + 60 + k * 12, 8);
        if (i >= (uint32_t)KB_HIST_LEN || c < 0) {
            free(h);
            PyErr_SetString(PyExc_ValueError, "kbench histogram encoding has a bad counter");
            goto done;
        }
        h->counts[i] += c;
        sum += c;
    }
    if (sum != h->total) {
        free(h);
        PyErr_SetString(PyExc_ValueError, "kbench histogram encoding: counters do not add up to the total");
        goto done;
    }
    ret = kb_py_hist_wrap(h);
    if (ret && (PyTypeObject *)cls != &HistType) {
        /* subclasses are not supported: keep it simple */
    }
done:
    PyBuffer_Release(&b);
    return ret;
}

static PyObject *hist_reduce(HistObject *o, PyObject *unused) {
    (void)unused;
    PyObject *enc = hist_encode(o, NULL);
    if (!enc)
        return NULL;
    PyObject *dec = PyObject_GetAttrString((PyObject *)&HistType, "decode");
    if (!dec) {
        Py_DECREF(enc);
        return NULL;
    }
    return Py_BuildValue("(N(N))", dec, enc);
}

static PyObject *hist_reset_m(HistObject *o, PyObject *unused) {
    (void)unused;
    kb_hist_reset(o->h);
    Py_RETURN_NONE;
}

static PyObject *get_count(HistObject *o, void *c) {
    (void)c;
    return PyLong_FromLongLong(o->h->total);
}
static PyObject *get_under(HistObject *o, void *c) {
    (void)c;
    return PyLong_FromLongLong(o->h->underflow);
}
static PyObject *get_over(HistObject *o, void *c) {
    (void)c;
    return PyLong_FromLongLong(o->h->overflow);
}
static PyObject *get_min(HistObject *o, void *c) {
    (void)c;
    if (!o->h->total)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(o->h->min);
}
static PyObject *get_max(HistObject *o, void *c) {
    (void)c;
    if (!o->h->total)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(o->h->max);
}
static PyObject *get_mean(HistObject *o, void *c) {
    (void)c;
    if (!o->h->total)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(kb_hist_mean(o->h));
}

static PyGetSetDef getset[] = {
    {"count", (getter)get_count, NULL, "in-range samples", NULL},
    {"underflow", (getter)get_under, NULL, "samples below 0 ns (not stored)", NULL},
    {"overflow", (getter)get_over, NULL, "samples above max_value (not stored)", NULL},
    {"min", (getter)get_min, NULL, "exact smallest in-range sample (ns) or None", NULL},
    {"max", (getter)get_max, NULL, "exact largest in-range sample (ns) or None", NULL},
    {"mean", (getter)get_mean, NULL, "mean of in-range samples (ns) or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef hist_methods[] = {
    {"record", (PyCFunction)hist_record, METH_O, "record(ns): add one sample"},
    {"merge", (PyCFunction)hist_merge, METH_O, "merge(other): add other's counts into this one"},
    {"percentile", (PyCFunction)hist_percentile, METH_O,
     "percentile(p) -> int | None: value (ns) at percentile p in [0, 100], None when empty"},
    {"buckets", (PyCFunction)hist_buckets, METH_NOARGS,
     "buckets() -> list[(low_ns, high_ns, count)]: the non-empty buckets, ascending"},
    {"encode", (PyCFunction)hist_encode, METH_NOARGS, "encode() -> bytes: compact lossless serialisation"},
    {"decode", (PyCFunction)hist_decode, METH_O | METH_CLASS, "Histogram.decode(bytes) -> Histogram"},
    {"reset", (PyCFunction)hist_reset_m, METH_NOARGS, "reset(): empty the histogram"},
    {"__reduce__", (PyCFunction)hist_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject HistType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kbench._native.Histogram",
    .tp_basicsize = sizeof(HistObject),
    .tp_dealloc = (destructor)hist_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Histogram(): log-linear latency histogram in ns (3 significant digits, 1 ns .. 2^36-1 ns,\n"
              "out-of-range samples counted in underflow/overflow).",
    .tp_methods = hist_methods,
    .tp_getset = getset,
    .tp_new = hist_new,
};

PyDoc_STRVAR(cost_doc, "histogram_record_cost(n=10_000_000, with_clock=False) -> float\n\n"
                       "Average ns to record one sample (with_clock: also read the monotonic clock).");

static PyObject *py_cost(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"n", "with_clock", NULL};
    long long n = 10000000;
    int wc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Lp:histogram_record_cost", kwlist, &n, &wc))
        return NULL;
    if (n <= 0) {
        PyErr_SetString(PyExc_ValueError, "n must be > 0");
        return NULL;
    }
    double r = 0;
    int rc;
    kb_error err = KB_ERROR_INIT;
    Py_BEGIN_ALLOW_THREADS
    rc = kb_hist_record_cost_ns((int64_t)n, wc, &r, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return kb_py_raise(PyExc_RuntimeError, &err);
    return PyFloat_FromDouble(r);
}

static PyObject *py_now_ns(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLongLong(kb_now_ns());
}

static PyMethodDef methods[] = {
    {"histogram_record_cost", (PyCFunction)(void (*)(void))py_cost, METH_VARARGS | METH_KEYWORDS, cost_doc},
    {"monotonic_ns", py_now_ns, METH_NOARGS, "monotonic_ns() -> int: the clock every kbench timestamp uses"},
    {NULL, NULL, 0, NULL},
};

int kb_py_histogram_init(PyObject *m) {
    if (PyType_Ready(&HistType) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "Histogram", (PyObject *)&HistType) < 0)
        return -1;
    if (PyModule_AddIntConstant(m, "HISTOGRAM_MAX_NS", (long)KB_HIST_MAX_NS) < 0)
        return -1;
    return PyModule_AddFunctions(m, methods);
}
