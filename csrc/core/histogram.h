/*
 * histogram.h - log-linear latency histogram (HdrHistogram layout) in ns.
 *
 * 2048 sub-buckets per power of two give a relative resolution of 1/1024
 * (3 significant decimal digits) from 1 ns up to KB_HIST_MAX_NS (2^36 - 1 ns,
 * about 68.7 s).  Values below 0 or above the maximum are counted as
 * underflow/overflow, never stored and never fatal.  Recording is a few
 * integer instructions and touches one counter; merging adds counters.
 */
#ifndef KBENCH_HISTOGRAM_H
#define KBENCH_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define KB_HIST_SUB_BITS 11 /* 2048 sub-buckets */
#define KB_HIST_SUB_HALF_BITS (KB_HIST_SUB_BITS - 1)
#define KB_HIST_SUB_HALF (1 << KB_HIST_SUB_HALF_BITS)
#define KB_HIST_SUB_MASK ((int64_t)((1 << KB_HIST_SUB_BITS) - 1))
#define KB_HIST_MAX_BITS 36
#define KB_HIST_MAX_NS ((int64_t)((1ULL << KB_HIST_MAX_BITS) - 1))
#define KB_HIST_BUCKETS (KB_HIST_MAX_BITS - KB_HIST_SUB_BITS + 1)
#define KB_HIST_LEN ((KB_HIST_BUCKETS + 1) << KB_HIST_SUB_HALF_BITS)

/** A histogram; zero-initialise with kb_hist_init() (or calloc + kb_hist_reset). */
typedef struct {
    int64_t total;     /* in-range samples */
    int64_t underflow; /* values < 0 */
    int64_t overflow;  /* values > KB_HIST_MAX_NS */
    int64_t min, max;  /* exact extremes of in-range samples */
    double sum;        /* exact sum of in-range samples (ns) */
    int64_t counts[KB_HIST_LEN];
} kb_hist;

/** Reset h to empty. */
void kb_hist_reset(kb_hist *h);

/** Counter index of an in-range value v (0 <= v <= KB_HIST_MAX_NS). */
static inline int kb_hist_index(int64_t v) {
    int pow2ceil = 64 - __builtin_clzll((uint64_t)(v | KB_HIST_SUB_MASK));
    int bucket = pow2ceil - KB_HIST_SUB_BITS;
    int sub = (int)(v >> bucket);
    return ((bucket + 1) << KB_HIST_SUB_HALF_BITS) + (sub - KB_HIST_SUB_HALF);
}

/** Record one value in ns. */
static inline void kb_hist_record(kb_hist *h, int64_t v) {
    if (v < 0) {
        h->underflow++;
        return;
    }
    if (v > KB_HIST_MAX_NS) {
        h->overflow++;
        return;
    }
    h->counts[kb_hist_index(v)]++;
    h->total++;
    h->sum += (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

/** Lowest value that maps to counter index i. */
int64_t kb_hist_lowest_at(int i);

/** Highest value that maps to counter index i. */
int64_t kb_hist_highest_at(int i);

/** Add every count of src into dst. */
void kb_hist_merge(kb_hist *dst, const kb_hist *src);

/**
 * Value at percentile p (0..100) of the in-range samples: the highest value
 * equivalent to the bucket holding the ceil(p% * total)-th sample, clamped to
 * the exact max; -1 when empty.
 */
int64_t kb_hist_percentile(const kb_hist *h, double p);

/** Mean of in-range samples in ns (0 when empty). */
double kb_hist_mean(const kb_hist *h);

/**
 * Average cost in ns of recording one sample (n samples of varied values),
 * and, when with_clock, of reading the monotonic clock plus recording, into
 * *ns.  0, or < 0 with e set (error.h): KB_EINVAL for n <= 0, KB_ENOMEM.
 */
int kb_hist_record_cost_ns(int64_t n, int with_clock, double *ns, kb_error *e);

#endif
