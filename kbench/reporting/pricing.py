"""The unit prices a report's priced choice multiplies by: ``kbench advise``'s cost model
(kbench.model.advise: its default prices and workload) as named constants, so that every dollar
in a report is a ledger figure (kbench.reporting.provenance ``scale`` by one of these names).

A measured workload is priced as advise prices a modelled one (docs/advise.md): cores × hours ×
core-hour price; bytes crossing zones (produce, replication, consumption) × the transfer price;
bytes stored × retention × replicas × the storage price.
"""

from __future__ import annotations

from kbench.model.advise import (
    DEFAULT_COST_TOLERANCE_PCT,
    DEFAULT_P99_BUDGET_MS,
    HOURS_PER_MONTH,
    SECONDS_PER_MONTH,
    Prices,
    Workload,
)

__all__ = ["ASSUMED", "PRICE_UNITS"]

_P = Prices()
_W = Workload(rate=1.0, partitions=1)

#: What the priced choice assumes beyond the run (advise's defaults), said beside it: the text
#: with {name} for each constant of :data:`PRICE_UNITS` it prints.
ASSUMED = (
    "replication factor {replication factor}, retention {retention h} h, {consumer groups} consumer group, "
    "producers, brokers and consumers spread over 3 zones; ${core-hour usd} per core-hour, ${zone GB usd} per GB "
    "between zones, ${GB-month usd} per GB-month (kbench advise's defaults, docs/advise.md)"
)

#: name -> factor.  Cores -> $/month; payload GB/s -> bytes-crossing-zones factors; GB/s -> $/month.
PRICE_UNITS: dict[str, float] = {
    "B/GB->GB/GB": 1e-9,
    "cores->usd/month": HOURS_PER_MONTH * _P.core_hour,
    "produced->zones": _P.cross_zone_produce,
    "stored->zones": (_W.replication_factor - 1) * _P.cross_zone_replication
    + _P.consumer_groups * _P.cross_zone_consume,
    "zone GB/s->usd/month": SECONDS_PER_MONTH * _P.network_per_gb,
    "stored GB/s->usd/month": _W.retention_hours * 3600.0 * _W.replication_factor * _P.storage_gb_month,
    "p99 budget ms": DEFAULT_P99_BUDGET_MS,  # kbench advise's default latency budget
    "tolerance pct": DEFAULT_COST_TOLERANCE_PCT,  # kbench advise's default cost tolerance
    "replication factor": float(_W.replication_factor),
    "retention h": _W.retention_hours,
    "consumer groups": float(_P.consumer_groups),
    "core-hour usd": _P.core_hour,
    "zone GB usd": _P.network_per_gb,
    "GB-month usd": _P.storage_gb_month,
}
