/*
 * intervals.h - per-interval counters and latency histograms of a driver loop
 * (docs/drivers.md section 4.4): the time series of one run.
 *
 * Interval k spans [k * width, (k + 1) * width) of CLOCK_MONOTONIC, so the
 * intervals of every process on one host line up; a run's first and last
 * intervals are cut to the run.  The loop calls kb_iv_at() with the clock it
 * already read before it counts or records into the current interval: one
 * compare per event, and once per width the current interval is closed (its
 * non-zero counters copied out, the histogram reset).  Nothing is allocated
 * per event; the rows grow by doubling at a close.
 */
#ifndef KBENCH_INTERVALS_H
#define KBENCH_INTERVALS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "histogram.h"

/** One closed interval. */
typedef struct {
    int64_t start_ns, end_ns;
    int64_t sent, acked, failed, bytes; /* producer: sends, deliveries, failed reports, value bytes sent; consumer: records, -, -, bytes */
    int64_t total, underflow, overflow, min, max; /* the interval histogram */
    double sum;
    size_t off;  /* its non-zero counters: idx[off .. off + nz), cnt[...] */
    uint32_t nz;
} kb_interval;

/** The series of one loop; all zero (width_ns 0) = off. */
typedef struct {
    int64_t width_ns;
    int64_t start_ns, next_ns; /* the current interval */
    int64_t sent, acked, failed, bytes;
    kb_hist *cur;
    kb_interval *rows;
    size_t n, cap;
    uint32_t *idx;
    int64_t *cnt;
    size_t nsparse, capsparse;
    int oom; /* 1: a close ran out of memory; the series stops there */
} kb_intervals;

/** Start a series at start_ns with intervals of width_ns (> 0).  0, or < 0 with e set (KB_EINVAL, KB_ENOMEM). */
int kb_iv_init(kb_intervals *iv, int64_t width_ns, int64_t start_ns, kb_error *e);

/** Close every interval that ended at or before now (empty ones too: a stall shows as empty intervals). */
void kb_iv_roll(kb_intervals *iv, int64_t now);

/** Make `now` fall in the current interval (call before counting or recording an event at `now`). */
static inline void kb_iv_at(kb_intervals *iv, int64_t now) {
    if (now >= iv->next_ns)
        kb_iv_roll(iv, now);
}

/** Close the intervals up to end_ns and the current one, cut at end_ns. */
void kb_iv_finish(kb_intervals *iv, int64_t end_ns);

/** Interval k's histogram written into out (a kb_hist whose counts are all zero, e.g. fresh from kb_hist_new). */
void kb_iv_hist(const kb_intervals *iv, size_t k, kb_hist *out);

/** Free what kb_iv_init and the closes allocated (safe on a zeroed series). */
void kb_iv_free(kb_intervals *iv);

#endif
