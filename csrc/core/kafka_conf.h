/*
 * kafka_conf.h - librdkafka configuration from key/value pairs, passed
 * verbatim, with librdkafka's own error messages and secrets redacted.
 */
#ifndef KBENCH_KAFKA_CONF_H
#define KBENCH_KAFKA_CONF_H

#include <stddef.h>

#include <librdkafka/rdkafka.h>

#include "error.h"

/** An owned list of librdkafka properties (NUL-terminated strings). */
typedef struct {
    char **keys;
    char **vals;
    size_t n;
} kb_props;

/** Append a copy of key=val; 0 or -1 on out of memory. */
int kb_props_add(kb_props *p, const char *key, const char *val);

/** Value of key, or NULL when absent. */
const char *kb_props_get(const kb_props *p, const char *key);

/** Free every string and reset to empty. */
void kb_props_free(kb_props *p);

/**
 * Replace in s (buffer of cap bytes) every value of p whose property is secret
 * (kb_is_secret_property(), secret.h) and long enough to scrub.
 */
void kb_props_scrub(const kb_props *p, char *s, size_t cap);

/**
 * A new rd_kafka_conf_t holding every property of p, applied in order.  On
 * failure returns NULL with librdkafka's message in err (secret values
 * scrubbed by kb_props_scrub()).
 */
rd_kafka_conf_t *kb_conf_new(const kb_props *p, kb_error *err);

/**
 * Create a client of the given type from p (NULL on failure, message in err).
 * The conf is consumed on success and destroyed on failure.
 */
rd_kafka_t *kb_client_new(rd_kafka_type_t type, rd_kafka_conf_t *conf, kb_error *err);

/**
 * The last error librdkafka reported (error_cb) that is an authentication or
 * SSL/SASL handshake failure: a broker answered, but the security handshake
 * failed.  Filled by kb_conn_err_note() from a client's error callback; read by
 * kb_wait_reachable() in the same (polling) thread.
 */
typedef struct {
    int code; /* a librdkafka error code; 0: none seen */
    char reason[KB_ERRLEN];
} kb_conn_err;

/**
 * Keep err and reason in c when they name an authentication or handshake
 * failure (RD_KAFKA_RESP_ERR__AUTHENTICATION, __SSL, or __TRANSPORT whose
 * reason names SASL, SSL, handshake or authentication); other errors are ignored.
 */
void kb_conn_err_note(kb_conn_err *c, int err, const char *reason);

/** An error_cb whose opaque is a kb_conn_err (clients with no other use for errors). */
void kb_conn_err_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque);

/**
 * Block until a broker answers a metadata request or timeout_ms passes;
 * 0 on success, else KB_EKAFKA with a one-line message naming the bootstrap
 * servers of p: that no broker is reachable, or, when seen (may be NULL) holds
 * an authentication or handshake failure, that the brokers answered but the
 * handshake failed, with librdkafka's reason (secret values of p scrubbed).
 * Serves the client's callbacks (rd_kafka_poll) while it waits.
 */
int kb_wait_reachable(rd_kafka_t *rk, const kb_props *p, int timeout_ms, const kb_conn_err *seen, kb_error *err);

/**
 * The compression.level values the linked librdkafka accepts with
 * compression.codec = codec, asked of librdkafka itself (rd_kafka_conf_set on
 * a throw-away conf, levels -100..100): 0 with [*lo, *hi], or KB_EINVAL with
 * librdkafka's message in err when it refuses the codec or every level.
 */
int kb_client_level_range(const char *codec, int *lo, int *hi, kb_error *err);

/**
 * Whether the linked librdkafka knows the property name (global or topic
 * level): 1 or 0, asked of librdkafka (rd_kafka_conf_set of an empty value on a
 * throw-away conf: only an unknown name answers RD_KAFKA_CONF_UNKNOWN); -1 on
 * out of memory.
 */
int kb_client_property_known(const char *name);

/**
 * librdkafka's table of every property it knows (rd_kafka_conf_properties_show,
 * CONFIGURATION.md's form) as a malloc'd string the caller frees; NULL on out
 * of memory.
 */
char *kb_client_properties_table(void);

#endif
