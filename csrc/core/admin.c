/*
 * admin.c - metadata and topic administration through librdkafka's Admin API.
 */
#include "admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/** Destroy a client made by connect_client() and the handshake record it owns (its opaque). */
static void client_destroy(rd_kafka_t *rk) {
    void *seen = rd_kafka_opaque(rk);
    rd_kafka_destroy(rk);
    free(seen);
}

/**
 * Create a connected client from props; NULL with err set on failure.  Errors
 * reach the client's error_cb only to note a failed handshake (kafka_conf.h):
 * connect failures surface as the call's own error.
 */
static rd_kafka_t *connect_client(const kb_props *p, int timeout_ms, kb_error *err) {
    rd_kafka_conf_t *conf = kb_conf_new(p, err);
    if (!conf)
        return NULL;
    kb_conn_err *seen = calloc(1, sizeof(*seen));
    if (!seen) {
        rd_kafka_conf_destroy(conf);
        kb_error_set(err, KB_ENOMEM, -1, "out of memory");
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, seen);
    rd_kafka_conf_set_error_cb(conf, kb_conn_err_cb);
    rd_kafka_t *rk = kb_client_new(RD_KAFKA_PRODUCER, conf, err);
    if (!rk) {
        free(seen);
        return NULL;
    }
    if (kb_wait_reachable(rk, p, timeout_ms, seen, err) < 0) {
        client_destroy(rk);
        return NULL;
    }
    return rk;
}

/** Wait for an admin result event of type want on q; NULL with err set on timeout. */
static rd_kafka_event_t *wait_result(rd_kafka_queue_t *q, rd_kafka_event_type_t want, int timeout_ms, kb_error *err) {
    int64_t deadline = kb_now_ns() + (int64_t)timeout_ms * 1000000 + 2000000000LL;
    while (kb_now_ns() < deadline) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 100);
        if (!ev)
            continue;
        if (rd_kafka_event_type(ev) == want)
            return ev;
        rd_kafka_event_destroy(ev);
    }
    kb_error_set(err, KB_EKAFKA, -1, "no answer from the cluster within %.1f s", timeout_ms / 1000.0);
    return NULL;
}

/** Make AdminOptions for op with request and operation timeouts; NULL on failure. */
static rd_kafka_AdminOptions_t *admin_options(rd_kafka_t *rk, rd_kafka_admin_op_t op, int tms) {
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, op);
    if (!o)
        return NULL;
    char e[KB_ERRLEN];
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
static int admin_result_error(rd_kafka_event_t *ev, const char *verb, const char *name, kb_error *err) {
    if (rd_kafka_event_error(ev)) {
        return kb_error_set(err, KB_EKAFKA, -1, "%s topic '%s': %s", verb, name, rd_kafka_event_error_string(ev));
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
            return kb_error_set(err, KB_EKAFKA, -1, "%s topic '%s': %zu resources in the answer", verb, name, n);
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
        return kb_error_set(err, KB_EKAFKA, -1, "%s topic '%s': %s", verb, name, m ? m : rd_kafka_err2str(code));
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
        client_destroy(rk);
}

int kb_admin_metadata(const kb_props *p, int tms, kb_admin_result *r, kb_error *err) {
    memset(r, 0, sizeof(*r));
    r->controller_id = -1;
    r->rk = connect_client(p, tms, err);
    if (!r->rk)
        return -1;
    rd_kafka_resp_err_t e = rd_kafka_metadata(r->rk, 1, NULL, &r->md, tms);
    if (e) {
        r->md = NULL;
        return kb_error_set(err, KB_EKAFKA, -1, "metadata request failed: %s", rd_kafka_err2str(e));
    }
    r->controller_id = rd_kafka_controllerid(r->rk, 0);
    return 0;
}

int kb_admin_create_topic(const kb_props *p, const char *name, int parts, int rf, const kb_props *c, int tms,
                          kb_error *err) {
    int ok = 0;
    rd_kafka_t *rk = connect_client(p, tms, err);
    rd_kafka_NewTopic_t *nt = NULL;
    rd_kafka_queue_t *q = NULL;
    rd_kafka_AdminOptions_t *o = NULL;
    rd_kafka_event_t *ev = NULL;
    if (!rk)
        goto out;
    char msg[KB_ERRLEN] = "";
    nt = rd_kafka_NewTopic_new(name, parts, rf, msg, sizeof(msg));
    if (!nt) {
        kb_error_set(err, KB_EINVAL, -1, "%s", msg);
        goto out;
    }
    for (size_t i = 0; i < c->n; i++)
        if (rd_kafka_NewTopic_set_config(nt, c->keys[i], c->vals[i])) {
            kb_error_set(err, KB_EINVAL, -1, "bad topic config %s", c->keys[i]);
            goto out;
        }
    q = rd_kafka_queue_new(rk);
    o = admin_options(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, tms);
    rd_kafka_CreateTopics(rk, &nt, 1, o, q);
    ev = wait_result(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT, tms, err);
    if (!ev)
        goto out;
    if (admin_result_error(ev, "create", name, err) < 0)
        goto out;
    if (wait_topic(rk, name, 0, tms) < 0) {
        kb_error_set(err, KB_EKAFKA, -1, "topic '%s' was created but its partitions had no leader within %.1f s", name,
                 tms / 1000.0);
        goto out;
    }
    ok = 1;
out:
    if (nt)
        rd_kafka_NewTopic_destroy(nt);
    admin_free(rk, q, o, ev);
    return ok ? 0 : -1;
}

int kb_admin_delete_topic(const kb_props *p, const char *name, int tms, kb_error *err) {
    int ok = 0;
    rd_kafka_t *rk = connect_client(p, tms, err);
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
    ev = wait_result(q, RD_KAFKA_EVENT_DELETETOPICS_RESULT, tms, err);
    if (!ev)
        goto out;
    if (admin_result_error(ev, "delete", name, err) < 0)
        goto out;
    if (wait_topic(rk, name, 1, tms) < 0) {
        kb_error_set(err, KB_EKAFKA, -1, "topic '%s' still listed %.1f s after deletion", name, tms / 1000.0);
        goto out;
    }
    ok = 1;
out:
    if (dt)
        rd_kafka_DeleteTopic_destroy(dt);
    admin_free(rk, q, o, ev);
    return ok ? 0 : -1;
}

int kb_admin_describe_configs(const kb_props *p, const char *name, int tms, kb_admin_result *r, kb_error *err) {
    memset(r, 0, sizeof(*r));
    r->controller_id = -1;
    r->rk = connect_client(p, tms, err);
    if (!r->rk)
        return -1;
    r->cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, name);
    r->q = rd_kafka_queue_new(r->rk);
    r->o = admin_options(r->rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, tms);
    rd_kafka_DescribeConfigs(r->rk, &r->cr, 1, r->o, r->q);
    r->ev = wait_result(r->q, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT, tms, err);
    if (!r->ev || admin_result_error(r->ev, "describe configs of", name, err) < 0)
        return -1;
    size_t nr = 0;
    const rd_kafka_ConfigResource_t **rs =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(r->ev), &nr);
    r->entries = rd_kafka_ConfigResource_configs(rs[0], &r->nentries);
    return 0;
}

void kb_admin_result_free(kb_admin_result *r) {
    if (r->md)
        rd_kafka_metadata_destroy(r->md);
    if (r->cr)
        rd_kafka_ConfigResource_destroy(r->cr);
    admin_free(r->rk, r->q, r->o, r->ev);
    memset(r, 0, sizeof(*r));
}
