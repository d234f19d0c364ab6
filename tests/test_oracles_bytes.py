"""Oracles for experiment C's bytes: every figure of C.csv recomputed by tools kbench did not write.

Two short ``kbench run``s of the same plan (none, lz4, zstd:3 on a file of JSON lines this test
wrote), one per way kbench measures stored bytes:

- ``local`` transport: kbench starts the broker and reads the partitions' segment files itself
  (``stored_bytes``, ``stored_batches``, ``batch_ratio`` from its inspector).  kbench deletes each
  topic after measuring it and removes the cluster at the end, so while the run goes the test
  hard-links every ``kbench-*`` partition's ``.log`` file into its own directory (the same inode:
  the broker's later appends are in the link, and the deletion only removes names);
- ``bootstrap`` transport: a broker this test started, configured to keep a deleted partition's
  files for an hour (``log.segment.delete.delay.ms``); kbench measures stored bytes with Kafka's
  DescribeLogDirs and ``batch_ratio`` is ``NA`` (docs/csv-schema.md).

From the segment files, with no kbench code:

- stored bytes: the size of the ``.log`` files, and the sum of the batch sizes Kafka's
  ``DumpLogSegments`` prints;
- payload bytes: the ``valueSize`` of every record ``DumpLogSegments --deep-iteration`` reads
  back, and the corpus cycled over the messages sent (the producer sends the corpus's records in
  order from the first, wrapping round);
- the batches' uncompressed bytes: each batch's records section decompressed by the Python
  ``zstandard`` / ``lz4`` bindings, plus its 61-byte header (RecordBatch v2 framing parsed here).

``ratio`` and ``batch_ratio`` are recomputed from those and must agree within 0.1 %
(docs/testing.md, "Oracles").  A third test reads a live topic written by ``kbench produce
--consume`` back with ``kcat`` and compares the C consumer's byte count.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kbenv import KBENCH_PATH
from oracles import (
    LogKeeper,
    cycled_bytes,
    dump_codecs,
    dump_log_segments,
    dump_totals,
    keeping_cluster,
    parse_log,
    partition_dirs,
    write_corpus,
)

from kbench.kafka import procstat

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
REL = 1e-3  # 0.1 %: see docs/testing.md, "Oracles"

PLAN = """
name = "oracle-bytes"
repetitions = 1
warmup = false
duration_s = 1.5
min_window_s = 0
steady_skip_s = 0

{transport}
[corpora.lines]
source = "file"
path = "{corpus}"
format = "lines"

[[sweep]]
name = "c"
experiments = ["C"]
codec = ["none", "lz4", "zstd:3"]
corpus = ["lines"]
batch_size = 16384
linger_ms = 5
partitions = 2
rate = 1500
"""


def _env() -> dict[str, str]:
    env = dict(os.environ, **{procstat.INJECT_ENV: "0"})
    env["PYTHONPATH"] = KBENCH_PATH + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="module")
def keeping_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    with keeping_cluster(tmp_path_factory.mktemp("kafka-keep")) as c:
        yield c


def run_plan(tmp: Path, records_file: Path, *extra: str, transport: str = "") -> Path:
    plan = tmp / "plan.toml"
    plan.write_text(PLAN.format(corpus=records_file, transport=transport))
    run = tmp / "run"
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "run", str(plan), "-o", str(run), "--gate-sample-s", "0.1", *extra],
        capture_output=True,
        text=True,
        timeout=600,
        env={**_env(), "TMPDIR": str(tmp / "tmp")},
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return run


def c_rows_with_files(run: Path, files_of: object) -> list[tuple[dict[str, str], list[Path]]]:
    run_id = json.loads((run / "manifest.json").read_text())["run_id"]
    with (run / "C.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {r["codec"] for r in rows} == {"none", "lz4", "zstd:3"}
    out = []
    for r in rows:
        suffix = f"r{r['rep']}" if r["attempt"] == "1" else f"r{r['rep']}a{r['attempt']}"
        logs = files_of(f"kbench-{run_id}-{r['cell_id']}-{suffix}")  # type: ignore[operator]
        assert logs, r
        out.append((r, logs))
    return out


def oracle(records: list[bytes], r: dict[str, str], logs: list[Path]) -> tuple[int, int, int, int]:
    """(payload, stored, uncompressed batch bytes, batches) of one repetition, from its files."""
    messages = int(r["messages"])
    assert messages > 1000, r
    on_disk = sum(f.stat().st_size for f in logs)
    text = dump_log_segments(logs)
    dump = dump_totals(text)
    # librdkafka sends a batch uncompressed when compressing would not make it smaller (a batch of a
    # few short records): the stored codecs are what Kafka's tool reads, the cell's codec among them
    # (read from the segments by kbench); a cluster kbench did not start gives it no segment files, and
    # its stored codec is inferred from the topic's and producer's settings (stored_source says so):
    # the codec the cell sent, among those Kafka's tool reads, maybe beside an uncompressed batch
    r_codecs = set(r["stored_codecs"].split("|"))
    if "inferred" in r["stored_source"]:
        assert r_codecs <= dump_codecs(text) and r["codec"].split(":")[0] in r_codecs, (r, dump_codecs(text))
    else:
        assert r_codecs == dump_codecs(text) and r["codec"].split(":")[0] in r_codecs, (r, dump_codecs(text))
    parsed = [b for f in logs for b in parse_log(f)]
    assert dump["stored"] == on_disk and dump["batches"] == len(parsed)
    assert dump["count"] == dump["records"] == sum(b[2] for b in parsed) == messages, (r, dump)
    # the values Kafka read back are the corpus cycled over the messages sent
    assert dump["values"] == cycled_bytes(records, messages), (r, dump)
    unc = sum(b[1] for b in parsed)
    codec = r["codec"].split(":")[0]
    if codec == "none":  # the uncompressed batch is the stored one
        assert unc == on_disk
    else:
        assert unc > 1.5 * on_disk, (r, unc, on_disk)
    return dump["values"], on_disk, unc, len(parsed)


def test_c_csv_bytes_local_transport_against_the_segment_files(tmp_path: Path) -> None:
    records = write_corpus(tmp_path / "corpus.txt")
    (tmp_path / "tmp").mkdir()
    keep = tmp_path / "keep"
    with LogKeeper(tmp_path / "tmp", keep):
        run = run_plan(tmp_path, tmp_path / "corpus.txt", transport='[transport]\nkind = "local"\n')

    def files_of(topic: str) -> list[Path]:
        dirs = sorted(d for d in keep.glob(f"{topic}-*") if d.name.rsplit("-", 1)[1].isdigit())
        assert len(dirs) == 2, (topic, sorted(x.name for x in keep.iterdir()))
        return sorted(f for d in dirs for f in d.glob("*.log"))

    for r, logs in c_rows_with_files(run, files_of):
        payload, stored, unc, batches = oracle(records, r, logs)
        assert r["stored_source"] == "segment files (kbench inspector)", r
        assert int(r["payload_bytes"]) == pytest.approx(payload, rel=REL), (r, payload)
        assert int(r["stored_bytes"]) == pytest.approx(stored, rel=REL), (r, stored)
        assert int(r["stored_batches"]) == batches, (r, batches)
        assert float(r["ratio"]) == pytest.approx(payload / stored, rel=REL), r
        assert float(r["batch_ratio"]) == pytest.approx(unc / stored, rel=REL), (r, unc)


def test_c_csv_bytes_bootstrap_transport_against_the_segment_files(tmp_path: Path, keeping_broker: object) -> None:
    records = write_corpus(tmp_path / "corpus.txt", seed=13)
    (tmp_path / "tmp").mkdir()
    k = keeping_broker
    run = run_plan(
        tmp_path,
        tmp_path / "corpus.txt",
        "--bootstrap",
        k.bootstrap_servers,  # type: ignore[attr-defined]
        "--broker-pid",
        str(k.pids[0]),  # type: ignore[attr-defined]
        # a bootstrap cluster's brokers report no default compression.type to the gate
        "--force",
    )
    log_dir = Path(k.log_dirs[0])  # type: ignore[attr-defined]

    def files_of(topic: str) -> list[Path]:
        return sorted(f for d in partition_dirs(log_dir, topic, 2) for f in d.glob("*.log"))

    for r, logs in c_rows_with_files(run, files_of):
        payload, stored, _, _ = oracle(records, r, logs)
        assert r["stored_source"].startswith("DescribeLogDirs"), r
        assert int(r["payload_bytes"]) == pytest.approx(payload, rel=REL), (r, payload)
        assert int(r["stored_bytes"]) == pytest.approx(stored, rel=REL), (r, stored)
        assert float(r["ratio"]) == pytest.approx(payload / stored, rel=REL), r
        assert r["batch_ratio"] == "NA" and r["stored_batches"] == "NA", r  # not read remotely


def test_consumer_byte_count_against_kcat(tmp_path: Path, keeping_broker: object) -> None:
    """``kbench produce --consume``: the C consumer's byte count and the producer's delivered
    count against kcat reading the topic back, and against the corpus cycled over the messages."""
    kcat = shutil.which("kcat")
    assert kcat, "kcat is installed by scripts/setup.sh"
    records = write_corpus(tmp_path / "corpus.txt", seed=12)
    k = keeping_broker
    bs = k.bootstrap_servers  # type: ignore[attr-defined]
    out = tmp_path / "p" / "produce.json"  # -o names a directory
    n = 4000
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "produce", "--bootstrap", bs, "--topic", "oracle-kcat", "--create"]
        + ["--partitions", "2", "--rate", "4000", "--count", str(n), "--codec", "zstd"]
        + ["--corpus", str(tmp_path / "corpus.txt"), "--consume", "-o", str(out.parent)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    res = json.loads(out.read_text())
    assert res["producer"]["delivered"] == n and res["consumer"]["records"] == n
    kc = subprocess.run(
        [kcat, "-C", "-b", bs, "-t", "oracle-kcat", "-e", "-q", "-f", "%S\n"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert kc.returncode == 0, kc.stderr
    sizes = [int(x) for x in kc.stdout.split()]
    assert len(sizes) == n
    assert sum(sizes) == cycled_bytes(records, n)
    assert res["consumer"]["bytes"] == pytest.approx(sum(sizes), rel=REL), res["consumer"]


@pytest.mark.parametrize("client", ["java", "librdkafka"])
def test_sim_bytes_against_its_segment_files(tmp_path: Path, client: str) -> None:
    """``kbench sim --out``: the simulated transport's payload, stored and uncompressed batch bytes
    and both ratios against the segment files it wrote (DumpLogSegments, struct + the Python
    codec bindings) and the corpus (each record once)."""
    records = write_corpus(tmp_path / "corpus.txt", n=3000, seed=31)
    codecs = ["none", "lz4", "zstd:3"]
    p = subprocess.run(
        [sys.executable, "-m", "kbench", "sim", "--corpus", str(tmp_path / "corpus.txt"), "--partitions", "3"]
        + [x for c in codecs for x in ("--codec", c)]
        + ["--client", client, "--out", str(tmp_path / "out"), "--csv", str(tmp_path / "sim.csv")],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    with (tmp_path / "sim.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["codec"] for r in rows] == codecs
    for i, r in enumerate(rows):
        logs = sorted((tmp_path / "out" / f"run{i:03d}").glob("*/*.log"))
        assert len(logs) == 3, logs
        on_disk = sum(f.stat().st_size for f in logs)
        dump = dump_totals(dump_log_segments(logs))
        parsed = [b for f in logs for b in parse_log(f)]
        assert dump["stored"] == on_disk and dump["records"] == dump["count"] == len(records)
        payload = sum(map(len, records))
        assert dump["values"] == payload
        unc = sum(b[1] for b in parsed)
        assert int(r["records"]) == len(records) and int(r["batches"]) == len(parsed), r
        assert int(r["payload_bytes"]) == pytest.approx(payload, rel=REL), r
        assert int(r["stored_bytes"]) == pytest.approx(on_disk, rel=REL), r
        assert int(r["raw_batch_bytes"]) == pytest.approx(unc, rel=REL), r
        assert float(r["payload_ratio"]) == pytest.approx(payload / on_disk, rel=REL), r
        assert float(r["stored_ratio"]) == pytest.approx(unc / on_disk, rel=REL), r
