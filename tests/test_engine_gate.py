"""The environment gate: >= 12 checks, blocking vs warning, read from fixture /proc and /sys."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kbench.engine import gate
from kbench.kafka import procstat

STAT0 = "cpu  1000 0 500 8000 100 0 0 0 0 0\ncpu0 1 2 3\n"
STAT_STEAL = "cpu  1100 0 550 8800 100 0 0 50 0 0\n"  # steal 50 of 1000 ticks = 5 %
STAT_CALM = "cpu  1100 0 550 8850 100 0 0 0 0 0\n"
VM0 = "pswpin 10\npswpout 20\n"
VM1 = "pswpin 10\npswpout 25\n"


def fixture_roots(
    tmp: Path, governor: str = "performance", clock: str = "tsc", load: str = "0.10"
) -> tuple[Path, Path]:
    proc, sys_ = tmp / "proc", tmp / "sys"
    proc.mkdir()
    (proc / "loadavg").write_text(f"{load} 0.2 0.3 1/100 4242\n")
    (proc / "meminfo").write_text("MemTotal: 16000000 kB\nMemAvailable: 8000000 kB\n")
    for i in range(2):
        d = sys_ / f"devices/system/cpu/cpu{i}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(governor + "\n")
    cs = sys_ / "devices/system/clocksource/clocksource0"
    cs.mkdir(parents=True)
    (cs / "current_clocksource").write_text(clock + "\n")
    return proc, sys_


def ctx(tmp: Path, **kw: object) -> gate.GateContext:
    tmp.mkdir(exist_ok=True)
    proc, sys_ = fixture_roots(tmp)
    base: dict[str, object] = dict(
        proc=proc,
        sys_root=sys_,
        transport_kind="local",
        broker_versions=["4.1.2"],
        broker_default_compression=["producer"],
        broker_cpu_sources=["/proc"],
        disk_paths=[tmp],
        min_free_bytes=1,
        librdkafka_version="2.0.2",
        java_version="17.0.15",
        codec_versions={"zstd": "1.5.4", "lz4": "1.9.4", "snappy": "1.1.9", "zlib": "1.2.13"},
        corpus_entropies={"json": 5.1},
        sample_s=0.0,
        cpu_count=2,
        open_files_limit=65536,
        time_sync=lambda: True,
        before=gate.ProcSample(STAT0, VM0),
        after=gate.ProcSample(STAT_CALM, VM0),
    )
    base.update(kw)
    return gate.GateContext(**base)  # type: ignore[arg-type]


def by_name(report: gate.GateReport) -> dict[str, gate.CheckResult]:
    return {r.name: r for r in report.results}


def test_at_least_twelve_checks_all_pass_on_a_clean_machine(tmp_path: Path) -> None:
    rep = gate.run_gate(ctx(tmp_path))
    assert len(rep.results) >= 12
    assert len({r.name for r in rep.results}) == len(rep.results)
    assert {r.severity for r in rep.results} == {"blocking", "warning"}
    bad = [r for r in rep.results if r.outcome != "pass"]
    assert not bad, bad
    assert not rep.blocked


def test_steal_is_computed_and_blocks(tmp_path: Path) -> None:
    assert gate.steal_pct(STAT0, STAT_STEAL) == pytest.approx(5.0)
    rep = gate.run_gate(ctx(tmp_path, after=gate.ProcSample(STAT_STEAL, VM0)))
    assert by_name(rep)["CPU steal"].outcome == "fail"
    assert rep.blocked and [r.name for r in rep.blocking_failures] == ["CPU steal"]


def test_steal_is_measured_under_load_against_the_plans_limit(tmp_path: Path) -> None:
    # no /proc samples given: the gate samples itself, with one busy process per CPU
    src = procstat.FixedSteal(5.0)
    c = ctx(tmp_path / "a", before=None, after=None, sample_s=0.3, cpu_count=2, steal_source=src)
    r = by_name(gate.run_gate(c))["CPU steal"]
    assert c.loaded_cpus == 2 and src._calls == 2
    assert r.outcome == "fail" and r.blocks
    assert r.detail.startswith("5.00% under load (2 CPUs busy for 0.3s), plan limit 1%: runs will likely be INVALID")
    # the same figure under a plan that accepts 10 %
    c = ctx(
        tmp_path / "b", before=None, after=None, sample_s=0.3, steal_source=procstat.FixedSteal(5.0), steal_limit_pct=10
    )
    r = by_name(gate.run_gate(c))["CPU steal"]
    assert r.outcome == "pass" and "plan limit 10%: runs should stay valid" in r.detail
    # not measurable: unknown, never blocking
    c = ctx(tmp_path / "c", before=None, after=None, sample_s=0.0, steal_source=procstat.FixedSteal(None))
    assert by_name(gate.run_gate(c))["CPU steal"].outcome == "unknown"


@pytest.mark.parametrize(
    "kw,name,blocking",
    [
        ({"broker_versions": ["4.1.2", "3.9.0"]}, "broker versions equal", True),
        (
            {"broker_versions": ["2.0.1"], "planned_topic_compression": ["zstd"]},
            "topic compression.type",
            True,
        ),
        ({"replication_factor": 3}, "replication / min.insync / acks", True),
        (
            {"broker_versions": ["4.1.2"] * 3, "replication_factor": 3, "min_insync_replicas": 4},
            "replication / min.insync / acks",
            True,
        ),
        ({"broker_cpu_sources": [""]}, "broker CPU / stored bytes sources", False),
        ({"planned_brokers": 3}, "broker count", False),
        ({"min_free_bytes": 1 << 60}, "free disk", True),
        ({"open_files_limit": 1024}, "open-file limit", True),
        ({"librdkafka_version": None}, "librdkafka version", True),
        ({"librdkafka_version": "1.6.0"}, "librdkafka version", True),
        ({"codec_versions": {"zstd": "1.5.4"}}, "codec library versions", True),
        ({"java_version": "11.0.2"}, "Java version", True),
        ({"java_version": None}, "Java version", True),
        ({"after": gate.ProcSample(STAT_CALM, VM1)}, "swap activity", False),
        ({"time_sync": lambda: False}, "time sync", False),
        ({"corpus_entropies": {"mine": 7.9}}, "corpus entropy", False),
        ({"min_mem_available": 1 << 60}, "available memory", False),
    ],
)
def test_each_check_can_fail(tmp_path: Path, kw: dict[str, object], name: str, blocking: bool) -> None:
    rep = gate.run_gate(ctx(tmp_path, **kw))
    r = by_name(rep)[name]
    assert r.outcome == "fail", r
    assert rep.blocked is blocking


def test_governor_clocksource_and_load_warn(tmp_path: Path) -> None:
    proc, sys_ = (
        fixture_roots(tmp_path / "x", governor="powersave", clock="hpet", load="9.0")
        if (tmp_path / "x").mkdir() is None
        else (None, None)
    )
    rep = gate.run_gate(ctx(tmp_path, proc=proc, sys_root=sys_))
    names = by_name(rep)
    for n in ("CPU governor", "clock source", "load average"):
        assert names[n].outcome == "fail" and names[n].severity == "warning"
    assert not rep.blocked


def test_missing_sysfs_is_unknown_not_failure(tmp_path: Path) -> None:
    rep = gate.run_gate(ctx(tmp_path, sys_root=tmp_path / "nothing"))
    assert by_name(rep)["CPU governor"].outcome == "unknown"
    assert not rep.blocked


def test_java_not_required_for_a_bootstrap_cluster(tmp_path: Path) -> None:
    assert (
        by_name(gate.run_gate(ctx(tmp_path, java_version=None, transport_kind="bootstrap")))["Java version"].outcome
        == "pass"
    )


def _gate_cli(steal: str) -> subprocess.CompletedProcess[str]:
    import os

    env = dict(os.environ, **{procstat.INJECT_ENV: steal})
    return subprocess.run(
        [sys.executable, "-m", "kbench", "gate", "--sample-s", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.kafka  # the gate blocks without Java (Kafka 4 needs Java >= 17)
def test_gate_command_prints_its_checks() -> None:
    # steal injected (0 %): the exit status no longer depends on this host's hypervisor
    p = _gate_cli("0")
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [x for x in p.stdout.splitlines() if x.startswith("  [")]
    assert len(lines) >= 12
    assert any("blocking" in x for x in lines) and any("warning" in x for x in lines)
    assert any("CPU steal" in x and "0.00%" in x and "[ok  ]" in x for x in lines)
    p = _gate_cli("5")
    assert p.returncode == 3 and "BLOCKED (CPU steal)" in p.stderr
    assert "5.00%" in p.stdout and "runs will likely be INVALID" in p.stdout


def test_broker_default_compression_does_not_block_when_the_plan_sets_the_topic(tmp_path: Path) -> None:
    rep = gate.run_gate(ctx(tmp_path, broker_default_compression=["lz4"], planned_topic_compression=["producer"]))
    r = by_name(rep)["topic compression.type"]
    assert r.outcome == "pass" and "broker default lz4 (not used" in r.detail
    assert not rep.blocked


def test_remote_unknowns_warn_with_how_to_supply_them(tmp_path: Path) -> None:
    """A remote cluster without metrics: unknown versions and broker CPU are warnings naming the fix."""
    rep = gate.run_gate(
        ctx(
            tmp_path,
            transport_kind="bootstrap",
            broker_versions=[None, None, None],
            broker_default_compression=[None, None, None],
            broker_cpu_sources=["", "", ""],
            replication_factor=3,
            min_insync_replicas=2,
            planned_acks=["all"],
            planned_brokers=3,
            java_version=None,
        )
    )
    names = by_name(rep)
    v = names["broker versions equal"]
    assert (v.severity, v.outcome) == ("warning", "unknown") and "--broker-version" in v.detail
    c = names["broker CPU / stored bytes sources"]
    assert (c.severity, c.outcome) == ("warning", "fail") and "--broker-metrics" in c.detail
    assert names["replication / min.insync / acks"].outcome == "pass"
    assert names["broker count"].outcome == "pass"
    assert not rep.blocked


def test_remote_versions_from_metrics_pass_and_differences_block(tmp_path: Path) -> None:
    kw = dict(transport_kind="bootstrap", broker_cpu_sources=["metrics"] * 2, java_version=None)
    ok = gate.run_gate(ctx(tmp_path, broker_versions=["4.1.2", "4.1.2"], broker_version_sources=["metrics"] * 2, **kw))
    assert by_name(ok)["broker versions equal"].outcome == "pass"
    assert "(metrics)" in by_name(ok)["broker versions equal"].detail
    (tmp_path / "b").mkdir()
    bad = gate.run_gate(ctx(tmp_path / "b", broker_versions=["4.1.2", "4.0.0"], **kw))
    assert bad.blocked and [r.name for r in bad.blocking_failures] == ["broker versions equal"]


def test_acks_below_all_with_min_insync_warns(tmp_path: Path) -> None:
    r = by_name(
        gate.run_gate(
            ctx(
                tmp_path,
                broker_versions=["4.1.2"] * 3,
                replication_factor=3,
                min_insync_replicas=2,
                planned_acks=["1", "all"],
            )
        )
    )["replication / min.insync / acks"]
    assert (r.severity, r.outcome) == ("warning", "fail") and "acks" in r.detail


def test_a_crashing_check_fails_blocking_with_its_own_crash(tmp_path: Path) -> None:
    """A check that raises (here the steal check, handed a limit it cannot compare with) is a
    blocking failure naming the crash, not a warning that lets the run through."""
    rep = gate.run_gate(ctx(tmp_path, steal_limit_pct=None))
    crashed = [r for r in rep.results if "check crashed" in r.detail]
    assert [(r.name, r.severity, r.outcome) for r in crashed] == [("steal", "blocking", "fail")], crashed
    assert "TypeError" in crashed[0].detail and "--force" in crashed[0].detail
    assert rep.blocked and rep.blocking_failures == crashed
    # every other check still ran and passed
    assert len(rep.results) == len(gate.CHECKS)
    assert all(r.outcome == "pass" for r in rep.results if r not in crashed)
