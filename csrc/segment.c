/*
 * segment.c - log segment reader (FileLogInputStream rules) and writer.
 */
#define _POSIX_C_SOURCE 200809L
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "varint.h"

const char *const kb_seg_status_names[] = {"ok", "bad_crc", "truncated", "corrupt", "legacy"};

#define HEADER_SIZE_UP_TO_MAGIC 17
#define RECORD_OVERHEAD_V0 14

void kb_seg_reader_init(kb_seg_reader *r, const uint8_t *buf, size_t n) {
    r->buf = buf;
    r->n = n;
    r->pos = 0;
    r->done = 0;
}

static void row_reset(kb_seg_batch *o, uint64_t pos) {
    memset(o, 0, sizeof(*o));
    o->position = pos;
    o->codec = -1;
    o->crc_valid = -1;
    o->uncompressed = -1;
    o->last_offset = -1;
    o->magic = -1;
}

int kb_seg_next(kb_seg_reader *r, kb_codec_ctx *ctx, int verify_crc, int decompress, size_t max_uncompressed,
                kb_buf *scratch, kb_seg_batch *o) {
    if (r->done || r->pos >= r->n)
        return 0;
    const uint8_t *p = r->buf + r->pos;
    size_t left = r->n - r->pos;
    row_reset(o, r->pos);
    if (left < HEADER_SIZE_UP_TO_MAGIC) {
        r->done = 1;
        o->size = left;
        o->status = KB_SEG_TRUNCATED;
        snprintf(o->msg, sizeof(o->msg), "%zu trailing bytes at position %zu, fewer than a batch header", left,
                 r->pos);
        return 1;
    }
    o->base_offset = (int64_t)kb_rd64(p);
    int32_t size = (int32_t)kb_rd32(p + 8);
    o->magic = (int8_t)p[16];
    if (size < RECORD_OVERHEAD_V0) {
        r->done = 1;
        o->size = left;
        o->status = KB_SEG_CORRUPT;
        snprintf(o->msg, sizeof(o->msg), "record size %d at position %zu is smaller than the minimum %d", size,
                 r->pos + 8, RECORD_OVERHEAD_V0);
        return 1;
    }
    uint64_t total = (uint64_t)size + KB_LOG_OVERHEAD;
    if (total > left) {
        r->done = 1;
        o->size = left;
        o->status = KB_SEG_TRUNCATED;
        snprintf(o->msg, sizeof(o->msg), "partial batch at position %zu: %llu bytes declared, %zu present", r->pos,
                 (unsigned long long)total, left);
        if (o->magic == 2 && left >= KB_BATCH_OVERHEAD) {
            o->count = (int32_t)kb_rd32(p + 57);
            o->codec = kb_rd16(p + 21) & KB_ATTR_CODEC_MASK;
            o->last_offset = o->base_offset + (int32_t)kb_rd32(p + 23);
        }
        return 1;
    }
    o->size = total;
    r->pos += total;
    if (o->magic < 2) {
        o->status = KB_SEG_LEGACY;
        snprintf(o->msg, sizeof(o->msg), "legacy magic %d message set (not decoded)", o->magic);
        return 1;
    }
    kb_batch_header h;
    kb_error e;
    if (kb_batch_header_read(p, total, &h, &e) < 0) {
        o->status = KB_SEG_CORRUPT;
        snprintf(o->msg, sizeof(o->msg), "at position %llu: %.180s", (unsigned long long)(o->position + (uint64_t)e.offset),
                 e.msg);
        return 1;
    }
    o->count = h.records_count;
    o->last_offset = h.base_offset + h.last_offset_delta;
    o->codec = h.attributes & KB_ATTR_CODEC_MASK;
    o->attributes = h.attributes;
    o->partition_leader_epoch = h.partition_leader_epoch;
    o->producer_id = h.producer_id;
    o->base_timestamp = h.base_timestamp;
    o->max_timestamp = h.max_timestamp;
    o->crc_stored = h.crc;
    if (verify_crc) {
        o->crc_computed = kb_batch_crc_compute(p, &h);
        o->crc_valid = o->crc_computed == h.crc;
        if (!o->crc_valid) {
            o->status = KB_SEG_BAD_CRC;
            snprintf(o->msg, sizeof(o->msg), "CRC mismatch at position %llu: stored 0x%08x, computed 0x%08x",
                     (unsigned long long)o->position, h.crc, o->crc_computed);
            return 1;
        }
    }
    if (o->codec == KB_CODEC_NONE) {
        o->uncompressed = (int64_t)(total - KB_BATCH_OVERHEAD);
        if (!decompress)
            return 1;
    } else if (!decompress) {
        return 1;
    }
    kb_batch_view v;
    if (kb_batch_open(ctx, p, total, 0, max_uncompressed, scratch, &v, &e) < 0 || kb_batch_check_records(&v, &e) < 0) {
        o->status = KB_SEG_CORRUPT;
        snprintf(o->msg, sizeof(o->msg), "batch at position %llu, byte %lld: %.180s", (unsigned long long)o->position,
                 (long long)e.offset, e.msg);
        return 1;
    }
    o->uncompressed = (int64_t)v.records_len;
    return 1;
}

int kb_seg_writer_open(kb_seg_writer *w, const char *path, int64_t base_offset, int32_t leader_epoch, kb_error *e) {
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        kb_error_set(e, -1, "cannot create segment %s: %s", path, strerror(errno));
        return -1;
    }
    w->next_offset = base_offset;
    w->size = 0;
    w->leader_epoch = leader_epoch;
    return 0;
}

int kb_seg_writer_append(kb_seg_writer *w, uint8_t *batch, size_t n, uint64_t *position, kb_error *e) {
    kb_batch_header h;
    if (kb_batch_header_read(batch, n, &h, e) < 0)
        return -1;
    kb_be64(batch, (uint64_t)w->next_offset);
    kb_be32(batch + 12, (uint32_t)w->leader_epoch);
    size_t total = (size_t)h.batch_length + KB_LOG_OVERHEAD, done = 0;
    while (done < total) {
        ssize_t k = write(w->fd, batch + done, total - done);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            kb_error_set(e, -1, "segment write failed: %s", strerror(errno));
            return -1;
        }
        done += (size_t)k;
    }
    if (position)
        *position = w->size;
    w->size += total;
    w->next_offset += (int64_t)h.last_offset_delta + 1;
    return 0;
}

int kb_seg_writer_close(kb_seg_writer *w, kb_error *e) {
    if (w->fd < 0)
        return 0;
    int rc = close(w->fd);
    w->fd = -1;
    if (rc < 0) {
        kb_error_set(e, -1, "segment close failed: %s", strerror(errno));
        return -1;
    }
    return 0;
}
