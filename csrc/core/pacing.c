/*
 * pacing.c - the fixed-rate schedule (see pacing.h).
 */
#include "pacing.h"

int64_t kb_pace_due(const kb_pace *p, int64_t seq) {
    return p->t0 + (int64_t)((double)seq * (1e9 / p->rate));
}

int kb_pace_done(const kb_pace *p, int64_t seq) {
    if (p->count > 0 && seq >= p->count)
        return 1;
    return kb_pace_due(p, seq) >= p->end_ns;
}

int64_t kb_pace_due_by(const kb_pace *p, int64_t seq, int64_t now) {
    if (now >= p->end_ns)
        now = p->end_ns - 1; /* messages due at or after end_ns are not part of the run */
    if (now < p->t0)
        return seq;
    /* estimate from the rate, then correct against kb_pace_due so both agree exactly */
    double est = (double)(now - p->t0) * p->rate / 1e9 + 1.0;
    int64_t n = est > 9.0e18 ? INT64_MAX / 2 : (int64_t)est;
    if (n < seq)
        n = seq;
    while (n > seq && kb_pace_due(p, n - 1) > now)
        n--;
    while (kb_pace_due(p, n) <= now)
        n++;
    if (p->count > 0 && n > p->count)
        n = p->count;
    return n < seq ? seq : n;
}

int64_t kb_pace_wake(const kb_pace *p, int64_t next_seq, int64_t prev_wake) {
    if (kb_pace_done(p, next_seq))
        return INT64_MAX;
    int64_t due = kb_pace_due(p, next_seq);
    int64_t grid = prev_wake > INT64_MAX - p->tick_ns ? INT64_MAX : prev_wake + p->tick_ns;
    return due > grid ? due : grid;
}

int64_t kb_pace_run(const kb_pace *p, const kb_pace_ops *ops, int64_t *wakes) {
    int64_t seq = 0, wake = p->t0;
    int halt = 0;
    *wakes = 0;
    while (!halt && !ops->stopped(ops->user) && !kb_pace_done(p, seq)) {
        int64_t now = ops->wait(ops->user, wake);
        (*wakes)++;
        int64_t upto = kb_pace_due_by(p, seq, now);
        while (seq < upto && !halt) {
            halt = ops->send(ops->user, seq, kb_pace_due(p, seq));
            seq++;
        }
        if (ops->after_wake)
            ops->after_wake(ops->user);
        wake = kb_pace_wake(p, seq, wake);
    }
    return seq;
}
