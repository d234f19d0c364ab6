/*
 * secret.c - the secret-property rule and value scrubbing (see secret.h).
 */
#include "secret.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const kb_secret_names[] = {
    /* librdkafka: properties marked sensitive, and the OAuth/OIDC credentials */
    "sasl.username",
    "sasl.oauthbearer.config",
    "sasl.oauthbearer.assertion.private.key.pem",
    "ssl.key.pem",
    "ssl_key",
    "ssl.key.location",
    "ssl.ca.pem",
    /* the Java client: Type.PASSWORD properties */
    "sasl.jaas.config",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    /* locations of private credentials */
    "ssl.keystore.location",
    "sasl.kerberos.keytab",
    "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.file",
    /* Schema Registry clients (serializer configs given with the client's) */
    "basic.auth.user.info",
    "bearer.auth.token",
    NULL,
};

const char *const kb_secret_words[] = {"password", "passwd", "passphrase", "secret", NULL};

int kb_is_secret_property(const char *name) {
    if (!name)
        return 0;
    char low[256];
    size_t n = strlen(name);
    if (n >= sizeof(low))
        n = sizeof(low) - 1; /* longer names are compared on their first 255 bytes */
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = 0;
    for (int i = 0; kb_secret_words[i]; i++)
        if (strstr(low, kb_secret_words[i]))
            return 1;
    for (int i = 0; kb_secret_names[i]; i++) {
        size_t m = strlen(kb_secret_names[i]);
        if (n >= m && strcmp(low + n - m, kb_secret_names[i]) == 0 && (n == m || low[n - m - 1] == '.'))
            return 1;
    }
    return 0;
}

void kb_scrub_value(char *s, size_t cap, const char *value) {
    if (!s || !value || cap == 0)
        return;
    size_t vl = strlen(value);
    if (vl < KB_SECRET_MIN_SCRUB || !strstr(s, value))
        return;
    char *out = malloc(cap);
    if (!out) { /* no memory for a copy: blank the whole text rather than show the secret */
        snprintf(s, cap, "%s", KB_REDACTED);
        return;
    }
    size_t o = 0;
    const char *r = s;
    while (*r && o + 1 < cap) {
        if (strncmp(r, value, vl) == 0) {
            for (const char *rep = KB_REDACTED; *rep && o + 1 < cap; rep++)
                out[o++] = *rep;
            r += vl;
        } else {
            out[o++] = *r++;
        }
    }
    out[o] = 0;
    memcpy(s, out, o + 1);
    free(out);
}
