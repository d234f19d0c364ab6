/*
 * consumer.c - the consumer loop.  Like the producer, the client handle is
 * created, used and destroyed by the calling thread only.
 */
#define _GNU_SOURCE
#include "consumer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "wire.h"

/** The metadata of c->topic alone into *md (the caller destroys it); 0, or KB_EKAFKA with err set. */
static int topic_metadata(rd_kafka_t *rk, const kb_consumer *c, int tms, const struct rd_kafka_metadata **md,
                          kb_error *err) {
    *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, c->topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, md, tms);
    rd_kafka_topic_destroy(rkt);
    if (e || (*md)->topic_cnt != 1 || (*md)->topics[0].err) {
        kb_error_set(err, KB_EKAFKA, -1, "topic '%s' not available (%s); create it first", c->topic,
                     e ? rd_kafka_err2str(e)
                       : ((*md)->topic_cnt ? rd_kafka_err2str((*md)->topics[0].err) : "absent"));
        if (*md)
            rd_kafka_metadata_destroy(*md);
        *md = NULL;
        return KB_EKAFKA;
    }
    return 0;
}

/** Partition pid's low and high watermarks, retried until tms ms have passed (right after topic
 *  creation a leader may not serve yet); 0, or KB_EKAFKA with err set. */
static int watermarks(rd_kafka_t *rk, kb_consumer *c, int32_t pid, int tms, int64_t *lo, int64_t *hi,
                      kb_error *err) {
    int64_t until = kb_now_ns() + (int64_t)tms * 1000000;
    rd_kafka_resp_err_t e;
    while ((e = rd_kafka_query_watermark_offsets(rk, c->topic, pid, lo, hi, 2000)) != 0 && kb_now_ns() < until &&
           !atomic_load(&c->stop))
        rd_kafka_poll(rk, 100);
    if (e)
        return kb_error_set(err, KB_EKAFKA, -1, "watermarks of %s [%d]: %s", c->topic, pid, rd_kafka_err2str(e));
    return 0;
}

/** One batch being served: the records the client had queued, handed to the loop's per-record function. */
typedef struct kb_batch {
    kb_consumer *c;
    int64_t now;      /* the clock, read once per batch */
    int rc;           /* < 0: the per-record function failed (err set); the rest of the batch is dropped */
    kb_error *err;
    uint8_t *seen;    /* assign mode: the sampled sequence numbers' bitmap */
    int64_t *samples_seen;
    int eof;          /* group mode: a partition reached its end in this batch */
    int clocked;      /* 1 once now was read for this batch */
    int (*record)(struct kb_batch *b, rd_kafka_message_t *m);
} kb_batch;

/** One dequeued message of a batch into the loop's per-record function. */
static void on_record(rd_kafka_message_t *m, kb_batch *b) {
    kb_consumer *c = b->c;
    if (b->rc < 0)
        return;
    if (m->err) {
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            b->eof = 1;
        else
            kb_errcount_add(&c->errors, m->err);
        if (c->group && m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            b->record(b, m); /* marks the partition at its end */
        return;
    }
    if (c->max_records > 0 && c->records >= c->max_records)
        return; /* the rest of the batch is past the count: not read */
    b->rc = b->record(b, m);
}

static int64_t process_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/** Records dequeued at most per batch (rd_kafka_consume_batch_queue). */
#define KB_BATCH 1024

/** The batch's one clock read: b->now, and the time series advanced to it (also when nothing
 *  arrived: a stall is a run of empty intervals). */
static void batch_clock(kb_batch *b) {
    b->now = kb_now_ns();
    if (b->c->iv.width_ns)
        kb_iv_at(&b->c->iv, b->now);
    b->clocked = 1;
}

/** After a batch that read records (before: the count before it): the steady window's edge. */
static void batch_end(kb_consumer *c, int64_t before, int64_t now) {
    if (c->cpu_window && c->records > before) {
        int64_t *w = before == 0 ? c->w0 : c->w1;
        w[0] = c->records;
        w[1] = now;
        w[2] = process_cpu_ns();
        w[3] = kb_thread_cpu_ns();
    }
}

/** The wait for a batch's first message: at most 100 ms, less when the deadline is nearer. */
static int wait_ms(int64_t deadline, int64_t now) {
    int64_t left_ms = (deadline - now) / 1000000;
    return left_ms < 100 ? (int)(left_ms < 0 ? 0 : left_ms) + 1 : 100;
}

/** One batch from q (the consumer queue): wait at most tmo ms for the first message, then take every
 *  message already queued, up to KB_BATCH, without waiting (rd_kafka_consume_batch_queue waits for a
 *  full batch until its timeout: one call of 1 with the timeout, one of the rest with none, so a
 *  record is never held back).  Callbacks (rebalance, statistics, errors) are served inside.  One
 *  clock read for the batch: *now is the time after the dequeue. */
static int serve_batch(rd_kafka_queue_t *q, kb_batch *b, int tmo, int64_t *now) {
    kb_consumer *c = b->c;
    rd_kafka_message_t *ms[KB_BATCH];
    int64_t before = c->records;
    ssize_t n = rd_kafka_consume_batch_queue(q, tmo, ms, 1);
    if (n == 1) {
        ssize_t more = rd_kafka_consume_batch_queue(q, 0, ms + 1, KB_BATCH - 1);
        if (more > 0)
            n += more;
    }
    if (n > 0 || tmo > 0) { /* else the caller's clock stands (nothing was waited for or read) */
        batch_clock(b);
        *now = b->now;
    }
    for (ssize_t i = 0; i < n; i++) {
        on_record(ms[i], b);
        rd_kafka_message_destroy(ms[i]);
    }
    batch_end(c, before, *now);
    return b->rc;
}

/** rd_kafka_consume_callback_queue's per-message function: the clock is read at the batch's first message. */
static void on_message(rd_kafka_message_t *m, void *opaque) {
    kb_batch *b = opaque;
    if (!b->clocked)
        batch_clock(b);
    on_record(m, b);
}

/** One take: every message queued in mq (the partitions' messages, forwarded there) after waiting at
 *  most tmo ms for the first (0 when the consumer queue still holds something), moved out of the queue
 *  under one lock (rd_kafka_consume_callback_queue, as kcat reads; rd_kafka_consume_batch_queue locks
 *  the queue and serves the callbacks once per message); then the consumer queue cq (rebalances,
 *  statistics, errors, a partition's messages that were not forwarded) without waiting.  An op arriving
 *  on cq ends the wait on mq (wake_messages).  b->eof: a partition reached its end in this take.  One
 *  clock read for the batch, as serve_batch. */
static int serve_messages(rd_kafka_queue_t *mq, rd_kafka_queue_t *cq, kb_batch *b, int tmo, int64_t *now) {
    kb_consumer *c = b->c;
    int64_t before = c->records;
    b->clocked = 0;
    b->eof = 0;
    if (tmo > 0 && rd_kafka_queue_length(cq) > 0)
        tmo = 0; /* more than KB_BATCH messages were left there: no wait */
    rd_kafka_consume_callback_queue(mq, tmo, on_message, b);
    if (!b->clocked)
        batch_clock(b);
    *now = b->now;
    batch_end(c, before, *now);
    if (b->rc < 0)
        return b->rc;
    return serve_batch(cq, b, 0, now);
}

/** The consumer queue's event (an op enqueued on it while it was empty; librdkafka calls this from any
 *  thread with that queue locked): end the loop's wait on mq, so a rebalance is served at once. */
static void wake_messages(rd_kafka_t *rk, void *opaque) {
    (void)rk;
    rd_kafka_queue_yield(((kb_consumer *)opaque)->mq);
}

/** The steady window's figures from its edges (see consumer.h). */
static void window_close(kb_consumer *c) {
    if (!c->cpu_window || c->w1[0] <= c->w0[0])
        return;
    c->win_records = c->w1[0] - c->w0[0];
    c->win_ns = c->w1[1] - c->w0[1];
    c->win_proc_cpu_ns = c->w1[2] - c->w0[2];
    c->win_loop_cpu_ns = c->w1[3] - c->w0[3];
}

/** Partition pid's start offset by c->start_mode (lo, hi: its watermarks); 0 or KB_EKAFKA / KB_EINVAL with err set. */
static int start_offset(rd_kafka_t *rk, const kb_consumer *c, int32_t pid, int64_t lo, int64_t hi, int tms,
                        int64_t *out, kb_error *err) {
    switch (c->start_mode) {
    case KB_START_BEGINNING:
        *out = lo;
        return 0;
    case KB_START_OFFSET:
        if (c->start_value < lo || c->start_value > hi)
            return kb_error_set(err, KB_EINVAL, -1,
                                "offset %lld is outside %s [%d]'s records %lld..%lld; give an offset in that range",
                                (long long)c->start_value, c->topic, pid, (long long)lo, (long long)hi);
        *out = c->start_value;
        return 0;
    case KB_START_TIMESTAMP: {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, c->topic, pid)->offset = c->start_value;
        rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, l, tms);
        int64_t o = l->elems[0].offset;
        if (!e)
            e = l->elems[0].err;
        rd_kafka_topic_partition_list_destroy(l);
        if (e)
            return kb_error_set(err, KB_EKAFKA, -1, "offset of timestamp %lld in %s [%d]: %s",
                                (long long)c->start_value, c->topic, pid, rd_kafka_err2str(e));
        *out = o < 0 ? hi : o; /* no record at or after it: the end */
        return 0;
    }
    default:
        *out = hi;
        return 0;
    }
}

/** Assign all partitions of c->topic at their start offsets (start_mode), every partition's messages
 *  forwarded to mq first (the fetcher keeps an application's forwarding); 0 or < 0 with err set.
 *  *out = the assignment. */
static int assign_start(rd_kafka_t *rk, kb_consumer *c, int tms, rd_kafka_queue_t *mq,
                        rd_kafka_topic_partition_list_t **out, kb_error *err) {
    const struct rd_kafka_metadata *md = NULL;
    if (topic_metadata(rk, c, tms, &md, err))
        return KB_EKAFKA;
    int np = md->topics[0].partition_cnt;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
    int rc = 0;
    for (int i = 0; i < np; i++) {
        int32_t pid = md->topics[0].partitions[i].id;
        int64_t lo = 0, hi = 0, o = 0;
        if ((rc = watermarks(rk, c, pid, tms, &lo, &hi, err)) != 0 ||
            (rc = start_offset(rk, c, pid, lo, hi, tms, &o, err)) != 0)
            break;
        rd_kafka_queue_t *pq = rd_kafka_queue_get_partition(rk, c->topic, pid);
        if (!pq) {
            rc = kb_error_set(err, KB_EKAFKA, -1, "no queue for %s [%d]", c->topic, pid);
            break;
        }
        rd_kafka_queue_forward(pq, mq);
        rd_kafka_queue_destroy(pq);
        rd_kafka_topic_partition_list_add(l, c->topic, pid)->offset = o;
    }
    rd_kafka_metadata_destroy(md);
    if (rc == 0) {
        rd_kafka_resp_err_t e = rd_kafka_assign(rk, l);
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
    kb_consumer *c = opaque;
    kb_errcount_add(&c->errors, err);
    kb_conn_err_note(&c->conn_err, err, reason);
}

/** Keep the last statistics document (librdkafka frees json: return 0). */
static int on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
    (void)rk;
    kb_consumer *c = opaque;
    c->stats_count++;
    if (len > KB_STATS_MAX)
        return 0;
    char *s = malloc(len + 1);
    if (!s)
        return 0;
    memcpy(s, json, len);
    s[len] = 0;
    free(c->stats);
    c->stats = s;
    return 0;
}

/* ------------------------------------------------------------------ group mode */

void kb_consumer_free_parts(kb_consumer *c) {
    for (int i = 0; c->parts && i < c->nparts; i++)
        free(c->parts[i].runs);
    free(c->parts);
    c->parts = NULL;
    c->nparts = 0;
}

/** One sampled record's end-to-end latency (consumed at now, sent at t): into the interval always, into
 * the run's histogram once its send time is inside the latency window (the first header's send time +
 * latency_skip_ns: start-up backlogs stay out of the steady-state figures). */
static void e2e_record(kb_consumer *c, int64_t now, int64_t t, int64_t seq) {
    int inside;
    if (c->latency_from_seq > 0) {
        inside = seq >= c->latency_from_seq; /* one producer at a fixed rate: exactly its window */
    } else {
        if (!c->lat_open) {
            /* no skip: every record (partitions are read in no order of send time) */
            c->lat_from = c->latency_skip_ns > 0 ? t + c->latency_skip_ns : INT64_MIN;
            c->lat_open = 1;
        }
        inside = t >= c->lat_from;
    }
    if (inside)
        kb_hist_record(c->e2e, now - t);
    if (c->iv.width_ns)
        kb_hist_record(c->iv.cur, now - t);
}

static kb_part_seen *part_of(kb_consumer *c, int32_t pid) {
    for (int i = 0; i < c->nparts; i++)
        if (c->parts[i].partition == pid)
            return &c->parts[i];
    return NULL;
}

/** Offset o read from p: extend the current run or open a new one; 0 or KB_ENOMEM. */
static int part_read(kb_part_seen *p, int64_t o, size_t len) {
    p->records++;
    p->bytes += (int64_t)len;
    p->eof = 0;
    if (p->nruns > 0 && p->runs[2 * p->nruns - 1] == o) {
        p->runs[2 * p->nruns - 1] = o + 1;
    } else {
        if (p->nruns == p->cap) {
            int cap = p->cap ? 2 * p->cap : 4;
            int64_t *r = realloc(p->runs, sizeof(int64_t) * 2 * (size_t)cap);
            if (!r)
                return KB_ENOMEM;
            p->runs = r;
            p->cap = cap;
        }
        p->runs[2 * p->nruns] = o;
        p->runs[2 * p->nruns + 1] = o + 1;
        p->nruns++;
    }
    p->next = o + 1;
    return 0;
}

static int cmp_run(const void *a, const void *b) {
    int64_t x = ((const int64_t *)a)[0], y = ((const int64_t *)b)[0];
    return (x > y) - (x < y);
}

/** Sort p's runs and merge overlapping ones; the distinct offsets read. */
static int64_t part_normalize(kb_part_seen *p) {
    if (p->nruns == 0)
        return 0;
    qsort(p->runs, (size_t)p->nruns, 2 * sizeof(int64_t), cmp_run);
    int w = 0;
    for (int i = 1; i < p->nruns; i++) {
        if (p->runs[2 * i] <= p->runs[2 * w + 1]) {
            if (p->runs[2 * i + 1] > p->runs[2 * w + 1])
                p->runs[2 * w + 1] = p->runs[2 * i + 1];
        } else {
            w++;
            p->runs[2 * w] = p->runs[2 * i];
            p->runs[2 * w + 1] = p->runs[2 * i + 1];
        }
    }
    p->nruns = w + 1;
    int64_t n = 0;
    for (int i = 0; i < p->nruns; i++)
        n += p->runs[2 * i + 1] - p->runs[2 * i];
    return n;
}

/** Commit the position of every partition read from since its last commit (only = -1: all, else that one). */
static void commit_positions(rd_kafka_t *rk, kb_consumer *c, int async, const rd_kafka_topic_partition_list_t *only) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(c->nparts);
    for (int i = 0; i < c->nparts; i++) {
        kb_part_seen *p = &c->parts[i];
        if (p->next < 0 || p->next == p->committed)
            continue;
        if (only && !rd_kafka_topic_partition_list_find(only, c->topic, p->partition))
            continue;
        if (!only && !p->assigned)
            continue;
        rd_kafka_topic_partition_list_add(l, c->topic, p->partition)->offset = p->next;
    }
    if (l->cnt > 0) {
        rd_kafka_resp_err_t e = rd_kafka_commit(rk, l, async);
        if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
            c->commit_errors++;
        } else if (!async) { /* an asynchronous commit is repeated until a synchronous one is known to hold */
            for (int i = 0; i < l->cnt; i++)
                part_of(c, l->elems[i].partition)->committed = l->elems[i].offset;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
                         void *opaque) {
    kb_consumer *c = opaque;
    int cooperative = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        c->rebalances++;
        if (!c->t_assigned)
            c->t_assigned = kb_now_ns();
        for (int i = 0; i < parts->cnt; i++) {
            kb_part_seen *p = part_of(c, parts->elems[i].partition);
            if (p) {
                p->assigned = 1;
                p->eof = 0;
            }
            /* into the loop's queue: forwarded again at every assignment (stopping a partition's fetcher
             * drops the forwarding, and then the fetcher keeps none); a partition without a queue here is
             * fetched into the consumer queue, which the loop serves too */
            rd_kafka_queue_t *pq = rd_kafka_queue_get_partition(rk, parts->elems[i].topic, parts->elems[i].partition);
            if (pq) {
                rd_kafka_queue_forward(pq, c->mq);
                rd_kafka_queue_destroy(pq);
            }
        }
        if (cooperative)
            rd_kafka_error_destroy(rd_kafka_incremental_assign(rk, parts));
        else
            rd_kafka_assign(rk, parts);
    } else {
        commit_positions(rk, c, 0, parts); /* what was read here is the next owner's start */
        for (int i = 0; i < parts->cnt; i++) {
            kb_part_seen *p = part_of(c, parts->elems[i].partition);
            if (p)
                p->assigned = 0;
        }
        if (cooperative)
            rd_kafka_error_destroy(rd_kafka_incremental_unassign(rk, parts));
        else
            rd_kafka_assign(rk, NULL);
    }
}

/** Every partition of the topic with its watermarks; the group's start offsets committed where it had none. */
static int group_prepare(rd_kafka_t *rk, kb_consumer *c, int tms, int64_t *stored_now, kb_error *err) {
    const struct rd_kafka_metadata *md = NULL;
    if (topic_metadata(rk, c, tms, &md, err))
        return KB_EKAFKA;
    int np = md->topics[0].partition_cnt;
    c->parts = calloc((size_t)(np > 0 ? np : 1), sizeof(kb_part_seen));
    if (!c->parts) {
        rd_kafka_metadata_destroy(md);
        return kb_error_set(err, KB_ENOMEM, -1, "out of memory for %d partitions", np);
    }
    c->nparts = np;
    c->partitions = np;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
    int64_t *hi_of = calloc((size_t)(np > 0 ? np : 1), sizeof(int64_t));
    int64_t *lo_of = calloc((size_t)(np > 0 ? np : 1), sizeof(int64_t));
    int rc = 0;
    if (!hi_of || !lo_of)
        rc = kb_error_set(err, KB_ENOMEM, -1, "out of memory for %d partitions", np);
    for (int i = 0; i < np && rc == 0; i++) {
        int32_t pid = md->topics[0].partitions[i].id;
        kb_part_seen *p = &c->parts[i];
        p->partition = pid;
        p->end = p->next = p->committed = -1;
        rc = watermarks(rk, c, pid, tms, &lo_of[i], &hi_of[i], err);
        rd_kafka_topic_partition_list_add(l, c->topic, pid);
    }
    rd_kafka_metadata_destroy(md);
    for (int attempt = 0; rc == 0 && attempt < 5; attempt++) {
        rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, tms);
        if (attempt < 4 && (e == RD_KAFKA_RESP_ERR_NOT_COORDINATOR || e == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS ||
                            e == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE)) {
            /* a fresh cluster's group coordinator may still be loading or moving: ask again */
            const struct timespec backoff = {0, 200000000L};
            nanosleep(&backoff, NULL);
            continue;
        }
        if (e) {
            rc = kb_error_set(err, KB_EKAFKA, -1, "committed offsets of group for %s: %s", c->topic, rd_kafka_err2str(e));
            break;
        }
        rd_kafka_topic_partition_list_t *missing = rd_kafka_topic_partition_list_new(np);
        for (int i = 0; i < l->cnt; i++)
            if (l->elems[i].offset < 0)
                rd_kafka_topic_partition_list_add(missing, c->topic, l->elems[i].partition)->offset =
                    c->from_beginning ? lo_of[i] : hi_of[i];
        int n = missing->cnt;
        /* another member may commit first (then this commit is refused): read the offsets again */
        if (n > 0)
            rd_kafka_commit(rk, missing, 0);
        rd_kafka_topic_partition_list_destroy(missing);
        if (n == 0)
            break;
        if (attempt == 4)
            rc = kb_error_set(err, KB_EKAFKA, -1, "could not commit the group's start offsets of %s", c->topic);
    }
    int64_t stored = 0;
    for (int i = 0; rc == 0 && i < l->cnt; i++) {
        c->parts[i].start = l->elems[i].offset;
        stored += hi_of[i] > l->elems[i].offset ? hi_of[i] - l->elems[i].offset : 0;
    }
    *stored_now = stored;
    rd_kafka_topic_partition_list_destroy(l);
    free(hi_of);
    free(lo_of);
    return rc;
}

/** Records past the start offsets in the group's committed offsets; -1 when unreadable. */
static int64_t group_committed(rd_kafka_t *rk, kb_consumer *c) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(c->nparts);
    for (int i = 0; i < c->nparts; i++)
        rd_kafka_topic_partition_list_add(l, c->topic, c->parts[i].partition);
    int64_t n = 0;
    if (rd_kafka_committed(rk, l, 5000)) {
        n = -1;
    } else {
        for (int i = 0; i < l->cnt; i++) {
            kb_part_seen *p = part_of(c, l->elems[i].partition);
            if (p && l->elems[i].offset > p->start)
                n += l->elems[i].offset - p->start;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return n;
}

/** High watermarks now into parts[].end; sum of (end - start), -1 when unreadable. */
static int64_t group_stored(rd_kafka_t *rk, kb_consumer *c) {
    int64_t n = 0;
    for (int i = 0; i < c->nparts; i++) {
        int64_t lo = 0, hi = 0;
        if (rd_kafka_query_watermark_offsets(rk, c->topic, c->parts[i].partition, &lo, &hi, 5000))
            return -1;
        c->parts[i].end = hi;
        n += hi - c->parts[i].start;
    }
    return n;
}

static int mine_at_end(const kb_consumer *c) {
    for (int i = 0; i < c->nparts; i++)
        if (c->parts[i].assigned && !c->parts[i].eof)
            return 0;
    return 1;
}

/** One record fetched at ``now`` of ``len`` bytes: the totals, the first/last times and the interval. */
static void count_record(kb_consumer *c, int64_t now, int64_t len) {
    if (c->records == 0)
        c->t_first = now;
    c->t_last = now;
    c->records++;
    c->bytes += len;
    if (c->iv.width_ns) {
        c->iv.sent++;
        c->iv.bytes += len;
    }
}

/** The record's kbench header into send time, sequence and run id: 1 when it carries one, else 0
 *  (then -1, -1, 0).  librdkafka (2.0.2) parses a consumed record's headers at the first
 *  rd_kafka_message_headers() call, a buffer allocated, read and freed per record also when the record
 *  has none: most of the loop's own CPU per record.  A fetched record's value points into the fetched
 *  (or decompressed) batch, and in a v2 record (Kafka >= 0.11's format) the header count follows the
 *  value at once: 0 there is a record without headers, known without the call.  A record without a
 *  value, or a non-zero byte there, asks librdkafka.  (A v0/v1 message, only on a broker kept at the
 *  pre-0.11 format, has no headers, so either answer is right; but its value may end its buffer, and
 *  then the byte read lies one past it: kbench's topics and Kafka >= 3's are v2.) */
static int read_header(const rd_kafka_message_t *m, int64_t *t, int64_t *seq, int64_t *run) {
    rd_kafka_headers_t *h = NULL;
    const void *hv = NULL;
    size_t hsz = 0;
    *t = -1;
    *seq = -1;
    *run = 0;
    if (m->payload && ((const uint8_t *)m->payload)[m->len] == 0)
        return 0; /* a v2 record's header count: none */
    rd_kafka_message_headers(m, &h);
    if (!h || rd_kafka_header_get_last(h, KB_HDR_NAME, &hv, &hsz) || hsz != KB_HDR_LEN)
        return 0;
    *t = (int64_t)kb_rd64((const uint8_t *)hv + KB_HDR_TIME_OFF);
    *seq = (int64_t)kb_rd64((const uint8_t *)hv + KB_HDR_SEQ_OFF);
    *run = (int64_t)kb_rd64((const uint8_t *)hv + KB_HDR_RUN_OFF);
    return 1;
}

/** Group mode: one record (or a partition's end) of a batch; 0 or KB_ENOMEM with b->err set. */
static int group_record(kb_batch *b, rd_kafka_message_t *m) {
    kb_consumer *c = b->c;
    kb_part_seen *p = part_of(c, m->partition);
    if (m->err) { /* the partition's end: a record fetched after this clears it again (part_read) */
        if (p)
            p->eof = 1;
        return 0;
    }
    if (p && part_read(p, m->offset, m->len) < 0)
        return kb_error_set(b->err, KB_ENOMEM, -1, "out of memory for the offsets read of %s [%d]", c->topic,
                            (int)m->partition);
    int64_t now = b->now;
    count_record(c, now, (int64_t)m->len);
    int64_t t, hseq, run;
    if (read_header(m, &t, &hseq, &run)) {
        if (c->run_id && (uint64_t)run != c->run_id) {
            c->foreign++;
        } else {
            c->sampled++;
            e2e_record(c, now, t, hseq);
        }
    } else {
        c->no_header++;
    }
    return 0;
}

/** The group loop: see consumer.h. */
static int group_loop(rd_kafka_t *rk, kb_consumer *c, int tms, kb_error *err) {
    int64_t stored_now = 0;
    if (group_prepare(rk, c, tms, &stored_now, err) < 0)
        return err->code;
    atomic_store(&c->ready, 1);
    /* held: every member of the group subscribes at the one instant go is set (a 1 ms sleep per
     * look: the members' release differs by at most that, not by their start-up) */
    const struct timespec look = {0, 1000000L};
    while (c->hold && !atomic_load(&c->go) && !atomic_load(&c->stop))
        nanosleep(&look, NULL);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, c->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (e)
        return kb_error_set(err, KB_EKAFKA, -1, "subscribe %s: %s", c->topic, rd_kafka_err2str(e));
    c->t_start = kb_now_ns();
    if (c->interval_ns > 0 && kb_iv_init(&c->iv, c->interval_ns, c->t_start, err) < 0)
        return err->code;
    int64_t cpu0 = kb_thread_cpu_ns();
    int64_t deadline = c->t_start + (int64_t)(c->timeout_s * 1e9);
    int64_t target = c->expected > 0 ? c->expected : stored_now;
    int64_t next_commit = c->t_start + 500000000LL, next_check = 0;
    int rechecked = 0;
    kb_batch b = {.c = c, .err = err, .record = group_record};
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    rd_kafka_queue_cb_event_enable(q, wake_messages, c);
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        int64_t now = kb_now_ns();
        if (c->max_records > 0 && c->records >= c->max_records)
            break;
        if (now >= deadline) {
            c->timed_out = 1;
            break;
        }
        if (now >= next_commit) {
            commit_positions(rk, c, 1, NULL);
            next_commit = now + 500000000LL;
        }
        if (now >= next_check) {
            /* the group is done once its committed offsets cover the target, whoever read what
             * (a partition just reassigned here need not be read again): asked 10 times a second
             * while this member's partitions are at their end, once a second while it reads */
            next_check = now + (mine_at_end(c) ? 100000000LL : 1000000000LL);
            commit_positions(rk, c, 0, NULL);
            int64_t done = group_committed(rk, c);
            if (done >= 0 && done >= target) {
                if (rechecked)
                    break;
                /* the group read everything expected: were more records (duplicates) stored than that? */
                rechecked = 1;
                int64_t stored = group_stored(rk, c);
                if (stored > target)
                    target = stored;
                next_check = 0;
                continue;
            }
        }
        if (serve_messages(c->mq, q, &b, wait_ms(deadline, now), &now) < 0)
            break;
        if (b.eof)
            next_check = 0;
    }
    rd_kafka_queue_cb_event_enable(q, NULL, NULL);
    rd_kafka_queue_destroy(q);
    c->loop_cpu_ns = kb_thread_cpu_ns() - cpu0;
    c->stopped = atomic_load(&c->stop);
    if (b.rc < 0)
        return b.rc;
    commit_positions(rk, c, 0, NULL);
    c->stored_records = group_stored(rk, c);
    int64_t distinct = 0;
    for (int i = 0; i < c->nparts; i++)
        distinct += part_normalize(&c->parts[i]);
    c->unique = distinct;
    c->duplicates = c->records - distinct;
    return 0;
}

/** Assign mode: one record of a batch. */
static int assign_record(kb_batch *b, rd_kafka_message_t *m) {
    kb_consumer *c = b->c;
    int64_t now = b->now, hs = c->header_sample;
    int64_t t, seq, run;
    read_header(m, &t, &seq, &run);
    if (t >= 0 && seq >= 0 && c->run_id && (uint64_t)run != c->run_id) {
        c->foreign++; /* a sampled record of another run: not ours */
        return 0;
    }
    count_record(c, now, (int64_t)m->len);
    if (t < 0 || seq < 0) {
        c->no_header++;
    } else {
        c->sampled++;
        e2e_record(c, now, t, seq);
        if (b->seen) {
            if (seq % hs != 0 || seq / hs >= c->samples_expected) {
                c->out_of_range++;
            } else if (b->seen[(seq / hs) >> 3] & (1u << ((seq / hs) & 7))) {
                c->sample_duplicates++;
            } else {
                b->seen[(seq / hs) >> 3] |= (uint8_t)(1u << ((seq / hs) & 7));
                (*b->samples_seen)++;
            }
        }
    }
    return 0;
}

int kb_consumer_run(kb_consumer *c, kb_error *e) {
    kb_error local = KB_ERROR_INIT;
    kb_error *err = e ? e : &local;
    kb_error_clear(err);
    c->stored_records = -1;
    uint8_t *seen = NULL;
    int64_t hs = c->header_sample;
    c->samples_expected = (!c->group && c->expected > 0 && hs > 0) ? (c->expected + hs - 1) / hs : 0;
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
    rd_kafka_conf_set_stats_cb(conf, on_stats);
    if (c->group) {
        rd_kafka_conf_set(conf, "enable.partition.eof", "true", NULL, 0);
        rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    }
    rd_kafka_t *rk = kb_client_new(RD_KAFKA_CONSUMER, conf, err);
    if (!rk) {
        free(seen);
        return err->code;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *start = NULL;
    int tms = (int)(c->connect_timeout_s * 1000);
    c->mq = rd_kafka_queue_new(rk);
    if (kb_wait_reachable(rk, &c->props, tms, &c->conn_err, err) < 0)
        goto out;
    if (c->group) {
        group_loop(rk, c, tms, err);
        goto out;
    }
    if (assign_start(rk, c, tms, c->mq, &start, err) < 0)
        goto out;
    c->t_start = c->t_assigned = kb_now_ns();
    if (c->interval_ns > 0 && kb_iv_init(&c->iv, c->interval_ns, c->t_start, err) < 0)
        goto out;
    atomic_store(&c->ready, 1);
    int64_t cpu0 = kb_thread_cpu_ns();
    int64_t deadline = c->t_start + (int64_t)(c->timeout_s * 1e9);
    int64_t target = c->expected, samples_seen = 0;
    int rechecked = 0;
    kb_batch b = {.c = c, .err = err, .seen = seen, .samples_seen = &samples_seen, .record = assign_record};
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    rd_kafka_queue_cb_event_enable(q, wake_messages, c);
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
        if (serve_messages(c->mq, q, &b, wait_ms(deadline, now), &now) < 0)
            break;
    }
    rd_kafka_queue_cb_event_enable(q, NULL, NULL);
    rd_kafka_queue_destroy(q);
    c->loop_cpu_ns = kb_thread_cpu_ns() - cpu0;
    c->stopped = atomic_load(&c->stop);
    c->duplicates = c->sample_duplicates;
    if (c->expected > 0 && c->records - c->expected > c->duplicates)
        c->duplicates = c->records - c->expected;
    c->unique = c->records - c->duplicates;
    c->samples_missing = c->samples_expected - samples_seen;
out:
    window_close(c);
    c->t_end = kb_now_ns();
    kb_iv_finish(&c->iv, c->t_end);
    atomic_store(&c->ready, 1); /* never leave a waiter hanging, even on error */
    if (start)
        rd_kafka_topic_partition_list_destroy(start);
    rd_kafka_consumer_close(rk);
    /* after the close (the fetchers stopped: nothing is forwarded to it any more), before the destroy */
    rd_kafka_queue_destroy(c->mq);
    c->mq = NULL;
    rd_kafka_destroy(rk);
    free(seen);
    return err->code;
}
