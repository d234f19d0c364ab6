/*
 * segment.c - log segment reader (FileLogInputStream rules) and writer.
 */
#define _POSIX_C_SOURCE 200809L
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "byteorder.h"
#include "varint.h"

const char *const kb_seg_status_names[] = {"ok", "bad_crc", "truncated", "corrupt", "legacy"};

#define HEADER_SIZE_UP_TO_MAGIC 17
#define RECORD_OVERHEAD_V0 14

void kb_seg_reader_init(kb_seg_reader *r, const uint8_t *buf, size_t n) {
    r->buf = buf;
    r->n = n;
    r->pos = 0;
    r->base = 0;
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
    row_reset(o, r->base + r->pos);
    if (left < HEADER_SIZE_UP_TO_MAGIC) {
        r->done = 1;
        o->size = left;
        o->status = KB_SEG_TRUNCATED;
        snprintf(o->msg, sizeof(o->msg), "%zu trailing bytes at position %llu, fewer than a batch header", left,
                 (unsigned long long)o->position);
        return 1;
    }
    o->base_offset = (int64_t)kb_rd64(p);
    int32_t size = (int32_t)kb_rd32(p + 8);
    o->magic = (int8_t)p[16];
    if (size < RECORD_OVERHEAD_V0) {
        r->done = 1;
        o->size = left;
        o->status = KB_SEG_CORRUPT;
        snprintf(o->msg, sizeof(o->msg), "record size %d at position %llu is smaller than the minimum %d", size,
                 (unsigned long long)o->position + 8, RECORD_OVERHEAD_V0);
        return 1;
    }
    uint64_t total = (uint64_t)size + KB_LOG_OVERHEAD;
    if (total > left) {
        r->done = 1;
        o->size = left;
        o->status = KB_SEG_TRUNCATED;
        snprintf(o->msg, sizeof(o->msg), "partial batch at position %llu: %llu bytes declared, %zu present",
                 (unsigned long long)o->position, (unsigned long long)total, left);
        if (o->magic == 2 && left >= KB_BATCH_OVERHEAD) {
            o->count = (int32_t)kb_rd32(p + 57);
            o->codec = kb_rd16(p + 21) & KB_ATTR_CODEC_MASK;
            o->last_offset = kb_add_wrap(o->base_offset, (int32_t)kb_rd32(p + 23));
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
    o->last_offset = kb_add_wrap(h.base_offset, h.last_offset_delta);
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

static int push_row(kb_seg_batch **rows, size_t *n, size_t *cap) {
    if (*n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 256;
    kb_seg_batch *r = realloc(*rows, nc * sizeof(**rows));
    if (!r)
        return -1;
    *rows = r;
    *cap = nc;
    return 0;
}

#define SCAN_CHUNK (8u << 20)

/* A row for a batch whose declared size is over KB_SEG_MAX_BATCH: never read.  Wholly present,
 * it is skipped (corrupt, the scan goes on after it); running past the end, it is the partial
 * trailing batch.  Returns 1 when the scan continues after it. */
static int oversize_row(const uint8_t *p, uint64_t at, uint64_t need, uint64_t fsize, kb_seg_batch *o) {
    uint64_t present = fsize > at ? fsize - at : 0;
    row_reset(o, at);
    o->base_offset = (int64_t)kb_rd64(p);
    o->magic = (int8_t)p[16];
    if (need > present) {
        o->size = present;
        o->status = KB_SEG_TRUNCATED;
        snprintf(o->msg, sizeof(o->msg), "partial batch at position %llu: %llu bytes declared, %llu present",
                 (unsigned long long)at, (unsigned long long)need, (unsigned long long)present);
        return 0;
    }
    o->size = need;
    o->status = KB_SEG_CORRUPT;
    snprintf(o->msg, sizeof(o->msg),
             "batch at position %llu declares %llu bytes, over the %u MiB a batch may have here; skipped unread",
             (unsigned long long)at, (unsigned long long)need, (unsigned)(KB_SEG_MAX_BATCH >> 20));
    return 1;
}

int kb_seg_scan_file(const char *path, kb_codec_ctx *ctx, int verify_crc, int decompress, size_t max_uncompressed,
                     uint64_t start, size_t max_rows, kb_seg_batch **rows, size_t *nrows, uint64_t *next,
                     kb_error *e) {
    *rows = NULL;
    *nrows = 0;
    *next = UINT64_MAX;
    size_t cap_rows = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return kb_error_set(e, KB_EIO, -1, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        kb_error_set(e, KB_EIO, -1, "cannot stat %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    uint64_t fsize = (uint64_t)st.st_size;
    size_t cap = SCAN_CHUNK;
    uint8_t *buf = malloc(cap);
    kb_buf scratch = {0};
    uint64_t base = start; /* file position of buf[0] */
    size_t filled = 0, pos = 0;
    int eof = start >= fsize, rc = -1;
    if (!buf) {
        kb_error_set(e, KB_ENOMEM, -1, "out of memory");
        goto done;
    }
    if (start > 0 && lseek(fd, (off_t)start, SEEK_SET) < 0) {
        kb_error_set(e, KB_EIO, -1, "seek %s: %s", path, strerror(errno));
        goto done;
    }
    for (;;) {
        if (max_rows && *nrows >= max_rows) {
            *next = base + pos; /* the caller continues here */
            break;
        }
        /* make sure the next batch is wholly in the buffer, or we are at EOF */
        size_t left = filled - pos;
        size_t need = HEADER_SIZE_UP_TO_MAGIC;
        if (left >= HEADER_SIZE_UP_TO_MAGIC) {
            int32_t sz = (int32_t)kb_rd32(buf + pos + 8);
            need = sz >= RECORD_OVERHEAD_V0 ? (size_t)sz + KB_LOG_OVERHEAD : HEADER_SIZE_UP_TO_MAGIC;
            if (need > KB_SEG_MAX_BATCH) { /* checked against the bound and the file before any of it is read */
                if (push_row(rows, nrows, &cap_rows) < 0) {
                    kb_error_set(e, KB_ENOMEM, -1, "out of memory");
                    goto done;
                }
                uint64_t at = base + pos;
                int more = oversize_row(buf + pos, at, need, fsize, &(*rows)[*nrows]);
                (*nrows)++;
                if (!more)
                    break;
                base = at + need;
                pos = filled = 0;
                eof = base >= fsize;
                if (lseek(fd, (off_t)base, SEEK_SET) < 0) {
                    kb_error_set(e, KB_EIO, -1, "seek %s: %s", path, strerror(errno));
                    goto done;
                }
                continue;
            }
        }
        if (left < need && !eof) {
            memmove(buf, buf + pos, left);
            base += pos;
            filled = left;
            pos = 0;
            if (need > cap) {
                uint64_t rest = fsize > base ? fsize - base : 0;
                size_t nc = need < rest ? need : (size_t)rest;
                if (nc > cap) {
                    uint8_t *nb = realloc(buf, nc);
                    if (!nb) {
                        kb_error_set(e, KB_ENOMEM, -1, "out of memory for a %zu-byte batch", nc);
                        goto done;
                    }
                    buf = nb;
                    cap = nc;
                }
            }
            while (filled < cap) {
                ssize_t k = read(fd, buf + filled, cap - filled);
                if (k < 0) {
                    if (errno == EINTR)
                        continue;
                    kb_error_set(e, KB_EIO, -1, "read %s: %s", path, strerror(errno));
                    goto done;
                }
                if (k == 0) {
                    eof = 1;
                    break;
                }
                filled += (size_t)k;
            }
            if (base + filled >= fsize)
                eof = 1; /* a batch claiming more than the file holds is a partial trailing batch */
            continue;
        }
        if (left == 0)
            break;
        kb_seg_reader r;
        kb_seg_reader_init(&r, buf + pos, left);
        r.base = base + pos;
        /* consume every batch wholly present (up to max_rows), then refill */
        for (;;) {
            size_t l2 = r.n - r.pos;
            if (max_rows && *nrows >= max_rows)
                break;
            if (!eof) {
                if (l2 < HEADER_SIZE_UP_TO_MAGIC)
                    break;
                int32_t sz = (int32_t)kb_rd32(r.buf + r.pos + 8);
                if (sz >= RECORD_OVERHEAD_V0 && (size_t)sz + KB_LOG_OVERHEAD > l2)
                    break;
            }
            if (l2 >= HEADER_SIZE_UP_TO_MAGIC) {
                int32_t sz = (int32_t)kb_rd32(r.buf + r.pos + 8);
                if (sz >= RECORD_OVERHEAD_V0 && (size_t)sz + KB_LOG_OVERHEAD > KB_SEG_MAX_BATCH)
                    break; /* the outer loop's bound */
            }
            if (push_row(rows, nrows, &cap_rows) < 0) {
                kb_error_set(e, KB_ENOMEM, -1, "out of memory");
                goto done;
            }
            if (!kb_seg_next(&r, ctx, verify_crc, decompress, max_uncompressed, &scratch, &(*rows)[*nrows]))
                break;
            (*nrows)++;
            if (r.done)
                break;
        }
        pos += r.pos;
        if (r.done || (eof && pos >= filled))
            break;
        if (r.pos == 0 && eof && !(max_rows && *nrows >= max_rows))
            break;
    }
    rc = 0;
done:
    free(buf);
    kb_buf_free(&scratch);
    close(fd);
    if (rc < 0) {
        free(*rows);
        *rows = NULL;
        *nrows = 0;
    }
    return rc;
}

int kb_seg_writer_open(kb_seg_writer *w, const char *path, int64_t base_offset, int32_t leader_epoch, kb_error *e) {
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        return kb_error_set(e, KB_EIO, -1, "cannot create segment %s: %s", path, strerror(errno));
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
            return kb_error_set(e, KB_EIO, -1, "segment write failed: %s", strerror(errno));
        }
        done += (size_t)k;
    }
    if (position)
        *position = w->size;
    w->size += total;
    w->next_offset = kb_add_wrap(w->next_offset, (int64_t)h.last_offset_delta + 1);
    return 0;
}

int kb_seg_writer_close(kb_seg_writer *w, kb_error *e) {
    if (w->fd < 0)
        return 0;
    int rc = close(w->fd);
    w->fd = -1;
    if (rc < 0) {
        return kb_error_set(e, KB_EIO, -1, "segment close failed: %s", strerror(errno));
    }
    return 0;
}
