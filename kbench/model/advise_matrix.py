"""The usual codec rules of thumb, each checked against a ``kbench advise`` sweep's numbers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kbench.model.advise import Advice, Candidate

__all__ = ["MatrixRow", "decision_matrix"]


@dataclass(frozen=True)
class MatrixRow:
    scenario: str
    seed_choice: str
    ours: str
    evidence: str
    agrees: str  # yes | no | n/a


def _best_where(cands: Sequence[Candidate], pred: Callable[[Candidate], bool], key: Callable[[Candidate], float]):
    pool = [c for c in cands if pred(c) and c.within_budget]
    return min(pool, key=key) if pool else None


def decision_matrix(adv: Advice) -> list[MatrixRow]:
    """The usual codec rules of thumb (``seed_choice``: what the rule says), each checked with this sweep's numbers."""
    cands = adv.candidates
    rows: list[MatrixRow] = []

    def best_ratio_at(pred: Callable[[Candidate], bool], spec: str) -> Candidate | None:
        return _best_where(cands, lambda c: pred(c) and c.spec == spec, lambda c: c.total_usd_month)

    def compare(scenario: str, seed: str, pred: Callable[[Candidate], bool], key, what: str) -> None:
        b = _best_where(cands, pred, key)
        lz, zs = best_ratio_at(pred, "lz4"), best_ratio_at(pred, "zstd:3")
        if b is None:
            rows.append(MatrixRow(scenario, seed, "no candidate", "no swept candidate fits the scenario", "n/a"))
            return
        ev = f"{what}: {b.label}"
        if lz and zs:
            ev += f"; ratio lz4 {lz.ratio:.2f} vs zstd:3 {zs.ratio:.2f} (same batching rules)"
        ours = b.spec
        agree = "yes" if ours.split(":")[0] == seed.split(":")[0] else "no"
        rows.append(MatrixRow(scenario, seed, ours, ev, agree))

    small = lambda c: c.batch_size <= 16 << 10  # noqa: E731
    big = lambda c: c.batch_size >= 64 << 10  # noqa: E731
    compare("batch <= 16 KiB (records <= 2 KB, >= 10k msg/s)", "lz4", small, lambda c: c.total_usd_month, "cheapest")
    compare("batch >= 64 KiB (records >= 4 KB)", "zstd:3", big, lambda c: c.total_usd_month, "cheapest")
    rows.append(
        MatrixRow(
            "clients older than Kafka 1.1 on the path",
            "lz4",
            "lz4 (compatibility, not cost)",
            "not a number question: zstd needs Produce v7 / Fetch v10 (Kafka >= 2.1)",
            "n/a",
        )
    )
    compare(
        "consumer CPU tight (> 60 %)",
        "lz4",
        lambda c: c.codec != "none",
        lambda c: c.consumer_cores + 1e-9 * c.total_usd_month,
        "least consumer CPU among compressing codecs",
    )
    compare(
        "network is the bottleneck and batches are large",
        "zstd:3",
        big,
        lambda c: c.network_gb_month,
        "fewest bytes on the network",
    )
    return rows
