"""kbench: a measuring instrument for Apache Kafka compression.

The C core lives in ``kbench._native``; this package orchestrates it.
"""

from __future__ import annotations

import importlib
from typing import Any

from kbench._native import BatchError, CodecError, KafkaError

__all__ = ["BatchError", "CodecError", "KafkaError", "batch", "codecs", "corpus", "__version__"]
__version__ = "0.1.0"

#: Imported on first use (PEP 562), so that a command starts without the modules it does not use.
_LAZY = {"batch": "kbench.model.batch", "codecs": "kbench.model.codecs", "corpus": "kbench.model.corpus"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(_LAZY[name])
    raise AttributeError(f"module 'kbench' has no attribute {name!r}")
