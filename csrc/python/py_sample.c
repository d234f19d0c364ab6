/*
 * py_sample.c - kbench._native.sample_records(): read a bounded sample of a
 * topic's records with the GIL released; librdkafka's messages become
 * kbench.KafkaError (secret values redacted by kafka_conf.c).
 */
#include "py_sample.h"

#include <stdint.h>

#include "py_kafka_util.h"
#include "sampler.h"

PyDoc_STRVAR(sample_doc,
             "sample_records(props, topic, max_records, max_bytes=1<<30, timeout=30.0) -> dict\n\n"
             "Read up to max_records records (keys + values at most max_bytes) from the beginning of every\n"
             "partition of topic, up to the high watermarks seen at the start.  Returns {'records':\n"
             "[(partition, offset, key|None, value|None)], 'partitions': int, 'available': int,\n"
             "'truncated': bool, 'timed_out': bool}.  Raises KafkaError when the topic cannot be read.");

static PyObject *bytes_or_none(const unsigned char *buf, size_t off, int64_t len) {
    if (len < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)buf + off, (Py_ssize_t)len);
}

static PyObject *py_sample_records(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"props", "topic", "max_records", "max_bytes", "timeout", NULL};
    PyObject *pd;
    const char *topic;
    Py_ssize_t max_records;
    Py_ssize_t max_bytes = (Py_ssize_t)1 << 30;
    double timeout = 30.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!sn|nd:sample_records", kwlist, &PyDict_Type, &pd, &topic,
                                     &max_records, &max_bytes, &timeout))
        return NULL;
    if (max_records < 1 || max_bytes < 1) {
        PyErr_SetString(PyExc_ValueError, "max_records and max_bytes must be >= 1");
        return NULL;
    }
    if (!(timeout > 0) || timeout > 86400) {
        PyErr_Format(PyExc_ValueError, "timeout must be in (0, 86400] seconds, got %g", timeout);
        return NULL;
    }
    kb_sample s = {0};
    s.topic = topic;
    s.max_records = (size_t)max_records;
    s.max_bytes = (size_t)max_bytes;
    s.timeout_s = timeout;
    if (kb_py_props(pd, &s.props) < 0) {
        kb_props_free(&s.props);
        return NULL;
    }
    int rc;
    kb_error err = KB_ERROR_INIT;
    Py_BEGIN_ALLOW_THREADS
    rc = kb_sample_run(&s, &err);
    Py_END_ALLOW_THREADS
    PyObject *out = NULL, *list = NULL;
    if (rc < 0) {
        kb_py_kafka_error(&s.props, &err);
        goto done;
    }
    list = PyList_New((Py_ssize_t)s.n);
    if (!list)
        goto done;
    for (size_t i = 0; i < s.n; i++) {
        const kb_sample_rec *r = &s.recs[i];
        PyObject *k = bytes_or_none(s.buf, r->key_off, r->key_len);
        PyObject *v = k ? bytes_or_none(s.buf, r->value_off, r->value_len) : NULL;
        PyObject *t = v ? Py_BuildValue("(iLNN)", r->partition, (long long)r->offset, k, v) : NULL;
        if (!t) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            Py_CLEAR(list);
            goto done;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    out = Py_BuildValue("{s:N,s:i,s:L,s:O,s:O}", "records", list, "partitions", s.partitions, "available",
                        (long long)s.available, "truncated", s.truncated ? Py_True : Py_False, "timed_out",
                        s.timed_out ? Py_True : Py_False);
    list = NULL;
done:
    Py_XDECREF(list);
    kb_sample_free(&s);
    kb_props_free(&s.props);
    return out;
}

static PyMethodDef methods[] = {
    {"sample_records", (PyCFunction)(void (*)(void))py_sample_records, METH_VARARGS | METH_KEYWORDS, sample_doc},
    {NULL, NULL, 0, NULL},
};

int kb_py_sample_init(PyObject *m) { return PyModule_AddFunctions(m, methods); }
