/*
 * admin.h - cluster metadata and topic administration (create, describe
 * configs, delete) over librdkafka's Admin API, exported to Python.
 */
#ifndef KBENCH_ADMIN_H
#define KBENCH_ADMIN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** Add metadata(), create_topic(), describe_topic_configs(), delete_topic() to m; 0 or -1. */
int kb_admin_init(PyObject *m);

#endif
