"""rfbench.csi.corruptions: each kernel against its naive twin, hand-computed cases, the draws' physics and seeding."""

from __future__ import annotations

import math

import numpy as np
import pytest

import naive
from rfbench.csi import corruptions as C
from rfbench.csi.corruption_table import CORRUPTIONS, SEVERITIES, corruption, parse_corruption
from rfbench.errors import ValidationError


def _csi(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


SHAPES = [(7, 5, 3, 1), (1, 1, 1, 1), (10, 114, 3, 1), (12, 30, 2, 2)]


@pytest.mark.parametrize("shape", SHAPES)
def test_noise_matches_naive(shape):
    x = _csi(shape)
    noise = np.random.default_rng(1).standard_normal((*shape, 2))
    out = np.empty_like(x)
    C._noise(x.reshape(-1), noise.reshape(-1, 2), 10.0, out.reshape(-1))
    np.testing.assert_array_equal(out, naive.naive_noise(x, noise, 10.0))


def test_noise_hand_computed():
    # |x|² = 4 everywhere, snr 2 (3 dB): scale = sqrt(4 / 2 / 2) = 1, so out = x + n0 + j·n1
    x = np.full((2, 1, 1, 1), 2.0 + 0j)
    noise = np.array([[[[[0.5, -1.0]]]], [[[[2.0, 0.0]]]]])
    out = np.empty_like(x)
    C._noise(x.reshape(-1), noise.reshape(-1, 2), 2.0, out.reshape(-1))
    np.testing.assert_array_equal(out.ravel(), [2.5 - 1.0j, 4.0 + 0j])


@pytest.mark.parametrize("shape", SHAPES)
def test_refill_matches_naive(shape):
    x = _csi(shape)
    rng = np.random.default_rng(2)
    for _ in range(20):
        lost = rng.random(shape[0]) < rng.random()
        out = np.empty_like(x)
        C._refill(x, lost, out)
        np.testing.assert_array_equal(out, naive.naive_refill(x, lost))


def test_refill_hand_computed():
    # packets 1, ?, ?, ?, 9, ?: the three lost between 1 and 9 lie on its line (weights 1/4, 1/2, 3/4: 3, 5, 7,
    # exact); the last is held at 9
    x = np.array([1, 100, 100, 100, 9, 100], dtype=np.complex128).reshape(6, 1, 1, 1)
    out = np.empty_like(x)
    C._refill(x, np.array([False, True, True, True, False, True]), out)
    np.testing.assert_array_equal(out.ravel(), [1, 3, 5, 7, 9, 9])
    C._refill(x, np.array([True, False, True, True, True, True]), out)  # the first held at the first kept (100)
    np.testing.assert_array_equal(out.ravel(), [100] * 6)
    C._refill(x, np.ones(6, dtype=bool), out)  # nothing received: no CSI
    np.testing.assert_array_equal(out.ravel(), np.zeros(6))


@pytest.mark.parametrize("shape", SHAPES)
def test_gains_and_phase_slope_match_naive(shape):
    x = _csi(shape)
    rng = np.random.default_rng(3)
    for kernel, axis in ((C._gain_packet, 0), (C._gain_subcarrier, 1), (C._gain_rx, 2)):
        gain = rng.random(shape[axis])
        out = np.empty_like(x)
        kernel(x, gain, out)
        np.testing.assert_array_equal(out, naive.naive_gain(x, gain, axis))
    index = np.sort(rng.choice(np.arange(-60, 61), shape[1], replace=False))
    tau = rng.standard_normal(shape[0]) * 1e-7
    out = np.empty_like(x)
    C._phase_slope(x, index, tau, 312_500.0, np.empty(index.max() - index.min() + 1, np.complex128), out)
    np.testing.assert_array_equal(out, naive.naive_phase_slope(x, index, tau, 312_500.0))
    # and the recurrence stays within 1e-12 of the exact rotation
    exact = x * np.exp(-2j * np.pi * 312_500.0 * tau[:, None] * index[None, :])[:, :, None, None]
    np.testing.assert_allclose(out, exact, rtol=0, atol=1e-12 * np.abs(x).max())


def test_nan_and_inf_propagate_like_naive():
    x = _csi((4, 3, 2, 1))
    x[1, 1, 0, 0] = complex(np.nan, 1.0)
    x[2, 0, 1, 0] = complex(np.inf, 0.0)
    gain = np.array([1.0, 0.5, 2.0])
    out = np.empty_like(x)
    C._gain_subcarrier(x, gain, out)
    with np.errstate(invalid="ignore"):  # inf·(g + 0j) has a NaN imaginary part, in both
        np.testing.assert_array_equal(out, naive.naive_gain(x, gain, 1))
    lost = np.array([False, True, False, True])
    C._refill(x, lost, out)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(out, naive.naive_refill(x, lost))


def test_table_has_eight_corruptions_of_five_increasing_severities():
    assert list(CORRUPTIONS) == ["noise", "packet-loss", "burst-loss", "dead-antenna", "subcarrier-dropout",
                                 "agc-jump", "phase-slope", "truncation"]
    for c in CORRUPTIONS.values():
        assert len(c.levels) == len(SEVERITIES) == 5
        harsher = [-v for v in c.levels] if c.id == "noise" else list(c.levels)  # lower SNR is harsher
        assert harsher == sorted(harsher) and len(set(harsher)) == 5, c.id


def test_parse_corruption():
    assert parse_corruption("noise:3") == ("noise", 3)
    assert parse_corruption("burst-loss:5") == ("burst-loss", 5)
    for bad in ("noise", "noise:0", "noise:6", "noise:3.0", "fog:1", "noise:1:2", ""):
        with pytest.raises(ValidationError):
            parse_corruption(bad)
    with pytest.raises(ValidationError, match="unknown corruption"):
        corruption("fog")


def _run(cid, severity, x, seed=0, unit="rec", part=""):
    return C.corrupt(x, cid, severity, C.generator(seed, cid, unit, part))


@pytest.mark.parametrize("cid", list(CORRUPTIONS))
def test_same_key_same_bits_other_key_other_draws(cid):
    x = _csi((40, 30, 3, 1))
    a = _run(cid, 3, x)
    np.testing.assert_array_equal(a, _run(cid, 3, x))
    assert a.shape == x.shape and a.dtype == np.complex128
    if cid != "truncation":  # truncation draws nothing: the same tail is lost whatever the key
        for key in ({"seed": 1}, {"unit": "rec2"}, {"part": "r2"}):  # dead-antenna draws one of 3: try a few
            tries = [_run(cid, 3, x, **{k: v + (str(i) if isinstance(v, str) else i) for k, v in key.items()})
                     for i in range(4)]
            assert any(not np.array_equal(a, b) for b in tries), (cid, key)
    assert not np.array_equal(a, x)


def test_noise_reaches_its_snr():
    x = _csi((200, 30, 3, 1))
    for severity in SEVERITIES:
        snr_db = corruption("noise").level(severity)
        y = _run("noise", severity, x)
        measured = 10 * math.log10(np.mean(np.abs(x) ** 2) / np.mean(np.abs(y - x) ** 2))
        assert abs(measured - snr_db) < 0.2, (severity, measured)


def test_loss_fractions_dead_antenna_and_dropout():
    x = _csi((1000, 20, 3, 1))
    for severity in SEVERITIES:
        frac = corruption("packet-loss").level(severity)
        lost = C.draw("packet-loss", severity, x.shape, C.generator(0, "packet-loss", "r")).lost
        assert abs(lost.mean() - frac) < 0.05
        burst = C.draw("burst-loss", severity, x.shape, C.generator(0, "burst-loss", "r")).lost
        on = np.flatnonzero(burst)
        assert on.size == round(corruption("burst-loss").level(severity) * 1000) and np.all(np.diff(on) == 1)
        tail = C.draw("truncation", severity, x.shape, C.generator(0, "truncation", "r")).lost
        assert tail[-1] and tail.sum() == round(corruption("truncation").level(severity) * 1000)
    y = _run("dead-antenna", 2, x)  # 6 dB: one antenna's power drops by 6 dB, the others keep theirs
    ratio = np.mean(np.abs(y) ** 2, axis=(0, 1, 3)) / np.mean(np.abs(x) ** 2, axis=(0, 1, 3))
    assert sorted(np.round(10 * np.log10(ratio), 6).tolist()) == [-6.0, 0.0, 0.0]
    assert np.count_nonzero(np.all(_run("dead-antenna", 5, x) == 0, axis=(0, 1, 3))) == 1
    dropped = np.all(_run("subcarrier-dropout", 3, x) == 0, axis=(0, 2, 3))
    assert dropped.sum() == 6  # 0.3 of 20 subcarriers


def test_agc_steps_and_phase_slope_bounds():
    x = np.ones((2000, 4, 1, 1), dtype=np.complex128)
    y = _run("agc-jump", 4, x)
    db = 20 * np.log10(np.abs(y[:, 0, 0, 0]))
    steps = np.round(np.diff(db), 9)
    assert set(np.unique(steps)) <= {-6.0, 0.0, 6.0} and db[0] == 0.0
    assert 0.03 < np.mean(steps != 0) < 0.07
    z = _run("phase-slope", 1, x, unit="u")
    tau = C.draw("phase-slope", 1, x.shape, C.generator(0, "phase-slope", "u")).tau
    assert np.abs(tau).max() <= 10e-9 and np.abs(tau).max() > 9e-9
    # default indices s − S // 2 = −2, −1, 0, 1: subcarrier 2 (index 0) keeps its phase (to the recurrence's ulps)
    expected = np.exp(-2j * np.pi * 312_500.0 * tau[:, None] * np.arange(-2, 2)[None, :])
    np.testing.assert_allclose(z[:, :, 0, 0], expected, atol=1e-13)
    np.testing.assert_allclose(z[:, 2], 1.0, atol=1e-15)


def test_awkward_inputs():
    empty = np.zeros((0, 30, 3, 1), dtype=np.complex128)
    for cid in CORRUPTIONS:
        assert _run(cid, 5, empty).shape == empty.shape
    with pytest.raises(ValidationError):
        C.corrupt(np.zeros((3, 3)), "noise", 1, C.generator(0, "noise", "r"))
    with pytest.raises(ValidationError):
        C.corrupt(np.zeros((3, 3, 1, 1)), "noise", 6, C.generator(0, "noise", "r"))
    with pytest.raises(ValidationError):
        C.generator(-1, "noise", "r")
    zero = np.zeros((3, 2, 1, 1), dtype=np.complex128)  # no signal: noise at any SNR of nothing is nothing
    np.testing.assert_array_equal(_run("noise", 5, zero), zero)


def test_amp_phase_round_trip():
    rng = np.random.default_rng(4)
    amp = rng.random((3, 114, 10)) + 0.1
    phase = rng.uniform(-3, 3, (3, 114, 10))
    csi = C.amp_phase_to_csi(amp, phase)
    assert csi.shape == (10, 114, 3, 1)
    assert csi[4, 7, 2, 0] == amp[2, 7, 4] * np.exp(1j * phase[2, 7, 4])
    a, p = C.csi_to_amp_phase(csi)
    np.testing.assert_allclose(a, amp, rtol=1e-12)
    np.testing.assert_allclose(p, phase, atol=1e-12)


def test_the_docs_table_is_the_corruption_table():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "robustness-suite.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z-]+)` \| (.*?) \| (.*) \| ([^|]*) \|$", text, re.M)
    assert [r[0] for r in rows] == list(CORRUPTIONS)
    for cid, unit, levels, meaning in rows:
        c = CORRUPTIONS[cid]
        shown = ["dead" if math.isinf(v) else f"{v:g}" for v in c.levels]
        assert (unit, [v.strip() for v in levels.split("|")], meaning) == (c.unit, shown, c.meaning), cid
