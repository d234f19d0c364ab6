/*
 * procstat.h - CPU counters from /proc: utime/stime per process or thread
 * (/proc/<pid>/stat, /proc/<pid>/task/<tid>/stat) and system-wide
 * user/system/idle/iowait/steal (/proc/stat), in seconds (clock ticks divided
 * by sysconf(_SC_CLK_TCK)); plus a background sampler thread.
 */
#ifndef KBENCH_PROCSTAT_H
#define KBENCH_PROCSTAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "proc_cpu.h"

/** Add proc_snapshot() and the ProcSampler type to m; 0 or -1. */
int kb_procstat_init(PyObject *m);

#endif
