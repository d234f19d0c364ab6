/*
 * sampler.c - a bounded sample of a topic's records, from the beginning of
 * every partition, up to the high watermarks seen at the start.
 */
#define _GNU_SOURCE
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/** Append n bytes to the sample buffer; its offset, or SIZE_MAX on out of memory. */
static size_t put(kb_sample *s, const void *p, size_t n) {
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 1 << 16;
        while (cap < s->len + n)
            cap *= 2;
        unsigned char *b = realloc(s->buf, cap);
        if (!b)
            return SIZE_MAX;
        s->buf = b;
        s->cap = cap;
    }
    size_t off = s->len;
    if (n)
        memcpy(s->buf + off, p, n);
    s->len += n;
    return off;
}

/** Assign every partition at its low watermark; fills lo[] and hi[] (start and end offsets); 0 or < 0 with err set. */
static int assign_from_start(rd_kafka_t *rk, kb_sample *s, int tms, int64_t **lo_out, int64_t **hi_out,
                             kb_error *err) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, s->topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, tms);
    rd_kafka_topic_destroy(rkt);
    if (e || md->topic_cnt != 1 || md->topics[0].err) {
        kb_error_set(err, KB_EKAFKA, -1, "topic '%s' not available (%s); check --topic", s->topic,
                     e ? rd_kafka_err2str(e) : (md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "absent"));
        if (md)
            rd_kafka_metadata_destroy(md);
        return KB_EKAFKA;
    }
    int np = md->topics[0].partition_cnt;
    int64_t *hi = calloc((size_t)(np > 0 ? np : 1), sizeof(*hi));
    int64_t *los = calloc((size_t)(np > 0 ? np : 1), sizeof(*los));
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
    int rc = KB_OK;
    if (!hi || !los)
        rc = kb_error_set(err, KB_ENOMEM, -1, "out of memory for %d partitions", np);
    for (int i = 0; rc == 0 && i < np; i++) {
        int32_t pid = md->topics[0].partitions[i].id;
        int64_t lo = 0, h = 0;
        e = rd_kafka_query_watermark_offsets(rk, s->topic, pid, &lo, &h, tms);
        if (e) {
            rc = kb_error_set(err, KB_EKAFKA, -1, "watermarks of %s [%d]: %s", s->topic, pid, rd_kafka_err2str(e));
            break;
        }
        if (pid >= 0 && pid < np) {
            hi[pid] = h;
            los[pid] = lo;
        }
        s->available += h - lo;
        if (h > lo)
            rd_kafka_topic_partition_list_add(l, s->topic, pid)->offset = lo;
    }
    rd_kafka_metadata_destroy(md);
    if (rc == 0 && l->cnt > 0 && (e = rd_kafka_assign(rk, l)) != 0) {
        rc = kb_error_set(err, KB_EKAFKA, -1, "assign %s: %s", s->topic, rd_kafka_err2str(e));
    }
    s->partitions = np;
    rd_kafka_topic_partition_list_destroy(l);
    if (rc < 0) {
        free(hi);
        free(los);
        return rc;
    }
    *hi_out = hi;
    *lo_out = los;
    return 0;
}

int kb_sample_run(kb_sample *s, kb_error *e) {
    kb_error local = KB_ERROR_INIT;
    kb_error *err = e ? e : &local;
    kb_error_clear(err);
    rd_kafka_conf_t *conf = kb_conf_new(&s->props, err);
    if (!conf)
        return err->code;
    if (!kb_props_get(&s->props, "group.id"))
        rd_kafka_conf_set(conf, "group.id", "kbench-corpus-sample", NULL, 0);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", NULL, 0);
    rd_kafka_conf_set(conf, "enable.auto.offset.store", "false", NULL, 0);
    /* end of partition events: a compacted or transactional partition ends below its last offset */
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", NULL, 0);
    kb_conn_err seen = {0};
    rd_kafka_conf_set_opaque(conf, &seen); /* outlives rk: destroyed below, in this function */
    rd_kafka_conf_set_error_cb(conf, kb_conn_err_cb);
    rd_kafka_t *rk = kb_client_new(RD_KAFKA_CONSUMER, conf, err);
    if (!rk)
        return err->code;
    rd_kafka_poll_set_consumer(rk);
    int tms = (int)(s->timeout_s * 1000);
    int64_t *hi = NULL, *next = NULL;
    int rc = kb_wait_reachable(rk, &s->props, tms, &seen, err);
    if (rc < 0)
        goto out;
    rc = assign_from_start(rk, s, tms, &next, &hi, err);
    if (rc < 0)
        goto out;
    int np = s->partitions; /* next[p] starts at the low watermark: the next offset expected */
    int64_t deadline = kb_now_ns() + (int64_t)(s->timeout_s * 1e9);
    for (;;) {
        int done = 1;
        for (int i = 0; i < np; i++)
            if (next[i] < hi[i])
                done = 0;
        if (done || s->n >= s->max_records)
            break;
        int64_t now = kb_now_ns();
        if (now >= deadline) {
            s->timed_out = 1;
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        if (m->err) {
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF && m->partition >= 0 && m->partition < np &&
                m->offset >= hi[m->partition])
                next[m->partition] = hi[m->partition];
            rd_kafka_message_destroy(m);
            continue;
        }
        int32_t p = m->partition;
        if (p < 0 || p >= np || m->offset >= hi[p]) {
            rd_kafka_message_destroy(m);
            continue; /* beyond the watermark seen at the start */
        }
        next[p] = m->offset + 1;
        size_t klen = m->key ? m->key_len : 0, vlen = m->payload ? m->len : 0;
        if (s->len + klen + vlen > s->max_bytes) {
            s->truncated = 1;
            rd_kafka_message_destroy(m);
            break;
        }
        if (s->n == s->rcap) {
            size_t cap = s->rcap ? s->rcap * 2 : 1024;
            kb_sample_rec *r = realloc(s->recs, cap * sizeof(*r));
            if (!r) {
                rd_kafka_message_destroy(m);
                rc = kb_error_set(err, KB_ENOMEM, -1, "out of memory after %zu records", s->n);
                goto out;
            }
            s->recs = r;
            s->rcap = cap;
        }
        kb_sample_rec *r = &s->recs[s->n];
        r->partition = p;
        r->offset = m->offset;
        r->key_len = m->key ? (int64_t)klen : -1;
        r->value_len = m->payload ? (int64_t)vlen : -1;
        r->key_off = put(s, m->key, klen);
        r->value_off = put(s, m->payload, vlen);
        rd_kafka_message_destroy(m);
        if (r->key_off == SIZE_MAX || r->value_off == SIZE_MAX) {
            rc = kb_error_set(err, KB_ENOMEM, -1, "out of memory after %zu records", s->n);
            goto out;
        }
        s->n++;
    }
    rc = 0;
out:
    free(hi);
    free(next);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}

void kb_sample_free(kb_sample *s) {
    free(s->buf);
    free(s->recs);
    s->buf = NULL;
    s->recs = NULL;
    s->len = s->cap = s->n = s->rcap = 0;
}
