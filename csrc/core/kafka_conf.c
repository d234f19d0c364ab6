/*
 * kafka_conf.c - librdkafka configuration helpers.
 */
#define _POSIX_C_SOURCE 200809L
#include "kafka_conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "secret.h"

int kb_props_add(kb_props *p, const char *key, const char *val) {
    char **nk = realloc(p->keys, (p->n + 1) * sizeof(char *));
    if (!nk)
        return -1;
    p->keys = nk;
    char **nv = realloc(p->vals, (p->n + 1) * sizeof(char *));
    if (!nv)
        return -1;
    p->vals = nv;
    char *k = strdup(key), *v = strdup(val);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    p->keys[p->n] = k;
    p->vals[p->n] = v;
    p->n++;
    return 0;
}

const char *kb_props_get(const kb_props *p, const char *key) {
    const char *r = NULL;
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->keys[i], key) == 0)
            r = p->vals[i];
    return r;
}

void kb_props_free(kb_props *p) {
    for (size_t i = 0; i < p->n; i++) {
        free(p->keys[i]);
        free(p->vals[i]);
    }
    free(p->keys);
    free(p->vals);
    p->keys = p->vals = NULL;
    p->n = 0;
}

void kb_props_scrub(const kb_props *p, char *s, size_t cap) {
    for (size_t i = 0; i < p->n; i++)
        if (kb_is_secret_property(p->keys[i]))
            kb_scrub_value(s, cap, p->vals[i]);
}

rd_kafka_conf_t *kb_conf_new(const kb_props *p, kb_error *err) {
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!conf) {
        kb_error_set(err, KB_ENOMEM, -1, "out of memory creating librdkafka conf");
        return NULL;
    }
    /* quiet by default (librdkafka logs to stderr); the caller's properties may raise it */
    rd_kafka_conf_set(conf, "log_level", "2", NULL, 0);
    for (size_t i = 0; i < p->n; i++) {
        char e[KB_ERRLEN] = "";
        if (rd_kafka_conf_set(conf, p->keys[i], p->vals[i], e, sizeof(e)) != RD_KAFKA_CONF_OK) {
            kb_props_scrub(p, e, sizeof(e));
            kb_error_set(err, KB_EINVAL, -1, "%s", e);
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    }
    return conf;
}

rd_kafka_t *kb_client_new(rd_kafka_type_t type, rd_kafka_conf_t *conf, kb_error *err) {
    char e[KB_ERRLEN] = "";
    rd_kafka_t *rk = rd_kafka_new(type, conf, e, sizeof(e));
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        kb_error_set(err, KB_EKAFKA, -1, "%s", e);
    }
    return rk;
}

/** Whether text contains word, ASCII case-insensitively. */
static int has_word(const char *text, const char *word) {
    size_t n = strlen(word);
    for (const char *t = text; *t; t++)
        if (strncasecmp(t, word, n) == 0)
            return 1;
    return 0;
}

void kb_conn_err_note(kb_conn_err *c, int err, const char *reason) {
    const char *r = reason ? reason : "";
    const char *m = strstr(r, ": "); /* the message after the broker's name ("sasl_ssl://host:port/id: ") */
    m = m ? m + 2 : r;
    int handshake = err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL ||
                    (err == RD_KAFKA_RESP_ERR__TRANSPORT &&
                     (has_word(m, "SASL") || has_word(m, "SSL") || has_word(m, "handshake") ||
                      has_word(m, "authenticat")));
    if (!c || !handshake)
        return;
    c->code = err;
    snprintf(c->reason, sizeof(c->reason), "%s", r);
}

void kb_conn_err_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    (void)rk;
    kb_conn_err_note(opaque, err, reason);
}

/** One metadata request at most this long, so that handshake errors are looked at while waiting. */
#define KB_REACH_STEP_MS 1000

int kb_wait_reachable(rd_kafka_t *rk, const kb_props *p, int timeout_ms, const kb_conn_err *seen, kb_error *err) {
    const char *bootstrap = kb_props_get(p, "bootstrap.servers");
    const struct rd_kafka_metadata *md = NULL;
    int64_t deadline = kb_now_ns() + (int64_t)timeout_ms * 1000000;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__TIMED_OUT;
    for (;;) {
        int64_t left_ms = (deadline - kb_now_ns()) / 1000000;
        if (left_ms <= 0)
            break;
        e = rd_kafka_metadata(rk, 0, NULL, &md, (int)(left_ms < KB_REACH_STEP_MS ? left_ms : KB_REACH_STEP_MS));
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            int nb = md->broker_cnt;
            rd_kafka_metadata_destroy(md);
            if (nb > 0)
                return 0;
        } else if (e != RD_KAFKA_RESP_ERR__TRANSPORT && e != RD_KAFKA_RESP_ERR__TIMED_OUT) {
            break;
        }
        /* serve the error callbacks; a failed connect answers at once: pace the retries */
        rd_kafka_poll(rk, e == RD_KAFKA_RESP_ERR__TRANSPORT ? 100 : 0);
        if (seen && seen->code)
            break; /* a failed handshake does not heal by waiting */
    }
    rd_kafka_poll(rk, 0);
    if (seen && seen->code) {
        char why[KB_ERRLEN];
        snprintf(why, sizeof(why), "%s", seen->reason);
        kb_props_scrub(p, why, sizeof(why));
        int ssl = seen->code == RD_KAFKA_RESP_ERR__SSL || (has_word(why, "SSL") && !has_word(why, "SASL"));
        return kb_error_set(err, KB_EKAFKA, -1,
                            "connected to '%s' but the %s failed (librdkafka: %.300s); check %s",
                            bootstrap ? bootstrap : "?", ssl ? "SSL handshake" : "SASL handshake/authentication", why,
                            ssl ? "security.protocol and the ssl.* properties"
                                : "security.protocol, sasl.mechanism and the credentials");
    }
    return kb_error_set(err, KB_EKAFKA, -1,
                        "no Kafka broker reachable at '%s' within %.1f s (%s); check that the cluster is up "
                        "(kbench cluster status) and bootstrap.servers is right",
                        bootstrap ? bootstrap : "?", timeout_ms / 1000.0, rd_kafka_err2str(e));
}

int kb_client_level_range(const char *codec, int *lo, int *hi, kb_error *err) {
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!conf) {
        return kb_error_set(err, KB_ENOMEM, -1, "out of memory");
    }
    int rc = KB_EINVAL;
    char e[KB_ERRLEN] = "";
    if (rd_kafka_conf_set(conf, "compression.codec", codec, e, sizeof(e)) != RD_KAFKA_CONF_OK) {
        kb_error_set(err, KB_EINVAL, -1, "%s", e);
    } else {
        *lo = 1;
        *hi = 0;
        char v[16];
        for (int level = -100; level <= 100; level++) {
            snprintf(v, sizeof(v), "%d", level);
            if (rd_kafka_conf_set(conf, "compression.level", v, NULL, 0) != RD_KAFKA_CONF_OK)
                continue;
            if (*lo > *hi)
                *lo = level;
            *hi = level;
        }
        rc = *lo <= *hi ? KB_OK : KB_EINVAL;
        if (rc < 0)
            kb_error_set(err, KB_EINVAL, -1, "librdkafka accepts no compression.level for codec %s", codec);
    }
    rd_kafka_conf_destroy(conf);
    return rc;
}

int kb_client_property_known(const char *name) {
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!conf)
        return -1;
    char e[KB_ERRLEN] = "";
    /* an empty value: a known name is refused as INVALID (or taken), never as UNKNOWN */
    rd_kafka_conf_res_t r = rd_kafka_conf_set(conf, name, "", e, sizeof(e));
    rd_kafka_conf_destroy(conf);
    return r != RD_KAFKA_CONF_UNKNOWN;
}

char *kb_client_properties_table(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    rd_kafka_conf_properties_show(f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
