"""Reporting: reads run directories only (CSV + manifest), never measures. frames -> summary
(medians, ranges, verdicts as ledger figures) -> report (Markdown + HTML, plots), provenance
for ``kbench report --verify``, and the cross-machine tables of the notebooks (:mod:`.compare`).
Builds on :mod:`kbench.engine` for the shared definitions (experiments, verdicts)."""
