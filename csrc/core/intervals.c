/*
 * intervals.c - closing intervals: copy out the non-zero counters, reset.
 */
#include "intervals.h"

#include <stdlib.h>
#include <string.h>

int kb_iv_init(kb_intervals *iv, int64_t width_ns, int64_t start_ns, kb_error *e) {
    memset(iv, 0, sizeof(*iv));
    if (width_ns <= 0 || start_ns < 0)
        return kb_error_set(e, KB_EINVAL, -1, "interval width must be > 0 ns, got %lld", (long long)width_ns);
    iv->cur = malloc(sizeof(kb_hist));
    if (!iv->cur)
        return kb_error_set(e, KB_ENOMEM, -1, "out of memory for an interval histogram");
    kb_hist_reset(iv->cur);
    iv->width_ns = width_ns;
    iv->start_ns = start_ns;
    iv->next_ns = (start_ns / width_ns + 1) * width_ns;
    return KB_OK;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    void *q = realloc(*p, ncap * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = ncap;
    return 0;
}

/** Append the current interval, cut at end, and start the next one at end. */
static void close_current(kb_intervals *iv, int64_t end) {
    if (iv->oom)
        return;
    kb_hist *h = iv->cur;
    size_t rcap = iv->cap;
    if (grow((void **)&iv->rows, &rcap, iv->n + 1, sizeof(kb_interval)) < 0) {
        iv->oom = 1;
        return;
    }
    iv->cap = rcap;
    kb_interval *r = &iv->rows[iv->n];
    memset(r, 0, sizeof(*r));
    r->start_ns = iv->start_ns;
    r->end_ns = end;
    r->sent = iv->sent;
    r->acked = iv->acked;
    r->failed = iv->failed;
    r->bytes = iv->bytes;
    r->total = h->total;
    r->underflow = h->underflow;
    r->overflow = h->overflow;
    r->min = h->min;
    r->max = h->max;
    r->sum = h->sum;
    r->off = iv->nsparse;
    if (h->total > 0) {
        int64_t left = h->total;
        for (int i = 0; i < KB_HIST_LEN && left > 0; i++) {
            if (!h->counts[i])
                continue;
            size_t c1 = iv->capsparse, c2 = iv->capsparse;
            if (grow((void **)&iv->idx, &c1, iv->nsparse + 1, sizeof(uint32_t)) < 0 ||
                grow((void **)&iv->cnt, &c2, iv->nsparse + 1, sizeof(int64_t)) < 0) {
                iv->oom = 1;
                return;
            }
            iv->capsparse = c1 < c2 ? c1 : c2;
            iv->idx[iv->nsparse] = (uint32_t)i;
            iv->cnt[iv->nsparse] = h->counts[i];
            iv->nsparse++;
            r->nz++;
            left -= h->counts[i];
        }
        kb_hist_reset(h);
    } else if (h->underflow || h->overflow) {
        kb_hist_reset(h);
    }
    iv->n++;
    iv->sent = iv->acked = iv->failed = iv->bytes = 0;
    iv->start_ns = end;
}

void kb_iv_roll(kb_intervals *iv, int64_t now) {
    if (!iv->width_ns)
        return;
    while (now >= iv->next_ns && !iv->oom) {
        close_current(iv, iv->next_ns);
        iv->next_ns += iv->width_ns;
    }
}

void kb_iv_finish(kb_intervals *iv, int64_t end_ns) {
    if (!iv->width_ns)
        return;
    kb_iv_roll(iv, end_ns);
    if (end_ns > iv->start_ns)
        close_current(iv, end_ns);
}

void kb_iv_free(kb_intervals *iv) {
    free(iv->cur);
    free(iv->rows);
    free(iv->idx);
    free(iv->cnt);
    memset(iv, 0, sizeof(*iv));
}

void kb_iv_hist(const kb_intervals *iv, size_t k, kb_hist *out) {
    const kb_interval *r = &iv->rows[k];
    out->total = r->total;
    out->underflow = r->underflow;
    out->overflow = r->overflow;
    out->min = r->min;
    out->max = r->max;
    out->sum = r->sum;
    for (uint32_t j = 0; j < r->nz; j++)
        out->counts[iv->idx[r->off + j]] = iv->cnt[r->off + j];
}
