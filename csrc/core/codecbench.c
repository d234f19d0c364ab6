/*
 * codecbench.c - compress/decompress every block of a corpus, loops times.
 */
#include "codecbench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t blk_len(const kb_codecbench *b, size_t i) {
    size_t off = i * b->block;
    return b->n - off < b->block ? b->n - off : b->block;
}

int kb_codecbench_init(kb_codecbench *b, const uint8_t *src, size_t n, size_t block, kb_codec_t codec, int level,
                       kb_error *e) {
    memset(b, 0, sizeof(*b));
    b->src = src;
    b->n = n;
    b->block = block;
    b->codec = codec;
    b->level = level;
    b->nblocks = (n + block - 1) / block;
    b->bound = kb_compress_bound(codec, block);
    if (b->bound == 0 || b->nblocks > SIZE_MAX / b->bound)
        return kb_error_set(e, KB_ENOMEM, -1, "%zu blocks of %zu bytes overflow the address space", b->nblocks,
                            b->bound);
    b->cbuf = malloc(b->nblocks * b->bound);
    b->clen = calloc(b->nblocks, sizeof(size_t));
    b->dbuf = malloc(n);
    b->ctx = kb_codec_ctx_new();
    if (!b->cbuf || !b->clen || !b->dbuf || !b->ctx)
        return kb_error_set(e, KB_ENOMEM, -1, "out of memory for %zu blocks", b->nblocks);
    return KB_OK;
}

int kb_codecbench_compress(kb_codecbench *b, long loops, kb_error *e) {
    for (long l = 0; l < loops; l++) {
        for (size_t i = 0; i < b->nblocks; i++) {
            size_t olen = 0;
            int rc = kb_compress(b->ctx, b->codec, b->level, b->src + i * b->block, blk_len(b, i),
                                 b->cbuf + i * b->bound, b->bound, &olen, e);
            if (rc != KB_OK)
                return rc;
            b->clen[i] = olen;
        }
    }
    return KB_OK;
}

int kb_codecbench_decompress(kb_codecbench *b, long loops, kb_error *e) {
    for (long l = 0; l < loops; l++) {
        for (size_t i = 0; i < b->nblocks; i++) {
            size_t olen = 0, want = blk_len(b, i);
            int rc = kb_decompress(b->ctx, b->codec, b->cbuf + i * b->bound, b->clen[i], b->dbuf + i * b->block, want,
                                   &olen, e);
            if (rc != KB_OK)
                return rc;
            if (olen != want) {
                return kb_error_set(e, KB_ERR, -1, "block %zu decompressed to %zu bytes, expected %zu", i, olen,
                                    want);
            }
        }
    }
    return KB_OK;
}

int kb_codecbench_verify(const kb_codecbench *b) { return memcmp(b->dbuf, b->src, b->n) == 0; }

size_t kb_codecbench_compressed_size(const kb_codecbench *b) {
    size_t t = 0;
    for (size_t i = 0; b->clen && i < b->nblocks; i++)
        t += b->clen[i];
    return t;
}

void kb_codecbench_free(kb_codecbench *b) {
    free(b->cbuf);
    free(b->clen);
    free(b->dbuf);
    kb_codec_ctx_free(b->ctx);
    memset(b, 0, sizeof(*b));
}
