/*
 * wire.h - what kbench puts on the wire, shared by the producer (writes it)
 * and the consumer (reads it): one record header, "kb", of 24 bytes holding
 * three big-endian 64-bit values.
 */
#ifndef KBENCH_WIRE_H
#define KBENCH_WIRE_H

#include <stdint.h>

#include "byteorder.h" /* kb_be64 / kb_rd64 read and write the values */

#define KB_HDR_NAME "kb"
#define KB_HDR_NAME_LEN 2
#define KB_HDR_LEN 24
#define KB_HDR_TIME_OFF 0 /* CLOCK_MONOTONIC ns at produce() */
#define KB_HDR_SEQ_OFF 8  /* sequence number, 0-based */
#define KB_HDR_RUN_OFF 16 /* run id */

#endif
