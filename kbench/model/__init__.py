"""The in-memory model: codecs with Kafka's framing, corpora, RecordBatch v2, segments,
the batching model and simulated transport, the codec micro-benchmark, and small helpers
(statistics, units). Nothing here talks to Kafka or knows about plans or reports."""
