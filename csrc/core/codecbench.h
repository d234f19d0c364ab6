/*
 * codecbench.h - the timed loops of experiment M: a corpus cut into blocks of
 * block bytes (the last may be short), compressed and decompressed block by
 * block with one codec context.  Buffers and the context are made by
 * kb_codecbench_init(), outside any timed region.
 */
#ifndef KBENCH_CODECBENCH_H
#define KBENCH_CODECBENCH_H

#include <stddef.h>
#include <stdint.h>

#include "codecs.h"

typedef struct {
    const uint8_t *src; /* the corpus, borrowed: it must outlive the bench */
    size_t n;
    size_t block;
    size_t nblocks;
    kb_codec_t codec;
    int level;
    size_t bound;  /* per-block compressed capacity */
    uint8_t *cbuf; /* nblocks * bound */
    size_t *clen;  /* compressed length per block */
    uint8_t *dbuf; /* decompressed output, same layout as the input */
    kb_codec_ctx *ctx;
} kb_codecbench;

/**
 * Allocate buffers for src[0..n) cut into blocks of block bytes (n, block > 0).  0, or KB_ENOMEM
 * with e set when memory runs out (kb_codecbench_free() still required).
 */
int kb_codecbench_init(kb_codecbench *b, const uint8_t *src, size_t n, size_t block, kb_codec_t codec, int level,
                       kb_error *e);

/** Compress every block loops times; KB_OK or a KB_E* code with e set (error.h). */
int kb_codecbench_compress(kb_codecbench *b, long loops, kb_error *e);

/** Decompress every block loops times (after a compress); KB_OK or a KB_E* code with e set (error.h). */
int kb_codecbench_decompress(kb_codecbench *b, long loops, kb_error *e);

/** 1 when the decompressed output equals the input. */
int kb_codecbench_verify(const kb_codecbench *b);

/** Total compressed bytes of all blocks (last compress). */
size_t kb_codecbench_compressed_size(const kb_codecbench *b);

/** Free the buffers and the context. */
void kb_codecbench_free(kb_codecbench *b);

#endif
