/*
 * byteorder.h - the one set of fixed-width byte-order helpers of csrc/core:
 * big-endian (Kafka's wire format, the kb record header, xerial snappy) and
 * little-endian (LZ4 frames, gzip trailers).  Pure C, no alignment assumed.
 */
#ifndef KBENCH_BYTEORDER_H
#define KBENCH_BYTEORDER_H

#include <stdint.h>

/** Write v big-endian at p (2, 4, 8 bytes). */
static inline void kb_be16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void kb_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void kb_be64(uint8_t *p, uint64_t v) {
    kb_be32(p, (uint32_t)(v >> 32));
    kb_be32(p + 4, (uint32_t)v);
}

/** Read a big-endian value at p (2, 4, 8 bytes). */
static inline uint16_t kb_rd16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t kb_rd32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t kb_rd64(const uint8_t *p) { return ((uint64_t)kb_rd32(p) << 32) | kb_rd32(p + 4); }

/** Write / read a little-endian 32-bit value at p. */
static inline void kb_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t kb_rdle32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

#endif
