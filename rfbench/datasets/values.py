"""Domain values (a recording's subject, room, gesture...): their canonical order, the same on every machine.

Kept apart from :mod:`rfbench.datasets.manifest` so that the tree walks (:mod:`rfbench.datasets.tree`), which the
manifest itself uses, can order values without importing the manifest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["value_sort_key"]


def value_sort_key(value: Any) -> tuple:
    """Canonical order of domain values: numbers numerically first, then strings; the same on every machine."""
    if isinstance(value, (bool, np.bool_)):
        return (0, int(value), "")
    if isinstance(value, (int, float, np.integer, np.floating)):
        return (0, float(value), "")
    return (1, 0.0, str(value))
