/*
 * sim.c - the simulated transport: three pthreads joined by bounded queues.
 */
#define _POSIX_C_SOURCE 200809L
#include "sim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "segment.h"
#include "varint.h"

typedef struct item {
    struct item *next;
    kb_batch_info info;
    uint32_t *idx;
    uint8_t *bytes;
    size_t len;
    int64_t base_offset;
    uint64_t position;
    int codec;
} item;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    item *head, *tail;
    size_t n, cap;
    int closed;
} queue;

typedef struct {
    const kb_sim_cfg *cfg;
    const kb_recset *recs;
    const double *arrivals;
    queue q1, q2; /* producer -> broker -> consumer */
    int aborted;
    pthread_mutex_t err_mu;
    kb_error err;
    int failed;
    kb_sim_result *res;
    size_t res_cap;
} sim;

static void q_init(queue *q, size_t cap) {
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    q->head = q->tail = NULL;
    q->n = 0;
    q->cap = cap ? cap : 1;
    q->closed = 0;
}

static void item_free(item *it) {
    if (!it)
        return;
    free(it->idx);
    free(it->bytes);
    free(it);
}

static void q_destroy(queue *q) {
    item *it = q->head;
    while (it) {
        item *nx = it->next;
        item_free(it);
        it = nx;
    }
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
}

static int q_push(queue *q, item *it) {
    pthread_mutex_lock(&q->mu);
    while (q->n >= q->cap && !q->closed)
        pthread_cond_wait(&q->not_full, &q->mu);
    if (q->closed) {
        pthread_mutex_unlock(&q->mu);
        return -1;
    }
    it->next = NULL;
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    q->n++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
    return 0;
}

/* NULL when the queue is closed and drained. */
static item *q_pop(queue *q) {
    pthread_mutex_lock(&q->mu);
    while (q->n == 0 && !q->closed)
        pthread_cond_wait(&q->not_empty, &q->mu);
    item *it = q->head;
    if (it) {
        q->head = it->next;
        if (!q->head)
            q->tail = NULL;
        q->n--;
        pthread_cond_signal(&q->not_full);
    }
    pthread_mutex_unlock(&q->mu);
    return it;
}

static void q_close(queue *q) {
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->mu);
}

static void fail(sim *s, const kb_error *e) {
    pthread_mutex_lock(&s->err_mu);
    if (!s->failed) {
        s->err = *e;
        s->failed = 1;
    }
    pthread_mutex_unlock(&s->err_mu);
    __atomic_store_n(&s->aborted, 1, __ATOMIC_RELEASE);
    q_close(&s->q1);
    q_close(&s->q2);
}

/* ---- producer ---- */

static int producer_sink(void *user, const kb_batch_info *info, uint32_t **idx, uint8_t **batch, kb_error *e) {
    sim *s = user;
    item *it = calloc(1, sizeof(*it));
    if (!it) {
        return kb_error_set(e, KB_ENOMEM, -1, "out of memory");
    }
    it->info = *info;
    it->idx = *idx;
    it->bytes = *batch;
    it->len = info->batch_bytes;
    *idx = NULL;
    *batch = NULL;
    s->res->producer.batches++;
    s->res->producer.records += (uint64_t)info->count;
    s->res->producer.bytes_out += info->batch_bytes;
    s->res->raw_batch_bytes += KB_BATCH_OVERHEAD + info->raw_bytes;
    if (q_push(&s->q1, it) < 0) {
        item_free(it); /* the item owns idx and bytes now */
        return kb_error_set(e, KB_ERR, -1, "run aborted");
    }
    return 0;
}

static void *producer_main(void *arg) {
    sim *s = arg;
    int64_t c0 = kb_thread_cpu_ns(), w0 = kb_now_ns();
    kb_error e = KB_ERROR_INIT;
    kb_codec_ctx *ctx = kb_codec_ctx_new();
    if (!ctx) {
        kb_error_set(&e, KB_ENOMEM, -1, "out of memory");
        fail(s, &e);
    } else if (kb_batching_run(&s->cfg->batching, s->recs, ctx, producer_sink, s, &e) < 0) {
        if (!__atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE))
            fail(s, &e);
    }
    kb_codec_ctx_free(ctx);
    s->res->producer.bytes_in = s->res->payload_bytes;
    s->res->producer.cpu_ns = kb_thread_cpu_ns() - c0;
    s->res->producer.wall_ns = kb_now_ns() - w0;
    q_close(&s->q1);
    return NULL;
}

/* ---- broker ---- */

static int mkdir_p1(const char *path, kb_error *e) {
    if (mkdir(path, 0755) < 0 && errno != EEXIST) {
        return kb_error_set(e, KB_EIO, -1, "cannot create %s: %s", path, strerror(errno));
    }
    return 0;
}

static int seg_path(const kb_sim_cfg *cfg, int32_t p, char *out, size_t cap, int dir_only) {
    int n = dir_only ? snprintf(out, cap, "%s/%s-%d", cfg->dir, cfg->topic, p)
                     : snprintf(out, cap, "%s/%s-%d/00000000000000000000.log", cfg->dir, cfg->topic, p);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

typedef struct {
    kb_header *h;
    size_t cap;
} hdrvec;

/* Rebuild a validated batch with the topic's codec (LogValidator.buildRecordsAndAssignOffsets). */
static int recompress(const kb_batch_view *v, kb_codec_ctx *ctx, int codec, int level, kb_batch_builder *bb,
                      hdrvec *hv, kb_buf *out, kb_error *e) {
    kb_batch_meta meta = {.base_offset = 0,
                          .partition_leader_epoch = v->h.partition_leader_epoch,
                          .producer_id = v->h.producer_id,
                          .producer_epoch = v->h.producer_epoch,
                          .base_sequence = v->h.base_sequence,
                          .transactional = (v->h.attributes & KB_ATTR_TRANSACTIONAL) != 0};
    kb_bb_reset(bb, &meta);
    size_t pos = 0;
    for (int32_t k = 0; k < v->h.records_count; k++) {
        kb_record_view r;
        if (kb_record_read(v->records, v->records_len, &pos, &r, KB_BATCH_OVERHEAD, v->codec != 0, e) < 0)
            return -1;
        if ((size_t)r.header_count > hv->cap) {
            kb_header *nh = realloc(hv->h, (size_t)r.header_count * sizeof(kb_header));
            if (!nh) {
                return kb_error_set(e, KB_ENOMEM, -1, "out of memory");
            }
            hv->h = nh;
            hv->cap = (size_t)r.header_count;
        }
        size_t hp = 0;
        for (int32_t j = 0; j < r.header_count; j++)
            kb_record_header_next(r.headers, r.headers_len, &hp, &hv->h[j]);
        kb_record rec = {.key = r.key,
                         .key_len = r.key_len,
                         .value = r.value,
                         .value_len = r.value_len,
                         .timestamp = kb_add_wrap(v->h.base_timestamp, r.timestamp_delta),
                         .headers = hv->h,
                         .header_count = (uint32_t)r.header_count};
        if (kb_bb_append(bb, &rec, e) < 0)
            return -1;
    }
    out->len = 0;
    return kb_bb_finish(bb, ctx, (kb_codec_t)codec, level, 0, out, NULL, e);
}

static int result_push(sim *s, const kb_sim_batch *b) {
    kb_sim_result *r = s->res;
    if (r->nbatches == s->res_cap) {
        size_t cap = s->res_cap ? s->res_cap * 2 : 1024;
        kb_sim_batch *nb = realloc(r->batches, cap * sizeof(*nb));
        if (!nb)
            return -1;
        r->batches = nb;
        s->res_cap = cap;
    }
    r->batches[r->nbatches++] = *b;
    return 0;
}

static void *broker_main(void *arg) {
    sim *s = arg;
    const kb_sim_cfg *cfg = s->cfg;
    int64_t c0 = kb_thread_cpu_ns(), w0 = kb_now_ns();
    kb_error e = KB_ERROR_INIT;
    kb_codec_ctx *ctx = kb_codec_ctx_new();
    kb_seg_writer *w = calloc((size_t)cfg->batching.partitions, sizeof(kb_seg_writer));
    kb_buf scratch = {0}, rebuilt = {0};
    kb_batch_builder bb;
    kb_bb_init(&bb);
    hdrvec hv = {0};
    kb_stage_stats *st = &s->res->broker;
    if (!ctx || !w) {
        kb_error_set(&e, KB_ENOMEM, -1, "out of memory");
        fail(s, &e);
        goto out;
    }
    for (int32_t p = 0; p < cfg->batching.partitions; p++)
        w[p].fd = -1;
    char path[PATH_MAX];
    item *it;
    while ((it = q_pop(&s->q1)) != NULL) {
        int32_t p = it->info.partition;
        kb_batch_view v;
        st->bytes_in += it->len;
        if (kb_batch_open(ctx, it->bytes, it->len, 1, cfg->max_uncompressed, &scratch, &v, &e) < 0 ||
            kb_batch_check_records(&v, &e) < 0) {
            fail(s, &e);
            item_free(it);
            break;
        }
        if (v.h.base_offset != 0 || v.h.last_offset_delta + 1 != v.h.records_count) {
            kb_error_set(&e, KB_ERR, 0, "broker: batch baseOffset %lld / lastOffsetDelta %d / count %d invalid",
                         (long long)v.h.base_offset, v.h.last_offset_delta, v.h.records_count);
            fail(s, &e);
            item_free(it);
            break;
        }
        uint8_t *store = it->bytes;
        size_t slen = it->len;
        int scodec = v.codec;
        if (cfg->topic_codec >= 0 && cfg->topic_codec != v.codec) {
            if (recompress(&v, ctx, cfg->topic_codec, cfg->topic_level, &bb, &hv, &rebuilt, &e) < 0) {
                fail(s, &e);
                item_free(it);
                break;
            }
            store = rebuilt.p;
            slen = rebuilt.len;
            scodec = cfg->topic_codec;
            s->res->recompressed++;
        }
        if (w[p].fd < 0) {
            if (seg_path(cfg, p, path, sizeof(path), 1) < 0 || mkdir_p1(path, &e) < 0 ||
                seg_path(cfg, p, path, sizeof(path), 0) < 0 ||
                kb_seg_writer_open(&w[p], path, 0, cfg->leader_epoch, &e) < 0) {
                if (e.msg[0] == 0)
                    kb_error_set(&e, KB_ERR, -1, "segment path too long");
                fail(s, &e);
                item_free(it);
                break;
            }
        }
        int64_t base = w[p].next_offset;
        uint64_t pos = 0;
        if (kb_seg_writer_append(&w[p], store, slen, &pos, &e) < 0) {
            fail(s, &e);
            item_free(it);
            break;
        }
        st->bytes_out += slen;
        st->batches++;
        st->records += (uint64_t)v.h.records_count;
        s->res->stored_bytes += slen;
        kb_sim_batch rb = {.info = it->info,
                           .base_offset = base,
                           .position = pos,
                           .stored_bytes = slen,
                           .stored_codec = scodec};
        if (result_push(s, &rb) < 0) {
            kb_error_set(&e, KB_ENOMEM, -1, "out of memory");
            fail(s, &e);
            item_free(it);
            break;
        }
        free(it->bytes);
        it->bytes = NULL;
        it->len = slen;
        it->base_offset = base;
        it->position = pos;
        it->codec = scodec;
        if (q_push(&s->q2, it) < 0) {
            item_free(it);
            break;
        }
    }
    for (int32_t p = 0; p < cfg->batching.partitions; p++) {
        if (w[p].fd >= 0 && kb_seg_writer_close(&w[p], &e) < 0)
            fail(s, &e);
    }
out:
    free(w);
    free(hv.h);
    kb_bb_free(&bb);
    kb_buf_free(&scratch);
    kb_buf_free(&rebuilt);
    kb_codec_ctx_free(ctx);
    st->cpu_ns = kb_thread_cpu_ns() - c0;
    st->wall_ns = kb_now_ns() - w0;
    q_close(&s->q2);
    return NULL;
}

/* ---- consumer ---- */

static void *consumer_main(void *arg) {
    sim *s = arg;
    const kb_sim_cfg *cfg = s->cfg;
    int64_t c0 = kb_thread_cpu_ns(), w0 = kb_now_ns();
    kb_error e = KB_ERROR_INIT;
    kb_codec_ctx *ctx = kb_codec_ctx_new();
    int *fds = malloc((size_t)cfg->batching.partitions * sizeof(int));
    kb_buf buf = {0}, scratch = {0};
    kb_stage_stats *st = &s->res->consumer;
    if (!ctx || !fds) {
        kb_error_set(&e, KB_ENOMEM, -1, "out of memory");
        fail(s, &e);
        goto out;
    }
    for (int32_t p = 0; p < cfg->batching.partitions; p++)
        fds[p] = -1;
    char path[PATH_MAX];
    item *it;
    while ((it = q_pop(&s->q2)) != NULL) {
        int32_t p = it->info.partition;
        if (fds[p] < 0) {
            if (seg_path(cfg, p, path, sizeof(path), 0) < 0 || (fds[p] = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
                kb_error_set(&e, KB_EIO, -1, "consumer cannot open %s: %s", path, strerror(errno));
                fail(s, &e);
                item_free(it);
                break;
            }
        }
        buf.len = 0;
        if (kb_buf_reserve(&buf, it->len) < 0) {
            kb_error_set(&e, KB_ENOMEM, -1, "out of memory");
            fail(s, &e);
            item_free(it);
            break;
        }
        ssize_t got = pread(fds[p], buf.p, it->len, (off_t)it->position);
        if (got != (ssize_t)it->len) {
            kb_error_set(&e, KB_EIO, -1, "consumer: short read of partition %d at %llu", p,
                         (unsigned long long)it->position);
            fail(s, &e);
            item_free(it);
            break;
        }
        st->bytes_in += it->len;
        kb_batch_view v;
        if (kb_batch_open(ctx, buf.p, it->len, 1, cfg->max_uncompressed, &scratch, &v, &e) < 0) {
            fail(s, &e);
            item_free(it);
            break;
        }
        int bad = v.h.base_offset != it->base_offset || v.h.records_count != it->info.count;
        size_t pos = 0;
        for (int32_t k = 0; k < v.h.records_count && !bad; k++) {
            kb_record_view r;
            if (kb_record_read(v.records, v.records_len, &pos, &r, KB_BATCH_OVERHEAD, v.codec != 0, &e) < 0) {
                bad = 1;
                break;
            }
            uint32_t i = it->idx[k];
            const uint8_t *val = s->recs->payload + s->recs->offs[i];
            size_t vlen = (size_t)(s->recs->offs[i + 1] - s->recs->offs[i]);
            uint8_t kb[24];
            int klen = kb_batching_key(&cfg->batching, i, kb);
            int ok = r.offset_delta == k && r.value_len == (int32_t)vlen && memcmp(r.value, val, vlen) == 0 &&
                     r.key_len == klen && (klen <= 0 || memcmp(r.key, kb, (size_t)klen) == 0) &&
                     kb_add_wrap(v.h.base_timestamp, r.timestamp_delta) == kb_batching_ts(&cfg->batching, s->arrivals[i]);
            if (ok) {
                s->res->verified++;
                st->bytes_out += vlen;
            } else {
                s->res->mismatches++;
            }
        }
        if (bad)
            s->res->mismatches++;
        st->batches++;
        st->records += (uint64_t)v.h.records_count;
        item_free(it);
    }
out:
    if (fds) {
        for (int32_t p = 0; p < cfg->batching.partitions; p++)
            if (fds[p] >= 0)
                close(fds[p]);
        free(fds);
    }
    kb_buf_free(&buf);
    kb_buf_free(&scratch);
    kb_codec_ctx_free(ctx);
    st->cpu_ns = kb_thread_cpu_ns() - c0;
    st->wall_ns = kb_now_ns() - w0;
    return NULL;
}

int kb_sim_run(const kb_sim_cfg *cfg, const kb_recset *recs, kb_sim_result *res, kb_error *e) {
    memset(res, 0, sizeof(*res));
    if (kb_batching_validate(&cfg->batching, e) < 0)
        return -1;
    if (cfg->topic_codec >= KB_CODEC_COUNT) {
        return kb_error_set(e, KB_ERR, -1, "unknown topic codec %d", cfg->topic_codec);
    }
    if (mkdir_p1(cfg->dir, e) < 0)
        return -1;
    sim s = {.cfg = cfg, .recs = recs, .res = res};
    double *arr = malloc((recs->n ? recs->n : 1) * sizeof(double));
    if (!arr) {
        return kb_error_set(e, KB_ENOMEM, -1, "out of memory");
    }
    kb_batching_arrivals(&cfg->batching, recs->n, arr);
    s.arrivals = arr;
    for (size_t i = 0; i < recs->n; i++)
        res->payload_bytes += recs->offs[i + 1] - recs->offs[i];
    q_init(&s.q1, cfg->queue_depth);
    q_init(&s.q2, cfg->queue_depth);
    pthread_mutex_init(&s.err_mu, NULL);
    pthread_t tp, tb, tc;
    int started = 0;
    if (pthread_create(&tc, NULL, consumer_main, &s) == 0) {
        started |= 4;
        if (pthread_create(&tb, NULL, broker_main, &s) == 0) {
            started |= 2;
            if (pthread_create(&tp, NULL, producer_main, &s) == 0)
                started |= 1;
        }
    }
    if (started != 7) {
        kb_error_set(&s.err, KB_EIO, -1, "cannot start the stage threads");
        s.failed = 1;
        q_close(&s.q1);
        q_close(&s.q2);
    }
    if (started & 1)
        pthread_join(tp, NULL);
    if (started & 2)
        pthread_join(tb, NULL);
    else
        q_close(&s.q2);
    if (started & 4)
        pthread_join(tc, NULL);
    res->produced_bytes = res->producer.bytes_out;
    q_destroy(&s.q1);
    q_destroy(&s.q2);
    pthread_mutex_destroy(&s.err_mu);
    free(arr);
    if (s.failed) {
        *e = s.err;
        kb_sim_result_free(res);
        return -1;
    }
    return 0;
}

void kb_sim_result_free(kb_sim_result *res) {
    free(res->batches);
    res->batches = NULL;
    res->nbatches = 0;
}
