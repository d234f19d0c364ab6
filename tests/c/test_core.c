/*
 * test_core.c - C unit tests of CRC-32C, varints, the batch codec, the
 * segment reader/writer, murmur2, the secret rule, entropy and the codec
 * bench loops, built with ASan+UBSan by
 * tests/test_native_sanitized.py.  Prints "ok N" and exits 0 on success.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "batching.h"
#include "codecbench.h"
#include "codecs.h"
#include "crc32c.h"
#include "entropy.h"
#include "error.h"
#include "recordbatch.h"
#include "secret.h"
#include "segment.h"
#include "sim.h"
#include "varint.h"

static void hex(const char *s, uint8_t *out, size_t *n) {
    size_t k = 0;
    for (; s[0] && s[1]; s += 2) {
        unsigned v;
        sscanf(s, "%2x", &v);
        out[k++] = (uint8_t)v;
    }
    *n = k;
}

static void test_crc(void) {
    int paths = 0;
    for (int i = 0; kb_crc32c_names[i]; i++) {
        kb_crc32c_fn f = kb_crc32c_impl(kb_crc32c_names[i]);
        if (!f)
            continue;
        paths++;
        CHECK(f(0, "123456789", 9) == 0xE3069283u);
        CHECK(f(f(0, "1234", 4), "56789", 5) == 0xE3069283u);
        uint8_t big[1031];
        for (size_t k = 0; k < sizeof(big); k++)
            big[k] = (uint8_t)(k * 31 + 7);
        for (size_t off = 0; off < 8; off++)
            CHECK(f(0, big + off, sizeof(big) - off) == kb_crc32c_impl("table")(0, big + off, sizeof(big) - off));
    }
    CHECK(paths >= 1);
#if defined(__x86_64__)
    CHECK(paths >= 2); /* SSE4.2 present on every supported x86-64 */
#endif
    CHECK(kb_crc32c(0, "123456789", 9) == 0xE3069283u);
}

static void test_varint(void) {
    struct {
        int64_t v;
        const char *hex;
    } cases[] = {{0, "00"}, {-1, "01"}, {1, "02"}, {63, "7e"}, {-64, "7f"}, {64, "8001"}, {-65, "8101"},
                 {INT32_MAX, "feffffff0f"}, {INT32_MIN, "ffffffff0f"},
                 {INT64_MAX, "feffffffffffffffff01"}, {INT64_MIN, "ffffffffffffffffff01"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t want[16], got[16];
        size_t wn;
        hex(cases[i].hex, want, &wn);
        size_t gn = kb_varlong_encode(got, cases[i].v);
        CHECK(gn == wn && memcmp(got, want, wn) == 0);
        CHECK(kb_varlong_size(cases[i].v) == wn);
        size_t pos = 0;
        int64_t back;
        CHECK(kb_varlong_get(got, gn, &pos, &back) == 0 && back == cases[i].v && pos == gn);
        pos = 0;
        CHECK(kb_varlong_get(got, gn - 1, &pos, &back) == -1 && pos == 0); /* truncated */
    }
    uint8_t longv[6] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    size_t pos = 0;
    int32_t v32;
    CHECK(kb_varint_get(longv, sizeof(longv), &pos, &v32) == -2 && pos == 0); /* more than 5 bytes */
}

static void test_batch(void) {
    uint8_t want[128];
    size_t wn;
    hex("00000000000000000000003dffffffff02e641a44b0000000000000000018bcfe568000000018bcfe56800"
        "ffffffffffffffffffffffffffff0000000116000000010a68656c6c6f00",
        want, &wn);
    kb_codec_ctx *ctx = kb_codec_ctx_new();
    kb_batch_builder bb;
    kb_bb_init(&bb);
    kb_batch_meta m = kb_batch_meta_default(0);
    kb_bb_reset(&bb, &m);
    kb_record r = {.key = NULL, .key_len = -1, .value = (const uint8_t *)"hello", .value_len = 5,
                   .timestamp = 1700000000000LL};
    kb_error e;
    kb_buf out = {0}, scratch = {0};
    CHECK(kb_bb_append(&bb, &r, &e) == 0);
    int stored = -1;
    CHECK(kb_bb_finish(&bb, ctx, KB_CODEC_NONE, 0, 0, &out, &stored, &e) == 0);
    CHECK(out.len == wn && memcmp(out.p, want, wn) == 0 && stored == 0);
    kb_batch_view v;
    CHECK(kb_batch_open(ctx, out.p, out.len, 1, 1 << 20, &scratch, &v, &e) == 0);
    CHECK(kb_batch_check_records(&v, &e) == 0 && v.h.records_count == 1 && v.records_len == 12);
    /* every truncation fails with the offset where the input ends */
    for (size_t cut = 0; cut < out.len; cut++) {
        CHECK(kb_batch_open(ctx, out.p, cut, 1, 1 << 20, &scratch, &v, &e) == -1);
        CHECK(e.offset == (int64_t)cut);
    }
    out.p[40] ^= 1;
    CHECK(kb_batch_open(ctx, out.p, out.len, 1, 1 << 20, &scratch, &v, &e) == -1 && e.offset == 17);
    out.p[40] ^= 1;
    /* compressed round trip for every codec */
    for (int c = 0; c < KB_CODEC_COUNT; c++) {
        int lv;
        kb_error err = KB_ERROR_INIT;
        CHECK(kb_codec_level((kb_codec_t)c, KB_LEVEL_DEFAULT, &lv, &err) == 0);
        kb_bb_reset(&bb, &m);
        for (int i = 0; i < 100; i++)
            CHECK(kb_bb_append(&bb, &r, &e) == 0);
        out.len = 0;
        CHECK(kb_bb_finish(&bb, ctx, (kb_codec_t)c, lv, 0, &out, &stored, &e) == 0 && stored == c);
        CHECK(kb_batch_open(ctx, out.p, out.len, 1, 1 << 20, &scratch, &v, &e) == 0);
        CHECK(kb_batch_check_records(&v, &e) == 0 && v.h.records_count == 100 && v.codec == c);
        CHECK(kb_batch_open(ctx, out.p, out.len, 1, 100, &scratch, &v, &e) == (c == 0 ? 0 : -1)); /* limit */
    }
    /* segment writer + reader */
    char path[] = "/tmp/kbench-test-core-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    kb_seg_writer w;
    CHECK(kb_seg_writer_open(&w, path, 0, 5, &e) == 0);
    uint64_t posn;
    for (int i = 0; i < 3; i++)
        CHECK(kb_seg_writer_append(&w, out.p, out.len, &posn, &e) == 0 && posn == (uint64_t)i * out.len);
    CHECK(kb_seg_writer_close(&w, &e) == 0);
    FILE *f = fopen(path, "rb");
    uint8_t *seg = malloc(3 * out.len + 1);
    CHECK(f && fread(seg, 1, 3 * out.len, f) == 3 * out.len);
    fclose(f);
    unlink(path);
    kb_seg_reader rd;
    kb_seg_reader_init(&rd, seg, 3 * out.len - 5); /* last batch truncated */
    kb_seg_batch sb;
    int rows = 0;
    while (kb_seg_next(&rd, ctx, 1, 1, 1 << 20, &scratch, &sb)) {
        CHECK(sb.status == (rows < 2 ? KB_SEG_OK : KB_SEG_TRUNCATED));
        CHECK(rows >= 2 || (sb.base_offset == rows * 100 && sb.partition_leader_epoch == 5 && sb.crc_valid == 1));
        rows++;
    }
    CHECK(rows == 3);
    free(seg);
    kb_buf_free(&out);
    kb_buf_free(&scratch);
    kb_bb_free(&bb);
    kb_codec_ctx_free(ctx);
}

static void test_murmur2(void) {
    CHECK(kb_murmur2((const uint8_t *)"21", 2) == -973932308);
    CHECK(kb_murmur2((const uint8_t *)"foobar", 6) == -790332482);
    CHECK(kb_murmur2((const uint8_t *)"abc", 3) == 479470107);
    CHECK(kb_partition_for_key((const uint8_t *)"foobar", 6, 7) == (int32_t)((-790332482 & 0x7fffffff) % 7));
}

static void test_sim(void) {
    /* the three-thread transport end to end, for leaks and races under the sanitizers */
    size_t n = 3000;
    uint8_t *payload = malloc(n * 64);
    uint64_t *offs = malloc((n + 1) * sizeof(uint64_t));
    offs[0] = 0;
    for (size_t i = 0; i < n; i++) {
        int len = snprintf((char *)payload + offs[i], 64, "{\"id\":%zu,\"kind\":\"event-%zu\"}", i, i % 7);
        offs[i + 1] = offs[i] + (uint64_t)len;
    }
    char dir[] = "/tmp/kbench-test-sim-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    for (int client = 0; client < 2; client++) {
        for (int topic = -1; topic <= KB_CODEC_LZ4; topic += 4) {
            kb_sim_cfg cfg = {.batching = kb_batching_cfg_default((kb_client_t)client), .topic_codec = topic,
                              .topic_level = 9, .dir = dir, .topic = "t", .max_uncompressed = 1 << 20,
                              .leader_epoch = 0, .queue_depth = 4};
            cfg.batching.codec = KB_CODEC_ZSTD;
            cfg.batching.level = 3;
            cfg.batching.partitions = 3;
            cfg.batching.key_cardinality = client ? 10 : 0;
            cfg.batching.batch_size = 2048;
            kb_recset rs = {.payload = payload, .offs = offs, .n = n};
            kb_sim_result res;
            kb_error e;
            CHECK(kb_sim_run(&cfg, &rs, &res, &e) == 0);
            CHECK(res.verified == n && res.mismatches == 0 && res.nbatches > 3);
            CHECK(res.recompressed == (topic >= 0 ? res.nbatches : 0));
            kb_sim_result_free(&res);
        }
    }
    for (int p = 0; p < 3; p++) {
        char path[256];
        snprintf(path, sizeof(path), "%s/t-%d/00000000000000000000.log", dir, p);
        unlink(path);
        snprintf(path, sizeof(path), "%s/t-%d", dir, p);
        rmdir(path);
    }
    rmdir(dir);
    free(payload);
    free(offs);
}

static void test_secret(void) {
    const char *secret[] = {"sasl.password", "SASL.USERNAME", "ssl.key.pem", "ssl_key", "sasl.jaas.config",
                            "producer.override.sasl.jaas.config", "sasl.oauthbearer.client.secret",
                            "ssl.keystore.key", "sasl.kerberos.keytab", "basic.auth.user.info", NULL};
    const char *open[] = {"sasl.mechanism", "ssl.certificate.pem", "ssl.ca.location", "xsasl.username",
                          "enable.sasl.oauthbearer.unsecure.jwt", "acks", "", NULL};
    for (int i = 0; secret[i]; i++)
        CHECK(kb_is_secret_property(secret[i]));
    for (int i = 0; open[i]; i++)
        CHECK(!kb_is_secret_property(open[i]));
    CHECK(!kb_is_secret_property(NULL));
    char s[64] = "bad value \"hunter22\" for \"hunter22\"";
    kb_scrub_value(s, sizeof(s), "hunter22");
    CHECK(strcmp(s, "bad value \"" KB_REDACTED "\" for \"" KB_REDACTED "\"") == 0);
    char shortv[32] = "every e stays";
    kb_scrub_value(shortv, sizeof(shortv), "e"); /* below KB_SECRET_MIN_SCRUB: left alone */
    CHECK(strcmp(shortv, "every e stays") == 0);
    char tiny[12] = "pw=abcdefgh"; /* the replacement is longer than the value: truncated at cap */
    kb_scrub_value(tiny, sizeof(tiny), "abcdefgh");
    CHECK(strlen(tiny) == sizeof(tiny) - 1 && strncmp(tiny, "pw=<redacte", 11) == 0);
}

static void test_entropy_and_codecbench(void) {
    uint8_t buf[4096];
    memset(buf, 'a', sizeof(buf));
    CHECK(kb_entropy(buf, sizeof(buf)) == 0.0 && kb_entropy(buf, 0) == 0.0);
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)i;
    CHECK(kb_entropy(buf, sizeof(buf)) == 8.0);
    kb_codecbench b;
    kb_error err = KB_ERROR_INIT;
    CHECK(kb_codecbench_init(&b, buf, sizeof(buf) - 5, 1000, KB_CODEC_ZSTD, 3, &err) == 0 && b.nblocks == 5);
    CHECK(kb_codecbench_compress(&b, 2, &err) == KB_OK);
    CHECK(kb_codecbench_decompress(&b, 2, &err) == KB_OK && kb_codecbench_verify(&b));
    CHECK(kb_codecbench_compressed_size(&b) > 0);
    kb_codecbench_free(&b);
}

/* error.h: a failure fills code, message and offset; kb_strerror names every code. */
static void test_error_convention(void) {
    kb_error e = KB_ERROR_INIT;
    CHECK(e.code == KB_OK && e.msg[0] == 0 && e.offset == -1);
    CHECK(kb_error_set(&e, KB_EINVAL, 7, "bad %s", "thing") == KB_EINVAL);
    CHECK(e.code == KB_EINVAL && e.offset == 7 && strcmp(e.msg, "bad thing") == 0);
    CHECK(kb_error_set(NULL, KB_ENOMEM, -1, "ignored") == KB_ENOMEM);
    kb_error_clear(&e);
    CHECK(e.code == KB_OK && e.msg[0] == 0 && e.offset == -1);
    CHECK(strcmp(kb_strerror(KB_ENOMEM), "out of memory") == 0 && strcmp(kb_strerror(12345), "unknown error code") == 0);
    /* a level out of range is the caller's argument: KB_EINVAL with the codec's message */
    int lv = 0;
    CHECK(kb_codec_level(KB_CODEC_GZIP, 10, &lv, &e) == KB_EINVAL && e.code == KB_EINVAL &&
          strstr(e.msg, "gzip level 10 out of range") != NULL);
    /* a too-small output buffer is KB_ETOOSMALL with a message, not an empty one */
    uint8_t src[64] = {0}, dst[8];
    size_t olen = 0;
    CHECK(kb_decompress(NULL, KB_CODEC_NONE, src, sizeof(src), dst, sizeof(dst), &olen, &e) == KB_ETOOSMALL &&
          e.code == KB_ETOOSMALL && e.msg[0] != 0);
    /* a malformed batch names the byte offset */
    kb_batch_header h;
    CHECK(kb_batch_header_read(src, sizeof(src), &h, &e) < 0 && e.code == KB_ERR && e.offset >= 0);
}

int main(void) {
    test_error_convention();
    test_crc();
    test_varint();
    test_batch();
    test_murmur2();
    test_sim();
    test_secret();
    test_entropy_and_codecbench();
    if (failures) {
        fprintf(stderr, "%d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("ok %d\n", checks);
    return 0;
}
