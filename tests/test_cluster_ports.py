"""Ports for a local cluster (``cluster_state.free_ports``): free, distinct, and outside the kernel's
ephemeral range, so that no outgoing connection can take one between the draw and the broker's bind
(CI 2026-12-06: a broker died at start-up, "Address already in use", on a port drawn with bind(0))."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from kbench.kafka import cluster_state
from kbench.kafka.cluster_state import FREE_PORT_MIN, ephemeral_range, free_ports, port_free


@contextmanager
def listening(port: int) -> Iterator[socket.socket]:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        s.listen()
        yield s
    finally:
        s.close()


def test_ports_are_free_distinct_and_never_ephemeral() -> None:
    lo, hi = ephemeral_range()
    assert (lo, hi) != (0, 0) and lo <= hi
    for _ in range(5):
        ports = free_ports(6)
        assert len(set(ports)) == 6, ports
        assert all(FREE_PORT_MIN <= p <= 65535 and not lo <= p <= hi for p in ports), (ports, lo, hi)
        assert all(port_free(p) for p in ports), ports


def test_excluded_ports_are_never_drawn() -> None:
    [only] = free_ports(1)  # then the only candidate: low = only, the ephemeral range above it
    assert free_ports(1, ephemeral=(only + 1, 65535), low=only) == [only]
    # excluded: the kernel's choice stands in
    [p] = free_ports(1, ephemeral=(only + 1, 65535), low=only, exclude=[only])
    assert p != only and port_free(p)


def test_a_port_in_use_is_never_drawn() -> None:
    [only] = free_ports(1)
    with listening(only):
        [p] = free_ports(1, ephemeral=(only + 1, 65535), low=only)
        assert p != only


def test_the_ephemeral_range_is_read_from_proc(tmp_path: object) -> None:
    from pathlib import Path

    f = Path(str(tmp_path)) / "range"
    f.write_text("40000\t50000\n")
    assert ephemeral_range(f) == (40000, 50000)
    f.write_text("garbage")
    assert ephemeral_range(f) == cluster_state.EPHEMERAL_DEFAULT
    assert ephemeral_range(Path(str(tmp_path)) / "absent") == cluster_state.EPHEMERAL_DEFAULT
