"""The one exception of the testbed: its message is one line naming the problem and the fix."""

from __future__ import annotations

__all__ = ["TestbedError"]


class TestbedError(RuntimeError):
    """The testbed cannot be made, used or removed; the message says why and what to do."""

    __test__ = False  # not a pytest test class, whatever its name says
