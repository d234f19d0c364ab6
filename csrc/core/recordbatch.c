/*
 * recordbatch.c - RecordBatch v2 encoder and bounds-checked decoder.
 */
#include "recordbatch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

#include "crc32c.h"
#include "byteorder.h"
#include "varint.h"

int kb_buf_reserve(kb_buf *b, size_t more) {
    if (more > SIZE_MAX - b->len)
        return -1;
    size_t need = b->len + more;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

void kb_buf_free(kb_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

kb_batch_meta kb_batch_meta_default(int librdkafka) {
    kb_batch_meta m = {.base_offset = 0,
                       .partition_leader_epoch = librdkafka ? 0 : -1,
                       .producer_id = -1,
                       .producer_epoch = -1,
                       .base_sequence = -1,
                       .transactional = 0};
    return m;
}

static size_t bytes_field_size(int32_t len) { return kb_varint_size(len) + (len > 0 ? (size_t)len : 0); }

static size_t record_body_size(int32_t offset_delta, int64_t ts_delta, const kb_record *r) {
    size_t s = 1 + kb_varlong_size(ts_delta) + kb_varint_size(offset_delta);
    s += bytes_field_size(r->key_len < 0 ? -1 : r->key_len);
    s += bytes_field_size(r->value_len < 0 ? -1 : r->value_len);
    s += kb_varint_size((int32_t)r->header_count);
    for (uint32_t i = 0; i < r->header_count; i++) {
        s += bytes_field_size(r->headers[i].key_len);
        s += bytes_field_size(r->headers[i].value_len < 0 ? -1 : r->headers[i].value_len);
    }
    return s;
}

size_t kb_record_wire_size(int32_t offset_delta, int64_t ts_delta, const kb_record *r) {
    size_t body = record_body_size(offset_delta, ts_delta, r);
    return kb_varint_size((int32_t)body) + body;
}

void kb_bb_init(kb_batch_builder *b) {
    memset(b, 0, sizeof(*b));
    b->meta = kb_batch_meta_default(0);
}

void kb_bb_reset(kb_batch_builder *b, const kb_batch_meta *m) {
    b->meta = *m;
    b->raw.len = 0;
    b->count = 0;
    b->base_ts = b->max_ts = -1;
}

void kb_bb_free(kb_batch_builder *b) { kb_buf_free(&b->raw); }

static uint8_t *put_bytes(uint8_t *p, const uint8_t *src, int32_t len) {
    p += kb_varint_put(p, len < 0 ? -1 : len);
    if (len > 0) {
        memcpy(p, src, (size_t)len);
        p += len;
    }
    return p;
}

int kb_bb_append(kb_batch_builder *b, const kb_record *r, kb_error *e) {
    if (b->count == INT32_MAX) {
        return kb_error_set(e, KB_ERR, -1, "batch holds too many records");
    }
    for (uint32_t i = 0; i < r->header_count; i++) {
        if (r->headers[i].key_len < 0) {
            return kb_error_set(e, KB_ERR, -1, "header %u has a null key; Kafka header keys must be strings", i);
        }
    }
    if (r->header_count > INT32_MAX) {
        return kb_error_set(e, KB_ERR, -1, "too many headers");
    }
    if (b->count == 0)
        b->base_ts = b->max_ts = r->timestamp;
    int64_t tsd = kb_sub_wrap(r->timestamp, b->base_ts);
    size_t body = record_body_size(b->count, tsd, r);
    if (body > INT32_MAX) {
        return kb_error_set(e, KB_ERR, -1, "record of %zu bytes is too large for a batch", body);
    }
    if (kb_buf_reserve(&b->raw, body + KB_VARINT_MAX) < 0) {
        return kb_error_set(e, KB_ENOMEM, -1, "out of memory growing a batch to %zu bytes", b->raw.len + body);
    }
    uint8_t *p = b->raw.p + b->raw.len;
    p += kb_varint_put(p, (int32_t)body);
    *p++ = 0; /* attributes */
    p += kb_varlong_put(p, tsd);
    p += kb_varint_put(p, b->count);
    p = put_bytes(p, r->key, r->key_len);
    p = put_bytes(p, r->value, r->value_len);
    p += kb_varint_put(p, (int32_t)r->header_count);
    for (uint32_t i = 0; i < r->header_count; i++) {
        p = put_bytes(p, r->headers[i].key, r->headers[i].key_len);
        p = put_bytes(p, r->headers[i].value, r->headers[i].value_len);
    }
    b->raw.len = (size_t)(p - b->raw.p);
    if (r->timestamp > b->max_ts)
        b->max_ts = r->timestamp;
    b->count++;
    return 0;
}

static void write_header(uint8_t *h, const kb_batch_builder *b, int codec, size_t region_len) {
    const kb_batch_meta *m = &b->meta;
    kb_be64(h + 0, (uint64_t)m->base_offset);
    kb_be32(h + 8, (uint32_t)(KB_BATCH_MIN_LENGTH + region_len));
    kb_be32(h + 12, (uint32_t)m->partition_leader_epoch);
    h[16] = 2;
    uint16_t attr = (uint16_t)(codec | (m->transactional ? KB_ATTR_TRANSACTIONAL : 0));
    kb_be16(h + 21, attr);
    kb_be32(h + 23, (uint32_t)(b->count - 1));
    kb_be64(h + 27, (uint64_t)b->base_ts);
    kb_be64(h + 35, (uint64_t)b->max_ts);
    kb_be64(h + 43, (uint64_t)m->producer_id);
    kb_be16(h + 51, (uint16_t)m->producer_epoch);
    kb_be32(h + 53, (uint32_t)m->base_sequence);
    kb_be32(h + 57, (uint32_t)b->count);
    kb_be32(h + 17, kb_crc32c(0, h + 21, KB_BATCH_OVERHEAD - 21 + region_len));
}

int kb_bb_finish(kb_batch_builder *b, kb_codec_ctx *ctx, kb_codec_t codec, int level, int librdkafka,
                 kb_buf *out, int *stored_codec, kb_error *e) {
    if (b->count == 0) {
        return kb_error_set(e, KB_ERR, -1, "a batch needs at least one record");
    }
    size_t raw = b->raw.len;
    size_t cap = codec == KB_CODEC_NONE ? raw : kb_compress_bound(codec, raw);
    int raw_snappy = librdkafka && codec == KB_CODEC_SNAPPY;
    if (raw_snappy && snappy_max_compressed_length(raw) > cap)
        cap = snappy_max_compressed_length(raw);
    if (cap > (size_t)INT32_MAX - KB_BATCH_OVERHEAD) {
        return kb_error_set(e, KB_ERR, -1, "batch of %zu bytes exceeds Kafka's 2 GiB limit", raw);
    }
    if (kb_buf_reserve(out, KB_BATCH_OVERHEAD + cap) < 0) {
        return kb_error_set(e, KB_ENOMEM, -1, "out of memory for a %zu-byte batch", KB_BATCH_OVERHEAD + cap);
    }
    uint8_t *h = out->p + out->len;
    uint8_t *region = h + KB_BATCH_OVERHEAD;
    size_t rlen = raw;
    int used = (int)codec;
    if (codec == KB_CODEC_NONE) {
        memcpy(region, b->raw.p, raw);
    } else if (raw_snappy) {
        rlen = cap;
        if (snappy_compress((const char *)b->raw.p, raw, (char *)region, &rlen) != SNAPPY_OK) {
            return kb_error_set(e, KB_ERR, -1, "snappy: raw compression failed");
        }
        if (rlen > raw) {
            memcpy(region, b->raw.p, raw);
            rlen = raw;
            used = KB_CODEC_NONE;
        }
    } else {
        kb_error ce = KB_ERROR_INIT;
        int rc = kb_compress(ctx, codec, level, b->raw.p, raw, region, cap, &rlen, &ce);
        if (rc != KB_OK)
            return kb_error_set(e, rc, -1, "%s: %s", kb_codec_name(codec),
                                rc == KB_ETOOSMALL ? "output exceeded its bound" : ce.msg);
        if (librdkafka && rlen > raw) {
            memcpy(region, b->raw.p, raw);
            rlen = raw;
            used = KB_CODEC_NONE;
        }
    }
    write_header(h, b, used, rlen);
    out->len += KB_BATCH_OVERHEAD + rlen;
    if (stored_codec)
        *stored_codec = used;
    return 0;
}

int kb_batch_header_read(const uint8_t *buf, size_t n, kb_batch_header *h, kb_error *e) {
    if (n < KB_BATCH_OVERHEAD) {
        return kb_error_set(e, KB_ERR, (int64_t)n, "truncated batch header: %zu bytes, a v2 header needs 61", n);
    }
    h->base_offset = (int64_t)kb_rd64(buf);
    h->batch_length = (int32_t)kb_rd32(buf + 8);
    h->partition_leader_epoch = (int32_t)kb_rd32(buf + 12);
    h->magic = (int8_t)buf[16];
    h->crc = kb_rd32(buf + 17);
    h->attributes = (int16_t)kb_rd16(buf + 21);
    h->last_offset_delta = (int32_t)kb_rd32(buf + 23);
    h->base_timestamp = (int64_t)kb_rd64(buf + 27);
    h->max_timestamp = (int64_t)kb_rd64(buf + 35);
    h->producer_id = (int64_t)kb_rd64(buf + 43);
    h->producer_epoch = (int16_t)kb_rd16(buf + 51);
    h->base_sequence = (int32_t)kb_rd32(buf + 53);
    h->records_count = (int32_t)kb_rd32(buf + 57);
    if (h->magic != 2) {
        return kb_error_set(e, KB_ERR, 16, "unsupported magic %d; kbench reads RecordBatch v2 (magic 2) only",
                            h->magic);
    }
    if (h->batch_length < KB_BATCH_MIN_LENGTH) {
        return kb_error_set(e, KB_ERR, 8, "batchLength %d is below the v2 minimum of 49", h->batch_length);
    }
    if ((size_t)h->batch_length > n - KB_LOG_OVERHEAD) {
        return kb_error_set(e, KB_ERR, (int64_t)n, "truncated batch: batchLength %d needs %lld bytes, only %zu present",
                            h->batch_length, (long long)h->batch_length + KB_LOG_OVERHEAD, n);
    }
    int codec = h->attributes & KB_ATTR_CODEC_MASK;
    if (codec >= KB_CODEC_COUNT) {
        return kb_error_set(e, KB_ERR, 22, "unknown compression type id %d in attributes", codec);
    }
    if (h->records_count < 0) {
        return kb_error_set(e, KB_ERR, 57, "negative recordsCount %d", h->records_count);
    }
    return 0;
}

uint32_t kb_batch_crc_compute(const uint8_t *buf, const kb_batch_header *h) {
    return kb_crc32c(0, buf + 21, (size_t)h->batch_length + KB_LOG_OVERHEAD - 21);
}

int kb_batch_open(kb_codec_ctx *ctx, const uint8_t *buf, size_t n, int verify_crc, size_t max_uncompressed,
                  kb_buf *scratch, kb_batch_view *v, kb_error *e) {
    if (kb_batch_header_read(buf, n, &v->h, e) < 0)
        return -1;
    v->codec = v->h.attributes & KB_ATTR_CODEC_MASK;
    v->size = (size_t)v->h.batch_length + KB_LOG_OVERHEAD;
    v->crc_computed = 0;
    if (verify_crc) {
        v->crc_computed = kb_batch_crc_compute(buf, &v->h);
        if (v->crc_computed != v->h.crc) {
            return kb_error_set(e, KB_ERR, 17, "CRC mismatch: stored 0x%08x, computed 0x%08x over bytes [21, %zu)",
                                v->h.crc, v->crc_computed, v->size);
        }
    }
    const uint8_t *region = buf + KB_BATCH_OVERHEAD;
    size_t rlen = v->size - KB_BATCH_OVERHEAD;
    if (v->codec == KB_CODEC_NONE) {
        v->records = region;
        v->records_len = rlen;
        return 0;
    }
    if (!ctx) {
        return kb_error_set(e, KB_ERR, KB_BATCH_OVERHEAD, "no codec context to decompress a %s batch",
                            kb_codec_name(v->codec));
    }
    size_t hint = kb_decompress_hint((kb_codec_t)v->codec, region, rlen);
    size_t cap = hint ? hint : (rlen < 1024 ? 4096 : rlen * 4);
    if (cap > max_uncompressed)
        cap = max_uncompressed;
    if (cap == 0)
        cap = 1;
    for (;;) {
        scratch->len = 0;
        if (kb_buf_reserve(scratch, cap) < 0) {
            return kb_error_set(e, KB_ENOMEM, KB_BATCH_OVERHEAD, "out of memory for %zu decompressed bytes", cap);
        }
        kb_error de = KB_ERROR_INIT;
        size_t olen = 0;
        int rc = kb_decompress(ctx, (kb_codec_t)v->codec, region, rlen, scratch->p, cap, &olen, &de);
        if (rc == KB_OK) {
            v->records = scratch->p;
            v->records_len = olen;
            return 0;
        }
        if (rc == KB_ETOOSMALL && cap < max_uncompressed) {
            cap = cap > max_uncompressed / 4 ? max_uncompressed : cap * 4;
            continue;
        }
        if (rc == KB_ETOOSMALL)
            kb_error_set(e, KB_ERR, KB_BATCH_OVERHEAD,
                         "%s records region decompresses to more than the %zu-byte limit; raise max_uncompressed if "
                         "the input is trusted",
                         kb_codec_name(v->codec), max_uncompressed);
        else
            kb_error_set(e, KB_ERR, KB_BATCH_OVERHEAD, "%s records region does not decompress: %s",
                         kb_codec_name(v->codec), de.msg);
        return KB_ERR;
    }
}

/* Error position: the input offset, or the region's offset plus a note. */
#define REC_ERR(e, base_off, compressed, at, ...)                                                              \
    do {                                                                                                       \
        char m_[KB_ERRLEN];                                                                                    \
        snprintf(m_, sizeof(m_), __VA_ARGS__);                                                                 \
        if (compressed)                                                                                        \
            kb_error_set(e, KB_ERR, base_off, "%s (byte %zu of the decompressed records)", m_, (size_t)(at));         \
        else                                                                                                   \
            kb_error_set(e, KB_ERR, (base_off) + (int64_t)(at), "%s", m_);                                             \
    } while (0)

static int read_len_bytes(const uint8_t *p, size_t end, size_t *pos, int allow_null, int32_t *len,
                          const uint8_t **data) {
    int32_t l;
    if (kb_varint_get(p, end, pos, &l) < 0)
        return -1;
    if (l < 0) {
        if (!allow_null || l != -1)
            return -2;
        *len = -1;
        *data = NULL;
        return 0;
    }
    if ((size_t)l > end - *pos)
        return -3;
    *len = l;
    *data = p + *pos;
    *pos += (size_t)l;
    return 0;
}

int kb_record_read(const uint8_t *region, size_t len, size_t *pos, kb_record_view *r, int64_t base_off,
                   int compressed, kb_error *e) {
    size_t start = *pos, i = *pos;
    int32_t rl;
    if (kb_varint_get(region, len, &i, &rl) < 0) {
        REC_ERR(e, base_off, compressed, start, "truncated or overlong record length varint");
        return -1;
    }
    if (rl < 0 || (size_t)rl > len - i) {
        REC_ERR(e, base_off, compressed, start, "record length %d exceeds the %zu bytes left", rl, len - i);
        return -1;
    }
    size_t body = i, end = i + (size_t)rl;
    r->length = rl;
    if (i >= end) {
        REC_ERR(e, base_off, compressed, i, "record of length 0 has no attributes");
        return -1;
    }
    r->attributes = (int8_t)region[i++];
    int64_t v64;
    if (kb_varlong_get(region, end, &i, &v64) < 0) {
        REC_ERR(e, base_off, compressed, i, "bad timestampDelta varlong");
        return -1;
    }
    r->timestamp_delta = v64;
    if (kb_varint_get(region, end, &i, &r->offset_delta) < 0) {
        REC_ERR(e, base_off, compressed, i, "bad offsetDelta varint");
        return -1;
    }
    size_t at = i;
    int rc = read_len_bytes(region, end, &i, 1, &r->key_len, &r->key);
    if (rc < 0) {
        REC_ERR(e, base_off, compressed, at, "bad key length (%s)", rc == -3 ? "past the record's end" : "invalid");
        return -1;
    }
    at = i;
    rc = read_len_bytes(region, end, &i, 1, &r->value_len, &r->value);
    if (rc < 0) {
        REC_ERR(e, base_off, compressed, at, "bad value length (%s)", rc == -3 ? "past the record's end" : "invalid");
        return -1;
    }
    at = i;
    if (kb_varint_get(region, end, &i, &r->header_count) < 0 || r->header_count < 0) {
        REC_ERR(e, base_off, compressed, at, "bad header count");
        return -1;
    }
    if ((size_t)r->header_count > end - i) {
        REC_ERR(e, base_off, compressed, at, "header count %d exceeds the bytes left", r->header_count);
        return -1;
    }
    r->headers = region + i;
    for (int32_t k = 0; k < r->header_count; k++) {
        int32_t l;
        const uint8_t *d;
        at = i;
        rc = read_len_bytes(region, end, &i, 0, &l, &d);
        if (rc < 0) {
            REC_ERR(e, base_off, compressed, at, "bad key length of header %d", k);
            return -1;
        }
        at = i;
        rc = read_len_bytes(region, end, &i, 1, &l, &d);
        if (rc < 0) {
            REC_ERR(e, base_off, compressed, at, "bad value length of header %d", k);
            return -1;
        }
    }
    r->headers_len = (size_t)(region + i - r->headers);
    if (i != end) {
        REC_ERR(e, base_off, compressed, body, "Invalid record size: declared %d bytes, read %zu", rl, i - body);
        return -1;
    }
    *pos = end;
    return 0;
}

void kb_record_header_next(const uint8_t *hp, size_t hlen, size_t *pos, kb_header *out) {
    int32_t l;
    const uint8_t *d;
    read_len_bytes(hp, hlen, pos, 0, &l, &d);
    out->key = d;
    out->key_len = l;
    read_len_bytes(hp, hlen, pos, 1, &l, &d);
    out->value = d;
    out->value_len = l;
}

int kb_batch_check_records(const kb_batch_view *v, kb_error *e) {
    int compressed = v->codec != KB_CODEC_NONE;
    size_t pos = 0;
    for (int32_t k = 0; k < v->h.records_count; k++) {
        kb_record_view r;
        if (pos >= v->records_len) {
            REC_ERR(e, KB_BATCH_OVERHEAD, compressed, pos, "records end after %d of %d records", k,
                    v->h.records_count);
            return -1;
        }
        if (kb_record_read(v->records, v->records_len, &pos, &r, KB_BATCH_OVERHEAD, compressed, e) < 0)
            return -1;
    }
    if (pos != v->records_len) {
        REC_ERR(e, KB_BATCH_OVERHEAD, compressed, pos,
                "Incorrect declared batch size, records still remaining: %zu bytes after %d records",
                v->records_len - pos, v->h.records_count);
        return -1;
    }
    return 0;
}
