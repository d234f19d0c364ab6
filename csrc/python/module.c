/*
 * module.c - kbench._native: the module object.  Each concern registers its
 * own functions and types through its kb_*_init(m).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "py_codecbench.h"
#include "py_entropy.h"
#include "py_batch.h"
#include "py_sim.h"
#include "py_codecs.h"
#include "py_kafka_util.h"
#include "py_admin.h"
#include "py_histogram.h"
#include "py_drivers.h"
#include "py_procstat.h"
#include "py_sample.h"
#include "py_secret.h"

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kbench._native",
    .m_doc = "kbench's C core: codecs, batches, timing, drivers.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    if (kb_py_codecs_init(m) < 0 || kb_py_codecbench_init(m) < 0 ||
        kb_py_entropy_init(m) < 0 || kb_py_batch_init(m) < 0 ||
        kb_py_sim_init(m) < 0 ||
        kb_py_kafka_util_init(m) < 0 || kb_py_admin_init(m) < 0 ||
        kb_py_histogram_init(m) < 0 || kb_py_drivers_init(m) < 0 ||
        kb_py_procstat_init(m) < 0 || kb_py_secret_init(m) < 0 || kb_py_sample_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
