"""The CPU model and physical cores from a ``/proc/cpuinfo`` text: the one reader, for the
manifest's machine fields and the micro-benchmark cache's machine key."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["cpu_model", "read_cpuinfo"]


def read_cpuinfo(proc: Path = Path("/proc")) -> tuple[str, int | None]:
    """(model, physical cores) of this machine; ``unknown``/None where /proc says nothing."""
    try:
        text = (proc / "cpuinfo").read_text()
    except OSError:
        return "unknown", None
    return parse(text)


def cpu_model(proc: Path = Path("/proc")) -> str:
    return read_cpuinfo(proc)[0]


def parse(text: str) -> tuple[str, int | None]:
    model = "unknown"
    cores: set[tuple[str, str]] = set()
    phys = core = None
    for line in text.splitlines() + [""]:
        k, _, v = line.partition(":")
        k, v = k.strip(), v.strip()
        if k in ("model name", "Model", "cpu model") and model == "unknown":
            model = v
        elif k == "physical id":
            phys = v
        elif k == "core id":
            core = v
        elif not line.strip():
            if core is not None:
                cores.add((phys or "0", core))
            phys = core = None
    if model == "unknown":  # aarch64 often lacks "model name"
        impl = re.search(r"CPU implementer\s*:\s*(\S+)", text)
        part = re.search(r"CPU part\s*:\s*(\S+)", text)
        if impl and part:
            model = f"implementer {impl.group(1)} part {part.group(1)}"
    return model, (len(cores) or None)
