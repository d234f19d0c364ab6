/*
 * wire.h - what kbench puts on the wire, shared by the producer (writes it)
 * and the consumer (reads it): one record header, "kb", of 24 bytes holding
 * three big-endian 64-bit values.
 */
#ifndef KBENCH_WIRE_H
#define KBENCH_WIRE_H

#include <stdint.h>

#define KB_HDR_NAME "kb"
#define KB_HDR_NAME_LEN 2
#define KB_HDR_LEN 24
#define KB_HDR_TIME_OFF 0 /* CLOCK_MONOTONIC ns at produce() */
#define KB_HDR_SEQ_OFF 8  /* sequence number, 0-based */
#define KB_HDR_RUN_OFF 16 /* run id */

/** Read a big-endian 64-bit value. */
static inline int64_t kb_get_be64(const void *p) {
    const uint8_t *b = p;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | b[i];
    return (int64_t)v;
}

/** Write v as a big-endian 64-bit value. */
static inline void kb_put_be64(uint8_t *b, uint64_t v) {
    for (int i = 7; i >= 0; i--) {
        b[i] = (uint8_t)v;
        v >>= 8;
    }
}

#endif
