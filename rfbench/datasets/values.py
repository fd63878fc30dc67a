"""Domain values (a recording's subject, room, gesture...): their canonical order, the same on every machine.

Kept apart from :mod:`rfbench.datasets.manifest` so that the tree walks (:mod:`rfbench.datasets.tree`), which the
manifest itself uses, can order values without importing the manifest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["value_sort_key", "sorted_values"]


def value_sort_key(value: Any) -> tuple:
    """Canonical order of domain values: numbers numerically first, then strings; the same on every machine."""
    if isinstance(value, (bool, np.bool_)):
        return (0, int(value), "")
    if isinstance(value, (int, float, np.integer, np.floating)):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def sorted_values(values) -> list:
    """``sorted(values, key=value_sort_key)``; values that are all plain strings (a manifest's capture column:
    one per recording) are sorted directly, which is the same order (their keys differ only in the string)."""
    values = list(values)
    if all(type(v) is str for v in values):
        return sorted(values)
    return sorted(values, key=value_sort_key)
