"""Transports: what moves the records for a run (see :mod:`kbench.engine.transports.base`).

``make(defn)`` builds one from a plan's ``[transport]`` table; imports are lazy so that
a build without the Kafka driver can still run ``sim`` and ``dry`` plans.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kbench.engine.transports.base import Transport, TransportError

if TYPE_CHECKING:
    from kbench.engine.plan import TransportDef

__all__ = ["make"]


def make(defn: TransportDef, client: Mapping[str, str] | None = None) -> Transport:
    """The transport of ``defn``; ``client``: the plan's client properties (with -X), whose security
    properties the first contact with a ``bootstrap`` cluster uses."""
    if defn.kind == "dry":
        from kbench.engine.transports.dry import DryTransport

        return DryTransport()
    if defn.kind == "sim":
        from kbench.engine.transports.simulated import SimTransport

        return SimTransport()
    if defn.kind == "testbed":
        from kbench.engine.transports.testbed import TestbedTransport

        return TestbedTransport(defn)
    if defn.kind in ("local", "bootstrap"):
        from kbench.engine.transports.kafka import KafkaTransport
        from kbench.kafka.address import check_bootstrap

        if defn.kind == "bootstrap":
            check_bootstrap("--bootstrap", defn.bootstrap)  # before anything connects or is written

        return KafkaTransport(defn, client=dict(client or {}))
    raise TransportError(f"unknown transport '{defn.kind}'; use local, bootstrap, testbed, sim or dry")
