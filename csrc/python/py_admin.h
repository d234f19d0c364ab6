/*
 * py_admin.h - metadata and topic administration exported to Python
 * (the librdkafka work is csrc/core/admin.c).
 */
#ifndef KBENCH_PY_ADMIN_H
#define KBENCH_PY_ADMIN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** Add metadata(), create_topic(), describe_topic_configs(), delete_topic() to m; 0 or -1. */
int kb_py_admin_init(PyObject *m);

#endif
