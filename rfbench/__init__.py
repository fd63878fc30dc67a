"""rfbench: trustworthy WiFi-sensing results.

Exact Intel 5300 CSI parsing, leakage-audited dataset splits, pose and gesture metrics under a declared
MetricSpec beside a training-split baseline, and evidence-tagged reports that ``rfbench verify`` re-runs.

The package imports nothing heavy at import time; submodules import NumPy and Numba on use.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
