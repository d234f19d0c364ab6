/*
 * py_codecbench.c - CodecBench(data, block_size, codec, level=None) over csrc/core/codecbench.c.
 *
 * compress(loops) and decompress(loops) run the whole corpus loops times with
 * the GIL released and return the elapsed monotonic nanoseconds.  After each
 * timed decompress run every block is compared with the input (outside the
 * timed region); a mismatch raises CodecError.
 */
#include "py_codecbench.h"

#include <string.h>

#include "clock.h"
#include "codecbench.h"
#include "codecs.h"
#include "py_codecs.h"
#include "py_error.h"

typedef struct {
    PyObject_HEAD
    Py_buffer in;
    int have_in;
    kb_codecbench b;
} CodecBench;

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
    int codec, lvl;
    if (kb_py_codec_arg(name, level, &codec, &lvl) < 0)
        return -1;
    kb_error err = KB_ERROR_INIT;
    if (kb_codecbench_init(&self->b, self->in.buf, (size_t)self->in.len, (size_t)block, (kb_codec_t)codec, lvl,
                           &err) < 0) {
        kb_py_raise(kb_CodecError, &err);
        return -1;
    }
    int rc, same = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = kb_codecbench_compress(&self->b, 1, &err);
    if (rc == KB_OK)
        rc = kb_codecbench_decompress(&self->b, 1, &err);
    if (rc == KB_OK)
        same = kb_codecbench_verify(&self->b);
    Py_END_ALLOW_THREADS
    if (rc != KB_OK) {
        kb_py_raise(kb_CodecError, &err);
        return -1;
    }
    if (!same) {
        PyErr_SetString(kb_CodecError, "round trip mismatch: decompressed data differs from the input");
        return -1;
    }
    return 0;
}

static void cb_dealloc(CodecBench *self) {
    kb_codecbench_free(&self->b);
    if (self->have_in)
        PyBuffer_Release(&self->in);
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
    if (!self->b.ctx) {
        PyErr_SetString(PyExc_RuntimeError, "CodecBench was not initialised");
        return -1;
    }
    return 0;
}

static PyObject *cb_compress(CodecBench *self, PyObject *arg) {
    long loops;
    if (ready(self) < 0 || parse_loops(arg, &loops) < 0)
        return NULL;
    kb_error err = KB_ERROR_INIT;
    int rc;
    int64_t t0, t1;
    Py_BEGIN_ALLOW_THREADS
    t0 = kb_now_ns();
    rc = kb_codecbench_compress(&self->b, loops, &err);
    t1 = kb_now_ns();
    Py_END_ALLOW_THREADS
    if (rc != KB_OK)
        return kb_py_raise(kb_CodecError, &err);
    return PyLong_FromLongLong(t1 - t0);
}

static PyObject *cb_decompress(CodecBench *self, PyObject *arg) {
    long loops;
    if (ready(self) < 0 || parse_loops(arg, &loops) < 0)
        return NULL;
    kb_error err = KB_ERROR_INIT;
    int rc, same = 0;
    int64_t t0, t1;
    memset(self->b.dbuf, 0, self->b.n);
    Py_BEGIN_ALLOW_THREADS
    t0 = kb_now_ns();
    rc = kb_codecbench_decompress(&self->b, loops, &err);
    t1 = kb_now_ns();
    if (rc == KB_OK)
        same = kb_codecbench_verify(&self->b);
    Py_END_ALLOW_THREADS
    if (rc != KB_OK)
        return kb_py_raise(kb_CodecError, &err);
    if (!same) {
        PyErr_SetString(kb_CodecError, "round trip mismatch: decompressed data differs from the input");
        return NULL;
    }
    return PyLong_FromLongLong(t1 - t0);
}

static PyObject *cb_compressed_size(CodecBench *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(kb_codecbench_compressed_size(&self->b));
}

static PyObject *cb_input_size(CodecBench *self, void *closure) {
    (void)closure;
    return PyLong_FromSsize_t(self->have_in ? self->in.len : 0);
}

static PyObject *cb_nblocks(CodecBench *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->b.nblocks);
}

static PyObject *cb_level(CodecBench *self, void *closure) {
    (void)closure;
    return PyLong_FromLong(self->b.level);
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

int kb_py_codecbench_init(PyObject *m) {
    if (PyType_Ready(&CodecBenchType) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "CodecBench", (PyObject *)&CodecBenchType);
}
