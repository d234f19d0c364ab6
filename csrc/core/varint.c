/*
 * varint.c - out-of-line entry points of varint.h (the inline forms do the work).
 */
#include "varint.h"

size_t kb_varlong_encode(uint8_t *p, int64_t v) { return kb_varlong_put(p, v); }
