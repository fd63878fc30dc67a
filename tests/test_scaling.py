"""Total RSS and scaled CSI: the naive twin, purity, and the defined all-zero cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

import naive
from rfbench.csi.scaling import scaled_csi, total_rss
from rfbench.errors import ValidationError
from rfbench.io.intel5300 import read
from rfbench.io.writer import synthetic_log


def test_total_rss_hand_computed():
    # rssi 30, 40, 0 dB, agc 20: 10*log10(10**3 + 10**4) - 44 - 20 = 10*log10(11000) - 64 = 40.4139... - 64
    got = total_rss(np.array([30]), np.array([40]), np.array([0]), np.array([20]))
    assert got[0] == pytest.approx(10 * math.log10(11000) - 64, abs=1e-12)
    assert got[0] == pytest.approx(-23.586073148417746, abs=1e-12)


def test_total_rss_all_zero_rssi_is_minus_inf():
    got = total_rss(np.zeros(2, np.uint8), np.zeros(2, np.uint8), np.zeros(2, np.uint8), np.array([10, 0]))
    assert np.isneginf(got).all()


def test_scaled_matches_naive_twin_on_synthetic_records():
    log = read(synthetic_log(40, nrx=3, ntx=2, seed=5))
    got = log.scaled_csi()
    for i in range(log.n_records):
        expected = naive.naive_scaled_csi(log.csi[i], int(log.rssi_a[i]), int(log.rssi_b[i]), int(log.rssi_c[i]),
                                          int(log.agc[i]), int(log.noise[i]), 3, 2)
        np.testing.assert_allclose(got[i], expected, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(
        log.total_rss(),
        [naive.naive_total_rss(int(a), int(b), int(c), int(g)) for a, b, c, g in
         zip(log.rssi_a, log.rssi_b, log.rssi_c, log.agc)])


@pytest.mark.parametrize("ntx, factor", [(1, 1.0), (2, math.sqrt(2)), (3, math.sqrt(10 ** 0.45))])
def test_scaled_hand_computed_single_record(ntx, factor):
    # One antenna pair carries 3+4j on every subcarrier (others 0): power = 30 * 25 = 750, so
    # power/30 = 25. rssi_a = 44 + agc(0) + 10*log10(25*k)... choose rssi_a = 40, agc = 0, others 0:
    # total_rss = 40 - 44 = -4 dBm -> 10**(-0.4); scale = 10**(-0.4) / 25.
    # noise -127 -> -92 dB -> 10**(-9.2); total_noise = 10**(-9.2) + scale * 1 * ntx.
    csi = np.zeros((1, 30, 1, ntx), np.complex64)
    csi[0, :, 0, 0] = 3 + 4j
    scale = 10 ** (-0.4) / 25
    expected = (3 + 4j) * math.sqrt(scale / (10 ** (-9.2) + scale * ntx)) * factor
    got = scaled_csi(csi, [40], [0], [0], [0], [-127])
    assert got.dtype == np.complex128
    assert got[0, 0, 0, 0] == pytest.approx(expected, rel=1e-14)
    assert not got[0, :, :, 1:].any()


def test_all_zero_csi_scales_to_zero_not_nan():
    csi = np.zeros((2, 30, 3, 1), np.complex64)
    got = scaled_csi(csi, [30, 30], [30, 30], [30, 30], [10, 10], [-127, -90])
    assert np.isfinite(got).all() and not got.any()


def test_all_zero_rssi_scales_to_zero():
    csi = np.full((1, 30, 3, 1), 5 + 5j, np.complex64)
    got = scaled_csi(csi, [0], [0], [0], [10], [-127])
    assert np.isfinite(got).all() and not got.any()


def test_pure_calling_twice_gives_identical_results_and_inputs_unchanged():
    log = read(synthetic_log(30, nrx=2, ntx=3, seed=9))
    before = log.csi.copy()
    first, second = log.scaled_csi(), log.scaled_csi()
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(log.csi, before)
    assert first is not second


def test_padded_mixed_records_use_their_own_shape():
    # a 3x1 record padded into a 3x3 array scales exactly like the same record alone
    alone = read(synthetic_log(3, nrx=3, ntx=1, seed=2))
    padded = np.zeros((3, 30, 3, 3), np.complex64)
    padded[:, :, :, :1] = alone.csi
    got = scaled_csi(padded, alone.rssi_a, alone.rssi_b, alone.rssi_c, alone.agc, alone.noise,
                     nrx=alone.nrx, ntx=alone.ntx)
    np.testing.assert_array_equal(got[:, :, :, :1], alone.scaled_csi())
    assert not got[:, :, :, 1:].any()


def test_bad_shapes_are_refused():
    with pytest.raises(ValidationError):
        scaled_csi(np.zeros((2, 29, 3, 1)), [0, 0], [0, 0], [0, 0], [0, 0], [0, 0])
    with pytest.raises(ValidationError):
        scaled_csi(np.zeros((2, 30, 3, 1)), [0], [0], [0], [0], [0])
    with pytest.raises(ValidationError):
        scaled_csi(np.zeros((1, 30, 2, 1)), [0], [0], [0], [0], [0], nrx=[3], ntx=[1])


def test_empty_log_scales_to_an_empty_array():
    log = read(b"")
    assert log.scaled_csi().shape == (0, 30, 1, 1)
    assert log.total_rss().shape == (0,)


def test_header_values_outside_their_8_bit_range_are_refused():
    csi = np.ones((1, 30, 1, 1), np.complex64)
    with pytest.raises(ValidationError, match="rssi_a"):
        scaled_csi(csi, [256], [0], [0], [0], [0])
    with pytest.raises(ValidationError, match="noise"):
        scaled_csi(csi, [30], [0], [0], [0], [-129])
    with pytest.raises(ValidationError, match="integers"):
        total_rss(np.array([30.5]), np.array([0]), np.array([0]), np.array([0]))
