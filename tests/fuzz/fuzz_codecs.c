/*
 * fuzz_codecs.c - libFuzzer harness for the codec decoders (gzip, snappy in
 * both framings, lz4 frame, zstd frame).
 *
 * The first input byte picks the codec (modulo the codec count) and the
 * output cap (bits 4..7: 2^(8 + nibble) bytes, at most 1 MiB, Kafka's default max batch); the rest is the
 * compressed stream.  The decoder must either fail with a message, report
 * "too small", or succeed with outlen <= cap.  A successful decode is
 * compressed again and must round-trip to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codecs.h"

static kb_codec_ctx *ctx;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    if (!ctx)
        ctx = kb_codec_ctx_new();
    kb_codec_t codec = (kb_codec_t)(data[0] % KB_CODEC_COUNT);
    size_t cap = (size_t)1 << (8 + ((data[0] >> 4) & 0x0f) % 13);
    if (cap > ((size_t)1 << 20))
        cap = (size_t)1 << 20;
    const uint8_t *src = data + 1;
    size_t n = size - 1;
    (void)kb_decompress_hint(codec, src, n);
    uint8_t *dst = malloc(cap);
    if (!dst)
        return 0;
    size_t outlen = 0;
    kb_error err = KB_ERROR_INIT;
    int rc = kb_decompress(ctx, codec, src, n, dst, cap, &outlen, &err);
    if (rc != KB_OK && (err.code != rc || err.msg[0] == '\0'))
        abort(); /* every failure carries its code and a message (error.h) */
    if (rc == KB_OK) {
        if (outlen > cap)
            abort();
        int level;
        if (kb_codec_level(codec, KB_LEVEL_DEFAULT, &level, &err) != KB_OK)
            abort();
        size_t bound = kb_compress_bound(codec, outlen);
        uint8_t *z = malloc(bound ? bound : 1);
        uint8_t *back = malloc(outlen ? outlen : 1);
        size_t zlen = 0, blen = 0;
        if (z && back) {
            if (kb_compress(ctx, codec, level, dst, outlen, z, bound, &zlen, &err) != KB_OK)
                abort();
            if (kb_decompress(ctx, codec, z, zlen, back, outlen ? outlen : 1, &blen, &err) != KB_OK)
                abort();
            if (blen != outlen || memcmp(back, dst, outlen) != 0)
                abort();
        }
        free(z);
        free(back);
    }
    free(dst);
    return 0;
}
