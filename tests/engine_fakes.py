"""Test doubles for the engine: a scriptable transport and plan helpers."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.engine.transports.base import (
    BatchFill,
    BrokerInfo,
    CpuSample,
    LatencySummary,
    RunRequest,
    RunResult,
    TransportError,
    TransportInfo,
)
from kbench.kafka import procstat


def lat(base: float) -> LatencySummary:
    return LatencySummary(count=100, p50_us=base, p95_us=base * 2, p99_us=base * 3, p999_us=base * 4, max_us=base * 5)


@dataclass
class FakeTransport:
    """Runs nothing; returns measurements shaped by its settings and records every request."""

    kind: str = "fake"
    saturated: dict[str, float] = field(default_factory=lambda: {"none": 40_000.0, "zstd:3": 30_000.0})
    max_rate: float | None = None  # a fixed rate above this is only achieved at this value
    steal_pct: float | None = 0.0  # unless the request carries a steal source (then measured from it)
    steal_for: Callable[[RunRequest], float | None] | None = None  # per request (overrides both)
    cpu_regressed_role: str | None = None
    fail_on: Callable[[RunRequest], bool] | None = None  # raise TransportError
    interrupt_after: int | None = None  # KeyboardInterrupt at this call number (1-based)
    broker_versions: tuple[str | None, ...] = ("4.1.2",)
    knee: dict[str, float] = field(default_factory=dict)  # per codec: above this fixed rate sends fall 10 ms behind
    requests: list[RunRequest] = field(default_factory=list)
    opened: int = 0
    closed: int = 0

    def open(self) -> TransportInfo:
        self.opened += 1
        brokers = tuple(
            BrokerInfo(broker_id=i, version=v, pid=None, log_dir=None, default_compression="producer")
            for i, v in enumerate(self.broker_versions)
        )
        return TransportInfo(
            kind="fake", bootstrap="127.0.0.1:1", brokers=brokers, kafka_version="4.1.2", client="fake"
        )

    def close(self) -> None:
        self.closed += 1

    def run(self, req: RunRequest) -> RunResult:
        self.requests.append(req)
        if self.interrupt_after is not None and len(self.requests) >= self.interrupt_after:
            raise KeyboardInterrupt
        if self.fail_on is not None and self.fail_on(req):
            raise TransportError("broker went away (sasl.password=hunter2-SECRET)")
        codec = req.cell.codec
        if req.rate is None:
            achieved = self.saturated.get(codec, 20_000.0)
        else:
            achieved = req.rate if self.max_rate is None else min(req.rate, self.max_rate)
        n = int(achieved * req.duration_s)
        payload = n * 300
        # the CPU window runs from steady_skip_s to the end: its payload is that share of the run's
        window = int(payload * (req.duration_s - req.steady_skip_s) / req.duration_s)
        if self.steal_for is not None:
            steal = self.steal_for(req)
        elif req.steal_source is not None:
            steal = procstat.steal_pct(req.steal_source(), req.steal_source())
        else:
            steal = self.steal_pct
        cpu = []
        for role in ("producer", "consumer", "broker-0"):
            regressed = role == self.cpu_regressed_role
            cpu.append(
                CpuSample(
                    role=role,
                    usr_s=-0.1 if regressed else 0.5,
                    sys_s=0.1,
                    wall_s=req.duration_s - req.steady_skip_s,
                    regressed=regressed,
                    pid=1000,
                    window_payload_bytes=window,
                )
            )
        ratio = 4.0 if codec.startswith("zstd") else 1.0
        return RunResult(
            messages_sent=n,
            messages_acked=n,
            payload_bytes=payload,
            elapsed_s=req.duration_s,
            target_rate=req.rate,
            achieved_rate=achieved,
            latency_service=lat(100),
            latency_delay=lat(10_000 if req.rate is not None and req.rate > self.knee.get(codec, float("inf")) else 10),
            latency_corrected=lat(120 if codec == "none" else 130),
            latency_e2e=lat(200),
            consumed=n,
            lost=0,
            duplicated=0,
            cpu=tuple(cpu),
            steal_pct=steal,
            producer_wire_bytes=int(payload / ratio),
            consumer_wire_bytes=int(payload / ratio),
            stored_bytes=int(payload / ratio),
            stored_batches=10,
            stored_codecs=(codec.split(":")[0],)
            if req.cell.topic_compression == "producer"
            else (req.cell.topic_compression,),
            topic_compression_readback=req.cell.topic_compression,
            batch_fill=BatchFill(10, 5, 6, 7, 1000, 1100, 1200, "fake"),
        )


class Raw(str):
    """A TOML value written as is (a test of what the plan parser refuses, or a list spelled out)."""


def _toml(v: Any) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string: the same escapes
    if isinstance(v, Sequence):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    raise TypeError(f"no TOML for {v!r}")


def _table(items: Mapping[str, Any]) -> str:
    return "".join(f"{k if k.replace('_', '').isalnum() else json.dumps(k)} = {_toml(v)}\n" for k, v in items.items())


def sweep(name: str, experiments: Sequence[str], codec: Sequence[str] | str = ("none",), **axes: Any) -> dict[str, Any]:
    """One ``[[sweep]]`` of :func:`plan_toml`."""
    return {
        "name": name,
        "experiments": list(experiments),
        "codec": [codec] if isinstance(codec, str) else list(codec),
        **axes,
    }


def plan_toml(
    *sweeps: Mapping[str, Any],
    transport: Mapping[str, Any] | str | None = "dry",
    client: Mapping[str, str] | None = None,
    name: str = "t",
    extra: str = "",
    **head: Any,
) -> str:
    """A plan file's text from its parts (top-level keys, then ``extra`` top-level lines as
    written, ``[transport]`` — a kind or a table —, ``[client]``, the sweeps): the one way the
    tests write plans (docs/plan-format.md)."""
    text = _table({"name": name, **head}) + (extra + "\n" if extra else "")
    if transport is not None:  # None: the plan's default transport
        text += "\n[transport]\n" + _table({"kind": transport} if isinstance(transport, str) else transport)
    if client:
        text += "\n[client]\n" + _table(client)
    for s in sweeps:
        text += "\n[[sweep]]\n" + _table(s)
    return text


#: The secrets of :data:`PLAN_TEXT`'s ``[client]``: none may reach a file of the run.
CLIENT_SECRETS = {
    "sasl.password": "hunter2-SECRET",
    "sasl.username": "alice-USER",
    "ssl.key.password": "kp-SECRET",
}


def engine_plan(transport: str = "dry", rate: float | str = "auto", **head: Any) -> str:
    """The engine tests' plan: B saturated, then A, C, D at ``rate`` over two corpora, with
    secrets in ``[client]``; ``head`` overrides or adds top-level keys (None drops one)."""
    keys = {
        "repetitions": 3,
        "duration_s": 1,
        "min_window_s": 0,
        "warmup_s": 0.5,
        "corpus_size": 20000,
        "seed": 7,
        **head,
    }
    return plan_toml(
        sweep("sat", ["B"], ["none", "zstd:3"], rate="saturated"),
        sweep("fixed", ["A", "C", "D"], ["none", "zstd:3"], corpus=["json", "random"], rate=rate),
        transport=transport,
        client=CLIENT_SECRETS,
        **{k: v for k, v in keys.items() if v is not None},
    )


PLAN_TEXT = engine_plan()

SECRETS = tuple(CLIENT_SECRETS.values())


def write_plan(dirpath: Path, text: str = PLAN_TEXT, name: str = "plan.toml") -> Path:
    p = dirpath / name
    p.write_text(text)
    return p


def grep_secrets(run_dir: Path) -> list[str]:
    hits = []
    for f in run_dir.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            hits += [f"{f.name}:{s}" for s in SECRETS if s.encode() in data]
    return hits
