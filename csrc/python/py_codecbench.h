/*
 * py_codecbench.h - kbench._native.CodecBench (the loops are csrc/core/codecbench.c).
 */
#ifndef KBENCH_PY_CODECBENCH_H
#define KBENCH_PY_CODECBENCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** Register the CodecBench type on module m; 0 or -1. */
int kb_py_codecbench_init(PyObject *m);

#endif
