"""Datasets: manifests of Widar3.0 and MM-Fi trees, and deterministic synthetic corpora.

Submodules: :mod:`~rfbench.datasets.manifest` (the ``rfbench.manifest/1`` file and its columnar view),
:mod:`~rfbench.datasets.widar`, :mod:`~rfbench.datasets.mmfi` (ingest and dataset facts) and
:mod:`~rfbench.datasets.synthetic` (generated trees for tests, benchmarks and the demo).
"""
