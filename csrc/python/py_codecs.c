/*
 * py_codecs.c - kbench._native codec functions.
 *
 * Inputs are any C-contiguous buffer-protocol object ("y*"), never copied.
 * Output bytes are preallocated at their bound and shrunk in place.  The GIL
 * is released around every codec call.
 */
#include "py_codecs.h"

#include <limits.h>
#include <string.h>

#include "codecs.h"
#include "py_error.h"

PyObject *kb_CodecError = NULL;

int kb_py_codec_arg(const char *name, PyObject *level, int *codec, int *eff_level) {
    kb_codec_t c;
    kb_error err = KB_ERROR_INIT;
    if (kb_codec_parse(name, &c) != KB_OK) {
        PyErr_Format(kb_CodecError, "unknown codec '%s'; use one of none, gzip, snappy, lz4, zstd", name);
        return -1;
    }
    int lv = KB_LEVEL_DEFAULT;
    if (level && level != Py_None) {
        long v = PyLong_AsLong(level);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(kb_CodecError, "level must be an integer or None");
            return -1;
        }
        if (v < INT_MIN + 1 || v > INT_MAX) {
            PyErr_Format(kb_CodecError, "%s level %ld out of range", name, v);
            return -1;
        }
        lv = (int)v;
    }
    if (kb_codec_level(c, lv, eff_level, &err) != KB_OK) {
        kb_py_raise(kb_CodecError, &err);
        return -1;
    }
    *codec = (int)c;
    return 0;
}

PyDoc_STRVAR(compress_doc,
             "compress(data, codec, level=None) -> bytes\n\n"
             "Compress a buffer in Kafka's framing for codec (none, gzip, snappy, lz4, zstd).\n"
             "level follows Kafka's ranges (KIP-390); None takes the codec's default.");

static PyObject *py_compress(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"data", "codec", "level", NULL};
    Py_buffer in;
    const char *name;
    PyObject *level = Py_None;
    int codec, lv;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*s|O:compress", kwlist, &in, &name, &level))
        return NULL;
    PyObject *out = NULL;
    kb_codec_ctx *ctx = NULL;
    if (kb_py_codec_arg(name, level, &codec, &lv) < 0)
        goto done;
    size_t n = (size_t)in.len;
    size_t cap = kb_compress_bound((kb_codec_t)codec, n);
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
    ctx = kb_codec_ctx_new();
    if (!out || !ctx) {
        Py_CLEAR(out);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    kb_error err = KB_ERROR_INIT;
    size_t olen = 0;
    int rc;
    uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    rc = kb_compress(ctx, (kb_codec_t)codec, lv, in.buf, n, dst, cap, &olen, &err);
    Py_END_ALLOW_THREADS
    if (rc != KB_OK) {
        Py_CLEAR(out);
        kb_py_raise(kb_CodecError, &err);
        goto done;
    }
    if (_PyBytes_Resize(&out, (Py_ssize_t)olen) < 0)
        out = NULL;
done:
    kb_codec_ctx_free(ctx);
    PyBuffer_Release(&in);
    return out;
}

PyDoc_STRVAR(decompress_doc,
             "decompress(data, codec, max_size) -> bytes\n\n"
             "Decompress a Kafka-framed buffer.  Output larger than max_size raises\n"
             "CodecError (decompression bombs fail cleanly); malformed input raises CodecError.");

static PyObject *py_decompress(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"data", "codec", "max_size", NULL};
    Py_buffer in;
    const char *name;
    Py_ssize_t max_size;
    int codec, lv;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*sn:decompress", kwlist, &in, &name, &max_size))
        return NULL;
    PyObject *out = NULL;
    kb_codec_ctx *ctx = NULL;
    if (max_size < 0) {
        PyErr_SetString(kb_CodecError, "max_size must be >= 0");
        goto done;
    }
    if (kb_py_codec_arg(name, Py_None, &codec, &lv) < 0)
        goto done;
    ctx = kb_codec_ctx_new();
    if (!ctx) {
        PyErr_NoMemory();
        goto done;
    }
    size_t n = (size_t)in.len, maxs = (size_t)max_size;
    size_t hint = kb_decompress_hint((kb_codec_t)codec, in.buf, n);
    size_t cap = hint ? hint : (n < 256 ? 1024 : n * 4);
    if (cap > maxs)
        cap = maxs;
    for (;;) {
        out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);
        if (!out)
            goto done;
        kb_error err = KB_ERROR_INIT;
        size_t olen = 0;
        int rc;
        uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(out);
        Py_BEGIN_ALLOW_THREADS
        rc = kb_decompress(ctx, (kb_codec_t)codec, in.buf, n, dst, cap, &olen, &err);
        Py_END_ALLOW_THREADS
        if (rc == KB_OK) {
            if (_PyBytes_Resize(&out, (Py_ssize_t)olen) < 0)
                out = NULL;
            goto done;
        }
        Py_CLEAR(out);
        if (rc == KB_ETOOSMALL && cap < maxs) {
            cap = cap > maxs / 4 ? maxs : cap * 4;
            continue;
        }
        if (rc == KB_ETOOSMALL) /* the core knows the buffer, the binding the caller's max_size */
            kb_error_set(&err, KB_ETOOSMALL, -1,
                         "%s: decompressed size exceeds max_size=%zd; raise max_size if the input is trusted", name,
                         max_size);
        kb_py_raise(kb_CodecError, &err);
        goto done;
    }
done:
    kb_codec_ctx_free(ctx);
    PyBuffer_Release(&in);
    return out;
}

PyDoc_STRVAR(available_doc, "available() -> list[str]\n\nThe codecs this build supports.");

static PyObject *py_available(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *l = PyList_New(0);
    if (!l)
        return NULL;
    for (int i = 0; i < KB_CODEC_COUNT; i++) {
        PyObject *s = PyUnicode_FromString(kb_codec_name(i));
        if (!s || PyList_Append(l, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(s);
    }
    return l;
}

PyDoc_STRVAR(lib_versions_doc, "codec_library_versions() -> dict[str, str]\n\nVersions of zlib, snappy, liblz4, libzstd in use.");

static PyObject *py_lib_versions(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue("{s:s,s:s,s:s,s:s}", "zlib", kb_codec_lib_version(KB_CODEC_GZIP), "snappy",
                         kb_codec_lib_version(KB_CODEC_SNAPPY), "lz4", kb_codec_lib_version(KB_CODEC_LZ4),
                         "zstd", kb_codec_lib_version(KB_CODEC_ZSTD));
}

PyDoc_STRVAR(zstd_cparams_doc,
             "zstd_cparams(level) -> dict\n\n"
             "zstd parameters kbench uses at level (a stream of unknown size, as zstd-jni):\n"
             "wlog, clog, hlog, slog, mml, tlen, strat (the zstd CLI's --zstd= names).");

static PyObject *py_zstd_cparams(PyObject *self, PyObject *arg) {
    (void)self;
    int codec, lv, p[7];
    if (kb_py_codec_arg("zstd", arg, &codec, &lv) < 0)
        return NULL;
    kb_zstd_cparams(lv, p);
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "wlog", p[0], "clog", p[1], "hlog", p[2], "slog", p[3],
                         "mml", p[4], "tlen", p[5], "strat", p[6]);
}

static PyMethodDef methods[] = {
    {"zstd_cparams", py_zstd_cparams, METH_O, zstd_cparams_doc},
    {"compress", (PyCFunction)(void (*)(void))py_compress, METH_VARARGS | METH_KEYWORDS, compress_doc},
    {"decompress", (PyCFunction)(void (*)(void))py_decompress, METH_VARARGS | METH_KEYWORDS, decompress_doc},
    {"available", py_available, METH_NOARGS, available_doc},
    {"codec_library_versions", py_lib_versions, METH_NOARGS, lib_versions_doc},
    {NULL, NULL, 0, NULL},
};

int kb_py_codecs_init(PyObject *m) {
    kb_CodecError = PyErr_NewExceptionWithDoc("kbench.CodecError",
                                              "A codec failed; the message is the library's own.",
                                              PyExc_ValueError, NULL);
    if (!kb_CodecError)
        return -1;
    if (PyModule_AddObjectRef(m, "CodecError", kb_CodecError) < 0)
        return -1;
    return PyModule_AddFunctions(m, methods);
}
