/*
 * py_secret.c - is_secret_property(name) and the constants of the secret rule.
 */
#include "py_secret.h"

#include "secret.h"

static PyObject *py_is_secret_property(PyObject *self, PyObject *arg) {
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name)
        return NULL;
    return PyBool_FromLong(kb_is_secret_property(name));
}

/** A tuple of the strings of a NULL-terminated array; NULL on error. */
static PyObject *tuple_of(const char *const *names) {
    Py_ssize_t n = 0;
    while (names[n])
        n++;
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (!s) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

static PyMethodDef methods[] = {
    {"is_secret_property", py_is_secret_property, METH_O,
     "is_secret_property(name) -> bool: whether a client property's value must never be shown"},
    {NULL, NULL, 0, NULL},
};

int kb_py_secret_init(PyObject *m) {
    if (PyModule_AddFunctions(m, methods) < 0 || PyModule_AddStringConstant(m, "REDACTED", KB_REDACTED) < 0 ||
        PyModule_AddIntConstant(m, "SECRET_MIN_SCRUB_LEN", KB_SECRET_MIN_SCRUB) < 0)
        return -1;
    PyObject *names = tuple_of(kb_secret_names), *words = tuple_of(kb_secret_words);
    int rc = (names && words && PyModule_AddObjectRef(m, "SECRET_NAMES", names) == 0 &&
              PyModule_AddObjectRef(m, "SECRET_WORDS", words) == 0)
                 ? 0
                 : -1;
    Py_XDECREF(names);
    Py_XDECREF(words);
    return rc;
}
