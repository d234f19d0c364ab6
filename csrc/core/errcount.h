/*
 * errcount.h - librdkafka error codes counted by code (delivery reports,
 * error callbacks, consumer errors).
 */
#ifndef KBENCH_ERRCOUNT_H
#define KBENCH_ERRCOUNT_H

#include <stdint.h>

#define KB_MAX_ERR_CODES 32

/** Error code -> count (librdkafka error codes). */
typedef struct {
    int n;
    int code[KB_MAX_ERR_CODES];
    int64_t count[KB_MAX_ERR_CODES];
    int64_t other; /* codes beyond the table */
} kb_errcount;

/** Count one occurrence of code in e. */
void kb_errcount_add(kb_errcount *e, int code);

#endif
