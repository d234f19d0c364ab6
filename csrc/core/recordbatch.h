/*
 * recordbatch.h - Kafka RecordBatch v2 (magic 2): encoder and bounds-checked
 * decoder.  Layout and rules: DefaultRecordBatch / DefaultRecord (Kafka 4.1);
 * see docs/batch-format.md.  Pure C, no Python.
 *
 * Errors carry a message and the byte offset in the input where the problem
 * was found (for records inside a compressed region, the offset of the
 * region, with the position inside the decompressed bytes in the message).
 */
#ifndef KBENCH_RECORDBATCH_H
#define KBENCH_RECORDBATCH_H

#include <stddef.h>
#include <stdint.h>

#include "codecs.h"
#include "error.h"

#define KB_BATCH_OVERHEAD 61 /* RECORD_BATCH_OVERHEAD */
#define KB_LOG_OVERHEAD 12   /* baseOffset + batchLength */
#define KB_BATCH_MIN_LENGTH (KB_BATCH_OVERHEAD - KB_LOG_OVERHEAD)
#define KB_ATTR_CODEC_MASK 0x07
#define KB_ATTR_LOG_APPEND_TIME 0x08
#define KB_ATTR_TRANSACTIONAL 0x10
#define KB_ATTR_CONTROL 0x20
#define KB_ATTR_DELETE_HORIZON 0x40

/** A growable byte buffer. */
typedef struct {
    uint8_t *p;
    size_t len, cap;
} kb_buf;

/** Make room for `more` bytes after len; 0, or -1 on out of memory / overflow. */
int kb_buf_reserve(kb_buf *b, size_t more);
void kb_buf_free(kb_buf *b);

typedef struct {
    const uint8_t *key;
    int32_t key_len; /* >= 0 */
    const uint8_t *value;
    int32_t value_len; /* -1 = null */
} kb_header;

typedef struct {
    const uint8_t *key;
    int32_t key_len; /* -1 = null */
    const uint8_t *value;
    int32_t value_len; /* -1 = null */
    int64_t timestamp;
    const kb_header *headers;
    uint32_t header_count;
} kb_record;

/** Header fields a producer chooses. */
typedef struct {
    int64_t base_offset;            /* 0 from producers */
    int32_t partition_leader_epoch; /* -1 Java producer, 0 librdkafka */
    int64_t producer_id;            /* -1 unless idempotent */
    int16_t producer_epoch;
    int32_t base_sequence;
    int transactional;
} kb_batch_meta;

/** Java/librdkafka defaults for a non-idempotent producer. */
kb_batch_meta kb_batch_meta_default(int librdkafka);

/** Size of one record on the wire, length prefix included (DefaultRecord.sizeInBytes). */
size_t kb_record_wire_size(int32_t offset_delta, int64_t ts_delta, const kb_record *r);

/** Accumulates records, then writes one batch. */
typedef struct {
    kb_batch_meta meta;
    kb_buf raw; /* the uncompressed records region */
    int32_t count;
    int64_t base_ts, max_ts;
} kb_batch_builder;

void kb_bb_init(kb_batch_builder *b);
/** Start a new batch (keeps the buffer). */
void kb_bb_reset(kb_batch_builder *b, const kb_batch_meta *m);
/** Append a record; 0, or -1 with e set. */
int kb_bb_append(kb_batch_builder *b, const kb_record *r, kb_error *e);
/**
 * Write the batch (header, records compressed as one stream with codec/level,
 * CRC-32C) at the end of out.  With librdkafka set, the batch is framed as
 * librdkafka frames it: snappy as one raw block (no xerial framing), and a
 * compressed region larger than the raw one is replaced by the raw one.
 * *stored_codec receives the codec actually written.  0 or -1 with e set.
 */
int kb_bb_finish(kb_batch_builder *b, kb_codec_ctx *ctx, kb_codec_t codec, int level, int librdkafka,
                 kb_buf *out, int *stored_codec, kb_error *e);
void kb_bb_free(kb_batch_builder *b);

/** The fixed header, as read. */
typedef struct {
    int64_t base_offset;
    int32_t batch_length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp, max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t records_count;
} kb_batch_header;

/**
 * Read the 61-byte header at buf (n bytes available from buf).  Checks the
 * magic (2), batchLength >= 49, that the whole batch fits in n, and the
 * codec id.  Does not check the CRC.  0 or -1 with e set.
 */
int kb_batch_header_read(const uint8_t *buf, size_t n, kb_batch_header *h, kb_error *e);

/** CRC-32C over [21, 12 + batchLength) of a batch whose header was read. */
uint32_t kb_batch_crc_compute(const uint8_t *buf, const kb_batch_header *h);

/** A decoded batch: header plus its (decompressed) records region. */
typedef struct {
    kb_batch_header h;
    int codec;
    uint32_t crc_computed;
    size_t size;             /* 12 + batchLength */
    const uint8_t *records;  /* into the input (codec none) or into scratch */
    size_t records_len;
} kb_batch_view;

/**
 * Open the batch at buf: header, CRC (when verify_crc), and the records
 * region, decompressed into scratch when compressed (at most max_uncompressed
 * bytes).  0 or -1 with e set.
 */
int kb_batch_open(kb_codec_ctx *ctx, const uint8_t *buf, size_t n, int verify_crc, size_t max_uncompressed,
                  kb_buf *scratch, kb_batch_view *v, kb_error *e);

/** One record as read (pointers into the records region). */
typedef struct {
    int32_t length;
    int8_t attributes;
    int64_t timestamp_delta;
    int32_t offset_delta;
    const uint8_t *key;
    int32_t key_len;
    const uint8_t *value;
    int32_t value_len;
    int32_t header_count;
    const uint8_t *headers; /* the encoded headers, header_count of them */
    size_t headers_len;
} kb_record_view;

/**
 * Read the record at region[*pos..len) and advance *pos.  base_off is the
 * input offset reported in errors; compressed says whether region is
 * decompressed bytes (errors then name the position inside them).
 */
int kb_record_read(const uint8_t *region, size_t len, size_t *pos, kb_record_view *r, int64_t base_off,
                   int compressed, kb_error *e);

/** Read header *i of a record whose headers were validated by kb_record_read. */
void kb_record_header_next(const uint8_t *hp, size_t hlen, size_t *pos, kb_header *out);

/** Read all records of an opened batch and check count and trailing bytes. */
int kb_batch_check_records(const kb_batch_view *v, kb_error *e);

#endif
