/*
 * errcount.c - count librdkafka error codes in a fixed table.
 */
#include "errcount.h"

void kb_errcount_add(kb_errcount *e, int code) {
    for (int i = 0; i < e->n; i++)
        if (e->code[i] == code) {
            e->count[i]++;
            return;
        }
    if (e->n < KB_MAX_ERR_CODES) {
        e->code[e->n] = code;
        e->count[e->n++] = 1;
    } else {
        e->other++;
    }
}
