/*
 * py_batch.h - kbench._native bindings of crc32c.c, recordbatch.c, segment.c.
 */
#ifndef KBENCH_PY_BATCH_H
#define KBENCH_PY_BATCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "recordbatch.h"

extern PyObject *kb_BatchError;

/** Raise kbench.BatchError from e (message "... at byte N", attribute .offset). */
void kb_py_batch_error(const kb_error *e);

/** Register crc32c/batch/segment functions and BatchError on module m; 0 or -1. */
int kb_py_batch_init(PyObject *m);

#endif
