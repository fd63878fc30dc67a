"""Metrics under a declared spec: skeleton layouts, pose metrics, their Numba kernels, and the bootstrap.

Submodules: :mod:`~rfbench.metrics.skeletons`, :mod:`~rfbench.metrics.pose`, :mod:`~rfbench.metrics.kernels`
(private kernels), :mod:`~rfbench.metrics.stats` (cluster bootstrap for any per-row statistic).
"""
