"""Consumer groups: k consumers share a topic's partitions (real group membership, assignment,
committed offsets) and the group's lost/duplicated counts are exact per partition; the
catch-up experiment (G) drains a backlog with such a group, and a member that dies mid-drain
fails the repetition by name."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from test_engine_runner import opts

from kbench.cli import main as cli_main
from kbench.engine import plan as plan_mod
from kbench.engine import store
from kbench.engine.cell import Cell
from kbench.engine.live import LiveFigures
from kbench.engine.plan import PlanError, TransportDef
from kbench.engine.runner import execute
from kbench.engine.transports.base import RunRequest, TransportError
from kbench.engine.transports.kafka import KafkaTransport
from kbench.engine.transports.local_pool import LocalPool
from kbench.engine.transports.measure import JobInputs
from kbench.experiments import g_drain
from kbench.experiments.g_axes import axis, catch_up
from kbench.kafka import admin, drivers, merge
from kbench.model import corpus


def _part(p: int, start: int, end: int, runs: Sequence[tuple[int, int]]) -> dict[str, Any]:
    return {
        "partition": p,
        "start": start,
        "end": end,
        "records": sum(b - a for a, b in runs),
        "bytes": 0,
        "runs": [list(r) for r in runs],
    }


def test_a_catch_up_sweep_on_dask_workers_is_refused_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # DaskPool runs timed repetitions only: the plan refuses a catch-up drain there before anything runs
    p = tmp_path / "p.toml"
    sweep = '[[sweep]]\nexperiments = ["G"]\nrate = "saturated"\nbacklog_bytes = 1000000\nconsumers = [2]\n'
    p.write_text('name = "x"\n[transport]\nkind = "local"\nconsumer_group = true\n' + sweep)
    assert plan_mod.load(str(p)).sweeps[0].extras["backlog_bytes"] == (1000000,)  # on this machine: accepted
    p.write_text('name = "x"\n[transport]\nkind = "local"\nworkers = "tcp://127.0.0.1:8786"\n' + sweep)
    with pytest.raises(PlanError) as e:
        plan_mod.load(str(p))
    assert str(e.value) == (
        "sweep[0].backlog_bytes: a catch-up drain runs on this machine's driver pool, not on Dask workers; "
        "drop transport.workers (--workers) or run this sweep in a plan of its own"
    )
    # kbench run --workers on a local plan: the same line, before anything is written
    p.write_text('name = "x"\n[transport]\nkind = "local"\nconsumer_group = true\n' + sweep)
    capsys.readouterr()
    rc = cli_main(["run", str(p), "-o", str(tmp_path / "run"), "--workers", "tcp://127.0.0.1:8786"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and not (tmp_path / "run").exists()
    assert err == [f"kbench: error: {e.value}"], err


def test_group_counts_are_exact_per_partition() -> None:
    # member 1 read partition 0 up to 60, was revoked, member 2 re-read 50..100 (10 duplicates);
    # partition 1: member 2 read 0..30 and 40..50 of 0..50: 10 lost, though the totals would hide it
    m1 = [_part(0, 0, 100, [(0, 60)]), _part(1, 0, -1, [])]
    m2 = [_part(0, 0, 100, [(50, 100)]), _part(1, 0, 50, [(0, 30), (40, 50)])]
    g = merge.group_counts([m1, m2])
    by = {r["partition"]: r for r in g["partitions"]}
    assert by[0] == {"partition": 0, "stored": 100, "records": 110, "read": 100, "duplicates": 10, "lost": 0}
    assert by[1] == {"partition": 1, "stored": 50, "records": 40, "read": 40, "duplicates": 0, "lost": 10}
    assert (g["records"], g["unique"], g["duplicates"], g["lost"], g["stored_records"]) == (150, 140, 10, 10, 150)
    # the producer's count raises the loss when fewer records were stored than it sent
    assert merge.group_counts([m1, m2], expected=160)["lost"] == 20
    merged = merge.merge_consumers([{"records": 60, "parts": m1}, {"records": 90, "parts": m2}])
    assert (merged["unique"], merged["duplicates"], merged["lost"]) == (140, 10, 10)


def test_group_plan_keys_are_checked(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    base = 'name = "x"\n[[sweep]]\nexperiments = ["G"]\nrate = "saturated"\n'
    p.write_text(base + "consumers = [1, 2]\n")
    with pytest.raises(PlanError, match="backlog_bytes"):
        plan_mod.load(str(p))
    p.write_text(base + "backlog_bytes = 1000000\nconsumers = [1, 2]\nfetch_max_bytes = [65536, 1048576]\n")
    cells = plan_mod.expand(plan_mod.load(str(p)))
    assert sorted((axis(c, "consumers"), axis(c, "fetch_max_bytes")) for c in cells) == [
        (1, 65536),
        (1, 1048576),
        (2, 65536),
        (2, 1048576),
    ]
    assert all(catch_up(c) and c.extras["max_partition_fetch_bytes"] == 1048576 for c in cells)
    assert all(c.extras["fetch_min_bytes"] == 1 for c in cells)
    p.write_text('name = "x"\n[transport]\nconsumers = 2\n[[sweep]]\nexperiments = ["A"]\nrate = 100\n')
    with pytest.raises(PlanError, match="consumer_group = true"):
        plan_mod.load(str(p))
    p.write_text(
        'name = "x"\n[transport]\nconsumers = 2\nconsumer_group = true\n[[sweep]]\nexperiments = ["A"]\nrate = 100\n'
    )
    assert plan_mod.load(str(p)).transport.consumer_group


# ---------------------------------------------------------------------------- real Kafka


@pytest.mark.kafka
def test_a_group_of_two_reads_every_record_once(kafka1: Any, json_records: tuple[bytes, ...]) -> None:
    props = kafka1.client_props()
    topic = "group-of-two"
    admin.create_topic(props, topic, partitions=4)
    # small batches and one batch per fetch: the drain lasts long enough for both members to join
    spec = drivers.ProducerSpec(
        topic=topic,
        props={**props, "batch.size": "2000", "linger.ms": "0"},
        mode="saturated",
        count=10_000,
        keys="round-robin",
        nkeys=64,
    )
    sent = drivers.produce(spec, json_records, run_id=7)
    assert sent.delivered == 10_000
    cprops = {
        **props,
        "group.id": "kbench-test-two",
        "fetch.max.bytes": "1000",
        "message.max.bytes": "1000",
        "max.partition.fetch.bytes": "1",
    }
    # held until both are ready, then released together (as G's members): started one after the
    # other, the first sometimes read all 10,000 records and committed before the second joined
    members = [
        drivers.new_consumer(cprops, topic, 7, 0, 60.0, group=True, from_beginning=True, hold=True) for _ in range(2)
    ]
    bgs = [drivers.Background(m, f"member-{i}") for i, m in enumerate(members)]
    for m, b in zip(members, bgs, strict=True):
        while not m.ready and not b.done.is_set():
            b.done.wait(0.01)
    for m in members:
        m.release()
    res = [b.result() for b in bgs]
    assert not any(r["timed_out"] for r in res)
    g = merge.group_counts([r["parts"] for r in res], expected=10_000)
    for row in g["partitions"]:  # every partition: each stored record read exactly once
        assert row["stored"] > 0 and row["read"] == row["stored"] and row["duplicates"] == 0 and row["lost"] == 0, row
    assert g["unique"] == g["records"] == 10_000 and g["lost"] == 0
    assert all(r["rebalances"] >= 1 and r["records"] > 0 for r in res), [(r["rebalances"], r["records"]) for r in res]
    # the group committed where it stopped: a third member of the same group finds nothing left
    late = drivers.new_consumer(cprops, topic, 7, 0, 20.0, group=True, from_beginning=True)
    r3 = drivers.Background(late, "late").result()
    assert r3["records"] == 0 and not r3["timed_out"]


#: Stands in for a consumer driver: runs the real one, passes its READY on, then SIGKILLs it
#: and itself (a member that dies after it was assigned its start offsets, before its result).
_KILL_AFTER_READY = """
import os, signal, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
child.stdin.write(sys.stdin.readline())
child.stdin.close()
sys.stdout.write(child.stdout.readline())
sys.stdout.flush()
child.kill()
child.wait()
os.kill(os.getpid(), signal.SIGKILL)
"""


class _KillSecondConsumer(KafkaTransport):
    def _make_pool(self, tmp: Path) -> LocalPool:
        spawned = {"consumer": 0}

        def launch(role: str, argv: Sequence[str], kw: dict[str, Any]) -> subprocess.Popen[str]:
            spawned[role] = spawned.get(role, 0) + 1
            if role == "consumer" and spawned[role] == 2:
                argv = [sys.executable, "-c", _KILL_AFTER_READY, *argv]
            return subprocess.Popen(list(argv), **kw)

        return LocalPool(tmp, self.defn.header_sample, launch=launch)


def _catch_up_request(codec: str, consumers: int, topic: str) -> RunRequest:
    cell = Cell(
        cell_id="g-000",
        sweep="g",
        experiments=("G",),
        codec=codec,
        corpus="json",
        batch_size=16384,
        linger_ms=5,
        partitions=2,
        acks="1",
        rate="saturated",
        topic_compression="producer",
        extras={
            "consumers": consumers,
            "backlog_bytes": 2_000_000,
            "fetch_max_bytes": 65536,
            "max_partition_fetch_bytes": 65536,
        },
    )
    return RunRequest(cell, topic, corpus.generate("json", 200_000, seed=3), None, 10.0, 0.0)


def test_a_drains_members_get_gs_settings_unless_the_plan_says_otherwise() -> None:
    """A member that joins a moment after the first must not wait for the first one's next
    heartbeat at the client's default 3 s (it read nothing for 3.0 s in 2 of 8 drains), and a
    librdkafka member's fetcher must not stop for up to 1 s at 100,000 queued records: G's members
    heartbeat every 100 ms and librdkafka's queue 1,000,000 records (a Java member has no such
    setting); a plan's client property wins, the cell's fetch axes win over both."""
    req = _catch_up_request("lz4", 2, "hb")
    inputs = JobInputs({}, "127.0.0.1:9", 64)
    jobs = g_drain.catch_up_jobs(req, inputs)
    assert jobs is not None and jobs.consumer is not None
    props = jobs.consumer["props"]
    assert props["heartbeat.interval.ms"] == "100" and props["queued.min.messages"] == "1000000"
    assert props["queued.max.messages.kbytes"] == "1048576" and props["fetch.max.bytes"] == "65536"
    assert jobs.consumer["mallopt"] == {"M_TRIM_THRESHOLD": 1 << 30, "M_MMAP_THRESHOLD": 32 << 20}
    planned = dataclasses.replace(
        req,
        client_properties={"heartbeat.interval.ms": "3000", "queued.min.messages": "100000", "fetch.max.bytes": "1"},
    )
    jobs = g_drain.catch_up_jobs(planned, inputs)
    assert jobs is not None and jobs.consumer is not None
    props = jobs.consumer["props"]
    assert props["heartbeat.interval.ms"] == "3000" and props["queued.min.messages"] == "100000"
    assert props["fetch.max.bytes"] == "65536"
    java = dataclasses.replace(req, cell=dataclasses.replace(req.cell, client="java"))
    jobs = g_drain.catch_up_jobs(java, inputs)
    assert jobs is not None and jobs.consumer is not None
    assert jobs.consumer["props"]["heartbeat.interval.ms"] == "100"
    assert not any(k.startswith("queued.") for k in jobs.consumer["props"]) and "mallopt" not in jobs.consumer


def test_a_member_sets_glibcs_malloc_thresholds_or_says_which_it_cannot() -> None:
    """G's librdkafka members keep their heap (the job's ``mallopt``): the driver sets what glibc
    accepts and fails on a parameter it does not know or a value out of mallopt's range, naming it."""
    code = (
        "from kbench.kafka import worker\n"
        "worker.set_malloc({'M_TRIM_THRESHOLD': 1 << 30, 'M_MMAP_THRESHOLD': 32 << 20})\n"
        "for bad in ({'M_ARENA_MAX': 1}, {'M_TRIM_THRESHOLD': -5}, {'M_MMAP_THRESHOLD': '1'}):\n"
        "    try:\n"
        "        worker.set_malloc(bad)\n"
        "    except ValueError as e:\n"
        "        print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == [
        "mallopt M_ARENA_MAX: unknown; the driver sets M_TRIM_THRESHOLD, M_MMAP_THRESHOLD",
        "mallopt M_TRIM_THRESHOLD=-5: give an int from 0 to 2147483647",
        "mallopt M_MMAP_THRESHOLD='1': give an int from 0 to 2147483647",
    ]


@pytest.mark.kafka
def test_a_member_killed_mid_drain_fails_the_repetition_by_name(kafka1: Any) -> None:
    t = _KillSecondConsumer(TransportDef(kind="bootstrap", bootstrap=kafka1.bootstrap_servers))
    t.open()
    try:
        with pytest.raises(TransportError, match=r"consumer-2 worker: "):
            t.run(_catch_up_request("lz4", 2, "killed-member"))
    finally:
        t.close()


@pytest.mark.kafka
def test_a_drain_shows_its_stages_live(kafka1: Any) -> None:
    """The live status of a catch-up repetition names its stage (the backlog produced, written
    back, drained) in that order, each pushed as it starts, and the drain's figures are of it."""
    pushed: list[LiveFigures] = []
    t = KafkaTransport(TransportDef(kind="bootstrap", bootstrap=kafka1.bootstrap_servers))
    t.open()
    try:
        res = t.run(dataclasses.replace(_catch_up_request("lz4", 2, "live-stages"), live=pushed.append))
    finally:
        t.close()
    assert res.drain is not None and res.drain["lost"] == 0
    assert list(dict.fromkeys(f.stage for f in pushed)) == ["backlog", "write-back", "drain"]
    assert all(f.producer_cpu_pct is None and f.msgs_s is None for f in pushed if f.stage == "drain")


@pytest.mark.kafka
def test_catch_up_repetition_through_the_runner(tmp_path: Path, kafka1: Any) -> None:
    """G end to end on the session cluster: rows OK, every record drained once, rates and CPU > 0;
    then a run whose second member is killed: FAILED_RUN naming consumer-2, no OK row."""
    p = tmp_path / "g.toml"
    p.write_text(
        f"""
name = "g"
repetitions = 1
warmup = false
duration_s = 5
min_window_s = 0
max_steal_pct = 100
[transport]
kind = "bootstrap"
bootstrap = "{kafka1.bootstrap_servers}"
broker_pids = [{kafka1.pids[0]}]
[[sweep]]
experiments = ["G"]
codec = ["zstd:3"]
rate = "saturated"
partitions = 2
backlog_bytes = 2000000
consumers = [2]
fetch_max_bytes = 65536
max_partition_fetch_bytes = 65536
"""
    )
    plan = plan_mod.load(str(p))
    out = execute(opts(tmp_path / "ok", plan), KafkaTransport(plan.transport))
    rows = store.read_rows(out.run_dir / "G.csv")
    assert [r["status"] for r in rows] == ["OK"], rows
    r = rows[0]
    assert r["consumers"] == "2" and r["lost"] == "0" and r["duplicated"] == "0"
    assert int(r["drain_records"]) == int(r["messages"]) > 0
    assert float(r["drain_records_per_s"]) > 0 and float(r["consumer_cpu_s_per_gb"]) > 0
    assert float(r["broker_cpu_s_per_gb"]) > 0
    bad = execute(opts(tmp_path / "bad", plan), _KillSecondConsumer(plan.transport))
    rows = store.read_rows(bad.run_dir / "G.csv")
    assert rows and all(x["status"] == "FAILED_RUN" and "consumer-2" in x["reason"] for x in rows), rows


def test_g_row_against_a_hand_calculation() -> None:
    from kbench.engine import rules
    from kbench.engine.transports.base import CpuSample, RunResult

    c = _catch_up_request("zstd:3", 2, "t").cell
    gb = 10**9
    res = RunResult(
        messages_sent=1000,
        messages_acked=1000,
        payload_bytes=2 * gb,
        elapsed_s=1.0,
        target_rate=None,
        achieved_rate=1000.0,
        consumed=1000,
        lost=0,
        duplicated=0,
        cpu=(
            CpuSample("consumer-1", 3.0, 1.0, 8.0, loadgen_s=1.0, client_s=3.0, window_payload_bytes=gb),
            CpuSample("consumer-2", 1.0, 1.0, 5.0, loadgen_s=0.5, client_s=1.5, window_payload_bytes=gb),
            CpuSample("broker-1", 2.0, 2.0, 4.0, pid=9, window_payload_bytes=2 * gb),
        ),
        steal_pct=0.0,
        nic_bytes={"broker-1": (3 * gb, 10), "producer": (5, 5)},
        drain={
            "consumers": 2,
            "records": 1000,
            "unique": 1000,
            "bytes": 2 * gb,
            "lost": 0,
            "duplicated": 0,
            "stored_records": 1000,
            "span_s": 4.0,
            "members": [{"rebalances": 2}, {"rebalances": 1}],
        },
    )
    (row,) = rules.rows_for(c, 1, res, corpus.generate("json", 5000), 4.0, 1)["G"]
    assert row["status"] == "OK", row["reason"]
    assert (row["consumers"], row["backlog_bytes"], row["fetch_max_bytes"]) == (2, 2_000_000, 65536)
    assert row["drain_records_per_s"] == 250.0 and row["drain_mb_per_s"] == 500.0
    assert row["consumer_usr_s_per_gb"] == 2.0 and row["consumer_sys_s_per_gb"] == 1.0
    assert row["consumer_cpu_s_per_gb"] == 3.0
    assert row["consumer_app_s_per_gb"] == 0.75 and row["consumer_client_s_per_gb"] == 2.25
    assert row["member_cpu_s_per_gb_max"] == 4.0 and row["member_cpu_pct_max"] == 100.0  # 4 CPU-s over 4 s
    assert row["broker_cpu_s_per_gb"] == 2.0 and row["broker_cpu_pct"] == 100.0
    assert row["broker_nic_tx_bytes_per_gb"] == 1.5 * gb and row["rebalances"] == 3
    # a group that lost records is FAILED_LOSS, as every other experiment's rows
    lossy = dataclasses.replace(res, lost=3, drain={**res.drain, "lost": 3})
    (bad,) = rules.rows_for(c, 1, lossy, corpus.generate("json", 5000), 4.0, 1)["G"]
    assert bad["status"] == "FAILED_LOSS" and bad["lost"] == 3


def test_decompression_phase_is_timed_for_a_codec_and_zero_for_none() -> None:
    from kbench.model import microbench
    from kbench.model.codecs import parse_spec

    c = corpus.generate("json", 300_000, seed=4)
    assert microbench.batch_decompress_us(c, parse_spec("none"), 65536) == 0.0
    z = microbench.batch_decompress_us(c, parse_spec("zstd:3"), 65536)
    zc = microbench.batch_compress_us(c, parse_spec("zstd:3"), 65536)
    assert 0 < z < zc  # zstd decompresses faster than it compresses at level 3


@pytest.mark.kafka
def test_a_reports_the_consumer_phases_with_a_local_group_of_two(tmp_path: Path, kafka1: Any) -> None:
    """A on the session cluster, its consumers a local group of two: every record read once (lost
    and duplicated 0, per partition); the consumer's decompression phase is > 0 for zstd and 0 for
    none, and decompression + fetch wait is e2e p50 − service p50."""
    p = tmp_path / "a.toml"
    p.write_text(
        f"""
name = "a"
repetitions = 1
warmup = false
duration_s = 3
min_window_s = 0
max_steal_pct = 100
saturation_bound_ms = 60000
corpus_size = 500000
[transport]
kind = "bootstrap"
bootstrap = "{kafka1.bootstrap_servers}"
header_sample = 10
consumers = 2
consumer_group = true
[[sweep]]
experiments = ["A"]
codec = ["none", "zstd:3"]
partitions = 4
key_policy = "round-robin"
batch_size = 65536
linger_ms = 20
rate = 2000
"""
    )
    plan = plan_mod.load(str(p))
    out = execute(opts(tmp_path / "run", plan), KafkaTransport(plan.transport))
    rows = {r["codec"]: r for r in store.read_rows(out.run_dir / "A.csv")}
    assert set(rows) == {"none", "zstd:3"}, rows
    for codec, r in rows.items():
        assert (r["lost"], r["duplicated"]) == ("0", "0"), (codec, r["status"], r["reason"])
        dec, wait = float(r["phase_decompress_p50_us"]), float(r["phase_fetch_wait_p50_us"])
        assert (dec > 0) == (codec != "none"), (codec, dec)
        assert dec + wait == pytest.approx(float(r["e2e_p50_us"]) - float(r["service_p50_us"]), abs=1.0)


def test_g_through_runner_store_and_report_with_a_fake_drain(tmp_path: Path) -> None:
    """G's rows, console table and report section from a transport whose drain is made up: the
    plumbing (columns, the consumers axis splitting cells, the section's table) without Kafka."""
    from engine_fakes import FakeTransport

    from kbench.engine.transports.base import CpuSample, RunResult
    from kbench.reporting import report

    class Drains(FakeTransport):
        def run(self, req: RunRequest) -> RunResult:
            res = super().run(req)
            k = axis(req.cell, "consumers")
            per = 10**9 // k
            cpu = tuple(
                CpuSample(f"consumer-{i + 1}", 1.0, 0.5, 4.0, loadgen_s=0.3, client_s=1.2, window_payload_bytes=per)
                for i in range(k)
            ) + (CpuSample("broker-0", 1.0, 1.0, 4.0, pid=1, window_payload_bytes=10**9),)
            drain = {
                "unique": 1000,
                "records": 1000,
                "bytes": 10**9,
                "lost": 0,
                "duplicated": 0,
                "span_s": 2.0 / k,
                "disk_read_bytes": 3_000_000 * k,
            }
            return dataclasses.replace(res, cpu=cpu, drain={**drain, "members": [{}] * k})

    p = tmp_path / "g.toml"
    p.write_text(
        'name = "g"\nrepetitions = 2\nwarmup = false\nduration_s = 1\nmin_window_s = 0\n[transport]\nkind = "local"\n'
        '[[sweep]]\nexperiments = ["G"]\ncodec = ["none", "lz4"]\nrate = "saturated"\n'
        "backlog_bytes = 1000000\nconsumers = [1, 2]\n"
    )
    plan = plan_mod.load(str(p))
    out = execute(opts(tmp_path, plan), Drains())
    rows = store.read_rows(out.run_dir / "G.csv")
    assert len(rows) == 8 and {r["status"] for r in rows} == {"OK"}
    by_k = {r["consumers"]: float(r["drain_records_per_s"]) for r in rows}
    assert by_k == {"1": 500.0, "2": 1000.0}
    # members' CPU summed per GB drained: 1.5 CPU-s each, one or two members
    assert {(r["consumers"], float(r["consumer_cpu_s_per_gb"])) for r in rows} == {("1", 1.5), ("2", 3.0)}
    # what the host read from disk during the drain, in MB
    assert {(r["consumers"], float(r["drain_disk_read_mb"])) for r in rows} == {("1", 3.0), ("2", 6.0)}
    md = report.write([out.run_dir], tmp_path / "rep", with_plots=False).markdown.read_text()
    section = md.split("Experiment G · catch-up", 1)[1].split("\n## ", 1)[0]
    # the section's first table (its verdict table follows after a blank line)
    first = section[section.index("| machine") :].split("\n\n", 1)[0]
    table = [ln for ln in first.splitlines() if ln.startswith("|")]
    assert "records/s median [range]" in table[0] and len(table) == 2 + 4  # header, rule, 2 codecs x 2 groups
    assert sum(" 1,000 " in ln for ln in table) == 2 and sum(" 500 " in ln for ln in table) == 2
    # a broker's unreadable CPU leaves G's row OK, its broker columns NA, and says why
    res = Drains().run(_catch_up_request("lz4", 1, "t"))
    res = dataclasses.replace(res, cpu=(*res.cpu[:-1], CpuSample("broker-0", None, None, 4.0, note="no local pid")))
    from kbench.engine import rules

    (row,) = rules.rows_for(_catch_up_request("lz4", 1, "t").cell, 1, res, corpus.generate("json", 5000), 4.0, 1)["G"]
    assert row["status"] == "OK" and row["broker_cpu_s_per_gb"] is None and "broker-0" in row["reason"]


@pytest.mark.kafka
def test_java_and_c_group_consumers_agree_on_a_backlog(tmp_path: Path, kafka1: Any) -> None:
    """The same backlog drained by the C consumer's group and by the Java driver's: the same
    records and bytes, every partition read whole (docs/drivers.md: the job's ``group``)."""
    from kbench.engine.transports.local_pool import spawn

    props = kafka1.client_props()
    topic = "java-vs-c"
    admin.create_topic(props, topic, partitions=3)
    recs = corpus.generate("json", 200_000, seed=5).records
    spec = drivers.ProducerSpec(
        topic=topic,
        props={**props, "compression.type": "zstd"},
        mode="saturated",
        count=5000,
        keys="round-robin",
        nkeys=32,
    )
    assert drivers.produce(spec, recs, run_id=11).delivered == 5000
    c = drivers.Background(
        drivers.new_consumer({**props, "group.id": "c-group"}, topic, 11, 0, 60.0, group=True, from_beginning=True),
        "c",
    ).result()
    job = {
        "props": {**props, "group.id": "java-group"},
        "topic": topic,
        "run_id": 11,
        "expected": 0,
        "timeout": 60.0,
        "skip_s": 0.0,
        "group": True,
        "from_beginning": True,
    }
    w = spawn("consumer", job, tmp_path / "java.err", "java")
    w.expect("READY", 120.0)
    j = w.result(120.0)
    for r in (c, j):
        assert not r["timed_out"] and r["commit_errors"] == 0
    assert (j["records"], j["bytes"], j["unique"], j["duplicates"]) == (c["records"], c["bytes"], c["unique"], 0)
    assert c["records"] == 5000
    gc, gj = merge.group_counts([c["parts"]]), merge.group_counts([j["parts"]])
    assert gc["partitions"] == gj["partitions"] and gj["lost"] == 0


@pytest.mark.kafka
@pytest.mark.parametrize("client", ["librdkafka", "java"])
def test_held_members_join_only_when_released_together(tmp_path: Path, kafka1: Any, client: str) -> None:
    """G's members are held after READY (the job's ``hold``, docs/drivers.md): a held driver
    subscribes, and opens its run window, only once the runner closes its stdin; both then read the
    backlog, every record once.  A driver that ignored ``hold`` would open its window at READY,
    before the release below."""
    from kbench.engine.transports.local_pool import spawn

    props = kafka1.client_props()
    topic = f"held-{client}"
    admin.create_topic(props, topic, partitions=2)
    spec = drivers.ProducerSpec(topic=topic, props=props, mode="saturated", count=4000, keys="round-robin", nkeys=32)
    assert drivers.produce(spec, corpus.generate("json", 200_000, seed=5).records, run_id=12).delivered == 4000
    job = {
        "props": {**props, "group.id": f"held-{client}", "heartbeat.interval.ms": "100"},
        "topic": topic,
        "run_id": 12,
        "expected": 0,
        "timeout": 60.0,
        "skip_s": 0.0,
        "group": True,
        "from_beginning": True,
        "hold": True,
    }
    members = [spawn("consumer", job, tmp_path / f"m{i}.err", client) for i in range(2)]
    for m in members:
        m.expect("READY", 120.0)
    # a gap a driver that did not hold would have spent reading (its window opens at READY); not
    # a wait for anything: the release below is the synchronisation
    time.sleep(0.3)
    released = time.monotonic_ns()
    for m in members:
        m.release()
    res = [m.result(120.0) for m in members]
    assert all(r["windows"]["run"]["start_mono_ns"] >= released for r in res), [r["windows"]["run"] for r in res]
    assert all(not r["timed_out"] and r["rebalances"] >= 1 for r in res)
    g = merge.group_counts([r["parts"] for r in res], expected=4000)
    assert g["unique"] == g["records"] == 4000 and g["lost"] == 0


def test_hold_is_for_a_group_member_and_g_holds_its_drains_members() -> None:
    with pytest.raises(ValueError, match="hold is for a group member"):
        drivers.new_consumer({}, "t", 1, 0, 1.0, hold=True)
    jobs = g_drain.catch_up_jobs(_catch_up_request("lz4", 2, "held"), JobInputs({}, "127.0.0.1:9", 64))
    assert jobs is not None and jobs.consumer is not None and jobs.consumer["hold"] is True


def test_page_in_reads_every_segment_file_of_the_topic_and_nothing_else(tmp_path: Path) -> None:
    """G's page-in reads the topic's partition directories' ``.log`` files whole (not their
    indexes, not another topic's, not a topic whose name only starts the same), in every log dir;
    ``disk_read_bytes`` is /proc/vmstat's pgpgin in bytes, None where unreadable."""
    want = 0
    for d, topic, name, size in [
        ("a", "t", "t-0/00000000000000000000.log", 3 << 20),
        ("a", "t", "t-0/00000000000000012345.log", 17),
        ("b", "t", "t-1/00000000000000000000.log", 9 << 20),
        ("a", "t", "t-0/00000000000000000000.index", 4096),
        ("a", "t-x", "t-x-0/00000000000000000000.log", 5000),
        ("b", "u", "u-0/00000000000000000000.log", 7000),
    ]:
        f = tmp_path / d / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"k" * size)
        want += size if topic == "t" and name.endswith(".log") else 0
    assert g_drain.page_in((tmp_path / "a", tmp_path / "b"), "t") == want == (12 << 20) + 17
    assert g_drain.page_in((tmp_path / "a",), "nothing") == 0
    vm = tmp_path / "vmstat"
    vm.write_text("nr_free_pages 5\npgpgin 1234\npgpgout 9\n")
    assert g_drain.disk_read_bytes(vm) == 1234 * 1024
    vm.write_text("nr_free_pages 5\n")
    assert g_drain.disk_read_bytes(vm) is None and g_drain.disk_read_bytes(tmp_path / "none") is None

    # the live figure between two readings of procps's vmstat -s ("K paged in": the same counter)
    def paged_in_kib() -> int:
        out = subprocess.run(["vmstat", "-s"], capture_output=True, text=True, check=True).stdout
        return int(next(ln.split()[0] for ln in out.splitlines() if ln.strip().endswith("K paged in")))

    before = paged_in_kib()
    real = g_drain.disk_read_bytes()
    after = paged_in_kib()
    assert real is not None and before * 1024 <= real <= after * 1024


@pytest.mark.kafka
def test_a_drain_on_a_cluster_kbench_runs_here_reads_its_backlog_into_memory_first(
    kafka1: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local cluster's transport gives the pool its log dirs; the drain then reads the backlog's
    segment files once after the write-back (the live stage "page-in", between write-back and
    drain), every byte the topic stores, and records what the host read from disk during it."""

    class Borrowed:
        broker_config = kafka1.broker_config

        def start(self) -> Any:
            return kafka1.state

        def stop(self) -> None:
            pass

    class Here(KafkaTransport):
        def _make_cluster(self) -> Any:
            return Borrowed()

    seen: list[tuple[int, int]] = []
    real = g_drain.page_in

    def page_in(log_dirs: Sequence[Path], topic: str) -> int:
        stored = sum(f.stat().st_size for d in log_dirs for f in d.glob(f"{topic}-[0-9]*/*.log"))
        seen.append((real(log_dirs, topic), stored))
        return seen[-1][0]

    monkeypatch.setattr(g_drain, "page_in", page_in)
    pushed: list[LiveFigures] = []
    t = Here(TransportDef(kind="local"))
    t.open()
    try:
        assert t._local is not None and t._local.log_dirs == tuple(Path(b.data_dir) for b in kafka1.state.brokers)
        res = t.run(dataclasses.replace(_catch_up_request("lz4", 1, "page-in"), live=pushed.append))
    finally:
        t.close()
    assert list(dict.fromkeys(f.stage for f in pushed)) == ["backlog", "write-back", "page-in", "drain"]
    assert res.drain is not None and res.drain["lost"] == 0
    assert len(seen) == 1 and seen[0][0] == seen[0][1] > 100_000  # 2 MB of JSON, lz4-compressed
    assert res.drain["page_in_bytes"] == seen[0][0] and res.drain["page_in_s"] >= 0
    assert isinstance(res.drain["disk_read_bytes"], int) and res.drain["disk_read_bytes"] >= 0
