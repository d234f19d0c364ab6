/*
 * py_batch.h - kbench._native bindings of crc32c.c, recordbatch.c, segment.c.
 */
#ifndef KBENCH_PY_BATCH_H
#define KBENCH_PY_BATCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "py_error.h"
#include "recordbatch.h"

extern PyObject *kb_BatchError;
/** kbench.BatchError; raised from a kb_error with kb_py_raise(kb_BatchError, e) (py_error.h). */

/** Register crc32c/batch/segment functions and BatchError on module m; 0 or -1. */
int kb_py_batch_init(PyObject *m);

#endif
