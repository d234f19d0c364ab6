"""The experiment engine: plan -> runner -> transport -> rules -> CSV.

Plans are parsed and validated (:mod:`.plan`), the environment gate runs (:mod:`.gate`), the
runner orders (cell, repetition) pairs and drives a transport (:mod:`.transports`), the rules
turn each result into tidy rows with a status (:mod:`.rules`, per experiment from
:mod:`.experiments`), and :mod:`.store` appends them to the run directory's CSVs.
Builds on :mod:`kbench.model` and :mod:`kbench.kafka`; never imports :mod:`kbench.reporting`."""
