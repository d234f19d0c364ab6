/*
 * test_intervals.c - the interval series (csrc/core/intervals.c) on a fake
 * clock, built with ASan+UBSan by tests/test_c_asan.py: intervals cut at whole
 * widths, a stall is a run of empty intervals, counts and histogram counters
 * of each interval are its own, the rows grow past their first allocation.
 * Prints "N checks, 0 failed" and exits 0 on success.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "intervals.h"

#define S 1000000000LL

static void event(kb_intervals *iv, int64_t now, int64_t latency) {
    kb_iv_at(iv, now);
    iv->sent++;
    iv->bytes += 10;
    kb_hist_record(iv->cur, latency);
}

int main(void) {
    kb_error e = KB_ERROR_INIT;
    kb_intervals iv;
    CHECK(kb_iv_init(&iv, 0, 0, &e) == KB_EINVAL);
    kb_iv_free(&iv);
    CHECK(kb_iv_init(&iv, S, 5 * S + S / 2, &e) == KB_OK);
    CHECK(iv.next_ns == 6 * S);
    /* second 5 (half): 3 events; second 6: 2; seconds 7-9: nothing (a stall); second 10: 1 */
    event(&iv, 5 * S + S / 2 + 1, 1000);
    event(&iv, 5 * S + S / 2 + 2, 2000);
    event(&iv, 6 * S - 1, 3000);
    event(&iv, 6 * S, 5000000);
    event(&iv, 6 * S + 7, 5000001);
    event(&iv, 10 * S + 3, 42);
    kb_iv_finish(&iv, 10 * S + S / 4);
    CHECK(iv.n == 6 && !iv.oom);
    const int64_t want_sent[] = {3, 2, 0, 0, 0, 1};
    for (size_t k = 0; k < iv.n && k < 6; k++) {
        kb_interval *r = &iv.rows[k];
        CHECK(r->sent == want_sent[k]);
        CHECK(r->total == want_sent[k]);
        CHECK(r->bytes == 10 * want_sent[k]);
        CHECK(r->end_ns > r->start_ns);
        if (k > 0)
            CHECK(r->start_ns == iv.rows[k - 1].end_ns && r->start_ns % S == 0);
        int64_t sum = 0;
        for (uint32_t j = 0; j < r->nz; j++)
            sum += iv.cnt[r->off + j];
        CHECK(sum == r->total);
    }
    CHECK(iv.rows[0].start_ns == 5 * S + S / 2 && iv.rows[0].end_ns == 6 * S);
    CHECK(iv.rows[0].min == 1000 && iv.rows[0].max == 3000);
    CHECK(iv.rows[1].min == 5000000 && iv.rows[1].max == 5000001);
    CHECK(iv.rows[5].end_ns == 10 * S + S / 4 && iv.rows[5].max == 42);
    kb_iv_free(&iv);

    /* many intervals, many distinct counters: the rows and the sparse store grow */
    CHECK(kb_iv_init(&iv, S / 1000, 0, &e) == KB_OK);
    for (int64_t k = 0; k < 3000; k++)
        for (int64_t j = 0; j < 50; j++)
            event(&iv, k * (S / 1000) + j, 1000 + 997 * j + k);
    kb_iv_finish(&iv, 3000 * (S / 1000));
    CHECK(iv.n == 3000 && !iv.oom);
    int ok = 1;
    for (size_t k = 0; k < iv.n; k++)
        ok &= iv.rows[k].sent == 50 && iv.rows[k].total == 50 && iv.rows[k].nz > 1;
    CHECK(ok);
    kb_iv_free(&iv);
    printf("%d checks, %d failed\n", checks, failures);
    return failures != 0;
}
