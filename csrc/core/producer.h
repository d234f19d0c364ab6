/*
 * producer.h - the producer loop over librdkafka: fixed-rate (schedule-based,
 * coordinated-omission-corrected, sleeping between ticks) or saturated; one
 * message in header_sample carries a header with the monotonic send time,
 * sequence number and run id (the consumer's end-to-end latency sample).
 */
#ifndef KBENCH_PRODUCER_H
#define KBENCH_PRODUCER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "errcount.h"
#include "histogram.h"
#include "intervals.h"
#include "kafka_conf.h"
#include "threadcpu.h"

#define KB_MODE_SATURATED 0
#define KB_MODE_FIXED_RATE 1
#define KB_KEYS_NONE 0
#define KB_KEYS_ROUND_ROBIN 1
#define KB_KEYS_RANDOM 2
#define KB_DEFAULT_TICK_NS 2000000 /* minimum time between two wakes of the fixed-rate loop (kbench.kafka.drivers.DEFAULT_TICK_S) */
#define KB_CLIENT_THREAD_PREFIX "rdk:" /* librdkafka names its threads rdk:main, rdk:broker<id>, ... */

/** A producer run: inputs set by the caller, outputs filled by kb_producer_run(). */
typedef struct {
    /* inputs */
    kb_props props;
    char *topic;
    const uint8_t *payload;  /* corpus bytes */
    const int64_t *offsets;  /* nrec + 1 offsets into payload: record i = [offsets[i], offsets[i+1]) */
    size_t nrec;
    int mode;                /* KB_MODE_* */
    double rate;             /* messages/s (fixed-rate) */
    int64_t count;           /* messages to send; 0 = until duration_s */
    double duration_s;       /* 0 = no time limit */
    int key_policy;          /* KB_KEYS_* */
    int64_t nkeys;           /* size of the key set */
    int32_t partition;       /* -1 = librdkafka's partitioner */
    uint64_t run_id;
    int64_t seq_base;        /* first sequence number in the kb header (several producers of one run: disjoint ranges) */
    const char *stats_path;  /* NULL = no statistics file */
    int64_t header_sample;   /* kb header on messages whose seq % header_sample == 0; 0 = none */
    int64_t tick_ns;         /* fixed-rate: minimum time between two wakes (0 = KB_DEFAULT_TICK_NS) */
    double cpu_skip_s;       /* per-thread CPU window from t0 + cpu_skip_s to the end of the flush; < 0 = none */
    int64_t latency_skip_ns; /* the latency window: service, delay and corrected record only messages due (fixed
                                rate) or sent (saturated) at or after t0 + latency_skip_ns; 0 = every message */
    double flush_timeout_s;
    double connect_timeout_s;
    int64_t interval_ns;     /* > 0: record the time series (iv) in intervals this long; 0 = none */
    atomic_int stop;         /* set from another thread to stop cleanly */
    /* outputs */
    kb_hist *service;        /* delivery - actual send */
    kb_hist *delay;          /* actual send - due (fixed-rate) */
    kb_hist *corrected;      /* delivery - due (fixed-rate) */
    int64_t sent, delivered, failed, dr_failed, bytes, queue_full, stats_count, undelivered;
    int64_t t0, lat_from, t_first_send, t_last_send, t_last_due, t_end;
    int64_t sampled;         /* messages sent with a kb header */
    int64_t wakes;           /* fixed-rate: times the loop woke up */
    kb_thread_cpu cpu_start, cpu_end; /* per-thread CPU window (cpu_start.ok = 0: not taken) */
    int64_t win_delivered0;  /* delivered when the CPU window opened (its messages: delivered - this) */
    int stopped;             /* 1 when stop was requested */
    kb_errcount dr_errors;   /* delivery errors by code */
    kb_errcount client_errors; /* error_cb events by code */
    kb_conn_err conn_err;       /* the last handshake failure error_cb saw (kafka_conf.h) */
    kb_intervals iv;         /* the time series (interval_ns > 0): sends, deliveries and the latency (corrected in
                                fixed-rate, else service) per interval; freed by the caller with kb_iv_free */
    /* private: the run's error (set by callbacks too), in-flight message slots (seq and send time), indexed by the message opaque */
    int64_t *slot_seq, *slot_sent;
    int32_t *slot_free;
    int32_t slot_cap, slot_nfree;
    int64_t dr_now; /* > 0: the time of the reports being served (one clock read per poll, saturated loop) */
    kb_error *run_err;
} kb_producer;

/**
 * Run the loop to completion (count/duration reached, or stop set), flush
 * (bounded by flush_timeout_s; what is left is purged and counted as
 * undelivered) and destroy the client.  0 on success, or < 0 with e set (error.h) when
 * the client could not be created, no broker answered within
 * connect_timeout_s, the topic does not exist, or a fatal error occurred.
 * Histograms must be allocated by the caller.
 */
int kb_producer_run(kb_producer *p, kb_error *e);

#endif
