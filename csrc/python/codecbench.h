/*
 * codecbench.h - kbench._native.CodecBench: the timed loops of experiment M.
 */
#ifndef KBENCH_CODECBENCH_H
#define KBENCH_CODECBENCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** Register the CodecBench type on module m; 0 or -1. */
int kb_codecbench_init(PyObject *m);

#endif
