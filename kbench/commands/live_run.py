"""What ``kbench run`` shows while it runs: the live board, its view (a terminal status or a line
every 5 s, both in run.log) and, with ``--metrics-port``, the Prometheus endpoint."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbench.engine import runlog
from kbench.engine.live import LiveBoard
from kbench.engine.live_metrics import MetricsServer
from kbench.engine.live_view import LiveView

__all__ = ["LiveRun"]


class LiveRun:
    """A context manager around one run: ``board`` for the runner, ``progress_sink`` for its progress
    line (on a terminal the status shows it; elsewhere None: the progress lines are printed)."""

    def __init__(self, run_dir: Path, scrub: Callable[[str], str], metrics_port: int | None) -> None:
        self.run_dir = run_dir
        self.scrub = scrub
        self.board = LiveBoard()
        self.view = LiveView(self.board, stream=sys.stderr, log=self._log, redirect_stdout=sys.stdout.isatty())
        self.metrics_port = metrics_port
        self.server: MetricsServer | None = None
        self.progress_sink: Callable[[str], None] | None = self.view.set_progress if self.view.on_terminal else None

    def _log(self, fields: dict[str, Any]) -> None:
        if self.run_dir.is_dir():  # made by the runner once the plan and the directory are checked
            event = str(fields.pop("event"))
            runlog.append(self.run_dir, event, fields, self.scrub)

    def __enter__(self) -> LiveRun:
        if self.metrics_port is not None:
            try:
                self.server = MetricsServer(self.board, self.metrics_port)
            except OSError as e:
                raise ValueError(
                    f"--metrics-port {self.metrics_port}: cannot listen ({e.strerror}); give a free port, or 0 for any"
                ) from None
            print(f"kbench: live figures on http://0.0.0.0:{self.server.port}/metrics", file=sys.stderr)
        self.view.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.view.stop()
        if self.server is not None:
            self.server.close()
