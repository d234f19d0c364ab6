"""Between repetitions the runner waits until a deleted topic's partition directories are gone
from the local brokers' log dirs (the local cluster deletes files at once: log.segment.delete.delay.ms 0),
so that removing one repetition's gigabytes is never inside the next one's window."""

from __future__ import annotations

import threading
from pathlib import Path

from kbench.engine.transports.kafka import await_removed
from kbench.kafka.cluster_state import DEFAULT_BROKER_CONFIG
from kbench.model.segment import topic_dirs as _topic_dirs


def test_a_topics_directories_live_or_renamed_for_deletion_are_found(tmp_path: Path) -> None:
    for n in ("g-1-0", "g-1-1.3f2a9c1e0b7d4c55a1e2b3c4d5e6f708-delete", "g-1-x-0", "g-10-0", "g-1-", "other-0"):
        (tmp_path / n).mkdir()
    assert sorted(_topic_dirs(tmp_path, "g-1")) == ["g-1-0", "g-1-1.3f2a9c1e0b7d4c55a1e2b3c4d5e6f708-delete"]
    assert _topic_dirs(tmp_path / "missing", "g-1") == []


def test_the_wait_ends_when_the_broker_removes_the_directory(tmp_path: Path) -> None:
    d = tmp_path / "t-0.abc-delete"
    d.mkdir()
    removed = threading.Event()

    def broker() -> None:
        d.rmdir()
        removed.set()

    timer = threading.Timer(0.3, broker)
    timer.start()
    try:
        assert await_removed([tmp_path], "t", timeout=10.0)
        assert removed.is_set()  # it returned only after the directory went
    finally:
        timer.cancel()
    (tmp_path / "t-1").mkdir()
    assert not await_removed([tmp_path], "t", timeout=0.2)  # still there: given up, False
    assert await_removed([], "t", timeout=0.0)  # no local log dir: nothing to wait for


def test_the_local_cluster_deletes_a_topics_files_at_once() -> None:
    assert DEFAULT_BROKER_CONFIG["log.segment.delete.delay.ms"] == "0"
    assert DEFAULT_BROKER_CONFIG["log.initial.task.delay.ms"] == "0"  # the first deletion too
