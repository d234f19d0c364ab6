/*
 * admin.h - cluster metadata and topic administration (create, describe
 * configs, delete) over librdkafka's Admin API.
 *
 * Every call makes its own short-lived producer handle, waits (bounded) for a
 * broker to answer and does one operation; errors are librdkafka's messages
 * in err.  No call touches Python: callers may release the GIL around them.
 */
#ifndef KBENCH_ADMIN_H
#define KBENCH_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "kafka_conf.h"

/** What a metadata or describe call leaves for the caller to read; free with kb_admin_result_free(). */
typedef struct {
    rd_kafka_t *rk;
    const struct rd_kafka_metadata *md;     /* kb_admin_metadata() */
    int32_t controller_id;                  /* kb_admin_metadata() */
    rd_kafka_queue_t *q;
    rd_kafka_AdminOptions_t *o;
    rd_kafka_event_t *ev;
    rd_kafka_ConfigResource_t *cr;
    const rd_kafka_ConfigEntry_t **entries; /* kb_admin_describe_configs(): owned by ev */
    size_t nentries;
} kb_admin_result;

/** Cluster metadata of every topic into r->md and r->controller_id; 0, or -1 with err set. */
int kb_admin_metadata(const kb_props *p, int timeout_ms, kb_admin_result *r, kb_error *err);

/**
 * Create topic name with the given topic configs and wait until every partition has a leader;
 * 0, or -1 with the broker's message in err.
 */
int kb_admin_create_topic(const kb_props *p, const char *name, int partitions, int replication_factor,
                          const kb_props *configs, int timeout_ms, kb_error *err);

/** Delete topic name and wait until the metadata no longer lists it; 0, or -1 with err set. */
int kb_admin_delete_topic(const kb_props *p, const char *name, int timeout_ms, kb_error *err);

/** Every config entry of topic name into r->entries / r->nentries; 0, or -1 with err set. */
int kb_admin_describe_configs(const kb_props *p, const char *name, int timeout_ms, kb_admin_result *r, kb_error *err);

/** Destroy everything r holds (safe on a zeroed or partly filled r). */
void kb_admin_result_free(kb_admin_result *r);

#endif
