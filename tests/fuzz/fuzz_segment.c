/*
 * fuzz_segment.c - libFuzzer harness for the segment reader: every input is
 * iterated to the end with CRC checks and decompression; rows must tile the
 * input in order and never claim bytes beyond it.
 */
#include <stdint.h>
#include <stdlib.h>

#include "codecs.h"
#include "segment.h"

static kb_codec_ctx *ctx;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ctx)
        ctx = kb_codec_ctx_new();
    kb_buf scratch = {0};
    kb_seg_reader r;
    kb_seg_reader_init(&r, data, size);
    kb_seg_batch b;
    uint64_t expect = 0;
    size_t rows = 0;
    while (kb_seg_next(&r, ctx, 1, 1, 1 << 20, &scratch, &b)) {
        if (b.position != expect || b.position + b.size > size || b.size == 0)
            abort();
        expect = b.position + b.size;
        if (++rows > size)
            abort(); /* each row consumes at least one byte */
    }
    kb_buf_free(&scratch);
    return 0;
}
