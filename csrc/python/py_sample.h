/*
 * py_sample.h - sample_records(): a bounded sample of a topic's records for
 * `kbench corpus sample`.
 */
#ifndef KBENCH_PY_SAMPLE_H
#define KBENCH_PY_SAMPLE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** Add sample_records() to m; 0 or -1. */
int kb_py_sample_init(PyObject *m);

#endif
