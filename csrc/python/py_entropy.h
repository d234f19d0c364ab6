/*
 * py_entropy.h - kbench._native.entropy(data).
 */
#ifndef KBENCH_PY_ENTROPY_H
#define KBENCH_PY_ENTROPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** Register entropy(data) on module m; 0 or -1. */
int kb_py_entropy_init(PyObject *m);

#endif
