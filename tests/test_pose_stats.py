"""The seeded cluster bootstrap (rfbench.metrics.stats): kernels against naive twins, hand cases, determinism."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from rfbench.errors import ValidationError
from rfbench.metrics import stats
from rfbench.metrics.kernels import _replicate_sums


def mean_of(col_sum, col_n):
    return lambda x: np.divide(x[..., col_sum], x[..., col_n], out=np.full(x.shape[:-1], np.nan),
                               where=x[..., col_n] > 0)


@pytest.mark.parametrize("shape", [(0, 3, 2), (1, 1, 1), (7, 5, 3), (40, 11, 6)])
def test_replicate_sums_kernel_matches_naive(shape):
    b, g, c = shape
    rng = np.random.default_rng(b + g)
    counts = rng.integers(0, 4, size=(b, g)).astype(np.int64)
    table = rng.normal(size=(g, c))
    table[0, 0] = np.inf  # a cluster with an infinite error sum...
    counts[:, 0] = np.arange(b) % 2  # ...drawn in half of the replicates only
    out = np.empty((b, c))
    _replicate_sums(counts, table, out)
    want = naive.naive_replicate_sums(counts, table)
    np.testing.assert_allclose(out, want, rtol=1e-13)
    # A replicate that does not draw the infinite cluster stays finite (0 * inf would be NaN).
    if b > 0:
        assert np.isfinite(out[0]).all()


def test_segment_sums_matches_naive():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(50, 4))
    seg = rng.integers(0, 6, size=50)
    np.testing.assert_allclose(stats.segment_sums(values, seg, 6), naive.naive_segment_sums(values, seg, 6),
                               rtol=1e-13)
    assert stats.segment_sums(np.empty((0, 2)), np.empty(0, int), 3).tolist() == [[0.0, 0.0]] * 3
    with pytest.raises(ValidationError):
        stats.segment_sums(values, seg, 5)


def test_bootstrap_counts_are_draws_with_replacement():
    chunks = list(stats.bootstrap_counts(5, 1000, seed=3, chunk=300))
    counts = np.vstack(chunks)
    assert counts.shape == (1000, 5) and (counts.sum(axis=1) == 5).all()
    # Chunking does not change the draws.
    np.testing.assert_array_equal(counts, np.vstack(list(stats.bootstrap_counts(5, 1000, seed=3))))
    # Each cluster is drawn once per replicate on average.
    assert counts.mean(axis=0) == pytest.approx(np.ones(5), abs=0.1)


def test_one_cluster_gives_a_degenerate_interval():
    table = np.array([[3.0, 4.0]])  # sum 3 over 4 rows: mean 0.75 in every replicate
    iv = stats.cluster_bootstrap(table, {"m": mean_of(0, 1)}, n_boot=50, seed=0)["m"]
    assert (iv.low, iv.high, iv.replicates, iv.undefined) == (0.75, 0.75, 50, 0)


def test_two_clusters_by_hand():
    # Cluster values 0 and 1 (one row each): a replicate draws {0,0}, {0,1} or {1,1} with probabilities
    # 1/4, 1/2, 1/4, so its mean is 0, 0.5 or 1; the 95% percentile interval is [0, 1].
    table = np.array([[0.0, 1.0], [1.0, 1.0]])
    iv = stats.cluster_bootstrap(table, {"m": mean_of(0, 1)}, n_boot=2000, seed=1)["m"]
    assert (iv.low, iv.high) == (0.0, 1.0)
    # At 40% confidence the quantiles 0.3 and 0.7 both fall on 0.5.
    iv = stats.cluster_bootstrap(table, {"m": mean_of(0, 1)}, n_boot=2000, level=0.4, seed=1)["m"]
    assert (iv.low, iv.high) == (0.5, 0.5)


def test_paired_difference_of_a_constant_shift_is_exact():
    # Model column = baseline column + 0.25 per row in every cluster: the paired difference of means is
    # exactly 0.25 in every replicate, however different the clusters are.
    rng = np.random.default_rng(2)
    n_rows = rng.integers(1, 20, size=12).astype(float)
    base = rng.normal(size=12) * n_rows
    table = np.stack([base + 0.25 * n_rows, base, n_rows], axis=1)
    model, baseline = mean_of(0, 2), mean_of(1, 2)
    ivs = stats.cluster_bootstrap(table, {"model": model, "base": baseline,
                                          "delta": lambda x: model(x) - baseline(x)}, n_boot=500, seed=4)
    assert ivs["delta"].low == pytest.approx(0.25, abs=1e-12) and ivs["delta"].high == pytest.approx(0.25, abs=1e-12)
    assert ivs["model"].high - ivs["model"].low > 0.1  # the unpaired intervals are wide


def test_bootstrap_is_deterministic_and_seeded():
    rng = np.random.default_rng(5)
    table = np.stack([rng.normal(size=30), np.ones(30)], axis=1)
    a = stats.cluster_bootstrap(table, {"m": mean_of(0, 1)}, n_boot=300, seed=9)["m"]
    b = stats.cluster_bootstrap(table, {"m": mean_of(0, 1)}, n_boot=300, seed=9)["m"]
    c = stats.cluster_bootstrap(table, {"m": mean_of(0, 1)}, n_boot=300, seed=10)["m"]
    assert a == b and a != c


def test_undefined_replicates_are_counted_and_dropped():
    # Cluster 0 has no scoreable row (denominator 0). A replicate drawing only cluster 0 (prob 1/4) is undefined.
    table = np.array([[0.0, 0.0], [2.0, 4.0]])
    iv = stats.cluster_bootstrap(table, {"m": mean_of(0, 1)}, n_boot=4000, seed=0)["m"]
    assert iv.undefined == pytest.approx(1000, rel=0.1)
    assert (iv.low, iv.high) == (0.5, 0.5)
    none = stats.cluster_bootstrap(np.zeros((2, 2)), {"m": mean_of(0, 1)}, n_boot=10, seed=0)["m"]
    assert none.low is None and none.high is None and none.undefined == 10


def test_cluster_bootstrap_widens_with_correlated_rows():
    # 10 recordings with strong recording effects, 50 frames each. Resampling recordings gives a much wider
    # interval than pretending the 500 frames are independent (one cluster per frame).
    rng = np.random.default_rng(6)
    effect = rng.normal(scale=1.0, size=10)
    frames = effect.repeat(50) + rng.normal(scale=0.1, size=500)
    rec = np.arange(500) // 50
    by_rec = stats.segment_sums(np.stack([frames, np.ones(500)], axis=1), rec, 10)
    by_frame = np.stack([frames, np.ones(500)], axis=1)
    w_rec = stats.cluster_bootstrap(by_rec, {"m": mean_of(0, 1)}, n_boot=500, seed=0)["m"]
    w_frame = stats.cluster_bootstrap(by_frame, {"m": mean_of(0, 1)}, n_boot=500, seed=0)["m"]
    assert (w_rec.high - w_rec.low) > 3 * (w_frame.high - w_frame.low)


@pytest.mark.parametrize("kw,message", [
    ({"n_boot": 0}, "n_boot"), ({"level": 1.0}, "level"), ({"seed": -1}, "seed"), ({"n_boot": True}, "n_boot"),
])
def test_bootstrap_argument_errors(kw, message):
    with pytest.raises(ValidationError, match=message):
        stats.cluster_bootstrap(np.ones((2, 2)), {"m": mean_of(0, 1)}, **kw)


def test_too_many_clusters_refused():
    with pytest.raises(ValidationError, match="exceed the bootstrap's limit"):
        stats.cluster_bootstrap(np.ones((stats.MAX_CLUSTERS + 1, 1)), {"m": lambda x: x[..., 0]}, n_boot=1)


def test_column_totals_are_correctly_rounded():
    table = np.array([[1e16], [1.0], [-1e16], [1.0]])
    assert stats.column_totals(table).tolist() == [2.0]  # a naive left-to-right sum gives 1.0
