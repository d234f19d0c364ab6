"""The prices ``kbench advise`` costs a candidate with (per GB stored, transferred and of CPU, per
month), their defaults and the TOML cost file that overrides them (docs/advise.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from pathlib import Path

from kbench.model import textfile

__all__ = [
    "CostError",
    "GB",
    "HOURS_PER_MONTH",
    "MAX_PRICE",
    "PRICE_KEYS",
    "Prices",
    "SECONDS_PER_MONTH",
    "load_prices",
]


HOURS_PER_MONTH = 730.0


SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600.0


GB = 1e9


class CostError(ValueError):
    """A cost file or workload is invalid; the message names the key and the fix."""


@dataclass(frozen=True)
class Prices:
    """Unit prices and the few coefficients the model cannot measure without a cluster.

    Defaults are public list prices of a large cloud provider in 2026 (inter-zone transfer
    0.01 $/GB each way, general-purpose vCPU-hour, gp3-class block storage) and a 3-zone
    cluster with producers and consumers spread evenly over the zones."""

    network_per_gb: float = 0.02  # $ per GB crossing zones (0.01 out + 0.01 in)
    core_hour: float = 0.04  # $ per vCPU-hour
    storage_gb_month: float = 0.08  # $ per GB-month of broker disk
    cross_zone_produce: float = 2 / 3  # share of produce traffic reaching a leader in another zone
    cross_zone_replication: float = 1.0  # followers sit in other zones
    cross_zone_consume: float = 2 / 3  # share of fetch traffic from a leader in another zone
    consumer_groups: int = 1  # how many times every stored byte is consumed
    # CPU besides (de)compression.  Defaults measured on the 2-vCPU development VM by
    # ``kbench advise --verify`` (its none run, json corpus, 10000 records/s, 2026-11-30).
    producer_cpu_us_per_record: float = 7.0  # client library + tick-paced loop, per record (6.6 measured)
    broker_cpu_us_per_record: float = 19.0  # per record per replica (request handling, validation)
    broker_cpu_s_per_gb: float = 1.0  # per GB stored per replica (network, page cache, CRC)
    consumer_cpu_us_per_record: float = 1.2  # client library, per record
    source: str = "defaults"

    def lines(self) -> list[str]:
        """Every price and coefficient, one per line, as printed with an answer."""
        doc = {
            "network_per_gb": "$ per GB between zones",
            "core_hour": "$ per core-hour",
            "storage_gb_month": "$ per GB-month stored",
            "cross_zone_produce": "share of produce bytes crossing zones",
            "cross_zone_replication": "share of replication bytes crossing zones",
            "cross_zone_consume": "share of consumed bytes crossing zones",
            "consumer_groups": "consumer groups reading every byte",
            "producer_cpu_us_per_record": "producer CPU-us per record besides compression",
            "broker_cpu_us_per_record": "broker CPU-us per record per replica",
            "broker_cpu_s_per_gb": "broker CPU-s per GB stored per replica",
            "consumer_cpu_us_per_record": "consumer CPU-us per record besides decompression",
        }
        return [f"  {k} = {getattr(self, k):.4g}  ({v})" for k, v in doc.items()]


PRICE_KEYS: tuple[str, ...] = tuple(f.name for f in fields(Prices) if f.name != "source")


#: Largest price (or count) a cost file may give: above it, sums of a month's costs lose meaning.
MAX_PRICE = 1e9


def load_prices(path: Path | str | None, **overrides: float) -> Prices:
    """Prices from a TOML cost file (any subset of :data:`PRICE_KEYS`), then ``overrides``."""
    values: dict[str, object] = {}
    source = "defaults"
    if path is not None:
        p = Path(path)
        if not p.exists():
            raise CostError(f"cost file not found: {p}; give an existing TOML file")
        try:
            data = textfile.loads_toml(textfile.read_text(p, "cost file"), f"cost file {p}")
        except textfile.TextFileError as e:
            raise CostError(str(e)) from None
        for k, v in data.items():
            if k not in PRICE_KEYS:
                raise CostError(f"cost file {p}: unknown key '{k}'; use one of {', '.join(PRICE_KEYS)}")
            top = 1.0 if k.startswith("cross_zone_") else MAX_PRICE  # a share of the bytes
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= top
            if k == "consumer_groups" and ok:
                ok = float(v).is_integer()
            if not ok:
                what = "a whole number" if k == "consumer_groups" else "a number"
                raise CostError(f"cost file {p}: {k} must be {what} from 0 to {top:g}, got {v!r}")
            values[k] = float(v) if k != "consumer_groups" else int(v)
        source = str(p)
    for k, v in overrides.items():
        if v is not None:
            values[k] = v
            source = f"{source} + overrides"
    return replace(Prices(), source=source, **values)  # type: ignore[arg-type]
