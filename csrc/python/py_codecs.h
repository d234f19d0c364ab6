/*
 * py_codecs.h - Python bindings of the codecs: compress, decompress,
 * available, library versions, and the kbench.CodecError exception.
 */
#ifndef KBENCH_PY_CODECS_H
#define KBENCH_PY_CODECS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/** kbench.CodecError, created by kb_py_codecs_init(); borrowed reference. */
extern PyObject *kb_CodecError;

/**
 * Parse "name" or a codec name plus an optional Python level (None = the
 * codec's default) into a codec id and an effective level; sets CodecError
 * and returns -1 on failure.
 */
int kb_py_codec_arg(const char *name, PyObject *level, int *codec, int *eff_level);

/** Add the codec functions and CodecError to module m; 0 or -1. */
int kb_py_codecs_init(PyObject *m);

#endif
