/*
 * sampler.h - read a bounded sample of a topic's records (keys and values,
 * byte for byte) from the beginning of every partition, for `kbench corpus
 * sample`.  The client handle is created, used and destroyed by the calling
 * thread only.
 */
#ifndef KBENCH_SAMPLER_H
#define KBENCH_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "kafka_conf.h"

/** One sampled record; key/value point into kb_sample.buf (offsets, valid after the run). */
typedef struct {
    int32_t partition;
    int64_t offset;
    size_t key_off, value_off;
    int64_t key_len, value_len; /* -1: null */
} kb_sample_rec;

typedef struct {
    /* in */
    kb_props props;
    const char *topic;
    size_t max_records;
    size_t max_bytes; /* keys + values kept at most */
    double timeout_s;
    /* out */
    unsigned char *buf;
    size_t len, cap;
    kb_sample_rec *recs;
    size_t n, rcap;
    int partitions;
    int64_t available; /* sum of high - low watermarks at the start */
    int truncated;     /* stopped at max_bytes */
    int timed_out;
} kb_sample;

/** Run the sample; 0, or < 0 with e set (error.h).  Free with kb_sample_free(). */
int kb_sample_run(kb_sample *s, kb_error *e);

/** Free what kb_sample_run() allocated (not the props). */
void kb_sample_free(kb_sample *s);

#endif
