/*
 * py_admin.c - metadata(), create_topic(), delete_topic(), describe_topic_configs():
 * arguments from Python, the work in csrc/core/admin.c with the GIL released,
 * librdkafka's messages as kbench.KafkaError.
 */
#include "py_admin.h"

#include "admin.h"
#include "kafka_conf.h"
#include "py_kafka_util.h"

/** Convert a positive timeout in seconds to ms; -1 with a Python error when invalid. */
static int timeout_ms_of(double s) {
    if (!(s > 0) || s > 86400) {
        PyErr_Format(PyExc_ValueError, "timeout must be in (0, 86400] seconds, got %g", s);
        return -1;
    }
    return (int)(s * 1000);
}

PyDoc_STRVAR(metadata_doc,
             "metadata(props, timeout=10.0) -> dict\n\n"
             "Cluster metadata: {'brokers': [(id, host, port)], 'controller_id': int, 'topics': {name:\n"
             "{'error': str|None, 'partitions': [{'id', 'leader', 'replicas', 'isrs', 'error'}]}}}.\n"
             "Raises KafkaError when no broker answers within timeout seconds.");

static PyObject *py_metadata(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"props", "timeout", NULL};
    PyObject *pd;
    double timeout = 10.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|d:metadata", kwlist, &PyDict_Type, &pd, &timeout))
        return NULL;
    int tms = timeout_ms_of(timeout);
    if (tms < 0)
        return NULL;
    kb_props p = {0};
    kb_admin_result r = {0};
    PyObject *out = NULL;
    kb_error err = KB_ERROR_INIT;
    int rc = -1;
    if (kb_py_props(pd, &p) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    rc = kb_admin_metadata(&p, tms, &r, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        kb_py_kafka_error(&p, &err);
        goto done;
    }
    const struct rd_kafka_metadata *md = r.md;
    PyObject *brokers = PyList_New(0), *topics = PyDict_New();
    out = Py_BuildValue("{s:N,s:i,s:N}", "brokers", brokers, "controller_id", (int)r.controller_id, "topics", topics);
    if (!out)
        goto done;
    for (int i = 0; i < md->broker_cnt; i++) {
        PyObject *t = Py_BuildValue("(isi)", md->brokers[i].id, md->brokers[i].host, md->brokers[i].port);
        if (!t || PyList_Append(brokers, t) < 0) {
            Py_XDECREF(t);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(t);
    }
    for (int i = 0; i < md->topic_cnt; i++) {
        const struct rd_kafka_metadata_topic *t = &md->topics[i];
        PyObject *parts = PyList_New(0);
        if (!parts) {
            Py_CLEAR(out);
            goto done;
        }
        for (int j = 0; j < t->partition_cnt; j++) {
            const struct rd_kafka_metadata_partition *pp = &t->partitions[j];
            PyObject *reps = PyList_New(pp->replica_cnt), *isrs = PyList_New(pp->isr_cnt);
            for (int k = 0; reps && k < pp->replica_cnt; k++)
                PyList_SET_ITEM(reps, k, PyLong_FromLong(pp->replicas[k]));
            for (int k = 0; isrs && k < pp->isr_cnt; k++)
                PyList_SET_ITEM(isrs, k, PyLong_FromLong(pp->isrs[k]));
            PyObject *pe = pp->err ? PyUnicode_FromString(rd_kafka_err2str(pp->err)) : Py_NewRef(Py_None);
            PyObject *d = (reps && isrs && pe)
                              ? Py_BuildValue("{s:i,s:i,s:N,s:N,s:N}", "id", pp->id, "leader", pp->leader,
                                              "replicas", reps, "isrs", isrs, "error", pe)
                              : NULL;
            if (!d || PyList_Append(parts, d) < 0) {
                Py_XDECREF(d);
                Py_DECREF(parts);
                Py_CLEAR(out);
                goto done;
            }
            Py_DECREF(d);
        }
        PyObject *te = t->err ? PyUnicode_FromString(rd_kafka_err2str(t->err)) : Py_NewRef(Py_None);
        PyObject *td = Py_BuildValue("{s:N,s:N}", "error", te, "partitions", parts);
        if (!td || PyDict_SetItemString(topics, t->topic, td) < 0) {
            Py_XDECREF(td);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(td);
    }
done:
    Py_BEGIN_ALLOW_THREADS
    kb_admin_result_free(&r);
    Py_END_ALLOW_THREADS
    kb_props_free(&p);
    return out;
}

PyDoc_STRVAR(create_topic_doc,
             "create_topic(props, name, partitions=1, replication_factor=1, configs=None, timeout=30.0)\n\n"
             "Create a topic with the given topic configs (e.g. compression.type, min.insync.replicas)\n"
             "and wait until every partition has a leader.  Raises KafkaError with the broker's message.");

static PyObject *py_create_topic(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"props", "name", "partitions", "replication_factor", "configs", "timeout", NULL};
    PyObject *pd, *cd = Py_None;
    const char *name;
    int parts = 1, rf = 1;
    double timeout = 30.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!s|iiOd:create_topic", kwlist, &PyDict_Type, &pd, &name, &parts,
                                     &rf, &cd, &timeout))
        return NULL;
    int tms = timeout_ms_of(timeout);
    if (tms < 0)
        return NULL;
    if (parts < 1 || rf < 1) {
        PyErr_Format(PyExc_ValueError, "partitions (%d) and replication_factor (%d) must be >= 1", parts, rf);
        return NULL;
    }
    kb_props p = {0}, c = {0};
    PyObject *ret = NULL;
    kb_error err = KB_ERROR_INIT;
    int rc = -1;
    if (kb_py_props(pd, &p) < 0 || kb_py_props(cd, &c) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    rc = kb_admin_create_topic(&p, name, parts, rf, &c, tms, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        kb_py_kafka_error(&p, &err);
    else
        ret = Py_NewRef(Py_None);
done:
    kb_props_free(&p);
    kb_props_free(&c);
    return ret;
}

PyDoc_STRVAR(delete_topic_doc,
             "delete_topic(props, name, timeout=30.0)\n\n"
             "Delete a topic and wait until the metadata no longer lists it.");

static PyObject *py_delete_topic(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"props", "name", "timeout", NULL};
    PyObject *pd;
    const char *name;
    double timeout = 30.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!s|d:delete_topic", kwlist, &PyDict_Type, &pd, &name, &timeout))
        return NULL;
    int tms = timeout_ms_of(timeout);
    if (tms < 0)
        return NULL;
    kb_props p = {0};
    kb_error err = KB_ERROR_INIT;
    int rc;
    if (kb_py_props(pd, &p) < 0) {
        kb_props_free(&p);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = kb_admin_delete_topic(&p, name, tms, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        kb_py_kafka_error(&p, &err);
    kb_props_free(&p);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(describe_doc,
             "describe_topic_configs(props, name, timeout=30.0) -> dict[str, tuple[str|None, str]]\n\n"
             "Every config of a topic: name -> (value, source), source being librdkafka's name for\n"
             "where the value comes from (DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, ...).  Sensitive values\n"
             "are None.");

static PyObject *py_describe(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"props", "name", "timeout", NULL};
    PyObject *pd;
    const char *name;
    double timeout = 30.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!s|d:describe_topic_configs", kwlist, &PyDict_Type, &pd, &name,
                                     &timeout))
        return NULL;
    int tms = timeout_ms_of(timeout);
    if (tms < 0)
        return NULL;
    kb_props p = {0};
    kb_admin_result r = {0};
    kb_error err = KB_ERROR_INIT;
    PyObject *out = NULL;
    int rc = -1;
    if (kb_py_props(pd, &p) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    rc = kb_admin_describe_configs(&p, name, tms, &r, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        kb_py_kafka_error(&p, &err);
        goto done;
    }
    out = PyDict_New();
    for (size_t i = 0; out && i < r.nentries; i++) {
        const rd_kafka_ConfigEntry_t *e = r.entries[i];
        const char *v = rd_kafka_ConfigEntry_is_sensitive(e) ? NULL : rd_kafka_ConfigEntry_value(e);
        PyObject *t = Py_BuildValue("(zs)", v, rd_kafka_ConfigSource_name(rd_kafka_ConfigEntry_source(e)));
        int bad = !t || PyDict_SetItemString(out, rd_kafka_ConfigEntry_name(e), t) < 0;
        Py_XDECREF(t);
        if (bad)
            Py_CLEAR(out);
    }
done:
    Py_BEGIN_ALLOW_THREADS
    kb_admin_result_free(&r);
    Py_END_ALLOW_THREADS
    kb_props_free(&p);
    return out;
}

static PyMethodDef methods[] = {
    {"metadata", (PyCFunction)(void (*)(void))py_metadata, METH_VARARGS | METH_KEYWORDS, metadata_doc},
    {"create_topic", (PyCFunction)(void (*)(void))py_create_topic, METH_VARARGS | METH_KEYWORDS, create_topic_doc},
    {"delete_topic", (PyCFunction)(void (*)(void))py_delete_topic, METH_VARARGS | METH_KEYWORDS, delete_topic_doc},
    {"describe_topic_configs", (PyCFunction)(void (*)(void))py_describe, METH_VARARGS | METH_KEYWORDS, describe_doc},
    {NULL, NULL, 0, NULL},
};

int kb_py_admin_init(PyObject *m) {
    return PyModule_AddFunctions(m, methods);
}
