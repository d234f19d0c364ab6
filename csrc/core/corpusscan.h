/*
 * corpusscan.h - bounds of a length-prefixed corpus file, checked before any record is made.
 */
#ifndef KBENCH_CORPUSSCAN_H
#define KBENCH_CORPUSSCAN_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    KB_SCAN_OK = 0,
    KB_SCAN_TOO_MANY = 1,  /* more than max_records records; *at is the first one over */
    KB_SCAN_TOO_LARGE = 2, /* a record of more than max_record bytes at *at, its size in *n */
    KB_SCAN_TRUNCATED = 3, /* fewer than 4 bytes of length prefix left at *at */
    KB_SCAN_OVERRUN = 4,   /* the record at *at claims *n bytes, more than remain */
} kb_scan_status;

/**
 * Walk 4-byte big-endian length-prefixed records in buf[0..len): the number of records in
 * *count and KB_SCAN_OK, or the first problem (records counted up to it in *count).
 */
kb_scan_status kb_lenprefixed_scan(const uint8_t *buf, size_t len, size_t max_records, uint64_t max_record,
                                   size_t *count, size_t *at, uint64_t *n);

#endif
