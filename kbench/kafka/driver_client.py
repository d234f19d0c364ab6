"""The client side of the driver protocol (docs/drivers.md), the one implementation: start a
driver process with its job on stdin, read its READY/STARTED and RESULT lines (or its ERROR)
within a timeout, abortable, and kill it.  The local pool, the Dask tasks and ``kbench produce``
all speak to drivers through :class:`DriverClient`."""

from __future__ import annotations

import json
import select
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench import KafkaError
from kbench.kafka import clients

__all__ = ["DriverClient", "DriverError", "Launcher", "die_with_parent", "launch_here", "results"]

#: Starts a driver process: (role, argv, Popen keyword arguments) -> the process.  The default runs
#: it on this machine; the testbed runs it on the role's emulated host.
Launcher = Callable[[str, Sequence[str], dict[str, Any]], "subprocess.Popen[str]"]

#: Seconds between looks at the abort flag while waiting for a line.
_POLL_S = 0.2


class DriverError(KafkaError):
    """A driver failed (its ERROR line, its last stderr line or its exit status), did not answer
    in time, or was aborted; the message names the driver."""


def die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """SIGTERM the driver when its parent dies (even by SIGKILL): no orphaned clients."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def launch_here(role: str, argv: Sequence[str], kwargs: dict[str, Any]) -> subprocess.Popen[str]:
    return subprocess.Popen(list(argv), **kwargs)


@dataclass
class DriverClient:
    """One driver process of one role.  ``name`` is how errors name it (e.g. "producer worker");
    ``stderr_path`` holds its stderr (None: inherited); ``abort`` is asked while waiting."""

    proc: subprocess.Popen[str]
    role: str
    name: str
    stderr_path: Path | None = None
    abort: Callable[[], bool] | None = None

    @classmethod
    def start(
        cls,
        role: str,
        job: Mapping[str, Any],
        *,
        client: str = "librdkafka",
        name: str | None = None,
        stderr_path: Path | None = None,
        env: Mapping[str, str] | None = None,
        launch: Launcher = launch_here,
        abort: Callable[[], bool] | None = None,
    ) -> DriverClient:
        """Start ``client``'s driver for ``role`` and send it ``job`` with the role and the
        protocol version (secrets travel on a pipe, never argv)."""
        try:
            argv = clients.driver_command(client)
        except Exception as e:  # noqa: BLE001 - KafkaDistError: Maven/Java missing or the build failed
            raise DriverError(f"{client} driver: {e}") from None
        kwargs: dict[str, Any] = dict(
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent
        )
        if env is not None:
            kwargs["env"] = dict(env)
        if stderr_path is None:
            p = launch(role, argv, kwargs)
        else:
            with stderr_path.open("w") as err:  # a file, not a pipe: a chatty client never blocks on it
                p = launch(role, argv, {**kwargs, "stderr": err})
        assert p.stdin is not None
        p.stdin.write(json.dumps(dict(job, role=role, protocol=clients.PROTOCOL)) + "\n")
        if job.get("hold"):
            p.stdin.flush()  # held (a group member): stdin stays open until release()
        else:
            p.stdin.close()
        return cls(p, role, name or f"{role} driver", stderr_path, abort)

    def release(self) -> None:
        """Close the driver's stdin: a held group member (the job's ``hold``) subscribes now."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def line(self, timeout: float | None) -> str:
        """The driver's next line ("" when it exited); DriverError after ``timeout`` seconds
        (None: no limit) or once ``abort`` says so, the driver killed."""
        out = self.proc.stdout
        assert out is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = _POLL_S if self.abort is not None else None
            if deadline is not None:
                left = max(0.0, deadline - time.monotonic())
                wait = left if wait is None else min(wait, left)
            ready, _, _ = select.select([out], [], [], wait)
            if ready:
                return out.readline()
            if self.abort is not None and self.abort():
                self.kill()
                raise DriverError(f"{self.name}: aborted by the coordinator")
            if deadline is not None and time.monotonic() >= deadline:
                self.kill()
                raise DriverError(f"{self.name} did not answer within {timeout:.0f} s")

    def expect(self, word: str, timeout: float | None) -> None:
        """The next line must be ``word`` (READY, STARTED); else DriverError with the driver's error."""
        line = self.line(timeout)
        if line.strip() != word:
            self.kill()
            raise DriverError(f"{self.name}: {self.error(line)}")

    def result(self, timeout: float | None) -> dict[str, Any]:
        """The driver's RESULT (its last line), after it exited."""
        return self.parse(self.line(timeout))

    def parse(self, line: str) -> dict[str, Any]:
        """The RESULT in ``line`` (the driver's last), or DriverError naming the driver."""
        if not line.startswith("RESULT "):
            raise DriverError(f"{self.name}: {self.error(line)}")
        self.proc.wait(timeout=30)
        return dict(json.loads(line[7:]))

    def error(self, line: str) -> str:
        """What went wrong, from a line that was not the expected one: the ERROR's message, the
        line itself, else the last line of the driver's stderr or its exit status."""
        if line.startswith("ERROR "):
            try:
                return str(json.loads(line[6:]))
            except ValueError:
                return line[6:].strip()
        if line.strip():
            return line.strip()
        try:
            self.proc.wait(timeout=10)
            text = self.stderr_path.read_text(errors="replace") if self.stderr_path is not None else ""
            tail = text.strip().splitlines()[-1:]
        except (OSError, subprocess.TimeoutExpired):
            tail = []
        return tail[0] if tail else f"exited with status {self.proc.poll()}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def results(drivers: Sequence[DriverClient], timeout: float) -> list[dict[str, Any]]:
    """Every driver's RESULT, in order, read as each arrives: the first driver that dies or fails
    fails the lot at once (the others are killed), named in the DriverError."""
    out: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(out) < len(drivers):
            waiting = {d.proc.stdout: i for i, d in enumerate(drivers) if i not in out and d.proc.stdout is not None}
            left = deadline - time.monotonic()
            ready, _, _ = select.select(list(waiting), [], [], max(0.0, left)) if left > 0 else ([], [], [])
            if not ready:
                late = ", ".join(drivers[i].name for i in waiting.values())
                raise DriverError(f"{late} did not answer within {timeout:.0f} s")
            for f in ready:
                i = waiting[f]
                out[i] = drivers[i].parse(f.readline())
    except BaseException:
        for d in drivers:
            d.kill()
        raise
    return [out[i] for i in range(len(drivers))]
