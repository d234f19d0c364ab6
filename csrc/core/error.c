/*
 * error.c - kb_error (see error.h).
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

int kb_error_set(kb_error *e, int code, int64_t offset, const char *fmt, ...) {
    if (!e)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    e->code = code;
    e->offset = offset;
    return code;
}

void kb_error_clear(kb_error *e) {
    if (!e)
        return;
    e->code = KB_OK;
    e->msg[0] = 0;
    e->offset = -1;
}

const char *kb_strerror(int code) {
    switch (code) {
    case KB_OK:
        return "success";
    case KB_ERR:
        return "malformed input or library failure";
    case KB_ETOOSMALL:
        return "output buffer too small";
    case KB_ENOMEM:
        return "out of memory";
    case KB_EINVAL:
        return "invalid argument";
    case KB_EIO:
        return "system call failed";
    case KB_EKAFKA:
        return "Kafka client error";
    }
    return "unknown error code";
}
