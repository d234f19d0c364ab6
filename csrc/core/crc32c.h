/*
 * crc32c.h - CRC-32C (Castagnoli): reflected polynomial 0x82F63B78, init and
 * final XOR 0xFFFFFFFF, as Kafka's RecordBatch v2 uses it.
 *
 * Implementations: "table" (slicing-by-8, portable), "sse4.2" (x86-64 crc32
 * instruction) and "armv8" (aarch64 CRC extension).  kb_crc32c() uses the best
 * one the CPU has, chosen once at run time; kb_crc32c_impl() returns a named
 * one so tests can check every path.  Pure C, no Python.
 */
#ifndef KBENCH_CRC32C_H
#define KBENCH_CRC32C_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t (*kb_crc32c_fn)(uint32_t crc, const void *buf, size_t n);

/** CRC-32C of buf[0..n), continuing from crc (0 to start). */
uint32_t kb_crc32c(uint32_t crc, const void *buf, size_t n);

/** The implementation named name ("table", "sse4.2", "armv8"), or NULL if this
 *  build or CPU lacks it. */
kb_crc32c_fn kb_crc32c_impl(const char *name);

/** Name of the implementation kb_crc32c() uses. */
const char *kb_crc32c_active(void);

/** Names of all implementations, NULL-terminated (available or not). */
extern const char *const kb_crc32c_names[];

#endif
