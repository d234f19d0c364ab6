/*
 * sim.h - the simulated transport: producer, broker and consumer stages on
 * three native threads (see docs/batching-model.md).  Pure C, no Python.
 *
 * producer: the batching model (batching.h) builds and compresses batches.
 * broker:   verifies each batch's CRC, decompresses and checks every record
 *           (as LogValidator does), recompresses when the topic's
 *           compression.type names another codec, assigns offsets and
 *           appends to <dir>/<topic>-<p>/00000000000000000000.log.
 * consumer: reads each stored batch back from the segment file, verifies the
 *           CRC, decompresses and checks every record equals what was sent.
 * Each stage measures its own thread CPU (CLOCK_THREAD_CPUTIME_ID).
 */
#ifndef KBENCH_SIM_H
#define KBENCH_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "batching.h"

typedef struct {
    kb_batching_cfg batching;
    int topic_codec;       /* -1: compression.type=producer; else the topic codec */
    int topic_level;       /* effective level for topic_codec */
    const char *dir;       /* where the topic-partition directories go */
    const char *topic;
    size_t max_uncompressed; /* decompression limit per batch */
    int32_t leader_epoch;
    size_t queue_depth;    /* batches in flight between stages */
} kb_sim_cfg;

typedef struct {
    int64_t cpu_ns, wall_ns;
    uint64_t bytes_in, bytes_out;
    uint64_t batches, records;
} kb_stage_stats;

/** One batch as produced and as stored. */
typedef struct {
    kb_batch_info info;     /* as the producer built it */
    int64_t base_offset;    /* assigned by the broker */
    uint64_t position;      /* in the partition's segment */
    uint64_t stored_bytes;  /* after any recompression */
    int stored_codec;
} kb_sim_batch;

typedef struct {
    kb_stage_stats producer, broker, consumer;
    uint64_t payload_bytes;     /* record values, what "GB of payload" means */
    uint64_t raw_batch_bytes;   /* the batches as they would be uncompressed (61 + records) */
    uint64_t produced_bytes;    /* batches as the producer sent them */
    uint64_t stored_bytes;      /* bytes in the segment files */
    uint64_t recompressed;      /* batches the broker recompressed */
    uint64_t verified;          /* records the consumer checked equal */
    uint64_t mismatches;
    kb_sim_batch *batches;      /* malloc'd, nbatches of them, in broker order */
    size_t nbatches;
} kb_sim_result;

/** Run; 0 or -1 with e set.  Free the result with kb_sim_result_free. */
int kb_sim_run(const kb_sim_cfg *cfg, const kb_recset *recs, kb_sim_result *res, kb_error *e);
void kb_sim_result_free(kb_sim_result *res);

#endif
