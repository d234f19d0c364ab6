"""Build librdkafka's own benchmark tool, ``rdkafka_performance``, from the example source Debian's
librdkafka-dev ships (``/usr/share/doc/librdkafka-dev/examples/rdkafka_performance.c``), against
the system librdkafka, with one patch: the message source can be a corpus file, so that it sends
the same bytes as ``kbench produce`` (the unpatched tool repeats one pattern: a codec would see
one identical record).

The example includes two of librdkafka's internal headers (``rd.h``, ``rdtime.h``); of them it
uses a monotonic microsecond clock, ``rd_snprintf`` and ``RD_MIN``/``RD_MAX``, written here.

The patch: with ``KB_CORPUS=FILE`` (4-byte big-endian length + record, repeated: kbench's
``lenprefixed`` corpus format) every message is the next record of FILE, cycling, handed to
librdkafka as the unpatched tool hands its buffer (no copy: the flags are the tool's own); stdout
is line-buffered so that its periodic stats lines arrive as they are printed."""

from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = Path("/usr/share/doc/librdkafka-dev/examples/rdkafka_performance.c")

SHIM = """/* stand-in for librdkafka's internal rd.h / rdtime.h: what rdkafka_performance.c uses */
#ifndef KB_RD_SHIM_H
#define KB_RD_SHIM_H
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
typedef int64_t rd_ts_t;
static inline rd_ts_t rd_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (rd_ts_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
#define rd_snprintf snprintf
#define RD_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RD_MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
"""

LOADER = """
/* kbench benchmark patch: KB_CORPUS=FILE, the message source (lenprefixed records, cycled) */
static char **kb_rec;
static int *kb_len;
static size_t kb_nrec, kb_i;
static void kb_load(void) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        const char *path = getenv("KB_CORPUS");
        if (!path)
                return;
        FILE *f = fopen(path, "rb");
        if (!f) {
                perror(path);
                exit(1);
        }
        unsigned char h[4];
        size_t cap = 0;
        while (fread(h, 1, 4, f) == 4) {
                size_t n = ((size_t)h[0] << 24) | ((size_t)h[1] << 16) | ((size_t)h[2] << 8) | h[3];
                if (kb_nrec == cap) {
                        cap = cap ? cap * 2 : 1024;
                        kb_rec = realloc(kb_rec, cap * sizeof(*kb_rec));
                        kb_len = realloc(kb_len, cap * sizeof(*kb_len));
                        if (!kb_rec || !kb_len)
                                exit(1);
                }
                kb_rec[kb_nrec] = malloc(n ? n : 1);
                if (!kb_rec[kb_nrec] || fread(kb_rec[kb_nrec], 1, n, f) != n) {
                        fprintf(stderr, "%s: truncated record\\n", path);
                        exit(1);
                }
                kb_len[kb_nrec++] = (int)n;
        }
        fclose(f);
        if (!kb_nrec) {
                fprintf(stderr, "%s: no records\\n", path);
                exit(1);
        }
}
"""

#: (anchor in the example's source, what replaces it); each anchor must occur exactly once
PATCHES = (
    ("static long int msgs_wait_cnt         = 0;\n", "static long int msgs_wait_cnt         = 0;\n" + LOADER),
    ("int main(int argc, char **argv) {\n", "int main(int argc, char **argv) {\n        kb_load();\n"),
    (
        "                        cnt.tx++;\n",
        "                        if (kb_nrec) {\n"
        "                                pbuf    = kb_rec[kb_i];\n"
        "                                msgsize = kb_len[kb_i];\n"
        "                                if (++kb_i == kb_nrec)\n"
        "                                        kb_i = 0;\n"
        "                        }\n"
        "                        cnt.tx++;\n",
    ),
)


def build(work: Path) -> Path:
    """Compile the patched tool into ``work``; its path."""
    src = SOURCE.read_text()
    for anchor, repl in PATCHES:
        if src.count(anchor) != 1:
            raise RuntimeError(f"{SOURCE}: patch anchor found {src.count(anchor)} times: {anchor.strip()!r}")
        src = src.replace(anchor, repl)
    (work / "src").mkdir(parents=True, exist_ok=True)
    (work / "examples").mkdir(exist_ok=True)
    for h in ("rd.h", "rdtime.h"):
        (work / "src" / h).write_text(SHIM)
    c = work / "examples" / "rdkafka_performance.c"
    c.write_text(src)
    exe = work / "rdkafka_performance"
    cmd = ["cc", "-O2", f"-I{work / 'src'}", "-I/usr/include/librdkafka", "-o", str(exe), str(c)]
    subprocess.run([*cmd, "-lrdkafka", "-lpthread", "-lm"], check=True, capture_output=True, text=True)
    return exe


if __name__ == "__main__":
    import sys

    print(build(Path(sys.argv[1])))
