"""kbench: a measuring instrument for Apache Kafka compression.

The C core lives in ``kbench._native``; this package orchestrates it.
"""
from __future__ import annotations

from kbench._native import CodecError, KafkaError
from kbench import codecs, corpus

__all__ = ["CodecError", "KafkaError", "codecs", "corpus", "__version__"]
__version__ = "0.1.0"
