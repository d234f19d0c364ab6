"""Transports: what moves the records for a run (see :mod:`kbench.transport`).

``make(defn)`` builds one from a plan's ``[transport]`` table; imports are lazy so that
a build without the Kafka driver can still run ``sim`` and ``dry`` plans.
"""
from __future__ import annotations

from kbench.plan import TransportDef
from kbench.transport import Transport, TransportError

__all__ = ["make"]


def make(defn: TransportDef) -> Transport:
    if defn.kind == "dry":
        from kbench.transports.dry import DryTransport

        return DryTransport()
    if defn.kind == "sim":
        from kbench.transports.sim import SimTransport

        return SimTransport()
    if defn.kind in ("local", "bootstrap"):
        from kbench.transports.kafka import KafkaTransport

        return KafkaTransport(defn)
    raise TransportError(f"unknown transport '{defn.kind}'; use local, bootstrap, sim or dry")
