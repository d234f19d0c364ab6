/*
 * batching.h - the producer batching model: which records a real producer
 * puts into which batch, and when each batch closes.  Pure C, no Python.
 *
 * Records arrive on a simulated clock (fixed rate or Poisson), are routed to
 * a partition (Java's murmur2 for keys, sticky or round-robin otherwise) and
 * accumulate per partition until the client's size rule closes the batch
 * (java: estimated compressed size vs batch.size, learning the ratio as the
 * Java producer does; librdkafka: uncompressed wire bytes incl. request
 * framing vs batch.size), linger.ms expires, or the input ends (flush).
 * Every closed batch is encoded (compressed) and handed to a sink.
 * The modelled rules are documented in docs/batching-model.md.
 */
#ifndef KBENCH_BATCHING_H
#define KBENCH_BATCHING_H

#include <stddef.h>
#include <stdint.h>

#include "codecs.h"
#include "recordbatch.h"

typedef enum { KB_CLIENT_JAVA = 0, KB_CLIENT_LIBRDKAFKA = 1 } kb_client_t;
typedef enum { KB_PART_DEFAULT = 0, KB_PART_ROUND_ROBIN = 1 } kb_partitioner_t;
typedef enum { KB_ARRIVAL_FIXED = 0, KB_ARRIVAL_POISSON = 1 } kb_arrival_t;
typedef enum { KB_CLOSE_FULL = 0, KB_CLOSE_LINGER = 1, KB_CLOSE_FLUSH = 2 } kb_close_t;

extern const char *const kb_close_names[];

typedef struct {
    kb_client_t client;
    kb_codec_t codec;
    int level;                 /* effective level (kb_codec_level) */
    int32_t partitions;        /* >= 1 */
    kb_partitioner_t partitioner;
    int64_t batch_size;        /* bytes, >= 0 */
    double linger_ms;          /* >= 0 */
    double rate;               /* records per second, > 0 */
    kb_arrival_t arrival;
    uint64_t seed;
    uint32_t key_cardinality;  /* 0: null keys; else keys "key-<n>", n uniform in [0, cardinality) */
    int64_t start_ts_ms;       /* CreateTime of the first arrival */
    double sticky_linger_ms;   /* librdkafka sticky.partitioning.linger.ms (default 10) */
    int32_t topic_name_len;    /* for librdkafka's request framing in batch.size */
    int64_t message_max_bytes; /* librdkafka message.max.bytes (default 1000000) */
    int32_t batch_num_messages; /* librdkafka batch.num.messages (default 10000) */
} kb_batching_cfg;

/** Defaults of both clients (batch.size etc. as each client ships them). */
kb_batching_cfg kb_batching_cfg_default(kb_client_t client);

/** The input records: payload[offs[i]..offs[i+1]) is record i's value. */
typedef struct {
    const uint8_t *payload;
    const uint64_t *offs;
    size_t n;
} kb_recset;

typedef struct {
    int32_t partition;
    int32_t count;
    uint64_t raw_bytes;    /* records region, uncompressed */
    uint64_t batch_bytes;  /* the encoded batch, 12 + batchLength */
    int stored_codec;
    kb_close_t reason;
    double t_open_ms, t_close_ms;
} kb_batch_info;

/**
 * Receives each closed batch: its info, its record indices (count of them)
 * and the encoded bytes.  The sink owns nothing it is given, except that it
 * may take ownership of *batch (set *batch = NULL) and *idx likewise.
 * Returns 0, or -1 (with e set) to stop the run.
 */
typedef int (*kb_batch_sink)(void *user, const kb_batch_info *info, uint32_t **idx, uint8_t **batch, kb_error *e);

/** Java's Utils.murmur2. */
int32_t kb_murmur2(const uint8_t *data, size_t n);
/** Utils.toPositive(murmur2(key)) % partitions. */
int32_t kb_partition_for_key(const uint8_t *key, size_t n, int32_t partitions);

/** The key of record i under cfg (writes up to 24 bytes into out); returns its length, or -1 for null. */
int kb_batching_key(const kb_batching_cfg *cfg, size_t i, uint8_t out[24]);
/** Arrival time of every record in ms from the start (n doubles into out). */
void kb_batching_arrivals(const kb_batching_cfg *cfg, size_t n, double *out);
/** CreateTime of a record arriving at t_ms. */
static inline int64_t kb_batching_ts(const kb_batching_cfg *cfg, double t_ms) {
    return cfg->start_ts_ms + (int64_t)t_ms;
}

/** Check cfg; 0 or -1 with e set. */
int kb_batching_validate(const kb_batching_cfg *cfg, kb_error *e);

/** Run the model over recs; 0 or -1 with e set.  ctx is the caller's codec context. */
int kb_batching_run(const kb_batching_cfg *cfg, const kb_recset *recs, kb_codec_ctx *ctx, kb_batch_sink sink,
                    void *user, kb_error *e);

#endif
