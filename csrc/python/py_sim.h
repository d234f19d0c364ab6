/*
 * py_sim.h - kbench._native bindings of batching.c and sim.c.
 */
#ifndef KBENCH_PY_SIM_H
#define KBENCH_PY_SIM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** Register murmur2, partition_for_key and sim_run on module m; 0 or -1. */
int kb_py_sim_init(PyObject *m);

#endif
