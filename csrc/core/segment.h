/*
 * segment.h - Kafka log segment (.log) reader and writer.  Pure C, no Python.
 *
 * Reader: iterates batches exactly as FileLogInputStream.nextBatch does
 * (stop with < 17 bytes left; size < 14 is corrupt; a batch running past the
 * end is a partial trailing batch), and reports every batch, including
 * broken ones, as a row with a status rather than failing.
 * Writer: appends producer batches as the leader broker stores them
 * (absolute baseOffset, partitionLeaderEpoch set, CRC untouched).
 */
#ifndef KBENCH_SEGMENT_H
#define KBENCH_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "recordbatch.h"

typedef enum {
    KB_SEG_OK = 0,
    KB_SEG_BAD_CRC = 1,     /* CRC mismatch; size known, iteration continues */
    KB_SEG_TRUNCATED = 2,   /* partial trailing batch; iteration stops */
    KB_SEG_CORRUPT = 3,     /* size field < 14 (stops) or a v2 batch that does not decode (continues) */
    KB_SEG_LEGACY = 4       /* magic 0/1 message set; skipped */
} kb_seg_status;

extern const char *const kb_seg_status_names[];

/** Largest batch a scan reads (bytes); Kafka's message.max.bytes defaults to 1 MiB. */
#define KB_SEG_MAX_BATCH (128u << 20)

typedef struct {
    uint64_t position;
    int64_t base_offset, last_offset;
    int32_t count;
    uint64_t size; /* 12 + batchLength (bytes present for a truncated batch) */
    int magic;
    int codec; /* -1 unknown */
    int attributes;
    int32_t partition_leader_epoch;
    int64_t producer_id;
    int64_t base_timestamp, max_timestamp;
    uint32_t crc_stored, crc_computed;
    int crc_valid;        /* 1 valid, 0 invalid, -1 not checked */
    int64_t uncompressed; /* records region bytes after decompression; -1 not known */
    kb_seg_status status;
    char msg[KB_ERRLEN]; /* why, when status != OK */
} kb_seg_batch;

typedef struct {
    const uint8_t *buf;
    size_t n, pos;
    uint64_t base; /* file position of buf[0]; rows report base + offset */
    int done;
} kb_seg_reader;

void kb_seg_reader_init(kb_seg_reader *r, const uint8_t *buf, size_t n);

/**
 * Next batch into *out: 1 when a row was produced, 0 at the end.  With
 * decompress, compressed batches are decompressed (up to max_uncompressed
 * bytes) and their records checked, giving out->uncompressed; without it
 * only uncompressed batches report their uncompressed size.
 */
int kb_seg_next(kb_seg_reader *r, kb_codec_ctx *ctx, int verify_crc, int decompress, size_t max_uncompressed,
                kb_buf *scratch, kb_seg_batch *out);

typedef struct {
    int fd;
    int64_t next_offset;
    uint64_t size;
    int32_t leader_epoch;
} kb_seg_writer;

/** Create (truncate) a segment file; 0 or -1 with e set. */
int kb_seg_writer_open(kb_seg_writer *w, const char *path, int64_t base_offset, int32_t leader_epoch, kb_error *e);
/**
 * Assign offsets to a producer batch in place (baseOffset, PLE) and append it.
 * *position receives its file position.  0 or -1 with e set.
 */
int kb_seg_writer_append(kb_seg_writer *w, uint8_t *batch, size_t n, uint64_t *position, kb_error *e);
/**
 * Scan a .log file with buffered reads (no mmap page faults) from file position
 * start, one row per batch into *rows (malloc'd, *nrows of them), at most
 * max_rows rows (0: no limit).  *next is where to continue (UINT64_MAX: the
 * scan reached the end).  Memory is bounded by max_rows rows and the largest
 * batch read, at most KB_SEG_MAX_BATCH: a batch declaring more is checked
 * against the file size and reported without being read.  0, or -1 with e set
 * when the file cannot be read (rows describe the content, never fail on it).
 */
int kb_seg_scan_file(const char *path, kb_codec_ctx *ctx, int verify_crc, int decompress, size_t max_uncompressed,
                     uint64_t start, size_t max_rows, kb_seg_batch **rows, size_t *nrows, uint64_t *next,
                     kb_error *e);

/** Flush and close; 0 or -1 with e set. */
int kb_seg_writer_close(kb_seg_writer *w, kb_error *e);

#endif
