/*
 * py_error.c - kb_error -> Python exception (see py_error.h).
 */
#include "py_error.h"

PyObject *kb_py_raise(PyObject *exc, const kb_error *e) {
    if (e->code == KB_ENOMEM)
        exc = PyExc_MemoryError;
    PyObject *msg = e->offset >= 0 ? PyUnicode_FromFormat("%s (at byte %lld)", e->msg, (long long)e->offset)
                                   : PyUnicode_FromString(e->msg);
    if (!msg)
        return NULL;
    PyObject *inst = PyObject_CallOneArg(exc, msg);
    Py_DECREF(msg);
    if (!inst)
        return NULL;
    PyObject *off = PyLong_FromLongLong(e->offset);
    if (!off || PyObject_SetAttrString(inst, "offset", off) < 0) {
        Py_XDECREF(off);
        Py_DECREF(inst);
        return NULL;
    }
    Py_DECREF(off);
    PyErr_SetObject(exc, inst);
    Py_DECREF(inst);
    return NULL;
}
