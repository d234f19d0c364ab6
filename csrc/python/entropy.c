/*
 * entropy.c - Shannon entropy of a buffer, GIL released while counting.
 */
#include "entropy.h"

#include <math.h>
#include <string.h>

void kb_byte_histogram(const uint8_t *buf, size_t n, uint64_t counts[256]) {
    /* Four interleaved tables hide the store-to-load dependency. */
    uint64_t t[4][256];
    memset(t, 0, sizeof(t));
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        t[0][buf[i]]++;
        t[1][buf[i + 1]]++;
        t[2][buf[i + 2]]++;
        t[3][buf[i + 3]]++;
    }
    for (; i < n; i++)
        t[0][buf[i]]++;
    for (int b = 0; b < 256; b++)
        counts[b] = t[0][b] + t[1][b] + t[2][b] + t[3][b];
}

double kb_entropy(const uint8_t *buf, size_t n) {
    if (n == 0)
        return 0.0;
    uint64_t c[256];
    kb_byte_histogram(buf, n, c);
    double h = 0.0;
    for (int b = 0; b < 256; b++) {
        if (c[b]) {
            double p = (double)c[b] / (double)n;
            h -= p * log2(p);
        }
    }
    return h;
}

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

static PyMethodDef methods[] = {
    {"entropy", py_entropy, METH_VARARGS, "entropy(data) -> float: Shannon entropy in bits per byte"},
    {NULL, NULL, 0, NULL},
};

int kb_entropy_init(PyObject *m) { return PyModule_AddFunctions(m, methods); }
