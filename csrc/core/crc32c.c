/*
 * crc32c.c - CRC-32C: slicing-by-8 table, SSE4.2 and ARMv8 CRC paths.
 */
#include "crc32c.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

const char *const kb_crc32c_names[] = {"table", "sse4.2", "armv8", NULL};

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static int table_ready;

static void table_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_table(uint32_t crc, const void *buf, size_t n) {
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        table_init(); /* idempotent: racing threads write identical values */
    const uint8_t *p = buf;
    uint32_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
        n--;
    }
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= c;
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
            table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^ table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
    return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const void *buf, size_t n) {
    const uint8_t *p = buf;
    uint64_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    while (n >= 32) {
        uint64_t a, b, d, e;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        memcpy(&d, p + 16, 8);
        memcpy(&e, p + 24, 8);
        c = _mm_crc32_u64(c, a);
        c = _mm_crc32_u64(c, b);
        c = _mm_crc32_u64(c, d);
        c = _mm_crc32_u64(c, e);
        p += 32;
        n -= 32;
    }
    while (n >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c = _mm_crc32_u64(c, a);
        p += 8;
        n -= 8;
    }
    while (n--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

static int have_sse42(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    return (c & bit_SSE4_2) != 0;
}
#endif

#if defined(__aarch64__)
#if defined(__clang__)
#define KB_TARGET_CRC __attribute__((target("crc")))
#define KB_CRC32CB __builtin_arm_crc32cb
#define KB_CRC32CD __builtin_arm_crc32cd
#else
#define KB_TARGET_CRC __attribute__((target("+crc")))
#define KB_CRC32CB __builtin_aarch64_crc32cb
#define KB_CRC32CD __builtin_aarch64_crc32cx
#endif
KB_TARGET_CRC static uint32_t crc_armv8(uint32_t crc, const void *buf, size_t n) {
    const uint8_t *p = buf;
    uint32_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = KB_CRC32CB(c, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c = KB_CRC32CD(c, a);
        p += 8;
        n -= 8;
    }
    while (n--)
        c = KB_CRC32CB(c, *p++);
    return ~c;
}

static int have_armv8_crc(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#endif

kb_crc32c_fn kb_crc32c_impl(const char *name) {
    if (!strcmp(name, "table"))
        return crc_table;
#if defined(__x86_64__)
    if (!strcmp(name, "sse4.2"))
        return have_sse42() ? crc_sse42 : NULL;
#endif
#if defined(__aarch64__)
    if (!strcmp(name, "armv8"))
        return have_armv8_crc() ? crc_armv8 : NULL;
#endif
    return NULL;
}

static kb_crc32c_fn active_fn;
static const char *active_name;

static void choose(void) {
    kb_crc32c_fn f = crc_table;
    const char *nm = "table";
#if defined(__x86_64__)
    if (have_sse42()) {
        f = crc_sse42;
        nm = "sse4.2";
    }
#endif
#if defined(__aarch64__)
    if (have_armv8_crc()) {
        f = crc_armv8;
        nm = "armv8";
    }
#endif
    __atomic_store_n(&active_name, nm, __ATOMIC_RELAXED);
    __atomic_store_n(&active_fn, f, __ATOMIC_RELEASE);
}

uint32_t kb_crc32c(uint32_t crc, const void *buf, size_t n) {
    kb_crc32c_fn f = __atomic_load_n(&active_fn, __ATOMIC_ACQUIRE);
    if (!f) {
        choose();
        f = __atomic_load_n(&active_fn, __ATOMIC_ACQUIRE);
    }
    return f(crc, buf, n);
}

const char *kb_crc32c_active(void) {
    if (!__atomic_load_n(&active_fn, __ATOMIC_ACQUIRE))
        choose();
    return __atomic_load_n(&active_name, __ATOMIC_RELAXED);
}
