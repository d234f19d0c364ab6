"""Kafka plumbing: the pinned Kafka distribution (Maven), a local KRaft cluster, topic admin,
the librdkafka producer/consumer drivers and their worker process, the Java driver
(``java_driver``, sources in ``java/``), the client registry of the driver protocol (``clients``,
docs/drivers.md), and /proc CPU sampling.
Builds on :mod:`kbench.model`; knows nothing about plans, experiments or reports."""
