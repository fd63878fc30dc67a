"""Datasets: manifests of Widar3.0, MM-Fi and any corpus named by a convention, and synthetic corpora.

Submodules: :mod:`~rfbench.datasets.manifest` (the ``rfbench.manifest/1`` file and its columnar view),
:mod:`~rfbench.datasets.widar`, :mod:`~rfbench.datasets.mmfi` (ingest and dataset facts),
:mod:`~rfbench.datasets.files` (``rfbench ingest files``: any Intel 5300 corpus from a file-name template),
:mod:`~rfbench.datasets.template` (the templates), :mod:`~rfbench.datasets.tree` (walking untrusted trees,
counting and hashing logs: what every ingest shares) and :mod:`~rfbench.datasets.synthetic` (generated trees
for tests, benchmarks and the demo).
"""
