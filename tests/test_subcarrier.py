"""rfbench.csi.subcarrier: grids, resampling (any layout) against a naive twin and np.interp, percentiles."""

from __future__ import annotations

import math

import numpy as np
import pytest

import naive
from rfbench.csi.subcarrier import GRIDS, grid, latency_percentiles, resample_subcarriers
from rfbench.errors import ValidationError


def test_grids_hand_listed():
    assert GRIDS["intel30-20"] == (-28, -26, -24, -22, -20, -18, -16, -14, -12, -10, -8, -6, -4, -2, -1,
                                   1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 28)
    assert GRIDS["intel30-40"] == (-58, -54, -50, -46, -42, -38, -34, -30, -26, -22, -18, -14, -10, -6, -2,
                                   2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58)
    assert len(GRIDS["ht20-56"]) == 56 and 0 not in GRIDS["ht20-56"]
    assert len(GRIDS["ht40-114"]) == 114 and not {-1, 0, 1} & set(GRIDS["ht40-114"])
    # Intel's groups are a subset of the full grid of the same bandwidth
    assert set(GRIDS["intel30-20"]) <= set(GRIDS["ht20-56"])
    assert set(GRIDS["intel30-40"]) <= set(GRIDS["ht40-114"])


def test_hand_computed_interpolation():
    # values 1 at index 0 and 3 at index 2: index 1 lies halfway -> 2; the ends are exact
    np.testing.assert_array_equal(resample_subcarriers([1.0, 3.0], [0, 2], [0, 0.5, 1, 2]), [1.0, 1.5, 2.0, 3.0])
    # intel30-20 -> ht20-56: subcarrier -27 lies halfway between -28 and -26
    x = np.zeros(30)
    x[0], x[1] = 10.0, 20.0
    out = resample_subcarriers(x, "intel30-20", "ht20-56")
    assert out[0] == 10.0 and out[1] == 15.0 and out[2] == 20.0


def test_round_trips_through_a_finer_grid_are_exact():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 30, 3)) + 1j * rng.standard_normal((4, 30, 3))
    for coarse, fine in (("intel30-20", "ht20-56"), ("intel30-40", "ht40-114")):
        back = resample_subcarriers(resample_subcarriers(x, coarse, fine, axis=1), fine, coarse, axis=1)
        np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize("src, dst, span", [("intel30-20", "ht20-56", "index"), ("ht20-56", "intel30-20", "index"),
                                            ("intel30-40", "ht40-114", "index"), ("intel30-20", "ht40-114", "band"),
                                            ("ht40-114", "intel30-20", "band")])
def test_matches_naive_twin_exactly_and_np_interp_closely(src, dst, span):
    rng = np.random.default_rng(len(src) + len(dst))
    x = rng.standard_normal((5, len(GRIDS[src])))
    out = resample_subcarriers(x, src, dst, span=span)
    s, d = grid(src), grid(dst)
    if span == "band":
        s, d = s / np.abs(s).max(), d / np.abs(d).max()
    np.testing.assert_array_equal(out, naive.interp_rows(x, s, d))
    for row in range(5):
        np.testing.assert_allclose(out[row], np.interp(d, s, x[row]), rtol=1e-13, atol=1e-15)


def test_non_contiguous_inputs_give_the_same_result_as_contiguous_copies():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((6, 60, 4)) + 1j * rng.standard_normal((6, 60, 4))
    views = {
        "strided subcarriers": (base[:, ::2, :], 1),
        "reversed records": (base[::-1, 1::2, :], 1),
        "transposed": (base[:, ::2, :].transpose(2, 0, 1), 2),
        "fortran": (np.asfortranarray(base[:, ::2, :]), 1),
        "real part view": (base.real[:, 1::2, 1:3], -2),
    }
    for name, (view, axis) in views.items():
        expected = resample_subcarriers(np.ascontiguousarray(view), "intel30-20", "ht20-56", axis=axis)
        got = resample_subcarriers(view, "intel30-20", "ht20-56", axis=axis)
        np.testing.assert_array_equal(got, expected, err_msg=name)
        assert got.shape[axis] == 56


def test_dtypes():
    assert resample_subcarriers(np.ones(30, np.float32), "intel30-20", "ht20-56").dtype == np.float32
    assert resample_subcarriers(np.ones(30, np.complex64), "intel30-20", "ht20-56").dtype == np.complex64
    assert resample_subcarriers(np.ones(30, np.int8), "intel30-20", "ht20-56").dtype == np.float64
    assert resample_subcarriers(np.ones((0, 30)), "intel30-20", "ht20-56").shape == (0, 56)


def test_nan_only_reaches_its_neighbours():
    x = np.arange(30.0)
    x[10] = np.nan  # intel30-20 index 10 is subcarrier -8; its neighbours are -10 and -6
    out = resample_subcarriers(x, "intel30-20", "ht20-56")
    dst = np.array(GRIDS["ht20-56"])
    assert set(dst[np.isnan(out)]) == {-9, -8, -7}


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((np.ones(31), "intel30-20", "ht20-56"), {}, "has 31 subcarriers"),
        ((np.ones(30), "intel30", "ht20-56"), {}, "unknown subcarrier grid 'intel30'"),
        ((np.ones(30), "intel30-20", "ht40-114"), {}, "reaches past"),
        ((np.ones(30), "intel30-20", "ht20-56"), {"span": "hz"}, "span must be"),
        ((np.ones(30), "intel30-20", "ht20-56"), {"axis": 1}, "axis 1 is out of range"),
        ((np.ones(3), [0, 2, 1], [0, 1]), {}, "strictly increasing"),
        ((np.array(["a"] * 30), "intel30-20", "ht20-56"), {}, "must be numeric"),
    ],
)
def test_bad_arguments(args, kwargs, message):
    with pytest.raises(ValidationError, match=message):
        resample_subcarriers(*args, **kwargs)


# ---------------------------------------------------------------------------------------------- latency


def test_percentiles_hand_computed():
    # [1, 2, 3, 4]: h = 3 * q/100; p50 -> h = 1.5 -> 2.5; p0 -> 1; p100 -> 4; p90 -> h = 2.7 -> 3.7
    got = latency_percentiles([4.0, np.nan, 1.0, 3.0, 2.0], (0, 50, 90, 100))
    assert got == {"count": 4, "missing": 1, "p0": 1.0, "p50": 2.5, "p90": pytest.approx(3.7, rel=1e-15), "p100": 4.0}


def test_percentiles_match_numpy_nanpercentile_and_the_twin():
    rng = np.random.default_rng(2)
    for n in (1, 2, 7, 100, 1001):
        v = rng.exponential(size=n)
        v[rng.random(n) < 0.2] = np.nan
        qs = (0, 12.5, 50, 90, 99, 99.9, 100)
        got = latency_percentiles(v, qs)
        if np.isnan(v).all():
            continue
        ref = np.nanpercentile(v, qs)
        for q, r in zip(qs, ref):
            assert got[f"p{q:g}"] == r  # the same interpolation as NumPy, bit for bit
            assert got[f"p{q:g}"] == pytest.approx(naive.percentile_nan(v, q), rel=1e-14)


def test_percentiles_awkward_inputs():
    empty = latency_percentiles([], (50,))
    assert empty["count"] == 0 and empty["missing"] == 0 and math.isnan(empty["p50"])
    all_nan = latency_percentiles([np.nan, np.nan], (50,))
    assert all_nan["count"] == 0 and all_nan["missing"] == 2 and math.isnan(all_nan["p50"])
    assert latency_percentiles([5.0], (0, 50, 100)) == {"count": 1, "missing": 0, "p0": 5.0, "p50": 5.0, "p100": 5.0}
    # a lost packet recorded as inf is a value: the top percentile is inf, the median is not
    lost = latency_percentiles([1.0, 2.0, 3.0, np.inf], (50, 100))
    assert lost["p50"] == 2.5 and lost["p100"] == np.inf
    assert latency_percentiles(np.zeros((2, 3)), (50,))["count"] == 6
    with pytest.raises(ValidationError, match="percentiles must be numbers in \\[0, 100\\]"):
        latency_percentiles([1.0], (101,))
