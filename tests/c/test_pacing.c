/*
 * test_pacing.c - the fixed-rate schedule (csrc/core/pacing.c) driven by a
 * fake clock, built with ASan+UBSan by tests/test_c_asan.py.  The loop is the
 * producer's own, kb_pace_run(): sleep until the wake time (the fake clock
 * jumps there, plus a wake-up lateness), send every message due, compute the
 * next wake.
 * Prints "N checks, 0 failed" and exits 0 on success.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "pacing.h"

typedef struct {
    int64_t sent, wakes, max_delay, min_gap, last_wake, last_seq_sent;
    int order_ok, early;
} sim_result;

/* The fake clock and client under kb_pace_run(), the producer's own loop. */
typedef struct {
    sim_result r;
    int64_t now, prev_actual, nwait;
    int64_t (*lateness)(int64_t);
    int64_t stop_after; /* stopped() turns true once this many messages were sent (-1 = never) */
    int64_t halt_at;    /* send() asks to halt at this seq (-1 = never) */
    int64_t after_wakes;
} fake;

static int64_t fake_wait(void *user, int64_t wake) {
    fake *f = user;
    if (wake > f->now)
        f->now = wake; /* the sleep */
    f->now += f->lateness(f->nwait++);
    if (f->prev_actual >= 0 && f->now - f->prev_actual < f->r.min_gap)
        f->r.min_gap = f->now - f->prev_actual;
    f->prev_actual = f->now;
    return f->now;
}

static int fake_send(void *user, int64_t seq, int64_t due) {
    fake *f = user;
    if (due > f->now)
        f->r.early++;
    if (f->now - due > f->r.max_delay)
        f->r.max_delay = f->now - due;
    if (seq != f->r.last_seq_sent + 1)
        f->r.order_ok = 0;
    f->r.last_seq_sent = seq;
    f->r.sent++;
    f->now += 300; /* each send takes 300 ns of fake time */
    return seq == f->halt_at;
}

/* No simulated run here needs more wakes than this: a loop that never ends is a failure, not a hang. */
#define MAX_WAKES 1000000

static int fake_stopped(void *user) {
    fake *f = user;
    return (f->stop_after >= 0 && f->r.sent >= f->stop_after) || f->nwait >= MAX_WAKES;
}

static void fake_after_wake(void *user) {
    ((fake *)user)->after_wakes++;
}

/* Run the producer's loop (kb_pace_run) on a fake clock; lateness(i) is how late wake i happens (ns). */
static sim_result simulate_with(const kb_pace *p, int64_t (*lateness)(int64_t), int64_t stop_after, int64_t halt_at) {
    fake f = {.r = {.min_gap = INT64_MAX, .last_wake = -1, .last_seq_sent = -1, .order_ok = 1},
              .now = p->t0 - 5000,
              .prev_actual = -1,
              .lateness = lateness,
              .stop_after = stop_after,
              .halt_at = halt_at};
    kb_pace_ops ops = {
        .user = &f, .wait = fake_wait, .send = fake_send, .stopped = fake_stopped, .after_wake = fake_after_wake};
    int64_t n = kb_pace_run(p, &ops, &f.r.wakes);
    CHECK(n == f.r.sent);                 /* the loop counts what it handed to send */
    CHECK(f.after_wakes == f.r.wakes);    /* delivery reports are served after every wake */
    CHECK(f.nwait == f.r.wakes);
    CHECK(f.nwait < MAX_WAKES); /* the run ended by itself */
    return f.r;
}

static sim_result simulate(const kb_pace *p, int64_t (*lateness)(int64_t)) { return simulate_with(p, lateness, -1, -1); }

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
    /* send asking to halt ends the run right after that message; stop ends it before the next wake */
    r = simulate_with(&p, on_time, -1, 41);
    CHECK(r.sent == 42 && r.last_seq_sent == 41 && r.order_ok && r.early == 0);
    /* the wake that passes 30 sent messages still sends all its due ones (a burst is at most ~21 here) */
    r = simulate_with(&p, on_time, 30, -1);
    CHECK(r.sent >= 30 && r.sent <= 30 + 21 && r.order_ok);
    /* a stop already set: no wake at all */
    r = simulate_with(&p, on_time, 0, -1);
    CHECK(r.sent == 0 && r.wakes == 0);
}

int main(void) {
    test_due_times();
    test_limits();
    test_wake_grid();
    test_simulated_runs();
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
