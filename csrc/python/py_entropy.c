/*
 * py_entropy.c - entropy(data): Shannon entropy of a buffer, GIL released while counting.
 */
#include "py_entropy.h"

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

static PyMethodDef methods[] = {
    {"entropy", py_entropy, METH_VARARGS, "entropy(data) -> float: Shannon entropy in bits per byte"},
    {NULL, NULL, 0, NULL},
};

int kb_py_entropy_init(PyObject *m) { return PyModule_AddFunctions(m, methods); }
