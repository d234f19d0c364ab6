/*
 * consumer.h - the consumer loop: end-to-end latency from the send time in the
 * "kb" header of the sampled records, record/byte counts, and loss/duplicate
 * detection from the record count (checked against the partitions' high
 * watermarks) and the sampled sequence numbers.
 */
#ifndef KBENCH_CONSUMER_H
#define KBENCH_CONSUMER_H

#include <stdatomic.h>
#include <stdint.h>

#include "errcount.h"
#include "histogram.h"
#include "intervals.h"
#include "kafka_conf.h"

/** A consumer run: inputs set by the caller, outputs filled by kb_consumer_run(). */
typedef struct {
    /* inputs */
    kb_props props;
    char *topic;
    uint64_t run_id;       /* count only messages of this run (0 = any) */
    int64_t expected;      /* records the producer sends; stop once that many were read and every sample seen */
    int64_t header_sample; /* the producer's: sequence numbers divisible by it carry the kb header (0 = none) */
    int64_t max_records;   /* stop after this many records (0 = no limit) */
    double timeout_s;      /* stop after this long from the start of consumption */
    double connect_timeout_s;
    int64_t interval_ns;   /* > 0: record the time series (iv) in intervals this long; 0 = none */
    atomic_int stop;       /* set from another thread to stop cleanly */
    atomic_int ready;      /* set by the loop once partitions are assigned at their end offsets */
    /* outputs */
    kb_hist *e2e;          /* now - send time from the kb header (sampled records), ns */
    int64_t records, bytes, unique, duplicates, out_of_range, foreign, no_header;
    int64_t sampled, samples_expected, samples_missing, sample_duplicates;
    int64_t stored_records; /* sum of (high watermark - start offset) at the end; -1 = not read */
    int64_t t_start, t_first, t_last, t_end;
    int32_t partitions;
    int timed_out, stopped;
    kb_errcount errors;
    kb_intervals iv;       /* the time series (interval_ns > 0): records, bytes and e2e per interval; the caller frees it (kb_iv_free) */
} kb_consumer;

/**
 * Assign every partition of the topic at its current high watermark, signal
 * ready, then consume until `expected` records were read and every expected
 * sample was seen (then the high watermarks are read once more: when they
 * hold more records than were read, duplicates were stored and the loop reads
 * them too), max_records were read, timeout_s passed or stop was set.
 * duplicates = max(records - expected, duplicated samples), unique = records -
 * duplicates.  0 on success (timing out is not an error: lost = expected -
 * unique, or the missing samples if more), < 0 with e set (error.h) when the client
 * cannot be created, reached or assigned.
 */
int kb_consumer_run(kb_consumer *c, kb_error *e);

#endif
