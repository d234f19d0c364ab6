/*
 * py_sim.c - kbench._native: murmur2, partition_for_key, sim_run.
 *
 * sim_run releases the GIL for the whole run; its three stage threads are
 * native pthreads that never touch Python.
 */
#include "py_sim.h"

#include <string.h>

#include "batching.h"
#include "py_batch.h"
#include "py_codecs.h"
#include "sim.h"

static PyObject *py_murmur2(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer in;
    if (!PyArg_ParseTuple(args, "y*:murmur2", &in))
        return NULL;
    int32_t h = kb_murmur2(in.buf, (size_t)in.len);
    PyBuffer_Release(&in);
    return PyLong_FromLong(h);
}

static PyObject *py_partition_for_key(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer in;
    int parts;
    if (!PyArg_ParseTuple(args, "y*i:partition_for_key", &in, &parts))
        return NULL;
    if (parts < 1) {
        PyBuffer_Release(&in);
        return PyErr_Format(PyExc_ValueError, "partitions must be >= 1, got %d", parts);
    }
    int32_t p = kb_partition_for_key(in.buf, (size_t)in.len, parts);
    PyBuffer_Release(&in);
    return PyLong_FromLong(p);
}

static PyObject *stage_dict(const kb_stage_stats *s) {
    return Py_BuildValue("{s:L,s:L,s:K,s:K,s:K,s:K}", "cpu_ns", (long long)s->cpu_ns, "wall_ns", (long long)s->wall_ns,
                         "bytes_in", (unsigned long long)s->bytes_in, "bytes_out", (unsigned long long)s->bytes_out,
                         "batches", (unsigned long long)s->batches, "records", (unsigned long long)s->records);
}

PyDoc_STRVAR(sim_run_doc,
             "sim_run(payload, offsets, dir, topic, client, codec, level, topic_codec, topic_level, partitions,\n"
             "        partitioner, batch_size, linger_ms, rate, poisson, seed, key_cardinality, start_ts_ms,\n"
             "        max_uncompressed) -> dict\n\n"
             "offsets: buffer of n+1 native uint64 offsets into payload.  topic_codec None = producer.");

static PyObject *py_sim_run(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer payload, offs;
    const char *dir, *topic, *client, *codec, *partitioner;
    PyObject *level, *tcodec, *tlevel;
    int partitions, poisson;
    long long batch_size, start_ts;
    double linger, rate;
    unsigned long long seed;
    unsigned int keycard;
    Py_ssize_t maxu;
    if (!PyArg_ParseTuple(args, "y*y*ssssOOOisLddpKILn:sim_run", &payload, &offs, &dir, &topic, &client, &codec,
                          &level, &tcodec, &tlevel, &partitions, &partitioner, &batch_size, &linger, &rate, &poisson,
                          &seed, &keycard, &start_ts, &maxu))
        return NULL;
    PyObject *out = NULL;
    kb_sim_result res;
    memset(&res, 0, sizeof(res));
    kb_sim_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    int c, lv, tc = -1, tl = 0;
    if (offs.len % 8 != 0 || offs.len < 8) {
        PyErr_SetString(PyExc_ValueError, "offsets must hold n+1 uint64 values");
        goto done;
    }
    size_t n = (size_t)offs.len / 8 - 1;
    const uint64_t *o = offs.buf;
    for (size_t i = 0; i < n; i++) {
        if (o[i] > o[i + 1] || o[i + 1] > (uint64_t)payload.len || o[i + 1] - o[i] > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "offsets[%zu..%zu] do not describe a record inside payload", i, i + 1);
            goto done;
        }
    }
    kb_client_t cl;
    if (!strcmp(client, "java"))
        cl = KB_CLIENT_JAVA;
    else if (!strcmp(client, "librdkafka"))
        cl = KB_CLIENT_LIBRDKAFKA;
    else {
        PyErr_Format(PyExc_ValueError, "unknown client '%s'; use java or librdkafka", client);
        goto done;
    }
    if (kb_py_codec_arg(codec, level, &c, &lv) < 0)
        goto done;
    if (tcodec != Py_None) {
        const char *tn = PyUnicode_AsUTF8(tcodec);
        if (!tn || kb_py_codec_arg(tn, tlevel, &tc, &tl) < 0)
            goto done;
    }
    cfg.batching = kb_batching_cfg_default(cl);
    cfg.batching.codec = (kb_codec_t)c;
    cfg.batching.level = lv;
    cfg.batching.partitions = partitions;
    if (!strcmp(partitioner, "default"))
        cfg.batching.partitioner = KB_PART_DEFAULT;
    else if (!strcmp(partitioner, "round-robin"))
        cfg.batching.partitioner = KB_PART_ROUND_ROBIN;
    else {
        PyErr_Format(PyExc_ValueError, "unknown partitioner '%s'; use default or round-robin", partitioner);
        goto done;
    }
    cfg.batching.batch_size = batch_size;
    cfg.batching.linger_ms = linger;
    cfg.batching.rate = rate;
    cfg.batching.arrival = poisson ? KB_ARRIVAL_POISSON : KB_ARRIVAL_FIXED;
    cfg.batching.seed = seed;
    cfg.batching.key_cardinality = keycard;
    cfg.batching.start_ts_ms = start_ts;
    cfg.batching.topic_name_len = (int32_t)strlen(topic);
    cfg.topic_codec = tc;
    cfg.topic_level = tl;
    cfg.dir = dir;
    cfg.topic = topic;
    cfg.max_uncompressed = maxu > 0 ? (size_t)maxu : 1;
    cfg.leader_epoch = 0;
    cfg.queue_depth = 64;
    kb_recset rs = {.payload = payload.buf, .offs = o, .n = n};
    kb_error e = KB_ERROR_INIT;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = kb_sim_run(&cfg, &rs, &res, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        kb_py_raise(kb_BatchError, &e);
        goto done;
    }
    PyObject *bl = PyList_New((Py_ssize_t)res.nbatches);
    if (!bl)
        goto done;
    for (size_t i = 0; i < res.nbatches; i++) {
        const kb_sim_batch *b = &res.batches[i];
        PyObject *t = Py_BuildValue("(iiKKssddLKKs)", b->info.partition, b->info.count,
                                    (unsigned long long)b->info.raw_bytes, (unsigned long long)b->info.batch_bytes,
                                    kb_codec_name(b->info.stored_codec), kb_close_names[b->info.reason],
                                    b->info.t_open_ms, b->info.t_close_ms, (long long)b->base_offset,
                                    (unsigned long long)b->position, (unsigned long long)b->stored_bytes,
                                    kb_codec_name(b->stored_codec));
        if (!t) {
            Py_DECREF(bl);
            goto done;
        }
        PyList_SET_ITEM(bl, (Py_ssize_t)i, t);
    }
    out = Py_BuildValue("{s:N,s:N,s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:N}", "producer", stage_dict(&res.producer),
                        "broker", stage_dict(&res.broker), "consumer", stage_dict(&res.consumer), "payload_bytes",
                        (unsigned long long)res.payload_bytes, "raw_batch_bytes",
                        (unsigned long long)res.raw_batch_bytes, "produced_bytes",
                        (unsigned long long)res.produced_bytes, "stored_bytes", (unsigned long long)res.stored_bytes,
                        "recompressed", (unsigned long long)res.recompressed, "verified",
                        (unsigned long long)res.verified, "mismatches", (unsigned long long)res.mismatches, "batches",
                        bl);
done:
    kb_sim_result_free(&res);
    PyBuffer_Release(&payload);
    PyBuffer_Release(&offs);
    return out;
}

static PyMethodDef methods[] = {
    {"murmur2", py_murmur2, METH_VARARGS, "murmur2(data) -> int: Java's Utils.murmur2."},
    {"partition_for_key", py_partition_for_key, METH_VARARGS,
     "partition_for_key(key, partitions) -> int: toPositive(murmur2(key)) % partitions."},
    {"sim_run", py_sim_run, METH_VARARGS, sim_run_doc},
    {NULL, NULL, 0, NULL},
};

int kb_py_sim_init(PyObject *m) { return PyModule_AddFunctions(m, methods); }
