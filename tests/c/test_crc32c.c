/*
 * test_crc32c.c - every CRC-32C implementation this CPU has: the check value
 * crc32c("123456789") = 0xE3069283, chaining, and agreement with the table
 * path on unaligned buffers of every length up to 300.  Needs only crc32c.c,
 * so it also builds for aarch64 and runs under qemu (tests/test_crc32c_arch.py).
 * Prints "ok <impl> <impl>..." and exits 0 on success.
 */
#include <stdint.h>
#include <stdio.h>

#include "crc32c.h"

int main(void) {
    uint8_t buf[4096];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof(buf); i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    kb_crc32c_fn table = kb_crc32c_impl("table");
    int fails = 0;
    printf("ok");
    for (int i = 0; kb_crc32c_names[i]; i++) {
        kb_crc32c_fn f = kb_crc32c_impl(kb_crc32c_names[i]);
        if (!f)
            continue;
        if (f(0, "123456789", 9) != 0xE3069283u || f(f(0, "12345", 5), "6789", 4) != 0xE3069283u)
            fails++;
        for (size_t off = 0; off < 9; off++)
            for (size_t n = 0; n <= 300; n++)
                if (f(0, buf + off, n) != table(0, buf + off, n))
                    fails++;
        if (f(0, buf, sizeof(buf)) != table(0, buf, sizeof(buf)))
            fails++;
        printf(" %s", kb_crc32c_names[i]);
    }
    printf(" active=%s\n", kb_crc32c_active());
    if (kb_crc32c(0, "123456789", 9) != 0xE3069283u)
        fails++;
    if (fails) {
        fprintf(stderr, "%d CRC-32C checks failed\n", fails);
        return 1;
    }
    return 0;
}
