/*
 * py_drivers.h - kbench._native.Producer and kbench._native.Consumer: the C
 * loops as Python objects whose run() holds no GIL and whose stop() may be
 * called from any thread.
 */
#ifndef KBENCH_PY_DRIVERS_H
#define KBENCH_PY_DRIVERS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** Add the Producer and Consumer types to m; 0 or -1. */
int kb_py_drivers_init(PyObject *m);

#endif
