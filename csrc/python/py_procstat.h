/*
 * py_procstat.h - proc_snapshot() and ProcSampler exported to Python
 * (the /proc reading and the sampler thread are csrc/core/procstat.c).
 */
#ifndef KBENCH_PY_PROCSTAT_H
#define KBENCH_PY_PROCSTAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** Add proc_snapshot() and the ProcSampler type to m; 0 or -1. */
int kb_py_procstat_init(PyObject *m);

#endif
