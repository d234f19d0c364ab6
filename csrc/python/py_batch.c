/*
 * py_batch.c - kbench._native: crc32c, batch_encode, batch_decode, segment_scan.
 *
 * Inputs are any buffer-protocol objects; the GIL is released around the
 * CRC, encoding, decompression and scanning work.
 */
#include "py_batch.h"

#include <limits.h>
#include <string.h>

#include "codecs.h"
#include "crc32c.h"
#include "py_codecs.h"
#include "py_error.h"
#include "segment.h"

PyObject *kb_BatchError = NULL;

/* ---- crc32c ---------------------------------------------------------- */

PyDoc_STRVAR(crc32c_doc, "crc32c(data, impl=None) -> int\n\n"
                         "CRC-32C of a buffer; impl names one implementation ('table', 'sse4.2', 'armv8').");

static PyObject *py_crc32c(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"data", "impl", NULL};
    Py_buffer in;
    const char *impl = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|z:crc32c", kwlist, &in, &impl))
        return NULL;
    kb_crc32c_fn f = kb_crc32c;
    if (impl) {
        f = kb_crc32c_impl(impl);
        if (!f) {
            PyBuffer_Release(&in);
            return PyErr_Format(PyExc_ValueError, "CRC-32C implementation '%s' is not available on this CPU/build",
                                impl);
        }
    }
    uint32_t c;
    Py_BEGIN_ALLOW_THREADS
    c = f(0, in.buf, (size_t)in.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *py_crc32c_impls(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *l = PyList_New(0);
    for (int i = 0; l && kb_crc32c_names[i]; i++) {
        if (!kb_crc32c_impl(kb_crc32c_names[i]))
            continue;
        PyObject *s = PyUnicode_FromString(kb_crc32c_names[i]);
        int rc = s ? PyList_Append(l, s) : -1;
        Py_XDECREF(s);
        if (rc < 0)
            Py_CLEAR(l);
    }
    return l;
}

static PyObject *py_crc32c_active(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(kb_crc32c_active());
}

/* ---- encode ---------------------------------------------------------- */

/* Buffers borrowed from Python objects for the duration of an encode. */
typedef struct {
    Py_buffer *bufs;
    size_t n, cap;
} bufset;

static int bufset_get(bufset *s, PyObject *o, const uint8_t **p, int32_t *len, int allow_null, const char *what) {
    if (o == Py_None) {
        if (!allow_null) {
            PyErr_Format(PyExc_TypeError, "%s may not be None", what);
            return -1;
        }
        *p = NULL;
        *len = -1;
        return 0;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        Py_buffer *nb = PyMem_Realloc(s->bufs, cap * sizeof(Py_buffer));
        if (!nb) {
            PyErr_NoMemory();
            return -1;
        }
        s->bufs = nb;
        s->cap = cap;
    }
    Py_buffer *b = &s->bufs[s->n];
    if (PyObject_GetBuffer(o, b, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes-like or None, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    s->n++;
    if (b->len > INT32_MAX) {
        PyErr_Format(kb_BatchError, "%s of %zd bytes exceeds Kafka's limit", what, b->len);
        return -1;
    }
    *p = b->buf;
    *len = (int32_t)b->len;
    return 0;
}

static void bufset_release(bufset *s) {
    for (size_t i = 0; i < s->n; i++)
        PyBuffer_Release(&s->bufs[i]);
    PyMem_Free(s->bufs);
}

PyDoc_STRVAR(batch_encode_doc,
             "batch_encode(records, codec, level, base_offset, partition_leader_epoch, producer_id, producer_epoch,\n"
             "             base_sequence, transactional, librdkafka_framing) -> (bytes, stored_codec)\n\n"
             "records: sequence of (key|None, value|None, timestamp_ms, [(hkey, hvalue|None), ...]).");

static PyObject *py_batch_encode(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *recs;
    const char *cname;
    PyObject *level;
    long long base_offset, producer_id;
    int ple, epoch, seq, txn, rdk;
    if (!PyArg_ParseTuple(args, "OsOLiLiipp:batch_encode", &recs, &cname, &level, &base_offset, &ple, &producer_id,
                          &epoch, &seq, &txn, &rdk))
        return NULL;
    int codec, lv;
    if (kb_py_codec_arg(cname, level, &codec, &lv) < 0)
        return NULL;
    if (epoch < INT16_MIN || epoch > INT16_MAX)
        return PyErr_Format(kb_BatchError, "producer_epoch %d is not an int16", epoch);
    PyObject *seqf = PySequence_Fast(recs, "records must be a sequence");
    if (!seqf)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seqf);
    PyObject *result = NULL;
    bufset bs = {0};
    kb_record *rv = NULL;
    kb_header *hv = NULL;
    size_t nh = 0;
    kb_buf out = {0};
    kb_batch_builder b;
    kb_bb_init(&b);
    kb_codec_ctx *ctx = NULL;
    if (n == 0) {
        PyErr_SetString(kb_BatchError, "a batch needs at least one record");
        goto done;
    }
    rv = PyMem_Calloc((size_t)n, sizeof(kb_record));
    if (!rv) {
        PyErr_NoMemory();
        goto done;
    }
    /* first pass: count headers */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seqf, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 4) {
            PyErr_Format(PyExc_TypeError, "record %zd must be a tuple (key, value, timestamp, headers)", i);
            goto done;
        }
        Py_ssize_t k = PySequence_Size(PyTuple_GET_ITEM(t, 3));
        if (k < 0)
            goto done;
        nh += (size_t)k;
    }
    hv = PyMem_Calloc(nh ? nh : 1, sizeof(kb_header));
    if (!hv) {
        PyErr_NoMemory();
        goto done;
    }
    size_t hi = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seqf, i);
        kb_record *r = &rv[i];
        if (bufset_get(&bs, PyTuple_GET_ITEM(t, 0), &r->key, &r->key_len, 1, "record key") < 0 ||
            bufset_get(&bs, PyTuple_GET_ITEM(t, 1), &r->value, &r->value_len, 1, "record value") < 0)
            goto done;
        r->timestamp = PyLong_AsLongLong(PyTuple_GET_ITEM(t, 2));
        if (r->timestamp == -1 && PyErr_Occurred())
            goto done;
        PyObject *hs = PySequence_Fast(PyTuple_GET_ITEM(t, 3), "headers must be a sequence");
        if (!hs)
            goto done;
        Py_ssize_t k = PySequence_Fast_GET_SIZE(hs);
        r->headers = hv + hi;
        r->header_count = (uint32_t)k;
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *ht = PySequence_Fast_GET_ITEM(hs, j);
            if (!PyTuple_Check(ht) || PyTuple_GET_SIZE(ht) != 2 || hi >= nh) {
                Py_DECREF(hs);
                PyErr_Format(PyExc_TypeError, "header %zd of record %zd must be a tuple (key, value)", j, i);
                goto done;
            }
            kb_header *h = &hv[hi++];
            if (bufset_get(&bs, PyTuple_GET_ITEM(ht, 0), &h->key, &h->key_len, 0, "header key") < 0 ||
                bufset_get(&bs, PyTuple_GET_ITEM(ht, 1), &h->value, &h->value_len, 1, "header value") < 0) {
                Py_DECREF(hs);
                goto done;
            }
        }
        Py_DECREF(hs);
    }
    ctx = kb_codec_ctx_new();
    if (!ctx) {
        PyErr_NoMemory();
        goto done;
    }
    kb_batch_meta meta = {.base_offset = base_offset,
                          .partition_leader_epoch = ple,
                          .producer_id = producer_id,
                          .producer_epoch = (int16_t)epoch,
                          .base_sequence = seq,
                          .transactional = txn};
    kb_error e = KB_ERROR_INIT;
    int rc = 0, stored = 0;
    Py_BEGIN_ALLOW_THREADS
    kb_bb_reset(&b, &meta);
    for (Py_ssize_t i = 0; i < n && rc == 0; i++)
        rc = kb_bb_append(&b, &rv[i], &e);
    if (rc == 0)
        rc = kb_bb_finish(&b, ctx, (kb_codec_t)codec, lv, rdk, &out, &stored, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        kb_py_raise(kb_BatchError, &e);
        goto done;
    }
    result = Py_BuildValue("(y#s)", (const char *)out.p, (Py_ssize_t)out.len, kb_codec_name(stored));
done:
    kb_codec_ctx_free(ctx);
    kb_bb_free(&b);
    kb_buf_free(&out);
    bufset_release(&bs);
    PyMem_Free(rv);
    PyMem_Free(hv);
    Py_DECREF(seqf);
    return result;
}

/* ---- decode ---------------------------------------------------------- */

static PyObject *bytes_or_none(const uint8_t *p, int32_t len) {
    if (len < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)p, len);
}

PyDoc_STRVAR(batch_decode_doc,
             "batch_decode(data, max_uncompressed, verify_crc=True) -> (header: dict, records: list)\n\n"
             "records: (offset_delta, timestamp_delta, attributes, key, value, [(hkey, hvalue), ...]).\n"
             "The buffer must hold exactly one batch.  Raises BatchError with .offset.");

static PyObject *py_batch_decode(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"data", "max_uncompressed", "verify_crc", NULL};
    Py_buffer in;
    Py_ssize_t maxu;
    int verify = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*n|p:batch_decode", kwlist, &in, &maxu, &verify))
        return NULL;
    PyObject *result = NULL, *hdr = NULL, *list = NULL;
    kb_buf scratch = {0};
    kb_codec_ctx *ctx = kb_codec_ctx_new();
    if (!ctx) {
        PyErr_NoMemory();
        goto done;
    }
    if (maxu < 0) {
        PyErr_SetString(kb_BatchError, "max_uncompressed must be >= 0");
        goto done;
    }
    kb_batch_view v;
    kb_error e = KB_ERROR_INIT;
    int rc;
    size_t n = (size_t)in.len;
    Py_BEGIN_ALLOW_THREADS
    rc = kb_batch_open(ctx, in.buf, n, verify, (size_t)maxu, &scratch, &v, &e);
    if (rc == 0)
        rc = kb_batch_check_records(&v, &e);
    if (rc == 0 && v.size != n) {
        kb_error_set(&e, KB_ERR, (int64_t)v.size, "%zu trailing bytes after the batch; decode one batch at a time",
                     n - v.size);
        rc = -1;
    }
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        kb_py_raise(kb_BatchError, &e);
        goto done;
    }
    const kb_batch_header *h = &v.h;
    hdr = Py_BuildValue("{s:L,s:i,s:i,s:i,s:k,s:k,s:i,s:i,s:L,s:L,s:L,s:i,s:i,s:i,s:s,s:n}", "base_offset",
                        (long long)h->base_offset, "batch_length", h->batch_length, "partition_leader_epoch",
                        h->partition_leader_epoch, "magic", (int)h->magic, "crc", (unsigned long)h->crc,
                        "crc_computed", (unsigned long)kb_batch_crc_compute(in.buf, h), "attributes",
                        (int)h->attributes, "last_offset_delta", h->last_offset_delta, "base_timestamp",
                        (long long)h->base_timestamp, "max_timestamp", (long long)h->max_timestamp, "producer_id",
                        (long long)h->producer_id, "producer_epoch", (int)h->producer_epoch, "base_sequence",
                        h->base_sequence, "records_count", h->records_count, "codec", kb_codec_name(v.codec),
                        "uncompressed_size", (Py_ssize_t)v.records_len);
    list = PyList_New(0);
    if (!hdr || !list)
        goto done;
    size_t pos = 0;
    for (int32_t k = 0; k < h->records_count; k++) {
        kb_record_view r;
        if (kb_record_read(v.records, v.records_len, &pos, &r, KB_BATCH_OVERHEAD, v.codec != 0, &e) < 0) {
            kb_py_raise(kb_BatchError, &e); /* cannot happen: checked above */
            goto done;
        }
        PyObject *hl = PyList_New(r.header_count);
        if (!hl)
            goto done;
        size_t hp = 0;
        for (int32_t j = 0; j < r.header_count; j++) {
            kb_header hh;
            kb_record_header_next(r.headers, r.headers_len, &hp, &hh);
            PyObject *ht = Py_BuildValue("(NN)", bytes_or_none(hh.key, hh.key_len), bytes_or_none(hh.value, hh.value_len));
            if (!ht) {
                Py_DECREF(hl);
                goto done;
            }
            PyList_SET_ITEM(hl, j, ht);
        }
        PyObject *t = Py_BuildValue("(iLiNNN)", r.offset_delta, (long long)r.timestamp_delta, (int)r.attributes,
                                    bytes_or_none(r.key, r.key_len), bytes_or_none(r.value, r.value_len), hl);
        if (!t || PyList_Append(list, t) < 0) {
            Py_XDECREF(t);
            goto done;
        }
        Py_DECREF(t);
    }
    result = PyTuple_Pack(2, hdr, list);
done:
    Py_XDECREF(hdr);
    Py_XDECREF(list);
    kb_buf_free(&scratch);
    kb_codec_ctx_free(ctx);
    PyBuffer_Release(&in);
    return result;
}

/* ---- segment scan ---------------------------------------------------- */

PyDoc_STRVAR(segment_scan_doc,
             "segment_scan(data, decompress=True, verify_crc=True, max_uncompressed=256MiB) -> list[tuple]\n\n"
             "One tuple per batch: (position, base_offset, last_offset, count, size, magic, codec, attributes,\n"
             "partition_leader_epoch, producer_id, max_timestamp, crc_valid, uncompressed, status, message).\n"
             "codec is a name or None; crc_valid None when unchecked; uncompressed -1 when unknown.");

static PyObject *rows_to_list(const kb_seg_batch *rows, size_t n) {
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const kb_seg_batch *b = &rows[i];
        PyObject *codec = b->codec >= 0 ? PyUnicode_FromString(kb_codec_name(b->codec)) : Py_NewRef(Py_None);
        PyObject *crc = b->crc_valid < 0 ? Py_NewRef(Py_None) : PyBool_FromLong(b->crc_valid);
        PyObject *t = Py_BuildValue("(KLLiKiNiiLLNLss)", (unsigned long long)b->position, (long long)b->base_offset,
                                    (long long)b->last_offset, b->count, (unsigned long long)b->size, b->magic, codec,
                                    b->attributes, b->partition_leader_epoch, (long long)b->producer_id,
                                    (long long)b->max_timestamp, crc, (long long)b->uncompressed,
                                    kb_seg_status_names[b->status], b->msg);
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    return list;
}

PyDoc_STRVAR(segment_scan_file_doc,
             "segment_scan_file(path, decompress=True, verify_crc=True, max_uncompressed=256MiB, start=0, max_rows=0)\n"
             "-> (list[tuple], next)\n\n"
             "segment_scan over a file read in 8 MiB chunks (no mmap page faults) from file position start, at most\n"
             "max_rows rows (0: all); rows as segment_scan; next is where to continue, None at the end.");

static PyObject *py_segment_scan_file(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"path", "decompress", "verify_crc", "max_uncompressed", "start", "max_rows", NULL};
    PyObject *pathobj;
    int decompress = 1, verify = 1;
    Py_ssize_t maxu = 256 << 20, max_rows = 0;
    unsigned long long start = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|ppnKn:segment_scan_file", kwlist, PyUnicode_FSConverter, &pathobj,
                                     &decompress, &verify, &maxu, &start, &max_rows))
        return NULL;
    PyObject *list = NULL, *result = NULL;
    kb_seg_batch *rows = NULL;
    size_t n = 0;
    uint64_t next = UINT64_MAX;
    kb_error e = KB_ERROR_INIT;
    int rc = -1;
    kb_codec_ctx *ctx = kb_codec_ctx_new();
    if (!ctx) {
        PyErr_NoMemory();
        goto done;
    }
    const char *path = PyBytes_AS_STRING(pathobj);
    Py_BEGIN_ALLOW_THREADS
    rc = kb_seg_scan_file(path, ctx, verify, decompress, (size_t)(maxu < 0 ? 0 : maxu), (uint64_t)start,
                          (size_t)(max_rows < 0 ? 0 : max_rows), &rows, &n, &next, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        kb_py_raise(PyExc_OSError, &e);
        goto done;
    }
    list = rows_to_list(rows, n);
    if (list) {
        if (next == UINT64_MAX)
            result = Py_BuildValue("(NO)", list, Py_None);
        else
            result = Py_BuildValue("(NK)", list, (unsigned long long)next);
        list = NULL;
    }
done:
    Py_XDECREF(list);
    free(rows);
    kb_codec_ctx_free(ctx);
    Py_DECREF(pathobj);
    return result;
}

typedef struct {
    kb_seg_batch *rows;
    size_t n, cap;
} rowvec;

static PyObject *py_segment_scan(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"data", "decompress", "verify_crc", "max_uncompressed", NULL};
    Py_buffer in;
    int decompress = 1, verify = 1;
    Py_ssize_t maxu = 256 << 20;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|ppn:segment_scan", kwlist, &in, &decompress, &verify, &maxu))
        return NULL;
    PyObject *list = NULL;
    kb_buf scratch = {0};
    rowvec rv = {0};
    int oom = 0;
    kb_codec_ctx *ctx = kb_codec_ctx_new();
    if (!ctx) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    kb_seg_reader r;
    kb_seg_reader_init(&r, in.buf, (size_t)in.len);
    for (;;) {
        if (rv.n == rv.cap) {
            size_t cap = rv.cap ? rv.cap * 2 : 256;
            kb_seg_batch *nr = realloc(rv.rows, cap * sizeof(*nr));
            if (!nr) {
                oom = 1;
                break;
            }
            rv.rows = nr;
            rv.cap = cap;
        }
        if (!kb_seg_next(&r, ctx, verify, decompress, (size_t)(maxu < 0 ? 0 : maxu), &scratch, &rv.rows[rv.n]))
            break;
        rv.n++;
    }
    Py_END_ALLOW_THREADS
    if (oom) {
        PyErr_NoMemory();
        goto done;
    }
    list = rows_to_list(rv.rows, rv.n);
done:
    free(rv.rows);
    kb_buf_free(&scratch);
    kb_codec_ctx_free(ctx);
    PyBuffer_Release(&in);
    return list;
}

static PyMethodDef methods[] = {
    {"crc32c", (PyCFunction)(void (*)(void))py_crc32c, METH_VARARGS | METH_KEYWORDS, crc32c_doc},
    {"crc32c_impls", py_crc32c_impls, METH_NOARGS, "crc32c_impls() -> list[str]: implementations usable here."},
    {"crc32c_active", py_crc32c_active, METH_NOARGS, "crc32c_active() -> str: the implementation crc32c() uses."},
    {"batch_encode", py_batch_encode, METH_VARARGS, batch_encode_doc},
    {"batch_decode", (PyCFunction)(void (*)(void))py_batch_decode, METH_VARARGS | METH_KEYWORDS, batch_decode_doc},
    {"segment_scan", (PyCFunction)(void (*)(void))py_segment_scan, METH_VARARGS | METH_KEYWORDS, segment_scan_doc},
    {"segment_scan_file", (PyCFunction)(void (*)(void))py_segment_scan_file, METH_VARARGS | METH_KEYWORDS,
     segment_scan_file_doc},
    {NULL, NULL, 0, NULL},
};

int kb_py_batch_init(PyObject *m) {
    kb_BatchError = PyErr_NewExceptionWithDoc(
        "kbench.BatchError", "A RecordBatch or segment is malformed; .offset is the byte offset of the problem.",
        PyExc_ValueError, NULL);
    if (!kb_BatchError)
        return -1;
    if (PyObject_SetAttrString(kb_BatchError, "offset", Py_None) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "BatchError", kb_BatchError) < 0)
        return -1;
    return PyModule_AddFunctions(m, methods);
}
