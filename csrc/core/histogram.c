/*
 * histogram.c - log-linear histogram: queries, merge, cost measurement.
 */
#include "histogram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

void kb_hist_reset(kb_hist *h) {
    memset(h, 0, sizeof(*h));
    h->min = INT64_MAX;
    h->max = -1;
}

int64_t kb_hist_lowest_at(int i) {
    int bucket = (i >> KB_HIST_SUB_HALF_BITS) - 1;
    int sub = (i & (KB_HIST_SUB_HALF - 1)) + KB_HIST_SUB_HALF;
    if (bucket < 0) {
        sub -= KB_HIST_SUB_HALF;
        bucket = 0;
    }
    return (int64_t)sub << bucket;
}

int64_t kb_hist_highest_at(int i) {
    int bucket = (i >> KB_HIST_SUB_HALF_BITS) - 1;
    if (bucket < 0)
        bucket = 0;
    return kb_hist_lowest_at(i) + ((int64_t)1 << bucket) - 1;
}

void kb_hist_merge(kb_hist *dst, const kb_hist *src) {
    for (int i = 0; i < KB_HIST_LEN; i++)
        dst->counts[i] += src->counts[i];
    dst->total += src->total;
    dst->underflow += src->underflow;
    dst->overflow += src->overflow;
    dst->sum += src->sum;
    if (src->total) {
        if (src->min < dst->min)
            dst->min = src->min;
        if (src->max > dst->max)
            dst->max = src->max;
    }
}

int64_t kb_hist_percentile(const kb_hist *h, double p) {
    if (h->total == 0)
        return -1;
    if (p < 0)
        p = 0;
    if (p > 100)
        p = 100;
    int64_t rank = (int64_t)ceil(p / 100.0 * (double)h->total);
    if (rank < 1)
        rank = 1;
    int64_t acc = 0;
    for (int i = 0; i < KB_HIST_LEN; i++) {
        acc += h->counts[i];
        if (acc >= rank) {
            int64_t v = kb_hist_highest_at(i);
            if (v > h->max)
                v = h->max;
            if (v < h->min)
                v = h->min;
            return v;
        }
    }
    return h->max;
}

double kb_hist_mean(const kb_hist *h) {
    return h->total ? h->sum / (double)h->total : 0.0;
}

int kb_hist_record_cost_ns(int64_t n, int with_clock, double *ns, kb_error *e) {
    if (n <= 0)
        return kb_error_set(e, KB_EINVAL, -1, "n must be > 0, got %lld", (long long)n);
    kb_hist *h = malloc(sizeof(kb_hist));
    if (!h)
        return kb_error_set(e, KB_ENOMEM, -1, "out of memory for a histogram");
    kb_hist_reset(h);
    uint64_t x = 88172645463325252ULL;
    int64_t t0 = kb_now_ns();
    if (with_clock) {
        /* what a loop pays per sample: read the clock, subtract, record */
        int64_t prev = kb_now_ns();
        for (int64_t i = 0; i < n; i++) {
            int64_t now = kb_now_ns();
            kb_hist_record(h, now - prev + (int64_t)(i & 0xfffff) * 1000);
            prev = now;
        }
    } else {
        /* record only; values from a xorshift generator spread over 0..17 s */
        for (int64_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            kb_hist_record(h, (int64_t)(x & 0x3ffffffffULL));
        }
    }
    int64_t dt = kb_now_ns() - t0;
    int64_t got = h->total + h->overflow;
    free(h);
    if (got != n)
        return kb_error_set(e, KB_ERR, -1, "recorded %lld samples, not %lld", (long long)got, (long long)n);
    *ns = (double)dt / (double)n;
    return KB_OK;
}
