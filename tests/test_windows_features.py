"""The raw-CSI amplitude kernel against its naive twin: every int8 pair, seeded random arrays, awkward shapes."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from rfbench.datasets.windows.features import int8_amplitude
from rfbench.errors import ValidationError


def test_hand_computed_values():
    # |3 + 4i| = 5, |-128 - 128i| = 128·√2 = 181.01933598375618 → float32 181.01933
    pairs = np.array([[3, 4], [-128, -128], [0, 0], [-1, 0], [127, -128]], dtype=np.int8)
    got = int8_amplitude(pairs)
    assert got.dtype == np.float32
    assert got.tolist() == [5.0, float(np.float32(181.01933598375618)), 0.0, 1.0,
                            float(np.float32(np.sqrt(127 ** 2 + 128 ** 2)))]


def test_every_int8_pair_matches_the_naive_twin():
    re, im = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128))
    pairs = np.stack([re, im], axis=-1).astype(np.int8)
    np.testing.assert_array_equal(int8_amplitude(pairs), naive.naive_int8_amplitude(pairs))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_csi_shapes_match_the_naive_twin(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in rng.integers(1, 7, size=3)) + (2,)
    pairs = rng.integers(-128, 128, size=(17, 30) + shape, dtype=np.int8)
    np.testing.assert_array_equal(int8_amplitude(pairs), naive.naive_int8_amplitude(pairs))
    strided = pairs[::2, ::3]  # not contiguous
    np.testing.assert_array_equal(int8_amplitude(strided), naive.naive_int8_amplitude(strided))


def test_awkward_inputs():
    assert int8_amplitude(np.zeros((0, 30, 3, 1, 2), np.int8)).shape == (0, 30, 3, 1)
    assert int8_amplitude(np.array([7, -24], np.int8)).tolist() == 25.0  # one pair: a 0-d result
    out = np.empty((2,), np.float32)
    assert int8_amplitude(np.array([[1, 0], [0, 2]], np.int8), out) is out and out.tolist() == [1.0, 2.0]
    for bad in (np.zeros((3, 2), np.int16), np.zeros((3, 3), np.int8)):
        with pytest.raises(ValidationError):
            int8_amplitude(bad)
    with pytest.raises(ValidationError):
        int8_amplitude(np.zeros((3, 2), np.int8), np.empty(3, np.float64))
