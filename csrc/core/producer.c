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
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "wire.h"
#include "pacing.h"

/** Due time of message seq on the fixed-rate schedule. */
static inline int64_t due_of(const kb_producer *p, int64_t seq) {
    kb_pace s = {.t0 = p->t0, .rate = p->rate};
    return kb_pace_due(&s, seq);
}

#define KB_MAX_SLOTS (1 << 27)

/** The saturated loop needs only a message's send time, which the message's opaque carries itself
 *  (no slot to take, fill, read and free per message); the fixed-rate loop also needs its sequence
 *  number (its due time): a slot. */
static inline int time_in_opaque(const kb_producer *p) {
    return INTPTR_MAX >= INT64_MAX && p->mode == KB_MODE_SATURATED;
}

/** A free slot for one in-flight message (grows by doubling), or -1 when out of memory. */
static int32_t slot_take(kb_producer *p, int64_t seq, int64_t sent) {
    if (p->slot_nfree == 0) {
        int32_t ncap = p->slot_cap ? p->slot_cap * 2 : 4096;
        if (ncap > KB_MAX_SLOTS)
            return -1;
        int64_t *a = realloc(p->slot_seq, (size_t)ncap * sizeof(int64_t));
        if (a)
            p->slot_seq = a;
        int64_t *b = realloc(p->slot_sent, (size_t)ncap * sizeof(int64_t));
        if (b)
            p->slot_sent = b;
        int32_t *f = realloc(p->slot_free, (size_t)ncap * sizeof(int32_t));
        if (f)
            p->slot_free = f;
        if (!a || !b || !f)
            return -1;
        for (int32_t i = ncap - 1; i >= p->slot_cap; i--)
            p->slot_free[p->slot_nfree++] = i;
        p->slot_cap = ncap;
    }
    int32_t i = p->slot_free[--p->slot_nfree];
    p->slot_seq[i] = seq;
    p->slot_sent[i] = sent;
    return i;
}

static void slot_put(kb_producer *p, int32_t i) {
    if (i >= 0 && i < p->slot_cap)
        p->slot_free[p->slot_nfree++] = i;
}

/** Delivery report: count and record latencies (runs in the loop's thread). */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    kb_producer *p = opaque;
    int64_t now = p->dr_now > 0 ? p->dr_now : kb_now_ns();
    int64_t seq = 0, sent;
    if (time_in_opaque(p)) {
        sent = (int64_t)(intptr_t)m->_private;
    } else {
        int32_t slot = (int32_t)(intptr_t)m->_private;
        if (slot < 0 || slot >= p->slot_cap)
            return;
        seq = p->slot_seq[slot];
        sent = p->slot_sent[slot];
        slot_put(p, slot);
    }
    if (p->iv.width_ns)
        kb_iv_at(&p->iv, now);
    if (m->err) {
        p->failed++;
        p->dr_failed++;
        kb_errcount_add(&p->dr_errors, m->err);
        if (p->iv.width_ns)
            p->iv.failed++;
        return;
    }
    p->delivered++;
    int64_t lat = now - sent;
    if (p->mode == KB_MODE_FIXED_RATE) {
        int64_t due = due_of(p, seq);
        lat = now - due;
        if (due >= p->lat_from) {
            kb_hist_record(p->service, now - sent);
            kb_hist_record(p->corrected, lat);
        }
    } else if (sent >= p->lat_from) {
        kb_hist_record(p->service, lat);
    }
    if (p->iv.width_ns) {
        p->iv.acked++;
        kb_hist_record(p->iv.cur, lat);
    }
}

/**
 * rd_kafka_poll(rk, 0), the delivery reports it serves stamped with one clock read taken before
 * (the saturated loop: ~1000 reports a poll, one read instead of one each).  A report queued
 * before the poll arrived before that read; one queued while they are served (librdkafka queues
 * a produce response's reports as one op) is stamped at most the serving time early.
 */
static void poll_stamped(kb_producer *p, rd_kafka_t *rk) {
    p->dr_now = kb_now_ns();
    rd_kafka_poll(rk, 0);
    p->dr_now = 0;
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
    kb_conn_err_note(&p->conn_err, err, reason);
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char buf[KB_ERRLEN];
        rd_kafka_fatal_error(rk, buf, sizeof(buf));
        kb_error_set(p->run_err, KB_EKAFKA, -1, "fatal librdkafka error: %s (%.250s)", buf, reason);
        atomic_store(&p->stop, 1);
    }
}

/** Build the kbench header for one message (one allocation for the list, one for the header). */
static rd_kafka_headers_t *make_headers(int64_t sent, int64_t seq, uint64_t run_id) {
    uint8_t b[KB_HDR_LEN];
    kb_be64(b + KB_HDR_TIME_OFF, (uint64_t)sent);
    kb_be64(b + KB_HDR_SEQ_OFF, (uint64_t)seq);
    kb_be64(b + KB_HDR_RUN_OFF, run_id);
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

/**
 * Wait until the absolute time t, never spinning.  With an event fd (librdkafka
 * writes to it when a delivery report reaches the empty main queue), sleep in
 * ppoll() and serve reports the moment they arrive, so an ack's time is not
 * rounded up to the next wake; without one, sleep and serve them at the wake.
 */
static void wait_until(rd_kafka_t *rk, int efd, int64_t t) {
    for (;;) {
        int64_t left = t - kb_now_ns();
        if (left <= 0)
            return;
        if (efd < 0) {
            if (left > 2000000) {
                rd_kafka_poll(rk, (int)(left / 1000000) - 1);
                continue;
            }
            sleep_until(t);
            return;
        }
        struct pollfd pfd = {.fd = efd, .events = POLLIN};
        struct timespec ts = {.tv_sec = left / 1000000000LL, .tv_nsec = left % 1000000000LL};
        if (ppoll(&pfd, 1, &ts, NULL) > 0) {
            uint64_t v;
            if (read(efd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
                /* nothing to do: the next poll serves whatever is queued */
            }
            rd_kafka_poll(rk, 0); /* drains the queue, so the next report signals again */
        }
    }
}

/** Take the per-thread CPU sample that opens the window, once, when due. */
static inline void cpu_mark(kb_producer *p, int64_t now) {
    if (p->cpu_skip_s >= 0 && !p->cpu_start.ok && now >= p->t0 + (int64_t)(p->cpu_skip_s * 1e9)) {
        kb_thread_cpu_read(kb_gettid(), KB_CLIENT_THREAD_PREFIX, &p->cpu_start, NULL);
        p->win_delivered0 = p->delivered; /* delivery reports are served on this thread */
    }
}

/** Check the topic exists (metadata); 0 or < 0 with err set. */
static int check_topic(rd_kafka_t *rk, const char *topic, int tms, kb_error *err) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, tms);
    rd_kafka_topic_destroy(rkt);
    int rc = 0;
    if (e) {
        rc = kb_error_set(err, KB_EKAFKA, -1, "metadata for topic '%s': %s", topic, rd_kafka_err2str(e));
    } else if (md->topic_cnt != 1 || md->topics[0].err) {
        rc = kb_error_set(err, KB_EKAFKA, -1,
                          "topic '%s' not available (%s); create it first (kbench.admin.create_topic)", topic,
                          md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "absent");
    }
    if (md)
        rd_kafka_metadata_destroy(md);
    return rc;
}

/** Key of message seq under the key policy (NULL = no key). */
static const char *key_of(const kb_producer *p, char **keys, int64_t seq, uint64_t *rnd, size_t *klen) {
    *klen = 0;
    if (!keys)
        return NULL;
    int64_t k;
    if (p->key_policy == KB_KEYS_ROUND_ROBIN) {
        k = seq % p->nkeys;
    } else {
        *rnd ^= *rnd << 13;
        *rnd ^= *rnd >> 7;
        *rnd ^= *rnd << 17;
        k = (int64_t)(*rnd % (uint64_t)p->nkeys);
    }
    const char *key = keys[k];
    *klen = key ? strlen(key) : 0;
    return key;
}

/**
 * Produce message seq (due at `due`, 0 in saturated mode), waiting for room
 * while the queue is full.  0 when sent; 1 when the loop must end (stop
 * requested while the queue was full, or no memory for a slot).
 */
static int send_one(kb_producer *p, rd_kafka_t *rk, rd_kafka_topic_t *rkt, int64_t seq, int64_t due, size_t rec,
                    const char *key, size_t klen) {
    const uint8_t *val = p->payload + p->offsets[rec];
    size_t vlen = (size_t)(p->offsets[rec + 1] - p->offsets[rec]);
    int with_header = p->header_sample > 0 && (p->seq_base + seq) % p->header_sample == 0;
    rd_kafka_resp_err_t e;
    int64_t sent;
    for (;;) {
        sent = kb_now_ns();
        int32_t slot = -1;
        void *opaque = (void *)(intptr_t)sent;
        if (!time_in_opaque(p)) {
            slot = slot_take(p, seq, sent);
            if (slot < 0) {
                kb_error_set(p->run_err, KB_ENOMEM, -1, "out of memory for in-flight message slots");
                return 1;
            }
            opaque = (void *)(intptr_t)slot;
        }
        if (with_header) {
            rd_kafka_headers_t *hdrs = make_headers(sent, p->seq_base + seq, p->run_id);
            e = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(p->partition), RD_KAFKA_V_MSGFLAGS(0),
                                  RD_KAFKA_V_VALUE((void *)val, vlen), RD_KAFKA_V_KEY(key, klen),
                                  RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
            if (e)
                rd_kafka_headers_destroy(hdrs);
        } else {
            /* rd_kafka_produce(), the call rdkafka_performance makes: producev() walks its
             * argument list for every message */
            e = rd_kafka_produce(rkt, p->partition, 0, (void *)val, vlen, key, klen, opaque) == -1
                    ? rd_kafka_last_error()
                    : RD_KAFKA_RESP_ERR_NO_ERROR;
        }
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
            break;
        slot_put(p, slot);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || atomic_load(&p->stop))
            break;
        p->queue_full++;
        rd_kafka_poll(rk, 10); /* wait for deliveries to make room */
    }
    if (e) {
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            return 1; /* stop requested while the queue was full */
        p->failed++;
        kb_errcount_add(&p->dr_errors, e);
        if (p->iv.width_ns) {
            kb_iv_at(&p->iv, sent);
            p->iv.failed++;
        }
        return 0;
    }
    if (p->sent == 0)
        p->t_first_send = sent;
    p->t_last_send = sent;
    p->sent++;
    p->sampled += with_header;
    p->bytes += (int64_t)vlen;
    if (p->iv.width_ns) {
        kb_iv_at(&p->iv, sent);
        p->iv.sent++;
        p->iv.bytes += (int64_t)vlen;
    }
    if (p->mode == KB_MODE_FIXED_RATE) {
        if (due >= p->lat_from)
            kb_hist_record(p->delay, sent - due);
        p->t_last_due = due;
    }
    return 0;
}

/** The fixed-rate loop's clock and client (kb_pace_ops over this producer). */
typedef struct {
    kb_producer *p;
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    int efd;
    char **keys;
    uint64_t *rnd;
    size_t *rec;
} fixed_loop;

static int64_t fixed_wait(void *user, int64_t wake) {
    fixed_loop *l = user;
    wait_until(l->rk, l->efd, wake);
    int64_t now = kb_now_ns();
    cpu_mark(l->p, now);
    if (l->p->iv.width_ns)
        kb_iv_at(&l->p->iv, now); /* close intervals with no event in them too */
    return now;
}

static int fixed_send(void *user, int64_t seq, int64_t due) {
    fixed_loop *l = user;
    kb_producer *p = l->p;
    size_t klen;
    const char *key = key_of(p, l->keys, seq, l->rnd, &klen);
    int halt = send_one(p, l->rk, l->rkt, seq, due, *l->rec, key, klen) ||
               atomic_load_explicit(&p->stop, memory_order_relaxed);
    if (++*l->rec == p->nrec)
        *l->rec = 0;
    if (((seq + 1) & 63) == 0)
        rd_kafka_poll(l->rk, 0);
    return halt;
}

static int fixed_stopped(void *user) {
    fixed_loop *l = user;
    return atomic_load_explicit(&l->p->stop, memory_order_relaxed);
}

static void fixed_after_wake(void *user) {
    fixed_loop *l = user;
    rd_kafka_poll(l->rk, 0); /* delivery reports between ticks */
}

/** What a run holds from its start to its end: the client, its topic handle, the timer slack it
 *  changed and the key set. */
static void run_release(const kb_producer *p, rd_kafka_t *rk, rd_kafka_topic_t *rkt, char **keys, int old_slack) {
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    prctl(PR_SET_TIMERSLACK, old_slack > 0 ? old_slack : 50000, 0, 0, 0);
    if (keys) {
        for (int64_t k = 0; k < p->nkeys; k++)
            free(keys[k]);
        free(keys);
    }
}

int kb_producer_run(kb_producer *p, kb_error *e) {
    kb_error local = KB_ERROR_INIT;
    kb_error *err = e ? e : &local;
    kb_error_clear(err);
    p->run_err = err;
    p->dr_now = 0;
    if (p->nrec == 0 || !p->topic || (p->count <= 0 && p->duration_s <= 0) || p->header_sample < 0 ||
        (p->mode == KB_MODE_FIXED_RATE && !(p->rate > 0)))
        return kb_error_set(err, KB_EINVAL, -1,
                            "bad producer arguments (records, count/duration, rate or header sample)");
    rd_kafka_conf_t *conf = kb_conf_new(&p->props, err);
    if (!conf)
        return err->code;
    rd_kafka_conf_set_opaque(conf, p);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    if (p->stats_path) {
        FILE *f = fopen(p->stats_path, "w");
        if (!f) {
            kb_error_set(err, KB_EIO, -1, "cannot write statistics file %s: %s", p->stats_path, strerror(errno));
            rd_kafka_conf_destroy(conf);
            return err->code;
        }
        fclose(f);
        rd_kafka_conf_set_stats_cb(conf, on_stats);
    }
    rd_kafka_t *rk = kb_client_new(RD_KAFKA_PRODUCER, conf, err);
    if (!rk)
        return err->code;
    int tms = (int)(p->connect_timeout_s * 1000);
    if (kb_wait_reachable(rk, &p->props, tms, &p->conn_err, err) < 0 ||
        check_topic(rk, p->topic, tms, err) < 0) {
        rd_kafka_destroy(rk);
        return err->code;
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
    int64_t end_ns = INT64_MAX;
    p->t0 = kb_now_ns() + 1000000; /* first message due 1 ms from now */
    /* no skip: every message (a saturated loop sends from now, before t0) */
    p->lat_from = p->latency_skip_ns > 0 ? p->t0 + p->latency_skip_ns : INT64_MIN;
    if (p->interval_ns > 0 && kb_iv_init(&p->iv, p->interval_ns, p->t0 - 1000000, err) < 0) {
        run_release(p, rk, rkt, keys, old_slack);
        return err->code;
    }
    if (p->duration_s > 0)
        end_ns = p->t0 + (int64_t)(p->duration_s * 1e9);
    int64_t seq = 0;
    size_t rec = 0;
    int halt = 0;
    if (p->mode == KB_MODE_FIXED_RATE) {
        kb_pace pace = {.t0 = p->t0,
                        .rate = p->rate,
                        .tick_ns = p->tick_ns > 0 ? p->tick_ns : KB_DEFAULT_TICK_NS,
                        .count = p->count,
                        .end_ns = end_ns};
        /* delivery reports wake the loop through an event fd (no fd: served at the wakes) */
        int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        rd_kafka_queue_t *mainq = efd >= 0 ? rd_kafka_queue_get_main(rk) : NULL;
        if (mainq) {
            static const uint64_t one = 1;
            rd_kafka_queue_io_event_enable(mainq, efd, &one, sizeof(one));
            rd_kafka_poll(rk, 0); /* the queue must be empty for the next report to signal */
        } else if (efd >= 0) {
            close(efd);
            efd = -1;
        }
        fixed_loop fl = {.p = p, .rk = rk, .rkt = rkt, .efd = efd, .keys = keys, .rnd = &rnd, .rec = &rec};
        kb_pace_ops ops = {.user = &fl,
                           .wait = fixed_wait,
                           .send = fixed_send,
                           .stopped = fixed_stopped,
                           .after_wake = fixed_after_wake};
        seq = kb_pace_run(&pace, &ops, &p->wakes);
        if (mainq) {
            rd_kafka_queue_io_event_enable(mainq, -1, NULL, 0);
            rd_kafka_queue_destroy(mainq);
            close(efd);
        }
    } else {
        while (!halt && !atomic_load_explicit(&p->stop, memory_order_relaxed)) {
            if (p->count > 0 && seq >= p->count)
                break;
            if ((seq & 1023) == 0) {
                int64_t now = kb_now_ns();
                if (now >= end_ns)
                    break;
                cpu_mark(p, now);
                if (p->iv.width_ns)
                    kb_iv_at(&p->iv, now);
            }
            size_t klen;
            const char *key = key_of(p, keys, seq, &rnd, &klen);
            halt = send_one(p, rk, rkt, seq, 0, rec, key, klen);
            seq++;
            if (++rec == p->nrec)
                rec = 0;
            if ((seq & 1023) == 0) /* as rdkafka_performance: the reports served in batches of ~1000 */
                poll_stamped(p, rk);
        }
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
    kb_iv_finish(&p->iv, p->t_end);
    /* close the CPU window while the client's threads are still alive to be read */
    if (p->cpu_start.ok)
        kb_thread_cpu_read(kb_gettid(), KB_CLIENT_THREAD_PREFIX, &p->cpu_end, NULL);
    p->undelivered = p->sent - p->delivered - p->dr_failed;
    run_release(p, rk, rkt, keys, old_slack);
    free(p->slot_seq);
    free(p->slot_sent);
    free(p->slot_free);
    p->slot_seq = p->slot_sent = NULL;
    p->slot_free = NULL;
    p->slot_cap = p->slot_nfree = 0;
    p->run_err = NULL;
    return err->code;
}
