/* The C tests' one harness: CHECK(cond) and CHECK_MSG(cond, fmt, ...) count checks and
 * failures and print each failure with its file and line; a test's main() ends with
 * check_summary(), or prints checks/failures in its own words.
 * Included by every tests/c/test_*.c (one translation unit each). */
#ifndef KB_TEST_CHECK_H
#define KB_TEST_CHECK_H

#include <stdio.h>

static int checks, failures;

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(c)) {                                                                                \
            failures++;                                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);                  \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(c, ...)                                                                          \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(c)) {                                                                                \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#endif
