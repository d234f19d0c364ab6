/*
 * consumer.c - the consumer loop.  Like the producer, the client handle is
 * created, used and destroyed by the calling thread only.
 */
#define _GNU_SOURCE
#include "consumer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "wire.h"

/** Assign all partitions of c->topic at their high watermarks; 0 or < 0 with err set.  *out = the assignment. */
static int assign_at_end(rd_kafka_t *rk, kb_consumer *c, int tms, rd_kafka_topic_partition_list_t **out,
                         kb_error *err) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, c->topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, tms);
    rd_kafka_topic_destroy(rkt);
    if (e || md->topic_cnt != 1 || md->topics[0].err) {
        kb_error_set(err, KB_EKAFKA, -1, "topic '%s' not available (%s); create it first", c->topic,
                     e ? rd_kafka_err2str(e) : (md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "absent"));
        if (md)
            rd_kafka_metadata_destroy(md);
        return KB_EKAFKA;
    }
    int np = md->topics[0].partition_cnt;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
    int rc = 0;
    for (int i = 0; i < np; i++) {
        int32_t pid = md->topics[0].partitions[i].id;
        int64_t lo = 0, hi = 0;
        int64_t until = kb_now_ns() + (int64_t)tms * 1000000;
        /* right after topic creation a leader may not serve yet: retry until the deadline */
        while ((e = rd_kafka_query_watermark_offsets(rk, c->topic, pid, &lo, &hi, 2000)) != 0 &&
               kb_now_ns() < until && !atomic_load(&c->stop))
            rd_kafka_poll(rk, 100);
        if (e) {
            rc = kb_error_set(err, KB_EKAFKA, -1, "watermarks of %s [%d]: %s", c->topic, pid, rd_kafka_err2str(e));
            break;
        }
        rd_kafka_topic_partition_list_add(l, c->topic, pid)->offset = hi;
    }
    rd_kafka_metadata_destroy(md);
    if (rc == 0) {
        e = rd_kafka_assign(rk, l);
        if (e) {
            rc = kb_error_set(err, KB_EKAFKA, -1, "assign %s: %s", c->topic, rd_kafka_err2str(e));
        }
    }
    c->partitions = np;
    if (rc == 0)
        *out = l;
    else
        rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

/** Records stored after the start offsets now: sum of (high watermark - start); -1 when unreadable. */
static int64_t stored_since(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *start) {
    int64_t n = 0;
    for (int i = 0; i < start->cnt; i++) {
        int64_t lo = 0, hi = 0;
        if (rd_kafka_query_watermark_offsets(rk, start->elems[i].topic, start->elems[i].partition, &lo, &hi, 5000))
            return -1;
        n += hi - start->elems[i].offset;
    }
    return n;
}

/** Count client-level errors (connection failures and the like). */
static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    (void)rk;
    (void)reason;
    kb_consumer *c = opaque;
    kb_errcount_add(&c->errors, err);
}

int kb_consumer_run(kb_consumer *c, kb_error *e) {
    kb_error local = KB_ERROR_INIT;
    kb_error *err = e ? e : &local;
    kb_error_clear(err);
    c->stored_records = -1;
    uint8_t *seen = NULL;
    int64_t hs = c->header_sample;
    c->samples_expected = (c->expected > 0 && hs > 0) ? (c->expected + hs - 1) / hs : 0;
    if (c->samples_expected > 0) {
        seen = calloc((size_t)(c->samples_expected + 7) / 8, 1);
        if (!seen) {
            return kb_error_set(err, KB_ENOMEM, -1, "out of memory for %lld sequence numbers",
                                (long long)c->samples_expected);
        }
    }
    rd_kafka_conf_t *conf = kb_conf_new(&c->props, err);
    if (!conf) {
        free(seen);
        return err->code;
    }
    char gid[64];
    snprintf(gid, sizeof(gid), "kbench-%016llx", (unsigned long long)c->run_id);
    if (!kb_props_get(&c->props, "group.id"))
        rd_kafka_conf_set(conf, "group.id", gid, NULL, 0);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", NULL, 0);
    rd_kafka_conf_set(conf, "enable.auto.offset.store", "false", NULL, 0);
    rd_kafka_conf_set_opaque(conf, c);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_t *rk = kb_client_new(RD_KAFKA_CONSUMER, conf, err);
    if (!rk) {
        free(seen);
        return err->code;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *start = NULL;
    int tms = (int)(c->connect_timeout_s * 1000);
    if (kb_wait_reachable(rk, kb_props_get(&c->props, "bootstrap.servers"), tms, err) < 0)
        goto out;
    if (assign_at_end(rk, c, tms, &start, err) < 0)
        goto out;
    c->t_start = kb_now_ns();
    if (c->interval_ns > 0 && kb_iv_init(&c->iv, c->interval_ns, c->t_start, err) < 0)
        goto out;
    atomic_store(&c->ready, 1);
    int64_t deadline = c->t_start + (int64_t)(c->timeout_s * 1e9);
    int64_t target = c->expected, samples_seen = 0;
    int rechecked = 0;
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        if (c->expected > 0 && c->records >= target && samples_seen >= c->samples_expected) {
            if (rechecked)
                break;
            /* everything expected arrived: were more records (duplicates) stored than that? */
            rechecked = 1;
            c->stored_records = stored_since(rk, start);
            if (c->stored_records > c->records)
                target = c->stored_records;
            continue;
        }
        if (c->max_records > 0 && c->records >= c->max_records)
            break;
        int64_t now = kb_now_ns();
        if (now >= deadline) {
            c->timed_out = 1;
            break;
        }
        int64_t left_ms = (deadline - now) / 1000000;
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, left_ms < 100 ? (int)left_ms + 1 : 100);
        now = kb_now_ns();
        if (c->iv.width_ns)
            kb_iv_at(&c->iv, now); /* also while nothing arrives: a stall is a run of empty intervals */
        if (!m)
            continue;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                kb_errcount_add(&c->errors, m->err);
            rd_kafka_message_destroy(m);
            continue;
        }
        rd_kafka_headers_t *h = NULL;
        rd_kafka_message_headers(m, &h);
        const void *hv = NULL;
        size_t hsz = 0;
        int64_t t = -1, seq = -1, run = 0;
        if (h && !rd_kafka_header_get_last(h, KB_HDR_NAME, &hv, &hsz) && hsz == KB_HDR_LEN) {
            t = (int64_t)kb_rd64((const uint8_t *)hv + KB_HDR_TIME_OFF);
            seq = (int64_t)kb_rd64((const uint8_t *)hv + KB_HDR_SEQ_OFF);
            run = (int64_t)kb_rd64((const uint8_t *)hv + KB_HDR_RUN_OFF);
        }
        if (t >= 0 && seq >= 0 && c->run_id && (uint64_t)run != c->run_id) {
            c->foreign++; /* a sampled record of another run: not ours */
            rd_kafka_message_destroy(m);
            continue;
        }
        if (c->records == 0)
            c->t_first = now;
        c->t_last = now;
        c->records++;
        c->bytes += (int64_t)m->len;
        if (c->iv.width_ns) {
            c->iv.sent++;
            c->iv.bytes += (int64_t)m->len;
        }
        if (t < 0 || seq < 0) {
            c->no_header++;
        } else {
            c->sampled++;
            kb_hist_record(c->e2e, now - t);
            if (c->iv.width_ns)
                kb_hist_record(c->iv.cur, now - t);
            if (seen) {
                if (seq % hs != 0 || seq / hs >= c->samples_expected) {
                    c->out_of_range++;
                } else if (seen[(seq / hs) >> 3] & (1u << ((seq / hs) & 7))) {
                    c->sample_duplicates++;
                } else {
                    seen[(seq / hs) >> 3] |= (uint8_t)(1u << ((seq / hs) & 7));
                    samples_seen++;
                }
            }
        }
        rd_kafka_message_destroy(m);
    }
    c->stopped = atomic_load(&c->stop);
    c->duplicates = c->sample_duplicates;
    if (c->expected > 0 && c->records - c->expected > c->duplicates)
        c->duplicates = c->records - c->expected;
    c->unique = c->records - c->duplicates;
    c->samples_missing = c->samples_expected - samples_seen;
out:
    c->t_end = kb_now_ns();
    kb_iv_finish(&c->iv, c->t_end);
    atomic_store(&c->ready, 1); /* never leave a waiter hanging, even on error */
    if (start)
        rd_kafka_topic_partition_list_destroy(start);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    free(seen);
    return err->code;
}
