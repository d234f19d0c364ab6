"""The Python-free C core under sanitizers: C unit tests (ASan+UBSan, TSan), the producer and
consumer loops against a real broker (ASan+UBSan), and libFuzzer runs.

The fuzzers (tests/fuzz/) get a seed corpus generated here (batches of every codec, segments,
truncations) and run for a bounded time each (``KBENCH_FUZZ_SECONDS``, default 10; longer by hand).  Any crash,
leak, sanitizer report or abort() in a harness fails the test.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kbench.model import batch
from kbench.model.batch import Header, Record

pytestmark = pytest.mark.sanitizer

ROOT = Path(__file__).resolve().parent.parent
CORE = [
    "error.c",
    "crc32c.c",
    "varint.c",
    "recordbatch.c",
    "segment.c",
    "codecs.c",
    "batching.c",
    "sim.c",
    "clock.c",
    "secret.c",
    "entropy.c",
    "codecbench.c",
]
#: The measuring parts: latency histogram and /proc CPU counters.
MEASURE = ["histogram.c", "procstat.c", "clock.c", "error.c"]
#: The librdkafka client loops.
CLIENTS = [
    "error.c",
    "producer.c",
    "consumer.c",
    "kafka_conf.c",
    "secret.c",
    "errcount.c",
    "pacing.c",
    "threadcpu.c",
    "histogram.c",
    "clock.c",
    "intervals.c",
]
FUZZ_SECONDS = int(os.environ.get("KBENCH_FUZZ_SECONDS", "10"))


def _libs(extra: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    mods = ["libzstd", "liblz4", "snappy", "zlib", *extra]
    cflags = subprocess.run(
        ["pkg-config", "--cflags", *mods], check=True, capture_output=True, text=True
    ).stdout.split()
    libs = subprocess.run(["pkg-config", "--libs", *mods], check=True, capture_output=True, text=True).stdout.split()
    return cflags, libs + ["-lm"]


def _clang(out: Path, main: Path, sanitize: str, sources: list[str] = CORE, packages: tuple[str, ...] = ()) -> Path:
    clang = shutil.which("clang")
    assert clang, "clang not found; install it with: apt-get install -y clang libclang-rt-14-dev"
    cflags, libs = _libs(packages)
    cmd = [
        clang,
        "-std=c11",
        "-g",
        "-O1",
        "-Wall",
        "-Wextra",
        "-Werror",
        f"-fsanitize={sanitize}",
        "-fno-sanitize-recover=all",
        "-fno-omit-frame-pointer",
        f"-I{ROOT / 'csrc' / 'core'}",
        *cflags,
        str(main),
        *[str(ROOT / "csrc" / "core" / c) for c in sources],
        "-o",
        str(out),
        "-pthread",
        *libs,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.parametrize("sanitize", ["address,undefined", "thread"])
def test_c_core_under_sanitizers(sanitize: str, tmp_path: Path) -> None:
    # ASan+UBSan: memory errors, leaks, UB; TSan: races between the simulated transport's threads
    exe = _clang(tmp_path / "test_core", ROOT / "tests" / "c" / "test_core.c", sanitize)
    proc = subprocess.run(
        [str(exe)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok ") and int(proc.stdout.split()[1]) > 500


@pytest.mark.parametrize("sanitize", ["address,undefined", "thread"])
def test_histogram_and_procstat_under_sanitizers(sanitize: str, tmp_path: Path) -> None:
    # the latency histogram against exact percentiles, /proc CPU readers (busy loop, gone pid,
    # zombie), two threads each with their own histogram and counters
    exe = _clang(tmp_path / "test_measure", ROOT / "tests" / "c" / "test_measure.c", sanitize, MEASURE)
    proc = subprocess.run(
        [str(exe)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok ") and int(proc.stdout.split()[1]) >= 60, proc.stdout


@pytest.mark.kafka
@pytest.mark.parametrize("sanitize", ["address,undefined"])
def test_producer_and_consumer_under_sanitizers(sanitize: str, kafka1, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # producer.c and consumer.c built with the sanitizer (librdkafka itself is not instrumented):
    # a consumer thread and a fixed-rate producer against a real broker, every record once.
    # Then a SASL producer against the PLAINTEXT listener: kb_wait_reachable names the handshake.
    # No TSan here: librdkafka starts its threads with C11 thrd_create, which TSan does not
    # intercept, and TSan's allocator crashes on the first malloc in such a thread.
    from kbench.kafka import admin

    topic = "sanitized-" + sanitize.replace(",", "-")
    admin.create_topic(kafka1.client_props(), topic, partitions=2)
    exe = _clang(
        tmp_path / "test_kafka_clients",
        ROOT / "tests" / "c" / "test_kafka_clients.c",
        sanitize,
        CLIENTS,
        ("rdkafka",),
    )
    proc = subprocess.run(
        [str(exe), kafka1.bootstrap_servers, topic],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1", "TSAN_OPTIONS": "halt_on_error=1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-6000:]
    assert proc.stdout.startswith("ok ") and int(proc.stdout.split()[1]) >= 13, proc.stdout


def _batch_seeds() -> list[bytes]:
    seeds = []
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
        recs = [
            Record(
                key=None if i % 2 else b"key%d" % i,
                value=None if i == 3 else b"value " * i,
                timestamp=1000 + i,
                headers=tuple(Header(f"h{j}", b"x" * j) for j in range(i % 3)),
            )
            for i in range(6)
        ]
        b = batch.encode(recs, codec)
        seeds += [bytes([0]) + b, bytes([1]) + b, bytes([2]) + b[: len(b) - 3], bytes([3]) + b]
    return seeds


# Inputs the fuzzers once found a bug with, kept as seeds so every run replays them.
REGRESSIONS = {
    # baseOffset INT64_MIN + a negative lastOffsetDelta: signed overflow (UBSan) in the segment reader
    "segment": [
        base64.b64decode(
            "AAAAAAAAAAAAAAA5/////wKeQfCyAAAAKAsAACBhAAAAAAAAAAAAAAAAAP//////////////////AAAAAQ4AAAABAnYAAAAAAAAAAAAAAABU"
            "/////wIrYLlHAAEAAAABAAAAAAAAAAEAAAAAAQAAAP//////////////////AAAAAh+LCAAAAAAAAP9TYmBgYBQrQwAGJQYGJlQRAIY3v1Yk"
            "AAAAgAAAAAAAAAAAAABf/////wL///8C15PgaAADAAD//wAAAAUotS/9AFj1AAB4XgAAAAFSdgBeAAACBAYIBQABUwDRAQ=="
        )
    ],
    "batch": [],
}


def _segment_seeds() -> list[bytes]:
    bs = [
        batch.encode([Record(value=b"v" * (10 * i + 1), timestamp=i)] * (i + 1), c)
        for i, c in enumerate(["none", "gzip", "snappy", "lz4", "zstd"])
    ]
    whole = b"".join(bs)
    return [whole, whole[:-7], bs[0] + b"\x00" * 13, bs[4]]


def _codec_seeds() -> list[bytes]:
    from kbench.model import codecs

    samples = [b"", b"a", b"hello kafka " * 40, bytes(range(256)) * 8]
    return [
        bytes([i | (nib << 4)]) + codecs.compress(s, name)
        for i, name in enumerate(["none", "gzip", "snappy", "lz4", "zstd"])
        for s in samples
        for nib in (0, 12)
    ]


SEEDS = {"batch": _batch_seeds, "segment": _segment_seeds, "codecs": _codec_seeds}


@pytest.mark.parametrize("harness", ["batch", "segment", "codecs"])
def test_fuzz(harness: str, tmp_path: Path) -> None:
    exe = _clang(
        tmp_path / f"fuzz_{harness}", ROOT / "tests" / "fuzz" / f"fuzz_{harness}.c", "fuzzer,address,undefined"
    )
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, s in enumerate(SEEDS[harness]() + REGRESSIONS.get(harness, [])):
        (corpus / f"seed{i:03d}").write_bytes(s)
    proc = subprocess.run(
        [
            str(exe),
            f"-max_total_time={FUZZ_SECONDS}",
            "-rss_limit_mb=2048",
            "-timeout=10",
            "-max_len=65536",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
        ],
        capture_output=True,
        text=True,
        timeout=FUZZ_SECONDS + 120,
    )
    tail = proc.stderr[-4000:]
    assert proc.returncode == 0, tail
    assert "Done " in tail and "runs in" in tail
    runs = int(tail.split("Done ")[1].split()[0])
    assert runs > 1000, tail
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("leak-*"))
