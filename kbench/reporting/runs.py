"""A run directory as the report sees it: its manifest, its CSV paths, its machine's label."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["LoadError", "Run", "machine_label"]


class LoadError(ValueError):
    """A run directory cannot be read; the message names the problem and the fix."""


@dataclass(frozen=True)
class Run:
    """One run directory: its manifest and the CSV paths it holds."""

    index: int
    path: Path
    manifest: Mapping[str, Any]
    csvs: Mapping[str, Path] = field(default_factory=dict)

    @property
    def machine(self) -> Mapping[str, Any]:
        m = self.manifest.get("machine")
        return m if isinstance(m, Mapping) else {}

    @property
    def label(self) -> str:
        return machine_label(self.machine)


def machine_label(machine: Mapping[str, Any]) -> str:
    """The name a machine is grouped under: its ``label`` if the manifest has one, else
    ``arch cpu_model logical_cores vCPU/physical_cores cores #hostname_hash``."""
    if machine.get("label"):
        return str(machine["label"])
    if not machine:
        return "unknown machine"
    return (
        f"{machine.get('arch', '?')} {machine.get('cpu_model', '?')} "
        f"{machine.get('logical_cores', '?')} vCPU/{machine.get('physical_cores', '?')} cores "
        f"#{str(machine.get('hostname_hash', ''))[:6]}"
    )
