/*
 * admin.c - metadata and topic administration through librdkafka.
 *
 * Every function makes its own short-lived producer handle, waits (bounded)
 * for a broker to answer, does one operation with the GIL released and
 * destroys the handle before returning; librdkafka's messages become
 * kbench.KafkaError.
 */
#include "admin.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "kafka_conf.h"
#include "py_kafka_util.h"

/** Error callback that drops errors: connect failures surface as the call's own error. */
static void quiet_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    (void)rk;
    (void)err;
    (void)reason;
    (void)opaque;
}

/** Create a connected client from props; NULL with err set on failure. */
static rd_kafka_t *connect_client(const kb_props *p, int timeout_ms, char *err, size_t errlen) {
    rd_kafka_conf_t *conf = kb_conf_new(p, err, errlen);
    if (!conf)
        return NULL;
    rd_kafka_conf_set_error_cb(conf, quiet_error);
    rd_kafka_t *rk = kb_client_new(RD_KAFKA_PRODUCER, conf, err, errlen);
    if (!rk)
        return NULL;
    if (kb_wait_reachable(rk, kb_props_get(p, "bootstrap.servers"), timeout_ms, err, errlen) < 0) {
        rd_kafka_destroy(rk);
        return NULL;
    }
    return rk;
}

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
    PyObject *out = NULL;
    rd_kafka_t *rk = NULL;
    const struct rd_kafka_metadata *md = NULL;
    char err[KB_KERRLEN] = "";
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (kb_py_props(pd, &p) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    rk = connect_client(&p, tms, err, sizeof(err));
    if (rk)
        e = rd_kafka_metadata(rk, 1, NULL, &md, tms);
    Py_END_ALLOW_THREADS
    if (!rk) {
        PyErr_SetString(kb_KafkaError, err);
        goto done;
    }
    if (e) {
        PyErr_Format(kb_KafkaError, "metadata request failed: %s", rd_kafka_err2str(e));
        goto done;
    }
    PyObject *brokers = PyList_New(0), *topics = PyDict_New();
    out = Py_BuildValue("{s:N,s:i,s:N}", "brokers", brokers, "controller_id", -1, "topics", topics);
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
            for (int r = 0; reps && r < pp->replica_cnt; r++)
                PyList_SET_ITEM(reps, r, PyLong_FromLong(pp->replicas[r]));
            for (int r = 0; isrs && r < pp->isr_cnt; r++)
                PyList_SET_ITEM(isrs, r, PyLong_FromLong(pp->isrs[r]));
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
    {
        PyObject *cid = PyLong_FromLong(rd_kafka_controllerid(rk, 0));
        if (!cid || PyDict_SetItemString(out, "controller_id", cid) < 0)
            Py_CLEAR(out);
        Py_XDECREF(cid);
    }
done:
    if (md)
        rd_kafka_metadata_destroy(md);
    if (rk) {
        Py_BEGIN_ALLOW_THREADS
        rd_kafka_destroy(rk);
        Py_END_ALLOW_THREADS
    }
    kb_props_free(&p);
    return out;
}

/** Wait for an admin result event of type want on q; NULL with err set on timeout. */
static rd_kafka_event_t *wait_result(rd_kafka_queue_t *q, rd_kafka_event_type_t want, int timeout_ms, char *err,
                                     size_t errlen) {
    int64_t deadline = kb_now_ns() + (int64_t)timeout_ms * 1000000 + 2000000000LL;
    while (kb_now_ns() < deadline) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 100);
        if (!ev)
            continue;
        if (rd_kafka_event_type(ev) == want)
            return ev;
        rd_kafka_event_destroy(ev);
    }
    snprintf(err, errlen, "no answer from the cluster within %.1f s", timeout_ms / 1000.0);
    return NULL;
}

/** Make AdminOptions for op with request and operation timeouts; NULL on failure. */
static rd_kafka_AdminOptions_t *admin_options(rd_kafka_t *rk, rd_kafka_admin_op_t op, int tms) {
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, op);
    if (!o)
        return NULL;
    char e[256];
    rd_kafka_AdminOptions_set_request_timeout(o, tms, e, sizeof(e));
    if (op == RD_KAFKA_ADMIN_OP_CREATETOPICS || op == RD_KAFKA_ADMIN_OP_DELETETOPICS)
        rd_kafka_AdminOptions_set_operation_timeout(o, tms, e, sizeof(e));
    return o;
}

/** Block until every partition of topic has a leader (or it is gone when gone=1); 0 or -1. */
static int wait_topic(rd_kafka_t *rk, const char *topic, int gone, int tms) {
    int64_t deadline = kb_now_ns() + (int64_t)tms * 1000000;
    while (kb_now_ns() < deadline) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 2000);
        rd_kafka_topic_destroy(rkt);
        int ok = 0;
        if (!e && md->topic_cnt == 1) {
            const struct rd_kafka_metadata_topic *t = &md->topics[0];
            if (gone) {
                ok = t->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
            } else if (!t->err && t->partition_cnt > 0) {
                ok = 1;
                for (int j = 0; j < t->partition_cnt; j++)
                    if (t->partitions[j].leader < 0 || t->partitions[j].err)
                        ok = 0;
            }
        }
        if (md)
            rd_kafka_metadata_destroy(md);
        if (ok)
            return 0;
        rd_kafka_poll(rk, 50);
    }
    return -1;
}

/** Whether an admin result event failed, as a whole or for its one topic (create/delete topics, describe
 *  configs): 0, or -1 with "<verb> topic 'name': message" in err. */
static int admin_result_error(rd_kafka_event_t *ev, const char *verb, const char *name, char *err, size_t errlen) {
    if (rd_kafka_event_error(ev)) {
        snprintf(err, errlen, "%s topic '%s': %s", verb, name, rd_kafka_event_error_string(ev));
        return -1;
    }
    size_t n = 0;
    rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
    const char *m = NULL;
    const rd_kafka_topic_result_t **tr = NULL;
    switch (rd_kafka_event_type(ev)) {
    case RD_KAFKA_EVENT_CREATETOPICS_RESULT:
        tr = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
        break;
    case RD_KAFKA_EVENT_DELETETOPICS_RESULT:
        tr = rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &n);
        break;
    case RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT: {
        const rd_kafka_ConfigResource_t **rs =
            rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
        if (n != 1) {
            snprintf(err, errlen, "%s topic '%s': %zu resources in the answer", verb, name, n);
            return -1;
        }
        code = rd_kafka_ConfigResource_error(rs[0]);
        m = rd_kafka_ConfigResource_error_string(rs[0]);
        break;
    }
    default:
        break;
    }
    if (tr && n == 1) {
        code = rd_kafka_topic_result_error(tr[0]);
        m = rd_kafka_topic_result_error_string(tr[0]);
    }
    if (code) {
        snprintf(err, errlen, "%s topic '%s': %s", verb, name, m ? m : rd_kafka_err2str(code));
        return -1;
    }
    return 0;
}

/** Destroy what an admin call made (each may be NULL). */
static void admin_free(rd_kafka_t *rk, rd_kafka_queue_t *q, rd_kafka_AdminOptions_t *o, rd_kafka_event_t *ev) {
    if (ev)
        rd_kafka_event_destroy(ev);
    if (o)
        rd_kafka_AdminOptions_destroy(o);
    if (q)
        rd_kafka_queue_destroy(q);
    if (rk)
        rd_kafka_destroy(rk);
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
    char err[KB_KERRLEN] = "";
    int ok = 0;
    if (kb_py_props(pd, &p) < 0 || kb_py_props(cd, &c) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    rd_kafka_t *rk = connect_client(&p, tms, err, sizeof(err));
    rd_kafka_NewTopic_t *nt = NULL;
    rd_kafka_queue_t *q = NULL;
    rd_kafka_AdminOptions_t *o = NULL;
    rd_kafka_event_t *ev = NULL;
    if (!rk)
        goto out;
    nt = rd_kafka_NewTopic_new(name, parts, rf, err, sizeof(err));
    if (!nt)
        goto out;
    for (size_t i = 0; i < c.n; i++)
        if (rd_kafka_NewTopic_set_config(nt, c.keys[i], c.vals[i])) {
            snprintf(err, sizeof(err), "bad topic config %s", c.keys[i]);
            goto out;
        }
    q = rd_kafka_queue_new(rk);
    o = admin_options(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, tms);
    rd_kafka_CreateTopics(rk, &nt, 1, o, q);
    ev = wait_result(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT, tms, err, sizeof(err));
    if (!ev)
        goto out;
    if (admin_result_error(ev, "create", name, err, sizeof(err)) < 0)
        goto out;
    if (wait_topic(rk, name, 0, tms) < 0) {
        snprintf(err, sizeof(err), "topic '%s' was created but its partitions had no leader within %.1f s", name,
                 tms / 1000.0);
        goto out;
    }
    ok = 1;
out:
    if (nt)
        rd_kafka_NewTopic_destroy(nt);
    admin_free(rk, q, o, ev);
    Py_END_ALLOW_THREADS
    if (!ok)
        PyErr_SetString(kb_KafkaError, err);
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
    char err[KB_KERRLEN] = "";
    int ok = 0;
    if (kb_py_props(pd, &p) < 0) {
        kb_props_free(&p);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rd_kafka_t *rk = connect_client(&p, tms, err, sizeof(err));
    rd_kafka_DeleteTopic_t *dt = NULL;
    rd_kafka_queue_t *q = NULL;
    rd_kafka_AdminOptions_t *o = NULL;
    rd_kafka_event_t *ev = NULL;
    if (!rk)
        goto out;
    dt = rd_kafka_DeleteTopic_new(name);
    q = rd_kafka_queue_new(rk);
    o = admin_options(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS, tms);
    rd_kafka_DeleteTopics(rk, &dt, 1, o, q);
    ev = wait_result(q, RD_KAFKA_EVENT_DELETETOPICS_RESULT, tms, err, sizeof(err));
    if (!ev)
        goto out;
    if (admin_result_error(ev, "delete", name, err, sizeof(err)) < 0)
        goto out;
    if (wait_topic(rk, name, 1, tms) < 0) {
        snprintf(err, sizeof(err), "topic '%s' still listed %.1f s after deletion", name, tms / 1000.0);
        goto out;
    }
    ok = 1;
out:
    if (dt)
        rd_kafka_DeleteTopic_destroy(dt);
    admin_free(rk, q, o, ev);
    Py_END_ALLOW_THREADS
    kb_props_free(&p);
    if (!ok) {
        PyErr_SetString(kb_KafkaError, err);
        return NULL;
    }
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
    char err[KB_KERRLEN] = "";
    PyObject *out = NULL;
    rd_kafka_t *rk = NULL;
    rd_kafka_queue_t *q = NULL;
    rd_kafka_AdminOptions_t *o = NULL;
    rd_kafka_event_t *ev = NULL;
    rd_kafka_ConfigResource_t *cr = NULL;
    if (kb_py_props(pd, &p) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    rk = connect_client(&p, tms, err, sizeof(err));
    if (rk) {
        cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, name);
        q = rd_kafka_queue_new(rk);
        o = admin_options(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, tms);
        rd_kafka_DescribeConfigs(rk, &cr, 1, o, q);
        ev = wait_result(q, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT, tms, err, sizeof(err));
    }
    Py_END_ALLOW_THREADS
    if (!ev || admin_result_error(ev, "describe configs of", name, err, sizeof(err)) < 0) {
        PyErr_SetString(kb_KafkaError, err);
        goto done;
    }
    size_t nr = 0;
    const rd_kafka_ConfigResource_t **rs =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &nr);
    size_t nc = 0;
    const rd_kafka_ConfigEntry_t **ce = rd_kafka_ConfigResource_configs(rs[0], &nc);
    out = PyDict_New();
    for (size_t i = 0; out && i < nc; i++) {
        const char *v = rd_kafka_ConfigEntry_is_sensitive(ce[i]) ? NULL : rd_kafka_ConfigEntry_value(ce[i]);
        PyObject *t = Py_BuildValue("(zs)", v, rd_kafka_ConfigSource_name(rd_kafka_ConfigEntry_source(ce[i])));
        int bad = !t || PyDict_SetItemString(out, rd_kafka_ConfigEntry_name(ce[i]), t) < 0;
        Py_XDECREF(t);
        if (bad)
            Py_CLEAR(out);
    }
done:
    Py_BEGIN_ALLOW_THREADS
    if (cr)
        rd_kafka_ConfigResource_destroy(cr);
    admin_free(rk, q, o, ev);
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

int kb_admin_init(PyObject *m) {
    return PyModule_AddFunctions(m, methods);
}
