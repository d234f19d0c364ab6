/*
 * py_entropy.c - entropy(data): Shannon entropy of a buffer, GIL released while counting.
 */
#include "py_entropy.h"

#include "corpusscan.h"
#include "entropy.h"

static PyObject *py_entropy(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer in;
    if (!PyArg_ParseTuple(args, "y*:entropy", &in))
        return NULL;
    double h;
    Py_BEGIN_ALLOW_THREADS
    h = kb_entropy(in.buf, (size_t)in.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    return PyFloat_FromDouble(h);
}

static PyObject *py_lenprefixed_scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer in;
    unsigned long long max_records, max_record;
    if (!PyArg_ParseTuple(args, "y*KK:lenprefixed_scan", &in, &max_records, &max_record))
        return NULL;
    size_t count = 0, at = 0;
    uint64_t n = 0;
    kb_scan_status st;
    Py_BEGIN_ALLOW_THREADS
    st = kb_lenprefixed_scan(in.buf, (size_t)in.len, (size_t)max_records, (uint64_t)max_record, &count, &at, &n);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    return Py_BuildValue("(inKK)", (int)st, (Py_ssize_t)count, (unsigned long long)at, (unsigned long long)n);
}

/* lenprefixed_records(data, count): the first count records as bytes (the caller scanned them with
 * lenprefixed_scan; every bound is checked again here, an overrun raising ValueError) */
static PyObject *py_lenprefixed_records(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer in;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "y*n:lenprefixed_records", &in, &count))
        return NULL;
    /* every record takes at least its 4-byte prefix: a count the data cannot hold allocates nothing */
    int fits = count >= 0 && count <= in.len / 4;
    PyObject *out = fits ? PyList_New(count) : NULL;
    if (!fits)
        PyErr_Format(PyExc_ValueError, "lenprefixed_records: count %zd is not between 0 and %zd (the data's bytes / 4)",
                     count, in.len / 4);
    const uint8_t *b = in.buf;
    size_t len = (size_t)in.len, off = 0;
    for (Py_ssize_t i = 0; out && i < count; i++) {
        if (len - off < 4) {
            PyErr_Format(PyExc_ValueError, "lenprefixed_records: truncated length prefix at byte %zu", off);
            Py_CLEAR(out);
            break;
        }
        size_t n = ((size_t)b[off] << 24) | ((size_t)b[off + 1] << 16) | ((size_t)b[off + 2] << 8) | (size_t)b[off + 3];
        if (n > len - off - 4) {
            PyErr_Format(PyExc_ValueError, "lenprefixed_records: the record at byte %zu claims %zu bytes", off, n);
            Py_CLEAR(out);
            break;
        }
        PyObject *r = PyBytes_FromStringAndSize((const char *)b + off + 4, (Py_ssize_t)n);
        if (!r) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, r);
        off += 4 + n;
    }
    PyBuffer_Release(&in);
    return out;
}

static PyMethodDef methods[] = {
    {"entropy", py_entropy, METH_VARARGS, "entropy(data) -> float: Shannon entropy in bits per byte"},
    {"lenprefixed_scan", py_lenprefixed_scan, METH_VARARGS,
     "lenprefixed_scan(data, max_records, max_record) -> (status, count, at, n): walk 4-byte big-endian\n"
     "length-prefixed records without making them; status 0 ok, 1 more than max_records (at: the first\n"
     "over), 2 a record of n > max_record bytes at at, 3 a truncated prefix at at, 4 the record at at\n"
     "claims n bytes, more than remain (GIL released)"},
    {"lenprefixed_records", py_lenprefixed_records, METH_VARARGS,
     "lenprefixed_records(data, count) -> list[bytes]: the first count 4-byte big-endian length-prefixed\n"
     "records of data (scanned first with lenprefixed_scan; a bound that does not hold raises ValueError)"},
    {NULL, NULL, 0, NULL},
};

int kb_py_entropy_init(PyObject *m) { return PyModule_AddFunctions(m, methods); }
