/*
 * error.h - the one error convention of csrc/core.
 *
 * A function that can fail takes `kb_error *e` as its last argument and
 * returns KB_OK (0), or a negative value on failure: the KB_E* code where the
 * function raises the error itself, any negative value where it passes on a
 * callee's.  On failure e->code holds the KB_E* code, e->msg a one-line
 * NUL-terminated message (the library's own message where there is one, at
 * most KB_ERRLEN bytes) and, for an error about input bytes, e->offset their
 * offset (-1 otherwise).  Callers test `< 0` and read e->code.  e may be NULL
 * (the caller wants no detail).  kb_strerror() names a code, as
 * strerror() does for errno.  Functions returning a pointer return NULL on
 * failure and fill e the same way.  Allocation and lookup primitives
 * (kb_buf_reserve, kb_props_add, kb_codec_parse, *_new) only return -1/NULL:
 * their callers report KB_ENOMEM or KB_EINVAL with the context.
 *
 * KB_ERRLEN is the one size of every error message buffer, per-row status
 * messages (data, not failures) included.  The Python bindings turn a
 * kb_error into an exception in one place: kb_py_raise() (csrc/python/py_error.h).
 */
#ifndef KBENCH_ERROR_H
#define KBENCH_ERROR_H

#include <stdint.h>

#define KB_ERRLEN 512

enum {
    KB_OK = 0,
    KB_ERR = -1,       /* malformed input or a library failure; the message says which */
    KB_ETOOSMALL = -2, /* the output would not fit the buffer given */
    KB_ENOMEM = -3,    /* out of memory */
    KB_EINVAL = -4,    /* an argument or setting out of range */
    KB_EIO = -5,       /* a system call failed (file, /proc, thread) */
    KB_EKAFKA = -6     /* librdkafka or the broker refused or failed */
};

/** An error: code (KB_E*), message, and byte offset in the input (-1 when not about input). */
typedef struct {
    int code;
    char msg[KB_ERRLEN];
    int64_t offset;
} kb_error;

/** An empty error (code KB_OK, no message, offset -1), for initialising a kb_error. */
#define KB_ERROR_INIT {.code = KB_OK, .msg = "", .offset = -1}

/** Fill e (when not NULL) with code, offset and a printf-style message; returns code. */
int kb_error_set(kb_error *e, int code, int64_t offset, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/** Reset e (when not NULL) to KB_ERROR_INIT. */
void kb_error_clear(kb_error *e);

/** A short description of a KB_E* code ("out of memory"); static storage. */
const char *kb_strerror(int code);

#endif
