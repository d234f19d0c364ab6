"""A cell: one point of a sweep's matrix, everything a transport needs to run it.

Defined apart from :mod:`kbench.engine.plan` (which makes cells) so that the layers that only
read cells — transports, the experiments' row rules — do not depend on plan parsing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbench.model import codecs
from kbench.model.codecs import CodecSpec

__all__ = [
    "AXES",
    "Cell",
    "KEY_POLICY_SPELLINGS",
    "MAX_CELLS",
    "MAX_SWEEP_NAME",
    "TRAFFIC_AXES",
    "cell_count",
    "sweep_name_problem",
]

KEY_POLICY_SPELLINGS = {"roundrobin": "round-robin"}

#: The axes of the traffic a producer sends, in the order a sweep and a CSV row list them.
TRAFFIC_AXES = ("codec", "corpus", "batch_size", "linger_ms", "partitions", "acks", "rate")
#: A sweep's axes: its cells are their product with the experiments' own axes (the sweep's
#: ``extras``; kbench.engine.plan_expand.expand).
AXES = (*TRAFFIC_AXES, "topic_compression", "client")
#: Most cells a plan may have: each is a topic on the brokers, a line of every table and a group
#: of rows; 10^4 cells of one minute is a week of runs (the plan time limit).
MAX_CELLS = 10_000


#: Longest sweep name: a sweep's name is part of every topic name of its cells
#: (``kbench-<run id>-<sweep>-<cell>-r<rep>a<attempt>``), and Kafka refuses topic names over 249
#: characters; kbench's own parts take at most 49 of them.
MAX_SWEEP_NAME = 200
_SWEEP_NAME = re.compile(r"[A-Za-z0-9_-]+")


def sweep_name_problem(name: object) -> str | None:
    """None when ``name`` can be a sweep's name (a part of Kafka topic names: ASCII letters,
    digits, ``-``, ``_``; at most :data:`MAX_SWEEP_NAME` characters), else why not."""
    if not isinstance(name, str):
        return f'{name!r} is not a string; write e.g. name = "codecs"'
    if not _SWEEP_NAME.fullmatch(name):
        return f"{name[:60]!r} must be ASCII letters, digits, - or _ (it is part of Kafka topic names)"
    if len(name) > MAX_SWEEP_NAME:
        return f"{len(name)} characters, over {MAX_SWEEP_NAME} (Kafka topic names, which hold it, are at most 249)"
    return None


def cell_count(sweeps: Sequence[Any]) -> int:
    """How many cells ``sweeps`` expand to, counted without expanding them (a sweep with an A/A
    ``control`` has one more: kbench.engine.control)."""
    counts = [
        (math.prod([len(getattr(s, a)) for a in AXES] + [len(v) for v in s.extras.values()]), s.control) for s in sweeps
    ]
    return sum(n + (1 if control and n else 0) for n, control in counts)


@dataclass(frozen=True)
class Cell:
    """One point of a sweep's matrix: everything a transport needs to run it."""

    cell_id: str
    sweep: str
    experiments: tuple[str, ...]
    codec: str
    corpus: str
    batch_size: int
    linger_ms: float
    partitions: int
    acks: str
    rate: float | str  # msgs/s, "saturated" or "auto"
    topic_compression: str  # Kafka's spelling (codecs.topic_compression): producer, uncompressed, ...
    topic_config: Mapping[str, str] = field(default_factory=dict)
    key_policy: str = "none"  # one of kbench.kafka.drivers.KEY_POLICIES
    client: str = "librdkafka"  # the driver: librdkafka or java (kbench.kafka.clients)
    #: The experiments' own axes of this cell (name -> value: each experiment's ``sweep_axes``,
    #: through the registry; e.g. G's consumers, fetch sizes and backlog_bytes).  The engine only
    #: carries them; not in :meth:`params`: the experiments reading them add their own columns.
    extras: Mapping[str, Any] = field(default_factory=dict)
    #: An A/A control (docs/methodology.md §5): the id of the baseline cell this cell repeats with
    #: identical settings ("" for every other cell); the control's own id is ``<baseline>-aa``.
    control_of: str = ""
    #: The parsed codec (plan load passes it; a cell built by hand gets it from ``codec``).
    spec: CodecSpec = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.spec is None:
            object.__setattr__(self, "spec", codecs.parse_spec(self.codec))
        # the one place a cell's settings get their single spelling
        object.__setattr__(self, "topic_compression", codecs.topic_compression(self.topic_compression))
        object.__setattr__(self, "key_policy", KEY_POLICY_SPELLINGS.get(self.key_policy, self.key_policy))

    @property
    def saturated(self) -> bool:
        return self.rate == "saturated"

    def params(self) -> dict[str, Any]:
        """The cell's parameters as flat CSV-ready values."""
        return {
            "cell_id": self.cell_id,
            "sweep": self.sweep,
            "client": self.client,
            "codec": self.codec,
            "corpus": self.corpus,
            "batch_size": self.batch_size,
            "linger_ms": self.linger_ms,
            "partitions": self.partitions,
            "acks": self.acks,
            "rate": self.rate,
            "key_policy": self.key_policy,
            "topic_compression": self.topic_compression,
            "control_of": self.control_of,
        }
