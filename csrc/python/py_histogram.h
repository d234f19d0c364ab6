/*
 * py_histogram.h - kbench._native.Histogram: the C histogram as a Python type.
 */
#ifndef KBENCH_PY_HISTOGRAM_H
#define KBENCH_PY_HISTOGRAM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "histogram.h"

/** Allocate an empty kb_hist (NULL on out of memory). */
kb_hist *kb_hist_new(void);

/** A new Histogram object that takes ownership of h (freed with free()); NULL on error (h is freed). */
PyObject *kb_py_hist_wrap(kb_hist *h);

/** Add the Histogram type and histogram_record_cost() to m; 0 or -1. */
int kb_py_histogram_init(PyObject *m);

#endif
