"""``kbench plans`` lists every bundled plan even when one cannot run on this install (a client
it names is missing, as librdkafka@2.16.1 without confluent-kafka in a fresh venv): that plan's
row says why, the others keep their figures, and the command succeeds."""

from __future__ import annotations

import json

import pytest

from kbench.cli import main
from kbench.engine import plan as plan_mod


def test_a_plan_that_cannot_load_is_listed_with_why(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = plan_mod.load
    why = "sweep[0].client: unknown client 'librdkafka@2.16.1': available are librdkafka"

    def load(name: str) -> plan_mod.Plan:
        if name == "librdkafka-versions":
            raise plan_mod.PlanError(why)
        return real(name)

    monkeypatch.setattr(plan_mod, "load", load)
    assert main(["plans"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(ln.startswith("librdkafka-versions") and f"not runnable here: {why}" in ln for ln in lines)
    assert any(ln.startswith("quick") and "cells" in ln for ln in lines)
    assert main(["plans", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["plans"]}
    assert rows["librdkafka-versions"]["unavailable"] == why and rows["quick"]["cells"] > 0
