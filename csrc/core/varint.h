/*
 * varint.h - Kafka's zigzag varints (ByteUtils.writeVarint/readVarint and the
 * varlong forms): zigzag, then unsigned LEB128, at most 5 / 10 bytes.
 * Pure C, no Python.  Readers are bounds-checked.
 */
#ifndef KBENCH_VARINT_H
#define KBENCH_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define KB_VARINT_MAX 5
#define KB_VARLONG_MAX 10

/** Bytes needed for v as a zigzag varlong (1..10). */
static inline size_t kb_varlong_size(int64_t v) {
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

/** Bytes needed for v as a zigzag varint (1..5). */
static inline size_t kb_varint_size(int32_t v) { return kb_varlong_size(v); }

/** Write v as a zigzag varlong at p (room for 10 bytes); returns bytes written. */
static inline size_t kb_varlong_put(uint8_t *p, int64_t v) {
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 0;
    while (u >= 0x80) {
        p[n++] = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    p[n++] = (uint8_t)u;
    return n;
}

/** Write v as a zigzag varint at p (room for 5 bytes); returns bytes written. */
static inline size_t kb_varint_put(uint8_t *p, int32_t v) { return kb_varlong_put(p, v); }

/**
 * Read a zigzag varint of at most maxbytes (5 or 10) from p[*pos..n).
 * Returns 0 and advances *pos, -1 when the input ends first, -2 when the
 * varint is longer than maxbytes.
 */
static inline int kb_zigzag_get(const uint8_t *p, size_t n, size_t *pos, int maxbytes, int64_t *out) {
    uint64_t u = 0;
    size_t i = *pos;
    for (int k = 0; k < maxbytes; k++) {
        if (i >= n)
            return -1;
        uint8_t b = p[i++];
        u |= (uint64_t)(b & 0x7f) << (7 * k);
        if (!(b & 0x80)) {
            *pos = i;
            *out = (int64_t)((u >> 1) ^ (0 - (u & 1)));
            return 0;
        }
    }
    return -2;
}

/** Read a zigzag varint (int32, Java semantics: bits beyond 32 dropped). */
static inline int kb_varint_get(const uint8_t *p, size_t n, size_t *pos, int32_t *out) {
    int64_t v;
    size_t save = *pos;
    int rc = kb_zigzag_get(p, n, pos, KB_VARINT_MAX, &v);
    if (rc == 0) {
        /* re-derive from the low 32 bits of the unsigned value, as Java does */
        uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
        uint32_t u32 = (uint32_t)u;
        *out = (int32_t)((u32 >> 1) ^ (0u - (u32 & 1u)));
    } else {
        *pos = save;
    }
    return rc;
}

/** Read a zigzag varlong. */
static inline int kb_varlong_get(const uint8_t *p, size_t n, size_t *pos, int64_t *out) {
    return kb_zigzag_get(p, n, pos, KB_VARLONG_MAX, out);
}

/* Two's-complement wrapping arithmetic, as Java's long does: never undefined behaviour on
 * hostile input (offsets and timestamps come straight from the bytes). */
static inline int64_t kb_add_wrap(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t kb_sub_wrap(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }

/** Encode v into p (10 bytes room) and return its length; for the C tests. */
size_t kb_varlong_encode(uint8_t *p, int64_t v);

#endif
