"""The experiments: one module each (``a_latency`` … ``m_microbench``), listed once in
:mod:`kbench.experiments.registry`.

An experiment module defines one :class:`~kbench.experiments.spec.Experiment`: its CSV columns
and units, the rows it derives from a measured repetition, its verdict metric, its report section,
threats and plots, and its notebook frame.  The runner, the report, frames, provenance and the
transports ask the registry and never test an experiment's id.  Adding an experiment is one new
module and one line in the registry (docs/architecture.md).

This package's ``__init__`` imports nothing, so that :mod:`.spec` is a leaf any layer may use.
"""
