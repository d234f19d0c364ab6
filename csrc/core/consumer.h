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

/**
 * Group mode: what one consumer read of one partition.  Offsets in a partition are
 * contiguous (no transactions, no compaction on kbench's topics), so the offsets
 * read are kept as sorted, disjoint [lo, hi) runs: their length is the distinct
 * records read, records - that is the duplicates, and the union of every group
 * member's runs against [start, end) is what the group lost (exact per partition).
 */
typedef struct {
    int32_t partition;
    int64_t start;   /* the group's first offset (committed before the run) */
    int64_t end;     /* high watermark read at the end (-1 = not read) */
    int64_t records; /* records read here, duplicates included */
    int64_t bytes;
    int64_t *runs;   /* nruns pairs lo, hi */
    int nruns, cap;
    int64_t next;      /* offset after the last record read (-1 = none) */
    int64_t committed; /* the last next committed from here (-1 = none) */
    int assigned, eof;
} kb_part_seen;

/** The largest statistics document kept (bytes). */
#define KB_STATS_MAX (4 << 20)

/** Assign mode: where the partitions start. */
enum { KB_START_END = 0, KB_START_BEGINNING = 1, KB_START_OFFSET = 2, KB_START_TIMESTAMP = 3 };

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
    int group;             /* 1: join the consumer group group.id (subscribe) instead of assigning every partition */
    int from_beginning;    /* group: partitions the group has no offset for start at the low (1) or high (0) watermark */
    int64_t latency_skip_ns; /* the latency window: e2e records only records sent at or after the first kb header's
                                send time + latency_skip_ns; 0 = every sampled record */
    int64_t latency_from_seq; /* > 0: the latency window by sequence number instead (one producer at a fixed rate:
                                 exactly its messages due from t0 + the skip); e2e records only seq >= it */
    int start_mode;        /* assign mode: where every partition starts (KB_START_*) */
    int64_t start_value;   /* KB_START_OFFSET: the offset (>= 0, within every partition's watermarks);
                              KB_START_TIMESTAMP: ms since the epoch (>= 0; a partition without a record
                              at or after it starts at its end) */
    int cpu_window;        /* 1: read the process's and the loop thread's CPU after every batch that read records:
                              the steady window (win_*) is the end of the first such batch .. the end of the last */
    atomic_int stop;       /* set from another thread to stop cleanly */
    atomic_int ready;      /* set by the loop once partitions are assigned at their end offsets */
    int hold;              /* group mode: after ready, wait for go (or stop) before subscribing, so that
                              every member of a group joins at one instant (G's drain) */
    atomic_int go;         /* set from another thread: a holding member subscribes now */
    /* outputs */
    kb_hist *e2e;          /* now - send time from the kb header (sampled records), ns */
    int64_t records, bytes, unique, duplicates, out_of_range, foreign, no_header;
    int64_t sampled, samples_expected, samples_missing, sample_duplicates;
    int64_t stored_records; /* sum of (high watermark - start offset) at the end; -1 = not read */
    int64_t t_start, t_first, t_last, t_end;
    int64_t t_assigned;    /* when partitions were first assigned: group mode, the join (subscribe at t_start
                              .. the first assignment); assign mode, t_start; 0 = never */
    int64_t lat_from;      /* send time the latency window opens at (set at the first kb header) */
    int lat_open;          /* 1 once lat_from is set */
    int64_t loop_cpu_ns;   /* CPU of the loop thread from t_start to the end of the loop (usr+sys) */
    int32_t partitions;
    kb_part_seen *parts;   /* group mode: one per partition of the topic (nparts), else NULL */
    int nparts;
    int64_t rebalances;    /* group mode: assignments received */
    int64_t commit_errors; /* group mode: offset commits that failed */
    int timed_out, stopped;
    kb_conn_err conn_err; /* the last handshake failure error_cb saw (kafka_conf.h) */
    kb_errcount errors;
    char *stats;           /* the last librdkafka statistics JSON (statistics.interval.ms > 0; at most
                              KB_STATS_MAX bytes), NULL = none; the caller frees it */
    int64_t stats_count;   /* statistics emitted */
    /* cpu_window: the steady window's records, wall time, process CPU and loop-thread CPU (all 0 without a
     * window: fewer than two batches read records) */
    int64_t win_records, win_ns, win_proc_cpu_ns, win_loop_cpu_ns;
    int64_t w0[4], w1[4]; /* records, time, process CPU, loop CPU at the window's edges (internal) */
    rd_kafka_queue_t *mq;  /* internal: the queue every consumed partition's messages are forwarded to (the
                              loop takes it whole; group mode forwards at each assignment) */
    kb_intervals iv;       /* the time series (interval_ns > 0): records, bytes and e2e per interval; the caller frees it (kb_iv_free) */
} kb_consumer;

/**
 * Records are dequeued in batches (every record queued when the client is served: one clock read
 * and one interval tick per batch, not per record); the counts, the e2e histogram and the
 * time series are per record as before.  Both modes forward every consumed partition's messages to
 * a queue of their own (mq; assign mode before it assigns, group mode in the rebalance callback
 * before each assignment) and take that whole queue at once (rd_kafka_consume_callback_queue, as
 * kcat does): librdkafka 2.0.2's fetcher stops for up to 1 s whenever its queue holds
 * queued.min.messages (100,000 by default), and a reader that leaves records queued while it works
 * on a batch (rd_kafka_consume_batch_queue, at most KB_BATCH at a time) hits that stop.  The
 * consumer queue (rebalances, statistics, errors, and the messages of a partition not forwarded) is
 * served without waiting after each take; an event on it wakes a wait on mq at once
 * (rd_kafka_queue_yield), so a rebalance is served as soon as it arrives.
 *
 * Assign every partition of the topic at its current high watermark (or where start_mode says), signal
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

/*
 * Group mode (c->group): the group's start offset of every partition is made
 * durable first (a partition the group has no committed offset for gets the low
 * watermark with from_beginning, else the high one), then ready is set and the
 * consumer subscribes (with hold: once go or stop is set; t_start and the loop's
 * CPU start there); partitions come and go by rebalance (a revoked partition's
 * position is committed synchronously, every partition's every 500 ms).  It stops
 * once the group's committed offsets hold `expected` records past the start
 * offsets (expected 0: every record stored when the run began, the catch-up
 * drain), then, like above, the stored records are read once more.  It asks the
 * group 10 times a second while its own partitions are at their end, once a
 * second while it reads.  The header's sequence-number bitmap is not kept
 * (a member sees a share of the samples): loss and duplicates come from parts.
 */

/** Free what kb_consumer_run() allocated in c->parts. */
void kb_consumer_free_parts(kb_consumer *c);

#endif
