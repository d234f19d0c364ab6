"""One plan value's rules: known keys, numbers and bounds, rates (``auto:F``), axes, sizes,
client properties kbench manages, the run name; each problem a one-line :class:`PlanError`."""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any

from kbench.engine import control
from kbench.engine.plan_schema import (
    AUTO_PREFIX,
    PlanError,
)
from kbench.model import limits
from kbench.model.units import parse_size

__all__ = [
    "MANAGED_CLIENT_KEYS",
    "as_list",
    "auto_fraction",
    "axis_values",
    "bounded",
    "check_client",
    "check_keys",
    "check_name",
    "control_mark",
    "is_derived_rate",
    "number_value",
    "parse_corpus_size",
    "rate_fraction",
    "rate_value",
    "size_value",
    "unknown_key",
]


def unknown_key(where: str, key: str, known: Mapping[str, str]) -> PlanError:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"
    return PlanError(f"{where}{key}: unknown key; {hint}")


def check_keys(where: str, table: Mapping[str, Any], known: Mapping[str, str]) -> None:
    for k in table:
        if k not in known:
            raise unknown_key(where, k, known)


def as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list) else [v]


def number_value(
    where: str, v: Any, *, positive: bool = True, integer: bool = False, allow_zero: bool = False
) -> float | int:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise PlanError(f"{where}: {v!r} is not a number; write a {'whole ' if integer else ''}number")
    if isinstance(v, float) and not math.isfinite(v):
        raise PlanError(f"{where}: {v} is not a finite number; give a finite value")
    if integer and isinstance(v, float) and not v.is_integer():
        raise PlanError(f"{where}: {v!r} must be a whole number")
    if positive and (v < 0 or (v == 0 and not allow_zero)):
        bound = ">= 0" if allow_zero else "> 0"
        raise PlanError(f"{where}: {v!r} must be {bound}; give a {'non-negative' if allow_zero else 'positive'} value")
    return int(v) if integer else float(v)


def bounded(where: str, v: Any, kind: str) -> Any:
    """``v`` within ``limits.BOUNDS[kind]`` (finite, in range, whole where it must be)."""
    try:
        return limits.check(where, v, kind)
    except limits.LimitError as e:
        raise PlanError(str(e)) from None


def rate_fraction(rate: float | str, default: float) -> float | None:
    """The fraction of the minimum saturated rate a cell's ``rate`` asks for: ``default`` (the
    plan's ``auto_rate_fraction``) for ``"auto"``, F for ``"auto:F"``, None for anything else."""
    if rate == "auto":
        return default
    if isinstance(rate, str) and rate.startswith(AUTO_PREFIX):
        return float(rate[len(AUTO_PREFIX) :])
    return None


def is_derived_rate(rate: float | str) -> bool:
    """Whether ``rate`` is derived from the run's saturated cells (``auto`` or ``auto:F``)."""
    return rate_fraction(rate, 1.0) is not None


def auto_fraction(where: str, v: str) -> str:
    """``auto:F`` with F in (0, 1], in its canonical spelling (``auto:0.20`` -> ``auto:0.2``)."""
    text = v[len(AUTO_PREFIX) :]
    try:
        f = float(text)
    except ValueError:
        f = float("nan")
    if not math.isfinite(f) or not 0 < f <= 1:
        raise PlanError(
            f'{where}: {v!r} is not a fraction of saturation; write "auto:F" with F in (0, 1], e.g. "auto:0.2"'
        )
    return f"{AUTO_PREFIX}{f:g}"


def rate_value(where: str, v: Any) -> float | str:
    if isinstance(v, str):
        if v in ("saturated", "auto"):
            return v
        if v.startswith(AUTO_PREFIX):
            return auto_fraction(where, v)
        raise PlanError(
            f'{where}: {v!r} is not a rate; write messages/s as a positive number, "saturated", "auto" or "auto:F"'
        )
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise PlanError(
            f'{where}: {v!r} is not a valid rate; write messages/s as a positive number, "saturated" or "auto"'
        )
    return float(bounded(where, v, "rate"))


def axis_values(where: str, values: list[Any]) -> list[Any]:
    """A sweep axis: at least one value, none twice (two identical cells measure nothing new)."""
    if not values:
        raise PlanError(f"{where}: empty list; give at least one value")
    seen: set[str] = set()
    for v in values:
        key = repr(v)
        if key in seen:
            raise PlanError(f"{where}: {v!r} is listed twice (two identical cells); list each value once")
        seen.add(key)
    return values


#: Client properties kbench sets per cell (librdkafka's and Java's names, and the Go clients' of
#: kbench.kafka.clients.producer_props); a plan's [client] and ``-X`` may not set them.
MANAGED_CLIENT_KEYS = frozenset(
    {
        "compression.type",
        "compression.codec",
        "compression.level",
        "batch.size",
        "linger.ms",
        "acks",
        "bootstrap.servers",
        # kafka-go (Writer fields)
        *("Compression", "CompressionLevel", "BatchBytes", "BatchSize", "BatchTimeout", "RequiredAcks"),
        # sarama (Config paths)
        *("Producer.Compression", "Producer.CompressionLevel", "Producer.Flush.Bytes"),
        *("Producer.Flush.Frequency", "Producer.RequiredAcks"),
    }
)


def check_client(where: str, props: Mapping[str, Any]) -> None:
    """Refuse client properties kbench sets per cell (``where``: "client" or "-X")."""
    for k, v in props.items():
        if isinstance(v, (list, dict)):
            raise PlanError(
                f"{where}.{k}: a {type(v).__name__} is not a client property value; give a string or number"
            )
        if k in MANAGED_CLIENT_KEYS:
            sep = " " if where == "-X" else "."
            raise PlanError(f"{where}{sep}{k}: kbench sets this per cell; put it in a [[sweep]] axis instead")


def check_name(name: object) -> str:
    """A plan name becomes a directory under runs/: one path component, no traversal."""
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\0" in name
        or len(name.encode()) > 100
        or not name.isprintable()
    ):
        raise PlanError(
            f"name: {name!r} is not a usable run-directory name; use letters, digits, '-', '_' or '.' (no '/', at most 100 bytes)"
        )
    return name


def size_value(where: str, v: Any) -> Any:
    """A size written as a string ("16KiB", "1MiB", "16k") in bytes, by the one rule of
    kbench.model.units (docs/cli.md); a number stays as it is (bytes) for the range checks."""
    if not isinstance(v, str):
        return v
    try:
        return parse_size(v, where)
    except ValueError as e:
        raise PlanError(str(e)) from None


def parse_corpus_size(where: str, v: Any) -> int:
    v = size_value(where, v)
    try:
        return limits.check_corpus_size(where, v)
    except limits.LimitError as e:
        raise PlanError(str(e)) from None


def control_mark(where: str, v: Any) -> str:
    try:
        return control.parse(where, v)
    except control.ControlError as e:
        raise PlanError(str(e)) from None
