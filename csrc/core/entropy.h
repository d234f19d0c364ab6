/*
 * entropy.h - byte statistics of a corpus (Shannon entropy in bits per byte).
 */
#ifndef KBENCH_ENTROPY_H
#define KBENCH_ENTROPY_H

#include <stddef.h>
#include <stdint.h>

/** Count each byte value of buf[0..n) into counts[256]. */
void kb_byte_histogram(const uint8_t *buf, size_t n, uint64_t counts[256]);

/** Shannon entropy of buf[0..n) in bits per byte (0 for n == 0). */
double kb_entropy(const uint8_t *buf, size_t n);

#endif
