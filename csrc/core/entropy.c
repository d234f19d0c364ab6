/*
 * entropy.c - byte histogram and Shannon entropy of a buffer.
 */
#include "entropy.h"

#include <math.h>
#include <string.h>

void kb_byte_histogram(const uint8_t *buf, size_t n, uint64_t counts[256]) {
    /* Four interleaved tables hide the store-to-load dependency. */
    uint64_t t[4][256];
    memset(t, 0, sizeof(t));
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        t[0][buf[i]]++;
        t[1][buf[i + 1]]++;
        t[2][buf[i + 2]]++;
        t[3][buf[i + 3]]++;
    }
    for (; i < n; i++)
        t[0][buf[i]]++;
    for (int b = 0; b < 256; b++)
        counts[b] = t[0][b] + t[1][b] + t[2][b] + t[3][b];
}

double kb_entropy(const uint8_t *buf, size_t n) {
    if (n == 0)
        return 0.0;
    uint64_t c[256];
    kb_byte_histogram(buf, n, c);
    double h = 0.0;
    for (int b = 0; b < 256; b++) {
        if (c[b]) {
            double p = (double)c[b] / (double)n;
            h -= p * log2(p);
        }
    }
    return h;
}
