/*
 * py_error.h - the one place a kb_error (csrc/core/error.h) becomes a Python
 * exception.
 */
#ifndef KBENCH_PY_ERROR_H
#define KBENCH_PY_ERROR_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "error.h"

/**
 * Raise e as an exception of type exc (MemoryError for KB_ENOMEM) and return
 * NULL.  The message is e->msg, followed by " (at byte N)" when e->offset >= 0;
 * the exception's `offset` attribute is e->offset.
 */
PyObject *kb_py_raise(PyObject *exc, const kb_error *e);

#endif
