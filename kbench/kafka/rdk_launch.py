"""``python -m kbench.kafka.rdk_launch VERSION``: the driver process of ``librdkafka@VERSION``.

It finds that version's library (:mod:`kbench.kafka.rdk_versions`) and replaces itself (same
process id, so the runner's CPU readings hold) with the librdkafka worker, the library first in
``LD_PRELOAD``: the dynamic loader binds every ``rd_kafka_*`` symbol of the extension to it,
ahead of the extension's own ``DT_NEEDED`` librdkafka (the system's, or one bundled in kbench's
wheel under another name).  The worker checks the version it got (``--librdkafka``).  When the
version is not installed it answers the job with the protocol's one ``ERROR`` line.
"""

from __future__ import annotations

import json
import os
import sys

from kbench.kafka.rdk_versions import locate

__all__ = ["PRELOAD_VAR", "main", "preload_env"]

PRELOAD_VAR = "LD_PRELOAD"


def preload_env(base: dict[str, str], library: str) -> dict[str, str]:
    """``base`` with ``library`` first in LD_PRELOAD (what was there, e.g. a sanitizer, stays after)."""
    rest = base.get(PRELOAD_VAR, "")
    return {**base, PRELOAD_VAR: f"{library}:{rest}" if rest else library}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m kbench.kafka.rdk_launch VERSION\n")
        return 2
    version = argv[0]
    try:
        lib = locate(version)
    except ValueError as e:
        sys.stdin.readline()  # the job: answered with one ERROR line, as the protocol has it
        sys.stdout.write("ERROR " + json.dumps(str(e)) + "\n")
        sys.stdout.flush()
        return 1
    env = preload_env(dict(os.environ), str(lib.path))
    cmd = [sys.executable, "-P", "-m", "kbench.kafka.worker", "--librdkafka", version]
    os.execve(sys.executable, cmd, env)
    return 1  # not reached: execve replaces this process or raises


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
