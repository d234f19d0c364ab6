/*
 * producer.c - the producer loop.
 *
 * The client handle lives only inside kb_producer_run(): it is created,
 * used and destroyed by the calling thread, and every callback (delivery
 * report, statistics, error) is served by that same thread through
 * rd_kafka_poll()/rd_kafka_flush(), so callbacks never race the loop and
 * never touch Python.  (confluent-kafka-python likewise serves callbacks
 * only from poll/flush and never destroys a handle from a callback.)
 */
#define _GNU_SOURCE
#include "producer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "clock.h"
#include "wire.h"

/** Due time of message seq on the fixed-rate schedule. */
static inline int64_t due_of(const kb_producer *p, int64_t seq) {
    return p->t0 + (int64_t)((double)seq * (1e9 / p->rate));
}

/** Delivery report: count and record latencies (runs in the loop's thread). */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    kb_producer *p = opaque;
    int64_t now = kb_now_ns();
    if (m->err) {
        p->failed++;
        p->dr_failed++;
        kb_errcount_add(&p->dr_errors, m->err);
        return;
    }
    p->delivered++;
    if (p->no_headers) { /* the opaque is the send time */
        kb_hist_record(p->service, now - (int64_t)(intptr_t)m->_private);
        return;
    }
    rd_kafka_headers_t *h = NULL;
    const void *v;
    size_t sz;
    if (rd_kafka_message_headers(m, &h) || rd_kafka_header_get_last(h, KB_HDR_NAME, &v, &sz) ||
        sz != KB_HDR_LEN)
        return;
    int64_t sent = kb_get_be64((const uint8_t *)v + KB_HDR_TIME_OFF);
    kb_hist_record(p->service, now - sent);
    if (p->mode == KB_MODE_FIXED_RATE) {
        int64_t seq = (int64_t)(intptr_t)m->_private;
        kb_hist_record(p->corrected, now - due_of(p, seq));
    }
}

/** Statistics JSON: one object per line in the statistics file. */
static int on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
    (void)rk;
    kb_producer *p = opaque;
    FILE *f = p->stats_path ? fopen(p->stats_path, "a") : NULL;
    if (f) {
        fwrite(json, 1, len, f);
        fputc('\n', f);
        fclose(f);
    }
    p->stats_count++;
    return 0; /* librdkafka frees json */
}

/** Client-level errors (connection failures, fatal errors): counted; fatal ones stop the run. */
static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    kb_producer *p = opaque;
    kb_errcount_add(&p->client_errors, err);
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char buf[200];
        rd_kafka_fatal_error(rk, buf, sizeof(buf));
        snprintf(p->err, sizeof(p->err), "fatal librdkafka error: %s (%.250s)", buf, reason);
        atomic_store(&p->stop, 1);
    }
}

/** Build the kbench header for one message (one allocation for the list, one for the header). */
static rd_kafka_headers_t *make_headers(int64_t sent, int64_t seq, uint64_t run_id) {
    uint8_t b[KB_HDR_LEN];
    kb_put_be64(b + KB_HDR_TIME_OFF, (uint64_t)sent);
    kb_put_be64(b + KB_HDR_SEQ_OFF, (uint64_t)seq);
    kb_put_be64(b + KB_HDR_RUN_OFF, run_id);
    rd_kafka_headers_t *h = rd_kafka_headers_new(1);
    rd_kafka_header_add(h, KB_HDR_NAME, KB_HDR_NAME_LEN, b, KB_HDR_LEN);
    return h;
}

/** Sleep until the absolute monotonic time t (ns). */
static void sleep_until(int64_t t) {
    struct timespec ts = {.tv_sec = t / 1000000000LL, .tv_nsec = t % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/** Wait until due, serving callbacks meanwhile; never sleeps past due by design. */
static void wait_due(rd_kafka_t *rk, int64_t due) {
    for (;;) {
        int64_t left = due - kb_now_ns();
        if (left <= 0)
            return;
        if (left > 2000000) {
            rd_kafka_poll(rk, (int)(left / 1000000) - 1);
        } else if (left > 40000) {
            rd_kafka_poll(rk, 0);
            sleep_until(due - 20000);
        }
        /* else spin the last few µs */
    }
}

/** Check the topic exists (metadata); 0 or -1 with err set. */
static int check_topic(rd_kafka_t *rk, const char *topic, int tms, char *err, size_t errlen) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, tms);
    rd_kafka_topic_destroy(rkt);
    int rc = 0;
    if (e) {
        snprintf(err, errlen, "metadata for topic '%s': %s", topic, rd_kafka_err2str(e));
        rc = -1;
    } else if (md->topic_cnt != 1 || md->topics[0].err) {
        snprintf(err, errlen, "topic '%s' not available (%s); create it first (kbench.admin.create_topic)", topic,
                 md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "absent");
        rc = -1;
    }
    if (md)
        rd_kafka_metadata_destroy(md);
    return rc;
}

int kb_producer_run(kb_producer *p) {
    char err[KB_KERRLEN] = "";
    p->err[0] = 0;
    if (p->nrec == 0 || !p->topic || (p->count <= 0 && p->duration_s <= 0) ||
        (p->mode == KB_MODE_FIXED_RATE && (!(p->rate > 0) || p->no_headers))) {
        snprintf(p->err, sizeof(p->err), "bad producer arguments (records, count/duration or rate)");
        return -1;
    }
    rd_kafka_conf_t *conf = kb_conf_new(&p->props, err, sizeof(err));
    if (!conf) {
        snprintf(p->err, sizeof(p->err), "%s", err);
        return -1;
    }
    rd_kafka_conf_set_opaque(conf, p);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    if (p->stats_path) {
        FILE *f = fopen(p->stats_path, "w");
        if (!f) {
            snprintf(p->err, sizeof(p->err), "cannot write statistics file %s: %s", p->stats_path, strerror(errno));
            rd_kafka_conf_destroy(conf);
            return -1;
        }
        fclose(f);
        rd_kafka_conf_set_stats_cb(conf, on_stats);
    }
    rd_kafka_t *rk = kb_client_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!rk) {
        snprintf(p->err, sizeof(p->err), "%s", err);
        return -1;
    }
    int tms = (int)(p->connect_timeout_s * 1000);
    if (kb_wait_reachable(rk, kb_props_get(&p->props, "bootstrap.servers"), tms, err, sizeof(err)) < 0 ||
        check_topic(rk, p->topic, tms, err, sizeof(err)) < 0) {
        snprintf(p->err, sizeof(p->err), "%s", err);
        rd_kafka_destroy(rk);
        return -1;
    }
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, p->topic, NULL);

    /* precompute the key set */
    char **keys = NULL;
    if (p->key_policy != KB_KEYS_NONE && p->nkeys > 0) {
        keys = calloc((size_t)p->nkeys, sizeof(char *));
        for (int64_t k = 0; keys && k < p->nkeys; k++) {
            keys[k] = malloc(24);
            if (keys[k])
                snprintf(keys[k], 24, "key-%lld", (long long)k);
        }
    }
    int old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);

    uint64_t rnd = 0x9E3779B97F4A7C15ULL ^ p->run_id;
    int64_t end_ns = p->duration_s > 0 ? 0 : INT64_MAX;
    p->t0 = kb_now_ns() + 1000000; /* first message due 1 ms from now */
    if (p->duration_s > 0)
        end_ns = p->t0 + (int64_t)(p->duration_s * 1e9);
    int64_t seq = 0;
    size_t rec = 0;
    while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
        if (p->count > 0 && seq >= p->count)
            break;
        int64_t due = 0;
        if (p->mode == KB_MODE_FIXED_RATE) {
            due = due_of(p, seq);
            if (due >= end_ns)
                break;
            wait_due(rk, due);
        } else if ((seq & 1023) == 0 && kb_now_ns() >= end_ns) {
            break;
        }
        const char *key = NULL;
        size_t klen = 0;
        if (keys) {
            int64_t k;
            if (p->key_policy == KB_KEYS_ROUND_ROBIN) {
                k = seq % p->nkeys;
            } else {
                rnd ^= rnd << 13;
                rnd ^= rnd >> 7;
                rnd ^= rnd << 17;
                k = (int64_t)(rnd % (uint64_t)p->nkeys);
            }
            key = keys[k];
            klen = key ? strlen(key) : 0;
        }
        const uint8_t *val = p->payload + p->offsets[rec];
        size_t vlen = (size_t)(p->offsets[rec + 1] - p->offsets[rec]);
        rd_kafka_resp_err_t e;
        int64_t sent;
        for (;;) {
            sent = kb_now_ns();
            if (p->no_headers) {
                e = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(p->partition),
                                      RD_KAFKA_V_MSGFLAGS(0), RD_KAFKA_V_VALUE((void *)val, vlen),
                                      RD_KAFKA_V_KEY(key, klen), RD_KAFKA_V_OPAQUE((void *)(intptr_t)sent),
                                      RD_KAFKA_V_END);
                if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                    break;
            } else {
                rd_kafka_headers_t *hdrs = make_headers(sent, p->seq_base + seq, p->run_id);
                e = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(p->partition),
                                      RD_KAFKA_V_MSGFLAGS(0), RD_KAFKA_V_VALUE((void *)val, vlen),
                                      RD_KAFKA_V_KEY(key, klen), RD_KAFKA_V_HEADERS(hdrs),
                                      RD_KAFKA_V_OPAQUE((void *)(intptr_t)seq), RD_KAFKA_V_END);
                if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                    break;
                rd_kafka_headers_destroy(hdrs);
            }
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || atomic_load(&p->stop))
                break;
            p->queue_full++;
            rd_kafka_poll(rk, 10); /* wait for deliveries to make room */
        }
        if (e) {
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                break; /* stop requested while the queue was full */
            p->failed++;
            kb_errcount_add(&p->dr_errors, e);
        } else {
            if (p->sent == 0)
                p->t_first_send = sent;
            p->t_last_send = sent;
            p->sent++;
            p->bytes += (int64_t)vlen;
            if (p->mode == KB_MODE_FIXED_RATE) {
                kb_hist_record(p->delay, sent - due);
                p->t_last_due = due;
            }
        }
        seq++;
        if (++rec == p->nrec)
            rec = 0;
        if ((seq & 63) == 0)
            rd_kafka_poll(rk, 0);
    }
    /* flush: bounded, interruptible */
    int64_t flush_end = kb_now_ns() + (int64_t)(p->flush_timeout_s * 1e9);
    while (rd_kafka_outq_len(rk) > 0 && kb_now_ns() < flush_end && !atomic_load(&p->stop))
        rd_kafka_flush(rk, 100);
    p->stopped = atomic_load(&p->stop);
    if (rd_kafka_outq_len(rk) > 0) {
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(rk, 2000); /* serve the purged messages' reports */
    }
    p->t_end = kb_now_ns();
    p->undelivered = p->sent - p->delivered - p->dr_failed;
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    prctl(PR_SET_TIMERSLACK, old_slack > 0 ? old_slack : 50000, 0, 0, 0);
    if (keys) {
        for (int64_t k = 0; k < p->nkeys; k++)
            free(keys[k]);
        free(keys);
    }
    return p->err[0] ? -1 : 0;
}
