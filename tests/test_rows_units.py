"""The experiments' shared row arithmetic (kbench.experiments.rowkit), value by value: one
role's CPU, CPU-s/GB's denominator, summed broker counters, ratios.  Pure Python: tests the
mutation run uses for the experiments' row rules."""

from __future__ import annotations

import math

from kbench.engine.status import Status
from kbench.engine.transports.base import CpuSample
from kbench.experiments import rowkit


def test_one_roles_cpu() -> None:
    usr, sys_, cpu, st, why = rowkit.cpu_role(CpuSample("producer", 1.0, 0.5, 4.0))
    assert (usr, sys_, cpu, st, why) == (25.0, 12.5, 1.5, None, "")
    usr, sys_, cpu, st, why = rowkit.cpu_role(CpuSample("producer", 1.0, 0.5, 0.0))
    assert math.isnan(usr) and math.isnan(sys_) and cpu == 1.5 and st is None  # no wall time: no %
    assert rowkit.cpu_role(CpuSample("broker-1", None, None, 4.0, total_s=2.0)) == (None, None, 2.0, None, "")
    assert rowkit.cpu_role(CpuSample("broker-1", None, None, 4.0, total_s=-0.5)) == (
        None,
        None,
        None,
        Status.FAILED_CPU_REGRESSED,
        "broker-1: CPU counter went backwards (-0.500s)",
    )
    assert rowkit.cpu_role(CpuSample("broker-1", None, None, 4.0, total_s=0.5, regressed=True))[3] == (
        Status.FAILED_CPU_REGRESSED
    )
    assert rowkit.cpu_role(CpuSample("consumer", None, 1.0, 4.0, note="gone")) == (
        None,
        None,
        None,
        Status.NA,
        "consumer: CPU counters unreadable (gone)",
    )
    assert rowkit.cpu_role(CpuSample("consumer", 1.0, None, 4.0))[4] == "consumer: CPU counters unreadable"
    for c in (CpuSample("p", -0.1, 0.5, 4.0), CpuSample("p", 0.1, -0.5, 4.0), CpuSample("p", 0.1, 0.5, 4.0, True)):
        usr, sys_, cpu, st, why = rowkit.cpu_role(c)
        assert (usr, sys_, cpu, st) == (None, None, None, Status.FAILED_CPU_REGRESSED)
        assert why == f"p: CPU counter went backwards (usr {c.usr_s:.3f}s, sys {c.sys_s:.3f}s)"
    assert rowkit.cpu_role(CpuSample("p", 0.0, 0.0, 2.0))[:3] == (0.0, 0.0, 0.0)


def test_per_gb_window_and_counters() -> None:
    assert rowkit.window_gb(CpuSample("p", 1.0, 1.0, 1.0, window_payload_bytes=2_500_000_000)) == 2.5
    assert rowkit.window_gb(CpuSample("p", 1.0, 1.0, 1.0)) is None
    assert rowkit.per_gb(3.0, 1.5) == 2.0 and rowkit.per_gb(0.0, 1.5) == 0.0
    assert rowkit.per_gb(None, 1.5) is None and rowkit.per_gb(3.0, None) is None and rowkit.per_gb(3.0, 0.0) is None
    b1 = CpuSample("broker-1", 1.0, 1.0, 1.0, broker_counters={"bytes_in": 10.0, "bytes_out": None})
    b2 = CpuSample("broker-2", 1.0, 1.0, 1.0, broker_counters={"bytes_in": 5.0, "bytes_out": 3.0})
    assert rowkit.sum_counter([b1, b2], "bytes_in") == 15.0
    assert rowkit.sum_counter([b1, b2], "bytes_out") is None and rowkit.sum_counter([b2], "bytes_out") == 3.0
    assert rowkit.sum_counter([b1, b2], "nope") is None and rowkit.sum_counter([], "bytes_in") is None
    assert rowkit.GB == 1e9
