/*
 * test_pacing.c - the fixed-rate schedule (csrc/core/pacing.c) driven by a
 * fake clock, built with ASan+UBSan by tests/test_c_asan.py.  The loop below
 * is the producer's: sleep until the wake time (the fake clock jumps there,
 * plus a wake-up lateness), send every message due, compute the next wake.
 * Prints "N checks, 0 failed" and exits 0 on success.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pacing.h"

static int checks, failures;
#define CHECK(c)                                                                                                      \
    do {                                                                                                              \
        checks++;                                                                                                     \
        if (!(c)) {                                                                                                   \
            failures++;                                                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);                                     \
        }                                                                                                             \
    } while (0)

typedef struct {
    int64_t sent, wakes, max_delay, min_gap, last_wake, last_seq_sent;
    int order_ok, early;
} sim_result;

/* Run the schedule on a fake clock; lateness(i) is how late wake i happens (ns). */
static sim_result simulate(const kb_pace *p, int64_t (*lateness)(int64_t)) {
    sim_result r = {.min_gap = INT64_MAX, .last_wake = -1, .last_seq_sent = -1, .order_ok = 1};
    int64_t now = p->t0 - 5000, seq = 0, wake = p->t0, prev_actual = -1;
    while (!kb_pace_done(p, seq)) {
        if (wake == INT64_MAX)
            break;
        if (wake > now)
            now = wake; /* the sleep */
        now += lateness(r.wakes);
        if (prev_actual >= 0 && now - prev_actual < r.min_gap)
            r.min_gap = now - prev_actual;
        prev_actual = now;
        r.wakes++;
        int64_t upto = kb_pace_due_by(p, seq, now);
        for (; seq < upto; seq++) {
            int64_t due = kb_pace_due(p, seq);
            if (due > now)
                r.early++;
            if (now - due > r.max_delay)
                r.max_delay = now - due;
            if (seq != r.last_seq_sent + 1)
                r.order_ok = 0;
            r.last_seq_sent = seq;
            r.sent++;
            now += 300; /* each send takes 300 ns of fake time */
        }
        wake = kb_pace_wake(p, seq, wake);
    }
    return r;
}

static int64_t on_time(int64_t i) {
    (void)i;
    return 0;
}

static int64_t jittery(int64_t i) {
    return (i * 7919) % 50000; /* 0..50 us late */
}

static int64_t stall(int64_t i) {
    return i == 100 ? 30000000 : 0; /* one 30 ms stall */
}

static void test_due_times(void) {
    kb_pace p = {.t0 = 1000, .rate = 1000.0, .tick_ns = 200000, .count = 0, .end_ns = INT64_MAX};
    CHECK(kb_pace_due(&p, 0) == 1000);
    CHECK(kb_pace_due(&p, 1) == 1000 + 1000000);
    CHECK(kb_pace_due(&p, 1000) == 1000 + 1000000000LL);
    /* nothing is due before t0; message 0 is due at t0 */
    CHECK(kb_pace_due_by(&p, 0, 999) == 0);
    CHECK(kb_pace_due_by(&p, 0, 1000) == 1);
    CHECK(kb_pace_due_by(&p, 0, 1000 + 1000000 - 1) == 1);
    CHECK(kb_pace_due_by(&p, 0, 1000 + 1000000) == 2);
    /* a lagging loop gets every due message at once, from where it is */
    CHECK(kb_pace_due_by(&p, 5, 1000 + 9500000) == 10);
    /* a non-integral interval: due_by agrees with due at every boundary */
    kb_pace q = {.t0 = 0, .rate = 116184.0, .tick_ns = 100000, .count = 0, .end_ns = INT64_MAX};
    for (int64_t s = 0; s < 200000; s += 997) {
        int64_t d = kb_pace_due(&q, s);
        CHECK(kb_pace_due_by(&q, 0, d) == s + 1);
        if (d > 0)
            CHECK(kb_pace_due_by(&q, 0, d - 1) <= s);
    }
}

static void test_limits(void) {
    kb_pace p = {.t0 = 0, .rate = 10000.0, .tick_ns = 200000, .count = 25, .end_ns = INT64_MAX};
    CHECK(kb_pace_due_by(&p, 0, 1000000000) == 25); /* count caps a burst */
    CHECK(kb_pace_done(&p, 25) && !kb_pace_done(&p, 24));
    CHECK(kb_pace_wake(&p, 25, 0) == INT64_MAX);
    kb_pace d = {.t0 = 0, .rate = 10000.0, .tick_ns = 200000, .count = 0, .end_ns = 1000000}; /* 1 ms */
    CHECK(kb_pace_due_by(&d, 0, 5000000000LL) == 10); /* due at 0, 100 us, ..., 900 us */
    CHECK(kb_pace_done(&d, 10) && !kb_pace_done(&d, 9));
}

static void test_wake_grid(void) {
    /* low rate: every wake is a message's own due time */
    kb_pace low = {.t0 = 0, .rate = 1000.0, .tick_ns = 200000, .count = 0, .end_ns = INT64_MAX};
    CHECK(kb_pace_wake(&low, 3, 1000000) == 3000000);
    /* high rate: wakes are a tick apart, however close the next due time is */
    kb_pace high = {.t0 = 0, .rate = 100000.0, .tick_ns = 200000, .count = 0, .end_ns = INT64_MAX};
    CHECK(kb_pace_wake(&high, 21, 200000) == 400000);
}

static void test_simulated_runs(void) {
    /* 100k msg/s for 1 s, tick 200 us, on time: ~5000 wakes, 20 messages each, none early, none lost */
    kb_pace p = {.t0 = 1000000, .rate = 100000.0, .tick_ns = 200000, .count = 100000, .end_ns = INT64_MAX};
    sim_result r = simulate(&p, on_time);
    CHECK(r.sent == 100000);
    CHECK(r.early == 0 && r.order_ok);
    CHECK(r.wakes >= 4990 && r.wakes <= 5010);
    CHECK(r.min_gap >= 200000 - 20 * 300);   /* never more often than a tick (less the send time) */
    CHECK(r.max_delay <= 200000 + 20 * 300); /* never later than a tick plus the burst */
    /* 1k msg/s: one wake per message, each on its due time */
    kb_pace l = {.t0 = 0, .rate = 1000.0, .tick_ns = 200000, .count = 500, .end_ns = INT64_MAX};
    r = simulate(&l, on_time);
    CHECK(r.sent == 500 && r.wakes == 500 && r.max_delay == 0 && r.early == 0);
    /* late wake-ups: still every message exactly once, in order, never early */
    r = simulate(&p, jittery);
    CHECK(r.sent == 100000 && r.early == 0 && r.order_ok);
    CHECK(r.max_delay <= 200000 + 50000 + 20 * 300 + 50000);
    /* a 30 ms stall: the due messages go out in one burst right after, then the grid resumes */
    r = simulate(&p, stall);
    CHECK(r.sent == 100000 && r.early == 0 && r.order_ok);
    CHECK(r.max_delay >= 30000000 && r.max_delay <= 30000000 + 200000 + 3100 * 300);
    /* a duration limit ends the run at the last message due before end_ns */
    kb_pace d = {.t0 = 0, .rate = 50000.0, .tick_ns = 200000, .count = 0, .end_ns = 2000000000LL};
    r = simulate(&d, jittery);
    CHECK(r.sent == 100000 && r.last_seq_sent == 99999);
}

int main(void) {
    test_due_times();
    test_limits();
    test_wake_grid();
    test_simulated_runs();
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
