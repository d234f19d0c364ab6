"""The report's setup section: what was measured, from the manifests alone.

Producer settings per sweep (codecs, corpora, batch.size, linger.ms, acks, partitions, rate,
client, keys, topic compression), the topic and cluster (RF, min.insync.replicas, brokers,
transport, Kafka), the hosts (the testbed's emulated hosts: CPUs, NIC rate, delay), the
records (each corpus: records, bytes, mean record size, entropy) and the method (repetitions,
durations, seed, how the common rate was derived).  Every number is a ledger figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbench.reporting import document as doc
from kbench.reporting.context import ReportContext, sort_key
from kbench.reporting.provenance import manifest_path, manifest_value
from kbench.reporting.summary import label_text

__all__ = ["setup_blocks"]

#: The cell settings shown per sweep: manifest key, column title, ledger format (None: a label).
SETTINGS: tuple[tuple[str, str, str | None], ...] = (
    ("client", "client", None),
    ("codec", "codecs", None),
    ("corpus", "corpora", None),
    ("batch_size", "batch.size (bytes)", "int"),
    ("linger_ms", "linger.ms", None),
    ("acks", "acks", None),
    ("partitions", "partitions", "int"),
    ("rate", "rate", None),
    ("key_policy", "keys", None),
    ("topic_compression", "topic compression.type", None),
)


def _mapping(x: Any) -> Mapping[str, Any]:
    return x if isinstance(x, Mapping) else {}


def _sweeps(ctx: ReportContext) -> list[list[str]]:
    L, rows = ctx.ledger, []
    for r in ctx.runs:
        cells = {cid: c for cid, c in _mapping(r.manifest.get("cells")).items() if isinstance(c, Mapping)}
        by_sweep: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        for cid, c in sorted(cells.items()):
            by_sweep.setdefault(str(c.get("sweep", "")), []).append((cid, c))
        for sweep, members in by_sweep.items():
            exps = sorted({str(e) for _, c in members for e in c.get("experiments", []) or []})
            row = [*([] if len(ctx.runs) == 1 else [r.path.name]), sweep, ", ".join(exps)]
            for key, _, kind in SETTINGS:
                seen: dict[str, str] = {}  # value text → the cell it is read from
                for cid, c in members:
                    v = c.get(key)
                    if v is None:
                        continue
                    t = label_text(v)
                    if t not in seen:
                        seen[t] = cid
                values = sorted(seen, key=sort_key)
                if kind is None:
                    row.append(", ".join(values) if values else "NA")
                else:
                    row.append(
                        ", ".join(
                            L.manifest(cells[seen[t]].get(key), r.index, f"cells/{seen[t]}/{key}", kind).text
                            for t in values
                        )
                        or "NA"
                    )
            rows.append(row)
    return rows


def _fig(ctx: ReportContext, run: int, path: str, kind: str = "int") -> str:
    """A manifest number as a ledger figure, "" when the manifest has none."""
    v = manifest_value(ctx.runs[run].manifest, path)
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return ""
    return ctx.ledger.manifest(v, run, path, kind).text


def _first(ctx: ReportContext, run: int, paths: tuple[str, ...], kind: str = "int") -> str:
    for p in paths:
        t = _fig(ctx, run, p, kind)
        if t:
            return t
    return "NA"


def _cluster(ctx: ReportContext) -> list[list[str]]:
    rows = []
    for r in ctx.runs:
        man, i = r.manifest, r.index
        t = _mapping(man.get("transport"))
        brokers = t.get("brokers")
        nb = _first(ctx, i, ("plan/transport/brokers",))
        if nb == "NA" and isinstance(brokers, list):  # no count in the plan: the brokers' ids
            ids = [_fig(ctx, i, f"transport/brokers/{j}/broker_id") for j in range(len(brokers))]
            nb = "ids " + ", ".join(x for x in ids if x) if any(ids) else "NA"
        rows.append(
            [
                *([] if len(ctx.runs) == 1 else [r.path.name]),
                str(t.get("kind", "NA")),
                str(t.get("kafka_version") or "NA"),
                nb,
                _first(ctx, i, ("transport/replication_factor", "plan/transport/replication_factor")),
                _first(ctx, i, ("plan/transport/min_insync_replicas", "transport/min_insync_replicas")),
                str(t.get("client") or "NA"),
                _hosts(ctx, i),
            ]
        )
    return rows


def _hosts(ctx: ReportContext, run: int) -> str:
    """The testbed's emulated hosts: name, CPUs, NIC rate and added delay (the manifest's
    transport/extra/testbed); the machine itself on any other transport."""
    tb = manifest_value(ctx.runs[run].manifest, "transport/extra/testbed/hosts")
    if not isinstance(tb, list):
        return "one host (this machine)"
    parts = []
    for j, h in enumerate(tb):
        if not isinstance(h, Mapping):
            continue
        base = f"transport/extra/testbed/hosts/{j}"
        cpus = ", ".join(_fig(ctx, run, f"{base}/cpus/{c}") for c in range(len(h.get("cpus") or [])))
        nic = _fig(ctx, run, f"{base}/nic_rate_mbit", "auto")
        delay = _fig(ctx, run, f"{base}/delay_ms", "auto")
        extra = (f", NIC {nic} Mbit/s" if nic else "") + (f", +{delay} ms delay" if delay else "")
        parts.append(f"{h.get('name', '?')} (CPU {cpus or 'any'}{extra})")
    return "; ".join(parts) + (" (NIC rate unlimited, no added delay unless named)" if parts else "")


def _corpora(ctx: ReportContext) -> list[list[str]]:
    L, rows = ctx.ledger, []
    for r in ctx.runs:
        for name, c in sorted(_mapping(r.manifest.get("corpora")).items()):
            if not isinstance(c, Mapping):
                continue
            base = manifest_path("corpora", name)
            recs = L.manifest(c.get("records"), r.index, f"{base}/records", "int")
            size = L.manifest(c.get("bytes"), r.index, f"{base}/bytes", "int")
            rows.append(
                [
                    *([] if len(ctx.runs) == 1 else [r.path.name]),
                    name,
                    str(c.get("source", "NA")),
                    recs.text,
                    size.text,
                    L.derive("ratio", [size, recs], "int").text,
                    L.manifest(c.get("entropy_bits_per_byte"), r.index, f"{base}/entropy_bits_per_byte", "f3").text,
                    str(c.get("near_random", "NA")).lower(),
                    str(c.get("sha256", "NA")),
                ]
            )
    return rows


def _method(ctx: ReportContext) -> list[list[str]]:
    L, rows = ctx.ledger, []
    for r in ctx.runs:
        man, i = r.manifest, r.index
        rd = _mapping(man.get("rate_derivation"))
        how = "no derived rate in this run"
        if rd:
            how = (
                f"{rd.get('method', '')}; fraction {L.manifest(rd.get('fraction'), i, 'rate_derivation/fraction')}; "
                f"slowest cell {rd.get('min_cell', 'NA')}"
            )
        rows.append(
            [
                r.path.name,
                _first(ctx, i, ("seed",)),
                _first(ctx, i, ("repetitions",)),
                _first(ctx, i, ("retries",)),
                str(man.get("warmup", "NA")).lower(),
                _first(ctx, i, ("plan/warmup_s",), "auto"),
                _first(ctx, i, ("duration_s",), "auto"),
                _first(ctx, i, ("steady_skip_s",), "auto"),
                _first(ctx, i, ("rate_derivation/rate_msgs",)),
                how,
            ]
        )
    return rows


def _topology(ctx: ReportContext) -> list[doc.Block]:
    """The topology each run chose for its machine (manifest ``topology``, plan ``fit_topology``)."""
    L, out = ctx.ledger, list[doc.Block]()
    for r in ctx.runs:
        t = _mapping(r.manifest.get("topology"))
        if not t:
            continue
        f = {k: L.manifest(t.get(k), r.index, f"topology/{k}", "int").text for k in ("brokers", "hosts", "cpus")}
        planned = L.manifest(t.get("planned_brokers"), r.index, "topology/planned_brokers", "int").text
        why = (
            f"the plan asked for {planned} brokers, and this machine has fewer CPUs than that topology's hosts: "
            "brokers competing with the clients for CPUs would put that contention under every codec's latency"
            if t.get("reduced")
            else "the plan's own topology (a CPU for each host, or already the smallest)"
        )
        label = f"{r.path.name}: " if len(ctx.runs) > 1 else ""
        out.append(
            doc.Para(
                f"{label}Topology chosen for this machine: {f['brokers']} broker(s), {f['hosts']} hosts on "
                f"{f['cpus']} CPUs; {why} (docs/testbed.md).",
                "note",
            )
        )
    return out


def setup_blocks(ctx: ReportContext) -> list[doc.Block]:
    run_col = [] if len(ctx.runs) == 1 else ["run directory"]
    return [
        doc.Heading(2, "Setup: what was measured", "setup"),
        doc.Table(
            [*run_col, "sweep", "experiments", *(title for _, title, _ in SETTINGS)],
            _sweeps(ctx),
            caption="Producer settings per sweep (the plan's cells)",
        ),
        doc.Table(
            [*run_col, "transport", "Kafka", "brokers", "replication factor", "min.insync.replicas", "client", "hosts"],
            _cluster(ctx),
            caption="Topic, cluster and hosts",
            wrap=True,
        ),
        *_topology(ctx),
        doc.Table(
            [
                *run_col,
                "corpus",
                "source",
                "records",
                "bytes",
                "mean record bytes",
                "entropy bits/B",
                "near random",
                "sha256",
            ],
            _corpora(ctx),
            caption="Records: the corpora the producer sends (fingerprints from the manifest)",
        ),
        doc.Table(
            [
                "run directory",
                "seed",
                "repetitions",
                "retries",
                "warm-up",
                "warm-up s",
                "duration s",
                "steady skip s",
                "common rate msgs/s",
                "how the rate was derived",
            ],
            _method(ctx),
            caption="Method: order seed, repetitions, durations and the common fixed rate",
            wrap=True,
        ),
    ]
