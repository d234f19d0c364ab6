/*
 * py_kafka_util.c - KafkaError and property conversion for the Kafka bindings.
 */
#include "py_kafka_util.h"

PyObject *kb_KafkaError = NULL;

int kb_py_props(PyObject *dict, kb_props *p) {
    if (dict == NULL || dict == Py_None)
        return 0;
    if (!PyDict_Check(dict)) {
        PyErr_SetString(PyExc_TypeError, "librdkafka properties must be a dict of str -> str");
        return -1;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict, &pos, &k, &v)) {
        if (!PyUnicode_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "librdkafka property names must be str");
            return -1;
        }
        PyObject *s;
        if (v == Py_True)
            s = PyUnicode_FromString("true");
        else if (v == Py_False)
            s = PyUnicode_FromString("false");
        else
            s = PyObject_Str(v);
        if (!s)
            return -1;
        const char *ks = PyUnicode_AsUTF8(k), *vs = PyUnicode_AsUTF8(s);
        int rc = (ks && vs) ? kb_props_add(p, ks, vs) : -1;
        Py_DECREF(s);
        if (rc < 0) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

PyObject *kb_py_kafka_error(const kb_props *p, const kb_error *e) {
    kb_error scrubbed = *e;
    if (p)
        kb_props_scrub(p, scrubbed.msg, sizeof(scrubbed.msg));
    return kb_py_raise(kb_KafkaError, &scrubbed);
}

int kb_py_kafka_util_init(PyObject *m) {
    kb_KafkaError = PyErr_NewExceptionWithDoc("kbench.KafkaError",
                                              "A Kafka client operation failed; the message is librdkafka's own.",
                                              PyExc_RuntimeError, NULL);
    if (!kb_KafkaError)
        return -1;
    if (PyModule_AddObjectRef(m, "KafkaError", kb_KafkaError) < 0)
        return -1;
    if (PyModule_AddStringConstant(m, "rdkafka_version", rd_kafka_version_str()) < 0)
        return -1;
    /* the features the library was built with (kcat -V prints them too); the bound library, so
     * under an LD_PRELOAD of another librdkafka it is that library's */
    char features[1024] = "";
    size_t size = sizeof(features);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!conf) {
        PyErr_NoMemory();
        return -1;
    }
    if (rd_kafka_conf_get(conf, "builtin.features", features, &size) != RD_KAFKA_CONF_OK)
        features[0] = '\0';
    rd_kafka_conf_destroy(conf);
    return PyModule_AddStringConstant(m, "rdkafka_features", features);
}
