/*
 * codecs.c - Kafka-exact codecs over the system libzstd, liblz4, snappy, zlib.
 * See codecs.h for the framing rules.
 */
#include "codecs.h"

#include "byteorder.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getCParams */
#include <zstd.h>
#include <zstd_errors.h>

#ifndef KB_SNAPPY_VERSION
#define KB_SNAPPY_VERSION "unknown"
#endif

struct kb_codec_ctx {
    ZSTD_CCtx *zc;
    ZSTD_DCtx *zd;
    LZ4F_cctx *lc;
    void *lz4_state;      /* LZ4_compress_fast_extState state, reused */
    uint8_t *lz4_scratch; /* 4 MiB, only to tell "corrupt" from "out of room" */
    int zc_level; /* level the zstd cctx is set up for, INT_MIN if none */
};

static const char *const codec_names[KB_CODEC_COUNT] = {"none", "gzip", "snappy", "lz4", "zstd"};

/* xerial snappy-java stream header and block size (snappy-java 1.1.10.7). */
static const uint8_t XERIAL_MAGIC[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
#define XERIAL_HEADER_LEN 16
#define XERIAL_BLOCK 32768

/* gzip header exactly as java.util.zip.GZIPOutputStream writes it on JDK >= 16. */
static const uint8_t GZIP_HEADER[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};

#define LZ4_BLOCK 65536
/* The Kafka LZ4 frame header for FLG 0x60, BD 0x40: its checksum byte is 0x82. */
static const uint8_t LZ4_KAFKA_HEADER[7] = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82};

/** Fill err (when not NULL) with code and a message; returns code. */
static int failc(kb_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failc(kb_error *err, int code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->code = code;
        err->offset = -1;
    }
    return code;
}
#define fail(err, ...) failc(err, KB_ERR, __VA_ARGS__)

kb_codec_ctx *kb_codec_ctx_new(void) {
    kb_codec_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->zc_level = INT_MIN;
    return c;
}

void kb_codec_ctx_free(kb_codec_ctx *c) {
    if (!c)
        return;
    ZSTD_freeCCtx(c->zc);
    ZSTD_freeDCtx(c->zd);
    if (c->lc)
        LZ4F_freeCompressionContext(c->lc);
    free(c->lz4_scratch);
    free(c->lz4_state);
    free(c);
}

int kb_codec_parse(const char *name, kb_codec_t *out) {
    for (int i = 0; i < KB_CODEC_COUNT; i++) {
        if (strcmp(name, codec_names[i]) == 0) {
            *out = (kb_codec_t)i;
            return KB_OK;
        }
    }
    return KB_ERR;
}

const char *kb_codec_name(int codec) {
    if (codec < 0 || codec >= KB_CODEC_COUNT)
        return NULL;
    return codec_names[codec];
}

int kb_codec_level(kb_codec_t codec, int level, int *out, kb_error *err) {
    int def = level == KB_LEVEL_DEFAULT;
    switch (codec) {
    case KB_CODEC_NONE:
    case KB_CODEC_SNAPPY:
        if (!def)
            return failc(err, KB_EINVAL, "%s takes no level; drop the ':%d'", codec_names[codec], level);
        *out = 0;
        return KB_OK;
    case KB_CODEC_GZIP:
        if (def || level == -1)
            level = 6;
        if (level < 1 || level > 9)
            return failc(err, KB_EINVAL, "gzip level %d out of range; use 1..9", level);
        *out = level;
        return KB_OK;
    case KB_CODEC_LZ4:
        if (def)
            level = 9;
        if (level < 1 || level > 17)
            return failc(err, KB_EINVAL, "lz4 level %d out of range; use 1..17 (9 = fast, others LZ4HC)", level);
        *out = level;
        return KB_OK;
    case KB_CODEC_ZSTD:
        if (def)
            level = 3;
        if (level < ZSTD_minCLevel() || level > 22 || level == 0)
            return failc(err, KB_EINVAL, "zstd level %d out of range; use %d..-1 or 1..22", level,
                        ZSTD_minCLevel());
        *out = level;
        return KB_OK;
    }
    return failc(err, KB_EINVAL, "unknown codec id %d", (int)codec);
}

static LZ4F_preferences_t lz4_prefs(int level) {
    LZ4F_preferences_t p;
    memset(&p, 0, sizeof(p));
    p.frameInfo.blockSizeID = LZ4F_max64KB;
    p.frameInfo.blockMode = LZ4F_blockIndependent;
    p.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
    p.frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
    p.autoFlush = 1; /* compress the last partial block straight from the input */
    /* Only the LZ4HC levels come here: level 9 (fast) is written by lz4_compress itself. */
    p.compressionLevel = level;
    return p;
}

size_t kb_compress_bound(kb_codec_t codec, size_t n) {
    switch (codec) {
    case KB_CODEC_NONE:
        return n;
    case KB_CODEC_GZIP:
        /* deflateBound for raw deflate at worst: stored blocks, 5 bytes per 16 KiB. */
        return n + (n >> 12) + (n >> 14) + (n >> 25) + 13 + 6 + 18 + 64;
    case KB_CODEC_SNAPPY: {
        size_t blocks = n / XERIAL_BLOCK + 1;
        return XERIAL_HEADER_LEN + blocks * (4 + snappy_max_compressed_length(XERIAL_BLOCK));
    }
    case KB_CODEC_LZ4: {
        /* Room for LZ4_compressBound per 64 KiB block, so level 9 can use liblz4's fast path. */
        LZ4F_preferences_t p = lz4_prefs(0); /* the frame API's bound does not depend on the level */
        size_t blocks = n / LZ4_BLOCK + 1;
        size_t fast = sizeof(LZ4_KAFKA_HEADER) + blocks * 4 + (size_t)LZ4_compressBound(LZ4_BLOCK) * (blocks - 1) +
                      (size_t)LZ4_compressBound((int)(n % LZ4_BLOCK)) + 4;
        size_t frame = LZ4F_HEADER_SIZE_MAX + LZ4F_compressBound(n, &p);
        return fast > frame ? fast : frame;
    }
    case KB_CODEC_ZSTD:
        return ZSTD_compressBound(n);
    }
    return 0;
}

/* ---------------------------------------------------------------- gzip -- */

static int gzip_compress(int level, const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                         size_t *outlen, kb_error *err) {
    const size_t step = (size_t)1 << 30; /* zlib counts in uInt */
    z_stream s;
    memset(&s, 0, sizeof(s));
    if (cap < sizeof(GZIP_HEADER) + 8)
        return KB_ETOOSMALL;
    int rc = deflateInit2(&s, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK)
        return fail(err, "zlib deflateInit2: %s", s.msg ? s.msg : zError(rc));
    memcpy(dst, GZIP_HEADER, sizeof(GZIP_HEADER));
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < n; off += step)
        crc = crc32(crc, src + off, (uInt)(n - off < step ? n - off : step));
    size_t in_off = 0, out_off = sizeof(GZIP_HEADER), out_end = cap - 8;
    for (;;) {
        size_t ain = n - in_off < step ? n - in_off : step;
        size_t aout = out_end - out_off < step ? out_end - out_off : step;
        s.next_in = (Bytef *)(uintptr_t)(src + in_off);
        s.avail_in = (uInt)ain;
        s.next_out = dst + out_off;
        s.avail_out = (uInt)aout;
        int flush = in_off + ain == n ? Z_FINISH : Z_NO_FLUSH;
        rc = deflate(&s, flush);
        in_off += ain - s.avail_in;
        out_off += aout - s.avail_out;
        if (rc == Z_STREAM_END)
            break;
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            deflateEnd(&s);
            return fail(err, "zlib deflate: %s", s.msg ? s.msg : zError(rc));
        }
        if (out_off == out_end) {
            deflateEnd(&s);
            return KB_ETOOSMALL;
        }
    }
    deflateEnd(&s);
    kb_le32(dst + out_off, (uint32_t)crc);
    kb_le32(dst + out_off + 4, (uint32_t)(n & 0xffffffffu));
    *outlen = out_off + 8;
    return KB_OK;
}

static int gzip_decompress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, size_t *outlen,
                           kb_error *err) {
    z_stream s;
    memset(&s, 0, sizeof(s));
    int rc = inflateInit2(&s, 15 + 16); /* gzip framing only, like Java */
    if (rc != Z_OK)
        return fail(err, "zlib inflateInit2: %s", s.msg ? s.msg : zError(rc));
    size_t in_off = 0, out_off = 0;
    int members = 0;
    int ret = KB_OK;
    for (;;) {
        size_t ain = n - in_off > (1u << 30) ? (1u << 30) : n - in_off;
        size_t aout = cap - out_off > (1u << 30) ? (1u << 30) : cap - out_off;
        s.next_in = (Bytef *)(uintptr_t)(src + in_off);
        s.avail_in = (uInt)ain;
        s.next_out = dst + out_off;
        s.avail_out = (uInt)aout;
        rc = inflate(&s, Z_NO_FLUSH);
        in_off += ain - s.avail_in;
        out_off += aout - s.avail_out;
        if (rc == Z_STREAM_END) {
            members++;
            /* Java's GZIPInputStream reads concatenated members. */
            if (in_off == n)
                break;
            if (n - in_off >= 2 && src[in_off] == 0x1f && src[in_off + 1] == 0x8b) {
                inflateReset(&s);
                continue;
            }
            ret = fail(err, "gzip: %zu trailing bytes after member %d", n - in_off, members);
            break;
        }
        if (rc == Z_OK)
            continue;
        if (rc == Z_BUF_ERROR) {
            if (out_off == cap) {
                ret = KB_ETOOSMALL;
            } else if (in_off == n) {
                ret = fail(err, "gzip: truncated input (stream ended after %zu bytes)", n);
            } else {
                continue;
            }
            break;
        }
        ret = fail(err, "zlib inflate: %s", s.msg ? s.msg : zError(rc));
        break;
    }
    if (ret == KB_OK && members == 0)
        ret = fail(err, "gzip: empty input");
    inflateEnd(&s);
    *outlen = out_off;
    return ret;
}

/* -------------------------------------------------------------- snappy -- */

static int snappy_status_fail(snappy_status st, kb_error *err, const char *what) {
    if (st == SNAPPY_BUFFER_TOO_SMALL)
        return KB_ETOOSMALL;
    return fail(err, "snappy %s: %s", what,
                st == SNAPPY_INVALID_INPUT ? "invalid input (SNAPPY_INVALID_INPUT)" : "error");
}

static int snappy_compress_xerial(const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                                  size_t *outlen, kb_error *err) {
    if (cap < XERIAL_HEADER_LEN)
        return KB_ETOOSMALL;
    memcpy(dst, XERIAL_MAGIC, 8);
    kb_be32(dst + 8, 1);
    kb_be32(dst + 12, 1);
    size_t o = XERIAL_HEADER_LEN;
    for (size_t off = 0; off < n; off += XERIAL_BLOCK) {
        size_t len = n - off < XERIAL_BLOCK ? n - off : XERIAL_BLOCK;
        if (cap - o < 4 + snappy_max_compressed_length(len))
            return KB_ETOOSMALL;
        size_t clen = cap - o - 4;
        snappy_status st = snappy_compress((const char *)src + off, len, (char *)dst + o + 4, &clen);
        if (st != SNAPPY_OK)
            return snappy_status_fail(st, err, "compress");
        kb_be32(dst + o, (uint32_t)clen);
        o += 4 + clen;
    }
    *outlen = o;
    return KB_OK;
}

static int is_xerial(const uint8_t *src, size_t n) {
    return n >= XERIAL_HEADER_LEN && memcmp(src, XERIAL_MAGIC, 8) == 0;
}

static int snappy_raw(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, size_t *outlen,
                      kb_error *err) {
    size_t ulen = 0;
    snappy_status st = snappy_uncompressed_length((const char *)src, n, &ulen);
    if (st != SNAPPY_OK)
        return snappy_status_fail(st, err, "uncompressed_length");
    if (ulen > cap)
        return KB_ETOOSMALL;
    size_t got = ulen;
    st = snappy_uncompress((const char *)src, n, (char *)dst, &got);
    if (st != SNAPPY_OK)
        return snappy_status_fail(st, err, "uncompress");
    *outlen = got;
    return KB_OK;
}

static int snappy_decompress_any(const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                                 size_t *outlen, kb_error *err) {
    if (!is_xerial(src, n)) /* one raw block, as librdkafka writes */
        return snappy_raw(src, n, dst, cap, outlen, err);
    size_t i = XERIAL_HEADER_LEN, o = 0;
    while (i < n) {
        if (n - i < 4)
            return fail(err, "snappy: truncated xerial chunk length at byte %zu", i);
        uint32_t clen = kb_rd32(src + i);
        /* A chunk length equal to the magic's head starts a concatenated stream. */
        if (n - i >= XERIAL_HEADER_LEN && memcmp(src + i, XERIAL_MAGIC, 8) == 0) {
            i += XERIAL_HEADER_LEN;
            continue;
        }
        i += 4;
        if (clen > n - i)
            return fail(err, "snappy: xerial chunk of %u bytes at byte %zu overruns the input",
                        clen, i - 4);
        size_t got = 0;
        int rc = snappy_raw(src + i, clen, dst + o, cap - o, &got, err);
        if (rc != KB_OK)
            return rc;
        o += got;
        i += clen;
    }
    *outlen = o;
    return KB_OK;
}

/* ----------------------------------------------------------------- lz4 -- */

/*
 * Level 9 (Kafka's default, lz4-java's fast compressor): the frame is written
 * here, each 64 KiB block by LZ4_compress_fast_extState into a reused state,
 * stored raw when it does not shrink.  Other levels (LZ4HC) go through
 * liblz4's frame API with the same preferences, so the frame is the same.
 */
static int lz4_compress(kb_codec_ctx *c, int level, const uint8_t *src, size_t n, uint8_t *dst,
                        size_t cap, size_t *outlen, kb_error *err) {
    if (level == 9) {
        if (!c->lz4_state) {
            c->lz4_state = malloc((size_t)LZ4_sizeofState());
            if (!c->lz4_state)
                return failc(err, KB_ENOMEM, "lz4: out of memory");
        }
        if (cap < sizeof(LZ4_KAFKA_HEADER) + 4)
            return KB_ETOOSMALL;
        memcpy(dst, LZ4_KAFKA_HEADER, sizeof(LZ4_KAFKA_HEADER));
        size_t o = sizeof(LZ4_KAFKA_HEADER);
        for (size_t off = 0; off < n; off += LZ4_BLOCK) {
            size_t len = n - off < LZ4_BLOCK ? n - off : LZ4_BLOCK;
            if (cap - o < 4 + len + 4)
                return KB_ETOOSMALL;
            /* With room for LZ4_compressBound, liblz4 takes its unchecked-output path (about 5 %
             * fewer instructions); otherwise it must stop at len - 1 bytes. */
            size_t full = (size_t)LZ4_compressBound((int)len);
            int room = cap - o >= 4 + full + 4 ? (int)full : (int)len - 1;
            int r = LZ4_compress_fast_extState(c->lz4_state, (const char *)src + off, (char *)dst + o + 4, (int)len,
                                               room, 1);
            if (r <= 0 || (size_t)r >= len) { /* does not shrink: store raw */
                kb_le32(dst + o, (uint32_t)len | 0x80000000u);
                memcpy(dst + o + 4, src + off, len);
                o += 4 + len;
            } else {
                kb_le32(dst + o, (uint32_t)r);
                o += 4 + (size_t)r;
            }
        }
        kb_le32(dst + o, 0); /* end mark */
        *outlen = o + 4;
        return KB_OK;
    }
    if (!c->lc) {
        LZ4F_errorCode_t e = LZ4F_createCompressionContext(&c->lc, LZ4F_VERSION);
        if (LZ4F_isError(e))
            return fail(err, "lz4 create context: %s", LZ4F_getErrorName(e));
    }
    LZ4F_preferences_t p = lz4_prefs(level);
    size_t h = LZ4F_compressBegin(c->lc, dst, cap, &p);
    if (LZ4F_isError(h))
        return fail(err, "lz4 compressBegin: %s", LZ4F_getErrorName(h));
    size_t u = LZ4F_compressUpdate(c->lc, dst + h, cap - h, src, n, NULL);
    if (LZ4F_isError(u))
        return fail(err, "lz4 compressUpdate: %s", LZ4F_getErrorName(u));
    size_t e = LZ4F_compressEnd(c->lc, dst + h + u, cap - h - u, NULL);
    if (LZ4F_isError(e))
        return fail(err, "lz4 compressEnd: %s", LZ4F_getErrorName(e));
    *outlen = h + u + e;
    return KB_OK;
}

/* XXH32 (seed 0 only is used): the LZ4 frame's header and block checksums. */
#define XXH_P1 2654435761U
#define XXH_P2 2246822519U
#define XXH_P3 3266489917U
#define XXH_P4 668265263U
#define XXH_P5 374761393U

static uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static uint32_t xxh32(const uint8_t *p, size_t len, uint32_t seed) {
    const uint8_t *end = p + len;
    uint32_t h;
    if (len >= 16) {
        uint32_t v1 = seed + XXH_P1 + XXH_P2, v2 = seed + XXH_P2, v3 = seed, v4 = seed - XXH_P1;
        const uint8_t *limit = end - 16;
        do {
            v1 = rotl32(v1 + kb_rdle32(p) * XXH_P2, 13) * XXH_P1;
            v2 = rotl32(v2 + kb_rdle32(p + 4) * XXH_P2, 13) * XXH_P1;
            v3 = rotl32(v3 + kb_rdle32(p + 8) * XXH_P2, 13) * XXH_P1;
            v4 = rotl32(v4 + kb_rdle32(p + 12) * XXH_P2, 13) * XXH_P1;
            p += 16;
        } while (p <= limit);
        h = rotl32(v1, 1) + rotl32(v2, 7) + rotl32(v3, 12) + rotl32(v4, 18);
    } else {
        h = seed + XXH_P5;
    }
    h += (uint32_t)len;
    while (p + 4 <= end) {
        h = rotl32(h + kb_rdle32(p) * XXH_P3, 17) * XXH_P4;
        p += 4;
    }
    while (p < end) {
        h = rotl32(h + (*p) * XXH_P5, 11) * XXH_P1;
        p++;
    }
    h ^= h >> 15;
    h *= XXH_P2;
    h ^= h >> 13;
    h *= XXH_P3;
    h ^= h >> 16;
    return h;
}

/*
 * The Kafka LZ4 frame reader (Lz4BlockInputStream's rules): version 01,
 * independent blocks, no dictionary id, block size id 4..7; an optional
 * content size, block checksums and content checksum are accepted and
 * verified; exactly one frame.  Blocks decode straight into dst.
 */
static int lz4_decompress(kb_codec_ctx *c, const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                          size_t *outlen, kb_error *err) {
    if (n < 7)
        return fail(err, "lz4: truncated frame header (%zu bytes)", n);
    if (kb_rdle32(src) != 0x184D2204u)
        return fail(err, "lz4: bad frame magic 0x%08x (expected 0x184D2204)", kb_rdle32(src));
    uint8_t flg = src[4], bd = src[5];
    if ((flg >> 6) != 1)
        return fail(err, "lz4: unsupported frame version %d (FLG 0x%02x)", flg >> 6, flg);
    if (flg & 0x03)
        return fail(err, "lz4: reserved bit or dictionary id set (FLG 0x%02x), unsupported by Kafka", flg);
    if (!(flg & 0x20))
        return fail(err, "lz4: dependent block stream is unsupported by Kafka (FLG 0x%02x)", flg);
    int bsid = (bd >> 4) & 7;
    if ((bd & 0x8f) || bsid < 4)
        return fail(err, "lz4: bad block descriptor BD 0x%02x", bd);
    size_t maxblock = (size_t)1 << (8 + 2 * bsid);
    int has_bsum = (flg & 0x10) != 0, has_csum = (flg & 0x04) != 0, has_size = (flg & 0x08) != 0;
    size_t hlen = 6 + (has_size ? 8 : 0);
    if (n < hlen + 1)
        return fail(err, "lz4: truncated frame header (%zu bytes)", n);
    uint8_t hc = (uint8_t)((xxh32(src + 4, hlen - 4, 0) >> 8) & 0xff);
    if (src[hlen] != hc)
        return fail(err, "lz4: header checksum 0x%02x does not match 0x%02x", src[hlen], hc);
    uint64_t content_size = 0;
    if (has_size)
        for (int k = 7; k >= 0; k--)
            content_size = (content_size << 8) | src[6 + k];
    size_t i = hlen + 1, o = 0;
    for (;;) {
        if (n - i < 4)
            return fail(err, "lz4: truncated frame: block header missing at byte %zu", i);
        uint32_t bs = kb_rdle32(src + i);
        i += 4;
        if (bs == 0)
            break;
        size_t len = bs & 0x7fffffffu;
        if (len > maxblock)
            return fail(err, "lz4: block of %zu bytes at byte %zu exceeds the %zu-byte block size", len, i - 4,
                        maxblock);
        if (len + (has_bsum ? 4 : 0) > n - i)
            return fail(err, "lz4: truncated frame: block at byte %zu needs %zu bytes, %zu left", i - 4, len,
                        n - i);
        if (has_bsum && xxh32(src + i, len, 0) != kb_rdle32(src + i + len))
            return fail(err, "lz4: block checksum mismatch at byte %zu", i - 4);
        if (bs & 0x80000000u) { /* stored raw */
            if (len > cap - o)
                return KB_ETOOSMALL;
            memcpy(dst + o, src + i, len);
            o += len;
        } else {
            size_t room = cap - o < maxblock ? cap - o : maxblock;
            int r = LZ4_decompress_safe((const char *)src + i, (char *)dst + o, (int)len, (int)room);
            if (r < 0) {
                if (room < maxblock) {
                    /* Corrupt, or only out of room?  Decode into scratch to tell. */
                    if (!c->lz4_scratch) {
                        c->lz4_scratch = malloc((size_t)4 << 20);
                        if (!c->lz4_scratch)
                            return failc(err, KB_ENOMEM, "lz4: out of memory");
                    }
                    if (LZ4_decompress_safe((const char *)src + i, (char *)c->lz4_scratch, (int)len, (int)maxblock) >= 0)
                        return KB_ETOOSMALL;
                }
                return fail(err, "lz4: corrupt block at byte %zu (LZ4_decompress_safe returned %d)", i - 4, r);
            }
            o += (size_t)r;
        }
        i += len + (has_bsum ? 4 : 0);
    }
    if (has_csum) {
        if (n - i < 4)
            return fail(err, "lz4: truncated frame: content checksum missing");
        if (xxh32(dst, o, 0) != kb_rdle32(src + i))
            return fail(err, "lz4: content checksum mismatch");
        i += 4;
    }
    if (i != n)
        return fail(err, "lz4: %zu trailing bytes after the frame", n - i);
    if (has_size && content_size != o)
        return fail(err, "lz4: frame declares %llu bytes but holds %zu", (unsigned long long)content_size, o);
    *outlen = o;
    return KB_OK;
}

/* ---------------------------------------------------------------- zstd -- */

static int zstd_compress(kb_codec_ctx *c, int level, const uint8_t *src, size_t n, uint8_t *dst,
                         size_t cap, size_t *outlen, kb_error *err) {
    size_t r;
    if (!c->zc) {
        c->zc = ZSTD_createCCtx();
        if (!c->zc)
            return failc(err, KB_ENOMEM, "zstd: out of memory creating a compression context");
    }
    ZSTD_CCtx_reset(c->zc, ZSTD_reset_session_only);
    if (c->zc_level != level) {
        r = ZSTD_CCtx_setParameter(c->zc, ZSTD_c_compressionLevel, level);
        if (ZSTD_isError(r))
            return fail(err, "zstd set level %d: %s", level, ZSTD_getErrorName(r));
        r = ZSTD_CCtx_setParameter(c->zc, ZSTD_c_checksumFlag, 0);
        if (ZSTD_isError(r))
            return fail(err, "zstd: %s", ZSTD_getErrorName(r));
        r = ZSTD_CCtx_setParameter(c->zc, ZSTD_c_contentSizeFlag, 0);
        if (ZSTD_isError(r))
            return fail(err, "zstd: %s", ZSTD_getErrorName(r));
        c->zc_level = level;
    }
    /*
     * zstd-jni's stream starts with ZSTD_e_continue and no pledged size, so
     * zstd picks the parameters for an unknown source size; do the same.
     */
    ZSTD_outBuffer out = {dst, cap, 0};
    ZSTD_inBuffer in = {src, n, 0};
    r = ZSTD_compressStream2(c->zc, &out, &in, ZSTD_e_continue);
    if (ZSTD_isError(r))
        goto zerr;
    do {
        r = ZSTD_compressStream2(c->zc, &out, &in, ZSTD_e_end);
        if (ZSTD_isError(r))
            goto zerr;
        if (r != 0 && out.pos == out.size) {
            ZSTD_CCtx_reset(c->zc, ZSTD_reset_session_only);
            return KB_ETOOSMALL;
        }
    } while (r != 0);
    *outlen = out.pos;
    return KB_OK;
zerr:
    ZSTD_CCtx_reset(c->zc, ZSTD_reset_session_only);
    if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
        return KB_ETOOSMALL;
    return fail(err, "zstd compress: %s", ZSTD_getErrorName(r));
}

static int zstd_decompress(kb_codec_ctx *c, const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                           size_t *outlen, kb_error *err) {
    if (!c->zd) {
        c->zd = ZSTD_createDCtx();
        if (!c->zd)
            return failc(err, KB_ENOMEM, "zstd: out of memory creating a decompression context");
        /* Kafka's reader (zstd-jni) keeps zstd's default windowLogMax (27). */
    }
    if (n == 0)
        return fail(err, "zstd: empty input");
    size_t r = ZSTD_decompressDCtx(c->zd, dst, cap, src, n);
    if (ZSTD_isError(r)) {
        if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
            return KB_ETOOSMALL;
        return fail(err, "zstd decompress: %s", ZSTD_getErrorName(r));
    }
    *outlen = r;
    return KB_OK;
}

/* ------------------------------------------------------------- dispatch -- */

/** Codec none, both ways: the bytes as they are. */
static int copy_none(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, size_t *outlen) {
    if (cap < n)
        return KB_ETOOSMALL;
    if (n)
        memcpy(dst, src, n);
    *outlen = n;
    return KB_OK;
}

static int compress_any(kb_codec_ctx *ctx, kb_codec_t codec, int level, const uint8_t *src, size_t n,
                        uint8_t *dst, size_t cap, size_t *outlen, kb_error *err) {
    switch (codec) {
    case KB_CODEC_NONE:
        return copy_none(src, n, dst, cap, outlen);
    case KB_CODEC_GZIP:
        return gzip_compress(level, src, n, dst, cap, outlen, err);
    case KB_CODEC_SNAPPY:
        return snappy_compress_xerial(src, n, dst, cap, outlen, err);
    case KB_CODEC_LZ4:
        return lz4_compress(ctx, level, src, n, dst, cap, outlen, err);
    case KB_CODEC_ZSTD:
        return zstd_compress(ctx, level, src, n, dst, cap, outlen, err);
    }
    return fail(err, "unknown codec id %d", (int)codec);
}

static int decompress_any(kb_codec_ctx *ctx, kb_codec_t codec, const uint8_t *src, size_t n, uint8_t *dst,
                          size_t cap, size_t *outlen, kb_error *err) {
    *outlen = 0;
    switch (codec) {
    case KB_CODEC_NONE:
        return copy_none(src, n, dst, cap, outlen);
    case KB_CODEC_GZIP:
        return gzip_decompress(src, n, dst, cap, outlen, err);
    case KB_CODEC_SNAPPY:
        return snappy_decompress_any(src, n, dst, cap, outlen, err);
    case KB_CODEC_LZ4:
        return lz4_decompress(ctx, src, n, dst, cap, outlen, err);
    case KB_CODEC_ZSTD:
        return zstd_decompress(ctx, src, n, dst, cap, outlen, err);
    }
    return fail(err, "unknown codec id %d", (int)codec);
}

int kb_compress(kb_codec_ctx *ctx, kb_codec_t codec, int level, const uint8_t *src, size_t n,
                uint8_t *dst, size_t cap, size_t *outlen, kb_error *err) {
    int rc = compress_any(ctx, codec, level, src, n, dst, cap, outlen, err);
    if (rc == KB_ETOOSMALL)
        failc(err, KB_ETOOSMALL, "compressed output exceeded its bound");
    return rc;
}

int kb_decompress(kb_codec_ctx *ctx, kb_codec_t codec, const uint8_t *src, size_t n, uint8_t *dst,
                  size_t cap, size_t *outlen, kb_error *err) {
    int rc = decompress_any(ctx, codec, src, n, dst, cap, outlen, err);
    if (rc == KB_ETOOSMALL)
        failc(err, KB_ETOOSMALL, "%s: decompressed size exceeds the %zu-byte output", codec_names[codec], cap);
    return rc;
}

size_t kb_decompress_hint(kb_codec_t codec, const uint8_t *src, size_t n) {
    switch (codec) {
    case KB_CODEC_NONE:
        return n;
    case KB_CODEC_GZIP:
        return n >= 18 ? kb_rdle32(src + n - 4) : 0;
    case KB_CODEC_SNAPPY: {
        size_t ulen = 0, total = 0;
        if (!is_xerial(src, n))
            return snappy_uncompressed_length((const char *)src, n, &ulen) == SNAPPY_OK ? ulen : 0;
        for (size_t i = XERIAL_HEADER_LEN; i + 4 <= n;) {
            uint32_t clen = kb_rd32(src + i);
            i += 4;
            if (clen > n - i)
                break;
            if (snappy_uncompressed_length((const char *)src + i, clen, &ulen) == SNAPPY_OK)
                total += ulen;
            i += clen;
        }
        return total;
    }
    case KB_CODEC_LZ4:
        /* FLG bit 3 = content size present, 8 bytes LE after BD. */
        if (n >= 15 && kb_rdle32(src) == 0x184D2204u && (src[4] & 0x08)) {
            uint64_t v = 0;
            for (int k = 7; k >= 0; k--)
                v = (v << 8) | src[6 + k];
            return v > SIZE_MAX ? 0 : (size_t)v;
        }
        return 0;
    case KB_CODEC_ZSTD: {
        unsigned long long v = ZSTD_getFrameContentSize(src, n);
        if (v == ZSTD_CONTENTSIZE_ERROR || v == ZSTD_CONTENTSIZE_UNKNOWN || v > SIZE_MAX)
            return 0;
        return (size_t)v;
    }
    }
    return 0;
}

const char *kb_codec_lib_version(kb_codec_t codec) {
    switch (codec) {
    case KB_CODEC_NONE:
        return "";
    case KB_CODEC_GZIP:
        return zlibVersion();
    case KB_CODEC_SNAPPY:
        return KB_SNAPPY_VERSION;
    case KB_CODEC_LZ4:
        return LZ4_versionString();
    case KB_CODEC_ZSTD:
        return ZSTD_versionString();
    }
    return "";
}

int kb_zstd_cparams(int level, int out[7]) {
    /* ZSTD_CONTENTSIZE_UNKNOWN: the parameters a stream without a pledged size gets. */
    ZSTD_compressionParameters p = ZSTD_getCParams(level, ZSTD_CONTENTSIZE_UNKNOWN, 0);
    out[0] = (int)p.windowLog;
    out[1] = (int)p.chainLog;
    out[2] = (int)p.hashLog;
    out[3] = (int)p.searchLog;
    out[4] = (int)p.minMatch;
    out[5] = (int)p.targetLength;
    out[6] = (int)p.strategy;
    return KB_OK;
}
