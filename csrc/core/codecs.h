/*
 * codecs.h - Kafka-exact compression codecs (none, gzip, snappy, lz4, zstd).
 *
 * Pure C, no Python: the extension wraps it (py_codecs.c), the batch encoder
 * and the simulated transport call it directly, and the C tests run it under
 * AddressSanitizer.
 *
 * Framing is what the Java producer writes (Kafka 4.1):
 *   gzip   one member, JDK >= 16 header 1f 8b 08 00 00000000 00 ff, raw deflate,
 *          CRC32 + ISIZE trailer.
 *   snappy xerial snappy-java stream: magic 82 'SNAPPY' 00, version 1,
 *          compatible 1, then [BE int32 length][raw snappy block] per 32 KiB
 *          of input.  The reader also accepts one raw snappy block (librdkafka).
 *   lz4    LZ4 frame, FLG 0x60 (independent blocks, no checksums), BD 0x40
 *          (64 KiB blocks), HC 0x82, incompressible blocks stored raw, end mark.
 *   zstd   one frame, no checksum, no content size, parameters chosen for an
 *          unknown source size (as zstd-jni's stream and librdkafka do).
 *
 * Every function that can fail follows error.h: KB_OK (0), or a negative
 * KB_E* code with err filled (the library's own message where it has one).
 */
#ifndef KBENCH_CODECS_H
#define KBENCH_CODECS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum {
    KB_CODEC_NONE = 0,
    KB_CODEC_GZIP = 1,
    KB_CODEC_SNAPPY = 2,
    KB_CODEC_LZ4 = 3,
    KB_CODEC_ZSTD = 4
} kb_codec_t;

#define KB_CODEC_COUNT 5
/* Level value meaning "the codec's Kafka default". */
#define KB_LEVEL_DEFAULT INT32_MIN

/** Reusable per-thread codec contexts (zstd, lz4, zlib). Not thread-safe. */
typedef struct kb_codec_ctx kb_codec_ctx;

/** Allocate a context set; NULL on out of memory. */
kb_codec_ctx *kb_codec_ctx_new(void);
/** Free a context set (NULL is fine). */
void kb_codec_ctx_free(kb_codec_ctx *ctx);

/** Parse a codec name ("none", "gzip", "snappy", "lz4", "zstd"); 0 or KB_ERR. */
int kb_codec_parse(const char *name, kb_codec_t *out);
/** Name of a codec id, or NULL for an unknown id. */
const char *kb_codec_name(int codec);

/**
 * Validate a level against Kafka's ranges (KIP-390) and resolve the default.
 * gzip 1..9 (default 6), lz4 1..17 (default 9 = fast compressor, any other =
 * LZ4HC), zstd ZSTD_minCLevel()..22 except 0 (default 3); none and snappy take
 * no level.  Writes the effective level to *out.
 */
int kb_codec_level(kb_codec_t codec, int level, int *out, kb_error *err);

/** Upper bound of the compressed size of n input bytes (framing included). */
size_t kb_compress_bound(kb_codec_t codec, size_t n);

/**
 * Compress src[0..n) into dst[0..cap); cap must be >= kb_compress_bound().
 * level must be an effective level from kb_codec_level().
 */
int kb_compress(kb_codec_ctx *ctx, kb_codec_t codec, int level,
                const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                size_t *outlen, kb_error *err);

/**
 * Decompress src[0..n) into dst[0..cap).  Returns KB_ETOOSMALL when the
 * output would exceed cap (dst then holds garbage), KB_ERR for malformed or
 * truncated input.  Never reads or writes out of bounds.
 */
int kb_decompress(kb_codec_ctx *ctx, kb_codec_t codec,
                  const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                  size_t *outlen, kb_error *err);

/**
 * A hint for the decompressed size, read from the frame where it says so
 * (zstd content size, snappy lengths, gzip ISIZE, lz4 content size);
 * 0 when unknown.  Untrusted: callers cap it.
 */
size_t kb_decompress_hint(kb_codec_t codec, const uint8_t *src, size_t n);

/** Version string of the library behind a codec ("1.5.4"), static storage. */
const char *kb_codec_lib_version(kb_codec_t codec);

/**
 * The zstd compression parameters kb_compress uses at a level (those of a
 * stream with unknown size): windowLog, chainLog, hashLog, searchLog,
 * minMatch, targetLength, strategy.  Lets benchmarks give another zstd the
 * same parameters.
 */
int kb_zstd_cparams(int level, int out[7]);

#endif
