/*
 * test_kafka_clients.c - the producer and consumer loops (csrc/core/producer.c,
 * consumer.c) against a real broker, built with ASan+UBSan by
 * tests/test_native_sanitized.py: the consumer runs in its own thread, the
 * producer sends a short fixed-rate run from the main thread once the consumer
 * is assigned; every record is delivered once and seen once.  Then a producer
 * with SASL properties against the same PLAINTEXT listener fails at
 * kb_wait_reachable naming the SASL handshake, not an unreachable broker, and
 * without its password (kafka_conf.c: kb_conn_err).  Between the two, a group of one reads the
 * records again from the beginning: group mode's own queue, exact per partition.
 *
 * Usage: test_kafka_clients BOOTSTRAP TOPIC.  Prints "ok N" and exits 0 on success.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "consumer.h"
#include "histogram.h"
#include "producer.h"

enum { N = 400, NREC = 16 };

static kb_hist *hist(void) {
    kb_hist *h = calloc(1, sizeof(*h));
    if (h)
        kb_hist_reset(h);
    return h;
}

static void *consume(void *arg) {
    kb_consumer *c = arg;
    kb_error e = KB_ERROR_INIT;
    if (kb_consumer_run(c, &e) != 0)
        fprintf(stderr, "consumer: %s\n", e.msg);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s BOOTSTRAP TOPIC\n", argv[0]);
        return 2;
    }
    const uint64_t run_id = 0x6b62656e6368ULL;
    static kb_consumer c; /* zeroed: atomics start at 0 */
    static kb_producer p;
    CHECK(kb_props_add(&c.props, "bootstrap.servers", argv[1]) == 0);
    CHECK(kb_props_add(&p.props, "bootstrap.servers", argv[1]) == 0);
    CHECK(kb_props_add(&p.props, "linger.ms", "5") == 0);
    CHECK(kb_props_add(&p.props, "compression.type", "zstd") == 0);
    c.topic = strdup(argv[2]);
    p.topic = strdup(argv[2]);
    c.e2e = hist();
    p.service = hist();
    p.delay = hist();
    p.corrected = hist();
    if (!c.topic || !p.topic || !c.e2e || !p.service || !p.delay || !p.corrected) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    c.run_id = run_id;
    c.header_sample = 1; /* every record carries the kb header: e2e and sequence checks on all */
    c.expected = N;
    c.timeout_s = 60;
    c.connect_timeout_s = 20;

    /* NREC records of different sizes, cycled */
    static uint8_t payload[NREC * 200];
    static int64_t offsets[NREC + 1];
    int64_t off = 0;
    for (int i = 0; i < NREC; i++) {
        offsets[i] = off;
        int len = 20 + 11 * i;
        for (int j = 0; j < len; j++)
            payload[off + j] = (uint8_t)("{\"event\":\"kbench\"}"[j % 18]);
        off += len;
    }
    offsets[NREC] = off;
    p.payload = payload;
    p.offsets = offsets;
    p.nrec = NREC;
    p.mode = KB_MODE_FIXED_RATE;
    p.rate = 1000.0;
    p.count = N;
    p.key_policy = KB_KEYS_ROUND_ROBIN;
    p.nkeys = 8;
    p.partition = -1;
    p.run_id = run_id;
    p.header_sample = 1;
    p.flush_timeout_s = 30;
    p.connect_timeout_s = 20;

    pthread_t th;
    CHECK(pthread_create(&th, NULL, consume, &c) == 0);
    struct timespec tick = {0, 5 * 1000 * 1000};
    for (int waited = 0; !atomic_load(&c.ready) && waited < 6000; waited++)
        nanosleep(&tick, NULL); /* until the consumer is assigned (it starts at the end offsets) */
    CHECK(atomic_load(&c.ready));
    kb_error e = KB_ERROR_INIT;
    int rc = kb_producer_run(&p, &e);
    if (rc != 0)
        fprintf(stderr, "producer: %s\n", e.msg);
    CHECK(rc == 0);
    CHECK(pthread_join(th, NULL) == 0);

    CHECK(p.sent == N && p.delivered == N && p.failed == 0 && p.undelivered == 0);
    CHECK(p.service->total == N && p.delay->total == N && p.corrected->total == N);
    CHECK(p.corrected->max >= p.service->max);
    CHECK(c.records == N && c.unique == N && c.duplicates == 0 && c.foreign == 0 && c.no_header == 0);
    CHECK(c.bytes == p.bytes && !c.timed_out && c.e2e->total == N);

    /* the same records again by a group of one from the beginning (group mode: every assigned partition's
     * queue forwarded to the loop's own in the rebalance callback), the catch-up drain (expected 0: what
     * was stored when it began): each of the two partitions read once, whole, with its e2e and intervals */
    static kb_consumer g; /* zeroed */
    CHECK(kb_props_add(&g.props, "bootstrap.servers", argv[1]) == 0);
    CHECK(kb_props_add(&g.props, "group.id", "kbench-sanitized-group") == 0);
    g.topic = c.topic;
    g.e2e = hist();
    CHECK(g.e2e != NULL);
    g.run_id = run_id;
    g.group = 1;
    g.from_beginning = 1;
    g.timeout_s = 60;
    g.connect_timeout_s = 20;
    g.interval_ns = 50 * 1000 * 1000;
    g.cpu_window = 1;
    kb_error ge = KB_ERROR_INIT;
    rc = g.e2e ? kb_consumer_run(&g, &ge) : -1;
    if (rc != 0)
        fprintf(stderr, "group consumer: %s\n", ge.msg);
    CHECK(rc == 0);
    CHECK(g.records == N && g.unique == N && g.duplicates == 0 && g.foreign == 0 && g.no_header == 0);
    CHECK(g.bytes == p.bytes && !g.timed_out && g.e2e && g.e2e->total == N && g.sampled == N);
    CHECK(g.stored_records == N && g.rebalances >= 1 && g.t_assigned >= g.t_start && g.t_first >= g.t_assigned);
    CHECK(g.nparts == 2 && g.mq == NULL);
    int64_t read = 0;
    for (int i = 0; i < g.nparts; i++) {
        const kb_part_seen *ps = &g.parts[i];
        CHECK_MSG(ps->nruns == 1 && ps->runs[0] == ps->start && ps->runs[1] == ps->end && ps->records == ps->end - ps->start,
                  "partition %d: %d runs, start %lld end %lld records %lld", ps->partition, ps->nruns,
                  (long long)ps->start, (long long)ps->end, (long long)ps->records);
        read += ps->records;
    }
    CHECK(read == N);
    int64_t iv_records = 0, iv_bytes = 0, iv_e2e = 0;
    for (size_t k = 0; k < g.iv.n; k++) {
        iv_records += g.iv.rows[k].sent;
        iv_bytes += g.iv.rows[k].bytes;
        iv_e2e += g.iv.rows[k].total;
    }
    CHECK_MSG(iv_records == N && iv_bytes == p.bytes && iv_e2e == N, "intervals: %lld records, %lld bytes, %lld e2e",
              (long long)iv_records, (long long)iv_bytes, (long long)iv_e2e);
    kb_iv_free(&g.iv);
    kb_consumer_free_parts(&g);
    free(g.stats);
    free(g.e2e);
    kb_props_free(&g.props);

    /* SASL against the PLAINTEXT listener: the handshake fails, and says so */
    static kb_producer q; /* zeroed */
    q.topic = p.topic;
    q.payload = payload;
    q.offsets = offsets;
    q.nrec = NREC;
    q.mode = KB_MODE_SATURATED;
    q.count = 1;
    q.partition = -1;
    q.service = p.service;
    q.delay = p.delay;
    q.corrected = p.corrected;
    q.connect_timeout_s = 10;
    const char *sasl[][2] = {{"bootstrap.servers", argv[1]},
                             {"security.protocol", "SASL_PLAINTEXT"},
                             {"sasl.mechanism", "PLAIN"},
                             {"sasl.username", "kbench-user"},
                             {"sasl.password", "kbench-secret-pw"}};
    for (size_t i = 0; i < sizeof(sasl) / sizeof(sasl[0]); i++)
        CHECK(kb_props_add(&q.props, sasl[i][0], sasl[i][1]) == 0);
    kb_error qe = KB_ERROR_INIT;
    CHECK(kb_producer_run(&q, &qe) == KB_EKAFKA);
    CHECK_MSG(strstr(qe.msg, "SASL handshake") && !strstr(qe.msg, "no Kafka broker reachable"), "%s", qe.msg);
    CHECK_MSG(!strstr(qe.msg, "kbench-secret-pw") && !strchr(qe.msg, '\n'), "%s", qe.msg);
    CHECK(q.sent == 0);
    kb_props_free(&q.props);

    kb_props_free(&c.props);
    kb_props_free(&p.props);
    free(c.topic);
    free(p.topic);
    free(c.e2e);
    free(p.service);
    free(p.delay);
    free(p.corrected);
    if (failures) {
        fprintf(stderr, "%d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("ok %d\n", checks);
    return 0;
}
