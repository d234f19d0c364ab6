/*
 * secret.h - the one rule deciding which client properties hold secrets, used
 * by the librdkafka config path (kafka_conf.c) and, through kbench._native,
 * by every Python module that writes, logs or prints a property.
 *
 * A property is secret when its name (case-insensitive)
 *   - contains "password", "passwd", "passphrase" or "secret", or
 *   - is, or ends with "." followed by, one of kb_secret_names: every property
 *     librdkafka marks sensitive or the Java client types PASSWORD, and the
 *     locations of private credentials (private keys, keystores, keytabs,
 *     OAuth assertions), e.g. "sasl.username", "ssl.key.pem", or with a
 *     prefix such as "producer.override.sasl.jaas.config".
 * Public material (certificates, CA and truststore locations) is not secret.
 *
 * A secret's value is replaced by KB_REDACTED wherever it is shown; inside
 * free text (error messages, command lines) it is replaced only when the
 * whole value appears and is at least KB_SECRET_MIN_SCRUB bytes long, so a
 * short secret ("json") cannot blank every matching word of a text; shorter
 * values are redacted as values of their keys and of URLs only.
 */
#ifndef KBENCH_SECRET_H
#define KBENCH_SECRET_H

#include <stddef.h>

#define KB_REDACTED "<redacted>"
#define KB_SECRET_MIN_SCRUB 8

/** Exact property names that are secret (NULL-terminated); see the rule above. */
extern const char *const kb_secret_names[];

/** Words that make any property name containing them secret (NULL-terminated). */
extern const char *const kb_secret_words[];

/** 1 when the value of property name must never be shown, else 0 (NULL is not secret). */
int kb_is_secret_property(const char *name);

/**
 * Replace every occurrence of value in s (NUL-terminated, buffer of cap bytes) with
 * KB_REDACTED, truncating at cap; values shorter than KB_SECRET_MIN_SCRUB are left alone.
 */
void kb_scrub_value(char *s, size_t cap, const char *value);

#endif
