/*
 * corpusscan.c - bounds of a length-prefixed corpus file (see corpusscan.h).
 */
#include "corpusscan.h"

kb_scan_status kb_lenprefixed_scan(const uint8_t *buf, size_t len, size_t max_records, uint64_t max_record,
                                   size_t *count, size_t *at, uint64_t *n) {
    size_t off = 0, k = 0;
    kb_scan_status st = KB_SCAN_OK;
    *n = 0;
    while (off < len) {
        if (len - off < 4) {
            st = KB_SCAN_TRUNCATED;
            break;
        }
        if (k == max_records) {
            st = KB_SCAN_TOO_MANY;
            break;
        }
        uint64_t size = ((uint64_t)buf[off] << 24) | ((uint64_t)buf[off + 1] << 16) | ((uint64_t)buf[off + 2] << 8) |
                        (uint64_t)buf[off + 3];
        if (size > max_record) {
            st = KB_SCAN_TOO_LARGE;
            *n = size;
            break;
        }
        if (size > len - off - 4) {
            st = KB_SCAN_OVERRUN;
            *n = size;
            break;
        }
        off += 4 + (size_t)size;
        k++;
    }
    *count = k;
    *at = off;
    return st;
}
