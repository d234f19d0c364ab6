"""Kafka plumbing: the pinned Kafka distribution (Maven), a local KRaft cluster, topic admin,
the librdkafka producer/consumer drivers and their worker process, and /proc CPU sampling.
Builds on :mod:`kbench.model`; knows nothing about plans, experiments or reports."""
