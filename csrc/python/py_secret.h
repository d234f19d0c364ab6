/*
 * py_secret.h - the secret-property rule (csrc/core/secret.c) exported to Python.
 */
#ifndef KBENCH_PY_SECRET_H
#define KBENCH_PY_SECRET_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** Add is_secret_property(), REDACTED, SECRET_MIN_SCRUB_LEN, SECRET_NAMES and SECRET_WORDS to m; 0 or -1. */
int kb_py_secret_init(PyObject *m);

#endif
