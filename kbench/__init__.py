"""kbench: a measuring instrument for Apache Kafka compression.

The C core lives in ``kbench._native``; this package orchestrates it.
"""

from __future__ import annotations

from kbench._native import BatchError, CodecError, KafkaError
from kbench.model import batch, codecs, corpus

__all__ = ["BatchError", "CodecError", "KafkaError", "batch", "codecs", "corpus", "__version__"]
__version__ = "0.1.0"
