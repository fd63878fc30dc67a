"""Seeded, deterministic cluster bootstrap for any statistic built from per-row sums.

Frames of one recording are not independent samples, so resampling frames understates the uncertainty.
The cluster bootstrap resamples whole clusters (recordings or subjects) with replacement.

The machinery is generic. A task reduces its rows to a *table*: one row per cluster, one column per summed
quantity (hit counts, scoreable counts, error sums; for classification, confusion-matrix cells). A
statistic is a function of column totals: it receives an array ``(..., C)`` of totals and returns ``(...)``
(micro PCK = hits / scoreable; macro-F1 from confusion counts; ...). One bootstrap replicate draws as many
clusters as there are, uniformly with replacement, adds up their table rows and evaluates every statistic
on those totals. A *paired* bootstrap (model minus baseline on the same rows) puts both tables side by side
so the two statistics see the same draws.

Determinism: the draws come from ``numpy.random.Generator(PCG64(seed))`` only; replicate sums are computed by
a Numba kernel in a fixed order (no BLAS, no thread-dependent reduction); the interval uses order statistics
(``numpy.quantile(method="inverted_cdf")``), so the same table, statistic and seed give the same interval
bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from rfbench._jit import serial_below
from rfbench.errors import ValidationError
from rfbench.metrics.kernels import _replicate_sums, _segment_sums

__all__ = [
    "Interval",
    "cluster_bootstrap",
    "bootstrap_counts",
    "segment_sums",
    "column_totals",
    "ratio",
    "mean_defined",
    "MAX_CLUSTERS",
    "MAX_REPLICATES",
    "Segments",
    "make_segments",
    "BLOCK_ROWS",
    "METHOD",
]

# memory and time grow with clusters x columns x replicates: both are bounded
from rfbench.metrics.limits import MAX_CLUSTERS, MAX_REPLICATES  # noqa: E402

#: Rows per segment when rows are not clustered (fixed, so results never depend on the thread count).
BLOCK_ROWS = 2048

METHOD = "cluster bootstrap, percentile interval (inverted CDF), PCG64"

Statistic = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Interval:
    """A bootstrap confidence interval.

    ``low``/``high`` are None when no replicate gave a defined (non-NaN) value; ``undefined`` counts the
    replicates whose statistic was NaN (e.g. no scoreable joint among the drawn clusters): they are left out.
    """

    low: float | None
    high: float | None
    level: float
    replicates: int
    undefined: int

    def to_dict(self) -> dict:
        return {"low": self.low, "high": self.high, "level": self.level, "replicates": self.replicates,
                "undefined": self.undefined}


@dataclass(frozen=True)
class Segments:
    """How rows are grouped: ``order`` (empty = identity) and ``start`` offsets; ``labels`` are the cluster
    ids when the segments are clusters (recordings, subjects), None when they are fixed blocks of rows."""

    order: np.ndarray
    start: np.ndarray
    labels: tuple[str, ...] | None

    @property
    def count(self) -> int:
        return int(self.start.shape[0] - 1)

    @property
    def clustered(self) -> bool:
        return self.labels is not None


def make_segments(n_rows: int, clusters=None, block: int = BLOCK_ROWS) -> Segments:
    """Segments for ``n_rows`` rows: one per distinct cluster id (rows kept in their order within a
    cluster, clusters in sorted id order), or fixed blocks of ``block`` rows when ``clusters`` is None."""
    if clusters is None:
        n_seg = -(-n_rows // block) if n_rows else 0
        start = np.minimum(np.arange(n_seg + 1, dtype=np.int64) * block, n_rows)
        return Segments(np.empty(0, dtype=np.int64), start, None)
    ids = np.asarray(clusters)
    if ids.shape != (n_rows,):
        raise ValidationError(f"cluster ids must have one entry per row ({n_rows}), got shape {ids.shape}")
    labels, inverse = np.unique(ids.astype(str), return_inverse=True)
    order = np.argsort(inverse, kind="stable").astype(np.int64)
    start = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=labels.size))]).astype(np.int64)
    return Segments(order, start, tuple(str(x) for x in labels))


def segment_sums(values, segment, n_segments: int) -> np.ndarray:
    """Sum per-row values into per-cluster rows: ``out[segment[i]] += values[i]``, in row order.

    Parameters
    ----------
    values : array_like, (N, C) or (N,)
        Per-row quantities (counts as floats are exact below 2**53).
    segment : array_like of int, (N,)
        Cluster index of each row, in ``0..n_segments-1``.
    n_segments : int
        Number of clusters.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    segment = np.asarray(segment)
    if values.ndim != 2 or segment.shape != (values.shape[0],):
        raise ValidationError(f"values (N, C) and segment (N,) must agree; got {values.shape} and {segment.shape}")
    if segment.size and (segment.min() < 0 or segment.max() >= n_segments):
        raise ValidationError(f"segment indices must lie in 0..{n_segments - 1}")
    out = np.zeros((int(n_segments), values.shape[1]), dtype=np.float64)
    _segment_sums(np.ascontiguousarray(values), np.ascontiguousarray(segment, dtype=np.int64), out)
    return out


def column_totals(table) -> np.ndarray:
    """Column sums of a per-cluster table, each correctly rounded (``math.fsum``), so independent of order."""
    table = np.asarray(table, dtype=np.float64)
    return np.array([math.fsum(table[:, c]) for c in range(table.shape[1])], dtype=np.float64)


def ratio(num, den) -> np.ndarray:
    """``num / den`` elementwise (broadcast), NaN where ``den <= 0``: an undefined statistic, never 0 or 1."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def mean_defined(num, den) -> np.ndarray:
    """Mean over the last axis of ``num / den`` over the entries with ``den > 0``; NaN when there is none
    (macro averages: per-joint PCK, per-class recall or F1)."""
    per = ratio(num, den)
    valid = np.asarray(den) > 0
    total = np.where(valid, per, 0.0).sum(axis=-1)
    return ratio(total, valid.sum(axis=-1))


def bootstrap_counts(n_clusters: int, n_boot: int, seed: int, chunk: int | None = None):
    """Yield ``(b, n_clusters)`` int64 arrays: how often each cluster is drawn in each replicate.

    Replicate r draws ``n_clusters`` indices with ``Generator(PCG64(seed)).integers(0, n_clusters)``; the
    chunking depends only on ``n_clusters`` (never on the machine), so the draws are reproducible.
    """
    if n_clusters < 1:
        raise ValidationError("the bootstrap needs at least one cluster")
    rng = np.random.Generator(np.random.PCG64(seed))
    if chunk is None:
        chunk = max(1, min(n_boot, (1 << 22) // n_clusters))
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        idx = rng.integers(0, n_clusters, size=(b, n_clusters))
        flat = (np.arange(b, dtype=np.int64)[:, None] * n_clusters + idx).ravel()
        yield np.bincount(flat, minlength=b * n_clusters).astype(np.int64).reshape(b, n_clusters)
        done += b


def cluster_bootstrap(table, statistics: Mapping[str, Statistic], n_boot: int = 1000, level: float = 0.95,
                      seed: int = 0) -> dict[str, Interval]:
    """Percentile confidence intervals of several statistics of the same table, from one set of draws.

    Parameters
    ----------
    table : array_like, (G, C)
        One row per cluster (recording, subject), one column per summed quantity.
    statistics : mapping of name to callable
        Each maps totals ``(B, C)`` to values ``(B,)``; NaN marks an undefined replicate. For a paired
        comparison, give the model's and the baseline's columns in one table and include their difference
        as a statistic: every statistic sees the same replicates.
    n_boot : int
        Number of replicates (>= 1).
    level : float
        Confidence level in (0, 1).
    seed : int
        Seed of the PCG64 generator (>= 0).

    Returns
    -------
    dict of str to Interval
    """
    table = np.ascontiguousarray(table, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] < 1:
        raise ValidationError(f"the bootstrap table must be (clusters >= 1, columns), got shape {table.shape}")
    if table.shape[0] > MAX_CLUSTERS:
        raise ValidationError(
            f"{table.shape[0]} clusters exceed the bootstrap's limit of {MAX_CLUSTERS}; group rows by recording "
            f"or subject, or turn the bootstrap off"
        )
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValidationError(f"n_boot must be a positive integer, got {n_boot!r}")
    if not (isinstance(level, (int, float)) and 0.0 < level < 1.0):
        raise ValidationError(f"level must lie strictly between 0 and 1, got {level!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValidationError(f"seed must be a non-negative integer, got {seed!r}")
    values = {name: [] for name in statistics}
    for counts in bootstrap_counts(table.shape[0], int(n_boot), int(seed)):
        sums = np.empty((counts.shape[0], table.shape[1]), dtype=np.float64)
        with serial_below(counts.size * table.shape[1]):
            _replicate_sums(counts, table, sums)
        for name, fn in statistics.items():
            values[name].append(np.asarray(fn(sums), dtype=np.float64).reshape(counts.shape[0]))
    alpha = (1.0 - level) / 2.0
    out = {}
    for name, parts in values.items():
        v = np.concatenate(parts)
        defined = v[~np.isnan(v)]
        if defined.size == 0:
            out[name] = Interval(None, None, float(level), int(n_boot), int(v.size))
            continue
        low, high = np.quantile(defined, [alpha, 1.0 - alpha], method="inverted_cdf")
        out[name] = Interval(float(low), float(high), float(level), int(n_boot), int(v.size - defined.size))
    return out
