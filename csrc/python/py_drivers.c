/*
 * py_drivers.c - Python types over the producer and consumer loops.
 *
 * A driver object owns its inputs (copied strings, held buffers) and its
 * histograms; run() may be called once, releases the GIL for the whole run
 * and returns a dict of counters plus Histogram objects.  stop() only sets an
 * atomic flag, so it is safe from another thread or a signal handler's
 * Python code.
 */
#include "py_drivers.h"

#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "producer.h"
#include "py_histogram.h"
#include "py_kafka_util.h"

/** A dict error name -> count from e. */
static PyObject *errdict(const kb_errcount *e) {
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < e->n; i++) {
        PyObject *v = PyLong_FromLongLong(e->count[i]);
        if (!v || PyDict_SetItemString(d, rd_kafka_err2name((rd_kafka_resp_err_t)e->code[i]), v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    if (d && e->other) {
        PyObject *v = PyLong_FromLongLong(e->other);
        if (!v || PyDict_SetItemString(d, "OTHER", v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

/** Move *h into a Histogram object (or None when NULL); *h becomes NULL. */
static PyObject *take_hist(kb_hist **h) {
    if (!*h)
        Py_RETURN_NONE;
    kb_hist *x = *h;
    *h = NULL;
    return kb_py_hist_wrap(x);
}

/**
 * The series as a list of dicts {start_ns, end_ns, sent, acked, failed, bytes, hist} (hist: a
 * Histogram of the interval), or None when it was not recorded; `oom` adds a last dict
 * {"truncated": True} when a close ran out of memory.
 */
static PyObject *intervals_list(const kb_intervals *iv) {
    if (!iv->width_ns)
        Py_RETURN_NONE;
    PyObject *l = PyList_New(0);
    for (size_t k = 0; l && k < iv->n; k++) {
        const kb_interval *r = &iv->rows[k];
        kb_hist *h = kb_hist_new();
        if (!h) {
            Py_DECREF(l);
            return PyErr_NoMemory();
        }
        kb_iv_hist(iv, k, h);
        PyObject *d = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:N}", "start_ns", (long long)r->start_ns, "end_ns",
                                    (long long)r->end_ns, "sent", (long long)r->sent, "acked", (long long)r->acked,
                                    "failed", (long long)r->failed, "bytes", (long long)r->bytes, "hist",
                                    kb_py_hist_wrap(h));
        if (!d || PyList_Append(l, d) < 0)
            Py_CLEAR(l);
        Py_XDECREF(d);
    }
    if (l && iv->oom) {
        PyObject *d = Py_BuildValue("{s:O}", "truncated", Py_True);
        if (!d || PyList_Append(l, d) < 0)
            Py_CLEAR(l);
        Py_XDECREF(d);
    }
    return l;
}

/* ------------------------------------------------------------------ Producer */

/**
 * The per-thread CPU window of a run as a dict of seconds (None when it was
 * not taken): usr_s/sys_s of the whole process, client_* of the client
 * library's threads, loadgen_* of every other thread, loop_* of the loop
 * thread alone, wall_s; start_ns (CLOCK_MONOTONIC) where the window begins.
 */
static PyObject *thread_cpu_window(const kb_thread_cpu *a, const kb_thread_cpu *b) {
    if (!a->ok || !b->ok)
        Py_RETURN_NONE;
    return Py_BuildValue("{s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:i,s:L}", "usr_s", b->proc_usr - a->proc_usr, "sys_s",
                         b->proc_sys - a->proc_sys, "wall_s", (double)(b->t_ns - a->t_ns) / 1e9, "client_usr_s",
                         b->client_usr - a->client_usr, "client_sys_s", b->client_sys - a->client_sys,
                         "loadgen_usr_s", b->other_usr - a->other_usr, "loadgen_sys_s", b->other_sys - a->other_sys,
                         "loop_usr_s", b->loop_usr - a->loop_usr, "loop_sys_s", b->loop_sys - a->loop_sys,
                         "client_threads", b->client_threads, "start_ns", (long long)a->t_ns);
}

typedef struct {
    PyObject_HEAD kb_producer *p;
    Py_buffer payload, offsets;
    int have_payload, have_offsets;
    atomic_int used;
} ProducerObject;

static void producer_dealloc(ProducerObject *o) {
    if (o->p) {
        kb_props_free(&o->p->props);
        free(o->p->topic);
        free((char *)o->p->stats_path);
        free(o->p->service);
        free(o->p->delay);
        free(o->p->corrected);
        kb_iv_free(&o->p->iv);
        free(o->p);
    }
    if (o->have_payload)
        PyBuffer_Release(&o->payload);
    if (o->have_offsets)
        PyBuffer_Release(&o->offsets);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyObject *producer_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"props",   "topic",     "payload",       "offsets",         "mode",  "rate",
                             "count",   "duration",  "keys",          "nkeys",           "partition", "run_id",
                             "stats_path", "flush_timeout", "connect_timeout", "header_sample", "tick",
                             "cpu_skip", "seq_base", "interval", "latency_skip", NULL};
    PyObject *props;
    const char *topic, *mode = "saturated", *keys = "none", *stats = NULL;
    PyObject *payload, *offsets;
    double rate = 0, duration = 0, flush_to = 30, conn_to = 10, tick = KB_DEFAULT_TICK_NS / 1e9, cpu_skip = -1,
           interval = 0, latency_skip = 0;
    long long count = 0, nkeys = 0, run_id = 0, header_sample = 1, seq_base = 0;
    int partition = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!sOO|sdLdsLiLzddLddLdd:Producer", kwlist, &PyDict_Type, &props, &topic,
                                     &payload, &offsets, &mode, &rate, &count, &duration, &keys, &nkeys, &partition,
                                     &run_id, &stats, &flush_to, &conn_to, &header_sample, &tick, &cpu_skip, &seq_base,
                                     &interval, &latency_skip))
        return NULL;
    ProducerObject *o = (ProducerObject *)type->tp_alloc(type, 0);
    if (!o)
        return NULL;
    o->p = calloc(1, sizeof(kb_producer));
    if (!o->p) {
        Py_DECREF(o);
        return PyErr_NoMemory();
    }
    kb_producer *p = o->p;
    if (kb_py_props(props, &p->props) < 0)
        goto fail;
    if (PyObject_GetBuffer(payload, &o->payload, PyBUF_SIMPLE) < 0)
        goto fail;
    o->have_payload = 1;
    if (PyObject_GetBuffer(offsets, &o->offsets, PyBUF_SIMPLE) < 0)
        goto fail;
    o->have_offsets = 1;
    if (o->offsets.len % 8 || o->offsets.len < 16) {
        PyErr_SetString(PyExc_ValueError, "offsets must hold n+1 >= 2 int64 values (array('q'))");
        goto fail;
    }
    p->payload = o->payload.buf;
    p->offsets = o->offsets.buf;
    p->nrec = (size_t)(o->offsets.len / 8 - 1);
    if (p->offsets[0] < 0 || p->offsets[p->nrec] > o->payload.len) {
        PyErr_SetString(PyExc_ValueError, "offsets run outside the payload");
        goto fail;
    }
    for (size_t i = 0; i < p->nrec; i++)
        if (p->offsets[i + 1] < p->offsets[i]) {
            PyErr_Format(PyExc_ValueError, "offsets must not decrease (index %zu)", i);
            goto fail;
        }
    if (strcmp(mode, "fixed-rate") == 0)
        p->mode = KB_MODE_FIXED_RATE;
    else if (strcmp(mode, "saturated") == 0)
        p->mode = KB_MODE_SATURATED;
    else {
        PyErr_Format(PyExc_ValueError, "unknown mode '%s'; use fixed-rate or saturated", mode);
        goto fail;
    }
    if (p->mode == KB_MODE_FIXED_RATE && !(rate > 0)) {
        PyErr_Format(PyExc_ValueError, "fixed-rate needs rate > 0 messages/s, got %g", rate);
        goto fail;
    }
    if (header_sample < 0) {
        PyErr_Format(PyExc_ValueError, "header_sample must be >= 0 (0 = no kb header), got %lld", header_sample);
        goto fail;
    }
    if (!(tick >= 0) || tick > 1.0) {
        PyErr_Format(PyExc_ValueError, "tick must be in 0..1 s (0 = the default %g s), got %g",
                     KB_DEFAULT_TICK_NS / 1e9, tick);
        goto fail;
    }
    if (!(interval >= 0) || interval > 3600) {
        PyErr_Format(PyExc_ValueError, "interval must be in 0..3600 s (0 = no time series), got %g", interval);
        goto fail;
    }
    if (!(latency_skip >= 0) || latency_skip > 3600) {
        PyErr_Format(PyExc_ValueError, "latency_skip must be in 0..3600 s (0 = every message), got %g", latency_skip);
        goto fail;
    }
    p->latency_skip_ns = (int64_t)(latency_skip * 1e9);
    p->interval_ns = (int64_t)(interval * 1e9);
    p->header_sample = header_sample;
    p->tick_ns = (int64_t)(tick * 1e9);
    p->cpu_skip_s = cpu_skip;
    if (count <= 0 && !(duration > 0)) {
        PyErr_SetString(PyExc_ValueError, "give count > 0 or duration > 0");
        goto fail;
    }
    if (strcmp(keys, "none") == 0)
        p->key_policy = KB_KEYS_NONE;
    else if (strcmp(keys, "round-robin") == 0)
        p->key_policy = KB_KEYS_ROUND_ROBIN;
    else if (strcmp(keys, "random") == 0)
        p->key_policy = KB_KEYS_RANDOM;
    else {
        PyErr_Format(PyExc_ValueError, "unknown key policy '%s'; use none, round-robin or random", keys);
        goto fail;
    }
    if (p->key_policy != KB_KEYS_NONE && (nkeys < 1 || nkeys > 10000000)) {
        PyErr_Format(PyExc_ValueError, "key policy '%s' needs nkeys in 1..10000000, got %lld", keys, nkeys);
        goto fail;
    }
    if (!(flush_to > 0) || !(conn_to > 0)) {
        PyErr_SetString(PyExc_ValueError, "flush_timeout and connect_timeout must be > 0");
        goto fail;
    }
    p->topic = strdup(topic);
    p->stats_path = stats ? strdup(stats) : NULL;
    p->rate = rate;
    p->count = count;
    p->duration_s = duration;
    p->nkeys = nkeys;
    p->partition = partition;
    p->run_id = (uint64_t)run_id;
    if (seq_base < 0) {
        PyErr_SetString(PyExc_ValueError, "seq_base must be >= 0");
        goto fail;
    }
    p->seq_base = seq_base;
    p->flush_timeout_s = flush_to;
    p->connect_timeout_s = conn_to;
    p->service = kb_hist_new();
    if (p->mode == KB_MODE_FIXED_RATE) {
        p->delay = kb_hist_new();
        p->corrected = kb_hist_new();
    }
    if (!p->topic || !p->service || (p->mode == KB_MODE_FIXED_RATE && (!p->delay || !p->corrected))) {
        PyErr_NoMemory();
        goto fail;
    }
    return (PyObject *)o;
fail:
    Py_DECREF(o);
    return NULL;
}

static PyObject *producer_run(ProducerObject *o, PyObject *unused) {
    (void)unused;
    if (atomic_exchange(&o->used, 1)) {
        PyErr_SetString(PyExc_RuntimeError, "a Producer runs once; make a new one");
        return NULL;
    }
    kb_producer *p = o->p;
    int rc;
    kb_error err = KB_ERROR_INIT;
    Py_BEGIN_ALLOW_THREADS
    rc = kb_producer_run(p, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return kb_py_kafka_error(&p->props, &err);
    PyObject *cpu = thread_cpu_window(&p->cpu_start, &p->cpu_end);
    if (!cpu)
        return NULL;
    if (cpu != Py_None) { /* the messages of the window: delivered - delivered_at_start */
        PyObject *d0 = PyLong_FromLongLong((long long)p->win_delivered0);
        int bad = !d0 || PyDict_SetItemString(cpu, "delivered_at_start", d0) < 0;
        Py_XDECREF(d0);
        if (bad) {
            Py_DECREF(cpu);
            return NULL;
        }
    }
    PyObject *ivs = intervals_list(&p->iv);
    kb_iv_free(&p->iv);
    if (!ivs) {
        Py_DECREF(cpu);
        return NULL;
    }
    return Py_BuildValue(
        "{s:N,s:N,s:L,s:L,s:L,s:L,s:s,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:O,s:N,s:N,s:N,s:N,s:N}", "cpu",
        cpu, "intervals", ivs, "header_sample", (long long)p->header_sample, "sampled", (long long)p->sampled, "wakes",
        (long long)p->wakes, "tick_ns", (long long)(p->tick_ns > 0 ? p->tick_ns : KB_DEFAULT_TICK_NS), "mode",
        p->mode == KB_MODE_FIXED_RATE ? "fixed-rate" : "saturated", "sent", (long long)p->sent, "delivered",
        (long long)p->delivered, "failed", (long long)p->failed, "undelivered", (long long)p->undelivered, "bytes",
        (long long)p->bytes, "queue_full", (long long)p->queue_full, "stats_count", (long long)p->stats_count, "t0_ns",
        (long long)p->t0, "first_send_ns", (long long)p->t_first_send, "last_send_ns", (long long)p->t_last_send,
        "last_due_ns", (long long)p->t_last_due, "end_ns", (long long)p->t_end, "dr_failed",
        (long long)p->dr_failed, "stopped", p->stopped ? Py_True : Py_False, "delivery_errors",
        errdict(&p->dr_errors), "client_errors", errdict(&p->client_errors), "service", take_hist(&p->service),
        "delay", take_hist(&p->delay), "corrected", take_hist(&p->corrected));
}

static PyObject *producer_stop(ProducerObject *o, PyObject *unused) {
    (void)unused;
    atomic_store(&o->p->stop, 1);
    Py_RETURN_NONE;
}

static PyMethodDef producer_methods[] = {
    {"run", (PyCFunction)producer_run, METH_NOARGS,
     "run() -> dict: produce until count/duration (or stop()), flush, and return counters and histograms"},
    {"stop", (PyCFunction)producer_stop, METH_NOARGS, "stop(): ask a running run() to finish cleanly"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProducerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kbench._native.Producer",
    .tp_basicsize = sizeof(ProducerObject),
    .tp_dealloc = (destructor)producer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Producer(props, topic, payload, offsets, mode='saturated', rate=0, count=0, duration=0,\n"
              "keys='none', nkeys=0, partition=-1, run_id=0, stats_path=None, flush_timeout=30,\n"
              "connect_timeout=10, header_sample=1, tick=0.002, cpu_skip=-1, seq_base=0, interval=0): the C producer\n"
              "loop "
              "(see kbench.kafka.drivers).",
    .tp_methods = producer_methods,
    .tp_new = producer_new,
};

/* ------------------------------------------------------------------ Consumer */

typedef struct {
    PyObject_HEAD kb_consumer *c;
    atomic_int used;
} ConsumerObject;

static void consumer_dealloc(ConsumerObject *o) {
    if (o->c) {
        kb_props_free(&o->c->props);
        kb_consumer_free_parts(o->c);
        free(o->c->stats);
        free(o->c->topic);
        free(o->c->e2e);
        kb_iv_free(&o->c->iv);
        free(o->c);
    }
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyObject *consumer_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"props",   "topic",           "run_id",        "expected", "max_records",
                             "timeout", "connect_timeout", "header_sample", "group",    "from_beginning",
                             "interval", "latency_skip", "latency_from_seq", "start", "start_value", "cpu_window", "hold", NULL};
    PyObject *props;
    const char *topic, *start = "end";
    long long run_id = 0, expected = 0, max_records = 0, header_sample = 1, latency_from_seq = 0, start_value = 0;
    double timeout = 60, conn_to = 10, interval = 0, latency_skip = 0;
    int group = 0, from_beginning = 0, cpu_window = 0, hold = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!s|LLLddLppddLsLpp:Consumer", kwlist, &PyDict_Type, &props, &topic, &run_id,
                                     &expected, &max_records, &timeout, &conn_to, &header_sample, &group,
                                     &from_beginning, &interval, &latency_skip, &latency_from_seq, &start,
                                     &start_value, &cpu_window, &hold))
        return NULL;
    if (hold && !group) {
        PyErr_SetString(PyExc_ValueError, "hold is for a group member (group=True): it delays the subscribe");
        return NULL;
    }
    int start_mode = !strcmp(start, "end")         ? KB_START_END
                     : !strcmp(start, "beginning") ? KB_START_BEGINNING
                     : !strcmp(start, "offset")    ? KB_START_OFFSET
                     : !strcmp(start, "timestamp") ? KB_START_TIMESTAMP
                                                   : -1;
    if (start_mode < 0 || start_value < 0 || (group && start_mode != KB_START_END)) {
        PyErr_SetString(PyExc_ValueError, "start must be end, beginning, offset or timestamp (assign mode only; a "
                                          "group starts where it committed, or with from_beginning), start_value >= 0");
        return NULL;
    }
    if (!(timeout > 0) || !(conn_to > 0) || expected < 0 || max_records < 0 || header_sample < 0 ||
        !(interval >= 0) || interval > 3600 || !(latency_skip >= 0) || latency_skip > 3600 || latency_from_seq < 0) {
        PyErr_SetString(PyExc_ValueError, "timeout and connect_timeout must be > 0, expected/max_records/header_sample/"
                                          "latency_from_seq >= 0, interval and latency_skip in 0..3600 s");
        return NULL;
    }
    ConsumerObject *o = (ConsumerObject *)type->tp_alloc(type, 0);
    if (!o)
        return NULL;
    o->c = calloc(1, sizeof(kb_consumer));
    if (!o->c) {
        Py_DECREF(o);
        return PyErr_NoMemory();
    }
    kb_consumer *c = o->c;
    if (kb_py_props(props, &c->props) < 0) {
        Py_DECREF(o);
        return NULL;
    }
    c->topic = strdup(topic);
    c->e2e = kb_hist_new();
    c->run_id = (uint64_t)run_id;
    c->expected = expected;
    c->header_sample = header_sample;
    c->max_records = max_records;
    c->timeout_s = timeout;
    c->connect_timeout_s = conn_to;
    c->interval_ns = (int64_t)(interval * 1e9);
    c->latency_skip_ns = (int64_t)(latency_skip * 1e9);
    c->latency_from_seq = latency_from_seq;
    c->group = group;
    c->from_beginning = from_beginning;
    c->start_mode = start_mode;
    c->start_value = start_value;
    c->cpu_window = cpu_window;
    c->hold = hold;
    if (!c->topic || !c->e2e) {
        Py_DECREF(o);
        return PyErr_NoMemory();
    }
    return (PyObject *)o;
}

/** d[key] = v; 0 or -1 with an exception set. */
static int set_ll(PyObject *d, const char *key, int64_t v) {
    PyObject *o = PyLong_FromLongLong((long long)v);
    int rc = o ? PyDict_SetItemString(d, key, o) : -1;
    Py_XDECREF(o);
    return rc;
}

/** d[key] = the string v, or None; 0 or -1 with an exception set. */
static int set_str(PyObject *d, const char *key, const char *v) {
    PyObject *o = v ? PyUnicode_DecodeUTF8(v, (Py_ssize_t)strlen(v), "replace") : Py_NewRef(Py_None);
    int rc = o ? PyDict_SetItemString(d, key, o) : -1;
    Py_XDECREF(o);
    return rc;
}

/** Group mode: one dict per partition (partition, start, end, records, bytes, runs as [lo, hi) pairs); None otherwise. */
static PyObject *group_parts(const kb_consumer *c) {
    if (!c->group)
        Py_RETURN_NONE;
    PyObject *l = PyList_New(c->nparts);
    for (int i = 0; l && i < c->nparts; i++) {
        const kb_part_seen *p = &c->parts[i];
        PyObject *runs = PyList_New(p->nruns);
        for (int j = 0; runs && j < p->nruns; j++) {
            PyObject *r = Py_BuildValue("[LL]", (long long)p->runs[2 * j], (long long)p->runs[2 * j + 1]);
            if (!r) {
                Py_CLEAR(runs);
                break;
            }
            PyList_SET_ITEM(runs, j, r);
        }
        PyObject *e = runs ? Py_BuildValue("{s:i,s:L,s:L,s:L,s:L,s:N}", "partition", (int)p->partition, "start",
                                           (long long)p->start, "end", (long long)p->end, "records",
                                           (long long)p->records, "bytes", (long long)p->bytes, "runs", runs)
                           : NULL;
        if (!e) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, e);
    }
    return l;
}

static PyObject *consumer_run(ConsumerObject *o, PyObject *unused) {
    (void)unused;
    if (atomic_exchange(&o->used, 1)) {
        PyErr_SetString(PyExc_RuntimeError, "a Consumer runs once; make a new one");
        return NULL;
    }
    kb_consumer *c = o->c;
    int rc;
    kb_error err = KB_ERROR_INIT;
    Py_BEGIN_ALLOW_THREADS
    rc = kb_consumer_run(c, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        kb_consumer_free_parts(c);
        return kb_py_kafka_error(&c->props, &err);
    }
    PyObject *parts = group_parts(c);
    kb_consumer_free_parts(c);
    if (!parts)
        return NULL;
    PyObject *ivs = intervals_list(&c->iv);
    kb_iv_free(&c->iv);
    if (!ivs) {
        Py_DECREF(parts);
        return NULL;
    }
    PyObject *d = Py_BuildValue("{s:N,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:i,s:O,s:O,s:N,s:N}",
                         "intervals", ivs, "sampled", (long long)c->sampled, "samples_expected", (long long)c->samples_expected,
                         "samples_missing", (long long)c->samples_missing, "sample_duplicates",
                         (long long)c->sample_duplicates, "stored_records", (long long)c->stored_records, "records",
                         (long long)c->records, "bytes", (long long)c->bytes, "unique", (long long)c->unique,
                         "duplicates", (long long)c->duplicates, "out_of_range", (long long)c->out_of_range,
                         "foreign", (long long)c->foreign, "no_header", (long long)c->no_header, "start_ns",
                         (long long)c->t_start, "first_ns", (long long)c->t_first, "last_ns", (long long)c->t_last,
                         "end_ns", (long long)c->t_end, "partitions", (int)c->partitions, "timed_out",
                         c->timed_out ? Py_True : Py_False, "stopped", c->stopped ? Py_True : Py_False, "errors",
                         errdict(&c->errors), "e2e", take_hist(&c->e2e));
    if (!d || PyDict_SetItemString(d, "parts", parts) < 0 ||
        set_ll(d, "rebalances", c->rebalances) < 0 || set_ll(d, "commit_errors", c->commit_errors) < 0 ||
        set_ll(d, "loop_cpu_ns", c->loop_cpu_ns) < 0 || set_ll(d, "assigned_ns", c->t_assigned) < 0 ||
        set_ll(d, "stats_count", c->stats_count) < 0 || set_str(d, "stats", c->stats) < 0 ||
        set_ll(d, "win_records", c->win_records) < 0 || set_ll(d, "win_ns", c->win_ns) < 0 ||
        set_ll(d, "win_proc_cpu_ns", c->win_proc_cpu_ns) < 0 || set_ll(d, "win_loop_cpu_ns", c->win_loop_cpu_ns) < 0) {
        Py_XDECREF(d);
        Py_DECREF(parts);
        return NULL;
    }
    Py_DECREF(parts);
    return d;
}

static PyObject *consumer_stop(ConsumerObject *o, PyObject *unused) {
    (void)unused;
    atomic_store(&o->c->stop, 1);
    Py_RETURN_NONE;
}

static PyObject *consumer_release(ConsumerObject *o, PyObject *unused) {
    (void)unused;
    atomic_store(&o->c->go, 1);
    Py_RETURN_NONE;
}

static PyObject *consumer_ready(ConsumerObject *o, void *unused) {
    (void)unused;
    return PyBool_FromLong(atomic_load(&o->c->ready));
}

static PyMethodDef consumer_methods[] = {
    {"run", (PyCFunction)consumer_run, METH_NOARGS,
     "run() -> dict: assign at the end offsets, consume until all expected seen / max_records / timeout / stop()"},
    {"stop", (PyCFunction)consumer_stop, METH_NOARGS, "stop(): ask a running run() to finish cleanly"},
    {"release", (PyCFunction)consumer_release, METH_NOARGS,
     "release(): a holding group member (hold=True) subscribes now"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef consumer_getset[] = {
    {"ready", (getter)consumer_ready, NULL, "True once partitions are assigned (or the run failed)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ConsumerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kbench._native.Consumer",
    .tp_basicsize = sizeof(ConsumerObject),
    .tp_dealloc = (destructor)consumer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Consumer(props, topic, run_id=0, expected=0, max_records=0, timeout=60, connect_timeout=10,\n"
              "header_sample=1, interval=0):\n"
              "the C consumer loop (see kbench.drivers).",
    .tp_methods = consumer_methods,
    .tp_getset = consumer_getset,
    .tp_new = consumer_new,
};

/* ------------------------------------------------------------------ client validation */

static PyObject *py_client_level_range(PyObject *self, PyObject *args) {
    (void)self;
    const char *codec;
    if (!PyArg_ParseTuple(args, "s:client_level_range", &codec))
        return NULL;
    int lo = 0, hi = 0;
    kb_error err = KB_ERROR_INIT;
    if (kb_client_level_range(codec, &lo, &hi, &err) < 0)
        return kb_py_raise(PyExc_ValueError, &err);
    return Py_BuildValue("(ii)", lo, hi);
}

static PyMethodDef level_range_def = {
    "client_level_range", py_client_level_range, METH_VARARGS,
    "client_level_range(codec) -> (lo, hi): the compression.level values the linked librdkafka accepts for\n"
    "compression.codec = codec, asked of librdkafka (ValueError with its message when it refuses the codec)"};

static PyObject *py_client_property_known(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    if (!PyArg_ParseTuple(args, "s:client_property_known", &name))
        return NULL;
    int known = kb_client_property_known(name); /* a throw-away conf: microseconds, the GIL kept */
    if (known < 0)
        return PyErr_NoMemory();
    return PyBool_FromLong(known);
}

static PyObject *py_client_properties_table(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    char *table = kb_client_properties_table();
    if (!table)
        return PyErr_NoMemory();
    PyObject *s = PyUnicode_DecodeUTF8(table, (Py_ssize_t)strlen(table), "replace");
    free(table);
    return s;
}

static PyMethodDef conf_defs[] = {
    {"client_property_known", py_client_property_known, METH_VARARGS,
     "client_property_known(name) -> bool: whether the linked librdkafka knows the property (global or\n"
     "topic level), asked of librdkafka (a conf set of an unknown name fails)"},
    {"client_properties_table", py_client_properties_table, METH_NOARGS,
     "client_properties_table() -> str: librdkafka's table of every property it knows\n"
     "(rd_kafka_conf_properties_show, CONFIGURATION.md's form)"},
};

int kb_py_drivers_init(PyObject *m) {
    if (PyType_Ready(&ProducerType) < 0 || PyType_Ready(&ConsumerType) < 0)
        return -1;
    PyObject *name = PyModule_GetNameObject(m);
    PyObject *f = name ? PyCFunction_NewEx(&level_range_def, NULL, name) : NULL;
    Py_XDECREF(name);
    if (!f || PyModule_AddObject(m, "client_level_range", f) < 0) {
        Py_XDECREF(f);
        return -1;
    }
    for (size_t i = 0; i < sizeof(conf_defs) / sizeof(conf_defs[0]); i++) {
        PyObject *mod_name = PyModule_GetNameObject(m);
        PyObject *fn = mod_name ? PyCFunction_NewEx(&conf_defs[i], NULL, mod_name) : NULL;
        Py_XDECREF(mod_name);
        if (!fn || PyModule_AddObject(m, conf_defs[i].ml_name, fn) < 0) {
            Py_XDECREF(fn);
            return -1;
        }
    }
    if (PyModule_AddObjectRef(m, "Producer", (PyObject *)&ProducerType) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "Consumer", (PyObject *)&ConsumerType);
}
