/*
 * py_kafka_util.h - shared Python-side helpers for the Kafka bindings:
 * the kbench.KafkaError exception and dict -> kb_props conversion.
 */
#ifndef KBENCH_PY_KAFKA_UTIL_H
#define KBENCH_PY_KAFKA_UTIL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kafka_conf.h"
#include "py_error.h"

/** kbench.KafkaError (a RuntimeError); borrowed reference, set by kb_py_kafka_util_init(). */
extern PyObject *kb_KafkaError;

/**
 * Fill p from a dict of str -> str|int|float|bool (values converted with
 * str(), booleans to "true"/"false").  Sets a Python error and returns -1 on
 * bad input.
 */
int kb_py_props(PyObject *dict, kb_props *p);

/**
 * Raise KafkaError from e (kb_py_raise), every secret value of p (kb_props_scrub) replaced in
 * the message first; returns NULL.  Every librdkafka message reaching Python goes through here.
 */
PyObject *kb_py_kafka_error(const kb_props *p, const kb_error *e);

/** Create KafkaError and add it to module m; 0 or -1. */
int kb_py_kafka_util_init(PyObject *m);

#endif
