"""Natural order of names: runs of ASCII digits compare as numbers, so ``1, 2, …, 10`` rather than ``1, 10, 2``.

Class names and other labels stay strings everywhere in rfbench (``"10"`` is a name, never an index); this only
decides the order in which they are listed — and, where rfbench chooses a label set itself (the label set of a
manifest, a label set inferred from string labels), the order of its classes. The key is a total order, the same
on every machine:

- a name is cut into alternating text and digit runs (``"a12b"`` → ``"a"``, ``"12"``, ``"b"``); text runs
  compare as strings (code point order, as :func:`sorted` does), digit runs by their value — compared by length
  without leading zeros, then digit by digit, so a run of any length is exact and never converted to an int;
- runs of equal value but different spelling (``"01"``, ``"1"``) are ordered by their text, and names that are
  equal run by run by their whole text, so two different names never compare equal.

Names without digits keep the order :func:`sorted` gives them; zero-padded numbers (``A01`` … ``A27``) too.
"""

from __future__ import annotations

import re

__all__ = ["natural_key", "natural_sorted", "listing_key"]

_RUNS = re.compile(r"([0-9]+)")


def natural_key(name) -> tuple:
    """The sort key of ``name`` (made a string with ``str``) in natural order."""
    text = str(name)
    parts = _RUNS.split(text)  # text at even positions (possibly empty), digit runs at odd ones
    key = []
    for i, part in enumerate(parts):
        if i % 2:
            digits = part.lstrip("0") or "0"
            key.append((len(digits), digits, part))
        else:
            key.append(part)
    return (tuple(key), text)


def natural_sorted(names) -> list:
    """``names`` in natural order (see :func:`natural_key`)."""
    return sorted(names, key=natural_key)


def listing_key(value) -> tuple:
    """The order in which domain values are listed (tables, summaries): numbers by value first, then names in
    natural order, then None. Only for showing values: the order that decides a computation (a protocol's
    folds, a manifest table's codes) is :func:`rfbench.datasets.manifest.value_sort_key`'s."""
    if value is None:
        return (2, (), "")
    if isinstance(value, bool):
        return (0, (int(value),), "")
    if isinstance(value, (int, float)):
        return (0, (float(value),), "")
    try:  # NumPy scalars, without importing NumPy
        import numbers

        if isinstance(value, numbers.Real):
            return (0, (float(value),), "")
    except TypeError:  # pragma: no cover
        pass
    return (1, natural_key(value), "")
