/*
 * pacing.h - the fixed-rate schedule as pure functions of a clock reading.
 *
 * Message i is due at t0 + i/rate (its intended send time, kept for the delay
 * and corrected histograms).  The loop does not wake once per message: it
 * sleeps until the next wake time, sends every message due by then, and
 * sleeps again.  Wakes are at least tick_ns apart, so at high rates a wake
 * sends a burst of due messages and at low rates a wake is a message's own due
 * time.  No function here reads a clock: the producer's loop is kb_pace_run()
 * over its real clock and client, and a test drives the same loop with a fake one.
 */
#ifndef KBENCH_PACING_H
#define KBENCH_PACING_H

#include <stdint.h>

/** A fixed-rate schedule. */
typedef struct {
    int64_t t0;      /* due time of message 0 (ns) */
    double rate;     /* messages per second, > 0 */
    int64_t tick_ns; /* minimum time between two wakes, >= 0 */
    int64_t count;   /* messages in the run; 0 = bounded by end_ns only */
    int64_t end_ns;  /* no message is due at or after this (INT64_MAX = no limit) */
} kb_pace;

/** Intended send time of message seq. */
int64_t kb_pace_due(const kb_pace *p, int64_t seq);

/** 1 when message seq lies beyond the run (count reached, or due at/after end_ns). */
int kb_pace_done(const kb_pace *p, int64_t seq);

/**
 * The first message at or after seq that is not yet due at `now` (or the end
 * of the run): messages [seq, result) are due by now and must be sent.
 */
int64_t kb_pace_due_by(const kb_pace *p, int64_t seq, int64_t now);

/**
 * When to wake next, given that messages before next_seq were sent and the
 * previous wake was scheduled at prev_wake: the later of next_seq's due time
 * and prev_wake + tick_ns.  INT64_MAX when the run has no message left.
 */
int64_t kb_pace_wake(const kb_pace *p, int64_t next_seq, int64_t prev_wake);

/**
 * What the fixed-rate loop does at its clock and its client, for kb_pace_run():
 * the producer passes the real ones (csrc/core/producer.c), a test a fake clock.
 */
typedef struct {
    void *user;
    /** Sleep until wake (ns); returns the clock reading once awake (never before wake for a real clock). */
    int64_t (*wait)(void *user, int64_t wake);
    /** Send message seq, due at due; non-zero ends the run after it (out of memory, stop requested). */
    int (*send)(void *user, int64_t seq, int64_t due);
    /** Non-zero when the run must stop before the next wake (checked before each wake). */
    int (*stopped)(void *user);
    /** After the messages of one wake were sent (the producer serves delivery reports); may be NULL. */
    void (*after_wake)(void *user);
} kb_pace_ops;

/**
 * The fixed-rate loop: from wake = t0, sleep until the wake time, send every
 * message due by the clock reading then (kb_pace_due_by), compute the next wake
 * (kb_pace_wake); until the run is done, send asks to halt or stopped is set.
 * Returns the number of messages handed to send; *wakes receives the wakes.
 */
int64_t kb_pace_run(const kb_pace *p, const kb_pace_ops *ops, int64_t *wakes);

#endif
