/*
 * batching.c - the producer batching model (see batching.h and
 * docs/batching-model.md).
 */
#include "batching.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "varint.h"

const char *const kb_close_names[] = {"full", "linger", "flush"};

/* Java CompressionRatioEstimator / MemoryRecordsBuilder constants. */
#define JAVA_RATIO_IMPROVING_STEP 0.005f
#define JAVA_RATIO_DETERIORATE_STEP 0.05f
#define JAVA_ESTIMATION_FACTOR 1.05f
#define JAVA_MAX_RECORD_OVERHEAD 21
/* librdkafka RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD: 5 + 1 + 10 + 5 + 5 + 5 + 5. */
#define RDK_MSG_V2_MAX_OVERHEAD 36
/* ProduceRequest framing before the MessageSet, librdkafka (client.id "rdkafka"), excluding the topic name:
 * Size 4, ApiKey 2, ApiVersion 2, CorrId 4, ClientId 2+7, TransactionalId 2, Acks 2, Timeout 4,
 * TopicArrayCnt 4, TopicName 2(+len), PartitionArrayCnt 4, Partition 4, MessageSetSize 4. */
#define RDK_REQUEST_OVERHEAD 47

kb_batching_cfg kb_batching_cfg_default(kb_client_t client) {
    kb_batching_cfg c = {
        .client = client,
        .codec = KB_CODEC_NONE,
        .level = 0,
        .partitions = 1,
        .partitioner = KB_PART_DEFAULT,
        .batch_size = client == KB_CLIENT_JAVA ? 16384 : 1000000,
        .linger_ms = 5,
        .rate = 10000,
        .arrival = KB_ARRIVAL_FIXED,
        .seed = 1,
        .key_cardinality = 0,
        .start_ts_ms = 1700000000000LL,
        .sticky_linger_ms = 10,
        .topic_name_len = 5,
        .message_max_bytes = 1000000,
        .batch_num_messages = 10000,
    };
    return c;
}

int32_t kb_murmur2(const uint8_t *data, size_t n) {
    const uint32_t m = 0x5bd1e995u;
    const int r = 24;
    uint32_t h = 0x9747b28cu ^ (uint32_t)n;
    size_t n4 = n / 4;
    for (size_t i = 0; i < n4; i++) {
        const uint8_t *p = data + 4 * i;
        uint32_t k = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    const uint8_t *t = data + (n & ~(size_t)3);
    switch (n % 4) {
    case 3:
        h ^= (uint32_t)t[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)t[1] << 8;
        /* fall through */
    case 1:
        h ^= t[0];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

int32_t kb_partition_for_key(const uint8_t *key, size_t n, int32_t partitions) {
    return (int32_t)(((uint32_t)kb_murmur2(key, n) & 0x7fffffffu) % (uint32_t)partitions);
}

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int kb_batching_key(const kb_batching_cfg *cfg, size_t i, uint8_t out[24]) {
    if (cfg->key_cardinality == 0)
        return -1;
    uint64_t s = cfg->seed ^ ((uint64_t)i * 0xD1B54A32D192ED03ull);
    uint32_t k = (uint32_t)(splitmix64(&s) % cfg->key_cardinality);
    return snprintf((char *)out, 24, "key-%u", k);
}

void kb_batching_arrivals(const kb_batching_cfg *cfg, size_t n, double *out) {
    double per_ms = cfg->rate / 1000.0, t = 0;
    uint64_t s = cfg->seed * 0x2545F4914F6CDD1Dull + 7;
    for (size_t i = 0; i < n; i++) {
        if (cfg->arrival == KB_ARRIVAL_FIXED) {
            out[i] = (double)i / per_ms;
        } else {
            if (i > 0) {
                double u = (double)(splitmix64(&s) >> 11) * (1.0 / 9007199254740992.0);
                t += -log1p(-u) / per_ms;
            }
            out[i] = t;
        }
    }
}

int kb_batching_validate(const kb_batching_cfg *c, kb_error *e) {
    if (c->partitions < 1 || c->partitions > 100000) {
        return kb_error_set(e, KB_ERR, -1, "partitions must be 1..100000, got %d", c->partitions);
    }
    if (c->batch_size < 0 || c->batch_size > (1 << 30)) {
        return kb_error_set(e, KB_ERR, -1, "batch.size must be 0..1 GiB, got %lld", (long long)c->batch_size);
    }
    if (!(c->linger_ms >= 0) || c->linger_ms > 1e9) {
        return kb_error_set(e, KB_ERR, -1, "linger.ms must be >= 0, got %g", c->linger_ms);
    }
    if (!(c->rate > 0) || c->rate > 1e10) {
        return kb_error_set(e, KB_ERR, -1, "rate must be > 0 records/s, got %g", c->rate);
    }
    if (c->client != KB_CLIENT_JAVA && c->client != KB_CLIENT_LIBRDKAFKA) {
        return kb_error_set(e, KB_ERR, -1, "unknown client rules %d", (int)c->client);
    }
    if (c->batch_num_messages < 1 || c->message_max_bytes < 1 || c->sticky_linger_ms < 0) {
        return kb_error_set(e, KB_ERR, -1, "batch.num.messages, message.max.bytes must be >= 1 and sticky linger >= 0");
    }
    return 0;
}

typedef struct {
    kb_batch_builder bb;
    uint32_t *idx;
    size_t nidx, cap;
    int open;
    double t_open;
    float ratio;         /* Java: estimated ratio when the batch was created */
    int64_t write_limit; /* Java: max(batch.size, first record upper bound) */
} part_state;

typedef struct {
    const kb_batching_cfg *cfg;
    const kb_recset *recs;
    kb_codec_ctx *ctx;
    kb_batch_sink sink;
    void *user;
    part_state *parts;
    kb_batch_meta meta;
    float java_ratio; /* CompressionRatioEstimator for this topic and codec */
    double min_deadline;
    int32_t sticky;
    double sticky_since;
    int64_t sticky_bytes;
    uint64_t rr;
    uint64_t rng;
} model;

static double java_estimate(const model *m, const part_state *ps) {
    double raw = (double)ps->bb.raw.len;
    if (m->cfg->codec == KB_CODEC_NONE)
        return KB_BATCH_OVERHEAD + raw;
    return KB_BATCH_OVERHEAD + (double)(int64_t)(raw * ps->ratio * JAVA_ESTIMATION_FACTOR);
}

static int java_is_full(const model *m, const part_state *ps) {
    return ps->bb.count > 0 && (double)ps->write_limit <= java_estimate(m, ps);
}

static void recompute_deadline(model *m) {
    m->min_deadline = INFINITY;
    for (int32_t p = 0; p < m->cfg->partitions; p++)
        if (m->parts[p].open && m->parts[p].t_open + m->cfg->linger_ms < m->min_deadline)
            m->min_deadline = m->parts[p].t_open + m->cfg->linger_ms;
}

static int close_batch(model *m, int32_t p, kb_close_t why, double t, kb_error *e) {
    part_state *ps = &m->parts[p];
    kb_buf out = {0};
    int stored = 0;
    int rdk = m->cfg->client == KB_CLIENT_LIBRDKAFKA;
    if (kb_bb_finish(&ps->bb, m->ctx, m->cfg->codec, m->cfg->level, rdk, &out, &stored, e) < 0) {
        kb_buf_free(&out);
        return -1;
    }
    kb_batch_info info = {.partition = p,
                          .count = ps->bb.count,
                          .raw_bytes = ps->bb.raw.len,
                          .batch_bytes = out.len,
                          .stored_codec = stored,
                          .reason = why,
                          .t_open_ms = ps->t_open,
                          .t_close_ms = t};
    if (m->cfg->client == KB_CLIENT_JAVA && m->cfg->codec != KB_CODEC_NONE && ps->bb.raw.len > 0) {
        float observed = (float)(out.len - KB_BATCH_OVERHEAD) / (float)ps->bb.raw.len;
        float cur = m->java_ratio;
        if (observed > cur)
            m->java_ratio = fmaxf(cur + JAVA_RATIO_DETERIORATE_STEP, observed);
        else if (observed < cur)
            m->java_ratio = fmaxf(cur - JAVA_RATIO_IMPROVING_STEP, observed);
    }
    uint32_t *idx = ps->idx;
    uint8_t *bytes = out.p;
    int rc = m->sink(m->user, &info, &idx, &bytes, e);
    free(bytes);
    if (idx == NULL) { /* the sink took the index array */
        ps->idx = NULL;
        ps->cap = 0;
    }
    ps->nidx = 0;
    ps->open = 0;
    int was_min = ps->t_open + m->cfg->linger_ms <= m->min_deadline;
    if (was_min)
        recompute_deadline(m);
    return rc;
}

static int open_batch(model *m, int32_t p, double t, size_t first_wire) {
    part_state *ps = &m->parts[p];
    kb_bb_reset(&ps->bb, &m->meta);
    ps->open = 1;
    ps->t_open = t;
    ps->ratio = m->java_ratio;
    int64_t ub = KB_BATCH_OVERHEAD + JAVA_MAX_RECORD_OVERHEAD + (int64_t)first_wire;
    ps->write_limit = m->cfg->batch_size > ub ? m->cfg->batch_size : ub;
    if (t + m->cfg->linger_ms < m->min_deadline)
        m->min_deadline = t + m->cfg->linger_ms;
    return 0;
}

static int push_idx(part_state *ps, uint32_t i) {
    if (ps->nidx == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 64;
        uint32_t *n = realloc(ps->idx, cap * sizeof(uint32_t));
        if (!n)
            return -1;
        ps->idx = n;
        ps->cap = cap;
    }
    ps->idx[ps->nidx++] = i;
    return 0;
}

static int32_t random_partition(model *m) { return (int32_t)(splitmix64(&m->rng) % (uint64_t)m->cfg->partitions); }

static int expire(model *m, double t, kb_error *e) {
    while (m->min_deadline <= t) {
        int32_t best = -1;
        double bd = INFINITY;
        for (int32_t p = 0; p < m->cfg->partitions; p++) {
            const part_state *ps = &m->parts[p];
            if (ps->open && ps->t_open + m->cfg->linger_ms < bd) {
                bd = ps->t_open + m->cfg->linger_ms;
                best = p;
            }
        }
        if (best < 0) {
            m->min_deadline = INFINITY;
            break;
        }
        if (close_batch(m, best, KB_CLOSE_LINGER, bd, e) < 0)
            return -1;
    }
    return 0;
}

int kb_batching_run(const kb_batching_cfg *cfg, const kb_recset *recs, kb_codec_ctx *ctx, kb_batch_sink sink,
                    void *user, kb_error *e) {
    if (kb_batching_validate(cfg, e) < 0)
        return -1;
    if (recs->n > UINT32_MAX) {
        return kb_error_set(e, KB_ERR, -1, "at most %u records per run", UINT32_MAX);
    }
    int rc = -1;
    model m = {.cfg = cfg, .recs = recs, .ctx = ctx, .sink = sink, .user = user};
    m.meta = kb_batch_meta_default(cfg->client == KB_CLIENT_LIBRDKAFKA);
    m.java_ratio = 1.0f;
    m.min_deadline = INFINITY;
    m.rng = cfg->seed ^ 0xA5A5A5A5DEADBEEFull;
    m.parts = calloc((size_t)cfg->partitions, sizeof(part_state));
    double *arr = malloc((recs->n ? recs->n : 1) * sizeof(double));
    if (!m.parts || !arr) {
        kb_error_set(e, KB_ENOMEM, -1, "out of memory for %d partitions", cfg->partitions);
        goto done;
    }
    for (int32_t p = 0; p < cfg->partitions; p++)
        kb_bb_init(&m.parts[p].bb);
    kb_batching_arrivals(cfg, recs->n, arr);
    m.sticky = random_partition(&m);
    m.sticky_since = 0;
    int64_t rdk_limit = cfg->batch_size < cfg->message_max_bytes ? cfg->batch_size : cfg->message_max_bytes;
    int64_t rdk_overhead = RDK_REQUEST_OVERHEAD + cfg->topic_name_len + KB_BATCH_OVERHEAD;
    for (size_t i = 0; i < recs->n; i++) {
        double t = arr[i];
        if (expire(&m, t, e) < 0)
            goto done;
        uint8_t keybuf[24];
        int klen = kb_batching_key(cfg, i, keybuf);
        kb_record r = {.key = klen >= 0 ? keybuf : NULL,
                       .key_len = klen,
                       .value = recs->payload + recs->offs[i],
                       .value_len = (int32_t)(recs->offs[i + 1] - recs->offs[i]),
                       .timestamp = kb_batching_ts(cfg, t)};
        int32_t p;
        int sticky = 0;
        if (cfg->partitioner == KB_PART_ROUND_ROBIN) {
            p = (int32_t)(m.rr++ % (uint64_t)cfg->partitions);
        } else if (klen >= 0) {
            p = kb_partition_for_key(keybuf, (size_t)klen, cfg->partitions);
        } else {
            if (cfg->client == KB_CLIENT_LIBRDKAFKA && t - m.sticky_since >= cfg->sticky_linger_ms) {
                m.sticky = random_partition(&m);
                m.sticky_since = t;
            }
            p = m.sticky;
            sticky = 1;
        }
        part_state *ps = &m.parts[p];
        int64_t tsd = ps->open ? kb_sub_wrap(r.timestamp, ps->bb.base_ts) : 0;
        size_t wire = kb_record_wire_size(ps->open ? ps->bb.count : 0, tsd, &r);
        double est_before = 0;
        if (cfg->client == KB_CLIENT_JAVA) {
            if (ps->open) {
                int room = !java_is_full(&m, ps) && (double)ps->write_limit >= java_estimate(&m, ps) + (double)wire;
                if (!room && close_batch(&m, p, KB_CLOSE_FULL, t, e) < 0)
                    goto done;
            }
            if (ps->open)
                est_before = java_estimate(&m, ps);
        } else {
            size_t maxwire = RDK_MSG_V2_MAX_OVERHEAD + (klen > 0 ? (size_t)klen : 0) + (size_t)r.value_len;
            if (ps->open && (ps->bb.count >= cfg->batch_num_messages ||
                             rdk_overhead + (int64_t)ps->bb.raw.len + (int64_t)maxwire > rdk_limit)) {
                if (close_batch(&m, p, KB_CLOSE_FULL, t, e) < 0)
                    goto done;
            }
        }
        if (!ps->open) {
            open_batch(&m, p, t, wire);
        }
        if (kb_bb_append(&ps->bb, &r, e) < 0)
            goto done;
        if (push_idx(ps, (uint32_t)i) < 0) {
            kb_error_set(e, KB_ENOMEM, -1, "out of memory");
            goto done;
        }
        if (cfg->client == KB_CLIENT_JAVA) {
            double appended = java_estimate(&m, ps) - est_before;
            int full = java_is_full(&m, ps);
            if (full && close_batch(&m, p, KB_CLOSE_FULL, t, e) < 0)
                goto done;
            if (sticky && cfg->partitioner == KB_PART_DEFAULT) {
                /* BuiltInPartitioner.updatePartitionInfo: switch after batch.size bytes when the
                 * partition's batches are all full, or after 2 * batch.size regardless. */
                m.sticky_bytes += (int64_t)appended;
                int64_t bs = cfg->batch_size > 0 ? cfg->batch_size : 1;
                if ((m.sticky_bytes >= bs && full) || m.sticky_bytes >= 2 * bs) {
                    m.sticky = random_partition(&m);
                    m.sticky_bytes = 0;
                }
            }
        } else if (ps->bb.count >= cfg->batch_num_messages) {
            if (close_batch(&m, p, KB_CLOSE_FULL, t, e) < 0)
                goto done;
        }
        if (cfg->linger_ms == 0 && ps->open) {
            /* linger.ms=0: the batch is sendable at once; records arriving at the same instant join it */
            if (i + 1 >= recs->n || arr[i + 1] > t) {
                if (close_batch(&m, p, KB_CLOSE_LINGER, t, e) < 0)
                    goto done;
            }
        }
    }
    /* flush: close what is left in the order the batches were opened */
    for (;;) {
        int32_t best = -1;
        double bt = INFINITY;
        for (int32_t p = 0; p < cfg->partitions; p++)
            if (m.parts[p].open && m.parts[p].t_open < bt) {
                bt = m.parts[p].t_open;
                best = p;
            }
        if (best < 0)
            break;
        double tend = recs->n ? arr[recs->n - 1] : 0;
        if (close_batch(&m, best, KB_CLOSE_FLUSH, tend, e) < 0)
            goto done;
    }
    rc = 0;
done:
    if (m.parts) {
        for (int32_t p = 0; p < cfg->partitions; p++) {
            kb_bb_free(&m.parts[p].bb);
            free(m.parts[p].idx);
        }
        free(m.parts);
    }
    free(arr);
    return rc;
}
