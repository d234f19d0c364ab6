/*
 * codecbench.c - CodecBench(data, block_size, codec, level=None).
 *
 * The corpus is cut into blocks of block_size bytes (the last may be short);
 * contexts and all buffers are made in the constructor, outside any timed
 * region.  compress(loops) and decompress(loops) run the whole corpus loops
 * times with the GIL released and return the elapsed monotonic nanoseconds.
 * After each timed decompress run every block is compared with the input
 * (outside the timed region); a mismatch raises CodecError.
 */
#include "codecbench.h"

#include <string.h>

#include "clock.h"
#include "codecs.h"
#include "py_codecs.h"

typedef struct {
    PyObject_HEAD
    Py_buffer in;
    int have_in;
    size_t block;
    size_t nblocks;
    int codec;
    int level;
    size_t bound;       /* per-block compressed capacity */
    uint8_t *cbuf;      /* nblocks * bound */
    size_t *clen;       /* compressed length per block */
    uint8_t *dbuf;      /* decompressed output, same layout as input */
    kb_codec_ctx *ctx;
} CodecBench;

static size_t blk_len(const CodecBench *b, size_t i) {
    size_t n = (size_t)b->in.len, off = i * b->block;
    return n - off < b->block ? n - off : b->block;
}

/* Compress every block once; returns KB_OK or an error code with err set. */
static int run_compress(CodecBench *b, long loops, char *err, size_t errlen) {
    const uint8_t *src = b->in.buf;
    for (long l = 0; l < loops; l++) {
        for (size_t i = 0; i < b->nblocks; i++) {
            size_t olen = 0;
            int rc = kb_compress(b->ctx, (kb_codec_t)b->codec, b->level, src + i * b->block, blk_len(b, i),
                                 b->cbuf + i * b->bound, b->bound, &olen, err, errlen);
            if (rc != KB_OK)
                return rc;
            b->clen[i] = olen;
        }
    }
    return KB_OK;
}

static int run_decompress(CodecBench *b, long loops, char *err, size_t errlen) {
    for (long l = 0; l < loops; l++) {
        for (size_t i = 0; i < b->nblocks; i++) {
            size_t olen = 0, want = blk_len(b, i);
            int rc = kb_decompress(b->ctx, (kb_codec_t)b->codec, b->cbuf + i * b->bound, b->clen[i],
                                   b->dbuf + i * b->block, want, &olen, err, errlen);
            if (rc != KB_OK)
                return rc;
            if (olen != want) {
                snprintf(err, errlen, "block %zu decompressed to %zu bytes, expected %zu", i, olen, want);
                return KB_ERR;
            }
        }
    }
    return KB_OK;
}

static int set_error(int rc, const char *err) {
    PyErr_SetString(kb_CodecError, rc == KB_ETOOSMALL ? "output buffer too small" : err);
    return -1;
}

static int cb_init(CodecBench *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"data", "block_size", "codec", "level", NULL};
    Py_ssize_t block;
    const char *name;
    PyObject *level = Py_None;
    if (self->have_in) {
        PyErr_SetString(PyExc_RuntimeError, "CodecBench is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*ns|O:CodecBench", kwlist, &self->in, &block, &name, &level))
        return -1;
    self->have_in = 1;
    if (block <= 0) {
        PyErr_SetString(kb_CodecError, "block_size must be > 0");
        return -1;
    }
    if (self->in.len == 0) {
        PyErr_SetString(kb_CodecError, "corpus is empty");
        return -1;
    }
    if (kb_py_codec_arg(name, level, &self->codec, &self->level) < 0)
        return -1;
    self->block = (size_t)block;
    size_t n = (size_t)self->in.len;
    self->nblocks = (n + self->block - 1) / self->block;
    self->bound = kb_compress_bound((kb_codec_t)self->codec, self->block);
    if (self->nblocks > SIZE_MAX / self->bound) {
        PyErr_NoMemory();
        return -1;
    }
    self->cbuf = PyMem_RawMalloc(self->nblocks * self->bound);
    self->clen = PyMem_RawCalloc(self->nblocks, sizeof(size_t));
    self->dbuf = PyMem_RawMalloc(n);
    self->ctx = kb_codec_ctx_new();
    if (!self->cbuf || !self->clen || !self->dbuf || !self->ctx) {
        PyErr_NoMemory();
        return -1;
    }
    char err[KB_ERRLEN] = "";
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = run_compress(self, 1, err, sizeof(err));
    if (rc == KB_OK)
        rc = run_decompress(self, 1, err, sizeof(err));
    Py_END_ALLOW_THREADS
    if (rc != KB_OK)
        return set_error(rc, err);
    if (memcmp(self->dbuf, self->in.buf, n) != 0) {
        PyErr_SetString(kb_CodecError, "round trip mismatch: decompressed data differs from the input");
        return -1;
    }
    return 0;
}

static void cb_dealloc(CodecBench *self) {
    if (self->have_in)
        PyBuffer_Release(&self->in);
    PyMem_RawFree(self->cbuf);
    PyMem_RawFree(self->clen);
    PyMem_RawFree(self->dbuf);
    kb_codec_ctx_free(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int parse_loops(PyObject *arg, long *loops) {
    *loops = PyLong_AsLong(arg);
    if (*loops == -1 && PyErr_Occurred())
        return -1;
    if (*loops < 1) {
        PyErr_SetString(PyExc_ValueError, "loops must be >= 1");
        return -1;
    }
    return 0;
}

static int ready(CodecBench *self) {
    if (!self->ctx) {
        PyErr_SetString(PyExc_RuntimeError, "CodecBench was not initialised");
        return -1;
    }
    return 0;
}

static PyObject *cb_compress(CodecBench *self, PyObject *arg) {
    long loops;
    if (ready(self) < 0 || parse_loops(arg, &loops) < 0)
        return NULL;
    char err[KB_ERRLEN] = "";
    int rc;
    int64_t t0, t1;
    Py_BEGIN_ALLOW_THREADS
    t0 = kb_now_ns();
    rc = run_compress(self, loops, err, sizeof(err));
    t1 = kb_now_ns();
    Py_END_ALLOW_THREADS
    if (rc != KB_OK) {
        set_error(rc, err);
        return NULL;
    }
    return PyLong_FromLongLong(t1 - t0);
}

static PyObject *cb_decompress(CodecBench *self, PyObject *arg) {
    long loops;
    if (ready(self) < 0 || parse_loops(arg, &loops) < 0)
        return NULL;
    char err[KB_ERRLEN] = "";
    int rc, same = 0;
    int64_t t0, t1;
    memset(self->dbuf, 0, (size_t)self->in.len);
    Py_BEGIN_ALLOW_THREADS
    t0 = kb_now_ns();
    rc = run_decompress(self, loops, err, sizeof(err));
    t1 = kb_now_ns();
    if (rc == KB_OK)
        same = memcmp(self->dbuf, self->in.buf, (size_t)self->in.len) == 0;
    Py_END_ALLOW_THREADS
    if (rc != KB_OK) {
        set_error(rc, err);
        return NULL;
    }
    if (!same) {
        PyErr_SetString(kb_CodecError, "round trip mismatch: decompressed data differs from the input");
        return NULL;
    }
    return PyLong_FromLongLong(t1 - t0);
}

static PyObject *cb_compressed_size(CodecBench *self, void *closure) {
    (void)closure;
    size_t t = 0;
    for (size_t i = 0; self->clen && i < self->nblocks; i++)
        t += self->clen[i];
    return PyLong_FromSize_t(t);
}

static PyObject *cb_input_size(CodecBench *self, void *closure) {
    (void)closure;
    return PyLong_FromSsize_t(self->have_in ? self->in.len : 0);
}

static PyObject *cb_nblocks(CodecBench *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->nblocks);
}

static PyObject *cb_level(CodecBench *self, void *closure) {
    (void)closure;
    return PyLong_FromLong(self->level);
}

static PyMethodDef cb_methods[] = {
    {"compress", (PyCFunction)cb_compress, METH_O,
     "compress(loops) -> int: ns to compress every block loops times (GIL released)"},
    {"decompress", (PyCFunction)cb_decompress, METH_O,
     "decompress(loops) -> int: ns to decompress every block loops times; output verified after"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef cb_getset[] = {
    {"compressed_size", (getter)cb_compressed_size, NULL, "total compressed bytes of all blocks", NULL},
    {"input_size", (getter)cb_input_size, NULL, "total input bytes", NULL},
    {"nblocks", (getter)cb_nblocks, NULL, "number of blocks", NULL},
    {"level", (getter)cb_level, NULL, "effective codec level", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CodecBenchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kbench._native.CodecBench",
    .tp_basicsize = sizeof(CodecBench),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CodecBench(data, block_size, codec, level=None): timed codec loops over a corpus cut into blocks",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)cb_init,
    .tp_dealloc = (destructor)cb_dealloc,
    .tp_methods = cb_methods,
    .tp_getset = cb_getset,
};

int kb_codecbench_init(PyObject *m) {
    if (PyType_Ready(&CodecBenchType) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "CodecBench", (PyObject *)&CodecBenchType);
}
